"""Timed differential fuzzing: ``python tests/fuzz_differential.py SECONDS [SEED]``.

Draws random cases (tests/differential.py: ``draw_case``) until the time
budget is spent, checks each (``check``: sparse, auto, hirschberg and
frontier against dp and exact brute force), prints every mismatch with a
reproducer and, at the end, the number of checks per (oracle, solver).
Exit status 1 when a mismatch was found. Run by .ci/fuzz-differential.
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import differential  # noqa: E402


def main(argv: list[str]) -> int:
    budget = float(argv[1]) if len(argv) > 1 else 60.0
    seed = int(argv[2]) if len(argv) > 2 else random.SystemRandom().randrange(2**63)
    print(f"fuzz-differential: {budget:.0f} s, seed {seed}", flush=True)
    rng = random.Random(seed)
    end = time.monotonic() + budget
    cases = bad = 0
    while time.monotonic() < end:
        case = differential.draw_case(rng)
        cases += 1
        try:
            found = differential.check(case)
        except Exception as exc:  # a crash is a mismatch too
            found = [f"raised {type(exc).__name__}: {exc}\n{traceback.format_exc()}"]
        if found:
            bad += 1
            print(f"MISMATCH in case {cases}: {differential.reproducer(case)}", flush=True)
            for line in found:
                print("   ", line, flush=True)
    print(f"{cases} cases, {bad} with mismatches")
    for (oracle, solver), k in sorted(differential.counts.items()):
        print(f"  {oracle:>5} vs {solver:<10} {k}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
