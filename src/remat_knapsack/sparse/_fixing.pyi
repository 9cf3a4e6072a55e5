import numpy as np

def fix_by_bound(
    w: np.ndarray, v: np.ndarray, c: float, lam: float, mu: float, k: float, rel: float, thr: float,
    fix_in: np.ndarray, fix_out: np.ndarray, d: np.ndarray | None,
) -> float: ...
def reduce_items(
    w: np.ndarray, v: np.ndarray, c: float, thr: float, witness: np.ndarray, d: np.ndarray,
    each: list[tuple[float, float, float, float]], every: list[tuple[float, float, float, float]],
) -> tuple[np.ndarray, np.ndarray, float, float]: ...
def _positive_part_py(x: float) -> float: ...
