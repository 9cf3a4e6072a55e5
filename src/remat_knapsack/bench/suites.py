"""The instance grid: paper-like sizes, Pisinger's classes, recorded files.

Each instance comes with ``meta`` (``suite``, ``group``, ``n``, ``seed``,
``instance``) that the report pivots on: one table column per ``group``.

Pisinger's instances have integer weights; the grid divides them by ``scale``
so that every solver, PyTorch's (fixed scale 10^4) included, quantises them back
to exactly the generated integers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import instances as gen

__all__ = ["paper_suite", "class_suite", "recorded_suite", "Entry"]

Entry = tuple[dict[str, Any], dict[str, Any]]  # (instance, meta)


def paper_suite(sizes: Iterable[int], repeats: int) -> list[Entry]:
    out = []
    for n in sizes:
        for seed in range(repeats):
            inst = gen.paper(n, seed).as_dict()
            out.append((inst, _meta("paper", f"n={n}", n, seed, inst, series="paper")))
    return out


def class_suite(classes: Iterable[str], sizes: Iterable[int], repeats: int, R: int, scale: float) -> list[Entry]:
    out = []
    for cls in classes:
        for n in sizes:
            for seed in range(repeats):
                inst = gen.pisinger(cls, n, R=R, seed=seed).as_dict()
                inst["memory"] = [w / scale for w in inst["memory"]]
                inst["max_memory"] = inst["max_memory"] / scale
                out.append((inst, _meta("classes", f"{cls} n={n}", n, seed, inst, series=cls)))
    return out


def recorded_suite(path: str, docs: list[dict[str, Any]]) -> list[Entry]:
    """Instances read from a file (``record_instances`` JSONL or any instance file)."""
    out = []
    for k, doc in enumerate(docs):
        label = str(doc.get("graph") or doc.get("name") or f"{path}#{k}")
        inst = {key: doc[key] for key in ("memory", "runtimes", "max_memory")}
        inst["name"] = label
        out.append((inst, _meta("recorded", label, len(inst["memory"]), k, inst)))
    return out


def _meta(suite: str, group: str, n: int, seed: int, inst: dict[str, Any], series: str | None = None) -> dict[str, Any]:
    """``series``: instances of one generator at growing n (a solver that timed out is not run at larger n)."""
    return {"suite": suite, "group": group, "n": n, "seed": seed, "instance": inst.get("name", ""), "series": series}
