"""What a budget sweep measured: :class:`BudgetPoint` rows and the :class:`SweepReport` over them.

Torch-free, so reports can be built, read back from CSV, queried and plotted
without PyTorch; :func:`remat_knapsack.torch.sweep` fills them.

>>> from remat_knapsack.sweep_report import BudgetPoint, SweepReport
>>> MiB = 1 << 20
>>> r = SweepReport([BudgetPoint(0.0, 110 * MiB, 0.30), BudgetPoint(0.3, 52 * MiB, 0.25),
...                  BudgetPoint(1.0, 86 * MiB, 0.20)])
>>> r.best(60 * MiB).budget, r.best(100 * MiB).budget, r.best(10 * MiB)
(0.3, 1.0, None)
>>> r.non_monotonic
[(0.0, 0.3)]
>>> parse_bytes("1.5GiB"), parse_bytes("64 MiB"), parse_bytes("1000")
(1610612736, 67108864, 1000)
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["BudgetPoint", "SweepReport", "parse_bytes"]

MiB = 1 << 20
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1000, "m": MiB, "mib": MiB, "mb": 1000**2,
          "g": 1 << 30, "gib": 1 << 30, "gb": 1000**3}  # fmt: skip


def parse_bytes(text: str | int | float) -> int:
    """Bytes from ``"123"``, ``"64MiB"``, ``"1.5 GiB"`` (also KiB, kB, MB, GB); ValueError naming the text."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"cannot read {text!r} as a size: use bytes, or a number with MiB or GiB")
        value, unit = float(m.group(1)), m.group(2).lower()
    out = value * _UNITS[unit]
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"size {text!r} must be finite and >= 0")
    return int(round(out))


@dataclass(frozen=True)
class BudgetPoint:
    """One budget of a sweep.

    Attributes
    ----------
    budget : float
        ``activation_memory_budget``, in [0, 1].
    peak_bytes : int or None
        Highest memory allocated during one training step above what was
        allocated when the step began (``torch.cuda.max_memory_allocated`` on
        CUDA; on CPU the running sum of the allocator's events from
        ``torch.profiler``, ``profile_memory=True``).
    step_seconds : float or None
        Median wall time of one step (forward, loss, backward).
    saved_bytes : int or None
        Bytes of the distinct storages saved for backward during one step, as
        ``torch.autograd.graph.saved_tensors_hooks`` sees them (parameters and
        inputs the graphs save included).
    predicted_saved : float or None
        The knapsacks' saved normalised memory, summed over graphs (0 when no
        knapsack ran: PyTorch skips it at budgets 0 and 1).
    graphs : int or None
        Joint graphs whose partition went through the knapsack.
    solve_seconds : float or None
        Time in the knapsack solver over those graphs.
    error : str or None
        Why this budget has no measurement (e.g. the compile failed).
    """

    budget: float
    peak_bytes: int | None = None
    step_seconds: float | None = None
    saved_bytes: int | None = None
    predicted_saved: float | None = None
    graphs: int | None = None
    solve_seconds: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Measured: no error and a peak and a step time."""
        return self.error is None and self.peak_bytes is not None and self.step_seconds is not None


_FIELDS = [f.name for f in fields(BudgetPoint)]
_TYPES = {"budget": float, "peak_bytes": int, "step_seconds": float, "saved_bytes": int,
          "predicted_saved": float, "graphs": int, "solve_seconds": float, "error": str}  # fmt: skip


class SweepReport:
    """The points of a sweep, in budget order, with what to read off them.

    Parameters
    ----------
    points : iterable of BudgetPoint
        Sorted by budget here.
    **meta
        Free-form settings shown by :meth:`table` (backend, solver, device, ...).
    """

    def __init__(self, points: Iterable[BudgetPoint], **meta: Any) -> None:
        self.points: list[BudgetPoint] = sorted(points, key=lambda p: p.budget)
        self.meta = dict(meta)

    def __repr__(self) -> str:
        return f"SweepReport({len(self.points)} points, {self.meta})"

    def best(self, max_peak_bytes: float) -> BudgetPoint | None:
        """The fastest measured point whose peak is at most ``max_peak_bytes``, else None.

        Ties on step time go to the lower peak, then the lower budget. O(points).
        """
        limit = float(max_peak_bytes)
        if math.isnan(limit) or limit < 0:
            raise ValueError(f"max_peak_bytes must be a number >= 0, got {max_peak_bytes!r}")
        fits = [p for p in self.points if p.ok and p.peak_bytes <= limit]  # type: ignore[operator]
        if not fits:
            return None
        return min(fits, key=lambda p: (p.step_seconds, p.peak_bytes, p.budget))

    @property
    def non_monotonic(self) -> list[tuple[float, float]]:
        """(lower_budget, higher_budget) of consecutive measured points where the lower budget peaked higher.

        Consecutive pairs mark every stretch where the peak falls while the
        budget rises; any two points out of order contain at least one.
        """
        ok = [p for p in self.points if p.ok]
        return [(a.budget, b.budget) for a, b in zip(ok, ok[1:]) if a.peak_bytes > b.peak_bytes]  # type: ignore[operator]

    # ------------------------------------------------------------------ I/O

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """One row per point, the :class:`BudgetPoint` fields as columns (empty when missing)."""
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=_FIELDS)
            w.writeheader()
            for p in self.points:
                w.writerow({k: "" if v is None else v for k, v in asdict(p).items()})

    @classmethod
    def read_csv(cls, path: str | os.PathLike[str], **meta: Any) -> SweepReport:
        """The report :meth:`to_csv` wrote."""
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        points = []
        for row in rows:
            kw = {k: (None if row.get(k, "") == "" else _TYPES[k](row[k])) for k in _FIELDS}
            points.append(BudgetPoint(**kw))
        return cls(points, **meta)

    def table(self, max_peak_bytes: float | None = None) -> str:
        """A Markdown table (MiB, ms); the point :meth:`best` picks for ``max_peak_bytes`` is starred."""
        pick = self.best(max_peak_bytes) if max_peak_bytes is not None else None
        bad = {b for pair in self.non_monotonic for b in pair}
        head = "| budget | peak MiB | step ms | saved MiB | predicted saved | graphs | solve ms | note |"
        lines = [head, "|" + "---|" * 8]
        for p in self.points:
            if p.error is not None:
                note = "error: " + p.error.splitlines()[0][:80]
            else:
                note = ", ".join(n for n, on in (("best", p is pick), ("non-monotonic", p.budget in bad)) if on)
            lines.append(
                f"| {p.budget:g} | {_num(p.peak_bytes, MiB, '.1f')} | {_num(p.step_seconds, 1e-3, '.1f')} "
                f"| {_num(p.saved_bytes, MiB, '.1f')} | {_num(p.predicted_saved, 1, '.4f')} "
                f"| {'' if p.graphs is None else p.graphs} | {_num(p.solve_seconds, 1e-3, '.2f')} | {note} |"
            )
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str], max_peak_bytes: float | None = None) -> None:
        """A PNG: peak and saved bytes, and step time, against the budget.

        Non-monotonic stretches of the peak are drawn in red; with
        ``max_peak_bytes`` the limit is a dashed line and :meth:`best`'s pick
        is starred. Needs matplotlib.
        """
        try:
            import matplotlib

            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError as exc:
            raise ImportError("SweepReport.plot needs matplotlib: pip install matplotlib") from exc
        ok = [p for p in self.points if p.ok]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        b = [p.budget for p in ok]
        ax1.plot(b, [p.peak_bytes / MiB for p in ok], "o-", label="peak during a step")  # type: ignore[operator]
        saved = [(p.budget, p.saved_bytes / MiB) for p in ok if p.saved_bytes is not None]
        if saved:
            ax1.plot(*zip(*saved), "s--", label="saved for backward")
        peak = {p.budget: p.peak_bytes / MiB for p in ok}  # type: ignore[operator]
        for i, (lo, hi) in enumerate(self.non_monotonic):
            ax1.plot([lo, hi], [peak[lo], peak[hi]], "r-", lw=3, alpha=0.6,
                     label="peak falls as budget rises" if i == 0 else None)  # fmt: skip
        pick = self.best(max_peak_bytes) if max_peak_bytes is not None else None
        if max_peak_bytes is not None:
            ax1.axhline(max_peak_bytes / MiB, color="gray", ls=":", label=f"limit {max_peak_bytes / MiB:.1f} MiB")
        if pick is not None:
            ax1.plot([pick.budget], [pick.peak_bytes / MiB], "*", ms=16, color="gold", mec="k",  # type: ignore[operator]
                     label=f"best(): budget {pick.budget:g}")  # fmt: skip
            ax2.plot([pick.budget], [pick.step_seconds * 1e3], "*", ms=16, color="gold", mec="k")  # type: ignore[operator]
        for p in self.points:
            if p.error is not None:
                ax1.axvline(p.budget, color="r", ls=":", alpha=0.5)
        ax1.set_xlabel("activation_memory_budget")
        ax1.set_ylabel("MiB")
        ax1.legend(fontsize=8)
        ax1.grid(alpha=0.3)
        ax2.plot(b, [p.step_seconds * 1e3 for p in ok], "o-", color="C2")  # type: ignore[operator]
        ax2.set_xlabel("activation_memory_budget")
        ax2.set_ylabel("median step, ms")
        ax2.grid(alpha=0.3)
        title = ", ".join(f"{k} {v}" for k, v in self.meta.items() if v is not None)
        if title:
            fig.suptitle(title, fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


def _num(value: float | None, unit: float, fmt: str) -> str:
    return "" if value is None else format(value / unit, fmt)


def check_budgets(budgets: Sequence[Any] | None) -> list[float]:
    """Budgets as sorted floats in [0, 1]; ValueError naming the first bad one. Default 0.0, 0.1, ..., 1.0."""
    if budgets is None:
        return [k / 10 for k in range(11)]
    if isinstance(budgets, (str, bytes)) or not hasattr(budgets, "__iter__"):
        raise ValueError(f"budgets must be a sequence of numbers in [0, 1], got {budgets!r}")
    out = []
    for i, b in enumerate(budgets):
        try:
            x = float(b)
        except (TypeError, ValueError):
            raise ValueError(f"budgets[{i}] = {b!r} is not a number") from None
        if not 0.0 <= x <= 1.0:  # also rejects NaN
            raise ValueError(f"budgets[{i}] = {b!r} is outside [0, 1]")
        out.append(x)
    if not out:
        raise ValueError("budgets is empty")
    if len(set(out)) != len(out):
        raise ValueError(f"budgets has duplicates: {sorted(out)}")
    return sorted(out)
