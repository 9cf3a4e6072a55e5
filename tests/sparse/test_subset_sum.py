"""The subset-sum pass (``_subset_sum``): items whose values are their weights,
settled in one pass when a subset fills the capacity. The kernel against a
brute-force oracle of dp_knapsack's rule in exact integers, its budgets, and
``solve`` with the pass on and off against dp."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import general_path

from remat_knapsack import instances, solve
from remat_knapsack.sparse import _subset_sum

ROOMY = (1 << 17, 1 << 40)  # max_words, budget: never the limit on these sizes


def _canonical(w, c):
    """(OPT, dp_knapsack's set) for values equal to the weights, by the sums
    each prefix reaches (Python integers): from the top, item i is left out
    when the items below it reach the target."""
    reach = [{0}]
    for x in w:
        reach.append(reach[-1] | {s + x for s in reach[-1] if s + x <= c})
    opt = max(reach[-1])
    target, kept = opt, []
    for i in range(len(w) - 1, -1, -1):
        if target not in reach[i]:
            kept.append(i)
            target -= w[i]
    return opt, sorted(kept)


def _kernel(w, c, max_words, budget):
    sel = np.zeros(len(w), dtype=np.uint8)
    w = np.array(w, dtype=float)
    code, asked, work, _held = _subset_sum.canonical_subset_sum(w, w, float(c), sel, max_words, budget)
    return code, sel, asked, work


def weights_and_share(min_n, max_n, ranges):
    """(n weights up to one of ``ranges``, a share of their total in [0, 1])."""
    return st.integers(min_n, max_n).flatmap(lambda n: st.tuples(
        st.sampled_from(ranges).flatmap(lambda hi: st.lists(st.integers(1, hi), min_size=n, max_size=n)),
        st.floats(0, 1)))


@settings(max_examples=600, deadline=None)
@given(weights_and_share(1, 16, [3, 40, 300, 70_000]))
def test_kernel_against_brute_force(case):
    w, share = case
    c = int(share * (sum(w) - 1))  # below the total: something is left out
    code, sel, _, _ = _kernel(w, c, *ROOMY)
    opt, kept = _canonical(w, c)
    if opt == c:  # a subset fills c, and with room enough the pass finds it
        assert code == _subset_sum.SETTLED
        assert np.flatnonzero(sel).tolist() == kept
    else:  # it settles nothing, and leaves sel as it was
        assert code == _subset_sum.UNSETTLED
        assert not sel.any()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(1, 200), min_size=1, max_size=16), st.floats(0, 1),
       st.integers(1, 4), st.integers(0, 300))
def test_kernel_within_small_budgets(w, share, max_words, budget):
    # Out of words or budget part-way (also in the scan down): unsettled with
    # sel untouched, or settled with dp_knapsack's set.
    c = int(share * (sum(w) - 1))
    code, sel, _, work = _kernel(w, c, max_words, budget)
    if code == _subset_sum.SETTLED:
        assert np.flatnonzero(sel).tolist() == _canonical(w, c)[1]
    else:
        assert not sel.any()


def test_kernel_words_and_questions():
    # 64 + 1 + 127 = 192: sums across word edges. c = 192 is reached by the
    # first three items (the least prefix); the fourth is left out.
    code, sel, asked, work = _kernel([64, 1, 127, 500], 192, *ROOMY)
    assert code == _subset_sum.SETTLED and sel.tolist() == [1, 1, 1, 0]
    assert asked == 0  # the prefix weighs exactly c: no question
    # 1 + 2 + 4 + 8 = 15 > c = 10: drop 5 = 1 + 4 from the first four, so
    # 8 and 2 are kept (dp_knapsack keeps the highest items it can).
    code, sel, asked, _ = _kernel([1, 2, 4, 8], 10, *ROOMY)
    assert code == _subset_sum.SETTLED and sel.tolist() == [0, 1, 0, 1] and asked >= 1
    # Even weights never sum to an odd capacity: unsettled.
    assert _kernel([2, 4, 6, 8], 7, *ROOMY)[0] == _subset_sum.UNSETTLED
    # A question wider than max_words: unsettled.
    assert _kernel([1, 70_000, 3], 70_001 - 64 * 3, 2, 1 << 40)[0] == _subset_sum.UNSETTLED
    # A value that is not its weight: unsettled at once, sel untouched.
    sel = np.zeros(3, dtype=np.uint8)
    w = np.array([1.0, 2.0, 4.0])
    assert _subset_sum.canonical_subset_sum(w, np.array([1.0, 2.0, 5.0]), 3.0, sel, *ROOMY) == (
        _subset_sum.OTHER_VALUES, 0, 0, 0)
    assert not sel.any()
    with pytest.raises(ValueError, match="v has 2 items, w 3"):
        _subset_sum.canonical_subset_sum(w, w[:2], 3.0, sel, *ROOMY)


@pytest.mark.parametrize("seed", range(3))
def test_solve_against_dp_and_the_general_path(seed):
    # Subset-sum items of several ranges, values equal to the weights or a
    # multiple of them (proportional: the same after gcd division), any
    # capacity; dp and the general path agree, and the pass settled most.
    rng = np.random.default_rng(seed)
    settled = 0
    for _ in range(40):
        n = int(rng.integers(5, 200))
        w = rng.integers(1, int(rng.choice([10, 1000, 10**5])), n).astype(float)
        v = w * float(rng.choice([1, 3, 0.5]))
        c = float(rng.integers(0, int(w.sum())))
        ref = solve(w, v, c, scale=1, solver="dp")
        got = solve(w, v, c, scale=1, solver="sparse")
        with general_path():
            general = solve(w, v, c, scale=1, solver="sparse")
        assert (got.value, got.saved) == (ref.value, ref.saved) == (general.value, general.saved)
        assert "subset_sum_words" not in general.stats
        settled += "subset_sum_words" in got.stats
    assert settled > 20


@pytest.mark.parametrize(("n", "R"), [(10_000, 10_000), (1_000, 10**6)])
def test_solve_settles_pisinger_subset_sums(n, R):
    # The benchmark's families: settled by the pass, the general path's set.
    inst = instances.pisinger("subset_sum", n, R, 5)
    args = (inst.memory, inst.runtimes, inst.max_memory)
    got = solve(*args, scale=1, solver="sparse")
    with general_path():
        general = solve(*args, scale=1, solver="sparse")
    assert "subset_sum_words" in got.stats
    assert (got.value, got.saved) == (general.value, general.saved)


def test_no_subset_fills_the_capacity():
    # Sums of 6, 9 and 20 never make 43 (gcd 1): no subset fills it, so the
    # questions leave it, and the layers of every prefix's sums settle it.
    w = [6.0, 9.0, 12.0, 18.0, 20.0, 24.0, 27.0, 30.0, 40.0]
    assert _kernel(w, 43, *ROOMY)[0] == _subset_sum.UNSETTLED
    ref = solve(w, w, 43.0, scale=1, solver="dp")
    got = solve(w, w, 43.0, scale=1, solver="sparse")
    assert got.stats["subset_sum_layers"] == len(w) + 1
    assert (got.value, got.saved) == (ref.value, ref.saved) and got.value == 42.0


def _layers(w, c, max_words=1 << 22):
    sel = np.zeros(len(w), dtype=np.uint8)
    code, opt, held = _subset_sum.canonical_subset_sum_layers(np.array(w, dtype=float), float(c), sel, max_words)
    return code, sel, opt, held


@settings(max_examples=600, deadline=None)
@given(weights_and_share(0, 14, [3, 40, 300, 3000]))
def test_layers_against_brute_force(case):
    # Any capacity, a subset filling it or not: OPT and dp_knapsack's set.
    w, share = case
    c = int(share * sum(w))
    code, sel, opt, held = _layers(w, c)
    want_opt, kept = _canonical(w, c)
    assert code == _subset_sum.SETTLED
    assert (opt, np.flatnonzero(sel).tolist()) == (want_opt, kept)
    assert held == (len(w) + 1) * (c // 64 + 1)


def test_layers_need_their_words():
    # 3 items and c = 200: 4 layers of 4 words; one word short, unsettled and sel untouched.
    assert _layers([50, 70, 90], 200, 16)[0] == _subset_sum.SETTLED
    code, sel, _, _ = _layers([50, 70, 90], 200, 15)
    assert code == _subset_sum.UNSETTLED and not sel.any()


@pytest.mark.parametrize("seed", range(3))
def test_sparse_low_density_subset_sums(seed):
    # 22 weights up to 10^6 and half their total: 2^22 subsets over a range of
    # 10^7, so a subset rarely fills c. The layers settle them (a Pareto state
    # list keeps up to a million states here), with dp's and the general path's set.
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 10**6, 22).astype(float)
    c = float(w.sum() // 2)
    got = solve(w, 2 * w, c, scale=1, solver="sparse")
    with general_path():
        general = solve(w, 2 * w, c, scale=1, solver="sparse")
    ref = solve(w, 2 * w, c, scale=1, solver="dp")
    assert (got.value, got.saved) == (ref.value, ref.saved) == (general.value, general.saved)
    assert got.stats["subset_sum_layers"] == 23
    assert got.stats["peak_bytes"] >= 23 * (int(c) // 64 + 1) * 8  # the layers are counted
