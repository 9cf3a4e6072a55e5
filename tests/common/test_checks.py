"""The input checks' compiled passes (``_common._checks``) against numpy."""

import doctest

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from remat_knapsack._common import _checks

finite = st.floats(allow_nan=False, allow_infinity=True, width=64)


@given(st.lists(st.one_of(finite, st.just(float("nan"))), min_size=1, max_size=30), st.integers(1, 3))
def test_extremes_are_numpy_min_and_max(values, step):
    x = np.array(values)[::step]  # strided too: the user's array, unconverted
    lo, hi = _checks.extremes(x)
    want = (float(x.min()), float(x.max()))
    assert (lo, hi) == want or (np.isnan(want[0]) and np.isnan(lo) and np.isnan(hi))


@given(st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=30))
def test_extremes_of_integers(values):
    x = np.array(values, dtype=np.int64)
    assert _checks.extremes(x) == (int(x.min()), int(x.max()))


def test_extremes_needs_a_value():
    with pytest.raises(ValueError, match="no values"):
        _checks.extremes(np.zeros(0))


@given(st.lists(st.floats(0, 2.0**40, allow_nan=False), max_size=30),
       st.one_of(st.sampled_from([1.0, 2.0, 10.0, 1e4, 0.5]), st.floats(1e-3, 1e6)))
def test_quantise_is_numpy_rint(values, scale):
    x = np.array(values, dtype=np.float64)
    weights, total = _checks.quantise(x, scale)
    want = np.rint(x * scale).astype(np.int64)
    assert weights.dtype == np.int64 and np.array_equal(weights, want)
    assert total == int(want.sum())


def test_quantise_rounds_halves_to_even_and_wraps_its_total_as_numpy():
    weights, total = _checks.quantise(np.array([0.5, 1.5, 2.5, 3.5]), 1.0)
    assert weights.tolist() == [0, 2, 2, 4] and total == 8
    big = np.full(4, 2.0**62)  # the int64 total wraps, as numpy's sum
    assert _checks.quantise(big, 1.0)[1] == int(np.rint(big).astype(np.int64).sum())


def test_doctests():
    assert doctest.testmod(_checks).failed == 0


def test_extremes_of_many_values_come_from_numpy_alike():
    n = _checks.EXTREMES_C_UP_TO + 1
    x = np.random.default_rng(0).standard_normal(n)
    assert _checks.extremes(x) == (float(x.min()), float(x.max()))
    assert _checks.extremes(np.arange(n, dtype=np.int64)) == (0, n - 1)
    x[5] = np.nan
    assert all(np.isnan(_checks.extremes(x)))
