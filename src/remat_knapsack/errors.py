"""Exceptions raised by the solvers."""

from __future__ import annotations

__all__ = ["PeakLimitError", "SolverMemoryError", "StepOutOfMemoryError", "UnsupportedTorchError"]


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


class StepOutOfMemoryError(MemoryError):
    """A step that had to run for real ran out of memory: the step does not fit, the model is not broken.

    Raised when planning cannot avoid running the model's own step (fake
    tensors cannot run it) and that step is more than the memory there is.
    Defined here, outside the torch subpackage, so that it can be caught
    without importing torch.
    """


class PeakLimitError(ValueError):
    """No plan keeps one training step's peak within the limit asked for.

    Raised by :func:`remat_knapsack.torch.fit` when no plan's modelled peak
    fits (or, after its corrections, no compiled plan's measured peak does).
    Defined here, outside the torch subpackage, so that it can be caught
    without importing torch.

    Attributes
    ----------
    limit : int
        The limit in bytes.
    smallest : int
        The smallest peak in bytes the peak model reaches among the plans
        searched (or the smallest measured one, when ``measured`` is true).
    measured : bool
        Whether ``smallest`` was measured rather than modelled.
    out_of_memory : int
        How many of the plans compiled ran out of memory when their step ran
        (each an answer: that plan does not fit in the memory there is).
    """

    def __init__(self, limit: int, smallest: int, *, measured: bool = False, out_of_memory: int = 0) -> None:
        self.limit = int(limit)
        self.smallest = int(smallest)
        self.measured = bool(measured)
        self.out_of_memory = int(out_of_memory)
        what = "smallest measured peak of the plans compiled" if measured else "smallest peak the model reaches"
        if out_of_memory and not measured:
            what = "smallest predicted peak of the plans compiled"
        text = (f"no plan keeps the training step's peak within {_fmt(self.limit)} ({self.limit} bytes); "
                f"the {what} is {_fmt(self.smallest)} ({self.smallest} bytes)")
        if out_of_memory:
            text += f"; {out_of_memory} compiled plan(s) ran out of memory when their step ran"
        super().__init__(text)


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover
