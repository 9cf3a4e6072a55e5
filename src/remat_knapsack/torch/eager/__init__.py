"""Selective activation checkpointing without torch.compile, chosen by the knapsack for a byte limit.

Holds ``_record`` (one eager step recorded op by op under a dispatch mode),
``_timeline`` (per-unit knapsack items, and the peak of any checkpointing
choice replayed from the recording) and ``_plan`` (:func:`plan_checkpoints`,
:class:`CheckpointPlan`: the per-unit frontiers, the split across units, and
applying the policies with ``torch.utils.checkpoint``). ``_record`` imports
nothing of the package; ``_timeline`` imports ``_record``; ``_plan`` imports
both, :mod:`remat_knapsack.tradeoff`, ``.._ranks`` and ``.._sweep``'s
argument checks. Nothing here imports the compiled path's capture or peak
model.
"""

from ._plan import CheckpointPlan, UnitPlan, default_units, plan_checkpoints

__all__ = ["CheckpointPlan", "UnitPlan", "default_units", "plan_checkpoints"]
