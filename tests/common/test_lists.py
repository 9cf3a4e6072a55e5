"""Lists to float64 arrays in C (``_lists``), against ``float(item)``."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack import solve
from remat_knapsack._common._lists import floats_of

numbers = st.one_of(st.floats(), st.integers(-(2**1100), 2**1100))


@settings(max_examples=500, deadline=None)
@given(st.lists(numbers, max_size=50))
def test_floats_of_is_float_of_each_item(xs):
    try:
        want = np.array([float(x) for x in xs], dtype=np.float64)
    except OverflowError:  # an int beyond float64: the general path names it
        assert floats_of(xs) is None
        return
    got = floats_of(xs)
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()  # -0.0 and nan bits too
    assert floats_of(tuple(xs)).tobytes() == want.tobytes()


class _Sub(float):
    pass


@pytest.mark.parametrize("bad", [True, np.float64(1.0), np.int64(2), _Sub(1.0), "1", None, [1.0]])
def test_anything_else_goes_to_the_general_path(bad):
    assert floats_of([1.0, bad]) is None


def test_bools_are_still_named():
    with pytest.raises(ValueError, match=r"memory\[1\] is a boolean"):
        solve([0.5, True], [1.0, 1.0], 1.0)
