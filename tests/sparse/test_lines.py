"""The class-count bound of items on two parallel value lines (``_lines``),
and sparse on such items against dp."""

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack import solve
from remat_knapsack.instances import pisinger
from remat_knapsack.sparse import _canonical
from remat_knapsack.sparse._lines import Below, find_lines
from tests.oracles import brute_force


@st.composite
def two_lines(draw, max_n=10):
    """Integer items on q v = p w + e, e one of two levels, and a capacity."""
    n = draw(st.integers(2, max_n))
    p, q = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    levels = draw(st.lists(st.integers(-20, 40), min_size=2, max_size=2))
    w, v = [], []
    while len(w) < n:
        x = draw(st.integers(1, 60))
        e = levels[draw(st.integers(0, 1))]
        if (p * x + e) % q == 0 and p * x + e > 0:
            w.append(x)
            v.append((p * x + e) // q)
    return w, v, draw(st.integers(0, sum(w)))


@settings(max_examples=300, deadline=None)
@given(two_lines(), st.data())
def test_bounds_are_upper_bounds(inst, data):
    w, v, c = inst
    wa, va = np.array(w, dtype=float), np.array(v, dtype=float)
    near = data.draw(st.integers(0, len(w) - 1))
    lines = find_lines(wa, va, near)
    if lines is None:
        return
    q_v = lines.q * va - lines.p * wa
    assert set(q_v.tolist()) <= set(lines.levels)  # every item is on a line
    assert lines.bound(wa, va, c) >= brute_force(w, v, c)[0]
    k = data.draw(st.integers(0, len(w)))
    j = data.draw(st.integers(0, c))
    assert Below(lines, wa, va)(k, j) >= brute_force(w[:k], v[:k], j)[0]


@settings(max_examples=500, deadline=None)
@given(two_lines(max_n=30), st.data())
def test_compiled_class_bound_is_below(inst, data):
    # The canonical pass's compiled bound (``_class_counts.pxd``) against
    # ``Below``, the numpy one it replaced, at every prefix and capacity.
    w, v, c = inst
    wa, va = np.array(w, dtype=float), np.array(v, dtype=float)
    lines = find_lines(wa, va, data.draw(st.integers(0, len(w) - 1)))
    if lines is None:
        return
    k = data.draw(st.integers(0, len(w)))
    j = float(data.draw(st.integers(0, c)))
    assert _canonical._class_bound_py(lines, wa, va, k, j) == Below(lines, wa, va)(k, j)


def test_lines_of_multiple_strongly_items():
    inst = pisinger("multiple_strongly", 500, 1000, 3)
    w, v = np.array(inst.memory, dtype=float), np.array(inst.runtimes, dtype=float)
    lines = find_lines(w, v, 10)
    assert lines is not None
    assert (lines.p, lines.q, sorted(lines.levels)) == (1, 1, [200.0, 300.0])


def test_three_lines_or_reals_are_not_lines():
    w = np.arange(1.0, 200.0)
    v = w + np.where(w % 3 == 0, 30.0, 20.0)
    assert find_lines(w, v) is not None
    v3 = v.copy()
    v3[150] += 1  # one item, past the sample, on a third line
    assert find_lines(w, v3) is None
    assert find_lines(w / 4, v) is None  # weights off the integers
    assert find_lines(w, np.random.default_rng(0).uniform(1, 100, w.shape[0])) is None


def _two_line_instance(rng: random.Random) -> tuple[list[int], list[int], int]:
    n = rng.randint(1, 40)
    R = rng.choice([10, 100, 1000])
    k1, k2, d = rng.randint(0, R // 2), rng.randint(0, R // 2), rng.randint(2, 7)
    w = [rng.randint(1, R) for _ in range(n)]
    v = [x + (k1 if x % d == 0 else k2) or 1 for x in w]
    return w, v, rng.randint(0, sum(w))


def test_sparse_on_two_lines_against_dp():
    rng = random.Random(7)
    for _ in range(1500):
        w, v, c = _two_line_instance(rng)
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (w, v, c)


def test_multiple_strongly_against_dp():
    for seed in range(4):
        inst = pisinger("multiple_strongly", 300, 100, seed)
        w, v = [int(x) for x in inst.memory], [int(x) for x in inst.runtimes]
        c = int(inst.max_memory) - seed * 17
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), seed
