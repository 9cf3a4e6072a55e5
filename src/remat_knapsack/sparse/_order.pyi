import numpy as np

COUNTING_SPAN: int
COUNTING_FLOOR: int

def descending(x: np.ndarray) -> np.ndarray: ...
def ascending(x: np.ndarray) -> np.ndarray: ...
