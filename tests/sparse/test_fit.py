"""``_fit``: the cardinality multipliers' line and count term, against numpy."""

import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse import _fit

_items = st.lists(st.tuples(st.integers(1, 60), st.integers(1, 80)), min_size=2, max_size=200)


def test_doctests():
    assert doctest.testmod(_fit).failed == 0


@settings(max_examples=300, deadline=None)
@given(_items, st.data())
def test_line_fit_is_least_squares(items, data):
    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    lo = data.draw(st.integers(0, len(w) - 1))
    hi = data.draw(st.integers(lo + 1, len(w)))
    lam, mu0, on = _fit.line_fit(w, v, lo, hi, 1e-9)
    x, y = w[lo:hi], v[lo:hi]
    dx = x - x.mean()
    sxx = float((dx * dx).sum())
    slope = float((dx * (y - y.mean())).sum()) / sxx if sxx > 0 else 0.0
    if not slope > 1e-9:
        assert (lam, mu0, on) == (0.0, 0.0, False) or lam == pytest.approx(slope, abs=1e-9)
        return
    assert lam == pytest.approx(slope, rel=1e-9)
    assert mu0 == pytest.approx(y.mean() - slope * x.mean(), rel=1e-9, abs=1e-9)
    assert on == bool(np.abs(y - lam * x - mu0).max() <= 1e-9 * np.abs(y).max())


def test_items_on_a_line_are_found_on_it():
    w = np.arange(1.0, 50.0)
    assert _fit.line_fit(w, 3 * w + 7, 0, 49, 1e-9) == (3.0, 7.0, True)
    v = 3 * w + 7
    v[10] += 1
    assert _fit.line_fit(w, v, 0, 49, 1e-9)[2] is False
    assert _fit.line_fit(w, v, 20, 49, 1e-9)[2] is True  # the window leaves the odd item out


def test_no_slope_is_no_line():
    assert _fit.line_fit(np.full(5, 2.0), np.arange(5.0), 0, 5, 1e-9) == (0.0, 0.0, False)  # weights do not vary
    assert _fit.line_fit(np.arange(1.0, 6.0), -np.arange(5.0), 0, 5, 1e-9) == (0.0, 0.0, False)  # falling values


@pytest.mark.parametrize("lo, hi", [(-1, 2), (2, 2), (0, 6)])
def test_line_fit_names_a_bad_window(lo, hi):
    with pytest.raises(ValueError, match="line_fit"):
        _fit.line_fit(np.ones(5), np.ones(5), lo, hi, 1e-9)


@settings(max_examples=300, deadline=None)
@given(_items, st.floats(0, 3), st.data())
def test_count_multiplier_is_the_clamped_kth_largest(items, lam, data):
    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    n = len(w)
    k = data.draw(st.integers(0, n))
    d = v - lam * w
    kth = float(np.partition(d, n - k)[n - k]) if 0 < k < n else 0.0
    assert _fit.count_multiplier(w, v, lam, k, True) == (max(0.0, kth) if 0 < k < n else 0.0)
    assert _fit.count_multiplier(w, v, lam, k, False) == (min(0.0, kth) if 0 < k < n else 0.0)


def test_count_multiplier_on_many_ties():
    # Items on a line: few distinct reduced profits, the selection's worst case for a two-way partition.
    w = np.tile(np.arange(1.0, 4.0), 1000)
    v = w + 10
    for k in (1, 999, 1000, 1001, 2999):
        assert _fit.count_multiplier(w, v, 1.0, k, True) == 10.0
        assert _fit.count_multiplier(w, v, 2.0, k, True) == max(0.0, float(np.sort(v - 2 * w)[::-1][k - 1]))


@settings(max_examples=200, deadline=None)
@given(_items, st.integers(1, 5), st.integers(1, 5), st.integers(0, 8))
def test_more_levels_counts_distinct_offsets(items, p, q, most):
    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    m = min(64, len(w))
    spread = [t * len(w) // m for t in range(m)]  # evenly over the arrays
    want = len(set((q * v[spread] - p * w[spread]).tolist())) > most
    assert _fit.more_levels(w, v, float(p), float(q), 64, most) is want


def test_more_levels_samples_the_whole_arrays():
    # Profit ceiling items in efficiency order: 3 v - w is 2 or 1 on the
    # first items, 0 only on the last third (3 | w, efficiency 1/3).
    w = np.concatenate([np.arange(1.0, 3001.0)[np.arange(3000) % 3 != 2], np.arange(3.0, 3001.0, 3.0)])
    v = np.ceil(w / 3)
    assert not _fit.more_levels(w[:2000], v[:2000], 1.0, 3.0, 64, 2)  # two lines there
    assert _fit.more_levels(w, v, 1.0, 3.0, 64, 2)  # the third one, 1000 items at the end
    with pytest.raises(ValueError, match="m must be >= 0"):
        _fit.more_levels(w, v, 1.0, 3.0, -1, 2)


def _slopes_reference(w, v, near, scan, probes, sample):
    # ``line_slopes`` in Python: probes of distinct weights, then each pair's slope
    lo = max(0, near - 1)
    idx, seen = [], set()
    for i in range(lo, min(len(w), lo + scan)):
        if len(idx) < probes and w[i] not in seen:
            idx.append(i)
            seen.add(w[i])
    out = []
    for a in range(len(idx)):
        for b in range(a + 1, len(idx)):
            dw, dv = int(w[idx[b]]) - int(w[idx[a]]), int(v[idx[b]]) - int(v[idx[a]])
            if dw == 0 or dv == 0 or (dw > 0) != (dv > 0):
                continue
            g = math.gcd(abs(dw), abs(dv))
            p, q = abs(dv) // g, abs(dw) // g
            if not _fit.more_levels(w, v, float(p), float(q), sample, 2):
                out.append((p, q))
    return out


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(1, 30), st.integers(0, 2)), min_size=1, max_size=40),
       st.integers(1, 3), st.integers(1, 4), st.integers(0, 40), st.integers(1, 6), st.integers(2, 5))
def test_line_slopes_against_python(items, p, q, near, probes, sample):
    # items on up to three lines q v = p w + e (e from the second field), so some pairs pass
    w = np.array([float(a * q) for a, _ in items])
    v = np.array([float(a * p + e) for a, e in items])
    want = _slopes_reference(w, v, near, 16, probes, sample)
    assert _fit.line_slopes(w, v, near, 16, probes, sample) == want


def test_line_slopes_checks_probes_and_skips_inexact_values():
    w = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="probes must be in"):
        _fit.line_slopes(w, w, 0, 16, 17, 64)
    assert _fit.line_slopes(w, w, 0, 16, 3, 64) == [(1, 1), (1, 1), (1, 1)]
    assert _fit.line_slopes(w, np.array([1.0, 2.0**53, 3.0]), 0, 16, 3, 64) == []
