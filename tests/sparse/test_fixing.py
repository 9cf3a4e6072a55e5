"""Reduction by a Lagrangian bound (``_fixing.fix_by_bound``, ``_core.decided``)."""

from __future__ import annotations

import doctest
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse import _fixing
from remat_knapsack.sparse._core import decided

REL = 1e-13


def _exact(w, v, c, lam, mu, k):
    """L and every item's two caps in rational arithmetic (no rounding)."""
    d = [Fraction(vi) - Fraction(lam) * Fraction(wi) - Fraction(mu) for wi, vi in zip(w, v)]
    L = Fraction(lam) * Fraction(c) + Fraction(mu) * Fraction(k) + sum(max(x, 0) for x in d)
    return L, [L - max(x, 0) for x in d], [L + min(x, 0) for x in d]


def _numpy(w, v, c, lam, mu, k, rel, thr):
    """The bound in numpy (pairwise sums), compared as the core's reduction did
    before ``_fixing``: d_i against gap = L + allowance - thr."""
    d = v - lam * w - mu
    L = lam * c + mu * k + float(np.maximum(d, 0).sum())
    gap = L + 1e-9 + rel * (abs(L) + float(np.abs(d).sum()) + abs(mu) * d.shape[0]) - thr
    if gap < 0:
        return np.ones(d.shape, bool), np.ones(d.shape, bool)
    return d > gap, d < -gap


reals = st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 1e6), reals), min_size=1, max_size=30), reals,
       st.floats(0.0, 50.0), st.floats(-1e3, 1e3), st.integers(0, 30), st.floats(0.0, 1.0))
def test_marks_are_sound(items, c, lam, mu, k, frac):
    """An item is marked only if its exact cap is below the threshold, and
    every item whose exact cap clears the allowance is marked."""
    w = np.array([x for x, _ in items])
    v = np.array([y for _, y in items])
    L_exact, caps_in, caps_out = _exact(w, v, c, lam, mu, k)
    thr = float(L_exact) * frac + float(L_exact) * (1 - frac) * 0.5  # thresholds around and below L
    d, fix_in, fix_out = decided(w, v, c, lam, mu, k, REL, thr)
    np.testing.assert_array_equal(d, v - lam * w - mu)
    mag = float(np.abs(d).sum()) + abs(float(L_exact)) + abs(mu) * len(w) + 1.0
    for i in range(len(w)):
        if fix_in[i]:
            assert caps_in[i] < thr, i
        elif caps_in[i] < thr - 1e-9 * mag:
            pytest.fail(f"item {i}: cap {float(caps_in[i])} far below {thr} but not fixed in")
        if fix_out[i]:
            assert caps_out[i] < thr, i
        elif caps_out[i] < thr - 1e-9 * mag:
            pytest.fail(f"item {i}: cap {float(caps_out[i])} far below {thr} but not fixed out")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**4), st.integers(0, 10**4)), min_size=1, max_size=200),
       st.integers(1, 10**6), st.fractions(0, 3), st.integers(-100, 100), st.integers(0, 200), st.floats(0.5, 1.0))
def test_integer_items_as_numpy_marked_them(items, c, lam, mu, k, frac):
    """On integer items the compiled marks are numpy's (exact reduced profits on a dyadic lam)."""
    w = np.array([x for x, _ in items], dtype=float)
    v = np.array([y for _, y in items], dtype=float)
    lam = float(Fraction(round(lam * 64), 64))
    L = lam * c + mu * k + float(np.maximum(v - lam * w - mu, 0).sum())
    thr = L * frac
    _, fix_in, fix_out = decided(w, v, float(c), lam, float(mu), float(k), REL, thr)
    want_in, want_out = _numpy(w, v, float(c), lam, float(mu), float(k), REL, thr)
    np.testing.assert_array_equal(fix_in, want_in)
    np.testing.assert_array_equal(fix_out, want_out)


def test_marks_accumulate_and_lengths_are_checked():
    w, v = np.array([1.0, 1.0]), np.array([5.0, 0.5])
    fix_in, fix_out = np.array([0, 1], np.uint8), np.zeros(2, np.uint8)
    _fixing.fix_by_bound(w, v, 1.0, 1.0, 0.0, 0.0, REL, 4.8, fix_in, fix_out, None)
    assert fix_in.tolist() == [1, 1]  # the earlier mark stays
    assert fix_out.tolist() == [0, 1]
    with pytest.raises(ValueError, match="one entry per item"):
        _fixing.fix_by_bound(w, v, 1.0, 1.0, 0.0, 0.0, REL, 4.8, fix_in, np.zeros(3, np.uint8), None)
    assert _fixing.fix_by_bound(np.zeros(0), np.zeros(0), 2.0, 1.5, 1.0, 3.0, REL, 0.0,
                                np.zeros(0, np.uint8), np.zeros(0, np.uint8), None) == 6.0


def test_compiled_examples():
    assert doctest.testmod(_fixing).failed == 0


_bounds = st.tuples(st.floats(0.0, 5.0), st.floats(-50.0, 50.0), st.integers(0, 30)).map(lambda t: (*t, REL))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 100), st.integers(0, 100), st.booleans()), min_size=0, max_size=60),
       st.integers(0, 3000), st.floats(0.0, 3000.0), st.lists(_bounds, min_size=1, max_size=3),
       st.lists(_bounds, max_size=3))
def test_reduce_items_is_the_marks_combined(items, c, thr, each, every):
    # One call against ``decided``'s marks: any bound of ``each``, or all of
    # ``every``; fixed in where the witness takes the item, out where not.
    w = np.array([float(a) for a, _, _ in items])
    v = np.array([float(b) for _, b, _ in items])
    x = np.array([s for _, _, s in items], dtype=bool)
    n = w.shape[0]
    fix_in, fix_out = np.zeros(n, bool), np.zeros(n, bool)
    for lam, mu, k, rel in each:
        _, a, b = decided(w, v, float(c), lam, mu, k, rel, thr)
        fix_in |= a
        fix_out |= b
    if every:
        all_in, all_out = np.ones(n, bool), np.ones(n, bool)
        for lam, mu, k, rel in every:
            _, a, b = decided(w, v, float(c), lam, mu, k, rel, thr)
            all_in &= a
            all_out &= b
        fix_in |= all_in
        fix_out |= all_out
    fix1, fix0 = fix_in & x, fix_out & ~x
    d = np.empty(n)
    free, got1, weight_in, value_free = _fixing.reduce_items(w, v, float(c), thr, x.view(np.uint8), d, each, every)
    assert free.tolist() == np.flatnonzero(~(fix1 | fix0)).tolist()
    assert got1.view(bool).tolist() == fix1.tolist()
    assert weight_in == float(w[fix1].sum())  # integers: exact in any order
    assert value_free == float(v[free][x[free]].sum())
    lam, mu = each[0][0], each[0][1]
    assert np.array_equal(d, v - lam * w - mu)


def test_reduce_items_checks_lengths():
    with pytest.raises(ValueError, match="one entry per item"):
        _fixing.reduce_items(np.ones(3), np.ones(3), 1.0, 0.0, np.zeros(2, np.uint8), np.empty(3),
                             [(1.0, 0.0, 0.0, REL)], [])


@settings(max_examples=300, deadline=None)
@given(st.floats(-(2.0**1000), 2.0**1000, allow_nan=False))
def test_positive_part_is_max_with_zero(x):
    """The branch-free positive part the bounds sum is max(x, 0) exactly,
    subnormals and -0.0 included (a positive zero for every x <= 0)."""
    got = _fixing._positive_part_py(x)
    want = x if x > 0 else 0.0
    assert got == want and str(got) == str(want), (x, got)


@pytest.mark.parametrize("x", [5e-324, -5e-324, 2.0**-1060, -0.0, 0.0, 2.0**1000, -(2.0**1000), 1.5, -1.5])
def test_positive_part_edges(x):
    assert str(_fixing._positive_part_py(x)) == str(x if x > 0 else 0.0)
