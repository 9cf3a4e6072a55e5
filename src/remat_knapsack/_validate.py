"""Input validation and quantisation, done once at the public boundary.

Every solver receives a :class:`Problem`: float64 arrays that have been checked,
and (when ``scale`` is not None) the integer weights and capacity PyTorch's
``dp_knapsack`` would use, ``round(m * scale)`` with Python's round-half-even.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import Any, Sequence

import numpy as np

__all__ = ["Problem", "Items", "validate", "active_items", "excess_weight"]

# Largest quantised weight we accept: sums of n such weights must stay exact in int64.
_MAX_WEIGHT = 1 << 52


@dataclass(frozen=True)
class Problem:
    """A validated instance. ``weights``/``capacity`` are None when ``scale`` is None."""

    memory: np.ndarray  # float64, >= 0, finite
    runtimes: np.ndarray  # float64, finite
    max_memory: float  # >= 0, may be +inf
    scale: float | None
    weights: np.ndarray | None  # int64
    capacity: int | None

    @property
    def n(self) -> int:
        return int(self.memory.shape[0])


@dataclass(frozen=True)
class Items:
    """The part of a problem a solver has to decide.

    Items with runtime <= 0 are never saved and items that can never fit are
    never saved; items of weight 0 with runtime > 0 are always saved
    (``forced``). What is left (``index``) has 0 < weight <= capacity and
    runtime > 0, in ascending original index.
    """

    index: np.ndarray  # int64 original indices of the undecided items
    weights: np.ndarray  # int64 (quantised) or float64 (scale=None)
    values: np.ndarray  # float64, > 0
    capacity: Any  # int (quantised) or float
    forced: np.ndarray  # int64 original indices always saved


def validate(
    memory: Sequence[float] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    max_memory: float,
    scale: float | None,
) -> Problem:
    """Check the inputs and quantise them; raise ValueError naming what is wrong."""
    mem = _as_float_array(memory, "memory")
    rt = _as_float_array(runtimes, "runtimes")
    if mem.shape[0] != rt.shape[0]:
        raise ValueError(
            f"memory and runtimes have different lengths ({mem.shape[0]} and {rt.shape[0]})"
        )
    _check_finite(mem, "memory", allow_negative=False)
    _check_finite(rt, "runtimes", allow_negative=True)
    cap = _as_real(max_memory, "max_memory")
    if math.isnan(cap) or cap < 0:
        raise ValueError(f"max_memory must be a number >= 0, got {max_memory!r}")
    if scale is None:
        return Problem(mem, rt, cap, None, None, None)
    s = _as_real(scale, "scale")
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"scale must be a finite number > 0 (or None), got {scale!r}")
    scaled = mem * s
    if scaled.size and scaled.max() > _MAX_WEIGHT:
        i = int(np.argmax(scaled))
        raise ValueError(
            f"memory[{i}] = {float(mem[i])!r} times scale {s!r} is too large to quantise exactly"
        )
    weights = np.rint(scaled).astype(np.int64)
    total = int(weights.sum())
    if math.isinf(cap):
        capacity = total
    else:
        capacity = min(int(round(cap * s)), total) if cap * s <= _MAX_WEIGHT else total
    return Problem(mem, rt, cap, s, weights, capacity)


def active_items(problem: Problem, *, quantised: bool = True) -> Items:
    """Split off the forced decisions; see :class:`Items`."""
    v = problem.runtimes
    if quantised:
        if problem.weights is None:
            raise ValueError("this solver needs quantised weights; pass a scale, not None")
        w: np.ndarray = problem.weights
        cap: Any = problem.capacity
    else:
        w, cap = problem.memory, problem.max_memory
    positive = v > 0
    forced = np.flatnonzero(positive & (w == 0))
    keep = np.flatnonzero(positive & (w > 0) & (w <= cap))
    if not quantised:
        # Zero-weight items are free; the rest share what they leave.
        cap = cap - float(np.sum(w[forced])) if forced.size else cap
    return Items(keep.astype(np.int64), w[keep], v[keep].astype(np.float64), cap, forced.astype(np.int64))


def excess_weight(weights: np.ndarray, capacity: Any) -> float:
    """How far the weights' exact sum is above ``capacity``: > 0 exactly when
    the set does not fit. Integer weights are summed as integers; for real
    weights fsum is correctly rounded (and rounding is monotone), so only an
    fsum equal to the capacity needs rationals."""
    if weights.dtype.kind in "iu":
        return float(int(weights.sum()) - int(capacity))
    total = math.fsum(weights.tolist())
    if total != capacity:
        return total - float(capacity)
    exact = sum(map(Fraction, weights.tolist()), Fraction(0)) - Fraction(capacity)
    return float(exact) if exact > 0 else 0.0


def _as_float_array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, (str, bytes)):
        raise ValueError(f"{name} must be a sequence of numbers, got a string")
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, odd objects
        raise ValueError(f"{name} must be a flat sequence of numbers: {exc}") from None
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be a sequence of numbers, got {type(x).__name__}")
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64, copy=False)
    for i, item in enumerate(x if arr.dtype.kind in "US" else arr.tolist()):
        if isinstance(item, bool) or not isinstance(item, Real):
            raise ValueError(f"{name}[{i}] is not a number: {item!r}")
    return arr.astype(np.float64)


def _as_real(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (Real, np.number)):
        raise ValueError(f"{name} must be a number, got {x!r}")
    return float(x)


def _check_finite(arr: np.ndarray, name: str, *, allow_negative: bool) -> None:
    bad = ~np.isfinite(arr)
    if not allow_negative:
        bad |= arr < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "finite" if allow_negative else "finite and >= 0"
        raise ValueError(f"{name}[{i}] must be {what}, got {float(arr[i])!r}")
