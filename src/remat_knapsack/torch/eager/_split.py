"""The split across units: which breakpoint of each unit's frontier, so that the step's peak fits.

Each unit's :class:`Menu` holds every breakpoint of its exact runtime-memory
frontier (:func:`remat_knapsack.tradeoff.frontier`) and their lower convex
hull. :class:`Search` starts from every unit at full recomputation, walks the
moves along the hulls in order of seconds saved per byte, and finds by
bisection the last plan of that walk whose step peak
(:class:`~._timeline.Timeline`) fits; from it, each unit in turn moves to the
furthest breakpoint of its whole frontier that still fits (a gallop, then a
bisection), until none moves. Exact per unit; across units a Lagrangian walk
and a descent, not a proof of optimality: the peak is a maximum over the step,
not a sum.

May import: numpy, :mod:`remat_knapsack.tradeoff` and ``._timeline``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...tradeoff import frontier
from ._timeline import Timeline, UnitItems

__all__ = ["Entry", "Menu", "Search", "lower_hull"]


@dataclass
class Entry:
    """One point of a unit's menu: bytes held for the backward, seconds replayed, ops saved (None: not checkpointed)."""

    nbytes: int
    seconds: float
    saved: np.ndarray | None


class Menu:
    """One unit's choices: every breakpoint of its exact frontier, and their lower convex hull.

    ``entries``: "checkpointed, saving the best ops for these bytes", from
    full recomputation (forced and zero-byte ops alone) to the frontier's
    end, then "not checkpointed" (no replay, every byte kept), keeping only
    those that replay less than every entry with fewer bytes. ``hull``:
    their positions on the lower convex hull. Masks are solved on first use.
    """

    def __init__(self, items: UnitItems) -> None:
        off = Entry(int(items.kept_bytes.sum()), 0.0, None)
        self.entries = [off]
        self.hull = [0]
        if items.replay_at < 0:
            return
        self._items = items
        self._free = items.forced | (items.eligible & (items.weights == 0))  # saved in every frontier entry
        self._base = int(items.weights[items.forced].sum())
        total = items.total_seconds - float(items.seconds[self._free].sum())
        self._candidates = np.flatnonzero(items.eligible & ~self._free & (items.seconds > 0) & (items.weights > 0))
        # full recomputation: only what must be saved, so that a unit saving nothing runs plain checkpointing
        points = [Entry(self._base, items.total_seconds - float(items.seconds[items.forced].sum()),
                         items.forced.copy())]  # fmt: skip
        self._curve = None
        if self._candidates.size:
            self._curve = frontier(items.weights[self._candidates].astype(np.float64),
                                   items.seconds[self._candidates], scale=None)  # fmt: skip
            points += [Entry(self._base + int(m), total - v, None)
                       for m, v in zip(self._curve.memory, self._curve.value)]  # fmt: skip
        points.append(off)
        points.sort(key=lambda e: (e.nbytes, e.seconds))
        self.entries = []
        for p in points:  # drop the dominated: more bytes, no less replay
            if not self.entries or p.seconds < self.entries[-1].seconds:
                self.entries.append(p)
        hull_entries = {id(e) for e in lower_hull(self.entries)}
        self.hull = [i for i, e in enumerate(self.entries) if id(e) in hull_entries]

    def saved(self, position: int) -> np.ndarray | None:
        entry = self.entries[position]
        if entry.saved is None and entry.seconds > 0:
            chosen = self._candidates[self._curve.selection(entry.nbytes - self._base)]
            entry.saved = self._free.copy()
            entry.saved[chosen] = True
        return entry.saved


def lower_hull(points: list[Entry]) -> list[Entry]:
    """Points on the lower-left convex hull, by bytes ascending and seconds descending."""
    points = sorted(points, key=lambda e: (e.nbytes, e.seconds))
    hull: list[Entry] = []
    for p in points:
        if hull and p.seconds >= hull[-1].seconds:
            continue  # more bytes, no fewer seconds: dominated
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b is above the segment a-p: drop it (collinear points stay: more choices, same slope)
            if (b.seconds - a.seconds) * (p.nbytes - a.nbytes) > (p.seconds - a.seconds) * (b.nbytes - a.nbytes):
                hull.pop()
            else:
                break
        hull.append(p)
    return hull


class Search:
    """The cheapest plan found whose modelled peak fits: a walk along the hulls, then a descent on every breakpoint.

    Each unit's effect on the step is computed once per menu position and
    reused (:meth:`Timeline.change`), so a plan's peak costs one pass over
    the step.
    """

    def __init__(self, timeline: Timeline, menus: list[Menu], limit: int) -> None:
        self.timeline, self.menus, self.limit = timeline, menus, limit
        self._changes: dict[tuple[int, int], Any] = {}

    def choice(self, positions: list[int]) -> list[np.ndarray | None]:
        return [menu.saved(p) for menu, p in zip(self.menus, positions)]

    def cost(self, positions: list[int]) -> float:
        return sum(menu.entries[p].seconds for menu, p in zip(self.menus, positions))

    def peak(self, positions: list[int]) -> int:
        changes = []
        for unit, (menu, p) in enumerate(zip(self.menus, positions)):
            key = (unit, p)
            if key not in self._changes:
                self._changes[key] = self.timeline.change(unit, menu.saved(p))
            changes.append(self._changes[key])
        return self.timeline.peak_of(changes)

    def fits(self, positions: list[int]) -> bool:
        return self.peak(positions) <= self.limit

    def run(self) -> tuple[list[int], int]:
        """(positions, peak); when nothing fits, the smallest plan found and its peak."""
        positions = [0] * len(self.menus)
        if not self.fits(positions):
            # full recomputation is not always the smallest: a unit's replay can add more than it frees
            positions = self._smallest()
            if not self.fits(positions):
                return positions, self.peak(positions)
            best = self._descend(positions)
            return best, self.peak(best)
        best = self._descend(self._walk(list(positions)))
        return best, self.peak(best)

    def _smallest(self) -> list[int]:
        """A plan of small peak: from nothing checkpointed, each unit in turn at its hull point of least peak."""
        positions = [len(menu.entries) - 1 for menu in self.menus]
        for _ in range(2):
            for unit, menu in enumerate(self.menus):
                peaks = {}
                for p in menu.hull:
                    trial = list(positions)
                    trial[unit] = p
                    peaks[p] = self.peak(trial)
                positions[unit] = min(peaks, key=lambda p: (peaks[p], -p))
        full = [0] * len(self.menus)
        return full if self.peak(full) <= self.peak(positions) else positions

    def _walk(self, positions: list[int]) -> list[int]:
        """Moves along the units' hulls, most seconds saved per byte first: the last plan of that walk that fits.

        Each move adds bytes, so the plans' peaks rise along the walk (a
        unit's replay spike can fall, so not strictly): bisection finds the
        last that fits in a logarithmic number of peaks; the descent then
        takes what it left.
        """
        moves = []  # (minus seconds saved per byte, unit, to position)
        for unit, menu in enumerate(self.menus):
            for a, b in zip(menu.hull, menu.hull[1:]):
                ea, eb = menu.entries[a], menu.entries[b]
                moves.append(((eb.seconds - ea.seconds) / max(1, eb.nbytes - ea.nbytes), unit, b))
        moves.sort()

        def after(k: int) -> list[int]:
            plan = list(positions)
            for _, unit, p in moves[:k]:
                plan[unit] = p
            return plan

        low, high = 0, len(moves)  # after(low) fits
        while low < high:
            middle = (low + high + 1) // 2
            if self.fits(after(middle)):
                low = middle
            else:
                high = middle - 1
        return after(low)

    def _descend(self, best: list[int]) -> list[int]:
        """Per unit in turn, the furthest breakpoint (least replay) that still fits; until no unit moves.

        A gallop from the unit's position (one step, two, four, ...) and a
        bisection of the last gap: few probes when the unit moves little,
        one when it cannot move.
        """
        moved = True
        while moved:
            moved = False
            for unit, menu in enumerate(self.menus):
                last = len(menu.entries) - 1

                def fits_at(p: int, unit: int = unit) -> bool:
                    trial = list(best)
                    trial[unit] = p
                    return self.fits(trial)

                low, step = best[unit], 1  # low fits
                while low < last and fits_at(min(last, low + step)):
                    low, step = min(last, low + step), 2 * step
                high = min(last, low + step) - 1 if low < last else last  # low + step does not fit
                while low < high:
                    middle = (low + high + 1) // 2
                    if fits_at(middle):
                        low = middle
                    else:
                        high = middle - 1
                if low != best[unit]:
                    best[unit], moved = low, True
        return best
