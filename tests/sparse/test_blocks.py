"""``_blocks.pxd`` (through ``_canonical._blocks_within``): the count and key
sum of the longest held rank prefix within a limit, against a plain walk."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sparse import _canonical


def walk(idx, key, below, limit, strict):
    acc = cnt = 0
    for r in range(len(idx)):
        if idx[r] < below:
            if not (acc + key[r] < limit if strict else acc + key[r] <= limit):
                break
            acc += key[r]
            cnt += 1
    return cnt, acc


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_within_is_the_walk(data):
    n = data.draw(st.integers(0, 600))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    idx = rng.permutation(n).astype(np.intp)
    key = np.sort(rng.integers(0, data.draw(st.sampled_from([1, 3, 1000])), n)).astype(float)
    below = data.draw(st.integers(0, n))
    limit = float(data.draw(st.integers(-2, int(key.sum()) + 2)))
    strict = data.draw(st.booleans())
    assert _canonical._blocks_within(idx, key, below, limit, strict) == walk(idx, key, below, limit, strict)


def test_within_at_block_edges():
    n = 4096  # blocks of 64: limits ending exactly on and around block ends
    idx = np.arange(n, dtype=np.intp)[::-1].copy()
    key = np.ones(n)
    for below in (n, 3000, 64, 0):
        for limit in (0, 63, 64, 65, 127, 128, 4095, 4096, 5000):
            for strict in (False, True):
                want = walk(idx, key, below, limit, strict)
                assert _canonical._blocks_within(idx, key, below, float(limit), strict) == want


def test_within_checks_lengths():
    with pytest.raises(ValueError, match="key has 2 entries for 3 items"):
        _canonical._blocks_within(np.arange(3, dtype=np.intp), np.ones(2), 3, 1.0)


@pytest.mark.parametrize("idx, below, message", [
    ([0, 1, 2], 4, "below=4 is outside 0..3"),
    ([0, 1, 2], -1, "below=-1 is outside 0..3"),
    ([0, 1, 1], 3, r"idx is not a permutation of 0..2: idx\[2\] = 1"),
    ([0, 3, 1], 3, r"idx is not a permutation of 0..2: idx\[1\] = 3"),
])
def test_within_checks_its_input(idx, below, message):
    with pytest.raises(ValueError, match=message):
        _canonical._blocks_within(np.array(idx, dtype=np.intp), np.ones(3), below, 1.0)


def walk_break(idx, key, val, below, limit):
    acc = vacc = 0.0
    for r in range(len(idx)):
        if idx[r] < below:
            if acc + key[r] > limit:
                return r, acc, vacc
            acc += key[r]
            vacc += val[r]
    return -1, acc, vacc


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_break_is_the_walk(data):
    # Integer keys and values: every sum exact, so the walk's are the blocks'.
    n = data.draw(st.integers(0, 600))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    idx = rng.permutation(n).astype(np.intp)
    key = rng.integers(0, data.draw(st.sampled_from([1, 3, 1000])), n).astype(float)
    val = rng.integers(0, 1000, n).astype(float)
    below = data.draw(st.integers(0, n))
    limit = float(data.draw(st.integers(-2, int(key.sum()) + 2)))
    assert _canonical._blocks_break(idx, key, val, below, limit) == walk_break(idx, key, val, below, limit)


def test_break_at_block_edges():
    n = 4096  # blocks of 64: the break item first, last and just past a block
    idx = np.arange(n, dtype=np.intp)[::-1].copy()
    key, val = np.ones(n), np.arange(n, dtype=float)
    for below in (n, 3000, 64, 0):
        for limit in (0, 63, 64, 65, 127, 128, 4095, 4096, 5000):
            want = walk_break(idx, key, val, below, limit)
            assert _canonical._blocks_break(idx, key, val, below, float(limit)) == want


def test_break_checks_lengths():
    with pytest.raises(ValueError, match="val has 2 entries for 3 items"):
        _canonical._blocks_break(np.arange(3, dtype=np.intp), np.ones(3), np.ones(2), 3, 1.0)


def test_break_below_a_negative_limit_is_the_first_item_held():
    # limit < 0: no prefix fits, not even the empty one; the break is the
    # first item held, wherever it sits (here past a block holding none)
    n = 38
    idx = np.arange(n, dtype=np.intp)[::-1].copy()  # item 0 at the last rank
    key = np.ones(n)
    val = np.arange(n, dtype=np.float64)
    assert _canonical._blocks_break(idx, key, val, 1, -1.0) == (n - 1, 0.0, 0.0) == walk_break(idx, key, val, 1, -1.0)
