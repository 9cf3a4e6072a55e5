import numpy as np

SETTLED: int
UNSETTLED: int

def canonical_subset_sum(
    w: np.ndarray, v: np.ndarray, c: float, sel: np.ndarray, max_words: int, budget: int,
) -> tuple[int, int, int]: ...
