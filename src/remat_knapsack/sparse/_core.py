"""The core: the items a cheap bound leaves undecided, solved alone.

Combo (Martello, Pisinger & Toth, Management Science 45, 1999) and the core
algorithms before it solve only the items around the break item; bounds fix
the rest. The sparse kernel does that first on n >= ``MIN_ITEMS`` items:

0. **The break item without a full sort** (``split_at_break``), as combo
   does: a sample of the efficiencies places two thresholds around it, the
   items above them are only summed and those between them sorted
   (``Split``). Below ``SPLIT_FROM`` items, one full sort first
   (``sorted_split``).
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

Complexity: from ``SPLIT_FROM`` items, O(n) expected, plus the sort of the
items between the split's thresholds and of the low items that may join the
greedy set; below it, one sort, O(n log n). Memory: O(n).

>>> import numpy as np
>>> w = np.array([10.0, 10.0, 10.0, 10.0] * 8)
>>> v = np.array([30.0, 11.0, 10.0, 1.0] * 8)
>>> split = split_at_break(w, v / w, 150.0)
>>> idx, fixed_in, room = core_of_split(w, v, 150.0, split, 0.0)
>>> len(fixed_in), len(idx), room  # the 30s in, the 10s and 1s out: the 11s are the core
(8, 8, 70.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _sparse, _split
from ._fixing import fix_by_bound
from ._order import descending

__all__ = ["core_of_split", "split_at_break", "sorted_split", "Split", "worth_it", "decided", "MIN_ITEMS",
           "CORE_SHARE", "LOOSE", "SPLIT_FROM"]

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
#: From this many items the kernel splits around the break item
#: (``split_at_break``); below it, it sorts them all first (``sorted_split``).
SPLIT_FROM = 1 << 15


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
        if self.top.size == 0 and self.low.size == 0:  # ``sorted_split``: already the full order
            return self.mid
        top = self.top[descending(eff[self.top])] if self.top.size > 1 else self.top
        self.sort_low(eff)
        return np.concatenate((top, self.mid, self.low))


def sorted_split(w: np.ndarray, eff: np.ndarray, c: float) -> Split:
    """A ``Split`` of items with weights ``w`` (float64 integers with exact
    sums, more than ``c`` in all) and efficiencies ``eff`` with every item
    in ``mid``, in efficiency order (``_order.descending``), and ``top`` and
    ``low`` empty; the break item is ``mid[b]``. The core from it is the
    same as from ``split_at_break`` (the same greedy set, the same bound).
    Below ``SPLIT_FROM`` items one sort costs about what the split does, and
    where the core fixes few items the kernel needs the full order anyway:
    at n = 10^4 a sort and the core took 57 + 44 us, the split, the core and
    the pieces' order 150-166 us."""
    order = descending(np.ascontiguousarray(eff, dtype=np.float64))
    b = _split.break_position(np.ascontiguousarray(w, dtype=np.float64), order, float(c))
    if b >= order.size:
        raise ValueError("sorted_split: the items must weigh more than the capacity")
    empty = np.empty(0, dtype=np.intp)
    return Split(empty, order, empty, b, low_sorted=True)


def split_at_break(w: np.ndarray, eff: np.ndarray, c: float) -> Split:
    """A ``Split`` of items with weights ``w`` (float64 integers with exact
    sums, more than ``c`` in all) and efficiencies ``eff``. O(n) plus the
    sort of the items between the thresholds (about an eighth of them; all
    of them when two tries at the thresholds miss the break item); one
    compiled call (``_split.split``)."""
    pieces = _split.split(np.ascontiguousarray(w, dtype=np.float64), np.ascontiguousarray(eff, dtype=np.float64),
                          float(c), SAMPLE, MARGIN)
    if pieces is None:
        raise ValueError("split_at_break: the items must weigh more than the capacity")
    return Split(*pieces)


def core_of_split(w: np.ndarray, v: np.ndarray, c: float, split: Split, tol: float):
    """(the items the greedy bound leaves free, the items it fixes in, the
    capacity those leave) for items (w, v) (float64, w > 0, integer weights
    with exact sums) split at the break (``split_at_break``) within capacity
    c. The break solution is ``top`` and ``mid[:b]``, completed greedily in
    efficiency order: through the rest of ``mid``, then through the items of
    ``low`` that still fit, sorted (the others never would: the room only
    shrinks); the same set as the greedy completion in the full order. When
    most of ``low`` fits, all of it is sorted, once, and ``split`` keeps that
    order (``Split.order`` reuses it). Dantzig's bound at the break item
    against the greedy set's value (less ``tol``) then fixes the rest
    (``decided``). One compiled call (``_split.core``). The caller solves
    the free items alone when they are few (``worth_it``)."""
    free, fixed, room, low = _split.core(np.ascontiguousarray(w, dtype=np.float64),
                                         np.ascontiguousarray(v, dtype=np.float64), float(c), split.top,
                                         split.mid, split.b, split.low, split.low_sorted, tol, _TOL["rel_lp"])
    if low is not None:
        split.low, split.low_sorted = low, True
    return free, fixed, room


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
