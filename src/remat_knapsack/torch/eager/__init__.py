"""Selective activation checkpointing without torch.compile, chosen by the knapsack for a byte limit.

Holds ``_record`` (one eager step recorded op by op under a dispatch mode, on
fake tensors by default, on the real ones when fake tensors cannot run the
model), ``_values`` (on fakes, the values the step's real integer inputs
decide), ``_roofline`` (each op's modelled seconds: a roofline on its FLOPs and
the bytes it moves, with nominal per-device rates), ``_workspace`` (what an op
allocates within itself, measured once per distinct op on real tensors of its
shapes), ``_timeline`` (per-unit knapsack items, and the peak of any
checkpointing choice replayed from the recording), ``_split`` (each unit's
frontier as a menu, and the split of the limit across units) and ``_plan``
(:func:`plan_checkpoints`, :class:`CheckpointPlan`: the call, the plan, and
applying its policies with ``torch.utils.checkpoint``).

Imports: ``_roofline`` and ``_values`` nothing of the package; ``_workspace``
``..step`` and ``_roofline`` (an op's FLOPs, for its size cap); ``_record``
``..step`` (what a step must leave as found), ``..capture`` (fake tensors),
``_roofline``, ``_values`` and ``_workspace``; ``_timeline`` ``_record``;
``_split`` ``_timeline`` and :mod:`remat_knapsack.tradeoff`; ``_plan`` all of
these, :mod:`remat_knapsack.errors` and ``..step`` (the checks, measuring, the
ranks). Nothing here imports the compiled path's peak model, search or
planning calls (``..peaks``, ``..search``, ``.._fit``).
"""

from ._plan import CheckpointPlan, UnitPlan, default_units, plan_checkpoints

__all__ = ["CheckpointPlan", "UnitPlan", "default_units", "plan_checkpoints"]
