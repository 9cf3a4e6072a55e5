"""Build the compiled kernels: every ``src/remat_knapsack/_*.pyx`` is one extension."""
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

OPENMP = ["-fopenmp"]

extensions = [
    Extension(
        f"remat_knapsack.{pyx.stem}",
        [pyx.as_posix()],
        include_dirs=["src/remat_knapsack"],
        extra_compile_args=["-O3", *OPENMP],
        extra_link_args=OPENMP,
    )
    for pyx in sorted(Path("src/remat_knapsack").glob("_*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )
)
