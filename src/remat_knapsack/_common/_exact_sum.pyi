import numpy as np

MAX_ITEMS: int

def exact_sum(x: np.ndarray, mask: np.ndarray | None = None) -> int | None: ...
