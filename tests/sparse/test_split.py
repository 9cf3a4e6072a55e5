"""``_split``: the compiled split and core behind ``_core``. Each piece is
checked against the same thing computed from the full efficiency order with
numpy (``test_core`` checks the facade and the solves on top of it)."""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse import _split
from remat_knapsack.sparse._order import descending


def test_doctests():
    assert doctest.testmod(_split).failed == 0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 50), st.integers(1, 60)), min_size=1, max_size=300),
    st.floats(0, 1),
    st.sampled_from([4, 16, 1024]),
)
def test_split_pieces_are_the_full_order(items, frac, sample):
    # top: above the thresholds, mid: between them in efficiency order, low:
    # below; the break item of the full order is mid[b] (ties by position).
    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    c = float(int(frac * w.sum()))
    eff = v / w
    pieces = _split.split(w, eff, c, sample, 1 / 16)
    if w.sum() <= c:
        assert pieces is None  # no break item
        return
    top, mid, low, b = pieces
    full = descending(eff)
    assert np.array_equal(np.concatenate((top[descending(eff[top])], mid, low[descending(eff[low])])), full)
    assert np.all(np.diff(top) > 0) and np.all(np.diff(low) > 0)
    k = int(np.searchsorted(np.cumsum(w[full]), c, side="right"))
    assert mid[b] == full[k]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 50), st.integers(1, 60)), min_size=1, max_size=300),
    st.floats(0, 1),
    st.sampled_from([0.0, 2.5]),
)
def test_core_is_the_reduction_of_the_greedy_set(items, frac, tol):
    # The greedy completion of the break solution in the full order, and
    # Dantzig's bound at the break item against its value less tol.
    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    c = float(int(frac * w.sum()))
    if w.sum() <= c:
        return
    eff = v / w
    top, mid, low, b = _split.split(w, eff, c, 16, 1 / 16)
    free, fixed, room, sorted_low = _split.core(w, v, c, top, mid, b, low, False, tol, 1e-13)
    full = descending(eff)
    k = int(np.searchsorted(np.cumsum(w[full]), c, side="right"))
    left, value = c - w[full[:k]].sum(), v[full[:k]].sum()
    for i in full[k:]:
        if w[i] <= left:
            left, value = left - w[i], value + v[i]
    lam = eff[full[k]]
    d = v - lam * w
    bound = lam * c + d[d > 0].sum()
    lower = value * (1.0 - w.size * 2.0**-52) - tol
    want_in = bound - np.maximum(d, 0) + 1e-6 < lower  # integer data: far from the allowance
    want_out = bound + np.minimum(d, 0) + 1e-6 < lower
    assert fixed.tolist() == np.flatnonzero(want_in).tolist()
    assert free.tolist() == np.flatnonzero(~(want_in | want_out)).tolist()
    assert room == c - w[fixed].sum()
    if sorted_low is not None:
        assert np.array_equal(sorted_low, low[descending(eff[low])])


def test_empty_items_have_no_split():
    assert _split.split(np.zeros(0), np.zeros(0), 1.0, 16, 1 / 16) is None


@pytest.mark.parametrize("n", [1, 2, 5000])
def test_one_efficiency_puts_every_item_between(n):
    # Subset-sum-like items: every efficiency equal, so no threshold separates them.
    w = np.arange(1.0, n + 1.0)
    c = float(w.sum() // 2)
    top, mid, low, b = _split.split(w, w / w, c, 1024, 1 / 16)
    assert top.size == low.size == 0 and mid.tolist() == list(range(n))
    assert w[:b].sum() <= c < w[:b + 1].sum()


def test_bad_arguments_are_named():
    w = np.ones(4)
    with pytest.raises(ValueError, match="4 weights but 3 efficiencies"):
        _split.split(w, np.ones(3), 2.0, 16, 1 / 16)
    with pytest.raises(ValueError, match="sample must be at least 1, got 0"):
        _split.split(w, w, 2.0, 0, 1 / 16)
    top, mid, low, b = _split.split(w, w, 2.0, 16, 1 / 16)
    with pytest.raises(ValueError, match="4 weights but 2 values"):
        _split.core(w, np.ones(2), 2.0, top, mid, b, low, False, 0.0, 1e-13)
    with pytest.raises(ValueError, match="break position 4 is not in mid"):
        _split.core(w, w, 2.0, top, mid, 4, low, False, 0.0, 1e-13)


def test_core_takes_read_only_pieces():
    rng = np.random.default_rng(3)
    w, v = rng.integers(1, 50, 300).astype(float), rng.integers(1, 50, 300).astype(float)
    c = float(w.sum() // 3)
    top, mid, low, b = _split.split(w, v / w, c, 16, 1 / 16)
    want = _split.core(w, v, c, top, mid, b, low, False, 0.0, 1e-13)
    for a in (w, v, top, mid, low):
        a.flags.writeable = False
    got = _split.core(w, v, c, top, mid, b, low, False, 0.0, 1e-13)
    assert all(np.array_equal(x, y) for x, y in zip(got[:2], want[:2], strict=True)) and got[2] == want[2]
