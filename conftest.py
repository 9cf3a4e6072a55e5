"""Collection rules for the whole tree (pytest collects ``tests`` and the doctests of ``src``).

The modules below import torch at the top. Without torch their doctests cannot be
imported, so they are reported as skipped, with the reason, instead of failing
collection; the tests that need torch skip themselves with ``pytest.importorskip``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:  # imported, not just found: a torch that fails to import counts as missing
    import torch  # noqa: F401

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False
_ROOT = Path(__file__).resolve().parent
NEEDS_TORCH = {_ROOT / "src" / "remat_knapsack" / name for name in ("torch.py", "_sweep.py")}


class _NeedsTorch(pytest.File):
    def collect(self):
        pytest.skip("doctests need torch (pip install 'remat-knapsack[torch]')")


@pytest.hookimpl(hookwrapper=True)
def pytest_collect_file(file_path, parent):
    outcome = yield
    if not HAS_TORCH and file_path.resolve() in NEEDS_TORCH and outcome.get_result():
        outcome.force_result([_NeedsTorch.from_parent(parent, path=file_path)])
