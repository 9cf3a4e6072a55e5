"""The grouped solver (_types): identical items as types with counts.

Oracles: dp_knapsack's canonical set (``solver="dp"`` on integer weights),
exact brute force, and the Python-integer fallback ``_exact_canonical`` for
weights beyond 2**53.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import brute_force

from remat_knapsack import solve
from remat_knapsack.sparse._real import _exact_canonical
from remat_knapsack.sparse._types import MIN_COPIES, _group_sorted, group, solve_grouped, solve_types


@st.composite
def typed_instances(draw, max_types=4, max_n=40, max_w=12, max_v=6):
    """Few (weight, value) pairs, many copies at interleaved indices, value
    ties between types, and a capacity anywhere from 0 to the total."""
    T = draw(st.integers(1, max_types))
    pairs = draw(st.lists(st.tuples(st.integers(1, max_w), st.integers(1, max_v)), min_size=T, max_size=T))
    n = draw(st.integers(1, max_n))
    kinds = draw(st.lists(st.integers(0, T - 1), min_size=n, max_size=n))
    w = [pairs[k][0] for k in kinds]
    v = [pairs[k][1] for k in kinds]
    cap = draw(st.integers(0, sum(w)))
    return w, v, cap


def _dp(w, v, cap):
    return solve([float(x) for x in w], [float(x) for x in v], float(cap), scale=1, solver="dp").saved


@settings(max_examples=300, deadline=None)
@given(typed_instances())
def test_grouped_is_dp_canonical(case):
    w, v, cap = case
    got = solve_types(np.array(w), np.array(v, dtype=float), cap, True, 0.0, 10**6)
    assert got is not None
    assert got[0].tolist() == _dp(w, v, cap)


@settings(max_examples=100, deadline=None)
@given(typed_instances(max_n=13))
def test_grouped_is_brute_force(case):
    w, v, cap = case
    val, saved = brute_force(w, v, cap)
    chosen = solve_types(np.array(w), np.array(v, dtype=float), cap, True, 0.0, 10**6)[0].tolist()
    assert chosen == saved
    assert sum(v[i] for i in chosen) == val


@settings(max_examples=100, deadline=None)
@given(typed_instances(max_types=3, max_n=60), st.integers(30, 70))
def test_grouped_exact_beyond_two_limbs_of_float(case, shift):
    # Weights far beyond 2**53 (2**61 splits them into two limbs) with tiny
    # offsets: only exact integer arithmetic tells the sets apart.
    w, v, cap = case
    big = [(x << shift) + (x * 7919) % 13 for x in w]
    bcap = (cap << shift) + int(cap) % 17
    want = _exact_canonical(big, [float(x) for x in v], bcap, 0.0, 10**7, "test").tolist()
    got = solve_types(np.array(big, dtype=object), np.array(v, dtype=float), bcap, True, 0.0, 10**6)
    assert got is not None and got[0].tolist() == want


def test_identical_copies_keep_the_lowest_indices():
    # Six identical items, room for three: dp keeps the three lowest.
    chosen, stats = solve_types(np.full(6, 2), np.full(6, 5.0), 6, True, 0.0, 10**6)
    assert chosen.tolist() == [0, 1, 2]
    assert stats["types"] == 1


def test_budget_exactly_at_a_set_and_one_below():
    # Types (3, 3) and (2, 2): equal efficiency, every total is a tie in value.
    w = [3, 2, 3, 2, 2, 3, 2, 3] * 3
    v = [float(x) for x in w]
    for cap in range(sum(w) + 1):
        assert solve_types(np.array(w), np.array(v), cap, True, 0.0, 10**6)[0].tolist() == _dp(w, v, cap)


def test_public_solve_routes_few_pairs_to_the_grouped_solver():
    rng = np.random.default_rng(0)
    kinds = rng.integers(0, 3, 40 * MIN_COPIES)
    w = np.array([5, 7, 11])[kinds].astype(float)
    v = np.array([3.0, 5.0, 8.0])[kinds]
    cap = float(w.sum() // 2)
    s = solve(w.tolist(), v.tolist(), cap, scale=1, solver="sparse")
    assert s.stats.get("grouped") is True
    assert s.saved == _dp(w.tolist(), v.tolist(), cap)


def test_group_rejects_many_pairs_and_counts_types():
    w = np.arange(1, 101, dtype=float)
    assert group(w, np.ones(100)) is None
    kind, first = group(np.array([2.0, 1.0, 2.0, 1.0]), np.array([1.0, 1.0, 1.0, 3.0]))
    assert kind.tolist() == [2, 0, 2, 1]  # types numbered by (weight, value)
    assert first.tolist() == [1, 3, 0]
    big = np.array([2**70 + 1, 2**70, 2**70 + 1], dtype=object)  # distinct beyond float64: sorted exactly
    kind, first = group(big, np.ones(3))
    assert kind.tolist() == [1, 0, 1] and first.tolist() == [1, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 4)), min_size=1, max_size=200))
def test_group_by_hashing_is_group_by_sorting(pairs):
    w = np.array([float(a) for a, _ in pairs])
    v = np.array([float(b) for _, b in pairs])
    got, want = group(w, v), _group_sorted(w, v, 24)
    assert (got is None) == (want is None)
    if got is not None:
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_too_many_states_gives_way():
    # A budget of one state: the probe's DP outgrows it and the grouped
    # solver declines (the caller then solves item by item).
    w = [101, 113, 127, 131, 137, 149] * 10
    v = [100.0, 114.0, 125.0, 133.0, 136.0, 150.0] * 10
    kind, first = group(np.array(w, dtype=float), np.array(v))
    G = [int(w[i]) for i in first.tolist()]
    V = [v[i] for i in first.tolist()]
    assert solve_grouped(kind, G, V, sum(w) // 2, True, 0.0, 1) is None
    got = solve_grouped(kind, G, V, sum(w) // 2, True, 0.0, 10**6)[0].tolist()
    assert got == _dp(w, v, sum(w) // 2)


def test_min_copies_rule_keeps_small_instances_on_the_kernel():
    s = solve([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], 3.0, scale=1, solver="sparse")
    assert "grouped" not in s.stats
    assert MIN_COPIES >= 2


@pytest.mark.parametrize("types", [1, 2, 3])
def test_min_copies_rule_at_its_boundary(types):
    # Grouped from MIN_COPIES items per type on average, not one item fewer.
    for n, grouped in ((MIN_COPIES * types, True), (MIN_COPIES * types - 1, False)):
        kinds = np.arange(n) % types
        w = np.array([5.0, 7.0, 11.0])[kinds]
        v = np.array([3.0, 5.0, 8.0])[kinds]
        cap = float(w.sum() // 2)
        s = solve(w, v, cap, scale=1, solver="sparse")
        assert s.stats.get("grouped", False) is grouped, (types, n)
        assert s.saved == _dp(w.tolist(), v.tolist(), cap)


@pytest.mark.parametrize("seed", range(3))
def test_float_values_within_tolerance(seed):
    # Values off their power-of-two grid: the tolerance path. The set must be
    # feasible and within the tolerance of the dp optimum.
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 3, 64)
    w = np.array([3, 4, 6])[kinds]
    v = np.array([0.1, 0.37, 0.5])[kinds]
    cap = int(w.sum() * 0.4)
    chosen = solve_types(w, v, cap, False, 1e-9, 10**6)[0]
    assert w[chosen].sum() <= cap
    ref = solve(w.astype(float).tolist(), v.tolist(), float(cap), scale=1, solver="dp")
    assert abs(v[chosen].sum() - ref.value) <= 1e-9
