"""What does this plan peak at? The peak of one training step, from the graphs the partitioner makes.

The activation budget caps a proxy (the knapsack's normalised saved size). The
physical peak of a step depends on where the partitioner puts the recomputation
in the backward, on what lives across the forward/backward boundary, and on the
gradients and temporaries. So a plan is never modelled in the abstract: for a
saved set, :func:`graph_peak` partitions the captured joint graph with
PyTorch's own pieces (``_graph``) and puts the forward and backward on one
timeline, the way the backend runs them:

* ``_liveness``: ``aot_eager`` runs the FX graphs op by op and frees each value
  after its last use; op workspaces (convolution backward, attention) measured
  once per distinct op;
* ``_inductor``: inductor runs the wrapper code it generates (fusion,
  reordering, buffer reuse); the pipeline is run up to the wrapper, and its
  allocation and free lines are read;
* ``_fork``: the plans of several budgets lowered side by side, in forked
  workers (:func:`graph_peaks`);
* ``_step``: one graph's timeline (:class:`GraphPeak`), several graphs on one
  step (:func:`step_peak`: forwards in order, backwards in reverse), and the
  answer for one budget (:class:`PeakPrediction`).

A new backend gets a module here beside ``_liveness`` and ``_inductor``, and a
branch in :func:`graph_peak`.

May import: torch and :mod:`..step` (the allocator's rounding, the profiler).
Nothing here imports the capture, the search or the plug-in: they call it.
"""

from ._graph import graph_peak, graph_peaks, partition
from ._inductor import is_inductor_compile
from ._liveness import dispatch_allowed, has_symbolic_sizes, node_storages, op_workspaces
from ._step import GraphPeak, PeakPrediction, step_peak

__all__ = ["GraphPeak", "PeakPrediction", "dispatch_allowed", "graph_peak", "graph_peaks", "has_symbolic_sizes",
           "is_inductor_compile", "node_storages", "op_workspaces", "partition", "step_peak"]
