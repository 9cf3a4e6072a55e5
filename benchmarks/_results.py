"""Where the benchmark scripts keep their measurements: one current CSV per suite.

Every script in ``benchmarks/`` writes (and rewrites) its own file in
``benchmarks/results/`` unless told otherwise (``--out``); the documentation's
benchmark page reads its tables from those files, so a rerun updates the docs.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def default(name: str) -> str:
    """The default output path of a suite: ``benchmarks/results/<name>.csv``."""
    return str(RESULTS / f"{name}.csv")


def write_rows(rows: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> str:
    """Write dict rows as CSV (columns in first-seen order), creating the directory; returns the path."""
    rows = list(rows)
    fields: list[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)
