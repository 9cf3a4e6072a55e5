import numpy as np

def break_position(w: np.ndarray, order: np.ndarray, c: float) -> int: ...
def split(
    w: np.ndarray, eff: np.ndarray, c: float, sample: int, margin: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None: ...
def core(
    w: np.ndarray, v: np.ndarray, c: float, top: np.ndarray, mid: np.ndarray, b: int, low_a: np.ndarray,
    low_sorted: bool, thr_slack: float, rel: float,
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray | None]: ...
