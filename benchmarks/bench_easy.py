"""Easy instances (the bounds settle them almost at once), on lists and on arrays, beside combo.

Usage::

    python benchmarks/bench_easy.py                        # benchmarks/results/easy.csv
    python benchmarks/bench_easy.py --seeds 5 9 --rounds 3 --before /tmp/before/src --out /tmp/easy.csv

On these instances combo does little more than a partial sort around the break
item and a linear reduction, so what ``solve`` costs here is its set-up: input
conversion, ordering, bounds, and the canonical pass that picks PyTorch's
tie-break. Every (instance, input kind) is solved in a child process per
build and round, again and again for ``--min-time`` seconds (at least 5
calls); a cell is the median call. With ``--before SRC`` (another tree, built
in place) the two builds alternate within each round, and the table gives
the ratio of the medians (this tree / the other).

combo's times are its recorded times on these instance families (best of 5,
``remat_knapsack.bench.combo``'s source: measured with combo itself, not in
this run); the target on arrays is 3x combo.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

import _results  # benchmarks/_results.py: where each suite's CSV lives

#: (family, n, R) and combo's recorded time in seconds, where known.
CASES: list[tuple[str, int, int, float | None]] = [
    ("subset_sum", 100_000, 10**4, 0.65e-3),
    ("subset_sum", 10_000, 10**4, 0.07e-3),
    ("profit_ceiling", 10_000, 10**4, 0.07e-3),
    ("almost_strongly", 10_000, 10**4, 0.10e-3),
    ("uncorrelated", 1_000, 10**6, 0.03e-3),
    ("uncorrelated", 100_000, 10**4, None),
    ("weakly", 100_000, 10**4, None),
    ("uncorrelated", 10_000, 10**6, None),
    ("strongly", 10_000, 10**6, None),
    ("inverse_strongly", 10_000, 10**4, None),
]

_CHILD = r"""
import json, sys, time
import numpy as np
from remat_knapsack import instances, solve
family, n, R, seed, min_time = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
inst = instances.pisinger(family, n, R=R, seed=seed)
m, r, c = list(inst.memory), list(inst.runtimes), inst.max_memory
out = {}
for kind, a, b in (("lists", m, r), ("arrays", np.asarray(m, float), np.asarray(r, float))):
    solve(a, b, c, scale=1)
    ts = []
    end = time.perf_counter() + min_time
    while time.perf_counter() < end or len(ts) < 5:
        t = time.perf_counter()
        solve(a, b, c, scale=1)
        ts.append(time.perf_counter() - t)
    out[kind] = float(np.median(ts))
print(json.dumps(out))
"""


def _run(src: str, family: str, n: int, R: int, seed: int, min_time: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, family, str(n), str(R), str(seed), str(min_time)],
        env=env, check=True, capture_output=True, text=True,
    )
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[5, 9])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--before", metavar="SRC", help="another tree's src/ (built in place), run alternately")
    ap.add_argument("--out", metavar="CSV", default=None, help="default: benchmarks/results/easy.csv")
    args = ap.parse_args(argv)
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    peers = [("ours", here)] + ([("before", args.before)] if args.before else [])
    times: dict[tuple, list[float]] = {}
    for rnd in range(args.rounds):
        order = peers if rnd % 2 == 0 else peers[::-1]  # alternate, so load hits both alike
        for family, n, R, _ in CASES:
            for seed in args.seeds:
                for peer, src in order:
                    for kind, t in _run(src, family, n, R, seed, args.min_time).items():
                        times.setdefault((family, n, R, seed, kind, peer), []).append(t)
    rows = []
    for family, n, R, combo in CASES:
        for seed in args.seeds:
            for kind in ("lists", "arrays"):
                ours = statistics.median(times[(family, n, R, seed, kind, "ours")])
                row = {"family": family, "n": n, "R": R, "seed": seed, "input": kind, "seconds": ours,
                       "combo": combo if combo is not None else "",
                       "vs_combo": ours / combo if combo else ""}
                if args.before:
                    before = statistics.median(times[(family, n, R, seed, kind, "before")])
                    row.update(before=before, ratio=ours / before)
                rows.append(row)
    out = _results.write_rows(rows, args.out or _results.default("easy"))
    print(f"| family | n | R | seed | input | ours | combo | ours/combo |{' before | ratio |' if args.before else ''}")
    print(f"|---|---|---|---|---|---|---|---|{'---|---|' if args.before else ''}")
    for row in rows:
        combo = f"{row['combo'] * 1e3:.2f} ms" if row["combo"] != "" else "-"
        vs = f"{row['vs_combo']:.1f}x" if row["vs_combo"] != "" else "-"
        extra = f" {row['before'] * 1e3:.3f} ms | {row['ratio']:.3f} |" if args.before else ""
        print(f"| {row['family']} | {row['n']} | {row['R']} | {row['seed']} | {row['input']} | "
              f"{row['seconds'] * 1e3:.3f} ms | {combo} | {vs} |{extra}")
    if args.before:
        geomean = math.exp(statistics.fmean(math.log(row["ratio"]) for row in rows))
        print(f"\ngeometric mean of the ratios (ours / before): {geomean:.3f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
