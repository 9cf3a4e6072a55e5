"""The fixed-point accumulator behind ``_fsum`` (``_exact_sum``) against exact rationals."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from remat_knapsack._common._exact_sum import exact_sum

_UNIT = Fraction(1, 2**1074)


def _exact(xs):
    return sum(map(Fraction, xs), Fraction(0)) / _UNIT


finite = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, -(2.0**-1022), 1.7976931348623157e308,
                     -1.7976931348623157e308, 1.0, 0.1]),
    st.integers(-(2**60), 2**60).map(float),
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(finite, max_size=60))
def test_exact_sum_is_the_rational_sum(xs):
    assert exact_sum(np.array(xs, dtype=np.float64)) == _exact(xs)


def test_every_limb_carries():
    # the largest and smallest magnitudes, many times, both signs: every limb
    # gains and loses its most, and the total is still exact
    big, tiny = 1.7976931348623157e308, 5e-324
    xs = [big] * 20_000 + [-tiny] * 20_000 + [2.0**-1022] * 20_000 + [-big] * 19_999
    assert exact_sum(np.array(xs)) == _exact(xs)


def test_inf_and_nan_are_refused():
    assert exact_sum(np.array([1.0, math.inf])) is None
    assert exact_sum(np.array([math.nan])) is None
    assert exact_sum(np.array([-math.inf, 2.0])) is None
    assert exact_sum(np.zeros(0)) == 0


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.one_of(finite, st.sampled_from([math.inf, -math.inf, math.nan])), st.booleans()),
                max_size=40))
@example([(-(2.0**970), True), (5e-324, True), (-1.7976931348623157e308, True)])  # total just inside float64
@example([(1.0, True), (math.inf, False), (math.nan, False), (2.0, True)])  # integers around left-out inf, nan
@example([(-0.0, True), (-0.0, False), (3.0, False)])  # a zero's sign, with integers left out
def test_masked_sums_are_the_gathered_ones(pairs):
    # exact_sum and fsum with a mask: what they give for the items it keeps
    from remat_knapsack._common._fsum import fsum

    x = np.array([p[0] for p in pairs], dtype=np.float64)
    m = np.array([p[1] for p in pairs], dtype=bool)
    kept = x[m]
    assert exact_sum(x, m.view(np.uint8)) == (exact_sum(kept) if np.all(np.isfinite(kept)) else None)
    try:
        want = math.fsum(kept.tolist())
    except (OverflowError, ValueError) as e:
        want = type(e)
    if want is OverflowError and np.all(np.isfinite(kept)):
        # math.fsum also raises when only a partial sum overflows (``_fsum``'s
        # docs): then the oracle is the exact total, correctly rounded
        try:
            want = float(sum(map(Fraction, kept.tolist())))
        except OverflowError:
            pass
    try:
        got = fsum(x, m)
    except (OverflowError, ValueError) as e:
        got = type(e)
    assert (got is want) if isinstance(want, type) else (
        math.isnan(got) if math.isnan(want) else (got == want and math.copysign(1, got) == math.copysign(1, want)))


def test_mask_length_must_match():
    with pytest.raises(ValueError, match="mask has 2 items, x has 3"):
        exact_sum(np.zeros(3), np.zeros(2, dtype=np.uint8))


near_2_53 = st.integers(-(2**53), 2**53).map(float)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(near_2_53, st.integers(-1000, 1000).map(float), st.sampled_from([0.5, 2.0**53, -(2.0**53)])),
                max_size=40), st.data())
def test_integers_summed_in_float64_or_in_the_limbs(xs, data):
    # Integers whose running sums stay below 2**53 are added in float64; one
    # at 2**53, a sum passing it, or a non-integer sends the sum to the limbs.
    x = np.array(xs, dtype=np.float64)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(xs), max_size=len(xs))), dtype=np.uint8)
    assert exact_sum(x) == _exact(xs)
    assert exact_sum(x, mask) == _exact([v for v, m in zip(xs, mask) if m])


def test_integer_sums_at_the_edge_of_float64():
    big = 2.0**52
    assert exact_sum(np.array([big, big - 1.0, 1.0])) == (2**53) << 1074  # the sum reaches 2**53: limbs
    assert exact_sum(np.array([big, big - 1.0])) == (2**53 - 1) << 1074  # just below: float64
    assert exact_sum(np.array([big, big, 1.0])) == (2**53 + 1) << 1074  # 2**53 + 1 is not a float64
    assert exact_sum(np.array([3.0, 4.0, 0.25])) == 29 << 1072  # a non-integer last
    assert exact_sum(np.array([1.0, np.inf])) is None and exact_sum(np.array([1.0, np.nan])) is None
