"""The fixed cost of ``solve`` at n = 10^4: everything but a kernel's run.

The budget is the total memory plus one, so every item fits and no kernel
runs: what ``solve`` takes is validation, quantisation, the split into
forced and undecided items, dispatch and building the Solution. Prints the
median over ``--repeats`` calls (the Solution is freed outside the timed
span) for Python lists and numpy arrays, at scale 1 (Pisinger's uncorrelated
class, integer memory), and at scale 10,000 and None (the paper-like
instance, 4-decimal memory), and splits it into

* validate: ``validate(..., scale=None)``, the checks and list conversion;
* quantise: ``validate(..., scale)`` minus the above (weights and capacity);
* rest: the total minus ``validate(..., scale)`` (items, dispatch, Solution).

    python benchmarks/bench_fixed_cost.py [--n 10000] [--repeats 300]   # benchmarks/results/fixed-cost.csv
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import _results  # benchmarks/_results.py: where each suite's CSV lives
import numpy as np

from remat_knapsack import solve
from remat_knapsack._common._validate import validate
from remat_knapsack.instances import paper, pisinger


def median_ms(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``call()`` in ms; its result is freed untimed."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
        del result
    return 1e3 * statistics.median(times)


def cases(n: int) -> list[tuple[str, Any, Any, float, float | None]]:
    uncorrelated = pisinger("uncorrelated", n, 10_000, 0)
    like_paper = paper(n, 0)
    rows = []
    for label, inst, scale in (
        ("uncorrelated", uncorrelated, 1),
        ("paper", like_paper, 10_000),
        ("paper", like_paper, None),
    ):
        cap = float(sum(inst.memory)) + 1.0  # every item fits
        rows.append((f"{label} list", inst.memory, inst.runtimes, cap, scale))
        rows.append((f"{label} array", np.array(inst.memory), np.array(inst.runtimes), cap, scale))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--out", default=_results.default("fixed-cost"), metavar="CSV",
                        help="default benchmarks/results/fixed-cost.csv; '-' for none")
    args = parser.parse_args(argv)
    reps = args.repeats
    print(f"fixed cost of solve, every item fits, n={args.n}, median of {reps} calls, ms")
    print(f"{'input':<20} {'scale':>6} {'sparse':>8} {'auto':>8} {'validate':>9} {'quantise':>9} {'rest':>7}")
    table = []
    for label, memory, runtimes, cap, scale in cases(args.n):
        total, auto, checks, full = row(memory, runtimes, cap, scale, reps)
        table.append({"input": label, "scale": scale, "n": args.n, "sparse_ms": total, "auto_ms": auto,
                      "validate_ms": checks, "quantise_ms": full - checks, "rest_ms": total - full})
        print(
            f"{label:<20} {scale!s:>6} {total:8.3f} {auto:8.3f} {checks:9.3f} "
            f"{full - checks:9.3f} {total - full:7.3f}"
        )
    if args.out != "-":
        print(f"wrote {_results.write_rows(table, args.out)}")


def row(memory: Any, runtimes: Any, cap: float, scale: float | None, reps: int) -> tuple[float, float, float, float]:
    """Medians of solve (sparse, auto), validate without and with quantisation."""
    total = median_ms(lambda: solve(memory, runtimes, cap, scale=scale, solver="sparse"), reps)
    auto = median_ms(lambda: solve(memory, runtimes, cap, scale=scale, solver="auto"), reps)
    checks = median_ms(lambda: validate(memory, runtimes, cap, None), reps)
    full = checks if scale is None else median_ms(lambda: validate(memory, runtimes, cap, scale), reps)
    return total, auto, checks, full

if __name__ == "__main__":
    main()
