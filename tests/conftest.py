"""Fixtures shared by the tests."""

import pytest


@pytest.fixture
def prune_everything(monkeypatch):
    """Make the dense solvers prune every pass, however small."""
    from remat_knapsack.dense import _solver as dense

    monkeypatch.setattr(dense, "PRUNE_MIN_CAPACITY", 0)
