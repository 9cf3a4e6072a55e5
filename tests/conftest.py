"""Fixtures shared by the tests."""

import pytest


@pytest.fixture
def prune_everything(monkeypatch):
    """Make the dense solvers prune every pass, however small."""
    from remat_knapsack import dense

    monkeypatch.setattr(dense, "PRUNE_MIN_CAPACITY", 0)


@pytest.fixture
def count_path():
    """Make ``sparse`` take the count path on every instance."""
    from remat_knapsack import _sparse

    old = _sparse._configure_count_path(True, 0, 0)
    yield
    _sparse._configure_count_path(*old)
