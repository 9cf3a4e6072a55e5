"""The bit-set subset sums of the canonical pass (``_subset_bits``), through
its test wrapper, against brute force; and the pass with them on or off on
subset-sum items, against dp_knapsack. Those items take the general path
here (``general_path``): the subset-sum pass would settle most of them first."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import general_path, knob, knob_against_dp, off_and_on

from remat_knapsack.sparse._fills import _configure_sums_bits, _subset_bits_py


@pytest.fixture(autouse=True, scope="module")
def _general_path():
    with general_path():
        yield


cases = st.integers(0, 12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 200), min_size=n, max_size=n),
        st.integers(0, 700),
        st.integers(0, 60),
    )
)


def _sums(w):
    out = {0}
    for x in w:
        out |= {s + x for s in out}
    return out


@settings(max_examples=500, deadline=None)
@given(cases)
def test_subset_bits_brute_force(case):
    w, lo, width = case
    hi = lo + width
    x = _subset_bits_py(np.array(w, dtype=float), lo, hi)
    reachable = any(lo <= s <= hi for s in _sums(w))
    assert (x is not None) == reachable
    if x is not None:
        assert lo <= np.array(w)[x.astype(bool)].sum() <= hi


def test_subset_bits_across_words():
    # Shifts by multiples of 64 and across word edges: 64 + 1 + 127 = 192.
    w = np.array([64.0, 1.0, 127.0, 500.0])
    x = _subset_bits_py(w, 192, 192)
    assert x is not None and list(x) == [1, 1, 1, 0]
    assert _subset_bits_py(w, 193, 499) is None
    assert _subset_bits_py(np.zeros(0), 0, 0) is not None  # the empty set sums to 0
    with pytest.raises(ValueError, match="lo"):
        _subset_bits_py(w, 5, 4)


@pytest.mark.parametrize("words", [0, 1 << 20])
@pytest.mark.parametrize("seed", range(2))
def test_canonical_pass_with_bit_sets_against_dp(words, seed):
    answered = knob_against_dp(700 + seed, lambda rng: knob(_configure_sums_bits, words), "sums_bits",
                               n_max=150, tries=120, families=["subset_sum"])
    assert (answered > 0) == (words > 0)  # the bit sets answered when on, so their path was taken


def test_bit_sets_settle_subset_sum_proofs():
    # Subset sum, n=10^3, R=10^6, seed 4: the complement questions at tight
    # prefixes (a few dozen items, sums up to ~10^5) that have no answer
    # took a state-list run 178 k states; the bit sets answer them.
    off, on = off_and_on("subset_sum", 1_000, 10**6, 4, knob(_configure_sums_bits, 0))
    assert off.stats["sums_bits"] == 0 and on.stats["sums_bits"] > 0
    assert on.stats["states"] < off.stats["states"]
    with pytest.raises(ValueError, match="words"):
        _configure_sums_bits(-1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2000), min_size=1, max_size=11), st.sampled_from([1, 2**20, 2**40]),
       st.floats(0.2, 0.8))
def test_subset_sums_of_any_magnitude_against_brute_force(small, big, share):
    # Subset-sum items (value = weight) with weights big + small: past the bit
    # sets' budget (2**40) the pass falls back to the runs; the same set as
    # the brute force either way.
    from oracles import brute_force

    from remat_knapsack import solve

    w = [float(big + x) for x in small]
    c = float(int(sum(w) * share))
    got = solve(w, w, c, scale=1, solver="sparse")
    assert (got.value, got.saved) == brute_force(w, w, c)


def test_bit_sets_within_a_memory_limit():
    # The bit sets take at most the memory the states may still grow into.
    # Under a limit of 20,000 state slots (about 125 k words left for them,
    # below the 2**20 cap) they still answer every question, the same set;
    # under 5,000 slots they cannot, the runs that answer instead outgrow
    # the limit, and the solve says so instead of exceeding it.
    from remat_knapsack import solve
    from remat_knapsack.errors import SolverMemoryError
    from remat_knapsack.instances import pisinger
    from remat_knapsack.sparse._states import sparse_bytes

    inst = pisinger("subset_sum", 1_000, 10**6, 4)
    args = (inst.memory, inst.runtimes, inst.max_memory)
    free = solve(*args, scale=1, solver="sparse")
    limited = solve(*args, scale=1, solver="sparse", memory_limit=sparse_bytes(1_000, 20_000))
    assert (limited.value, limited.saved) == (free.value, free.saved)
    assert limited.stats["sums_bits"] == free.stats["sums_bits"] > 0
    with pytest.raises(SolverMemoryError):
        solve(*args, scale=1, solver="sparse", memory_limit=sparse_bytes(1_000, 5_000))
