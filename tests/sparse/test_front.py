"""``_front.pareto_dp``, the grouped solver's compiled DP, against brute
force: every subset of the pieces, each completed by as many units of the
last type as fit (a near class's units weigh u g - min(count, u // k) delta).
Weights up to 2**100 check the 128-bit arithmetic."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse._front import TooManyStates, pareto_dp


def _pieces(G, V, counts, last):
    """Binary pieces of every type but ``last``, in type order."""
    out = []
    for t in range(len(G)):
        rest, k = counts[t], 1
        while rest > 0 and t != last:
            q = min(k, rest)
            out.append((t, q))
            rest -= q
            k <<= 1
    return out


def _units_weight(u, g, near):
    if near is None:
        return u * g
    k, delta, count = near
    return u * g - min(count, u // k) * delta


def _fill(R, g, most, near):
    u = 0
    while u < most and _units_weight(u + 1, g, near) <= R:
        u += 1
    return u


def _brute(pieces, G, V, J, last, most, near):
    """The best completed value over every subset of the pieces."""
    best = -math.inf
    for pick in itertools.product((0, 1), repeat=len(pieces)):
        w = sum(q * G[t] for (t, q), x in zip(pieces, pick) if x)
        if w > J:
            continue
        val = sum(q * V[t] for (t, q), x in zip(pieces, pick) if x)
        best = max(best, val + _fill(J - w, G[last], most, near) * V[last])
    return best


def _run(G, V, counts, J, last, near, target, max_states=10**6):
    pieces = _pieces(G, V, counts, last)
    order = sorted(range(len(G)), key=lambda t: (-V[t] / G[t], t))
    y, peak = pareto_dp(
        np.array([t for t, _ in pieces], dtype=np.int64),
        np.array([q for _, q in pieces], dtype=np.int64),
        [q * G[t] for t, q in pieces],
        np.array([q * V[t] for t, q in pieces], dtype=np.float64),
        J, (last, G[last], counts[last], V[last]), near,
        np.array(counts, dtype=np.int64), np.array(order, dtype=np.int64),
        np.array([float(G[t]) for t in order]), np.array([V[t] for t in order]),
        np.array([V[t] / G[t] for t in order]),
        target, -math.inf, 0.0, 1e-9 * sum(c * v for c, v in zip(counts, V)), max_states,
    )
    return pieces, y, peak


def _check_set(y, G, V, counts, J, last, near):
    assert all(0 <= y[t] <= counts[t] for t in range(len(G)))
    w = sum(int(y[t]) * G[t] for t in range(len(G)) if t != last) + _units_weight(int(y[last]), G[last], near)
    assert w <= J
    return sum(int(y[t]) * V[t] for t in range(len(G)))


@st.composite
def problems(draw):
    T = draw(st.integers(1, 4))
    shift = draw(st.sampled_from([0, 0, 70, 100 - 12]))  # weights beyond 64 bits
    G = [draw(st.integers(1, 40)) << shift for _ in range(T)]
    V = [float(draw(st.integers(1, 60))) for _ in range(T)]
    counts = [draw(st.integers(0, 5)) for _ in range(T)]
    J = draw(st.integers(0, 120)) << shift
    last = draw(st.integers(0, T - 1))
    near = None
    if shift and draw(st.booleans()) and counts[last] > 1:
        # a near class as ``_types._units`` builds it: k units less a few ulps
        k = draw(st.integers(2, 3))
        delta = draw(st.integers(1, (k * G[last]) >> 30))
        near = (k, delta, draw(st.integers(1, 3)))
    return G, V, counts, J, last, near


@settings(max_examples=400, deadline=None)
@given(problems())
def test_best_state_is_brute_force(case):
    G, V, counts, J, last, near = case
    pieces, y, _ = _run(G, V, counts, J, last, near, None)
    assert y is not None
    got = _check_set(y, G, V, counts, J, last, near)
    assert got == _brute(pieces, G, V, J, last, counts[last], near)


@settings(max_examples=400, deadline=None)
@given(problems(), st.integers(-5, 400))
def test_target_is_reached_exactly_when_brute_force_reaches_it(case, target):
    G, V, counts, J, last, near = case
    pieces, y, _ = _run(G, V, counts, J, last, near, float(target))
    best = _brute(pieces, G, V, J, last, counts[last], near)
    if best >= target:
        assert y is not None and _check_set(y, G, V, counts, J, last, near) >= target
    else:
        assert y is None


def test_too_many_states_raises():
    G, V = [3, 5, 7, 11], [3.5, 5.5, 7.5, 11.5]
    with pytest.raises(TooManyStates):
        _run(G, V, [30, 30, 30, 1], 300, 3, None, None, max_states=4)


def test_no_pieces_fills_by_the_last_type():
    _, y, peak = _run([4], [5.0], [9], 30, 0, None, None)
    assert y.tolist() == [7] and peak == 0  # no front was kept past the first


def test_a_near_class_fits_one_more_unit():
    g = 1 << 70
    delta = (2 * g) >> 30
    _, y, _ = _run([g], [5.0], [5], 3 * g - delta, 0, (2, delta, 2), None)
    assert y.tolist() == [3]  # 3 units weigh 3 g - delta: one near copy (2 units) and a root
    _, y, _ = _run([g], [5.0], [5], 3 * g - delta - 1, 0, (2, delta, 2), None)
    assert y.tolist() == [2]


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3)), max_size=60), st.integers(0, 13))
def test_more_pairs_than_counts_distinct_pairs(items, most):
    # the grouped path's quick reject: against a count of the distinct pairs
    from remat_knapsack.sparse._front import more_pairs_than

    w = np.array([float(a) for a, _ in items])
    v = np.array([float(b) for _, b in items])
    assert more_pairs_than(w, v, most) == (len(set(items)) > most)


def test_more_pairs_than_checks_its_arguments():
    from remat_knapsack.sparse._front import more_pairs_than

    with pytest.raises(ValueError, match="3 weights but 2 values"):
        more_pairs_than(np.ones(3), np.ones(2), 1)
    with pytest.raises(ValueError, match="most must be >= 0"):
        more_pairs_than(np.ones(3), np.ones(3), -1)
