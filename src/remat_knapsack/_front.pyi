import numpy as np

LIMB: int

def merge(
    h: np.ndarray, lo: np.ndarray, V: np.ndarray, ph: int, pl: int, pv: float, Jh: int, Jl: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
