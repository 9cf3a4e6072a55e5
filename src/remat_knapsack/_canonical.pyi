from typing import Any

import numpy as np

from ._sparse import Workspace

def canonical(
    work: Workspace, wa: np.ndarray, va: np.ndarray, order: np.ndarray, free_idx: np.ndarray, S: np.ndarray,
    j: float, tgt: float, lam: float, d: np.ndarray, integral: bool, tol: float,
    count: tuple[int, float, float] | None, count_states: int, count_per_item: int,
    lines: Any, stats: dict[str, Any],
) -> None: ...
def _configure_unique(states_from: int, share: int) -> tuple[int, int]: ...
def _configure_probe(gap: int, states: int, per_item: int) -> tuple[int, int, int]: ...
def _group_ids_py(w: np.ndarray, v: np.ndarray) -> np.ndarray: ...
