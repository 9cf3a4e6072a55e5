"""Build the compiled kernels: every ``src/remat_knapsack/_*.pyx`` is one extension.

OpenMP (the two-thread wavefront of the dense kernels) is used where the
compiler ships it: GCC on Linux (``-fopenmp``) and MSVC on Windows
(``/openmp``). Apple's clang has no OpenMP runtime, so macOS builds run the
same kernels on one thread; the results are identical.
"""
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

if sys.platform == "win32":
    COMPILE, LINK = ["/O2", "/openmp"], []
elif sys.platform == "darwin":
    COMPILE, LINK = ["-O3"], []
else:
    COMPILE, LINK = ["-O3", "-fopenmp"], ["-fopenmp"]

extensions = [
    Extension(
        f"remat_knapsack.{pyx.stem}",
        [pyx.as_posix()],
        include_dirs=["src/remat_knapsack"],
        extra_compile_args=COMPILE,
        extra_link_args=LINK,
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
