"""The fast paths behind solve's fixed cost give what the plain code gives.

Correctness only: tests never time (benchmarks/bench_fixed_cost.py does).
"""

import math
import struct
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack import api, solve
from remat_knapsack._common._fsum import fsum
from remat_knapsack._common._lists import split_positions
from remat_knapsack._common._validate import active_items, validate
from remat_knapsack.instances import paper, pisinger


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)  # tells -0.0 from 0.0


def _reference_fsum(xs):
    try:
        return math.fsum(xs)
    except OverflowError:
        return None


finite = st.floats(allow_nan=False, allow_infinity=False)
spread = st.one_of(
    finite,
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1.0, 0.1, 2.0**1023]),
    st.integers(-(2**60), 2**60).map(float),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(spread, max_size=40))
def test_fsum_is_math_fsum(xs):
    want = _reference_fsum(xs)
    if want is None:  # math.fsum overflowed, maybe only in a partial sum: ours rounds the exact total
        return
    assert _bits(fsum(np.array(xs, dtype=np.float64))) == _bits(want)


@pytest.mark.parametrize(
    "xs",
    [
        [],
        [-0.0],
        [-0.0, -0.0],
        [0.0, -0.0],
        [1.0, -1.0],
        [0.1] * 10,
        [1e100, 1.0, -1e100, 2.0**-1074],
        [2.0**1000, 2.0**-1074],  # the widest span of bits
        [2.0**1023, 2.0**1023 * 0.5, -(2.0**1023)],  # at the top of the range
        [1.0, 2.0**-53],  # a tie: half to even
        [1.0, 2.0**-53, 2.0**-106],  # just above the tie
        [5e-324] * 7,
    ],
)
def test_fsum_edges(xs):
    assert _bits(fsum(np.array(xs, dtype=np.float64))) == _bits(math.fsum(xs))


def test_fsum_many_items():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, 50_000) * 2.0 ** rng.integers(-40, 40, 50_000)
    assert fsum(x) == math.fsum(x.tolist())


def test_fsum_overflow_raises_like_math_fsum():
    with pytest.raises(OverflowError):
        fsum(np.array([1e308] * 3))
    assert fsum(np.array([np.inf, 1.0])) == math.inf
    with pytest.raises(ValueError, match="inf"):  # as math.fsum
        fsum(np.array([np.inf, -np.inf]))


def _plain_active_items(w, v, cap):
    """The masks-only split (the code before the fast path)."""
    positive = v > 0
    forced = np.flatnonzero(positive & (w == 0))
    keep = np.flatnonzero(positive & (w > 0) & (w <= cap))
    return keep, w[keep], v[keep], forced


@settings(max_examples=200, deadline=None)
@given(
    # 0.05, 0.15, 0.25 and 0.35 times 10 round half to even (0, 2, 2, 4): the
    # quantised weights' range comes from the memory's, rounded the same way
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.05, 0.1, 0.15, 0.25, 0.3, 0.35, 0.5, 2.0, 0.04999999999999999]),
            st.sampled_from([-1.0, 0.0, 1.0, 2.5]),
        ),
        max_size=8,
    ),
    st.sampled_from([0.0, 0.15, 0.3, 0.35, 1.0, math.inf]),
    st.sampled_from([10, None]),
)
def test_active_items_fast_path_matches_masks(pairs, cap, scale):
    memory = [m for m, _ in pairs]
    runtimes = [r for _, r in pairs]
    p = validate(memory, runtimes, cap, scale)
    items = active_items(p, quantised=scale is not None)
    w = p.weights if scale is not None else p.memory
    c = p.capacity if scale is not None else p.max_memory
    keep, kw, kv, forced = _plain_active_items(w, p.runtimes, c)
    assert items.index.tolist() == keep.tolist() and items.index.dtype == np.int64
    assert items.weights.tolist() == kw.tolist() and items.weights.dtype == w.dtype
    assert items.values.tolist() == kv.tolist() and items.values.dtype == np.float64
    assert items.forced.tolist() == forced.tolist() and items.forced.dtype == np.int64
    if scale is None and forced.size:
        assert items.capacity == c - float(np.sum(w[forced]))
    else:
        assert items.capacity == c


def test_active_items_do_not_alias_the_problem():
    p = validate([0.1, 0.2], [1.0, 2.0], 1.0, 10)
    items = active_items(p)
    items.weights[0] = 99
    items.values[0] = 99.0
    assert p.weights.tolist() == [1, 2] and p.runtimes.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("n", [0, 1, 5, api._SHARED_INDICES, api._SHARED_INDICES + 1])
def test_all_indices_is_a_fresh_range(n):
    first = api._all_indices(n)
    assert first == list(range(n))
    first.append(-1)
    if first[:1]:
        first[0] = -7
    assert api._all_indices(n) == list(range(n))


def test_solutions_do_not_share_lists():
    a = solve([0.1, 0.2], [1.0, 2.0], math.inf)
    a.saved.append(5)
    a.recomputed.append(6)
    b = solve([0.1, 0.2], [1.0, 2.0], math.inf)
    assert b.saved == [0, 1] and b.recomputed == []


@pytest.mark.parametrize("solver", ["auto", "sparse"])
@pytest.mark.parametrize("scale", [1, 10_000, None])
@pytest.mark.parametrize("fits", [True, False])
def test_value_is_the_fsum_of_saved_runtimes(solver, scale, fits):
    inst = paper(300, 1) if scale != 1 else pisinger("uncorrelated", 300, 1000, 1)
    cap = sum(inst.memory) + 1 if fits else inst.max_memory
    for memory, runtimes in ((inst.memory, inst.runtimes), (np.array(inst.memory), tuple(inst.runtimes))):
        s = solve(memory, runtimes, cap, scale=scale, solver=solver)
        assert s.value == math.fsum(inst.runtimes[i] for i in s.saved)
        assert sorted(s.saved + s.recomputed) == list(range(300))
        assert (s.recomputed == []) == fits
        assert s.stats.get("all_fit", False) == fits


def test_forced_and_skipped_items_with_all_fit():
    # 0: forced (weight 0), 1: never (runtime 0), 2 and 3 fit together.
    s = solve([0.0, 0.1, 0.2, 0.3], [1.0, 0.0, 2.0, 3.0], 1.0)
    assert (s.saved, s.recomputed, s.value) == ([0, 2, 3], [1], 6.0)
    assert s.stats["all_fit"] is True


@pytest.mark.parametrize("bad", [True, False, np.bool_(True)])
@pytest.mark.parametrize("where", [0, 7, 9_999])
def test_bools_in_long_lists_are_named(bad, where):
    memory = [0.5] * 10_000
    memory[where] = bad
    with pytest.raises(ValueError, match=rf"memory\[{where}\] is a boolean"):
        solve(memory, [1.0] * 10_000, 10.0)
    runtimes = [1.0] * 10_000
    runtimes[where] = bad
    with pytest.raises(ValueError, match=rf"runtimes\[{where}\] is a boolean"):
        solve([0.5] * 10_000, runtimes, 10.0)


class _RaisingFloat:
    def __float__(self):
        raise RuntimeError("boom")


def test_an_item_whose_float_raises_propagates_its_error():
    # As array('d') always did: struct's conversion error is not the user's.
    with pytest.raises(RuntimeError, match="boom"):
        solve([0.5, _RaisingFloat()], [1.0, 1.0], 1.0)


@pytest.mark.parametrize(
    "item, match",
    [
        (10**400, r"memory\[3\] = 1000.* beyond the range of float64"),
        ("1", r"memory\[3\] is not a number"),
        (None, "not a number"),
    ],
)
def test_unconvertible_items_are_named(item, match):
    memory = [0.1, 0.2, 0.3, item]
    with pytest.raises(ValueError, match=match):
        solve(memory, [1.0] * 4, 1.0)


def test_list_conversion_is_writable_float64():
    p = validate([1, 2.5, np.float32(0.5), np.int64(3)], (1.0, 2.0, 3.0, 4.0), 10.0, None)
    assert p.memory.dtype == np.float64 and p.memory.flags.writeable
    assert p.memory.tolist() == [1.0, 2.5, 0.5, 3.0]


@pytest.mark.parametrize("share", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("n", [0, 1, 7, api._SHARED_INDICES, api._SHARED_INDICES + 1])
def test_split_positions_matches_flatnonzero(n, share):
    rng = np.random.default_rng(n)
    mask = rng.random(n) < share
    for shared in (api._shared_range(n), [], list(range(n + 3))):
        yes, no = split_positions(mask.view(np.uint8), shared)
        assert yes == np.flatnonzero(mask).tolist()
        assert no == np.flatnonzero(~mask).tolist()
        assert all(type(i) is int for i in yes[:5] + no[:5])


def test_split_positions_takes_one_reference_per_int():
    shared = list(range(1000, 1010))  # not the interpreter's cached small ints
    mask = np.array([1, 0, 2, 0, 0, 255, 1, 0, 1, 1], dtype=np.uint8)  # any non-zero byte is set
    before = [sys.getrefcount(i) for i in shared]
    yes, no = split_positions(mask, shared)
    assert yes == [1000, 1002, 1005, 1006, 1008, 1009] and no == [1001, 1003, 1004, 1007]
    assert all(a is b for a, b in zip(sorted(yes + no), shared))
    assert [sys.getrefcount(i) for i in shared] == [r + 1 for r in before]
    del yes, no
    assert [sys.getrefcount(i) for i in shared] == before


def test_solution_lists_are_independent():
    """Two solutions share int objects, never lists: changing one leaves the other."""
    a = solve([3, 4, 5], [3.0, 4.0, 5.5], 8, solver="sparse")
    b = solve([3, 4, 5], [3.0, 4.0, 5.5], 8, solver="sparse")
    a.saved.append(99)
    a.recomputed.clear()
    assert b.saved == [0, 2] and b.recomputed == [1]
