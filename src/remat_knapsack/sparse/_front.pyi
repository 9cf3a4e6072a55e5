import numpy as np

class TooManyStates(Exception): ...

def pareto_dp(
    piece_t: np.ndarray, piece_q: np.ndarray, piece_w: list[int], piece_v: np.ndarray, J: int,
    last: tuple[int, int, int, float], near: tuple[int, int, int] | None, left: np.ndarray,
    eff_types: np.ndarray, eff_G: np.ndarray, eff_V: np.ndarray, eff_e: np.ndarray,
    target: float | None, lower: float, tol: float, slack: float, max_states: int,
) -> tuple[np.ndarray | None, int]: ...
def pair_groups(w: np.ndarray, v: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray] | None: ...
