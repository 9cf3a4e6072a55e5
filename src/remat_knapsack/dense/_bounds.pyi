import numpy as np

def intervals(
    w: np.ndarray, v: np.ndarray, order: np.ndarray, cap: int, thr: float
) -> tuple[np.ndarray, np.ndarray]: ...
