import numpy as np
import numpy.typing as npt

def canonical(
    w: npt.NDArray[np.float64],
    v: npt.NDArray[np.float64],
    cap: float,
    target: float,
    integral: bool,
    tol: float,
    budget: int = ...,
    max_states: int = ...,
) -> tuple[int, npt.NDArray[np.uint8]]: ...
