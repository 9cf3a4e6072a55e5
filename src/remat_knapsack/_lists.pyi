from typing import Any

import numpy as np

def floats_of(x: list[Any] | tuple[Any, ...]) -> np.ndarray | None: ...
