"""Two builds of remat-knapsack side by side: ``sparse`` on every Pisinger class
(n=10,000, seeds 0-2) and on paper-like n=100 instances.

Usage::

    git worktree add /tmp/before 2cbb2c0
    (cd /tmp/before && python setup.py build_ext --inplace)
    python benchmarks/bench_sparse_versions.py --before /tmp/before/src --after src \
        --skip-before almost_strongly/0 almost_strongly/1 almost_strongly/2 similar_weights/1

Each build runs in its own subprocess, alternating, ``--rounds`` times. A
cell is the median of those rounds, and each round's time is the median of
``--repeat`` solves. ``--skip-before`` leaves out instances that the older
build takes minutes on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from remat_knapsack import instances, solve
skip, repeat = set(json.loads(sys.argv[2])), int(sys.argv[3])
out = {}
for cls in list(instances.CLASSES) + ["paper"]:
    for seed in (0, 1, 2):
        key = f"{cls}/{seed}"
        if key in skip:
            continue
        ins = instances.paper(100, seed) if cls == "paper" else instances.pisinger(cls, 10000, seed=seed)
        kw = {} if cls == "paper" else {"scale": 1}
        w, v = np.array(ins.memory, float), np.array(ins.runtimes, float)
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            s = solve(w, v, ins.max_memory, solver="sparse", **kw)
            ts.append(time.perf_counter() - t)
        out[key] = [statistics.median(ts), s.value, s.saved]
print(json.dumps(out))
"""


def run(src: str, skip: list[str], repeat: int) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, src, json.dumps(skip), str(repeat)],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="src directory of the older build")
    p.add_argument("--after", required=True, help="src directory of the newer build")
    p.add_argument("--skip-before", nargs="*", default=[])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    before, after = [], []
    for _ in range(a.rounds):
        before.append(run(a.before, a.skip_before, a.repeat))
        after.append(run(a.after, [], a.repeat))
    print("| instance | before | after | after / before | same value and set |")
    print("|---|---|---|---|---|")
    for key in after[0]:
        t1 = statistics.median(d[key][0] for d in after) * 1e3
        if key not in before[0]:
            print(f"| {key} | (skipped) | {t1:.2f} ms | - | - |")
            continue
        t0 = statistics.median(d[key][0] for d in before) * 1e3
        same = before[0][key][1:] == after[0][key][1:]
        print(f"| {key} | {t0:.2f} ms | {t1:.2f} ms | {t1 / t0:.2f} | {'yes' if same else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
