"""Oracles and strategies shared by the tests."""

from __future__ import annotations

import contextlib
from fractions import Fraction

from hypothesis import strategies as st


def brute_force(weights, values, capacity, *, exact=False):
    """The canonical optimum by enumeration: (value, saved indices).

    Among optimal sets it returns the one PyTorch's dp_knapsack backtracking
    returns: the lexicographically least indicator vector read from the last
    item down (as an integer with item i as bit i: the smallest).
    Items with value <= 0 are never saved, weight-0 items with value > 0 always.
    ``exact=True`` decides feasibility on the weights' exact rational values,
    as ``scale=None`` must.
    """
    if exact:
        weights = [Fraction(x) for x in weights]
        capacity = Fraction(capacity)
    n = len(weights)
    best_v, best_mask = -1.0, None
    for mask in range(1 << n):
        w = v = 0
        ok = True
        for i in range(n):
            if mask >> i & 1:
                if values[i] <= 0:
                    ok = False
                    break
                w += weights[i]
                v += values[i]
        if not ok or w > capacity:
            continue
        if v > best_v or (v == best_v and mask < best_mask):
            best_v, best_mask = v, mask
    return best_v, [i for i in range(n) if best_mask >> i & 1]


@st.composite
def small_instances(draw, max_n=12, max_w=12, max_v=6, float_values=False):
    """Integer-weight instances (memory = weight / scale) with many ties."""
    n = draw(st.integers(0, max_n))
    w = draw(st.lists(st.integers(0, max_w), min_size=n, max_size=n))
    if float_values:
        v = draw(st.lists(st.floats(-1, 100, allow_nan=False, width=32), min_size=n, max_size=n))
    else:
        v = draw(st.lists(st.integers(-1, max_v), min_size=n, max_size=n))
    cap = draw(st.integers(0, sum(w) + 1))
    return [float(x) for x in w], [float(x) for x in v], float(cap)


def random_instance(rng, n, max_w, max_v, integer_values=True):
    w = rng.integers(1, max_w + 1, n).astype(float)
    v = rng.integers(1, max_v + 1, n).astype(float) if integer_values else rng.uniform(1, max_v, n)
    cap = float(rng.integers(0, int(w.sum()) + 1))
    return w.tolist(), v.tolist(), cap


def small_hard_instance(rng, n_max=30):
    """One of Pisinger's hard families, small enough for dp: integer (w, v, c),
    a random capacity up to the weight sum."""
    from remat_knapsack.instances import HARD_CLASSES, pisinger

    cls, n, R = rng.choice(HARD_CLASSES), rng.randint(3, n_max), rng.choice([10, 100, 1000])
    inst = pisinger(cls, n, R, rng.randrange(10**6))
    w, v = [int(x) for x in inst.memory], [int(x) for x in inst.runtimes]
    return w, v, rng.randint(0, sum(w))


def knob_against_dp(seed, knob, stat, *, n_max=80, tries=150, families=None):
    """``tries`` random Pisinger instances (n from 5 to ``n_max``, R of 10,
    100 or 1,000, integer weights and values, a random capacity) solved by
    ``sparse`` inside ``knob(rng)`` (a context manager, e.g. a test knob of
    the canonical pass) and by dp: the same value and set, asserted. Returns
    the sum of the ``sparse`` solutions' ``stats[stat]``, so a test can check
    that the path under test was taken."""
    import random

    from remat_knapsack import instances, solve

    rng = random.Random(seed)
    families = families or instances.CLASSES + instances.HARD_CLASSES
    total = 0
    for _ in range(tries):
        cls, n, R = rng.choice(families), rng.randint(5, n_max), rng.choice([10, 100, 1000])
        inst = instances.pisinger(cls, n, R, rng.randrange(10**6))
        w, v = [float(int(x)) for x in inst.memory], [float(int(x)) for x in inst.runtimes]
        c = float(rng.randint(0, int(sum(w))))
        ref = solve(w, v, c, scale=1, solver="dp")
        with knob(rng):
            got = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved), (cls, w, v, c)
        total += got.stats.get(stat, 0)
    return total


def off_and_on(cls, n, R, seed, off):
    """``sparse`` on a Pisinger instance inside the context manager ``off``
    (a test knob turning a path of the canonical pass off) and without it:
    the same value and set, asserted. Returns the two solutions (off, on)."""
    from remat_knapsack import instances, solve

    inst = instances.pisinger(cls, n, R, seed)
    args = (inst.memory, inst.runtimes, inst.max_memory)
    with off:
        off_solution = solve(*args, scale=1, solver="sparse")
    on_solution = solve(*args, scale=1, solver="sparse")
    assert (on_solution.value, on_solution.saved) == (off_solution.value, off_solution.saved)
    return off_solution, on_solution


@contextlib.contextmanager
def knob(configure, *args):
    """A test knob of the canonical pass set for the block: ``configure(*args)``
    returns the old setting (one value or a tuple), restored on exit."""
    old = configure(*args)
    try:
        yield
    finally:
        configure(*old) if isinstance(old, tuple) else configure(old)


def general_path():
    """``sparse`` without its subset-sum pass (``_subset_sum``): on items whose
    values are their weights the general path's canonical pass runs, as the
    tests of its questions need."""
    from remat_knapsack.sparse._solver import _configure_subset_sum

    return knob(_configure_subset_sum, False)


def no_count_fills():
    """The canonical pass without its count fills (``_count_fill``): on
    strongly correlated items they answer the small questions first, which
    tests of the paths behind them (two lists, window runs) must reach."""
    from remat_knapsack.sparse._canonical import _configure_fill_bits

    return knob(_configure_fill_bits, 0)
