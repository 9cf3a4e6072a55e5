import numpy as np

STATE_BYTES: int

class StateLimit(Exception): ...

def pareto(w: np.ndarray, v: np.ndarray, c: int, max_states: int) -> tuple[np.ndarray, np.ndarray, int]: ...
