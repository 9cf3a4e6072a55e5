"""``_select``: the linear-time stand-ins for two sorts of the sparse set-up,
against the sorts they replace; and the canonical pass's groups of identical
items (one pass over the weight order, or ``_select.group_ids``)."""

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse import _canonical, _sparse


def _sorted_count(w, c):
    return int(np.searchsorted(np.cumsum(np.sort(w)), c, side="right"))


weights = st.lists(st.integers(1, 50), min_size=0, max_size=200).map(lambda x: np.array(x, dtype=np.float64))


@settings(max_examples=300, deadline=None)
@given(weights, st.integers(0, 3000))
@example(np.array([3.0, 3.0, 3.0]), 8)  # equal weights, part of them fit
@example(np.array([1.0] * 5), 5)  # all of them, exactly
@example(np.array([], dtype=np.float64), 10)
def test_lightest_count_is_the_sorted_count(w, c):
    # Weights up to 2n + 1024 are counted per weight; scaled past that, the
    # same question goes to the selection.
    assert _sparse.lightest_count_py(w, float(c)) == _sorted_count(w, c)
    big = w * 10_000
    assert _sparse.lightest_count_py(big, float(c) * 10_000) == _sorted_count(big, c * 10_000)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 3), st.floats(0, 1.1), st.integers(0, 2**32 - 1))
def test_lightest_count_by_counts_at_the_edge(n, spread, frac, seed):
    # Weights up to about spread n: both sides of the counting path's limit,
    # capacities from 0 to beyond the total.
    rng = np.random.default_rng(seed)
    w = rng.integers(1, spread * n + 1026, n).astype(np.float64)
    c = float(int(frac * w.sum()))
    assert _sparse.lightest_count_py(w, c) == _sorted_count(w, c)


def test_lightest_count_on_ordered_and_large_inputs():
    rng = np.random.default_rng(0)
    # one bucket of the weight range holds all the items but one
    skewed = np.concatenate((rng.integers(10**6, 10**6 + 50, 5_000), [10**12])).astype(float)
    for w in (np.arange(1.0, 20_001.0), np.arange(20_000.0, 0.0, -1.0), rng.integers(1, 10**6, 50_000).astype(float),
              np.full(30_000, 7.0), skewed, rng.permutation(skewed)):
        for c in (0.0, float(w.min()), w.sum() / 3, w.sum() - 1, w.sum(), w.sum() + 5):
            assert _sparse.lightest_count_py(np.ascontiguousarray(w), c) == _sorted_count(w, c)


pairs = st.lists(st.tuples(st.integers(1, 6), st.sampled_from([1.0, 2.0, 0.1, 0.3, 2.0**-40, 1e300])), max_size=120)


@settings(max_examples=300, deadline=None)
@given(pairs)
def test_group_ids_are_exact_pairs(items):
    w = np.array([a for a, _ in items], dtype=np.float64)
    v = np.array([b for _, b in items], dtype=np.float64)
    g = _canonical._group_ids_py(w, v)
    assert g.shape == w.shape
    for i in range(len(items)):  # same group exactly when weight and value are equal
        same = (w == w[i]) & (v == v[i])
        assert np.array_equal(g == g[i], same)
    assert set(g.tolist()) == set(range(len(set(g.tolist()))))  # numbered 0, 1, ...


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), max_size=120))
def test_group_ids_when_the_value_follows_the_weight(ws):
    # the one-pass route over the weight order (no run mixes values)
    w = np.array(ws, dtype=np.float64)
    g = _canonical._group_ids_py(w, 3 * w + 1)
    for i in range(len(ws)):
        assert np.array_equal(g == g[i], w == w[i])


@settings(max_examples=300, deadline=None)
@given(weights, st.integers(0, 200))
@example(np.array([5.0, 5.0, 5.0, 1.0]), 10)  # ties at the count
@example(np.array([2.0, 3.0]), 0)  # nothing to reach
def test_fewest_values_reaching_a_sum_by_selection(v, prefix):
    # The count multiplier's kmin: the fewest values, largest first, that
    # reach the break solution's value (here the sum of a prefix of them).
    from remat_knapsack.sparse import _solver

    psum = float(v[: min(prefix, v.size)].sum())
    topv = _solver._TopValues(v, v)
    sorted_k = _solver._fewest_reaching(v, psum, topv, integral=False)
    assert sorted_k == int(np.searchsorted(np.concatenate(([0.0], np.cumsum(np.sort(v)[::-1]))), psum, side="left"))
    assert _solver._fewest_reaching(v, psum, _solver._TopValues(v, v), integral=True) == sorted_k
