"""The core (``_core``) on and off in one process, interleaved: ``sparse``
on Pisinger's families with the core test at its default size and with it
turned off, so both variants run at the same machine speed.

Usage::

    python benchmarks/bench_core.py                      # n=10^4, R=10^4 and 10^6, seeds 0-2
    python benchmarks/bench_core.py --n 100000 --families uncorrelated weakly
    python benchmarks/bench_core.py --toggle loose       # the skipped trial (``_core.LOOSE``) instead
    python benchmarks/bench_core.py --toggle quick       # the count path's bound at a neighbour's lam
    python benchmarks/bench_core.py --toggle fill --families strongly inverse_strongly --n 10000 100000

With ``--toggle loose`` the core stays on and only the kernel's skipped
trial of ``optimum`` on loose instances is turned on and off; with
``--toggle quick``, the count path's first bound at a neighbouring count's
lam (``sparse._QUICK_BOUNDS``); with ``--toggle fill``, the canonical pass's
greedy count fills (``_canonical._configure_fill_greedy``).

Prints per instance the median CPU time of each variant over ``--rounds``
alternating rounds (each the median of ``--repeat`` solves), their ratio
(on / off, the median of the rounds' ratios), the core's size and whether
both variants return the same set, and writes the same rows to
``benchmarks/results/core-<toggle>.csv`` (``--out``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import _results  # benchmarks/_results.py: where each suite's CSV lives

from remat_knapsack import instances, solve
from remat_knapsack.sparse import _canonical, _core
from remat_knapsack.sparse import _solver as sparse

FAMILIES = ["uncorrelated", "weakly", "strongly", "inverse_strongly", "almost_strongly", "subset_sum",
            "similar_weights", "circle", "profit_ceiling", "multiple_strongly"]


def _median_solve(args, repeat):
    ts = []
    for _ in range(repeat):
        t = time.process_time()
        s = solve(*args, solver="sparse", scale=1)
        ts.append(time.process_time() - t)
    return statistics.median(ts), s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--families", nargs="*", default=FAMILIES)
    p.add_argument("--n", nargs="*", type=int, default=[10_000])
    p.add_argument("--R", nargs="*", type=int, default=[10_000, 1_000_000])
    p.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--toggle", choices=["core", "loose", "quick", "fill"], default="core")
    p.add_argument("--out", metavar="CSV", help="default benchmarks/results/core-<toggle>.csv; '-' for none")
    a = p.parse_args()
    out = a.out or _results.default(f"core-{a.toggle}")
    table = []
    on_size, on_loose = _core.MIN_ITEMS, _core.LOOSE

    def turn(on: bool) -> None:
        if a.toggle == "core":
            _core.MIN_ITEMS = on_size if on else 1 << 62
        elif a.toggle == "loose":
            _core.LOOSE = on_loose if on else 2.0  # never loose: the trial always runs
        elif a.toggle == "quick":
            sparse._QUICK_BOUNDS = on
        else:
            _canonical._configure_fill_greedy(on)

    print(f"| instance | {a.toggle} off | {a.toggle} on | on / off | core items | same set |")
    print("|---|---|---|---|---|---|")
    for fam in a.families:
        for n in a.n:
            for R in a.R:
                for seed in a.seeds:
                    inst = instances.pisinger(fam, n, R, seed)
                    args = (inst.memory, inst.runtimes, inst.max_memory)
                    t_on, t_off, ratios = [], [], []
                    for _ in range(a.rounds):
                        turn(False)
                        off, s_off = _median_solve(args, a.repeat)
                        turn(True)
                        on, s_on = _median_solve(args, a.repeat)
                        t_on.append(on)
                        t_off.append(off)
                        ratios.append(on / off)
                    same = (s_on.value, s_on.saved) == (s_off.value, s_off.saved)
                    table.append({"family": fam, "n": n, "R": R, "seed": seed, "toggle": a.toggle,
                                  "off_s": statistics.median(t_off), "on_s": statistics.median(t_on),
                                  "on_over_off": statistics.median(ratios), "core": s_on.stats.get("core", ""),
                                  "same_set": same})
                    print(f"| {fam}/n={n}/R={R}/{seed} | {statistics.median(t_off) * 1e3:.2f} ms | "
                          f"{statistics.median(t_on) * 1e3:.2f} ms | {statistics.median(ratios):.2f} | "
                          f"{s_on.stats.get('core', '-')} | {'yes' if same else 'NO'} |", flush=True)
    if out != "-":
        print(f"wrote {_results.write_rows(table, out)}")


if __name__ == "__main__":
    main()
