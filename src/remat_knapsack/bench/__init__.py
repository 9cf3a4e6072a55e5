"""``remat-knapsack bench``: every solver side by side, each run in its own capped subprocess.

One idea per module:

* :mod:`.peers`: the solvers compared (ours, PyTorch's four, OR-Tools, SciPy HiGHS)
  behind one calling convention;
* :mod:`.files`: reading instance files (JSON object, JSON list, JSONL);
* :mod:`.suites`: the instance grid (paper-like sizes, Pisinger's classes, recorded files);
* :mod:`.child`: the subprocess that runs one solver on one instance and measures it;
* :mod:`.runner`: spawning children with a memory cap and a timeout, and the progress bar;
* :mod:`.report`: results.csv, table.md and the terminal summary;
* :mod:`.figures`: the PNGs;
* :mod:`.combo`: combo's reference times and issue 9's targets, for ``benchmarks/bench_sparse.py``.
"""
