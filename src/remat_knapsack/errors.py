"""Exceptions raised by the solvers."""

from __future__ import annotations

__all__ = ["SolverMemoryError", "UnsupportedTorchError"]


class SolverMemoryError(MemoryError):
    """A solve would need more memory than is available (or than ``memory_limit``).

    Raised *before* the solver allocates, with the estimate in the message, so
    a process is never killed for running out of memory.

    Attributes
    ----------
    needed : int
        Estimated bytes the solve would allocate.
    available : int
        Bytes it was allowed to use.
    """

    def __init__(self, solver: str, needed: int, available: int, detail: str = "") -> None:
        self.solver = solver
        self.needed = int(needed)
        self.available = int(available)
        msg = (
            f"solver {solver!r} would need about {_fmt(self.needed)} "
            f"but only {_fmt(self.available)} is available"
        )
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)


class UnsupportedTorchError(RuntimeError):
    """The installed PyTorch lacks a name that :mod:`remat_knapsack.torch` relies on.

    Raised when :mod:`remat_knapsack.torch` is imported, naming the first missing
    name and the torch version, so that nothing fails later inside a compile.
    Defined here, outside the torch subpackage, so that it can be caught
    without importing torch.
    """


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover
