"""Build the compiled kernels: every ``src/remat_knapsack/**/_*.pyx`` is one extension.

A kernel sits beside the Python module that validates and dispatches for it, so
its extension is named after its place: ``sparse/_sparse.pyx`` builds
``remat_knapsack.sparse._sparse``. Shared ``.pxd`` pieces are cimported by their
package path (``src`` is on the include path).

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

SRC = Path("src")
extensions = [
    Extension(
        ".".join(pyx.relative_to(SRC).with_suffix("").parts),
        [pyx.as_posix()],
        include_dirs=[pyx.parent.as_posix(), SRC.as_posix()],
        extra_compile_args=COMPILE,
        extra_link_args=LINK,
    )
    for pyx in sorted((SRC / "remat_knapsack").glob("**/_*.pyx"))
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        include_path=[SRC.as_posix()],
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    )
)
