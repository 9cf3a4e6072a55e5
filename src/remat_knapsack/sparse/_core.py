"""The core: the items a cheap bound leaves undecided, solved alone.

Combo (Martello, Pisinger & Toth, Management Science 45, 1999) and the core
algorithms before it solve only the items around the break item; bounds fix
the rest. The sparse kernel does that first on n >= ``MIN_ITEMS`` items:

0. **The break item without a full sort** (``split_at_break``), as combo
   does: a sample of the efficiencies places two thresholds around it, the
   items above them are only summed and those between them sorted
   (``Split``).
1. **A lower bound.** The break solution completed greedily (every later
   item that still fits, in efficiency order): a feasible set, worth LB.
2. **Reduction.** With lam the break item's efficiency and d = v - lam w,
   Dantzig's bound of every set is L = lam c + sum max(0, d); leaving item i
   out caps a set at L - max(0, d_i), taking it at L + min(0, d_i)
   (``decided``). Items for which that falls below LB (less the tolerance)
   are in (out of) every set worth at least LB, so in (out of) every optimal
   set.

Every optimal set is then the fixed-in items plus an optimal set of the
core with the capacity they leave, so dp_knapsack's canonical set (the
backtrack leaves out the highest index whenever the optimum stays
reachable) is the fixed-in items plus the core's canonical set, its items
kept in their order: the kernel solves the core alone, and skips its
set-up, its runs and its reduction over all n items. The core is used when
it holds at most ``CORE_SHARE`` of the items (uncorrelated, weakly
correlated and similar-weights classes); on correlated classes the greedy bound is loose,
the core is most items, and the kernel goes on with all of them, in the
full efficiency order that the split's pieces, each sorted, make up.

Complexity: O(n) expected, plus the sort of the items between the split's
thresholds and of the low items that may join the greedy set. Memory: O(n).

>>> import numpy as np
>>> w = np.array([10.0, 10.0, 10.0, 10.0] * 8)
>>> v = np.array([30.0, 11.0, 10.0, 1.0] * 8)
>>> split = split_at_break(w, v / w, 150.0)
>>> idx, fixed_in, room = core_of_split(w, v, 150.0, split, 0.0)
>>> len(fixed_in), len(idx), room  # the 30s in, the 10s and 1s out: the 11s are the core
(8, 8, 70.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _sparse
from ._fixing import fix_by_bound
from ._order import descending

__all__ = ["core_of_split", "split_at_break", "Split", "worth_it", "decided", "MIN_ITEMS", "CORE_SHARE",
           "LOOSE"]

_TOL = _sparse.TOLERANCES
#: Below this many items the kernel's own set-up is as cheap.
MIN_ITEMS = 2048
#: The core is solved alone when it holds at most this share of the items.
CORE_SHARE = 0.15
#: When the greedy bound leaves more than this share free, the weight bound
#: is loose: the kernel's short trial of ``optimum`` is skipped (it ran out
#: of its states on every such instance measured, almost strongly correlated
#: and circle items, at 0.2-2.6 ms each).
LOOSE = 0.5
#: ``split_at_break`` samples this many efficiencies (evenly spaced positions)
#: and puts its thresholds this share of the sample either side of where the
#: sample's weight crosses the capacity; when the break item is not between
#: them, once more at four times the share, then not at all.
SAMPLE = 1024
MARGIN = 1 / 16


def _fixed(w, v, c, lam, thr):
    """(free items, fixed-in items, the capacity those leave) by Dantzig's
    bound with multiplier ``lam`` against ``thr``."""
    _, fix_in, fix_out = decided(w, v, c, lam, 0.0, 0.0, _TOL["rel_lp"], thr, reduced=False)
    fixed = np.flatnonzero(fix_in)
    return np.flatnonzero(~(fix_in | fix_out)), fixed, c - float(w[fixed].sum())


@dataclass
class Split:
    """Items split around the break item by two efficiency thresholds.

    ``top``: the positions whose efficiency is above the upper threshold
    (ascending positions, unsorted by efficiency); ``mid``: those between the
    thresholds, in efficiency order (descending, ties by ascending position);
    ``low``: those below the lower threshold (ascending positions, or in
    efficiency order once ``sort_low`` has run). The items of ``top`` weigh
    at most the capacity, with ``mid`` more: the break item is ``mid[b]``.
    No efficiency appears in two pieces, so the pieces, each sorted, are the
    full efficiency order (``order``).
    """

    top: np.ndarray
    mid: np.ndarray
    low: np.ndarray
    b: int
    low_sorted: bool = False

    def sort_low(self, eff: np.ndarray) -> None:
        """Put ``low`` in efficiency order (ties by position)."""
        if not self.low_sorted:
            self.low = self.low[descending(eff[self.low])]
            self.low_sorted = True

    def order(self, eff: np.ndarray) -> np.ndarray:
        """Every position by descending efficiency ``eff``, ties by ascending
        position, as ``descending(eff)``: the two outer pieces sorted."""
        top = self.top[descending(eff[self.top])] if self.top.size > 1 else self.top
        self.sort_low(eff)
        return np.concatenate((top, self.mid, self.low))


def split_at_break(w: np.ndarray, eff: np.ndarray, c: float) -> Split:
    """A ``Split`` of items with weights ``w`` (float64 integers with exact
    sums, more than ``c`` in all) and efficiencies ``eff``. O(n) plus the
    sort of the items between the thresholds (about an eighth of them; all
    of them when two tries at the thresholds miss the break item)."""
    n = w.size
    m = min(n, SAMPLE)
    step = n // m
    at = np.arange(0, step * m, step)
    s_eff, s_w = eff[at], w[at]
    so = descending(s_eff)
    crossing = np.cumsum(s_w[so]) * (float(w.sum()) / float(s_w.sum()))  # the sample's estimate of the prefix weight
    j = int(np.searchsorted(crossing, c, side="right"))
    for share in (MARGIN, 4 * MARGIN, None):
        g = max(16, int(share * m)) if share is not None else m  # None: every item between
        hi = float(s_eff[so[j - g]]) if j - g >= 0 else math.inf
        lo = float(s_eff[so[j + g]]) if j + g < m else -math.inf
        above = eff > hi
        room = c - float(w[above].sum())  # integer sums below 2**53: exact
        if room < 0:
            continue
        below = eff < lo
        between = ~(above | below)
        mid = np.flatnonzero(between)
        mid = mid[descending(eff[mid])]
        prefix = np.cumsum(w[mid])
        if mid.size == 0 or prefix[-1] <= room:
            continue
        b = int(np.searchsorted(prefix, room, side="right"))
        return Split(np.flatnonzero(above), mid, np.flatnonzero(below), b)
    raise ValueError("split_at_break: the items must weigh more than the capacity")


def core_of_split(w: np.ndarray, v: np.ndarray, c: float, split: Split, tol: float):
    """(the items the greedy bound leaves free, the items it fixes in, the
    capacity those leave) for items (w, v) (float64, w > 0, integer weights
    with exact sums) split at the break (``split_at_break``) within capacity
    c. The break solution is ``top`` and ``mid[:b]``, completed greedily in
    efficiency order: through the rest of ``mid``, then through the items of
    ``low`` that still fit, sorted (the others never would: the room only
    shrinks); the same set as the greedy completion in the full order. The
    caller solves the free items alone when they are few (``worth_it``)."""
    n = w.size
    head = split.mid[:split.b]
    room = c - float(w[split.top].sum()) - float(w[head].sum())
    added, room = _greedy_fill(w, v, split.mid[split.b:], room)  # in efficiency order already
    fits = w[split.low] <= room
    if 2 * int(np.count_nonzero(fits)) >= split.low.size:
        # Most of them: sort them all, once (the full order, if needed, reuses it).
        split.sort_low(v / w)
        low = split.low[w[split.low] <= room]
    else:
        low = split.low[fits]
        low = low[descending(v[low] / w[low])]
    more, _ = _greedy_fill(w, v, low, room)
    added += more
    # Sums of n terms are within n 2**-53 of their magnitude: LB stays reachable.
    # (Not np.dot: at n=10^5 OpenBLAS hands a dot product to worker threads that
    # then spin, a second core busy for the rest of the solve.)
    lower = (float(v[split.top].sum()) + float(v[head].sum()) + added) * (1.0 - n * 2.0**-52)
    brk = split.mid[split.b]
    return _fixed(w, v, c, float(v[brk] / w[brk]), lower - tol)


def _greedy_fill(w, v, items, room):
    """The items (positions, in the order given) that still fit ``room``, one
    after the other: (their value, the room they leave)."""
    x = np.zeros(items.size, dtype=np.uint8)
    ws = np.ascontiguousarray(w[items])
    added = _sparse.greedy_fill(ws, np.ascontiguousarray(v[items]), 0, room, x)
    return added, room - float(ws[x.view(bool)].sum())


def worth_it(free: np.ndarray, n: int, share: float | None = None) -> bool:
    """Whether a core of these free items (of n) is solved alone: some item
    is fixed and at most ``share`` (default ``CORE_SHARE``) stay free."""
    return free.size < n and free.size <= (CORE_SHARE if share is None else share) * n


def decided(w, v, c, lam, mu, k, rel, thr, reduced=True):
    """Items a Lagrangian bound decides against ``thr``. With d = v - lam w - mu,
    L = lam c + mu k + sum max(0, d) bounds every set the multipliers cover
    (k: its item count, or the count term's k); leaving item i out caps the
    value at L - max(0, d_i), taking it at L + min(0, d_i). Returns (d, or
    None unless ``reduced``; the items whose exclusion falls below ``thr``,
    those whose inclusion does, as bool masks), with a rounding allowance of
    ``rel`` times the magnitudes (``_fixing``: one compiled pass)."""
    n = w.shape[0]
    d = np.empty(n) if reduced else None
    fix_in = np.zeros(n, dtype=np.uint8)
    fix_out = np.zeros(n, dtype=np.uint8)
    fix_by_bound(w, v, c, lam, mu, k, rel, thr, fix_in, fix_out, d)
    return d, fix_in.view(bool), fix_out.view(bool)
