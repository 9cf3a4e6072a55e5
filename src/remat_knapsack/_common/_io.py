"""Reading instance files: one JSON object, a JSON list of them, or JSONL.

Each instance is an object with at least ``memory`` (list of numbers),
``runtimes`` (list of numbers) and ``max_memory`` (a number); other keys
(``name``, ``n``, ``graph`` as ``record_instances`` writes) are kept. ``-``
reads standard input. Every problem raises :class:`InstanceFileError` with a
one-line message naming the file and the place.

>>> fmt, items = parse_instances('{"memory": [1], "runtimes": [2], "max_memory": 1}', "x.json")
>>> fmt, items[0]["max_memory"]
('object', 1)
>>> parse_instances('{"memory": [1], "max_memory": 1}', "x.json")
Traceback (most recent call last):
...
remat_knapsack._common._io.InstanceFileError: x.json: instance 0: missing key 'runtimes'
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["InstanceFileError", "read_instances", "parse_instances", "FORMATS"]

FORMATS = ("object", "list", "jsonl")
_REQUIRED = ("memory", "runtimes", "max_memory")


class InstanceFileError(ValueError):
    """A file that is not a valid instance file; the message is one line."""


def read_instances(path: str) -> tuple[str, list[dict[str, Any]]]:
    """``(format, instances)`` from ``path`` (``-`` is stdin); format is one of :data:`FORMATS`."""
    label = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InstanceFileError(f"cannot read {label}: {getattr(e, 'strerror', None) or e}") from None
    return parse_instances(text, label)


def parse_instances(text: str, label: str) -> tuple[str, list[dict[str, Any]]]:
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if not lines:
        raise InstanceFileError(f"{label}: empty file; expected a JSON object, a JSON list of objects, or JSONL")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        if len(lines) == 1 or text.lstrip().startswith("["):
            raise InstanceFileError(f"{label}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        fmt, docs = "jsonl", [_line(ln, no, label) for no, ln in lines]
    else:
        if isinstance(doc, dict):
            fmt, docs = "object", [doc]
        elif isinstance(doc, list):
            if not doc:
                raise InstanceFileError(f"{label}: the list holds no instances")
            fmt, docs = "list", doc
        else:
            raise InstanceFileError(f"{label}: expected a JSON object or a list of objects, got {_kind(doc)}")
    return fmt, [_check(d, k, label) for k, d in enumerate(docs)]


def _line(text: str, no: int, label: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InstanceFileError(f"{label}: line {no}: invalid JSON at column {e.colno}: {e.msg}") from None


def _check(doc: Any, k: int, label: str) -> dict[str, Any]:
    where = f"{label}: instance {k}"
    if not isinstance(doc, dict):
        raise InstanceFileError(f"{where}: expected an object, got {_kind(doc)}")
    for key in _REQUIRED:
        if key not in doc:
            raise InstanceFileError(f"{where}: missing key {key!r}")
    for key in ("memory", "runtimes"):
        seq = doc[key]
        if not isinstance(seq, list):
            raise InstanceFileError(f"{where}: {key!r} must be a list of numbers, got {_kind(seq)}")
        for i, x in enumerate(seq):
            if not _is_number(x):
                raise InstanceFileError(f"{where}: {key}[{i}] is {_kind(x)} {json.dumps(x)[:30]}, not a number")
    if len(doc["memory"]) != len(doc["runtimes"]):
        raise InstanceFileError(
            f"{where}: 'memory' has {len(doc['memory'])} entries but 'runtimes' has {len(doc['runtimes'])}"
        )
    if not _is_number(doc["max_memory"]):
        raise InstanceFileError(f"{where}: 'max_memory' must be a number, got {_kind(doc['max_memory'])}")
    return doc


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _kind(x: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(x), type(x).__name__
    )
