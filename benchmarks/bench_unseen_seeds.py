"""Held-out seeds 3-7 (``bench_sparse.py`` uses 0-2): ``auto`` on the hard rows,
median and worst over the seeds, so that a change tuned on the benchmark's
seeds is checked on others. Circle n=10^4 takes the longest (0.5-2.8 s a seed).
Writes ``benchmarks/results/unseen-seeds.csv`` (or the path given as the first
argument, ``-`` for none). Run it beside an older tree to compare:

    PYTHONPATH=src python benchmarks/bench_unseen_seeds.py
    PYTHONPATH=/path/to/old/src python benchmarks/bench_unseen_seeds.py /tmp/old-unseen.csv
"""

import statistics
import sys
import time

import _results  # benchmarks/_results.py: where each suite's CSV lives

from remat_knapsack import instances, solve

CASES = [
    ("strongly", 1_000, 10**6),
    ("strongly", 100_000, 10**6),
    ("multiple_strongly", 10_000, 10**4),
    ("multiple_strongly", 1_000, 10**6),
    ("subset_sum", 1_000, 10**6),
    ("profit_ceiling", 1_000, 10**6),
    ("spanner_strongly", 1_000, 10**6),
    ("circle", 1_000, 10**6),
    ("circle", 10_000, 10**4),
]
SEEDS = range(3, 8)


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else _results.default("unseen-seeds")
    table = []
    for cls, n, R in CASES:
        times = []
        for seed in SEEDS:
            inst = instances.pisinger(cls, n, R, seed)
            start = time.perf_counter()
            solve(inst.memory, inst.runtimes, inst.max_memory, solver="auto", scale=1)
            times.append(time.perf_counter() - start)
        median, worst = statistics.median(times) * 1e3, max(times) * 1e3
        print(f"{cls} n={n} R={R}: median over seeds 3-7 {median:.1f} ms, max {worst:.1f} ms", flush=True)
        table.append({"family": cls, "n": n, "R": R, "seeds": "3-7", "median_s": median / 1e3, "max_s": worst / 1e3})
    if out != "-":
        print(f"wrote {_results.write_rows(table, out)}")


if __name__ == "__main__":
    main()
