"""The swap window of a count (``_count_window.pxd``) and the count runs that use it."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack import solve
from remat_knapsack.instances import Instance, pisinger
from remat_knapsack.sparse import _expand, _sparse, _unique
from remat_knapsack.sparse import _solver as sparse


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=2, max_size=9), st.data())
def test_window_against_every_k_set(w, data):
    """Every k-set within c holds the items lighter than lo and none heavier than hi."""
    n = len(w)
    k = data.draw(st.integers(1, n - 1))
    c = data.draw(st.integers(0, sum(w)))
    wa = np.array(w, dtype=float)
    status, lo, hi = _sparse._count_window_py(wa, float(c), k)
    fits = [s for s in itertools.combinations(range(n), k) if sum(w[i] for i in s) <= c]
    assert (status == 2) == (not fits), "WINDOW_EMPTY exactly when no k-set fits"
    if status != 1:
        return
    for s in fits:
        for i in range(n):
            if w[i] < lo:
                assert i in s
            if w[i] > hi:
                assert i not in s


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=2, max_size=40), st.data())
def test_selected_window_is_the_sorted_one(w, data):
    """``lightest_k``'s quickselect gives the window the weight order gives (ties, runs of copies)."""
    k = data.draw(st.integers(1, len(w) - 1))
    c = float(data.draw(st.integers(0, sum(w))))
    wa = np.array(w, dtype=float)
    assert _sparse._count_window_py(wa, c, k, True) == _sparse._count_window_py(wa, c, k)


def test_selected_window_on_large_inputs():
    rng = np.random.default_rng(5)
    for w in (rng.integers(1, 10**6, 50_000), np.repeat([3, 7, 7, 9], 5000), np.arange(1, 30_001)[::-1]):
        w = np.ascontiguousarray(w, dtype=float)
        for k in (1, w.size // 3, w.size - 1):
            for c in (float(np.sort(w)[:k].sum()), float(w.sum()) / 2):
                assert _sparse._count_window_py(w, c, k, True) == _sparse._count_window_py(w, c, k)


def test_window_fixes_far_items():
    # the 3 lightest weigh 1 + 2 + 10 = 13 within 14: slack 1, so 1 and 2
    # cannot leave (the next item weighs 11) and 20 cannot join
    status, lo, hi = _sparse._count_window_py(np.array([1.0, 2.0, 10.0, 11.0, 20.0]), 14.0, 3)
    assert (status, lo, hi) == (1, 10.0, 11.0)
    # no 3-set fits: WINDOW_EMPTY
    assert _sparse._count_window_py(np.array([5.0, 5.0, 5.0, 5.0]), 14.0, 3)[0] == 2
    # every 2-set fits and none is fixed: WINDOW_NONE
    assert _sparse._count_window_py(np.array([5.0, 5.0, 5.0, 5.0]), 14.0, 2)[0] == 0


def test_window_arguments():
    with pytest.raises(ValueError, match="k must be in"):
        _sparse._count_window_py(np.array([1.0, 2.0]), 3.0, 2)


def _solve_with(inst, *knobs):
    """``sparse`` on ``inst`` with test knobs set, each (configure, its
    arguments), and restored afterwards from what configure returned."""
    with contextlib.ExitStack() as restore:
        for configure, args in knobs:
            old = configure(*args)
            restore.callback(configure, *(old if isinstance(old, tuple) else (old,)))
        return solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)


def _count_path(inst, window):
    return _solve_with(inst, (sparse._configure_count_path, (True, 10**9, 0)),
                       (_expand._configure_count_window, (window,)))


@pytest.mark.parametrize("cls", ["circle", "almost_strongly", "similar_weights", "uncorrelated", "profit_ceiling"])
@pytest.mark.parametrize("seed", range(6))
def test_count_runs_with_and_without_window_match_dp(cls, seed):
    _matches_dp_either_way(pisinger(cls, 40, R=300, seed=seed), _count_path)


def _matches_dp_either_way(inst, run):
    """``run(inst, window)`` gives dp's value and set with the window and without."""
    want = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    for window in (True, False):
        got = run(inst, window)
        assert got.value == want.value
        assert sorted(got.saved) == sorted(want.saved)


def test_window_shrinks_the_count_run():
    """Circle items: the run of the most items that fit keeps far fewer states with the window."""
    inst = pisinger("circle", 2000, R=1000, seed=0)
    on, off = _count_path(inst, True), _count_path(inst, False)
    assert on.saved == off.saved
    assert on.stats["opt_states"] < off.stats["opt_states"]


def _unique_windowed(inst, window):
    """The count path forced, uniqueness runs at every witness item a decide
    run would settle, with or without the swap window."""
    return _solve_with(inst, (sparse._configure_count_path, (True, 10**9, 0)),
                       (_unique._configure_unique_window, (window,)), (_unique._configure_unique, (0, 4)))


@pytest.mark.parametrize("cls", ["circle", "almost_strongly", "strongly", "profit_ceiling", "spanner_strongly"])
@pytest.mark.parametrize("seed", range(6))
def test_windowed_uniqueness_runs_match_dp(cls, seed):
    _matches_dp_either_way(pisinger(cls, 60, R=300, seed=seed), _unique_windowed)


def test_windowed_uniqueness_runs_are_taken():
    """Circle items: the uniqueness runs go to the window, and settle the pass in fewer questions."""
    inst = pisinger("circle", 3000, R=10**6, seed=2)
    on, off = _unique_windowed(inst, True), _unique_windowed(inst, False)
    assert on.saved == off.saved
    assert on.stats["unique_windowed"] > 0 and off.stats["unique_windowed"] == 0


def test_windowed_uniqueness_with_copies_matches_dp():
    """Few distinct (weight, value) pairs: the twin links are remapped onto the window's items."""
    import random

    rng = random.Random(7)
    taken = 0
    for _ in range(40):
        types = [(rng.randint(1, 50), rng.randint(1, 50)) for _ in range(rng.randint(2, 5))]
        w, v = map(list, zip(*[rng.choice(types) for _ in range(rng.randint(70, 200))]))
        inst = Instance([float(a) for a in w], [float(b) for b in v], float(sum(w) // 2))
        want = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
        got = _unique_windowed(inst, True)
        assert (got.value, sorted(got.saved)) == (want.value, sorted(want.saved)), (w, v)
        taken += got.stats.get("unique_windowed", 0)
    assert taken > 0


def test_early_uniqueness_tries_keep_a_small_budget():
    """Asked from the first proof on, a uniqueness try may spend 4x OPT/16
    states or 4 per free item (or 4x the proofs', if more), plus the one
    step that crosses it:
    circle items, n=10^4, where the proofs cost little and a try of 4 OPTs
    would not succeed."""
    inst = pisinger("circle", 10_000, R=10**4, seed=2)
    st = solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1).stats
    assert st["unique_tries"] >= 1 and st["unique_windowed"] > 0
    base = max(st["queries_no_states"], st["opt_states"] // 16, st["free"])
    assert st["unique_states"] <= st["unique_tries"] * (4 * base + st["peak_states"])
