"""Collection rules for the whole tree (pytest collects ``tests`` and the doctests of ``src``).

The modules below import torch at the top. Without torch their doctests are not
collected (instead of an import error at collection); the tests that need torch
skip themselves with ``pytest.importorskip``.
"""

collect_ignore: list[str] = []

try:
    import torch  # noqa: F401
except ImportError:
    collect_ignore += ["src/remat_knapsack/torch.py", "src/remat_knapsack/_sweep.py"]
