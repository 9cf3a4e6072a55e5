"""Collection rules and Hypothesis profiles for the whole tree.

pytest collects ``tests`` and the doctests of ``src``.

Hypothesis runs derandomized by default: every run of ``python -m pytest`` tries
the same examples, so the suite passes or fails the same way on every machine.
Every example a random search ever found stays pinned in its test with
``@example``. The ``fuzz`` profile searches at random instead, for as long as
asked (``python -m pytest -m hypothesis --hypothesis-profile=fuzz``, or
``.ci/fuzz`` with a time budget); what it finds is pinned and fixed.

Tests marked ``slow`` (each near a minute or more: torchrun's failure paths, inductor
twins of faster aot_eager tests, the largest meta models, one long solver run) are skipped unless
asked for: ``python -m pytest --slow`` (or ``REMAT_SLOW=1``) runs them too.
Each slow test has a quicker sibling that covers the same path by default.

Some modules import torch at the top. Without torch their doctests cannot be
imported, so they are reported as skipped, with the reason, instead of failing
collection; the tests that need torch skip themselves with ``pytest.importorskip``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Derandomized: the same examples on every run. deadline=None: kernel timings vary
# with the machine's load and are never asserted on.
settings.register_profile("default", derandomize=True, deadline=None, print_blob=True)
# Random search: a new seed each run, the examples printed with their blob to pin.
settings.register_profile(
    "fuzz",
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")

try:  # imported, not just found: a torch that fails to import counts as missing
    import torch  # noqa: F401

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False
_ROOT = Path(__file__).resolve().parent
# Scripts the torch tests launch (torchrun's worker, the memory-capped worker) and the training
# models they import: not test modules, and importing them for doctests would need torch.
collect_ignore = ["tests/torch_plugin/distributed_worker.py", "tests/torch_plugin/capped_worker.py",
                  "tests/training_models.py"]
NEEDS_TORCH = set((_ROOT / "src" / "remat_knapsack" / "torch").rglob("*.py"))


class _NeedsTorch(pytest.File):
    def collect(self):
        pytest.skip("doctests need torch (pip install 'remat-knapsack[torch]')")


@pytest.hookimpl(hookwrapper=True)
def pytest_collect_file(file_path, parent):
    outcome = yield
    if not HAS_TORCH and file_path.resolve() in NEEDS_TORCH and outcome.get_result():
        outcome.force_result([_NeedsTorch.from_parent(parent, path=file_path)])


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (or set REMAT_SLOW=1)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a minute or more; skipped unless --slow or REMAT_SLOW=1")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow") or os.environ.get("REMAT_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with --slow (or REMAT_SLOW=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
