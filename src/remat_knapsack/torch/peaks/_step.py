"""A step's peak from its graphs' timelines: what one plan of one graph allocates and frees, composed.

:class:`GraphPeak` is one joint graph partitioned for one saved set, as a
timeline of allocations and frees in program order (its forward's and its
backward's); :func:`step_peak` puts several such graphs on one step's
timeline: the forwards in order, then the backwards in reverse, as autograd
runs them. :class:`PeakPrediction` is the answer for one budget, as
:func:`~remat_knapsack.torch.predict_peaks` gives it.

May import: nothing of the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GraphPeak", "PeakPrediction", "step_peak"]


@dataclass(frozen=True)
class PeakPrediction:
    """The peak model's answer for one budget.

    Attributes
    ----------
    budget : float
        ``activation_memory_budget``.
    peak_bytes : int
        Predicted peak of one training step (forward, then backward) above what
        was allocated when it began, as :func:`~remat_knapsack.torch.sweep` measures it.
    saved_bytes : int
        Predicted bytes of the distinct storages saved for backward (parameters
        and inputs the graphs save included, as ``sweep`` counts them).
    """

    budget: float
    peak_bytes: int
    saved_bytes: int


@dataclass(frozen=True)
class GraphPeak:
    """One joint graph partitioned for one saved set, as the liveness pass sees it.

    ``fw_events`` and ``bw_events`` are running-byte deltas in program order
    (positive: allocation, negative: free); ``held`` the bytes the forward leaves
    allocated (user outputs and saved tensors); ``saved_bytes`` the saved storages.
    """

    fw_events: tuple[int, ...]
    bw_events: tuple[int, ...]
    saved_bytes: int
    recomputed: int  # forward ops that the backward runs again
    #: The storage (fake-tensor storage identity) of each event, parallel to the events (aot_eager; empty
    #: under inductor, whose events are the generated code's).
    fw_keys: tuple[int, ...] = ()
    bw_keys: tuple[int, ...] = ()
    #: Names of the forward ops the backward runs again.
    recomputed_names: tuple[str, ...] = ()
    #: Bytes of the tangents the backward allocates when it starts (0: the step hands them over).
    tangent_bytes: int = 0
    #: Bytes of the gradients the backward returns for inputs that are not parameters or buffers: an
    #: earlier graph's outputs, whose backward takes them as its tangents.
    input_grad_bytes: int = 0
    #: Bytes of the outputs the step drops before its first backward (``keep_output=False``, with the
    #: loss inside the graphs; an eager loss's drop is among the backward's events).
    dropped_bytes: int = 0


def step_peak(graphs: Sequence[GraphPeak], between: int = 0) -> int:
    """Peak of one step over several graphs: forwards in order, then backwards in reverse.

    ``between``: a spike between the last forward and the first backward (the
    eager loss's own peak, when no graph carries it). With a graph break, a
    later graph's backward returns the gradients of the outputs an earlier
    graph made, and the earlier backward starts from them as its tangents:
    they are counted once, not allocated again. Outputs the step drops
    (``dropped_bytes``) are freed before the first backward.
    """
    running = peak = 0
    for g in graphs:
        for d in g.fw_events:
            running += d
            peak = max(peak, running)
    peak = max(peak, running + between)
    running -= sum(g.dropped_bytes for g in graphs)
    handed = 0  # gradients the previous backward returned for this graph's outputs
    for g in reversed(graphs):
        running -= min(handed, g.tangent_bytes)
        for d in g.bw_events:
            running += d
            peak = max(peak, running)
        handed = g.input_grad_bytes
    return peak
