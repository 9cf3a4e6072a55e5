"""``remat-knapsack bench``: every solver side by side, each run in its own capped subprocess.

May import: the package's solvers and instance generators (:mod:`remat_knapsack.api`,
:mod:`remat_knapsack.instances`, :mod:`remat_knapsack._common`), and the peers it
compares (PyTorch, OR-Tools, SciPy, matplotlib) only inside the functions that need
them, so that a missing peer is reported, not raised. One idea per module:

* :mod:`.peers`: the solvers compared (ours, PyTorch's four, OR-Tools, SciPy HiGHS)
  behind one calling convention;
* :mod:`.files`: reading instance files (JSON object, JSON list, JSONL);
* :mod:`.suites`: the instance grid (paper-like sizes, Pisinger's classes, recorded files);
* :mod:`.child`: the subprocess that runs one solver on one instance and measures it;
* :mod:`.runner`: spawning children with a memory cap and a timeout, and the progress bar;
* :mod:`.report`: results.csv, table.md and the terminal summary;
* :mod:`.figures`: the PNGs;
* :mod:`.combo`: combo's reference times and the targets of ``benchmarks/bench_sparse.py``.
"""
