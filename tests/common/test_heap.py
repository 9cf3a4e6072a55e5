"""The heap padding kept between solves (``_heap``)."""

import os
import subprocess
import sys

import pytest

from remat_knapsack import solve
from remat_knapsack._common import _heap


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
    code = "from remat_knapsack._common import _heap; print(_heap.ENABLED, _heap.keep_for(10**6))"
    for var, value in (("REMAT_KNAPSACK_HEAP_PAD", "0"), ("MALLOC_TOP_PAD_", "4096"),
                       ("MALLOC_MMAP_THRESHOLD_", "1048576"), ("GLIBC_TUNABLES", "glibc.malloc.top_pad=4096"),
                       ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=1048576")):
        env = {**os.environ, var: value}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.split() == ["False", str(_heap.DEFAULT_PAD)]


@pytest.mark.parametrize("memory", [5, range(2**63), iter([1.0])])
def test_odd_inputs_are_named_by_validation(memory):
    # the padding is asked for after validation: len() of odd input never runs first
    with pytest.raises(ValueError, match="memory"):
        solve(memory, [1.0], 1.0)


def test_a_memory_limit_leaves_the_heap_alone():
    code = ("from remat_knapsack import solve\nfrom remat_knapsack._common import _heap\n"
            "solve([0.5] * 4000, [1.0] * 4000, 100.0, memory_limit=1 << 30)\n"
            "print(_heap._pad)\n"
            "solve([0.5] * 4000, [1.0] * 4000, 100.0)\n"
            "print(_heap._pad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = map(int, out.stdout.split())
    assert first == _heap.DEFAULT_PAD
    assert second == (min(4000 * _heap.PER_ITEM, _heap.MAX_PAD) if _heap.ENABLED else _heap.DEFAULT_PAD)


def test_large_arrays_are_reused_not_remapped():
    # with the padding, glibc's mmap threshold is fixed at 32 MiB (setting M_TOP_PAD
    # alone would freeze it at 128 KiB): repeated solves at n=10^5 fault in few pages
    code = ("import resource\n"
            "from remat_knapsack import solve, instances\n"
            "ins = instances.pisinger('strongly', 100_000, 10_000, 0)\n"
            "w, v, c = list(ins.memory), list(ins.runtimes), ins.max_memory\n"
            "faults = []\n"
            "for _ in range(4):\n"
            "    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "    solve(w, v, c, scale=1)\n"
            "    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n"
            "print(min(faults[1:]))\n")
    out = {}
    for off in ("1", "0"):
        env = {**os.environ, "REMAT_KNAPSACK_HEAP_PAD": off}
        env.pop("MALLOC_TOP_PAD_", None)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        out[off] = int(r.stdout)
    if not _heap.ENABLED:
        pytest.skip("no glibc heap padding here")
    assert out["1"] < out["0"]  # fewer page faults with the padding than glibc's default
