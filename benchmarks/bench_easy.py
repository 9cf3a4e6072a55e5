"""Easy instances (the bounds settle them almost at once), on lists and on arrays, beside combo.

Usage::

    python benchmarks/bench_easy.py                        # benchmarks/results/easy.csv
    python benchmarks/bench_easy.py --seeds 5 9 --rounds 3 --before /tmp/before/src --out /tmp/easy.csv

On these instances combo does little more than a partial sort around the break
item and a linear reduction, so what ``solve`` costs here is its set-up: input
conversion, ordering, bounds, and the canonical pass that picks PyTorch's
tie-break. Every (instance, input kind) is solved in a child process per
build and round, again and again for ``--min-time`` seconds (at least 5
calls); a cell is the median call. Beside it, where the time goes: the
kernel's stages as it times them (``STAGES``: set-up, the optimum, the
reduction, the canonical pass), the rest of the kernel, and what ``solve``
costs outside it; each is its own median over the calls, so they need not
add up to the median call exactly. With ``--before SRC`` (another tree, built
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
stage_keys = sys.argv[6].split(",")
inst = instances.pisinger(family, n, R=R, seed=seed)
m, r, c = list(inst.memory), list(inst.runtimes), inst.max_memory
out = {}
for kind, a, b in (("lists", m, r), ("arrays", np.asarray(m, float), np.asarray(r, float))):
    solve(a, b, c, scale=1)
    rows = []
    end = time.perf_counter() + min_time
    while time.perf_counter() < end or len(rows) < 5:
        t = time.perf_counter()
        stats = solve(a, b, c, scale=1).stats
        total = time.perf_counter() - t
        stages = [stats.get(key, 0.0) for key in stage_keys]
        rows.append([total, *stages, stats["seconds"] - sum(stages), total - stats["seconds"]])
    out[kind] = np.median(rows, axis=0).tolist()
print(json.dumps(out))
"""

#: The kernel's stage timers (``Solution.stats``) and their columns; then
#: ``other`` (the rest of ``stats["seconds"]``: the items decided before any
#: solver runs, the value grid, the split and core of a solve that runs on
#: its core alone, the subset-sum pass) and ``outside`` (``solve`` around
#: that: the input's checks and conversion, the ``Solution``).
STAGES = {"t_sort": "setup", "t_opt": "optimum", "t_reduce": "reduction", "t_canon": "canonical"}
COLUMNS = ["seconds", *STAGES.values(), "other", "outside"]


def _run(src: str, family: str, n: int, R: int, seed: int, min_time: float) -> dict[str, list[float]]:
    """{input kind: the median call's time and its parts, as ``COLUMNS``}."""
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, family, str(n), str(R), str(seed), str(min_time), ",".join(STAGES)],
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
    times: dict[tuple, list[list[float]]] = {}  # a list of ``COLUMNS`` per round
    for rnd in range(args.rounds):
        order = peers if rnd % 2 == 0 else peers[::-1]  # alternate, so load hits both alike
        for family, n, R, _ in CASES:
            for seed in args.seeds:
                for peer, src in order:
                    for kind, parts in _run(src, family, n, R, seed, args.min_time).items():
                        times.setdefault((family, n, R, seed, kind, peer), []).append(parts)
    rows = []
    for family, n, R, combo in CASES:
        for seed in args.seeds:
            for kind in ("lists", "arrays"):
                parts = dict(zip(COLUMNS, _medians(times[(family, n, R, seed, kind, "ours")])))
                ours = parts.pop("seconds")
                row = {"family": family, "n": n, "R": R, "seed": seed, "input": kind, "seconds": ours,
                       "combo": combo if combo is not None else "",
                       "vs_combo": ours / combo if combo else "", **parts}
                if args.before:
                    before = _medians(times[(family, n, R, seed, kind, "before")])[0]
                    row.update(before=before, ratio=ours / before)
                rows.append(row)
    out = _results.write_rows(rows, args.out or _results.default("easy"))
    stages = COLUMNS[1:]
    print(f"| family | n | R | seed | input | ours | combo | ours/combo | {' | '.join(stages)} (us) |"
          f"{' before | ratio |' if args.before else ''}")
    print(f"|{'---|' * (8 + len(stages))}{'---|---|' if args.before else ''}")
    for row in rows:
        combo = f"{row['combo'] * 1e3:.2f} ms" if row["combo"] != "" else "-"
        vs = f"{row['vs_combo']:.1f}x" if row["vs_combo"] != "" else "-"
        extra = f" {row['before'] * 1e3:.3f} ms | {row['ratio']:.3f} |" if args.before else ""
        print(f"| {row['family']} | {row['n']} | {row['R']} | {row['seed']} | {row['input']} | "
              f"{row['seconds'] * 1e3:.3f} ms | {combo} | {vs} | "
              f"{' | '.join(f'{row[k] * 1e6:.0f}' for k in stages)} |{extra}")
    if args.before:
        geomean = math.exp(statistics.fmean(math.log(row["ratio"]) for row in rows))
        print(f"\ngeometric mean of the ratios (ours / before): {geomean:.3f}")
    print(f"wrote {out}")
    return 0


def _medians(rounds: list[list[float]]) -> list[float]:
    """Each column's median over the rounds."""
    return [statistics.median(column) for column in zip(*rounds)]


if __name__ == "__main__":
    sys.exit(main())
