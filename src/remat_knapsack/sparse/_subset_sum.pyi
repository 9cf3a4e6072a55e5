import numpy as np

SETTLED: int
UNSETTLED: int
OTHER_VALUES: int

def canonical_subset_sum(
    w: np.ndarray, v: np.ndarray, c: float, sel: np.ndarray, max_words: int, budget: int,
) -> tuple[int, int, int, int]: ...
def canonical_subset_sum_layers(
    w: np.ndarray, c: float, sel: np.ndarray, max_words: int,
) -> tuple[int, int, int]: ...
