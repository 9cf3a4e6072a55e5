"""The user's step, run for real: its checks, what it allocates, what it must leave as found, and its ranks.

* ``_checks``: the model and the loss checked before any compile, the default
  loss (``.loss`` or ``.sum()``), the device, clearing gradients, and the
  step in the user's form (:func:`run_step`: the output kept through the
  backward or dropped after the loss);
* ``_memory``: one step's measured peak and saved bytes, its allocation
  timeline under the profiler, the allocator's rounding, and out-of-memory
  told from a broken model (:func:`is_out_of_memory`) and given back
  (:func:`release`);
* ``_state``: what a planning call leaves as it found it (gradients, buffers,
  random generators), whatever happens in its steps;
* ``_cap``: which ops may be run alone, for real, to measure their
  workspace (the size cap every peak model shares);
* ``_ranks``: under torchrun, one decision for every rank and a failure that
  reaches every rank.

May import: torch and :mod:`remat_knapsack.errors`. The bottom of the
planner: everything else here imports it, it imports nothing of them.
"""

from ._cap import WORKSPACE_MAX_BYTES, WORKSPACE_MAX_FLOPS, made_up_tensor, op_cost, over_workspace_cap
from ._checks import (
    check_keep_output,
    check_loss_value,
    check_model,
    checked_loss,
    default_loss,
    device_of,
    run_step,
    sync,
    zero_grad,
)
from ._memory import (
    CUDA_BLOCK,
    Timeline,
    allocated_bytes,
    is_out_of_memory,
    out_of_memory_message,
    profile_peak_bytes,
    profile_timeline,
    release,
    saved_tensor_bytes,
)
from ._ranks import RankFailedError, agree, gather_objects, max_over_ranks, world_size
from ._state import clear_grads, grad_leaves, preserved, restore_buffers, snapshot_buffers

__all__ = [
    "CUDA_BLOCK", "RankFailedError", "Timeline", "WORKSPACE_MAX_BYTES", "WORKSPACE_MAX_FLOPS", "agree",
    "allocated_bytes", "check_keep_output", "check_loss_value", "check_model", "checked_loss", "clear_grads",
    "default_loss", "device_of", "gather_objects", "grad_leaves", "is_out_of_memory", "made_up_tensor",
    "max_over_ranks", "op_cost",
    "out_of_memory_message", "over_workspace_cap", "preserved", "profile_peak_bytes", "profile_timeline", "release",
    "restore_buffers", "run_step", "saved_tensor_bytes", "snapshot_buffers", "sync", "world_size", "zero_grad",
]  # fmt: skip
