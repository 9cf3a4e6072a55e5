"""The heap padding kept between solves (``_heap``)."""

import os
import subprocess
import sys

import pytest

from remat_knapsack import _heap, solve


def test_padding_only_grows_and_is_capped():
    before = _heap.keep_for(0)
    assert before >= _heap.DEFAULT_PAD
    assert _heap.keep_for(10) == before  # below the default: nothing asked
    bigger = _heap.keep_for(50_000)
    assert bigger >= before
    assert bigger <= max(before, _heap.MAX_PAD)
    if _heap.ENABLED:
        assert bigger == max(before, min(50_000 * _heap.PER_ITEM, _heap.MAX_PAD))
    assert _heap.keep_for(10**9) <= _heap.MAX_PAD
    assert _heap.keep_for(1) == _heap.keep_for(10**9)  # never lowered


def test_user_choice_is_left_alone():
    code = "from remat_knapsack import _heap; print(_heap.ENABLED, _heap.keep_for(10**6))"
    for var, value in (("MALLOC_TOP_PAD_", "4096"), ("GLIBC_TUNABLES", "glibc.malloc.top_pad=4096")):
        env = {**os.environ, var: value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["False", str(_heap.DEFAULT_PAD)]


def test_solve_takes_odd_inputs_without_a_length():
    # no len(): validation, not the padding, names the problem
    with pytest.raises(ValueError, match="memory"):
        solve(5, [1.0], 1.0)


def test_a_memory_limit_leaves_the_heap_alone():
    code = ("from remat_knapsack import _heap, solve\n"
            "solve([0.5] * 4000, [1.0] * 4000, 100.0, memory_limit=1 << 30)\n"
            "print(_heap._pad)\n"
            "solve([0.5] * 4000, [1.0] * 4000, 100.0)\n"
            "print(_heap._pad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = map(int, out.stdout.split())
    assert first == _heap.DEFAULT_PAD
    assert second == (min(4000 * _heap.PER_ITEM, _heap.MAX_PAD) if _heap.ENABLED else _heap.DEFAULT_PAD)
