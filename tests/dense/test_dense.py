"""The dense solvers: dp (bit table) and hirschberg (two rows), all their paths."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import brute_force, random_instance, small_instances

from remat_knapsack import instances, solve
from remat_knapsack._common._validate import active_items, validate
from remat_knapsack.dense import _solver as dense
from remat_knapsack.errors import SolverMemoryError


def _items(memory, runtimes, cap, scale=1):
    return active_items(validate(memory, runtimes, cap, scale))


def _chosen(items, fn, memory_limit=None, **kw):
    chosen, stats = fn(items, memory_limit, **kw)
    return items.index[chosen].tolist(), stats


HIRSCHBERG_VARIANTS = [
    {},
    {"leaf_bytes": 0},  # split down to single items
    {"leaf_bytes": 0, "threads": 1},
    {"leaf_bytes": 64},
    {"prune": False, "leaf_bytes": 16},
]


@settings(max_examples=300, deadline=None)
@given(small_instances(), st.sampled_from(HIRSCHBERG_VARIANTS), st.booleans())
def test_hirschberg_paths_match_brute_force(inst, variant, prune_all):
    memory, runtimes, cap = inst
    _, expected = brute_force(memory, runtimes, cap)
    items = _items(memory, runtimes, cap)
    old = dense.PRUNE_MIN_CAPACITY
    dense.PRUNE_MIN_CAPACITY = 0 if prune_all else old
    try:
        got, _ = _chosen(items, dense.solve_hirschberg, **variant)
    finally:
        dense.PRUNE_MIN_CAPACITY = old
    assert sorted(got + items.forced.tolist()) == expected


@pytest.mark.parametrize("seed", range(40))
def test_hirschberg_equals_dp_with_ties_across_splits(seed, prune_everything):
    """Small integer weights and values make many optimal sets; the split must
    still pick dp's. n > 64 exercises several key passes per tie."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 260))
    mem, rt, cap = random_instance(rng, n, int(rng.integers(2, 30)), int(rng.integers(2, 6)))
    items = _items(mem, rt, cap)
    want, _ = _chosen(items, dense.solve_dp)
    got, stats = _chosen(items, dense.solve_hirschberg, leaf_bytes=int(rng.integers(0, 300)))
    assert got == want
    assert stats["frames"] >= 1


def test_ties_are_actually_exercised(prune_everything):
    rng = np.random.default_rng(1)
    mem, rt, cap = random_instance(rng, 200, 8, 3)
    _, stats = _chosen(_items(mem, rt, cap), dense.solve_hirschberg, leaf_bytes=0)
    assert stats["tie_splits"] > 0 and stats["key_passes"] > 0


@pytest.mark.parametrize("seed", range(10))
def test_float_runtimes_agree(seed, prune_everything):
    rng = np.random.default_rng(100 + seed)
    mem, rt, cap = random_instance(rng, 120, 500, 100, integer_values=False)
    items = _items(mem, rt, cap)
    want, _ = _chosen(items, dense.solve_dp)
    for variant in HIRSCHBERG_VARIANTS:
        got, _ = _chosen(items, dense.solve_hirschberg, **variant)
        assert got == want, variant


def test_paper_instance_pruned_and_split_agree_with_dp():
    inst = instances.paper(12, seed=3)
    args = (inst.memory, inst.runtimes, inst.max_memory)
    items = _items(*args, scale=100)
    want, _ = _chosen(items, dense.solve_dp)
    for variant in HIRSCHBERG_VARIANTS:
        got, _ = _chosen(items, dense.solve_hirschberg, **variant)
        assert got == want, variant
    assert solve(*args, solver="ilp", scale=100).value == pytest.approx(solve(*args, solver="dp", scale=100).value)


@pytest.mark.parametrize("solver", ["dp", "hirschberg"])
def test_float64_rows_above_two_to_the_24(solver):
    """W = 2e7 > 2**24 cells: float32 rows would round 1e7 + 0.5 and see a tie."""
    s = solve([1000.0] * 3, [1e7, 1e7 + 0.5, 1e7 + 1.0], 2000.0, solver=solver)
    assert s.saved == [1, 2]
    assert s.stats["precision"] == "float64"


@pytest.mark.parametrize(
    ("fn", "bytes_of"), [(dense.solve_dp, dense.dp_bytes), (dense.solve_hirschberg, dense.hirschberg_bytes)]
)
def test_float32_rows_only_when_float64_ones_do_not_fit(fn, bytes_of):
    rng = np.random.default_rng(5)
    mem, rt, cap = random_instance(rng, 80, 1000, 50)
    items = _items(mem, rt, cap)
    want, _ = _chosen(items, dense.solve_dp)
    need32, need64 = bytes_of(items, np.float32), bytes_of(items, np.float64)
    assert need32 < need64
    chosen, stats = fn(items, need64)
    assert stats["precision"] == "float64" and stats["peak_bytes"] == need64
    chosen, stats = fn(items, need64 - 1)
    assert stats["precision"] == "float32" and stats["peak_bytes"] == need32
    assert items.index[chosen].tolist() == want  # integer sums below 2**24 are exact in float32
    with pytest.raises(SolverMemoryError, match="float32"):
        fn(items, need32 - 1)


def test_float32_rows_split_and_tie_paths():
    rng = np.random.default_rng(5)
    mem, rt, cap = random_instance(rng, 80, 1000, 50)
    items = _items(mem, rt, cap)
    limit = dense.hirschberg_bytes(items, np.float64) - 1  # leaves room for a key row
    got, stats = _chosen(items, dense.solve_hirschberg, memory_limit=limit, leaf_bytes=0)
    want, _ = _chosen(items, dense.solve_dp)
    assert stats["precision"] == "float32" and stats["frames"] > 1
    assert got == want


@pytest.mark.parametrize("solver", ["dp", "hirschberg"])
def test_nothing_to_allocate_needs_no_memory(solver):
    s = solve([0.0, 0.5], [1.0, 0.0], 0.5, solver=solver, memory_limit=0)
    assert s.saved == [0] and s.stats["peak_bytes"] == 0


def test_hundred_thousand_items_small_capacity():
    rng = np.random.default_rng(0)
    n = 100_000
    mem = (rng.integers(1, 20, n) / 10_000).tolist()
    rt = rng.integers(1, 100, n).astype(float).tolist()
    a = solve(mem, rt, 0.05, solver="hirschberg")
    b = solve(mem, rt, 0.05, solver="dp")
    assert a.saved == b.saved
    # Deep splits (an explicit stack, no recursion) on float runtimes.
    rt = rng.uniform(1, 100, n).tolist()
    items = _items(mem, rt, 0.05, scale=10_000)
    got, stats = _chosen(items, dense.solve_hirschberg, leaf_bytes=512)
    assert stats["frames"] > 100
    assert got == _chosen(items, dense.solve_dp)[0]


def test_memory_estimates_are_what_is_allocated():
    inst = instances.paper(10, seed=1)
    items = _items(inst.memory, inst.runtimes, inst.max_memory, scale=1000)
    _, stats = dense.solve_hirschberg(items)
    assert stats["peak_bytes"] == dense.hirschberg_bytes(items)
    c = int(items.capacity)
    assert stats["peak_bytes"] <= 2 * 8 * (c + 1) + dense.LEAF_FLOOR_BYTES + 64 * items.weights.size + 64


@pytest.mark.parametrize("leaf_bytes", [0, 8, 16])
def test_unpruned_top_still_prunes_subproblems_safely(leaf_bytes):
    # With prune=False the frames below a split are still pruned with their
    # known optimum; a zero rounding tolerance there lost the optimal path
    # ([0, 1], value 5, or an internal error) instead of [0, 2], value 7.
    items = _items([11, 3, 6], [3, 2, 4], 17)
    old = dense.PRUNE_MIN_CAPACITY
    dense.PRUNE_MIN_CAPACITY = 0
    try:
        got, _ = _chosen(items, dense.solve_hirschberg, prune=False, leaf_bytes=leaf_bytes)
    finally:
        dense.PRUNE_MIN_CAPACITY = old
    assert got == [0, 2]


@pytest.mark.parametrize("seed", [0, 7])
def test_hirschberg_prunes_from_the_optimum(seed, monkeypatch):
    # The top frame's lower bound is the optimum when the sparse core finds it
    # within LOWER_BOUND_BYTES, else greedy's value; the answer is the same.
    inst = instances.paper(20, seed=seed)
    items = active_items(validate(inst.memory, inst.runtimes, inst.max_memory, 10_000))
    want = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse")
    lb, tol, _ = dense._lower_bound(items, np.float64)
    assert abs(lb - want.value) <= tol
    hirsch = solve(inst.memory, inst.runtimes, inst.max_memory, solver="hirschberg")
    monkeypatch.setattr(dense, "LOWER_BOUND_BYTES", 0)  # no room for states: greedy's value
    greedy_lb, _, _ = dense._lower_bound(items, np.float64)
    assert greedy_lb < lb if seed == 0 else greedy_lb <= lb  # seed 0: greedy is 2% short
    assert (solve(inst.memory, inst.runtimes, inst.max_memory, solver="hirschberg").saved == hirsch.saved == want.saved)
    # A memory limit caps the bound's states too: with no room, greedy's value.
    assert dense._lower_bound(items, np.float64, memory_limit=0)[0] == greedy_lb


@pytest.mark.parametrize("seed", range(16))
def test_gated_leaves_match_dp(seed):
    """The gate skips chunks by the row's own values. On capacities of many
    blocks, with ties (small integer runtimes), with float runtimes, on one
    thread and on two, a gated leaf keeps dp's set."""
    rng = np.random.default_rng(500 + seed)
    n = int(rng.integers(5, 40))
    mem, rt, cap = random_instance(rng, n, 40_000, 30 if seed % 2 else 1000, integer_values=seed % 3 != 0)
    items = _items(mem, rt, cap)
    want, _ = _chosen(items, dense.solve_dp)
    for kw in ({}, {"threads": 1}, {"gate": False}):
        got, _ = _chosen(items, dense.solve_hirschberg, **kw)
        assert got == want, kw


@settings(max_examples=40, deadline=None)
@given(small_instances(max_n=24, max_w=60_000, max_v=40), st.sampled_from([{}, {"threads": 1}, {"leaf_bytes": 0}]))
def test_gated_leaves_match_dp_on_searched_instances(inst, variant):
    """The gate on capacities of up to hundreds of blocks, every pass pruned."""
    memory, runtimes, cap = inst
    items = _items(memory, runtimes, cap)
    old = dense.PRUNE_MIN_CAPACITY
    dense.PRUNE_MIN_CAPACITY = 0
    try:
        got, _ = _chosen(items, dense.solve_hirschberg, **variant)
    finally:
        dense.PRUNE_MIN_CAPACITY = old
    assert got == _chosen(items, dense.solve_dp)[0]


@pytest.mark.parametrize("rows", ["float64", "float32"])
def test_gate_skips_cells_and_keeps_the_set(rows):
    inst = instances.paper(12, seed=3)
    items = _items(inst.memory, inst.runtimes, inst.max_memory, scale=1000)
    want, _ = _chosen(items, dense.solve_dp)
    limit = None if rows == "float64" else dense.hirschberg_bytes(items, np.float64) - 1
    got, stats = _chosen(items, dense.solve_hirschberg, memory_limit=limit)
    ungated, plain = _chosen(items, dense.solve_hirschberg, memory_limit=limit, gate=False)
    assert stats["precision"] == plain["precision"] == rows
    assert got == ungated == want
    assert stats["gated_cells"] > 0 and plain["gated_cells"] == 0


@pytest.mark.parametrize("leaf_bytes", [7415, 2000])
def test_gated_sub_problem_with_items_heavier_than_its_capacity(leaf_bytes, prune_everything):
    # A split's sub-problem keeps items heavier than its own capacity; the
    # gate's verdicts for capacities below such an item's weight once ran
    # past the end of its maps (a heap overflow that AddressSanitizer, in
    # .ci/sanitize, reports, and that could corrupt the heap).
    mem = [50364, 17584, 71511, 75280, 16821, 51857, 33764, 45115, 57339, 40680, 59310, 22173, 36643, 12801,
           51450, 31965, 53844, 77997]
    rt = [2.0, 4.0, 4.0, 4.0, 3.0, 2.0, 4.0, 2.0, 3.0, 3.0, 2.0, 3.0, 3.0, 2.0, 5.0, 5.0, 1.0, 2.0]
    items = _items(mem, rt, 167180)
    want, _ = _chosen(items, dense.solve_dp)
    for _ in range(5):
        got, stats = _chosen(items, dense.solve_hirschberg, leaf_bytes=leaf_bytes)
        assert got == want and stats["frames"] > 1
