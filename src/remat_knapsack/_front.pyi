import numpy as np

LIMB: int

def merge(
    h: np.ndarray, lo: np.ndarray, V: np.ndarray, ph: int, pl: int, pv: float, Jh: int, Jl: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
def lp_keep(
    h: np.ndarray, lo: np.ndarray, V: np.ndarray, Jh: int, Jl: int, cw: np.ndarray, cv: np.ndarray, eff: np.ndarray,
    thr: float,
) -> np.ndarray: ...
def fill_one_limb(lo: np.ndarray, Jl: int, g: int, most: int) -> np.ndarray: ...
