"""Benchmark of the sparse solver, side by side with our dense solvers, PyTorch and OR-Tools.

Usage::

    python benchmarks/bench_sparse.py                 # everything but PyTorch at n=100
    python benchmarks/bench_sparse.py --torch         # also PyTorch's sliding Hirschberg (45 s per run)
    python benchmarks/bench_sparse.py --only classes  # one table: paper, classes, mid, memory

Every time is the median of ``--repeat`` runs of ``remat_knapsack.solve`` on
numpy arrays (validation included). Ratios are taken within the same run.
Timings on a shared machine are noisy; compare ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

from remat_knapsack import instances, solve

CLASSES = instances.CLASSES


_MINS: list[float] = []


def timed(fn, repeat):
    """Median of ``repeat`` runs (the minimum goes to _MINS for the classes table)."""
    out, ts = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    _MINS.append(min(ts))
    return statistics.median(ts), out


def fmt(t):
    if t is None:
        return "-"
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.0f} us"


def ortools_solve(w, v, c, limit_s):
    """OR-Tools' branch and bound, init (its preprocessing) plus solve.

    Returns (seconds, value), value None when it stopped at the time limit
    without proving optimality.
    """
    from ortools.algorithms.python import knapsack_solver

    s = knapsack_solver.KnapsackSolver(
        knapsack_solver.SolverType.KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER, "bench"
    )
    s.set_time_limit(limit_s)
    vi, wi = [int(x) for x in v], [[int(x) for x in w]]
    t = time.perf_counter()
    s.init(vi, wi, [int(c)])
    val = s.solve()
    t = time.perf_counter() - t
    return t, (float(val) if s.is_solution_optimal() else None)


def have_ortools():
    try:
        import ortools  # noqa: F401

        return True
    except ImportError:
        return False


def paper_table(args):
    print("\n## Paper-like instances (scale 10^4)\n")
    cols = ["n", "seed", "W", "sparse", "hirschberg", "hirschberg/sparse"]
    if args.torch:
        cols += ["PyTorch sliding", "PyTorch/sparse"]
    cols += ["same value"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for n in (20, 50, 100):
        for seed in range(args.seeds):
            inst = instances.paper(n, seed)
            m, r = np.array(inst.memory), np.array(inst.runtimes)
            ts, s = timed(lambda: solve(m, r, inst.max_memory, solver="sparse"), max(args.repeat, 20))
            same = True
            th = None
            if n <= args.dense_max_n:
                th, h = timed(lambda: solve(m, r, inst.max_memory, solver="hirschberg"), 1)
                same &= abs(h.value - s.value) <= 1e-9 * s.value
            row = [str(n), str(seed), f"{s.stats['capacity']:.2e}", fmt(ts), fmt(th), f"{th / ts:,.0f}x" if th else "-"]
            if args.torch:
                tt = None
                if n >= 100 and seed == 0 or n < 100:
                    from torch._functorch._activation_checkpointing.knapsack import (
                        dp_knapsack_sliding_hirschberg,
                    )

                    tt, tv = timed(lambda: dp_knapsack_sliding_hirschberg(inst.memory, inst.runtimes, inst.max_memory), 1)
                    same &= abs(tv[0] - s.value) <= 1e-3 * s.value
                row += [fmt(tt), f"{tt / ts:,.0f}x" if tt else "-"]
            row.append("yes" if same else "NO")
            print("| " + " | ".join(row) + " |", flush=True)


def class_table(args):
    print(f"\n## Pisinger classes, n={args.n}, R={args.R} (scale=1)\n")
    ort = have_ortools()
    cols = ["class", "sparse (median)", "sparse (min)", "states", "peak MiB", "OR-Tools B&B", "OR-Tools/sparse", "same value"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for cls in CLASSES:
        inst = instances.pisinger(cls, args.n, R=args.R)
        w, v = np.array(inst.memory), np.array(inst.runtimes)
        rep = 1 if cls in args.slow else args.repeat
        ts, s = timed(lambda: solve(w, v, inst.max_memory, solver="sparse", scale=1), rep)
        tmin = _MINS[-1]
        to, same = None, "-"
        cell = "-"
        if ort and (args.ortools_all or cls in ("uncorrelated", "weakly")):
            to, ov = ortools_solve(w, v, inst.max_memory, args.ortools_limit)
            if ov is None:
                cell = f"no finish in {args.ortools_limit:.0f} s"
            else:
                cell = fmt(to)
                same = "yes" if ov == s.value else "NO"
        print(f"| {cls} | {fmt(ts)} | {fmt(tmin)} | {s.stats['states']:,} | {s.stats['peak_bytes'] / 2**20:.1f} | {cell} | "
              f"{f'{to / ts:,.0f}x' if to and same != '-' else '-'} | {same} |", flush=True)


def mid_table(args):
    n, R = 1000, 1000
    print(f"\n## Against the dense solvers, n={n}, R={R} (W about 2.5e5, scale=1)\n")
    cols = ["class", "sparse", "auto", "dp", "hirschberg", "best dense/sparse", "auto/best", "same set"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for cls in CLASSES:
        inst = instances.pisinger(cls, n, R=R, seed=1)
        w, v, c = np.array(inst.memory), np.array(inst.runtimes), inst.max_memory
        if cls == "similar_weights":  # keep W dense-sized: same class shape, shifted weights
            w = w - 99_000
            c = float(w.sum() // 2)
        res = {}
        for name in ("sparse", "auto", "dp", "hirschberg"):
            res[name] = timed(lambda: solve(w, v, c, solver=name, scale=1), args.repeat)
        best = min(res[k][0] for k in ("sparse", "dp", "hirschberg"))
        dense = min(res["dp"][0], res["hirschberg"][0])
        same = all(res[k][1].saved == res["dp"][1].saved for k in res)
        print(f"| {cls} | {fmt(res['sparse'][0])} | {fmt(res['auto'][0])} ({res['auto'][1].solver}) | "
              f"{fmt(res['dp'][0])} | {fmt(res['hirschberg'][0])} | {dense / res['sparse'][0]:,.1f}x | "
              f"{res['auto'][0] / best:.2f} | {'yes' if same else 'NO'} |", flush=True)


_MEM_CHILD = r"""
import json, resource, sys, time
import numpy as np
from remat_knapsack import instances, solve
cls, n, W = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
inst = instances.paper(n, 0) if cls == "paper" else instances.pisinger(cls, n)
m, r = np.array(inst.memory), np.array(inst.runtimes)
scale = W / inst.max_memory
def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key))
solve(m[:10], r[:10], 1.0, solver="sparse")  # load everything first
with open("/proc/self/clear_refs", "w") as f:  # reset the RSS high-water mark (VmHWM)
    f.write("5")
base = status("VmRSS:")
t = time.perf_counter()
s = solve(m, r, inst.max_memory, solver="sparse", scale=scale)
t = time.perf_counter() - t
print(json.dumps({"W": s.stats["capacity"], "t": t, "rss": status("VmHWM:") - base, "acct": s.stats["peak_bytes"]}))
"""


def memory_table(args):
    print(f"\n## Peak extra memory at n={args.n} for growing W\n")
    print("| instance | W | time | solver's own accounting | peak RSS growth (VmHWM) |")
    print("|---|---|---|---|---|")
    for cls in args.mem_classes:
        for W in args.mem_W:
            out = subprocess.run([sys.executable, "-c", _MEM_CHILD, cls, str(args.n), str(W)],
                                 capture_output=True, text=True, timeout=600)
            if out.returncode:
                print(f"| {cls} | {W:.0e} | failed: {out.stderr.strip().splitlines()[-1]} | | |")
                continue
            d = json.loads(out.stdout)
            print(f"| {cls} n={args.n} | {d['W']:.2e} | {fmt(d['t'])} | {d['acct'] / 2**20:.2f} MiB | "
                  f"{d['rss'] / 2**20:.2f} MiB |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=["paper", "classes", "mid", "memory"], action="append")
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--R", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--torch", action="store_true", help="run PyTorch 2.13's dp_knapsack_sliding_hirschberg too")
    p.add_argument("--dense-max-n", type=int, default=20, help="run our hirschberg on paper instances up to this n")
    p.add_argument("--ortools-all", action="store_true", help="OR-Tools on every class (60 s limit each)")
    p.add_argument("--ortools-limit", type=float, default=60.0)
    p.add_argument("--slow", nargs="*", default=[],
                   help="classes timed once instead of --repeat times")
    p.add_argument("--mem-W", nargs="*", type=float, default=[1e6, 1e9, 1e12])
    p.add_argument("--mem-classes", nargs="*", default=["paper", "uncorrelated", "strongly"])
    args = p.parse_args()
    only = args.only or ["paper", "classes", "mid", "memory"]
    print(f"# bench_sparse ({time.strftime('%Y-%m-%d %H:%M')}, median of {args.repeat})")
    if "paper" in only:
        paper_table(args)
    if "classes" in only:
        class_table(args)
    if "mid" in only:
        mid_table(args)
    if "memory" in only:
        memory_table(args)


if __name__ == "__main__":
    main()
