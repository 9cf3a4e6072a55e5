"""The two-list search of the canonical pass (``_two_lists.two_lists``),
through its test wrapper, against brute force; and the pass with it forced
on or off, against dp_knapsack."""

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import knob_against_dp, no_count_fills, off_and_on

from remat_knapsack import instances
from remat_knapsack.sparse._fills import _configure_two_lists, _two_lists_py

items = st.integers(0, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 40), min_size=n, max_size=n),
        st.lists(st.integers(0, 40), min_size=n, max_size=n),
        st.integers(0, 200),
        st.integers(0, 200),
    )
)


def _efficiency_order(w, v):
    order = sorted(range(len(w)), key=lambda i: -v[i] / w[i])
    return np.array([w[i] for i in order], dtype=float), np.array([v[i] for i in order], dtype=float)


def _exists(w, v, c, goal):
    n = len(w)
    return any(
        sum(w[i] for i in range(n) if m >> i & 1) <= c and sum(v[i] for i in range(n) if m >> i & 1) >= goal
        for m in range(1 << n)
    )


def _break(w, c):
    b, total = 0, 0.0
    while b < len(w) and total + w[b] <= c:
        total += w[b]
        b += 1
    return b


@settings(max_examples=400, deadline=None)
@given(items, st.integers(0, 6), st.integers(1, 3))
def test_two_lists_brute_force(case, half, tries):
    w, v, c, goal = case
    ws, vs = _efficiency_order(w, v)
    x = _two_lists_py(ws, vs, float(c), float(goal), half, tries)
    b = _break(ws, c)
    if x is not None:  # whatever it finds is a set that fits and reaches the goal
        assert ws[x.astype(bool)].sum() <= c and vs[x.astype(bool)].sum() >= goal
        assert sum(x[q] != (q < b) for q in range(len(ws))) <= 2 * half  # on 2h items at most
        if tries == 1:  # ... the ones nearest the break
            assert all(x[q] == (q < b) for q in range(len(ws)) if not b - half <= q < b + half)
    if b <= half and len(ws) - b <= half:  # every item is in the first lists: the search is complete
        assert (x is not None) == _exists(list(ws), list(vs), c, goal)


def test_two_lists_checks_its_arguments():
    w = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="half"):
        _two_lists_py(w, w, 2.0, 2.0, 17)
    with pytest.raises(ValueError, match="items"):
        _two_lists_py(w, w[:1].copy(), 2.0, 2.0, 2)
    assert _two_lists_py(np.zeros(0), np.zeros(0), 1.0, 0.0, 4) is not None  # the empty set reaches 0
    assert _two_lists_py(np.zeros(0), np.zeros(0), 1.0, 1.0, 4) is None


def test_two_lists_find_an_exact_fill():
    # Subset sum (every order is an efficiency order), 8 items, h = 4: the
    # break solution 10 + 11 + 13 + 17 = 51 leaves 2 of c = 53, so a set
    # must take items out before the break and put in items after it.
    w = np.array([10.0, 11, 13, 17, 19, 23, 29, 31])
    x = _two_lists_py(w, w, 53.0, 53.0, 4)
    assert x is not None and w[x.astype(bool)].sum() == 53.0
    assert _exists(list(w), list(w), 53.0, 53.0)


@contextlib.contextmanager
def _two_lists(half, misses=2, tries=3, worth=16384, any_items=False):
    old = _configure_two_lists(half, misses, tries, worth, any_items)
    try:
        yield
    finally:
        _configure_two_lists(*old)


# (half, misses in a row, tries, states a yes must have cost, off the line
# too): off; forced on with tiny lists; forced on with all three tries
@pytest.mark.parametrize("config", [(0, 2, 1, 0, True), (2, 1 << 30, 1, 0, True), (12, 1 << 30, 3, 0, True)])
@pytest.mark.parametrize("seed", range(2))
def test_canonical_pass_with_two_lists_against_dp(config, seed):
    with no_count_fills():  # they answer the small questions on strongly correlated items first
        found = knob_against_dp(500 + seed, lambda rng: _two_lists(*config), "two_lists_found", n_max=150,
                                tries=120, families=instances.ALL_CLASSES)
    assert (found > 0) == (config[0] > 0)  # the search answered when on, so its path was taken


def test_two_lists_answer_on_strongly_correlated_items():
    # Strongly correlated, R=10^6, n=10^3: the decide runs' sets fill the
    # capacity exactly; a search over 24 items near the break finds some.
    off, on = off_and_on("strongly", 1_000, 10**6, 6, _two_lists(0))
    assert off.stats["two_lists"] == 0
    assert on.stats["two_lists_found"] >= 1
    assert on.stats["states"] < off.stats["states"]


def test_no_two_lists_on_inverse_strongly_correlated_items():
    # Inverse strongly correlated, R=10^4, n=10^3, seed 3: forced onto every
    # line (the knob's "off the line too"), the pass searches the two lists
    # and they find sets; by default it does not search them there, and
    # reaches the same set by decide runs.
    forced, default = off_and_on("inverse_strongly", 1_000, 10**4, 3, _two_lists(12, 2, 3, 16384, True))
    assert forced.stats["two_lists_found"] >= 1
    assert default.stats["two_lists"] == 0
