"""``_order.descending``: positions by descending value, ties by position."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse import _order
from remat_knapsack.sparse._order import descending


def _expected(x):
    return np.argsort(-x, kind="stable")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, width=64), max_size=300))
def test_matches_a_stable_argsort(values):
    x = np.array(values, dtype=np.float64)
    x[x == 0] = 0.0  # -0.0 and 0.0 tie (argsort's order among them is by position too)
    assert descending(x).tolist() == _expected(x).tolist()


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 70_000])
def test_crowded_and_tied_values(n):
    """Values closer than the truncated keys can tell (the insertion pass
    orders them), and many exact ties."""
    rng = np.random.default_rng(n)
    crowded = 1.0 + 1e-12 * rng.permutation(n)
    tied = rng.integers(0, 4, n).astype(np.float64)
    tiny = rng.random(n) * 1e-300
    for x in (crowded, tied, tiny, -crowded):
        assert np.array_equal(descending(x), _expected(x))


@pytest.mark.parametrize("n", [1, 2, 1000])
def test_values_already_in_order(n):
    """Non-increasing values (equal ones, as a subset-sum instance's
    efficiencies) are in order already: their positions, unsorted."""
    rng = np.random.default_rng(n)
    falling = -np.sort(-rng.integers(0, 5, n).astype(np.float64))
    for x in (np.ones(n), falling, np.array([0.0, -0.0] * n)):
        assert np.array_equal(descending(x), _expected(x))
    if n > 1:
        rise = falling.copy()
        rise[-1] = rise[0] + 1  # one rise at the end: the sort after all
        assert np.array_equal(descending(rise), _expected(rise))


def test_falls_back_when_values_crowd_too_much():
    """Past MOVES_PER_ITEM moves an item the insertion pass gives up: the
    same order, from np.argsort."""
    x = 1.0 + 2.0**-52 * np.random.default_rng(0).permutation(5000)  # one ulp apart: one truncated key
    assert np.array_equal(descending(x), _expected(x))


def test_negative_zero_ties_with_zero():
    x = np.array([-0.0, 0.0, -1.0, np.inf, -np.inf, 5e-324, -5e-324, 0.0, -0.0])
    assert descending(x).tolist() == _expected(x).tolist()
    assert _order.descending(np.zeros(0)).tolist() == []


def test_compiled_examples():
    """The docstring examples of the compiled helpers (pytest's doctest
    collection reads .py files only)."""
    import doctest

    from remat_knapsack._common import _lists

    for module in (_order, _lists):
        assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize("n", [0, 1, 7, 5000])
def test_ascending_counts_small_integers(n):
    """Integers up to COUNTING_SPAN n + COUNTING_FLOOR are sorted by counting,
    others by ``descending`` of -x: both as a stable argsort."""
    rng = np.random.default_rng(n)
    span = int(_order.COUNTING_SPAN * n + _order.COUNTING_FLOOR)
    cases = [
        rng.integers(0, span + 1, n).astype(np.float64),  # counted
        rng.integers(0, 4, n).astype(np.float64),  # counted, many ties
        rng.integers(0, 10 * span, n).astype(np.float64),  # beyond the span: sorted
        rng.integers(0, 50, n) + 0.5,  # not integers
        -rng.integers(0, 50, n).astype(np.float64),  # negative (and -0.0)
    ]
    if n:
        top = rng.integers(0, span + 1, n).astype(np.float64)
        top[-1] = span  # the largest counted value
        cases.append(top)
    if n >= 2:  # one fraction among integers in the span: sorted, not counted (which would tie the two)
        one = rng.integers(0, span, n).astype(np.float64)
        one[n // 2] = one[n // 2 + 1] + 0.25
        cases.append(one)
    for x in cases:
        assert np.array_equal(_order.ascending(x), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("n", [2, 31, 32, 33])
def test_insertion_and_keyed_sorts_agree_at_the_switch(n):
    """Up to INSERTION_UP_TO values are sorted by insertion, more by keys
    (or counting): the same stable order on both sides of the switch."""
    rng = np.random.default_rng(n)
    for x in (rng.integers(0, 4, n).astype(np.float64), rng.standard_normal(n),
              np.array([0.0, -0.0] * (n // 2) + [1.0] * (n % 2)), 2000.0 + rng.integers(0, 3, n)):
        assert descending(x).tolist() == _expected(x).tolist()
        assert _order.ascending(x).tolist() == np.argsort(x, kind="stable").tolist()
