"""The fixed-point accumulator behind ``_fsum`` (``_exact_sum``) against exact rationals."""

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack._exact_sum import exact_sum

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
