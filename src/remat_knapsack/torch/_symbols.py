"""The private PyTorch names the plug-in relies on, checked once when it is imported.

PyTorch gives no stable interface for a custom knapsack solver: the plug-in reaches
into ``torch._functorch`` and ``torch._inductor``. A release that moves one of these
names would otherwise fail deep inside a compile; :func:`check` fails at import
instead, with :class:`~remat_knapsack.errors.UnsupportedTorchError` naming the
first name missing.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from ..errors import UnsupportedTorchError

__all__ = ["MIN_TORCH", "REQUIRED", "check"]

#: First PyTorch release with ``CustomKnapsackSolver`` (pytorch/pytorch#171601).
MIN_TORCH = "2.11"

#: (module, attribute) pairs the plug-in and ``sweep`` use, in the order checked.
#: Each entry lists the places a name has lived; the first one found is used.
REQUIRED: tuple[tuple[tuple[str, str], ...], ...] = (
    (
        ("torch._inductor.custom_graph_pass", "CustomKnapsackSolver"),
        ("torch._functorch._activation_checkpointing.custom_runtime_estimator", "CustomKnapsackSolver"),
    ),
    (("torch._functorch.config", "activation_memory_budget"),),
    (("torch._functorch.config", "activation_memory_budget_solver"),),
    (("torch._functorch.config", "enable_autograd_cache"),),
    (("torch._functorch.partitioners", "_optimize_runtime_with_given_memory"),),
    (("torch._functorch.partitioners", "estimate_runtime"),),
    (("torch._functorch.partitioners", "_size_of"),),
    (("torch._functorch._aot_autograd.logging_utils", "get_aot_graph_name"),),
    (("torch._C", "_dispatch_tls_is_dispatch_key_excluded"),),
    (("torch._C", "_dispatch_tls_set_dispatch_key_excluded"),),
    (("torch._dynamo", "reset"),),
    # the peak model and the peak-constrained solver (_peaks)
    (("torch._functorch.config", "ban_recompute_reductions"),),
    (("torch._functorch.config", "ban_recompute_used_far_apart"),),
    (("torch._functorch.config", "ban_recompute_long_fusible_chains"),),
    (("torch._functorch.config", "ban_recompute_materialized_backward"),),
    (("torch._functorch.config", "ban_recompute_not_in_allowlist"),),
    (("torch._functorch.config", "aggressive_recomputation"),),
    (("torch._functorch.partitioners", "choose_saved_values_set"),),
    (("torch._functorch.partitioners", "solve_min_cut"),),
    (("torch._functorch.partitioners", "MinCutOptions"),),
    (("torch._functorch.partitioners", "OrderedSet"),),
    (("torch._functorch.partitioners", "_extract_fwd_bwd_modules"),),
    (("torch._functorch.partitioners", "reordering_to_mimic_autograd_engine"),),
    (("torch._functorch.partitioners", "raise_getitems"),),
    (("torch._functorch.partitioners", "is_sym_node"),),
    (("torch._functorch.partitioners", "is_opaque_node"),),
    (("torch._C", "_has_storage"),),
)


def _find(module: str, name: str) -> Any | None:
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def check() -> dict[str, Any]:
    """Every name of :data:`REQUIRED`, as ``{"module.name": object}`` (by its first place).

    Raises
    ------
    UnsupportedTorchError
        Naming the first name that no place holds, and the torch version.
    """
    found = {}
    for places in REQUIRED:
        obj = next((o for o in (_find(m, n) for m, n in places) if o is not None), None)
        if obj is None:
            module, name = places[0]
            raise UnsupportedTorchError(
                f"remat_knapsack.torch needs {module}.{name}, which torch {torch.__version__} does not have "
                f"(supported: torch >= {MIN_TORCH}); remat_knapsack.compat has drop-in solvers for any torch"
            )
        found[".".join(places[0])] = obj
    return found
