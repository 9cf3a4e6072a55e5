"""Seeded instance generators."""

from __future__ import annotations

import numpy as np
import pytest

from remat_knapsack import instances


def test_paper_shape_and_seed():
    a, b = instances.paper(100, 3), instances.paper(100, 3)
    assert a == b and a != instances.paper(100, 4)
    m = np.array(a.memory)
    assert len(a.memory) == len(a.runtimes) == 100
    assert m.min() >= 100 and m.max() <= 1000
    assert np.allclose(m, np.round(m, 4))
    assert 1 <= min(a.runtimes) and max(a.runtimes) <= 100
    assert a.max_memory == round(m.sum() / 2, 4)
    assert 2.5e8 < round(a.max_memory * 10_000) < 3.6e8  # about 3.1e8


@pytest.mark.parametrize("cls", instances.CLASSES)
def test_pisinger_classes(cls):
    R = 1000
    inst = instances.pisinger(cls, 500, R=R, seed=2)
    w = np.array(inst.memory)
    p = np.array(inst.runtimes)
    assert inst == instances.pisinger(cls, 500, R=R, seed=2)
    assert np.all(w == np.round(w)) and np.all(p == np.round(p)) and p.min() >= 1
    assert inst.max_memory == float(int(w.sum()) // 2)
    if cls == "similar_weights":
        assert w.min() >= 100_000 and w.max() <= 100_100 and p.max() <= 1000
        return
    if cls == "inverse_strongly":
        assert np.all(w == p + R // 10) and p.max() <= R
        return
    assert w.min() >= 1 and w.max() <= R
    if cls == "uncorrelated":
        assert p.max() <= R
    elif cls == "weakly":
        assert np.all(np.abs(p - w) <= R // 10) or np.all((p == 1) | (np.abs(p - w) <= R // 10))
    elif cls == "strongly":
        assert np.all(p == w + R // 10)
    elif cls == "almost_strongly":
        assert np.all(np.abs(p - (w + R // 10)) <= R // 500)
    elif cls == "subset_sum":
        assert np.all(p == w)


def test_bad_arguments():
    with pytest.raises(ValueError):
        instances.pisinger("nope", 10)
    with pytest.raises(ValueError):
        instances.paper(-1)
    with pytest.raises(ValueError):
        instances.pisinger("strongly", 10, R=5)
