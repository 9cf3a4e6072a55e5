"""Differential property tests: sparse, auto, hirschberg and frontier against
dp and exact brute force (tests/differential.py draws the cases and checks
them). Derandomized and quick by default; ``.ci/fuzz-differential SECONDS``
runs the same checks on random cases for a time budget."""

from __future__ import annotations

import random

import differential
from hypothesis import example, given, settings
from hypothesis import strategies as st

cases = st.integers(0, 2**63).map(lambda seed: differential.draw_case(random.Random(seed)))


@settings(max_examples=300, deadline=None)
@given(case=cases)
# Odd FLOP counts near 2**52 whose total passes 2**53: sparse and auto
# returned [0, 1] (2**53 + 10) for the optimum [1, 2] (2**53 + 26).
@example(case=([1.0, 4.0, 9.0], [2.0**52 + 1, 2.0**52 + 9, 2.0**52 + 17], 13.0, 1))
@example(case=([1.0, 4.0, 9.0], [2.0**52 + 1, 2.0**52 + 9, 2.0**52 + 17], 13.0, None))
# dp and hirschberg: three items of 2**52 + 1 sum to 3 * 2**52 + 3, which
# float64 rounds to 3 * 2**52 + 4, a tie with the fourth item that the
# backtrack broke the wrong way ([0, 1, 2] for [3]).
@example(case=([1.0, 1.0, 1.0, 3.0], [2.0**52 + 1] * 3 + [3 * 2.0**52 + 4], 3.0, 1))
# frontier: float64 sums in index order were one ulp off the exact optimum.
@example(case=([2.0, 2.0, 1.0, 5.0, 5.0, 7.0, 9.0, 6.0],
               [7191063761592797.0, 9007199254741032.0, 5580388822983977.0, 7132562416452411.0,
                9007199254741016.0, 4518046029839003.0, 9007199254740996.0, 4932520084275367.0], 24.0, 1))
# scale=None, identical memories, runtimes 10^320 apart: the grouped solver's
# search for proportional types took round(inf) and raised OverflowError.
@example(case=([0.258847102356334] * 11,
               [4.051547495186366e+18, 4.302687931079729e+18, 4.433412480238772e+16, 3.221066426554519e+18,
                1.2799332437851866e+18, 3.3874286532855183e+18, 4.34593169162579e+18, 2.604433544301792e+18,
                9.332636185032189e-302, 2.7704754763426156e+18, 3.0148469863459144e+18], 1.5530826141380039, None))
def test_solvers_agree_with_the_oracles(case):
    assert differential.check(case) == []


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 9), e=st.integers(50, 62))
def test_integer_runtimes_up_to_2_62_are_exact(seed, n, e):
    # Integer runtimes near 2**e with odd low bits, duplicated shapes, every
    # capacity from 0 to the total: the canonical set of the brute force.
    rng = random.Random(seed)
    shapes = [(float(rng.randint(1, 9)), float(rng.randint(1 << (e - 1), 1 << e) | 1)) for _ in range(4)]
    items = [rng.choice(shapes) for _ in range(n)]
    mem, run = [m for m, _ in items], [r for _, r in items]
    for cap in range(int(sum(mem)) + 1):
        assert differential.check((mem, run, float(cap), rng.choice([1, None]))) == []
