"""Seeded instance generators: the paper's benchmark and Pisinger's classic classes.

Every generator returns an :class:`Instance`, a ``(memory, runtimes,
max_memory)`` triple in the units ``solve`` takes, and is deterministic in its
``seed`` (NumPy's PCG64).

>>> inst = paper(5, seed=0)
>>> len(inst.memory), inst.max_memory == round(sum(inst.memory) / 2, 4)
(5, True)
>>> pisinger("strongly", 4, R=100, seed=1).runtimes[:2]
[58.0, 62.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Instance", "paper", "pisinger", "CLASSES"]

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
    return Instance(memory.tolist(), runtimes.tolist(), budget, f"paper-n{n}-s{seed}", {"class": "paper", "n": n, "seed": seed})


def pisinger(cls: str, n: int, R: int = 10_000, seed: int = 0) -> Instance:
    """One of Pisinger's (2005) classes, "Where are the hard knapsack problems?".

    Integer weights and profits; the capacity is half the total weight. Memory
    is the weight itself, so with ``scale=1`` the instance is solved exactly as
    generated (with the default scale 10^4 the weights are only multiplied).

    ========================  =====================================================
    uncorrelated              w ~ U[1, R], p ~ U[1, R]
    weakly                    w ~ U[1, R], p ~ U[w - R/10, w + R/10], p >= 1
    strongly                  w ~ U[1, R], p = w + R/10
    inverse_strongly          p ~ U[1, R], w = p + R/10
    almost_strongly           w ~ U[1, R], p ~ U[w + R/10 - R/500, w + R/10 + R/500]
    subset_sum                w ~ U[1, R], p = w
    similar_weights           w ~ U[100000, 100100], p ~ U[1, 1000]
    ========================  =====================================================
    """
    _check_n(n)
    if cls not in CLASSES:
        raise ValueError(f"unknown class {cls!r}; choose one of {', '.join(CLASSES)}")
    if R < 10:
        raise ValueError(f"R must be >= 10, got {R}")
    rng = np.random.default_rng(seed)
    r10, r500 = R // 10, R // 500
    if cls == "similar_weights":
        w = rng.integers(100_000, 100_100, n, endpoint=True)
        p = rng.integers(1, 1000, n, endpoint=True)
    elif cls == "inverse_strongly":
        p = rng.integers(1, R, n, endpoint=True)
        w = p + r10
    else:
        w = rng.integers(1, R, n, endpoint=True)
        if cls == "uncorrelated":
            p = rng.integers(1, R, n, endpoint=True)
        elif cls == "weakly":
            p = np.maximum(1, w + rng.integers(-r10, r10, n, endpoint=True))
        elif cls == "strongly":
            p = w + r10
        elif cls == "almost_strongly":
            p = w + r10 + rng.integers(-r500, r500, n, endpoint=True)
        else:  # subset_sum
            p = w.copy()
    capacity = int(w.sum()) // 2
    return Instance(
        w.astype(float).tolist(),
        p.astype(float).tolist(),
        float(capacity),
        f"{cls}-n{n}-R{R}-s{seed}",
        {"class": cls, "n": n, "R": R, "seed": seed},
    )


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
