"""Build the compiled kernels: every ``src/remat_knapsack/**/_*.pyx`` is one extension.

A kernel sits beside the Python module that validates and dispatches for it, so
its extension is named after its place: ``sparse/_sparse.pyx`` builds
``remat_knapsack.sparse._sparse``. Shared ``.pxd`` pieces are cimported by their
package path (``src`` is on the include path).

OpenMP (the two-thread wavefront of the dense kernels) is used where the
compiler ships it: GCC on Linux (``-fopenmp``) and MSVC on Windows
(``/openmp``). Apple's clang has no OpenMP runtime, so macOS builds run the
same kernels on one thread; the results are identical.

No fused multiply-add (``-ffp-contract=off`` on GCC and clang): GCC contracts
``v - lam * w`` into one FMA by default on aarch64, clang on arm64 macOS, and
the fused form rounds once where numpy rounds twice. Off, every target rounds
as numpy does and the kernels' floating-point results do not depend on the
platform. MSVC (Visual Studio 2022 on) contracts only under ``/fp:contract``,
which is not passed.

``REMAT_KNAPSACK_SANITIZE=1`` (GCC or clang on Linux; ``.ci/sanitize``, see
docs/sanitizers.md) builds for checking instead: AddressSanitizer and
UndefinedBehaviorSanitizer at -O1 with frame pointers, signed overflow left
undefined (-fno-wrapv) so UBSan reports it, and Cython's boundscheck and
initializedcheck on. wraparound stays off, as in the shipped build: with
boundscheck on, a negative index then raises IndexError instead of being read
as an index from the end (``REMAT_KNAPSACK_SANITIZE_WRAPAROUND=1`` turns it on).
Without the variable the build is the default one above.
"""
import os
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

if sys.platform == "win32":
    COMPILE, LINK = ["/O2", "/openmp"], []
elif sys.platform == "darwin":
    COMPILE, LINK = ["-O3", "-ffp-contract=off"], []
else:
    COMPILE, LINK = ["-O3", "-ffp-contract=off", "-fopenmp"], ["-fopenmp"]

DIRECTIVES = {
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
}

SANITIZE = os.environ.get("REMAT_KNAPSACK_SANITIZE") == "1"
if SANITIZE:
    if sys.platform != "linux":
        raise SystemExit("REMAT_KNAPSACK_SANITIZE=1: Linux (GCC or clang) only")
    SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    COMPILE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fno-wrapv", "-ffp-contract=off", *SANITIZERS, "-fopenmp"]
    LINK = [*SANITIZERS, "-fopenmp"]
    DIRECTIVES.update(
        boundscheck=True,
        initializedcheck=True,
        wraparound=os.environ.get("REMAT_KNAPSACK_SANITIZE_WRAPAROUND") == "1",
    )

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
        compiler_directives=DIRECTIVES,
        # .c files from the other kind of build are stale: the directives differ.
        force=SANITIZE,
    )
)
