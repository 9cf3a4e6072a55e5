"""The model zoo's modules (``benchmarks/_zoo.py``, ``benchmarks/bench_zoo.py``), loaded once per test module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def zoo():
    """``(_zoo, bench_zoo)``: the registry and the benchmark's row functions."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("_zoo", BENCH / "_zoo.py")
        zoo = importlib.util.module_from_spec(spec)
        sys.modules["_zoo"] = zoo  # dataclasses look their module up by name; bench_zoo imports it by name
        spec.loader.exec_module(zoo)
        bench_spec = importlib.util.spec_from_file_location("_bench_zoo", BENCH / "bench_zoo.py")
        bench = importlib.util.module_from_spec(bench_spec)
        bench_spec.loader.exec_module(bench)
        yield zoo, bench
    finally:
        sys.modules.pop("_zoo", None)
        sys.path.remove(str(BENCH))
