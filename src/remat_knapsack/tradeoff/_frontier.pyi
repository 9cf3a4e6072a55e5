import numpy as np

STATE_BYTES: int

class StateLimit(Exception): ...

def pareto(w: np.ndarray, v: np.ndarray, c: int, max_states: int) -> tuple[np.ndarray, np.ndarray, int]: ...

STATE_BYTES_128: int

def pareto128(
    hi: np.ndarray, lo: np.ndarray, v: np.ndarray, c: int, max_states: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]: ...
