"""Seeds 3-7 (not the benchmark's 0-2, on which 0.4's and 0.5's changes were
tuned): ``auto`` on the rows those changes moved most, median over the seeds.
Circle n=10^4 takes the longest (its seeds 3-7 ran 3-43 s each before the
uniqueness runs, 0.5-2.8 s since). Run it beside an older tree to compare:

    PYTHONPATH=src python benchmarks/bench_unseen_seeds.py
    PYTHONPATH=/path/to/old/src python benchmarks/bench_unseen_seeds.py
"""

import statistics
import time

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
    for cls, n, R in CASES:
        times = []
        for seed in SEEDS:
            inst = instances.pisinger(cls, n, R, seed)
            start = time.perf_counter()
            solve(inst.memory, inst.runtimes, inst.max_memory, solver="auto", scale=1)
            times.append(time.perf_counter() - start)
        median, worst = statistics.median(times) * 1e3, max(times) * 1e3
        print(f"{cls} n={n} R={R}: median over seeds 3-7 {median:.1f} ms, max {worst:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
