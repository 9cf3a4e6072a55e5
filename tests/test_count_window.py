"""The swap window of a count (``_count_window.pxd``) and the count runs that use it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack import _sparse, solve, sparse
from remat_knapsack.instances import pisinger


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


def _count_path(inst, window):
    old = sparse._configure_count_path(True, 10**9, 0)
    was = _sparse._configure_count_window(window)
    try:
        return solve(inst.memory, inst.runtimes, inst.max_memory, solver="sparse", scale=1)
    finally:
        _sparse._configure_count_window(was)
        sparse._configure_count_path(*old)


@pytest.mark.parametrize("cls", ["circle", "almost_strongly", "similar_weights", "uncorrelated", "profit_ceiling"])
@pytest.mark.parametrize("seed", range(6))
def test_count_runs_with_and_without_window_match_dp(cls, seed):
    inst = pisinger(cls, 40, R=300, seed=seed)
    want = solve(inst.memory, inst.runtimes, inst.max_memory, solver="dp", scale=1)
    for window in (True, False):
        got = _count_path(inst, window)
        assert got.value == want.value
        assert sorted(got.saved) == sorted(want.saved)


def test_window_shrinks_the_count_run():
    """Circle items: the run of the most items that fit keeps far fewer states with the window."""
    inst = pisinger("circle", 2000, R=1000, seed=0)
    on, off = _count_path(inst, True), _count_path(inst, False)
    assert on.saved == off.saved
    assert on.stats["opt_states"] < off.stats["opt_states"]
