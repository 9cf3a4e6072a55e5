"""Two builds of remat-knapsack side by side (a change measured paired): ``sparse`` on every Pisinger class
(n=10,000, seeds 0-2) and on paper-like n=100 instances, or on the families,
n, R and seeds given.

Usage::

    git worktree add /tmp/before <commit>
    (cd /tmp/before && python setup.py build_ext --inplace)
    python benchmarks/bench_sparse_versions.py --before /tmp/before/src --after src \
        --skip-before almost_strongly/0 almost_strongly/1 almost_strongly/2 similar_weights/1
    python benchmarks/bench_sparse_versions.py --before /tmp/before/src --after src \
        --families strongly inverse_strongly --n 100000 --R 10000 1000000 --seeds 0 1
    python benchmarks/bench_sparse_versions.py --before src --after src --before-env REMAT_KNAPSACK_HEAP_PAD=0

Each build runs in its own subprocess, alternating, ``--rounds`` times. A
cell is the median of those rounds, and each round's time is the median of
``--repeat`` solves, by the wall clock or (``--clock cpu``) the process's
CPU time. ``--skip-before`` leaves out instances that the older
build takes minutes on. On a shared machine, where a process runs at one of
several speeds, only such alternating pairs support a before/after claim.
The table is also written to ``benchmarks/results/sparse-paired.csv``
(``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import _results  # benchmarks/_results.py: where each suite's CSV lives

CHILD = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from remat_knapsack import instances, solve
DEFAULT = list(instances.CLASSES) + ["paper"]
skip, repeat = set(json.loads(sys.argv[2])), int(sys.argv[3])
families, ns, Rs, seeds = json.loads(sys.argv[4])
clock = time.process_time if sys.argv[5] == "cpu" else time.perf_counter
out = {}
for cls in families:
    for n in ns:
        for R in Rs:
            for seed in seeds:
                key = f"{cls}/{seed}" if families == DEFAULT else f"{cls}/n={n}/R={R}/{seed}"
                if key in skip:
                    continue
                if cls == "paper":
                    ins, kw = instances.paper(100 if families == DEFAULT else n, seed), {}
                else:
                    ins, kw = instances.pisinger(cls, n, R, seed=seed), {"scale": 1}
                w, v = np.array(ins.memory, float), np.array(ins.runtimes, float)
                ts = []
                for _ in range(repeat):
                    t = clock()
                    s = solve(w, v, ins.max_memory, solver="sparse", **kw)
                    ts.append(clock() - t)
                out[key] = [statistics.median(ts), s.value, s.saved]
print(json.dumps(out))
"""


def run(src: str, skip: list[str], repeat: int, grid: list, clock: str, env: list[str] | None = None) -> dict:
    extra = dict(e.split("=", 1) for e in env or [])
    r = subprocess.run([sys.executable, "-c", CHILD, src, json.dumps(skip), str(repeat), json.dumps(grid), clock],
                       capture_output=True, text=True, check=True, env={**os.environ, **extra})
    return json.loads(r.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="src directory of the older build")
    p.add_argument("--after", required=True, help="src directory of the newer build")
    p.add_argument("--skip-before", nargs="*", default=[])
    p.add_argument("--before-env", nargs="*", default=[], metavar="VAR=VALUE",
                   help="extra environment for the older build's runs; with --before and --after both src, "
                        "REMAT_KNAPSACK_HEAP_PAD=0 measures the heap padding (_heap.pyx) on its own")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--families", nargs="*", help="default: the 7 classic classes and paper")
    p.add_argument("--n", nargs="*", type=int, default=[10_000])
    p.add_argument("--R", nargs="*", type=int, default=[10_000])
    p.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="cpu: the process's CPU time, which time other tenants take from a shared machine "
                        "does not inflate (page faults still count)")
    p.add_argument("--out", default=_results.default("sparse-paired"), metavar="CSV",
                   help="default benchmarks/results/sparse-paired.csv; '-' for none")
    a = p.parse_args()
    from remat_knapsack import instances

    families = a.families or list(instances.CLASSES) + ["paper"]
    grid = [families, a.n, a.R, a.seeds]
    before, after = [], []
    for _ in range(a.rounds):
        before.append(run(a.before, a.skip_before, a.repeat, grid, a.clock, a.before_env))
        after.append(run(a.after, [], a.repeat, grid, a.clock))
    table = []
    print("| instance | before | after | after / before | same value and set |")
    print("|---|---|---|---|---|")
    for key in after[0]:
        t1 = statistics.median(d[key][0] for d in after) * 1e3
        if key not in before[0]:
            print(f"| {key} | (skipped) | {t1:.2f} ms | - | - |")
            table.append({"instance": key, "before_s": "", "after_s": t1 / 1e3, "ratio": "", "same": ""})
            continue
        t0 = statistics.median(d[key][0] for d in before) * 1e3
        same = before[0][key][1:] == after[0][key][1:]
        print(f"| {key} | {t0:.2f} ms | {t1:.2f} ms | {t1 / t0:.2f} | {'yes' if same else 'NO'} |", flush=True)
        table.append({"instance": key, "before_s": t0 / 1e3, "after_s": t1 / 1e3, "ratio": t1 / t0, "same": same})
    if a.out != "-":
        print(f"wrote {_results.write_rows(table, a.out)}")


if __name__ == "__main__":
    main()
