"""The count fills of the canonical pass (``_count_fill``), through its test
wrapper, against brute force; and the pass with them on or off on strongly
correlated items, against dp_knapsack."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import knob, knob_against_dp, off_and_on

from remat_knapsack.sparse._fills import (
    _configure_fill_bits,
    _configure_fill_greedy,
    _count_fill_py,
    _fill_greedy_py,
)

FILL_NONE, FILL_FOUND, FILL_UNREAD = 0, 1, 2

cases = st.integers(1, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 300), min_size=n, max_size=n),
        st.integers(1, n),
        st.integers(0, 900),
        st.integers(0, 40),
    )
)


@settings(max_examples=600, deadline=None)
@given(cases)
def test_count_fill_brute_force(case):
    w, m, above, width = case
    w = sorted(w)
    lo = sum(w[:m]) + above
    hi = lo + width
    reachable = any(lo <= sum(c) <= hi for c in itertools.combinations(w, m))
    r, x, _ = _count_fill_py(np.array(w, dtype=float), m, lo, hi)
    assert r == (FILL_FOUND if reachable else FILL_NONE)
    if reachable:
        assert x.sum() == m and lo <= np.array(w)[x.astype(bool)].sum() <= hi
    r, x, _ = _count_fill_py(np.array(w, dtype=float), m, lo, hi, keep=False)
    assert r == (FILL_UNREAD if reachable else FILL_NONE) and x is None


def test_count_fill_walk_and_edges():
    w = np.array([10.0, 20.0, 30.0, 95.0, 200.0, 201.0])
    # m = 3, least 60, pivot 30: 20 -> 95 gives 135, 30 -> 95 gives 125
    r, x, (t, b, words) = _count_fill_py(w, 3, 135, 135)
    assert r == FILL_FOUND and list(x) == [1, 0, 1, 1, 0, 0]
    assert t == 4 and b == 1 and words == 2  # distances 0, 10, 20, 65 up to 75; one swap
    assert _count_fill_py(w, 3, 60, 60)[0] == FILL_FOUND  # the lightest three
    assert _count_fill_py(w, 3, 61, 124)[0] == FILL_NONE
    assert _count_fill_py(w, 6, 556, 556)[0] == FILL_FOUND  # all of them: nothing to swap
    r, x, _ = _count_fill_py(np.array([64.0, 128.0, 192.0, 320.0]), 2, 384, 512)
    assert r == FILL_FOUND  # shifts across word edges: 64 + 320
    assert 384 <= np.array([64, 128, 192, 320])[x.astype(bool)].sum() <= 512
    with pytest.raises(ValueError, match="least sum"):
        _count_fill_py(w, 3, 59, 70)
    with pytest.raises(ValueError, match="m="):
        _count_fill_py(w, 0, 0, 0)


@settings(max_examples=600, deadline=None)
@given(cases)
def test_fill_greedy_finds_only_real_fills(case):
    # A miss proves nothing, but a set found is m items in the range; and
    # one is found whenever the range holds the sum of m consecutive items
    # (by weight): the windows' sums grow as they slide.
    w, m, above, width = case
    w = sorted(w)
    least = sum(w[:m])
    lo, hi = least + above + 1, least + above + 1 + width
    x = _fill_greedy_py(np.array(w, dtype=float), m, lo, hi)
    if x is not None:
        assert x.sum() == m and lo <= np.array(w)[x.astype(bool)].sum() <= hi
    windows = [sum(w[s:s + m]) for s in range(len(w) - m + 1)]
    if any(lo <= t <= hi for t in windows):
        assert x is not None


def test_fill_greedy_on_dense_weights():
    # Weights 1..2000 (n = 2000), m = 500: every sum between the least and
    # the most of 500 items is some 500 of them; the greedy reaches each
    # range tried, exact ones included, in its O(n) pass.
    w = np.arange(1.0, 2001.0)
    m = 500
    least, most = int(w[:m].sum()), int(w[-m:].sum())
    for lo in [least + 1, least + 7, (least + most) // 2, most - 3, most]:
        for width in [0, 5]:
            x = _fill_greedy_py(w, m, lo, min(lo + width, most))
            assert x is not None, (lo, width)
            assert x.sum() == m and lo <= w[x.astype(bool)].sum() <= min(lo + width, most)
    assert _fill_greedy_py(w, m, most + 1, most + 10) is None  # beyond every 500-set
    with pytest.raises(ValueError, match="least sum"):
        _fill_greedy_py(w, m, least, least + 5)


def test_fill_greedy_answers_the_first_questions_at_scale():
    # Strongly correlated, n=10^4, R=10^6: the pass's first questions lie far
    # above the least sum of m (wide bit sets); the greedy answers them, and
    # the set is the same with it off.
    off, on = off_and_on("strongly", 10_000, 10**6, 0, knob(_configure_fill_greedy, False))
    assert off.stats["fill_greedy"] == 0 and on.stats["fill_greedy"] > 0


@pytest.mark.parametrize("on", [False, True])
def test_canonical_pass_with_fill_greedy_against_dp(on):
    answered = knob_against_dp(930 + on, lambda rng: knob(_configure_fill_greedy, on), "fill_greedy",
                               n_max=150, tries=120, families=["strongly"])
    assert (answered > 0) == on


@pytest.mark.parametrize("work", [0, 1 << 22])
@pytest.mark.parametrize("seed", range(2))
def test_canonical_pass_with_count_fills_against_dp(work, seed):
    answered = knob_against_dp(900 + seed, lambda rng: knob(_configure_fill_bits, work), "fill_bits",
                               n_max=150, tries=120, families=["strongly"])
    assert (answered > 0) == (work > 0)  # the count fills answered when on, so their path was taken


def test_count_fills_settle_strongly_correlated_proofs():
    # Strongly correlated, n=10^3, R=10^6, seed 2: every question of the
    # canonical pass needs the most items that fit and a weight filling the
    # capacity exactly; the ten with no answer took state-list runs 163 k
    # states. The count fills answer them.
    off, on = off_and_on("strongly", 1_000, 10**6, 2, knob(_configure_fill_bits, 0))
    assert off.stats["fill_bits"] == 0 and on.stats["fill_bits"] > 0
    assert on.stats["states"] < off.stats["states"]
    with pytest.raises(ValueError, match="work"):
        _configure_fill_bits(-1)


def test_count_fills_near_search_without_the_history():
    # Strongly correlated, n=10^3, R=10^6, seed 6: the pass's first yeses
    # need 11-17 M words of history to read back; the search with at most
    # two swaps more in than out on the nearest items finds them (runs of
    # 130-150 k states before).
    off, on = off_and_on("strongly", 1_000, 10**6, 6, knob(_configure_fill_bits, 1 << 22, 0))
    assert on.stats["states"] < off.stats["states"]
    assert on.stats["fill_bits"] > off.stats["fill_bits"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2000), min_size=1, max_size=11), st.sampled_from([1, 2**20, 2**40]),
       st.integers(1, 3000), st.floats(0.2, 0.8))
def test_strongly_correlated_of_any_magnitude_against_brute_force(small, big, offset, share):
    # Items on one line v = w + D with weights big + small: past the bit
    # sets' budget the pass falls back to the runs; the same set as the
    # brute force either way.
    from oracles import brute_force

    from remat_knapsack import solve

    w = [float(big + x) for x in small]
    v = [x + offset for x in w]
    c = float(int(sum(w) * share))
    got = solve(w, v, c, scale=1, solver="sparse")
    assert (got.value, got.saved) == brute_force(w, v, c)
