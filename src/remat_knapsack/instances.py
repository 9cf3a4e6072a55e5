"""Seeded instance generators: the paper's benchmark, Pisinger's classic and hard
classes, and real-shape instances built from a recorded torch.compile graph.

Every generator returns an :class:`Instance`, a ``(memory, runtimes,
max_memory)`` triple in the units ``solve`` takes, and is deterministic in its
``seed`` (NumPy's PCG64).

>>> inst = paper(5, seed=0)
>>> len(inst.memory), inst.max_memory == round(sum(inst.memory) / 2, 4)
(5, True)
>>> pisinger("strongly", 4, R=100, seed=1).runtimes[:2]
[58.0, 62.0]
>>> pisinger("profit_ceiling", 3, R=100, seed=0).runtimes
[87.0, 66.0, 54.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ALL_CLASSES",
    "CLASSES",
    "HARD_CLASSES",
    "HARD_PARAMETERS",
    "Instance",
    "captured",
    "paper",
    "pisinger",
    "tiled",
]

#: Pisinger's classes accepted by :func:`pisinger`.
CLASSES: tuple[str, ...] = (
    "uncorrelated",
    "weakly",
    "strongly",
    "inverse_strongly",
    "almost_strongly",
    "subset_sum",
    "similar_weights",
)

#: Pisinger's (2005) hard classes accepted by :func:`pisinger`.
HARD_CLASSES: tuple[str, ...] = (
    "spanner_uncorrelated",
    "spanner_weakly",
    "spanner_strongly",
    "multiple_strongly",
    "profit_ceiling",
    "circle",
)

#: Every class :func:`pisinger` accepts: the seven classic ones, then the hard ones.
ALL_CLASSES: tuple[str, ...] = CLASSES + HARD_CLASSES

_SPANNER_V, _SPANNER_M = 2, 10
_MSTR_D = 6
_PCEIL_D = 3
_CIRCLE_D = (2, 3)  # d = 2/3 as numerator, denominator: profits stay exact integers
_CIRCLE_MAX_R = 10**8  # 4 * 4R^2 stays inside int64

#: The parameters of the hard classes, those of Pisinger (2005), Section 3:
#: spanner(v, m), mstr(k1, k2, d) with k1 = 3R/10 and k2 = 2R/10, pceil(d), circle(d).
HARD_PARAMETERS: dict[str, dict[str, Any]] = {
    "spanner": {"v": _SPANNER_V, "m": _SPANNER_M},
    "multiple_strongly": {"k1": "3R/10", "k2": "2R/10", "d": _MSTR_D},
    "profit_ceiling": {"d": _PCEIL_D},
    "circle": {"d": f"{_CIRCLE_D[0]}/{_CIRCLE_D[1]}"},
}


@dataclass(frozen=True)
class Instance:
    """A knapsack instance as ``solve`` takes it, with a name for reports."""

    memory: list[float]
    runtimes: list[float]
    max_memory: float
    name: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object the CLI reads: {"memory", "runtimes", "max_memory", "name"}."""
        return {"memory": self.memory, "runtimes": self.runtimes, "max_memory": self.max_memory, "name": self.name}


def paper(n: int, seed: int = 0) -> Instance:
    """Paper-like instance (Maczan 2026, Section 4).

    Memory is uniform in [100, 1000] with 4 decimals, runtimes uniform in
    [1, 100], and the budget is half the total memory (4 decimals). At PyTorch's
    scale 10^4 that gives W of about 0.65e8, 1.5e8 and 3.1e8 for n = 20, 50, 100.
    """
    _check_n(n)
    rng = np.random.default_rng(seed)
    memory = np.round(rng.uniform(100.0, 1000.0, n), 4)
    runtimes = rng.uniform(1.0, 100.0, n)
    budget = round(float(memory.sum()) / 2, 4)
    meta = {"class": "paper", "n": n, "seed": seed}
    return Instance(memory.tolist(), runtimes.tolist(), budget, f"paper-n{n}-s{seed}", meta)


def pisinger(cls: str, n: int, R: int = 10_000, seed: int = 0) -> Instance:
    """One of Pisinger's classes: the classic seven, or the hard six of his 2005 paper.

    D. Pisinger, "Where are the hard knapsack problems?", Computers & Operations
    Research 32 (2005) 2271-2284. Integer weights and profits; the capacity is
    half the total weight for every class (the paper solves each instance at a
    series of capacities c = h/(H+1) * sum(w), h = 1..H; half the sum is the
    capacity of the benchmark tables here, and the middle of that series). Memory is the
    weight itself, so with ``scale=1`` the instance is solved exactly as
    generated (with the default scale 10^4 the weights are only multiplied).
    In every class but ``similar_weights`` and ``inverse_strongly``,
    w ~ U[1, R].

    ========================  =====================================================
    uncorrelated              p ~ U[1, R]
    weakly                    p ~ U[w - R/10, w + R/10], p >= 1
    strongly                  p = w + R/10
    inverse_strongly          p ~ U[1, R], w = p + R/10
    almost_strongly           p ~ U[w + R/10 - R/500, w + R/10 + R/500]
    subset_sum                p = w
    similar_weights           w ~ U[100000, 100100], p ~ U[1, 1000]
    spanner_uncorrelated      spanner(v=2, m=10) over uncorrelated items
    spanner_weakly            spanner(v=2, m=10) over weakly correlated items
    spanner_strongly          spanner(v=2, m=10) over strongly correlated items
    multiple_strongly         mstr(3R/10, 2R/10, 6): p = w + 3R/10 if 6 | w,
                              else p = w + 2R/10
    profit_ceiling            pceil(3): p = 3 * ceil(w / 3)
    circle                    circle(2/3): p = floor(2/3 * sqrt(4R^2 - (w - 2R)^2))
    ========================  =====================================================

    spanner(v, m): a spanner set of v items (w_k, p_k) is drawn in the base
    class (w_k ~ U[1, R], p_k as in that class) and normalised by dividing
    weight and profit by m + 1 (rounded up, so both stay >= 1). Each of the n
    items is a uniformly chosen spanner item k times a multiplier a ~ U[1, m]:
    (w, p) = (a * w_k, a * p_k). So an instance holds at most v * m distinct
    items. R/10, R/500, 3R/10 and 2R/10 are integer divisions.

    >>> inst = pisinger("spanner_strongly", 6, R=1000, seed=0)
    >>> len(set(zip(inst.memory, inst.runtimes))) <= 2 * 10
    True
    """
    _check_n(n)
    if cls not in ALL_CLASSES:
        raise ValueError(f"unknown class {cls!r}; choose one of {', '.join(ALL_CLASSES)}")
    if R < 10:
        raise ValueError(f"R must be >= 10, got {R}")
    if cls == "circle" and R > _CIRCLE_MAX_R:
        raise ValueError(f"R must be <= {_CIRCLE_MAX_R} for circle (int64 profits), got {R}")
    rng = np.random.default_rng(seed)
    if cls in CLASSES:
        w, p = _classic(cls, rng, n, R)
    else:
        w, p = _hard(cls, rng, n, R)
    capacity = int(w.sum()) // 2
    return Instance(
        w.astype(float).tolist(),
        p.astype(float).tolist(),
        float(capacity),
        f"{cls}-n{n}-R{R}-s{seed}",
        {"class": cls, "n": n, "R": R, "seed": seed},
    )


def _classic(cls: str, rng: np.random.Generator, n: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    """The seven classic classes (the draws are those of every earlier version)."""
    r10, r500 = R // 10, R // 500
    if cls == "similar_weights":
        w = rng.integers(100_000, 100_100, n, endpoint=True)
        p = rng.integers(1, 1000, n, endpoint=True)
    elif cls == "inverse_strongly":
        p = rng.integers(1, R, n, endpoint=True)
        w = p + r10
    else:
        w = rng.integers(1, R, n, endpoint=True)
        if cls == "almost_strongly":
            p = w + r10 + rng.integers(-r500, r500, n, endpoint=True)
        else:
            p = _correlated(cls, rng, w, R)
    return w, p


def _correlated(cls: str, rng: np.random.Generator, w: np.ndarray, R: int) -> np.ndarray:
    """Profits for weights ``w`` in the uncorrelated, weakly, strongly and subset-sum classes."""
    r10 = R // 10
    if cls == "uncorrelated":
        return rng.integers(1, R, len(w), endpoint=True)
    if cls == "weakly":
        return np.maximum(1, w + rng.integers(-r10, r10, len(w), endpoint=True))
    if cls == "strongly":
        return w + r10
    return w.copy()  # subset_sum


def _hard(cls: str, rng: np.random.Generator, n: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Pisinger's (2005) hard classes, Section 3 of the paper."""
    if cls.startswith("spanner_"):
        return _spanner(cls[len("spanner_"):], rng, n, R, _SPANNER_V, _SPANNER_M)
    w = rng.integers(1, R, n, endpoint=True)
    if cls == "multiple_strongly":
        p = w + np.where(w % _MSTR_D == 0, 3 * R // 10, 2 * R // 10)
    elif cls == "profit_ceiling":
        p = _PCEIL_D * -(-w // _PCEIL_D)
    else:  # circle
        p = _circle_profits(w, R, *_CIRCLE_D)
    return w, p


def _spanner(base: str, rng: np.random.Generator, n: int, R: int, v: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """spanner(v, m) over the ``base`` class: multiples a * (w_k, p_k), a ~ U[1, m], of v normalised items."""
    sw = rng.integers(1, R, v, endpoint=True)
    sp = _correlated(base, rng, sw, R)
    sw, sp = -(-sw // (m + 1)), -(-sp // (m + 1))  # divided by m + 1, rounded up
    k = rng.integers(0, v, n)
    a = rng.integers(1, m, n, endpoint=True)
    return a * sw[k], a * sp[k]


def _circle_profits(w: np.ndarray, R: int, num: int, den: int) -> np.ndarray:
    """floor(d * sqrt(4R^2 - (w - 2R)^2)) for d = num/den, exactly: isqrt(floor(d^2 * x))."""
    x = 4 * R * R - (w - 2 * R) ** 2  # > 0 for 1 <= w <= R; int64 up to R ~ 10^8
    y = (num * num * x) // (den * den)
    r = np.floor(np.sqrt(y.astype(np.float64))).astype(np.int64)
    r -= r * r > y  # float sqrt is off by at most one here
    r += (r + 1) * (r + 1) <= y
    return r


def captured(graph: Mapping[str, Any], n: int, seed: int = 0) -> Instance:
    """n items drawn uniformly, with replacement, from a recorded graph's candidates.

    ``graph`` is one instance as :func:`remat_knapsack.torch.record_instances`
    writes it (``memory``, ``runtimes``, ``max_memory``, optionally ``graph``).
    The budget keeps the graph's ratio of budget to total memory:
    ``max_memory = sum(drawn memory) * graph max_memory / graph total memory``.
    The result has the shape of real graphs (few distinct (memory, runtime)
    pairs, many copies of each) at any n; solve it with ``scale=None``.

    >>> g = {"memory": [0.25, 0.5], "runtimes": [1.0, 3.0], "max_memory": 0.375}
    >>> inst = captured(g, 4, seed=0)
    >>> sorted(set(inst.memory)) == [0.25, 0.5], inst.max_memory == sum(inst.memory) / 2
    (True, True)
    """
    _check_n(n)
    memory, runtimes, budget = _graph(graph)
    pick = np.random.default_rng(seed).integers(0, len(memory), n)
    m, r = memory[pick], runtimes[pick]
    total = math.fsum(memory)
    cap = math.fsum(m) * (budget / total) if total > 0 else 0.0
    name = f"captured-{_graph_label(graph)}-n{n}-s{seed}"
    return Instance(m.tolist(), r.tolist(), cap, name, {"class": "captured", "n": n, "seed": seed})


def tiled(graph: Mapping[str, Any], k: int) -> Instance:
    """A recorded graph repeated ``k`` times: memory and runtimes tiled, budget ``k * max_memory``.

    >>> tiled({"memory": [0.25, 0.5], "runtimes": [1.0, 3.0], "max_memory": 0.375}, 3).max_memory
    1.125
    """
    _check_n(k)
    memory, runtimes, budget = _graph(graph)
    n = k * len(memory)
    name = f"tiled-{_graph_label(graph)}-x{k}"
    return Instance(
        np.tile(memory, k).tolist(), np.tile(runtimes, k).tolist(), k * budget, name, {"class": "tiled", "n": n, "k": k}
    )


def _graph(graph: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, float]:
    memory = np.asarray(graph["memory"], dtype=np.float64)
    runtimes = np.asarray(graph["runtimes"], dtype=np.float64)
    if memory.ndim != 1 or memory.shape != runtimes.shape or len(memory) == 0:
        raise ValueError(
            "graph needs equally long, non-empty 'memory' and 'runtimes' lists, "
            f"got {memory.shape} and {runtimes.shape}"
        )
    return memory, runtimes, float(graph["max_memory"])


def _graph_label(graph: Mapping[str, Any]) -> str:
    return str(graph.get("name") or graph.get("graph") or "graph").split("#")[0]


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
