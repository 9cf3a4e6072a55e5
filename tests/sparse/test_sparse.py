"""The sparse solver (and "auto") against brute force and the dense solvers."""

from __future__ import annotations

import contextlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from oracles import brute_force, general_path, knob, knob_against_dp, no_count_fills, off_and_on

from remat_knapsack import SolverMemoryError, instances, solve
from remat_knapsack.sparse import _decide, _prefix_bounds, _sparse, _unique
from remat_knapsack.sparse import _solver as sparse

small = st.integers(1, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 9), min_size=n, max_size=n),
        st.lists(st.integers(-2, 7), min_size=n, max_size=n),
        st.integers(0, 60),
    )
)


@settings(max_examples=300, deadline=None)
@given(small)
@pytest.mark.parametrize("solver", ["sparse", "auto"])
def test_brute_force_quantised(solver, case):
    w, v, cap = case
    val, saved = brute_force(w, v, cap)
    s = solve([float(a) for a in w], [float(b) for b in v], float(cap), solver=solver, scale=1)
    assert s.saved == saved
    assert s.value == val


@settings(max_examples=300, deadline=None)
@given(small)
@pytest.mark.parametrize("solver", ["sparse", "auto"])
def test_brute_force_unquantised(solver, case):
    # Dyadic memory (quarters) so float sums are exact and ties are real.
    w, v, cap = case
    wq = [a / 4 for a in w]
    val, saved = brute_force(wq, v, cap / 4)
    s = solve(wq, [float(b) for b in v], cap / 4, solver=solver, scale=None)
    assert s.saved == saved
    assert s.value == val


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0.001, 10.0), min_size=n, max_size=n),
            st.lists(st.floats(0.01, 100.0), min_size=n, max_size=n),
            st.floats(0.0, 40.0),
        )
    )
)
def test_brute_force_real_values(case):
    w, v, cap = case
    val, _ = brute_force(w, v, cap, exact=True)
    s = solve(w, v, cap, solver="sparse", scale=None)
    assert sum((Fraction(w[i]) for i in s.saved), Fraction(0)) <= Fraction(cap)
    assert s.value == pytest.approx(val, rel=1e-9)


def test_scale_none_exact_at_rounding_boundary():
    # 0.1 + 0.2 > 0.3 in exact binary arithmetic: {0, 1} is over budget, {2} fits exactly.
    s = solve([0.1, 0.2, 0.3], [1.0, 1.0, 1.5], 0.3, solver="sparse", scale=None)
    assert s.saved == [2]
    assert s.value == 1.5
    assert solve([0.1, 0.2, 0.3], [1, 1, 1.5], 0.3, scale=None).value == 1.5
    # 0.1 + 0.2 fits a budget of 0.1 + 0.2 (the float sum rounds up).
    s = solve([0.1, 0.2, 0.3], [1.0, 1.0, 1.5], 0.1 + 0.2, solver="sparse", scale=None)
    assert s.saved == [0, 1]
    s = solve([0.001, 0.001, 1.0], [1.0, 0.5, 2.0], 1.0, solver="sparse", scale=None)
    assert s.saved == [2]


_DECIMALS = st.sampled_from([0.1, 0.2, 0.3, 0.7, 0.05, 1.1, 1e-3, 3.3, 0.6, 1 / 3, 2.5, 1e-7, 123.456])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 10).flatmap(
        lambda n: st.tuples(
            st.lists(st.one_of(_DECIMALS, st.floats(1e-6, 10.0)), min_size=n, max_size=n),
            st.lists(st.integers(1, 6), min_size=n, max_size=n),
            st.lists(st.booleans(), min_size=n, max_size=n),
            st.sampled_from(["fsum", "float", "rev", "nudge_down", "nudge_up"]),
        )
    )
)
def test_scale_none_exact_vs_fraction_brute_force(case):
    # Budgets at the float sum of a random subset (and one ulp around it), so
    # many subsets sit exactly at, or a rounding error away from, the budget.
    w, v, pick, how = case
    sub = [a for a, b in zip(w, pick) if b]
    if how == "fsum":
        cap = math.fsum(sub)
    elif how == "rev":
        cap = sum(reversed(sub))
    else:
        cap = sum(sub)
    if how == "nudge_down":
        cap = max(0.0, math.nextafter(cap, 0.0))
    elif how == "nudge_up":
        cap = math.nextafter(cap, math.inf)
    vals = [float(x) for x in v]
    val, saved = brute_force(w, vals, cap, exact=True)
    s = solve(w, vals, cap, solver="sparse", scale=None)
    assert sum((Fraction(w[i]) for i in s.saved), Fraction(0)) <= Fraction(cap)
    assert s.value == val
    assert s.saved == saved
    assert solve(w, vals, cap, scale=None).value == val


def test_scale_none_respects_true_budget():
    # Quantised, the tiny tensor rounds to weight 0 and is saved for free: over budget.
    mem, rt, budget = [0.00004, 0.5, 0.5], [1.0, 2.0, 2.0], 0.5
    q = solve(mem, rt, budget, solver="dp")
    assert sum(mem[i] for i in q.saved) > budget
    s = solve(mem, rt, budget, solver="sparse", scale=None)
    assert sum(mem[i] for i in s.saved) <= budget
    assert s.saved == [1]
    assert solve(mem, rt, budget, solver="auto", scale=None).saved == [1]


@pytest.mark.parametrize("cls", instances.CLASSES)
@pytest.mark.parametrize("seed", [0, 1])
def test_against_dense_on_classes(cls, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 160))
    inst = instances.pisinger(cls, n, R=100, seed=seed)
    if cls == "similar_weights":  # W would be 1e7: shrink the weights, keep the class
        mem = [m - 99_950 for m in inst.memory]
        inst = instances.Instance(mem, inst.runtimes, float(sum(mem) // 2))
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    for solver in ("sparse", "auto"):
        s = solve(inst.memory, inst.runtimes, inst.max_memory, solver=solver, scale=1)
        assert s.value == ref.value
        assert s.saved == ref.saved


@pytest.mark.parametrize("seed", range(4))
def test_against_dense_paper(seed):
    inst = instances.paper(12, seed)
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="hirschberg", scale=100)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=100)
    assert s.value == pytest.approx(ref.value, rel=1e-12)
    assert s.saved == ref.saved


@pytest.mark.parametrize("cls", instances.CLASSES)
def test_large_instances_feasible_and_not_worse_than_greedy(cls):
    inst = instances.pisinger(cls, 2000, R=1000, seed=3)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    g = solve(inst.memory, inst.runtimes, inst.max_memory, solver="greedy", scale=1)
    assert sum(inst.memory[i] for i in s.saved) <= inst.max_memory
    assert s.value >= g.value
    assert s.stats["peak_bytes"] > 0


def test_many_ties_subset_sum_matches_dp():
    rng = np.random.default_rng(7)
    w = rng.integers(1, 30, 300).astype(float).tolist()
    cap = float(sum(w) // 3)
    ref = solve(w, w, cap, solver="dp", scale=1)
    s = solve(w, w, cap, solver="sparse", scale=1)
    assert (s.value, s.saved) == (ref.value, ref.saved)


def test_edge_cases():
    assert solve([], [], 1.0, solver="sparse").saved == []
    s = solve([0.0, 1.0, 2.0], [1.0, 0.0, -1.0], 0.0, solver="sparse")
    assert s.saved == [0] and s.value == 1.0
    s = solve([1.0, 1.0], [1.0, 1.0], 10.0, solver="sparse")
    assert s.saved == [0, 1]
    s = solve([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], 2.0, solver="sparse", scale=1)
    assert s.saved == [0, 1]
    # PyTorch's off-by-one repro: the budget holds one item.
    s = solve([0.0001] * 3, [1.0] * 3, 0.0001, solver="sparse")
    assert s.value == 1.0 and s.saved == [0]


def test_deterministic():
    inst = instances.pisinger("weakly", 500, R=1000, seed=5)
    a = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    b = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    assert a.saved == b.saved


def test_memory_limit_raises():
    inst = instances.pisinger("uncorrelated", 1000, R=1000, seed=0)
    with pytest.raises(SolverMemoryError, match="sparse"):
        solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1, memory_limit=1000)


def test_huge_capacity_small_memory():
    # W = 1e12: a dense row would need 8 TB; sparse stays small.
    inst = instances.paper(60, 1)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1e12 / sum(inst.memory) * 2)
    assert s.stats["peak_bytes"] < 64 << 20
    assert solve(inst.memory, inst.runtimes, inst.max_memory, solver="auto", scale=1e9).solver == "sparse"


def test_scale_none_rejected_by_dense():
    with pytest.raises(ValueError, match="sparse"):
        solve([1.0], [1.0], 1.0, solver="dp", scale=None)


def test_state_growth_beyond_memory_limit_raises():
    from remat_knapsack.sparse._solver import STATE_BYTES, sparse_bytes

    inst = instances.pisinger("strongly", 3000, R=1000, seed=1)
    limit = sparse_bytes(3000) + 300 * STATE_BYTES  # the up-front part fits, the states do not
    with pytest.raises(SolverMemoryError, match="outgrew"):
        solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1, memory_limit=limit)


def test_frontier_memory_limit_raises():
    from remat_knapsack import frontier

    inst = instances.paper(60, 0)
    with pytest.raises(SolverMemoryError):
        frontier(inst.memory, inst.runtimes, memory_limit=20_000)


# --- The count path (_sparse._count_path): one run per item count ----------


@contextlib.contextmanager
def _configured(configure, *settings_):
    """A test knob for the block: ``configure(*settings_)`` returns the old settings."""
    old = configure(*settings_)
    try:
        yield
    finally:
        configure(*old)


def _count_path(force=True, states=0, per_item=0):
    """Force the count path on every instance, or (force=False) set its budget."""
    return _configured(sparse._configure_count_path, force, states, per_item)


@settings(max_examples=300, deadline=None)
@given(small)
def test_count_path_brute_force(case):
    w, v, cap = case
    val, saved = brute_force(w, v, cap)
    with _count_path():
        s = solve([float(a) for a in w], [float(b) for b in v], float(cap), solver="sparse", scale=1)
    assert (s.value, s.saved) == (val, saved)


@settings(max_examples=150, deadline=None)
@given(small)
def test_count_path_brute_force_unquantised(case):
    # Dyadic memory and half-integer runtimes: real weights and real values.
    w, v, cap = case
    wq = [a / 4 for a in w]
    vq = [b + 0.5 for b in v]
    with _count_path():
        s = solve(wq, vq, cap / 4, solver="sparse", scale=None)
    assert (s.value, s.saved) == brute_force(wq, vq, cap / 4)


@pytest.mark.parametrize("cls", instances.CLASSES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_count_path_against_dense_on_classes(cls, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 160))
    inst = instances.pisinger(cls, n, R=100, seed=seed)
    if cls == "similar_weights":
        mem = [m - 99_950 for m in inst.memory]
        inst = instances.Instance(mem, inst.runtimes, float(sum(mem) // 2))
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    with _count_path(), general_path():
        s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    assert s.stats["counts"]  # the count path ran and knew the optimal count
    assert (s.value, s.saved) == (ref.value, ref.saved)


@pytest.mark.parametrize("seed", range(4))
def test_almost_strongly_takes_count_path(seed, monkeypatch):
    # Count-structured items off a line: "sparse" goes by counts by itself
    # once the plain run outgrows its try budget (here one state, so that the
    # count path runs on every seed; most instances this small need no more).
    monkeypatch.setattr(sparse, "_TRY_STATES", 1)
    inst = instances.pisinger("almost_strongly", 300, R=1000, seed=seed)
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    assert len(s.stats["counts"]) >= 1
    assert (s.value, s.saved) == (ref.value, ref.saved)


@pytest.mark.parametrize("quick", [False, True])
def test_counts_cut_at_a_neighbours_lam_match_dp(quick, monkeypatch):
    # The count path's scan first bounds a count at the lam of the count
    # next to it (any lam >= 0 bounds the k-sets); with and without that cut
    # the sets are dp's, and on these instances the cut is taken.
    monkeypatch.setattr(sparse, "_QUICK_BOUNDS", quick)
    cuts = 0
    for seed in range(12):
        inst = instances.pisinger("almost_strongly", 400, R=1000, seed=seed)
        with _count_path():
            s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
        ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
        assert (s.value, s.saved) == (ref.value, ref.saved)
        cuts += s.stats["quick_cuts"]
    assert (cuts > 0) == quick


def test_count_path_over_budget_falls_back():
    inst = instances.pisinger("almost_strongly", 300, R=1000, seed=5)
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    with _count_path(force=False):  # a budget of one state
        s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    assert s.stats["counts"] == []
    assert (s.value, s.saved) == (ref.value, ref.saved)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 10).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 30), min_size=n, max_size=n),
            st.lists(st.integers(1, 40), min_size=n, max_size=n),
            st.integers(0, 150),
            st.integers(1, n),
        )
    )
)
def test_count_bound_is_an_upper_bound(case):
    w, v, cap, k = case
    if sum(sorted(w)[:k]) > cap:
        return  # no k items fit: outside the bound's contract
    best = max(
        sum(v[i] for i in X)
        for X in itertools.combinations(range(len(w)), k)
        if sum(w[i] for i in X) <= cap
    )
    L, lam, mu = _sparse._count_bound_py(np.array(w, float), np.array(v, float), float(cap), k)
    assert lam >= 0
    assert L >= best - 1e-9
    # and it is the LP bound: never above the best k items ignoring weight
    assert L <= sum(sorted(v)[-k:]) + 1e-9


@pytest.mark.parametrize("cls", ["strongly", "inverse_strongly"])
def test_near_line_items_take_count_path(cls):
    # A non-integer scale moves the items off their line by rounding: the
    # count path runs.
    inst = instances.pisinger(cls, 300, R=1000, seed=2)
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=3.7)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=3.7)
    assert s.stats["counts"]
    assert (s.value, s.saved) == (ref.value, ref.saved)


# --- Values compared exactly ------------------------------


def test_large_integer_runtimes_are_not_ties():
    # FLOP counts near 2**52: 1000 FLOPs apart is a real difference, in any
    # memory unit (it used to fall inside the 1e-12 relative tolerance).
    r = [2.0**52, 2.0**52, 2.0**52 + 1000]
    assert solve([1e-4] * 3, r, 2e-4, solver="sparse").saved == [0, 2]
    assert solve([2.0] * 3, r, 4.0, solver="sparse").saved == [0, 2]
    assert solve([2.0] * 3, r, 4.0, solver="sparse", scale=None).saved == [0, 2]
    assert solve([2.0] * 3, r, 4.0).saved == [0, 2]


def test_dyadic_runtimes_compare_exactly():
    # Runtimes 2**-40 apart on values near 1: far below 1e-12 of the total.
    eps = 2.0**-40
    r = [1.0, 1.0, 1.0 + eps, 1.0 - eps]
    for mem, cap in (([1e-4] * 4, 2e-4), ([3.0] * 4, 6.0)):
        assert solve(mem, r, cap, solver="sparse").saved == [0, 2]
        assert solve(mem, r, cap, solver="sparse", scale=None).saved == [0, 2]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 9).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 9), min_size=n, max_size=n),
            st.lists(st.integers(0, 3000), min_size=n, max_size=n),
            st.integers(0, 40),
            st.integers(0, 8),
        )
    )
)
@example(([1, 2, 5, 5, 6, 7, 2], [1, 2, 4, 5, 4, 7, 6], 27, 0))  # the count bound's mu k term rounded
def test_integer_runtimes_near_2_52_brute_force(case):
    # Runtimes 2**52 + 8 d (their grid makes them exact): against an
    # exact-integer oracle, quantised and scale=None, in two memory units.
    w, d, cap, shift = case
    r = [(1 << 52) + (x << 3) for x in d]
    val, saved = brute_force(w, r, cap)
    for unit in (1.0, 2.0**-shift):
        mem = [a * unit for a in w]
        s = solve(mem, [float(x) for x in r], cap * unit, solver="sparse", scale=1 / unit)
        assert s.saved == saved
        s = solve(mem, [float(x) for x in r], cap * unit, solver="sparse", scale=None)
        assert s.saved == saved


# --- Identical items (the shape of real graphs) ------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 2), min_size=n, max_size=n),  # one of three item kinds
            st.lists(st.integers(1, 4), min_size=3, max_size=3),
            st.lists(st.integers(1, 3), min_size=3, max_size=3),
            st.integers(0, 30),
        )
    )
)
@pytest.mark.parametrize("unit", [1.0, 0.1])
def test_identical_items_brute_force(unit, case):
    # Few distinct (memory, runtime) pairs: the lowest-indexed copies are kept.
    kinds, ws, vs, cap = case
    w = [ws[k] * unit for k in kinds]
    v = [float(vs[k]) for k in kinds]
    val, saved = brute_force(w, v, cap * unit, exact=True)
    s = solve(w, v, cap * unit, solver="sparse", scale=None)
    assert (s.value, s.saved) == (val, saved)
    s = solve(w, v, cap * unit, solver="sparse", scale=1 / unit)
    q = brute_force([ws[k] for k in kinds], v, cap)
    assert (s.value, s.saved) == q


@pytest.mark.parametrize("tiles", [3, 6])
def test_tiled_graph_matches_dp(tiles):
    # A graph's 71 candidates (4 kinds) tiled: against dp, quantised.
    rng = np.random.default_rng(tiles)
    kind = rng.integers(0, 4, 71)
    mem = np.tile(np.array([3.0, 12.0, 9.0, 4.0])[kind], tiles)
    rt = np.tile(np.array([123.0, 491.0, 367.0, 211.0])[kind], tiles)
    cap = float(mem.sum() * 0.3 // 1)
    ref = solve(mem, rt, cap, solver="dp", scale=1)
    s = solve(mem, rt, cap, solver="sparse", scale=1)
    assert (s.value, s.saved) == (ref.value, ref.saved)
    s = solve(mem, rt, cap, solver="sparse", scale=None)
    assert (s.value, s.saved) == (ref.value, ref.saved)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(64, 160).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 3), min_size=n, max_size=n),
            st.lists(st.integers(1, 9), min_size=4, max_size=4),
            st.lists(st.integers(1, 9), min_size=4, max_size=4),
            st.floats(0.05, 0.95),
        )
    )
)
def test_identical_items_against_dp(case):
    # Enough free items for the grouping of identical items to run.
    kinds, ws, vs, frac = case
    w = [float(ws[k]) for k in kinds]
    v = [float(vs[k]) for k in kinds]
    cap = float(int(sum(w) * frac))
    ref = solve(w, v, cap, solver="dp", scale=1)
    s = solve(w, v, cap, solver="sparse", scale=1)
    assert (s.value, s.saved) == (ref.value, ref.saved)
    s = solve([x / 8 for x in w], v, cap / 8, solver="sparse", scale=None)
    assert (s.value, s.saved) == (ref.value, ref.saved)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.05, 0.95), st.booleans())
def test_identical_copies_among_distinct_items_against_dp(seed, frac, decimal):
    # Too many distinct pairs for the grouped solver, so the kernel's own
    # grouping of identical items runs: copies of a few kinds, some sharing a
    # weight with another value, among distinct random items.
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 4, 120)
    w = np.concatenate([np.array([7.0, 7.0, 5.0, 11.0])[kinds], rng.integers(1, 40, 60).astype(float)])
    v = np.concatenate([np.array([9.0, 10.0, 6.0, 13.0])[kinds], rng.integers(1, 40, 60).astype(float)])
    if decimal:  # values off a short grid: the kernel's other grouping path
        v = v + 0.1
    order = rng.permutation(w.size)
    w, v = w[order], v[order]
    cap = float(int(w.sum() * frac))
    ref = solve(w, v, cap, solver="dp", scale=1)
    s = solve(w, v, cap, solver="sparse", scale=1)
    if not decimal:
        assert (s.value, s.saved) == (ref.value, ref.saved)
        return
    # dp's float32 sums tie-break near-ties by rounding noise: compare the
    # value, and that each kind's saved copies are its lowest-indexed ones.
    assert s.value == pytest.approx(ref.value, rel=1e-9)
    saved = np.zeros(w.size, dtype=bool)
    saved[s.saved] = True
    for x, y in set(zip(w.tolist(), v.tolist())):
        copies = saved[(w == x) & (v == y)]
        assert not np.any(copies[1:] > copies[:-1]), (x, y)


def test_value_grid_overflow_is_silent():
    # Runtimes 600 orders of magnitude apart have no float64 grid: no numpy
    # overflow warning, and the tolerance path still picks the larger one.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert solve([1.0, 1.0], [1e280, 1e-300], 1.0, solver="sparse").saved == [0]
        assert solve([1.0, 1.0], [1e-300, 1e280], 1.0, solver="sparse", scale=None).saved == [1]


def test_odd_integer_runtimes_beyond_2_53_small_n():
    # Off any 53-bit grid: the tolerance is the rounding bound n 2**-52 of the
    # total (about 9 here), not 1e-12 of it (13,500), so 1000 is no tie.
    r = [2.0**52 + 1, 2.0**52 + 1001, 2.0**52 + 2001]
    assert solve([1e-4] * 3, r, 2e-4, solver="sparse").saved == [1, 2]
    assert solve([2.0] * 3, r, 4.0, solver="sparse").saved == [1, 2]
    assert solve([2.0] * 3, r, 4.0, solver="sparse", scale=None).saved == [1, 2]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 9).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 9), min_size=n, max_size=n),
            st.lists(st.integers(0, 100_000), min_size=n, max_size=n),
            st.integers(0, 40),
        )
    )
)
@example(case=([1, 1, 6], [0, 0, 5], 7))
@example(case=([1, 4, 9], [0, 4, 8], 13))
def test_odd_integer_runtimes_beyond_2_53_brute_force(case):
    # Odd FLOP counts near 2**52 whose total passes 2**53: compared exactly
    # (``sparse._exact``), so every exact solver returns the brute force's
    # canonical set. Before, the float64 run's tolerances let [1, 4, 9] miss
    # the optimum by 16 ([0, 1] for [1, 2]).
    w, d, cap = case
    r = [(1 << 52) + 2 * x + 1 for x in d]
    _, saved = brute_force(w, r, cap)  # exact integers
    args = ([float(a) for a in w], [float(x) for x in r], float(cap))
    for kw in ({"solver": "sparse", "scale": 1}, {"solver": "auto", "scale": 1}, {"solver": "auto", "scale": None},
               {"solver": "dp", "scale": 1}, {"solver": "hirschberg", "scale": 1}):
        assert solve(*args, **kw).saved == saved, kw


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 9), min_size=n, max_size=n),
            st.lists(st.integers(0, 100_000), min_size=n, max_size=n),
            st.integers(0, 40),
        )
    )
)
@example(case=([1, 1, 6], [0, 0, 5], 7))
@example(case=([1, 4, 9], [0, 4, 8], 13))
def test_off_grid_runtimes_within_the_float_bound(case):
    # The same odd counts near 2**52 with one runtime of 2**-1000 added (an
    # item as heavy as the budget): no runtime grid holds the sums, so values are
    # float64 and the documented bound applies, adversarially (near-ties a
    # few units apart where rounding is 1 or 2 units): the optimum found is
    # within 2 min(VALUE_TOL, n 2**-52) + (2 n + 1) 2**-52 of the total.
    w, d, cap = case
    r = [(1 << 52) + 2 * x + 1 for x in d]
    val, _ = brute_force(w, r, cap)
    tiny = 2.0**-1000
    s = solve([float(a) for a in w] + [max(cap, 1.0)], [float(x) for x in r] + [tiny], float(cap),
              solver="sparse", scale=1)
    assert not s.stats.get("exact_values") and not s.stats.get("integral")
    assert sum(([*w, max(cap, 1)])[i] for i in s.saved) <= cap
    n, total = len(w) + 1, sum(r)
    bound = 2 * min(1e-12, n * 2.0**-52) * total + (2 * n + 1) * 2.0**-52 * total
    assert val - sum(r[i] for i in s.saved if i < len(w)) <= bound


@pytest.mark.parametrize("seed", range(5))
def test_exact_canonical_fallback_is_dp(seed):
    # The Python-integer fallback of scale=None (a relaxation's set over the
    # exact budget) must return dp_knapsack's canonical set on its own.
    from remat_knapsack.sparse._real import _exact_canonical

    rng = np.random.default_rng(seed)
    for _ in range(50):
        n = int(rng.integers(1, 10))
        g = rng.integers(1, 20, n).tolist()
        v = rng.integers(1, 6, n).astype(float).tolist()
        cap = int(rng.integers(0, sum(g) + 1))
        want = solve(g, v, cap, scale=1, solver="dp").saved
        got = _exact_canonical(g, v, cap, 0.0, 10**6, "test").tolist()
        assert got == want, (g, v, cap)


@pytest.mark.parametrize("seed", range(4))
def test_core_skips_items_that_cannot_improve(seed):
    # minknap's item test: an item whose Dembo-Hammer bound (with it flipped)
    # cannot beat the incumbent costs no core step. Without the test the
    # first run steps through 185-939 items on these instances; with it, 10-23.
    inst = instances.pisinger("uncorrelated", 2000, R=1000, seed=seed)
    s = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    ref = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    assert (s.value, s.saved) == (ref.value, ref.saved)
    assert s.stats["opt_steps"] < 100


# The canonical pass's prefix probe (``_decide._prefix_probe``): a decide run on
# the shortest prefix the bounds allow, which leaves out every witness item
# above it at once. Forced on (gap 1) it runs on small instances too.


def _probe(gap, states=4096, per_item=8):
    return _configured(_decide._configure_probe, gap, states, per_item)


@pytest.mark.parametrize("seed", range(3))
def test_prefix_probe_against_dp(seed):
    probed = knob_against_dp(900 + seed, lambda rng: _probe(1), "probes_found")
    assert probed > 0  # the probe answered, so the path above was taken


def test_prefix_probe_skips_the_chain_on_subset_sum():
    # Subset sum n=10^4: the top-down pass asked a decide run per witness item
    # of a chain of a dozen; one probe on the shortest prefix replaces them.
    with general_path():
        off, on = off_and_on("subset_sum", 10_000, 10_000, 0, _probe(1 << 40))  # never
    assert off.stats["probes"] == 0
    assert on.stats["probes_found"] >= 1
    assert on.stats["queries"] < off.stats["queries"]


# The canonical pass's window run (``_decide._window``): the decide run's
# question on the items nearest the break, those before kept and those after
# left out. Forced on (a window of 2 items, from 1 item below k) it runs on
# small instances too.


def _window(window, window_from=1, states=16384):
    return _configured(_decide._configure_window, window, window_from, states)


# The prefix probe and the window run forced on, against brute force; with
# a budget of (almost) no states most of them run over it. (On so few items
# the windows mostly miss; the test against dp below checks that they answer.)
forced = {
    "probe": lambda: _probe(1, 4096, 8),
    "probe over budget": lambda: _probe(1, 1, 0),
    "window": lambda: _window(2, 1, 16384),
    "window over budget": lambda: _window(4, 1, 1),
}


@settings(max_examples=300, deadline=None)
@given(small)
@pytest.mark.parametrize("knob", list(forced))
def test_forced_probe_and_window_brute_force(knob, case):
    w, v, cap = case
    val, saved = brute_force(w, v, cap)
    with forced[knob]():
        s = solve([float(a) for a in w], [float(b) for b in v], float(cap), solver="sparse", scale=1)
    assert (s.value, s.saved) == (val, saved)


@pytest.mark.parametrize("seed", range(3))
def test_window_run_against_dp(seed):
    found = knob_against_dp(700 + seed, lambda rng: _window(rng.choice([2, 4, 8])), "windows_found", n_max=120)
    assert found > 0  # the window answered, so the path above was taken


def test_window_run_answers_on_strongly_correlated_items():
    # Strongly correlated, R=10^6, n=10^5: the decide runs find their sets
    # next to the break, so a window of 512 items answers about half of them
    # (with the count fills off: they answer those questions first).
    with no_count_fills():
        off, on = off_and_on("strongly", 100_000, 10**6, 0, _window(0))  # off
    assert off.stats["windows"] == 0
    assert on.stats["windows_found"] >= 1


# The count structures (at least 256 free items, cardinality multipliers):
# the last kmax tried before the trees' descent, and the trees brought down
# lazily by single removals or by rebuilding, against dp; on strongly
# correlated items (on the count line) the two-list search runs too.


@pytest.mark.parametrize("cls", ["strongly", "profit_ceiling"])
def test_greedy_backoff_keeps_the_set(cls):
    # n=10^4, R=10^6: no greedy set below a witness item reaches the target
    # (16 and 52 tries); backing off after 4 misses tries fewer, same set
    off, on = off_and_on(cls, 10_000, 10**6, 0, knob(_decide._configure_greedy_misses, 0))
    assert off.stats["greedy_found"] == on.stats["greedy_found"] == 0
    assert on.stats["greedy_tries"] < off.stats["greedy_tries"]


@pytest.mark.parametrize("misses", [0, 1])  # never back off; back off after every miss
def test_greedy_backoff_against_dp(misses):
    found = knob_against_dp(960 + misses, lambda rng: knob(_decide._configure_greedy_misses, misses),
                            "greedy_found", n_max=120, tries=120)
    assert found > 0  # greedy sets answered some witness items either way


@pytest.mark.parametrize("seed", [40, 48, 99])
def test_count_sums_and_two_lists_against_dp(seed):
    import random

    rng = random.Random(seed)
    searched = 0
    with no_count_fills():  # they answer the small questions on the count line first
        for _ in range(12):
            cls = rng.choice(["strongly", "inverse_strongly", "almost_strongly", "weakly"])
            inst = instances.pisinger(cls, rng.randint(256, 500), 100, rng.randrange(10**6))
            w, v = [float(int(x)) for x in inst.memory], [float(int(x)) for x in inst.runtimes]
            c = float(rng.randint(int(sum(w)) // 4, int(sum(w)) // 2))
            ref = solve(w, v, c, scale=1, solver="dp")
            got = solve(w, v, c, scale=1, solver="sparse")
            assert (got.value, got.saved) == (ref.value, ref.saved), (cls, w, v, c)
            searched += got.stats.get("two_lists", 0)
    assert searched > 0  # the count line held somewhere, so the two-list path was taken


# The canonical pass asks a question of the complement in the prefix, a
# knapsack with weights and values swapped, when that is the smaller one
# (``_fills._complement``), and after a yes finds the least prefix that
# holds a set by bisection (``_least_prefix``). Subset-sum and profit ceiling
# items take that path.


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 14).flatmap(lambda n: st.tuples(st.lists(st.integers(1, 30), min_size=n, max_size=n),
                                                      st.integers(0, 200))))
def test_subset_sum_brute_force(case):
    w, cap = case
    val, saved = brute_force(w, w, cap)
    s = solve([float(a) for a in w], [float(a) for a in w], float(cap), solver="sparse", scale=1)
    assert (s.value, s.saved) == (val, saved)
    with general_path():
        s = solve([float(a) for a in w], [float(a) for a in w], float(cap), solver="sparse", scale=1)
    assert (s.value, s.saved) == (val, saved)


@pytest.mark.parametrize("family", ["subset_sum", "profit_ceiling", "strongly", "circle"])
def test_complement_against_dp(family):
    import random

    rng = random.Random(700 + len(family))
    asked = 0
    for _ in range(60):
        n, R = rng.randint(20, 300), rng.choice([100, 1000, 10_000])
        inst = instances.pisinger(family, n, R, rng.randrange(10**6))
        w = [float(int(x)) for x in inst.memory]
        v = [float(int(x)) for x in inst.runtimes]
        c = float(rng.randint(int(sum(w)) // 4, 3 * int(sum(w)) // 4))
        ref = solve(w, v, c, scale=1, solver="dp")
        with general_path():
            got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)
        asked += got.stats.get("complements", 0)
    if family in ("subset_sum", "profit_ceiling"):
        assert asked > 0  # the complement answered, so that path was taken


# Avoid mode (``_expand._core`` with ``pool.avoid``): a decide run for a set
# *other than* a given one, which the canonical pass asks to prove its witness
# the only optimal set left (``_unique._unique``).


def _differs(bits, avoid):
    """Whether ``bits`` differs from ``avoid`` on an item in range (avoid 0 or 1; 2: out of range)."""
    return any(a != 2 and b != a for b, a in zip(bits, avoid))


def _brute_other(w, v, c, goal, avoid):
    """Whether some set that differs from ``avoid`` in range fits c and is worth >= goal."""
    for bits in itertools.product((0, 1), repeat=len(w)):
        if _differs(bits, avoid) and sum(a for a, b in zip(w, bits) if b) <= c \
                and sum(a for a, b in zip(v, bits) if b) >= goal:
            return True
    return False


def _avoided(ws, vs, bits, in_range, order, c, below):
    """The avoided set of an avoid-mode case (items in run order ``order``):
    ``bits`` with items dropped from the front until it fits c, so that it
    fits and reaches the goal (its value less ``below``), as the canonical
    pass's witness does. Returns (goal, avoid: 2 for an item out of range)."""
    S = [bits[i] for i in order]
    for q in range(len(S)):  # drop items until S fits
        if sum(ws[i] for i in range(len(S)) if S[i]) <= c:
            break
        S[q] = 0
    goal = max(0, sum(vs[i] for i in range(len(S)) if S[i]) - below)
    av = np.array([S[q] if in_range[order[q]] else 2 for q in range(len(S))], dtype=np.uint8)
    return goal, av


@settings(max_examples=600, deadline=None)
@given(st.integers(0, 10).flatmap(lambda n: st.tuples(
    st.lists(st.integers(1, 12), min_size=n, max_size=n), st.lists(st.integers(0, 12), min_size=n, max_size=n),
    st.lists(st.integers(0, 1), min_size=n, max_size=n), st.lists(st.booleans(), min_size=n, max_size=n),
    st.integers(0, 60), st.integers(0, 6))))
def test_avoid_mode_brute_force(case):
    # The avoided set S (items out of range free) must itself fit and reach
    # the goal, as the canonical pass's witness does: the run's items where
    # a set can differ from it are then items the core must reach.
    w, v, bits, in_range, c, below = case
    order = sorted(range(len(w)), key=lambda i: -v[i] / w[i])
    ws = np.array([w[i] for i in order], dtype=float)
    vs = np.array([v[i] for i in order], dtype=float)
    goal, av = _avoided(ws, vs, bits, in_range, order, c, below)
    got = _sparse._other_py(ws, vs, float(c), float(goal), av)
    assert (got is not None) == _brute_other(list(ws), list(vs), c, goal, list(av))
    if got is not None:  # the set returned differs in range, fits and reaches the goal
        assert _differs(list(got), list(av))
        assert float(ws[got.astype(bool)].sum()) <= c and float(vs[got.astype(bool)].sum()) >= goal


def _lowest_copies_form(bits, types):
    """Whether ``bits`` holds, of each type's copies (items in run order), the first ones."""
    seen_out = set()
    for b, t in zip(bits, types):
        if b and t in seen_out:
            return False
        if not b:
            seen_out.add(t)
    return True


@settings(max_examples=600, deadline=None)
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(1, 9), st.integers(0, 9)), min_size=1, max_size=3),
    st.lists(st.integers(0, 2), min_size=n, max_size=n), st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n), st.integers(0, 60), st.integers(0, 6), st.booleans())))
def test_avoid_mode_twins_brute_force(case):
    # Items of a few types (identical copies), each type's copies in run
    # order: with ``twin`` the run explores only the sets that hold each
    # type's first copies, so a set that differs from the avoided one only by
    # a swap of copies is no answer; every other set that differs is. When
    # types of the same efficiency interleave, copies that are not adjacent
    # are not linked: the run may then also find a swap, never miss a set.
    kinds, pick, bits, in_range, c, below, interleave = case
    items = [kinds[p % len(kinds)] for p in pick]
    key = (lambda i: (-items[i][1] / items[i][0], i)) if interleave else \
        (lambda i: (-items[i][1] / items[i][0], items[i], i))
    order = sorted(range(len(items)), key=key)
    ws = np.array([items[i][0] for i in order], dtype=float)
    vs = np.array([items[i][1] for i in order], dtype=float)
    types = [items[i] for i in order]
    twin = [max((p for p in range(q) if types[p] == types[q]), default=-1) for q in range(len(types))]
    goal, av = _avoided(ws, vs, bits, in_range, order, c, below)
    want = any(_differs(x, list(av)) and _lowest_copies_form(x, types)
               and sum(a for a, y in zip(ws, x) if y) <= c and sum(a for a, y in zip(vs, x) if y) >= goal
               for x in itertools.product((0, 1), repeat=len(ws)))
    got = _sparse._other_py(ws, vs, float(c), float(goal), av, np.array(twin))
    adjacent = all(t in (-1, q - 1) for q, t in enumerate(twin))
    assert (got is not None) == want or (not adjacent and got is not None)
    if got is not None:
        assert _differs(list(got), list(av)) and (_lowest_copies_form(list(got), types) or not adjacent)
        assert float(ws[got.astype(bool)].sum()) <= c and float(vs[got.astype(bool)].sum()) >= goal


def test_other_py_checks_twin():
    w = np.array([2.0, 2.0, 3.0])
    v = np.array([4.0, 4.0, 3.0])
    av = np.array([1, 0, 0], dtype=np.uint8)
    with pytest.raises(ValueError, match=r"twin\[2\] = 1"):
        _sparse._other_py(w, v, 4.0, 4.0, av, np.array([-1, 0, 1]))
    with pytest.raises(ValueError, match="twin has 2 items"):
        _sparse._other_py(w, v, 4.0, 4.0, av, np.array([-1, 0]))


@pytest.mark.parametrize("family", ["strongly", "circle", "uncorrelated", "subset_sum"])
def test_avoid_mode_long_runs(family):
    # Runs of more than 64 core steps rebuild their set with a recovery run,
    # which must avoid the avoided set's part when the rest agrees with it.
    # Avoiding the optimum found by dp: another set reaches OPT exactly when
    # some item can be flipped (a forced flip solved by dp), brute force by items.
    import random

    rng = random.Random(50 + len(family))
    for _ in range(4):
        n = rng.randint(120, 200)
        inst = instances.pisinger(family, n, 300, rng.randrange(10**6))
        w = [float(int(x)) for x in inst.memory]
        v = [float(int(x)) for x in inst.runtimes]
        c = float(sum(w) // 2)
        opt = solve(w, v, c, scale=1, solver="dp")
        S = np.zeros(n, dtype=np.uint8)
        S[opt.saved] = 1
        other = False  # does a set other than S reach OPT? flip each item in turn
        for i in range(n):
            rest = [j for j in range(n) if j != i]
            cap = c - (w[i] if not S[i] else 0.0)
            if cap < 0:
                continue
            sub = solve([w[j] for j in rest], [v[j] for j in rest], cap, scale=1, solver="dp")
            if sub.value + (v[i] if not S[i] else 0.0) >= opt.value:
                other = True
                break
        order = sorted(range(n), key=lambda i: -v[i] / w[i])
        ws = np.array([w[i] for i in order])
        vs = np.array([v[i] for i in order])
        got = _sparse._other_py(ws, vs, c, opt.value, S[order])
        assert (got is not None) == other
        if got is not None:
            assert list(got) != list(S[order])
            assert ws[got.astype(bool)].sum() <= c and vs[got.astype(bool)].sum() >= opt.value


def _unique_from(states):
    return _configured(_unique._configure_unique, states, 4)


@settings(max_examples=300, deadline=None)
@given(small)
def test_unique_run_brute_force(case):
    w, v, cap = case
    val, saved = brute_force(w, v, cap)
    with _unique_from(0):
        s = solve([float(a) for a in w], [float(b) for b in v], float(cap), solver="sparse", scale=1)
    assert (s.value, s.saved) == (val, saved)


@pytest.mark.parametrize("seed", range(3))
def test_unique_run_against_dp(seed):
    # Asked at every witness item a decide run would settle: Pisinger's
    # families and few distinct values (many optimal sets), against dp.
    import random

    rng = random.Random(300 + seed)
    tries = proved = 0
    for _ in range(120):
        if rng.random() < 0.6:
            fam, n, R = rng.choice(instances.ALL_CLASSES), rng.randint(20, 300), rng.choice([100, 1000])
            inst = instances.pisinger(fam, n, R, rng.randrange(10**6))
            w, v = [float(int(x)) for x in inst.memory], [float(int(x)) for x in inst.runtimes]
        else:
            n, R = rng.randint(5, 200), rng.choice([3, 10, 30])
            w = [float(rng.randint(1, R)) for _ in range(n)]
            v = [float(rng.randint(0, R)) for _ in range(n)]
        c = float(rng.randint(0, int(sum(w))))
        ref = solve(w, v, c, scale=1, solver="dp")
        with _unique_from(0):
            got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)
        tries += got.stats.get("unique_tries", 0)
        proved += got.stats.get("unique", 0)
    assert proved > 0 and tries > proved  # both outcomes were taken


def _twins(on):
    return _configured(lambda flag: (_unique._configure_twins(flag),), on)


@pytest.mark.parametrize("twins", [False, True])
@pytest.mark.parametrize("seed", range(2))
def test_unique_run_with_copies_against_dp(seed, twins):
    # Many identical copies (a few types, 64-400 items: the pass groups
    # them), uniqueness runs at every witness item, the copies' rule on and
    # off: against dp.
    import random

    rng = random.Random(700 + seed)
    tries = 0
    for _ in range(60):
        n, types = rng.randint(64, 400), rng.randint(2, 12)
        kinds = [(float(rng.randint(1, 40)), float(rng.randint(0, 40))) for _ in range(types)]
        items = [rng.choice(kinds) for _ in range(n)]
        w, v = [a for a, _ in items], [b for _, b in items]
        c = float(rng.randint(0, int(sum(w))))
        ref = solve(w, v, c, scale=1, solver="dp")
        with _unique_from(0), _twins(twins):
            got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)
        tries += got.stats.get("unique_tries", 0)
    assert tries > 0


def test_twins_skip_swaps_of_copies():
    # Circle items with about ten copies of each weight: without the copies'
    # rule the uniqueness run finds a swap of copies and settles only a
    # block; with it, it proves the witness the only set left at once.
    # Without the lift: with it, circle takes the count path and needs no uniqueness run.
    with _configured(sparse._configure_lift, False):
        off, on = off_and_on("circle", 5_000, 500, 1, _twins(False))
    assert off.stats["unique"] == 0 and on.stats["unique"] == 1
    assert on.stats["states"] < off.stats["states"]


def _chain_start(on):
    return _configured(lambda flag: (_unique._configure_chain_start(flag),), on)


@pytest.mark.parametrize("chain_start", [False, True])
def test_unique_chains_against_dp(chain_start):
    # Uniqueness runs at every witness item, so chains follow one another
    # and each starts above the sets the earlier ones found (or at 0):
    # families with many optimal sets, against dp.
    import random

    rng = random.Random(900)
    runs = 0
    for _ in range(40):
        fam = rng.choice(["circle", "strongly", "subset_sum", "uncorrelated"])
        inst = instances.pisinger(fam, rng.randint(100, 400), rng.choice([30, 100, 1000]), rng.randrange(10**6))
        w, v = [float(int(x)) for x in inst.memory], [float(int(x)) for x in inst.runtimes]
        c = float(rng.randint(0, int(sum(w))))
        ref = solve(w, v, c, scale=1, solver="dp")
        with _unique_from(0), _chain_start(chain_start), general_path():
            got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (fam, w, v, c)
        runs += got.stats.get("unique_runs", 0)
    assert runs > 0


def test_unique_chains_start_above_found_sets():
    # Circle items: successive chains climb through the same sets; started
    # above a kept set that is still an answer, they ask fewer questions.
    # Without the lift: with it, circle takes the count path and its chains are short.
    with _unique_from(0), _configured(sparse._configure_lift, False):
        off, on = off_and_on("circle", 2_000, 1_000, 1, _chain_start(False))
    assert on.stats["unique_runs"] < off.stats["unique_runs"]


@pytest.mark.slow  # test_unique_run_against_dp covers the unique run in a third of the time
def test_unique_run_settles_a_unique_optimum():
    # Circle items: a nearly unique optimum under loose bounds, where the
    # top-down pass proves witness items needed one decide run each.
    # Without the lift: with it, circle takes the count path, whose bounds are tight.
    with _configured(sparse._configure_lift, False):
        off, on = off_and_on("circle", 3_000, 10_000, 2, _unique_from(-1))
    assert off.stats["unique_tries"] == 0
    assert on.stats["unique"] == 1
    assert on.stats["queries"] < off.stats["queries"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_fitted_line_takes_the_count_path(seed):
    # Similar weights at n=10^3: the values do not grow with the weights
    # around the break, the fitted slope is not positive (no count
    # multipliers), and the count path may still run; its answer is the one
    # the plain run gives when the count path has no budget.
    from remat_knapsack.sparse._order import descending

    inst = instances.pisinger("similar_weights", 1000, 10_000, seed)
    w, v = np.array(inst.memory), np.array(inst.runtimes)
    o = descending(v / w)
    ws, vs = w[o], v[o]
    b = int(np.searchsorted(np.cumsum(ws), inst.max_memory, side="right"))
    topv = sparse._TopValues(v, vs)
    assert sparse._multipliers(ws, vs, inst.max_memory, b, topv)[0] == 0.0  # no fitted line
    args = (inst.memory, inst.runtimes, inst.max_memory)
    s = solve(*args, solver="sparse", scale=1)
    with _count_path(False, 0, 0):  # the count path gives up at once: the plain run decides
        plain = solve(*args, solver="sparse", scale=1)
    assert (s.value, s.saved) == (plain.value, plain.saved)
    if seed == 1:  # the one the 1,000-state trial does not settle
        assert s.stats["counts"] == [500] and plain.stats["counts"] == []


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 9), st.integers(1, 1000)), min_size=1, max_size=9),
    st.integers(0, 40),
    # odd part times a power of two: every b * factor (b <= 1000) is a float64 exactly
    st.sampled_from([((1 << 30) + 1) << 30, 3 << 60, ((1 << 20) + 7) << 40, ((1 << 40) + 3) << 2]),
)
def test_runtimes_past_2_53_with_a_common_factor_are_divided_exactly(items, cap, factor):
    # FLOP counts past 2**53 that share a large factor: divided by it in Python
    # integers, they are small integers, so the kernel compares them exactly
    # without the exact-integer pass, and finds dp_knapsack's own set.
    w = [a for a, _ in items]
    r = [b * factor for _, b in items]
    want = solve(w, [float(b) for _, b in items], cap, solver="dp", scale=1).saved
    for scale in (1, None):
        s = solve([float(a) for a in w], [float(x) for x in r], float(cap), solver="sparse", scale=scale)
        assert s.saved == want
        assert s.stats.get("integral", True) and "exact_values" not in s.stats


def test_top_values_are_the_value_prefix_sums_largest_first():
    # Made on first use (only a negative count multiplier reads them); the
    # same sums whether the efficiency order is monotone in value or not.
    rng = np.random.default_rng(5)
    for v in (rng.integers(1, 100, 50).astype(float), np.arange(1.0, 51.0), np.arange(50.0, 0.0, -1.0)):
        for vs in (v, v[::-1].copy(), rng.permutation(v)):
            top = sparse._TopValues(v, vs)
            expected = np.concatenate([[0.0], np.cumsum(np.sort(v)[::-1])])
            assert np.array_equal(top.sums(), expected)
            assert top.sums() is top.sums()


# Dantzig's bound below a witness item (``_prefix_bounds._lp_keep``), at the
# items' own break item, before any decide run: from the efficiency blocks
# at the pass's position, streamed below it.


@pytest.mark.parametrize("seed", range(2))
def test_lp_keep_against_dp(seed):
    kept = knob_against_dp(900 + seed, lambda rng: knob(_prefix_bounds._configure_lp, True), "lp_kept", n_max=300,
                           families=["profit_ceiling", "uncorrelated", "weakly", "strongly", "subset_sum"])
    assert kept > 0  # the bound proved items needed, so that path was taken


def test_lp_keep_proves_profit_ceiling_items_needed():
    # n=10^4: the break item's multiplier leaves the witness items a bound a
    # fraction above the target; their own break item's is below it. The same
    # set with the bound off, where decide runs prove them needed.
    off, on = off_and_on("profit_ceiling", 10_000, 10**4, 0, knob(_prefix_bounds._configure_lp, False))
    assert off.stats["lp_tries"] == 0 and on.stats["lp_kept"] > 0
    assert on.stats["queries"] < off.stats["queries"]


# The greedy set below a witness item (``_decide._greedy_below``) starts
# at the break item that Dantzig's bound just found from the blocks, on
# integral items: the items before it are taken without a pass.


@pytest.mark.parametrize("seed", range(2))
def test_greedy_from_break_against_dp(seed):
    started = knob_against_dp(920 + seed, lambda rng: knob(_prefix_bounds._configure_lp, True), "greedy_from_break",
                              n_max=300, families=["profit_ceiling", "uncorrelated", "weakly", "inverse_strongly"])
    assert started > 0  # some greedy sets started at the break item


def test_greedy_from_break_keeps_the_set():
    # profit ceiling, n=10^4: greedy sets answer witness items near the top;
    # with Dantzig's bound off each one streams every item, the same sets
    off, on = off_and_on("profit_ceiling", 10_000, 10**4, 0, knob(_prefix_bounds._configure_lp, False))
    assert off.stats["greedy_from_break"] == 0 < on.stats["greedy_from_break"]
    assert on.stats["greedy_found"] > 0


# When the reduction fixes no item (profit ceiling items: every reduced
# profit within the gap) the canonical pass works on the instance's own
# arrays and makes the witness canonical in place.


@pytest.mark.parametrize("seed", range(3))
def test_nothing_fixed_matches_dp(seed):
    import random

    rng = random.Random(700 + seed)
    every_free = 0
    for _ in range(40):
        n, R = rng.randint(64, 300), rng.choice([100, 1000])
        inst = instances.pisinger("profit_ceiling", n, R, rng.randrange(10**6))
        w, v = [float(int(x)) for x in inst.memory], [float(int(x)) for x in inst.runtimes]
        c = float(rng.randint(int(sum(w)) // 4, 3 * int(sum(w)) // 4))
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)
        every_free += got.stats.get("free") == n
    assert every_free > 0  # the path was taken


@given(st.lists(st.integers(1, 50), max_size=40), st.integers(0, 600))
def test_break_count_is_the_cumulative_search(weights, c):
    ws = np.array(weights, dtype=np.float64)
    assert _sparse.break_count(ws, float(c)) == int(np.searchsorted(np.cumsum(ws), c, side="right"))


@given(st.lists(st.one_of(st.integers(-2**54, 2**54).map(float), st.floats(allow_nan=False)), max_size=20))
def test_integers_below_is_the_floor_test(values):
    x = np.array(values, dtype=np.float64)
    limit = float(1 << 53)
    expected = bool(np.all(np.abs(x) < limit) and np.array_equal(x, np.floor(x)))
    assert _sparse.integers_below(x, limit) == expected


@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(1, 10**6)), max_size=300),
       st.floats(0, 3), st.floats(-1e5, 1e5))
def test_positive_part_sum_is_within_rounding_of_the_exact_sum(items, lam, mu):
    # the beam run's target rests on it (``_optimum``): within SUM_BLOCK + 2 ulps of the exact sum
    ws = np.array([float(w) for w, _ in items])
    vs = np.array([float(v) for _, v in items])
    # each part rounded as the C loop rounds it
    parts = [max(0.0, v - lam * w - mu) for w, v in zip(ws.tolist(), vs.tolist(), strict=True)]
    exact = math.fsum(parts)
    got = _sparse._positive_part_sum_py(ws, vs, lam, mu)
    assert abs(got - exact) <= 66 * 2.0**-52 * exact


def test_integers_below_on_many_values_and_its_limit():
    # beyond INTEGERS_C_UP_TO values numpy answers: the same test
    n = _sparse.INTEGERS_C_UP_TO + 1
    x = np.arange(n, dtype=np.float64)
    assert _sparse.integers_below(x, 2.0**53) and not _sparse.integers_below(x + 0.5, 2.0**53)
    assert not _sparse.integers_below(x, float(n - 1))
    with pytest.raises(ValueError, match="at most 2\\*\\*63"):
        _sparse.integers_below(x, 2.0**64)
