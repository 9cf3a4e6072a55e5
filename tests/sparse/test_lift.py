"""The lift (``_lift``): every proof it gives holds, against brute force."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.instances import pisinger
from remat_knapsack.sparse import _solver as sparse
from remat_knapsack.sparse import _sparse
from remat_knapsack.sparse._lift import Lift


def _lift(w, v, c):
    w = np.asarray(w, dtype=float)
    v = np.asarray(v, dtype=float)
    m = int(_sparse.lightest_count_py(np.ascontiguousarray(w), c))
    work = _sparse.Workspace(10**6, 0.0, 0.0, float(m), np.zeros(w.size + 1))
    return Lift(w, v, c, m, work.count_bound), m


def _allowance(w, v):
    tol = sparse._TOL
    return tol["abs_slack"] + tol["rel_card"] * (sum(v) + sum(w) * max(b / a for a, b in zip(w, v)))


def _best_of_count(w, v, c, k):
    best = -np.inf
    for s in combinations(range(len(w)), k):
        if sum(w[i] for i in s) <= c:
            best = max(best, sum(v[i] for i in s))
    return best


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_proof_holds(data):
    n = data.draw(st.integers(2, 10))
    w = data.draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    v = data.draw(st.lists(st.integers(0, 60), min_size=n, max_size=n))
    c = data.draw(st.integers(min(w), sum(w)))
    lift, m = _lift(w, v, c)
    for k in range(1, m):
        best = _best_of_count(w, v, c, k)
        # a proof that every k-set is worth less than the best k-set would be
        # false (less the count path's allowance for rounding in the bounds)
        assert not lift.excludes(k, best - _allowance(w, v))


@pytest.mark.parametrize("seed", range(3))
def test_circle_proves_the_counts_below_the_most_that_fit(seed):
    # Circle items: the most that fit are optimal, and the two counts below are
    # proved below the best of the most that fit (the count bound alone cannot)
    inst = pisinger("circle", 14, 100, seed)
    w, v, c = list(inst.memory), list(inst.runtimes), float(inst.max_memory)
    lift, m = _lift(w, v, c)
    top = _best_of_count(w, v, c, m)
    proved = [k for k in range(1, m) if lift.excludes(k, top - _allowance(w, v))]
    for k in proved:
        assert _best_of_count(w, v, c, k) < top
    assert m - 1 in proved


def test_no_proof_out_of_range():
    lift, m = _lift([3, 4, 5], [1, 2, 3], 7.0)
    assert m == 2
    assert not lift.excludes(m, -1e9)
    assert not lift.excludes(0, -1e9)


@pytest.mark.parametrize("seed", [0, 2])
def test_counts_after_a_lifted_one_try_the_lift_first(seed):
    # Circle items: once the lift has proved a count below the cut, the next
    # counts try it before any run; the answer is the one the runs give
    from remat_knapsack import solve

    inst = pisinger("circle", 3000, 10**4, seed)
    args = (inst.memory, inst.runtimes, inst.max_memory)
    on = solve(*args, solver="sparse", scale=1)
    old = sparse._configure_lift(False)
    try:
        off = solve(*args, solver="sparse", scale=1)
    finally:
        sparse._configure_lift(*old)
    assert on.stats["lifted"] >= 1 and on.stats["lifted_first"] >= 1
    assert off.stats["lifted"] == off.stats["lifted_first"] == 0
    assert (on.value, on.saved) == (off.value, off.saved)
