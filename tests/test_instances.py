"""Seeded instance generators."""

from __future__ import annotations

import json
import math
from pathlib import Path

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


# ---------------------------------------------------------------- Pisinger's hard classes (2005)

HARD_R = (1000, 10**6)


@pytest.mark.parametrize("R", HARD_R)
@pytest.mark.parametrize("cls", instances.HARD_CLASSES)
def test_hard_classes_shape_range_and_seed(cls, R):
    inst = instances.pisinger(cls, 800, R=R, seed=4)
    assert inst == instances.pisinger(cls, 800, R=R, seed=4)
    assert inst != instances.pisinger(cls, 800, R=R, seed=5)
    w, p = np.array(inst.memory), np.array(inst.runtimes)
    assert len(w) == len(p) == 800
    assert np.all(w == np.round(w)) and np.all(p == np.round(p))
    assert w.min() >= 1 and p.min() >= 1 and w.max() <= R
    assert inst.max_memory == float(int(w.sum()) // 2)
    assert inst.meta["class"] == cls and inst.name == f"{cls}-n800-R{R}-s4"


@pytest.mark.parametrize("R", HARD_R)
def test_multiple_strongly_formula(R):
    w, p = _wp(instances.pisinger("multiple_strongly", 3000, R=R, seed=1))
    six = w % 6 == 0
    assert six.any() and (~six).any()
    assert np.all(p[six] == w[six] + 3 * R // 10)
    assert np.all(p[~six] == w[~six] + 2 * R // 10)


@pytest.mark.parametrize("R", HARD_R)
def test_profit_ceiling_formula(R):
    w, p = _wp(instances.pisinger("profit_ceiling", 3000, R=R, seed=1))
    assert np.all(p % 3 == 0) and np.all(p >= w) and np.all(p - w <= 2)
    assert np.all(p == [3 * math.ceil(x / 3) for x in w])


@pytest.mark.parametrize("R", HARD_R)
def test_circle_formula(R):
    w, p = _wp(instances.pisinger("circle", 3000, R=R, seed=1))
    exact = [math.isqrt(4 * (4 * R * R - (x - 2 * R) ** 2) // 9) for x in w.tolist()]
    assert p.tolist() == exact  # floor(2/3 * sqrt(4R^2 - (w - 2R)^2)), exactly
    approx = 2 / 3 * np.sqrt(4.0 * R * R - (w - 2.0 * R) ** 2)
    assert np.all((approx - p >= -1e-6) & (approx - p < 1 + 1e-6))


@pytest.mark.parametrize("base", ["uncorrelated", "weakly", "strongly"])
def test_spanner_items_are_multiples_of_two_spanner_items(base):
    R, m = 10**4, 10
    w, p = _wp(instances.pisinger(f"spanner_{base}", 5000, R=R, seed=3))
    pairs = set(zip(w.tolist(), p.tolist()))
    rays: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for x, y in pairs:  # items on one ray through the origin share a spanner item
        g = math.gcd(x, y)
        rays.setdefault((x // g, y // g), []).append((x, y))
    assert 1 <= len(rays) <= 2 and len(pairs) <= 2 * m
    cap = -(-R // (m + 1))  # spanner items are divided by m + 1, rounded up
    for ray in rays.values():
        bw, bp = min(ray)  # a = 1 is drawn with n = 5000 (about 250 copies of each multiple)
        assert bw <= cap and bp >= 1
        for x, y in ray:
            assert x % bw == 0 and 1 <= x // bw <= m and y == (x // bw) * bp
        w0s = range((bw - 1) * (m + 1) + 1, bw * (m + 1) + 1)  # the raw weights that normalise to bw
        if base == "strongly":
            assert any(-(-(w0 + R // 10) // (m + 1)) == bp for w0 in w0s)
        elif base == "weakly":
            assert any(-(-(w0 - R // 10) // (m + 1)) <= bp <= -(-(w0 + R // 10) // (m + 1)) for w0 in w0s)
        else:
            assert bp <= cap


# Sums of memory and runtimes of pisinger(cls, 200, R=1000, seed=7), as generated
# before the hard classes were added (same seeds give the same instances).
CLASSIC_SUMS = {
    "uncorrelated": (103007, 105127),
    "weakly": (103007, 104216),
    "strongly": (103007, 123007),
    "inverse_strongly": (123007, 103007),
    "almost_strongly": (103007, 123031),
    "subset_sum": (103007, 103007),
    "similar_weights": (20010293, 105127),
}


@pytest.mark.parametrize("cls", instances.CLASSES)
def test_classic_classes_unchanged(cls):
    inst = instances.pisinger(cls, 200, R=1000, seed=7)
    assert (int(sum(inst.memory)), int(sum(inst.runtimes))) == CLASSIC_SUMS[cls]
    assert instances.pisinger(cls, 3, R=1000, seed=7).runtimes[:1] == [
        {"uncorrelated": 898.0, "weakly": 1025.0, "strongly": 1045.0, "inverse_strongly": 945.0,
         "almost_strongly": 1047.0, "subset_sum": 945.0, "similar_weights": 898.0}[cls]
    ]


def test_hard_bad_arguments():
    with pytest.raises(ValueError, match="circle"):
        instances.pisinger("circle", 10, R=10**9)
    assert instances.pisinger("spanner_weakly", 0).memory == []


# ---------------------------------------------------------------- real shape: captured and tiled

GRAPH = {"memory": [0.5, 0.25, 0.25, 0.125], "runtimes": [4.0, 1.0, 1.0, 3.0], "max_memory": 0.5625, "graph": "g#x"}


def test_captured_draws_from_the_graph():
    inst = instances.captured(GRAPH, 1000, seed=2)
    assert inst == instances.captured(GRAPH, 1000, seed=2) and inst != instances.captured(GRAPH, 1000, seed=3)
    pairs = set(zip(GRAPH["memory"], GRAPH["runtimes"]))
    assert set(zip(inst.memory, inst.runtimes)) == pairs  # n=1000 draws hit all three pairs
    assert inst.max_memory == pytest.approx(math.fsum(inst.memory) * 0.5625 / 1.125, rel=1e-15)
    assert inst.name == "captured-g-n1000-s2"


def test_tiled_repeats_the_graph():
    inst = instances.tiled(GRAPH, 3)
    assert inst.memory == GRAPH["memory"] * 3 and inst.runtimes == GRAPH["runtimes"] * 3
    assert inst.max_memory == 3 * 0.5625 and inst.meta["n"] == 12
    assert instances.tiled(GRAPH, 0).memory == []


def test_graph_errors():
    with pytest.raises(ValueError, match="memory"):
        instances.tiled({"memory": [1.0], "runtimes": [1.0, 2.0], "max_memory": 1.0}, 2)
    with pytest.raises(ValueError, match="n must be"):
        instances.captured(GRAPH, -1)


def test_stored_graph_file():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "transformer12_d128.json"
    if not path.exists():
        pytest.skip("benchmarks/data is not part of this checkout")
    graph = json.loads(path.read_text())
    assert len(graph["memory"]) == len(graph["runtimes"]) == graph["n"] == 72
    assert len(set(graph["memory"])) == 4  # the shape of real graphs: few distinct memories
    assert len(instances.tiled(graph, 48).memory) == 48 * 72


def _wp(inst):
    return np.array(inst.memory, dtype=np.int64), np.array(inst.runtimes, dtype=np.int64)
