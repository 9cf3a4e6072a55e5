"""Items on one or two parallel value lines: an upper bound by class counts.

Private; used by ``sparse._kernel`` for integer instances.

When every item lies on one of at most two parallel lines q v = p w + e_t
(integers p, q > 0; e_t one of two values), a set X of a_t items of class t
is worth

    v(X) = (p w(X) + sum_t e_t a_t) / q  <=  (p c + sum_t e_t a_t) / q,

and a_t items of class t weigh at least the a_t lightest of them. So

    OPT <= floor((p c + max { e_A a + e_B b : lightA(a) + lightB(b) <= c }) / q),

the maximum over count pairs taken exactly in O(n) (the largest b for each a
by a search on prefix sums). Pisinger's *multiple strongly correlated* items
(v = w + 3R/10 when 6 | w, else w + 2R/10) are of this kind, and there
this bound is much tighter than the LP and single-count bounds
(docs/algorithms.md). It generalises the
cardinality bound of strongly correlated items (one line) to two lines; it
is a combinatorial cousin of the surrogate relaxation with a cardinality
constraint of Martello, Pisinger and Toth (1999).

Everything is exact: the slope comes from two items as a reduced fraction,
and the bound is only formed when every product involved is an integer below
2**53 (exact in float64).

The canonical pass asks the same of the items below a position k within a
capacity j, once per decide run it would otherwise start: ``Below`` sorts
the classes by weight once, and each question filters them in O(n), in
numpy here and compiled in the pass (``_class_counts.pxd``, tested
against this).

>>> import numpy as np
>>> w = np.array([2.0, 3.0, 6.0, 12.0])
>>> v = w + np.array([1.0, 1.0, 2.0, 2.0])  # two lines, slope 1
>>> lines = find_lines(w, v)
>>> lines.p, lines.q, lines.levels
(1, 1, (1.0, 2.0))
>>> lines.bound(w, v, 11.0)  # {2, 3, 6}: 11 + 1 + 1 + 2
15
>>> Below(lines, w, v)(3, 11.0)  # only items 0, 1, 2: all fit, 11 + 4
15
>>> Below(lines, w, v)(2, 11.0)  # only items 0, 1: they weigh 5, so 5 + 2
7
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _fit

EXACT = 2.0**53  # integers below this are exact in float64
PROBES = 3  # items of distinct weights near the break, whose pairs propose a slope
SCAN = 16  # items looked at to find them
SAMPLE = 64  # items checked first, before the whole arrays


@dataclass(frozen=True)
class Lines:
    """Every item satisfies q v = p w + e with e in ``levels`` (one or two values)."""

    p: int
    q: int
    levels: tuple[float, ...]

    def members(self, w: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
        """The positions of each class's items (one array per level)."""
        pos = np.arange(w.shape[0])
        if len(self.levels) == 1:
            return [pos]
        first = self.q * v - self.p * w == self.levels[0]
        return [pos[first], pos[~first]]

    def bound(self, w: np.ndarray, v: np.ndarray, c: float) -> int:
        """The class-count bound on every set of these items within ``c``."""
        return _best(self, [np.sort(w[m]) for m in self.members(w, v)], math.floor(c))


def find_lines(w: np.ndarray, v: np.ndarray, near: int = 0) -> Lines | None:
    """The (at most two) parallel lines all items lie on, or None.

    ``w``, ``v``: float64 arrays (v > 0, w > 0); only integer ones can pass.
    ``near``: an index around which to look for the slope (the break item in
    efficiency order: it and its neighbours sit on the lines that matter).
    O(n) per slope tried, at most three slopes; under a microsecond when a
    sample of the items already has three levels for each (the candidates
    and that test in one compiled call, ``_fit.line_slopes``).
    """
    for p, q in _fit.line_slopes(w, v, near, SCAN, PROBES, SAMPLE):
        lines = _lines_along(w, v, p, q)
        if lines is not None:
            return lines
    return None


def _lines_along(w: np.ndarray, v: np.ndarray, p: int, q: int) -> Lines | None:
    """The lines of slope p / q, if they hold every item (at most two)."""
    if q * float(v.max()) >= EXACT or p * float(w.max()) >= EXACT:
        return None
    if not (np.array_equal(w, np.floor(w)) and np.array_equal(v, np.floor(v))):
        return None  # the lines need integer weights and values
    e = q * v - p * w  # exact: both products are integers below 2**53
    e0 = float(e[0])
    other = e != e0
    if not other.any():
        levels: tuple[float, ...] = (e0,)
    else:
        e1 = float(e[np.argmax(other)])
        if not np.all(e[other] == e1):
            return None  # three lines or more
        levels = (e0, e1)
    if p * float(w.sum()) + max(abs(x) for x in levels) * w.shape[0] >= EXACT:
        return None  # the bound's sums would not be exact
    return Lines(p, q, levels)


class Below:
    """The class-count bound of the items below a position, for many positions.

    Built once over fixed arrays ``w``, ``v`` (all on ``lines``): each class
    sorted by weight, with the items' positions. ``below(k, j)`` bounds every
    set of items with position < k within capacity j, in O(n) (a filter and
    a prefix sum per class, no sort).
    """

    def __init__(self, lines: Lines, w: np.ndarray, v: np.ndarray) -> None:
        self.lines = lines
        orders = [m[np.argsort(w[m], kind="stable")] for m in lines.members(w, v)]
        self.sorted_w = [w[o] for o in orders]
        self.sorted_pos = orders

    def __call__(self, k: int, j: float) -> int:
        below = [sw[sp < k] for sw, sp in zip(self.sorted_w, self.sorted_pos, strict=True)]
        return _best(self.lines, below, math.floor(j))


def _prefix(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.shape[0] + 1)
    np.cumsum(x, out=out[1:])
    return out


def _best(lines: Lines, sorted_w: list[np.ndarray], cap: int) -> int:
    """floor(max (p W + sum_t e_t a_t) / q) over count vectors a: W is the
    capacity, or the heaviest a_t items of each class if they weigh less, and
    the lightest a_t items must fit. ``sorted_w``: each class's weights,
    ascending. For each count of the first class the most of the second that
    fit is best (its term only grows), so one search per count suffices."""
    light = [_prefix(sw) for sw in sorted_w]
    heavy = [_prefix(sw[::-1]) for sw in sorted_w]
    e = [x if x > 0 else 0.0 for x in lines.levels]  # a class below its line adds no count
    a = np.arange(int(np.searchsorted(light[0], cap, side="right")))  # lightA(a) <= cap
    if len(light) == 1:
        fill, value = heavy[0][a], e[0] * a
    else:
        b = np.searchsorted(light[1], cap - light[0][a], side="right") - 1
        fill, value = heavy[0][a] + heavy[1][b], e[0] * a + e[1] * b
    # exact: every term is an integer below 2**53 (``_lines_through``)
    return int((lines.p * np.minimum(fill, cap) + value).max()) // lines.q
