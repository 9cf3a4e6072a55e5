# The canonical set by one forward Pareto DP in index order (``_forward.pyx``).

cdef enum:
    FWD_DONE = 0           # ``x`` holds the canonical set
    FWD_OVER = -1          # over the work budget or the state limit (or malloc failed): nothing written
    FWD_INTERRUPTED = -2   # a signal handler raised: KeyboardInterrupt is pending

cdef Py_ssize_t forward_canonical(const double* w, const double* v, Py_ssize_t m, double cap,
                                  double target, int integral, double tol, Py_ssize_t budget,
                                  Py_ssize_t max_states, Py_ssize_t* used,
                                  unsigned char* x) noexcept nogil
