"""``_core``: the items a cheap bound fixes before the kernel. Fixed-in
items are in every optimal set and the rest outside the core in none (brute
force); with the core forced on every instance, ``sparse`` still returns
dp_knapsack's set."""

import contextlib
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import brute_force, knob_against_dp, small_instances

from remat_knapsack import solve
from remat_knapsack.sparse import _core, _sparse, _split


def _optimal_sets(w, v, c):
    best, sets = -1.0, []
    for pick in itertools.product((0, 1), repeat=len(w)):
        if sum(x * y for x, y in zip(pick, w)) > c:
            continue
        val = sum(x * y for x, y in zip(pick, v))
        if val > best:
            best, sets = val, [pick]
        elif val == best:
            sets.append(pick)
    return sets


@contextlib.contextmanager
def _core_everywhere(split_from=_core.SPLIT_FROM):
    """The core on every instance, however many items it holds; from a
    split around the break item from ``split_from`` items on, below it from
    the full sort."""
    old = _core.MIN_ITEMS, _core.CORE_SHARE, _core.SPLIT_FROM
    _core.MIN_ITEMS, _core.CORE_SHARE, _core.SPLIT_FROM = 1, 1.0, split_from
    try:
        yield
    finally:
        _core.MIN_ITEMS, _core.CORE_SHARE, _core.SPLIT_FROM = old


def _core_from_full_sort(w, v, c, tol=0.0):
    """The core from the full efficiency order: the break solution completed
    by every later item that still fits, and Dantzig's bound at the break
    item against that value (the reference ``core_of_split`` must match)."""
    o = np.argsort(-(v / w), kind="stable")
    ws, vs = w[o], v[o]
    b = int(np.searchsorted(np.cumsum(ws), c, side="right"))
    x = np.zeros(w.size, dtype=np.uint8)
    added = _sparse.greedy_fill(ws, vs, b, c - float(ws[:b].sum()), x)
    lower = (float(vs[:b].sum()) + added) * (1.0 - w.size * 2.0**-52)
    _, fix_in, fix_out = _core.decided(w, v, c, float(vs[b] / ws[b]), 0.0, 0.0, _sparse.TOLERANCES["rel_lp"],
                                       lower - tol, reduced=False)
    fixed = np.flatnonzero(fix_in)
    return np.flatnonzero(~(fix_in | fix_out)), fixed, c - float(w[fixed].sum())


def _core_from_split(w, v, c):
    return _core.core_of_split(w, v, c, _core.split_at_break(w, v / w, c), 0.0)


def _core_from_sorted_split(w, v, c):
    return _core.core_of_split(w, v, c, _core.sorted_split(w, v / w, c), 0.0)


@pytest.mark.parametrize("find_core", [_core_from_full_sort, _core_from_split, _core_from_sorted_split])
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 30), st.integers(1, 40)), min_size=1, max_size=13),
    st.floats(0, 1),
)
def test_fixed_items_agree_with_every_optimal_set(find_core, items, frac):
    # From the full efficiency order or from a split around the break item.
    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    c = float(int(frac * w.sum()))
    if w.sum() <= c:
        return  # every item fits: no break, no core
    idx, fixed_in, room = find_core(w, v, c)
    assert room == c - w[fixed_in].sum()
    out = set(range(len(w))) - set(idx.tolist()) - set(fixed_in.tolist())
    for pick in _optimal_sets(w.tolist(), v.tolist(), c):
        assert all(pick[i] for i in fixed_in.tolist())
        assert not any(pick[i] for i in out)


def test_worth_it_needs_a_fixed_item_and_a_small_core():
    assert not _core.worth_it(np.arange(100), 100, share=1.0)  # nothing fixed: no smaller instance
    assert _core.worth_it(np.arange(15), 100) and not _core.worth_it(np.arange(16), 100)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("split_from", [0, _core.SPLIT_FROM])  # the split, or the full sort, first
def test_core_everywhere_matches_dp(seed, split_from):
    used = knob_against_dp(seed, lambda rng: _core_everywhere(split_from), "core", n_max=120, tries=120)
    assert used > 0  # the core path was taken


@settings(max_examples=200, deadline=None)
@given(small_instances(max_n=11, max_w=20, max_v=30))
def test_core_everywhere_brute_force_unquantised(case):
    # dyadic memory (quarters): float sums exact, ties real (scale=None runs the core on its grid)
    w, v, c = case
    wq = [a / 4 for a in w]
    want = brute_force(wq, v, c / 4)
    with _core_everywhere():
        got = solve(wq, v, c / 4, solver="sparse", scale=None)
    assert (got.value, got.saved) == want


def test_large_uncorrelated_takes_the_core():
    from remat_knapsack.instances import pisinger

    inst = pisinger("uncorrelated", 10_000, 10_000, 1)
    got = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    assert 0 < got.stats["core"] < 500
    sub = [i for i in range(10_000) if i % 7 == 0]  # a smaller twin, checked against dp
    w = [inst.memory[i] for i in sub]
    v = [inst.runtimes[i] for i in sub]
    c = sum(w) // 2
    with _core_everywhere():
        a = solve(w, v, c, solver="sparse", scale=1)
    b = solve(w, v, c, solver="dp", scale=1)
    assert (a.value, a.saved) == (b.value, b.saved)


def _split_cases():
    rng = np.random.default_rng(11)
    for n in (1, 2, 40, 700, 5000):
        w = rng.integers(1, 1000, n).astype(float)
        yield "random", w, rng.integers(1, 1000, n).astype(float)
        yield "equal efficiency", w, w.copy()  # subset sum: one efficiency for all
        yield "few values", w, (w * rng.integers(1, 4, n)).astype(float)  # many ties
        v = rng.integers(1, 1000, n).astype(float)
        o = np.argsort(-(v / w), kind="stable")
        yield "sorted", w[o].copy(), v[o].copy()  # efficiency order already
        yield "reversed", w[o][::-1].copy(), v[o][::-1].copy()


@pytest.mark.parametrize("frac", [0.01, 0.3, 0.5, 0.97])
def test_split_at_break_brackets_the_break_item(frac):
    # The pieces, each sorted, are the full efficiency order (ties by
    # position), and the break item of that order is mid[b].
    from remat_knapsack.sparse._order import descending

    for name, w, v in _split_cases():
        c = float(int(frac * w.sum()))
        if w.sum() <= c:
            continue
        eff = v / w
        split = _core.split_at_break(w, eff, c)
        full = descending(eff)
        assert np.array_equal(split.order(eff), full), name
        assert np.array_equal(np.sort(np.concatenate((split.top, split.mid, split.low))), np.arange(w.size))
        above = w[split.top].sum()
        assert above + w[split.mid[:split.b]].sum() <= c < above + w[split.mid[:split.b + 1]].sum()
        b = int(np.searchsorted(np.cumsum(w[full]), c, side="right"))
        assert full[b] == split.mid[split.b], name
        assert b == split.top.size + split.b, name  # the break count the kernel takes from the split
        if len(w) >= 5000 and name == "random":
            assert split.mid.size < w.size / 2  # only the items around the break were sorted
        whole = _core.sorted_split(w, eff, c)
        assert np.array_equal(whole.mid, full) and whole.top.size == whole.low.size == 0, name
        assert whole.b == b and np.array_equal(whole.order(eff), full), name


def test_break_position():
    w = np.array([3.0, 4.0, 5.0])
    assert _split.break_position(w, np.array([2, 0, 1]), 8.0) == 2  # 5 + 3 fit, then 4 does not
    assert _split.break_position(w, np.array([2, 0, 1]), 12.0) == 3  # all of them
    assert _split.break_position(w, np.array([2, 0, 1]), 4.0) == 0
    assert _split.break_position(w, np.empty(0, dtype=np.intp), 1.0) == 0
    with pytest.raises(ValueError, match=r"order\[1\] = 7"):
        _split.break_position(w, np.array([0, 7, 1]), 100.0)
    with pytest.raises(ValueError, match="weigh more than the capacity"):
        _core.sorted_split(w, w / w, 12.0)


@pytest.mark.parametrize("family", ["uncorrelated", "weakly", "strongly", "subset_sum", "similar_weights"])
def test_core_of_split_is_the_core_of_the_full_sort(family):
    # The same greedy completion (the low items that still fit, sorted), so the
    # same lower bound and the same core as from the full efficiency order.
    from remat_knapsack.instances import pisinger

    for seed in (1, 5):
        inst = pisinger(family, 5000, 10_000, seed)
        w, v, c = np.array(inst.memory), np.array(inst.runtimes), float(inst.max_memory)
        want = _core_from_full_sort(w, v, c)
        for split in (_core.split_at_break(w, v / w, c), _core.sorted_split(w, v / w, c)):
            got = _core.core_of_split(w, v, c, split, 0.0)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]
