"""How much memory a solve may use (``_common._memory``): the /proc reader and the limits."""

import pytest

from remat_knapsack._common import _memory
from remat_knapsack.errors import SolverMemoryError


def test_proc_bytes_reads_the_line_that_starts_with_the_key(tmp_path):
    f = tmp_path / "meminfo"
    f.write_text("MemTotal: 10 kB\nXMemAvailable: 5 kB\nMemAvailable:\t  7 kB\nLast: 3")
    assert _memory._proc_bytes(str(f), "MemAvailable:") == 7 * 1024  # not the XMemAvailable line
    assert _memory._proc_bytes(str(f), "MemTotal:") == 10 * 1024  # the first line
    assert _memory._proc_bytes(str(f), "Last:") == 3 * 1024  # no newline after it
    assert _memory._proc_bytes(str(f), "Swap:") is None
    assert _memory._proc_bytes(str(tmp_path / "absent"), "MemTotal:") is None


def test_proc_bytes_reads_past_one_chunk(tmp_path):
    f = tmp_path / "status"
    f.write_text("".join(f"Key{i}: {i} kB\n" for i in range(2000)))  # about 30 kB
    assert _memory._proc_bytes(str(f), "Key1999:") == 1999 * 1024


def test_limits():
    assert _memory.available_bytes() > 0
    assert _memory.limit_bytes(None) > 0
    assert _memory.limit_bytes(1000) == 1000
    _memory.check_memory("dp", 1000, 1000)
    with pytest.raises(SolverMemoryError):
        _memory.check_memory("dp", 1001, 1000)


def test_meminfo_is_read_again_once_its_reading_is_old(monkeypatch):
    reads = []

    def proc_bytes(path, key):
        reads.append(key)
        return 1000 * len(reads)

    monkeypatch.setattr(_memory, "_proc_bytes", proc_bytes)
    monkeypatch.setattr(_memory, "_last_reading", (-1.0, 0))
    clock = [100.0]
    monkeypatch.setattr(_memory.time, "monotonic", lambda: clock[0])
    assert _memory._meminfo_available() == 1000  # read
    clock[0] += _memory._FRESH / 2
    assert _memory._meminfo_available() == 1000  # fresh: not read again
    clock[0] += _memory._FRESH
    assert _memory._meminfo_available() == 2000  # old: read again
    assert reads == ["MemAvailable:", "MemAvailable:"]
