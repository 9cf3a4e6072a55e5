"""Input validation and quantisation, done once at the public boundary.

Every solver receives a :class:`Problem`: float64 arrays that have been checked,
and (when ``scale`` is not None) the integer weights and capacity PyTorch's
``dp_knapsack`` would use, ``round(m * scale)`` with Python's round-half-even.
"""

from __future__ import annotations

import math
import operator
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import Any

import numpy as np

from ._checks import extremes, quantise
from ._fsum import fsum
from ._lists import floats_of

__all__ = [
    "Problem", "Items", "validate", "active_items", "excess_weight",
    "quantise_budget", "check_memory_limit", "as_real", "all_fit", "MAX_RUNTIME_TOTAL",
]

# Largest quantised weight we accept: sums of n such weights must stay exact in int64.
_MAX_WEIGHT = 1 << 52
#: The positive runtimes must sum below this: every solver's float64 sums,
#: and its bounds (a sum times a capacity below 2**53), then stay finite.
MAX_RUNTIME_TOTAL = 2.0**960
_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Problem:
    """A validated instance. ``weights``/``capacity`` are None when ``scale`` is None."""

    memory: np.ndarray  # float64, >= 0, finite
    runtimes: np.ndarray  # float64, finite
    max_memory: float  # >= 0, may be +inf
    scale: float | None
    weights: np.ndarray | None  # int64
    capacity: int | None
    #: The least and greatest memory and the least runtime, as validation
    #: found them (None when there are no items): ``active_items`` reads
    #: them instead of passing over the arrays again.
    memory_range: tuple[float, float] | None
    least_runtime: float | None

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
    """Check the inputs and quantise them; raise ValueError naming what is wrong.

    Vectorised: no per-item Python work unless an item is bad (to name it) or
    may be a bool (0 and 1 only); the extremes and the quantised weights in
    one C pass each (``_checks``). No numpy warning escapes.
    """
    mem = _as_float_array(memory, "memory")
    rt = _as_float_array(runtimes, "runtimes")
    if mem.shape[0] != rt.shape[0]:
        raise ValueError(
            f"memory and runtimes have different lengths ({mem.shape[0]} and {rt.shape[0]})"
        )
    memory_range = least_runtime = None
    if mem.size:
        lo, hi = extremes(mem)
        if not (lo >= 0 and hi < math.inf):  # NaN fails both
            _check_finite(mem, "memory", allow_negative=False)
        memory_range = (lo, hi)
        least_runtime = _check_runtimes(rt)
    cap = as_real(max_memory, "max_memory")
    if math.isnan(cap) or cap < 0:
        raise ValueError(f"max_memory must be a number >= 0, got {max_memory!r}")
    if scale is None:
        return Problem(mem, rt, cap, None, None, None, memory_range, least_runtime)
    s = as_real(scale, "scale")
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"scale must be a finite number > 0 (or None), got {scale!r}")
    if mem.size and hi * s > _MAX_WEIGHT:  # Python floats: inf, never a warning
        i = int(np.argmax(mem))
        raise ValueError(
            f"memory[{i}] = {float(mem[i])!r} times scale {s!r} is too large to quantise exactly"
        )
    weights, total = quantise(mem, s)
    return Problem(mem, rt, cap, s, weights, quantise_budget(cap, s, total), memory_range, least_runtime)


def quantise_budget(budget: float, scale: float, total: int) -> int:
    """The integer capacity of ``budget``: ``round(budget * scale)`` (Python's
    round, as PyTorch), capped at ``total`` (more cannot matter)."""
    q = budget * scale
    return min(int(round(q)), total) if q <= _MAX_WEIGHT else total


def check_memory_limit(memory_limit: Any) -> None:
    """``memory_limit`` is None or an integer number of bytes >= 0 (not a bool)."""
    if memory_limit is None:
        return
    not_int = isinstance(memory_limit, (bool, np.bool_)) or not isinstance(memory_limit, (int, np.integer))
    if not_int or memory_limit < 0:
        raise ValueError(f"memory_limit must be an integer number of bytes >= 0, got {memory_limit!r}")


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
    none = np.zeros(0, dtype=np.int64)
    if not w.size or _all_undecided(problem, cap, quantised):
        # Every item is undecided (the common case): no masks, no gathers.
        return Items(np.arange(w.size, dtype=np.int64), w.copy(), v.astype(np.float64), cap, none)
    positive = v > 0
    zero = w == 0
    forced = np.flatnonzero(positive & zero) if zero.any() else none
    mask = positive & ~zero & (w <= cap)
    if not quantised:
        # Zero-weight items are free; the rest share what they leave.
        cap = cap - float(np.sum(w[forced])) if forced.size else cap
    keep = np.flatnonzero(mask)
    return Items(keep.astype(np.int64, copy=False), w[mask], v[mask], cap, forced.astype(np.int64, copy=False))


def _all_undecided(problem: Problem, cap: Any, quantised: bool) -> bool:
    """Whether every item has a runtime > 0 and a weight in (0, cap], from
    the ranges validation found (a problem with items has them): the
    quantised weights' range is the memory's rounded the same way
    (x -> round(x * scale) never decreases), so no pass over the items."""
    assert problem.memory_range is not None and problem.least_runtime is not None
    lo, hi = problem.memory_range
    if quantised:
        lo, hi = round(lo * problem.scale), round(hi * problem.scale)
    return bool(problem.least_runtime > 0 and lo > 0 and hi <= cap)


def all_fit(items: Items) -> bool:
    """Whether every undecided item fits at once (exactly): then the optimum,
    and dp_knapsack's canonical set, is all of them and no solver needs to run.
    O(n) vectorised; exact sums only when the float sum is within rounding of
    the capacity."""
    w = items.weights
    if w.size == 0:
        return True
    if w.dtype.kind in "iu":
        return int(w.sum()) <= int(items.capacity)
    cap = float(items.capacity)
    if math.isinf(cap):
        return True
    approx = float(w.sum())  # |error| <= (n - 1) eps * sum for non-negative terms
    slack = 2.0 * w.size * _EPS * max(approx, cap)
    if approx + slack < cap:
        return True
    if approx - slack > cap:
        return False
    return excess_weight(w, cap) <= 0


def excess_weight(weights: np.ndarray, capacity: Any) -> float:
    """How far the weights' exact sum is above ``capacity``: > 0 exactly when
    the set does not fit. Integer weights are summed as integers; for real
    weights fsum is correctly rounded (and rounding is monotone), so only an
    fsum equal to the capacity needs rationals."""
    if weights.dtype.kind in "iu":
        return float(int(weights.sum()) - int(capacity))
    total = fsum(weights)
    if total != capacity:
        return total - float(capacity)
    exact = sum(map(Fraction, weights.tolist()), Fraction(0)) - Fraction(capacity)
    return float(exact) if exact > 0 else 0.0


def _as_float_array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, (list, tuple)):
        out = floats_of(x)  # plain floats and ints: no bool among them
        if out is not None:
            return out
        out = _pack_floats(x)
        if out is not None:
            if out.size:
                _reject_bools(x, out, name)
            return out
    if isinstance(x, (str, bytes)):
        raise ValueError(f"{name} must be a sequence of numbers, got a string")
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists, odd objects, ints beyond float64
        if isinstance(x, (list, tuple)):
            _name_bad_item(x, name)
        raise ValueError(f"{name} must be a flat sequence of numbers: {exc}") from None
    if arr.ndim != 1:
        if arr.ndim == 0:
            raise ValueError(f"{name} must be a sequence of numbers, got {type(x).__name__}")
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "b":
        if arr.size:
            raise ValueError(f"{name}[0] is a boolean, not a number: {arr[0].item()!r}")
        return np.zeros(0)
    if kind in "iuf":
        if arr.dtype == np.float64:
            out = arr  # nothing to convert (np.errstate alone costs about 2 us)
        else:
            with np.errstate(over="ignore", invalid="ignore"):  # float128 beyond float64: caught as inf
                out = arr.astype(np.float64)
        if not isinstance(x, np.ndarray) and out.size:
            _reject_bools(x, out, name)  # a sequence mixing bools and numbers converts silently
        return out
    seq = x if isinstance(x, (list, tuple)) else arr.tolist()
    _name_bad_item(seq, name)
    with np.errstate(over="ignore", invalid="ignore"):
        return arr.astype(np.float64)


def _pack_floats(x: list[Any] | tuple[Any, ...]) -> np.ndarray | None:
    """A list of numbers as float64 in C, or None when an item is not one.

    struct and array('d') both convert each item with ``PyFloat_AsDouble``
    (ints, floats, numpy scalars, bools); struct is about twice as fast, as it
    does not parse a format per item. When struct refuses an item (strings,
    None, nested lists, ints beyond float64), array('d') runs again so that
    any exception that is not a conversion error propagates as it always did.
    """
    out = np.empty(len(x), dtype=np.float64)
    try:
        struct.pack_into(f"{len(x)}d", out, 0, *x)
    except struct.error:
        pass
    else:
        return out
    try:
        return np.frombuffer(array("d", x), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return None  # the general path names the bad item


def _reject_bools(x: Any, out: np.ndarray, name: str) -> None:
    """np.asarray([True, 0.5]) is [1.0, 0.5]: look at the items equal to 0 or 1 only."""
    maybe = np.flatnonzero((out == 0.0) | (out == 1.0))
    if maybe.size and isinstance(x, (list, tuple)):
        idx = maybe.tolist()
        items = [x[idx[0]]] if len(idx) == 1 else operator.itemgetter(*idx)(x)
        kinds = set(map(type, items))  # C loops; the Python loop only to name the index
        if any(issubclass(k, (bool, np.bool_)) for k in kinds):
            for i in idx:
                if isinstance(x[i], (bool, np.bool_)):
                    raise ValueError(f"{name}[{i}] is a boolean, not a number: {x[i]!r}")


def _name_bad_item(seq: Sequence[Any], name: str) -> None:
    """Raise ValueError naming the first item that is not a float64 number."""
    for i, item in enumerate(seq):
        if isinstance(item, (bool, np.bool_)):
            raise ValueError(f"{name}[{i}] is a boolean, not a number: {item!r}")
        if not isinstance(item, (Real, np.integer, np.floating)):
            raise ValueError(f"{name}[{i}] is not a number: {item!r}")
        try:
            float(item)
        except OverflowError:
            raise ValueError(f"{name}[{i}] = {_short(item)} is beyond the range of float64") from None


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"


def as_real(x: Any, name: str) -> float:
    """A real number (not a bool) as a float; ValueError naming ``name`` otherwise."""
    if type(x) is float:  # the usual case, before the slower abstract-class checks
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (Real, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {x!r}")
    try:
        return float(x)
    except OverflowError:
        raise ValueError(f"{name} = {_short(x)} is beyond the range of float64") from None


def _check_runtimes(rt: np.ndarray) -> float:
    """Runtimes are finite and the positive ones sum below ``MAX_RUNTIME_TOTAL``.
    Returns the least runtime."""
    lo, hi = extremes(rt)
    if not (lo > -math.inf and hi < math.inf):  # NaN fails both
        _check_finite(rt, "runtimes", allow_negative=True)
    if hi * rt.size < MAX_RUNTIME_TOTAL:
        return lo
    with np.errstate(over="ignore"):
        total = float(np.sum(rt, where=rt > 0))
    if not total < MAX_RUNTIME_TOTAL:
        raise ValueError(
            f"runtimes: the positive runtimes sum to {total!r}, beyond {MAX_RUNTIME_TOTAL!r} (2**960), "
            "where the solvers' float64 sums and bounds would overflow; rescale them"
        )
    return lo


def _check_finite(arr: np.ndarray, name: str, *, allow_negative: bool) -> None:
    bad = ~np.isfinite(arr)
    if not allow_negative:
        bad |= arr < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        what = "finite" if allow_negative else "finite and >= 0"
        raise ValueError(f"{name}[{i}] must be {what}, got {float(arr[i])!r}")
