"""Random ops and the saved set: no plan of ours recomputes a random op with fresh randomness.

PyTorch's partitioner recomputes a forward op in the backward by running it
again. For a random op (dropout's ``native_dropout``, ``rand_like``,
``bernoulli``: every op tagged ``nondeterministic_seeded``) that draws a new
sample, so the backward uses another dropout mask than the forward did and
the gradients are wrong, silently. PyTorch's min-cut bans random ops from
recomputation, but two paths below ``activation_memory_budget = 1`` bypass the
ban (pytorch/pytorch#190758, #190717):

* at budget 0, ``choose_saved_values_set`` returns the graph's inputs alone,
  so everything in the forward, random ops included, runs again;
* at 0 < budget < 1, the knapsack's recompute list becomes the min-cut's
  ``dont_ban`` set, which lifts the ban on any random op in it.

The plug-in closes both. The knapsack never gets a random candidate as an
item (:func:`random_indices`: they are kept, their size counted against the
budget; ``KnapsackSolver`` and the peak search both use it), and at budget 0
the saved set is the smallest min-cut with only random ops banned
(:func:`random_safe_inputs_plan`): the backward then reads the forward's mask
(one byte per element) instead of drawing one. :func:`keep_random` checks
every saved set before the partitioner uses it and repairs any that would
still recompute a random op.

Cost: the random ops' kept outputs (or the cheaper tensors the min-cut saves
after them). ``docs/contract.md`` has the measured numbers.

May import: torch. Imports nothing else of the package.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch._functorch.partitioners as _partitioners

__all__ = [
    "aggressive_options",
    "is_random",
    "keep_random",
    "knapsack_candidates",
    "random_indices",
    "random_safe",
    "random_safe_inputs_plan",
    "recomputed_random",
]


def is_random(node: Any) -> bool:
    """Whether ``node`` draws random numbers: an op tagged ``nondeterministic_seeded``.

    The tag PyTorch's own ``functionalize_rng_ops`` and ``has_recomputable_rng_ops``
    test (``native_dropout``, ``rand``, ``rand_like``, ``randn``, ``bernoulli``, ...).
    """
    if getattr(node, "op", None) != "call_function":
        return False
    tags = getattr(node.target, "tags", ())
    return torch.Tag.nondeterministic_seeded in tags


def random_indices(nodes: Sequence[Any]) -> list[int]:
    """Positions of the random ops among the knapsack's candidate ``nodes``, ascending."""
    return [i for i, node in enumerate(nodes) if is_random(node)]


def recomputed_random(joint_graph: Any, node_info: Any, saved: Iterable[Any]) -> list[Any]:
    """The random forward ops the backward would run again when ``saved`` is the saved set.

    The backward computes what it needs from the saved values, the graph's
    inputs and its tangents; every other forward node it reaches runs again.
    This walks from the backward's nodes to their arguments, stopping at
    saved values and placeholders, as ``_extract_fwd_bwd_modules`` builds the
    backward graph. O(V + E) over the joint graph.
    """
    stop = set(saved)
    seen: set[Any] = set()
    stack = [n for n in joint_graph.nodes if node_info.is_required_bw(n)]
    out: list[Any] = []
    while stack:
        node = stack.pop()
        for arg in node.all_input_nodes:
            if arg in seen or arg in stop or arg.op == "placeholder" or node_info.is_required_bw(arg):
                continue
            seen.add(arg)
            if is_random(arg):
                out.append(arg)
            stack.append(arg)
    order = {n: i for i, n in enumerate(joint_graph.nodes)}
    return sorted(out, key=order.__getitem__)


def aggressive_options() -> Any:
    """The min-cut options ``choose_saved_values_set`` turns a knapsack plan into a saved set with."""
    import torch._functorch.config as _fconfig

    return _partitioners.MinCutOptions(
        ban_if_used_far_apart=False,
        ban_if_long_fusible_chains=False,
        ban_if_materialized_backward=False,
        ban_if_not_in_allowlist=False,
        ban_if_reduction=_fconfig.ban_recompute_reductions,
    )


def random_safe_inputs_plan(joint_graph: Any, node_info: Any) -> list[Any]:
    """Budget 0 without fresh randomness: the smallest min-cut in which only random ops stay banned.

    Everything that PyTorch's budget-0 plan (the inputs alone) recomputes is
    recomputed here too, except the random ops: the cut falls at or after
    them, on the cheapest tensors (a dropout's boolean mask rather than its
    float output). Two min-cut solves.
    """
    options = aggressive_options()
    _, banned = _partitioners.solve_min_cut(joint_graph, node_info, options)
    dont_ban = _partitioners.OrderedSet(n for n in knapsack_candidates(node_info, banned) if not is_random(n))
    saved, _ = _partitioners.solve_min_cut(joint_graph, node_info, options, dont_ban)
    return list(saved)


def knapsack_candidates(node_info: Any, banned: Iterable[Any]) -> list[Any]:
    """The banned nodes ``choose_saved_values_set`` offers the knapsack (its ``recomputable_banned_nodes``).

    Those the backward needs, that do not alias an input (a view of a
    parameter cannot be recomputed apart from it) and that no one marked
    ``MUST_SAVE``; PyTorch's rule, restated because it is a closure there.
    """
    from torch._inductor.fx_utils import get_node_storage
    from torch.utils.checkpoint import CheckpointPolicy

    input_storages = {get_node_storage(n) for n in node_info.inputs}
    return [
        n for n in banned
        if getattr(n, "dist_from_bw", 0) < int(1e9)
        and (get_node_storage(n) not in input_storages or _partitioners.is_non_builtin_to_include(n))
        and n.meta.get("recompute", False) != CheckpointPolicy.MUST_SAVE
    ]  # fmt: skip


def _saveable(node: Any) -> list[Any]:
    """What saving ``node`` means: the node, or its getitems when it returns several tensors."""
    users = list(node.users)
    if users and all(u.target is operator.getitem for u in users):
        return users
    return [node]


def keep_random(joint_graph: Any, node_info: Any, saved: Sequence[Any]) -> list[Any]:
    """``saved``, repaired if the backward would recompute a random op from it.

    Unchanged when no random op would run again (the common case; one graph
    walk). Otherwise the outputs of every such op are added to the saved set,
    so the backward reads what the forward drew; the walk is repeated until
    none is left (each round adds at least one op, so at most one round per
    random op).
    """
    out = list(saved)
    for _ in range(sum(1 for n in joint_graph.nodes if is_random(n)) + 1):
        again = recomputed_random(joint_graph, node_info, out)
        if not again:
            return out
        have = set(out)
        for node in again:
            out += [n for n in _saveable(node) if n not in have]
    return out  # pragma: no cover - every round removes at least one op


def random_safe(joint_graph: Any, node_info: Any, saved: Sequence[Any], budget: float) -> list[Any]:
    """The saved set the partitioner gets for ``saved``, chosen at ``budget``: no random op recomputed.

    ``saved`` itself when it recomputes no random op. At budget 0 (the inputs
    alone, or whatever PyTorch's early return gives) a plan that recomputes
    one is replaced by :func:`random_safe_inputs_plan`; any plan still
    recomputing one is repaired by :func:`keep_random`.
    """
    if not recomputed_random(joint_graph, node_info, saved):
        return list(saved)
    if budget == 0:
        saved = random_safe_inputs_plan(joint_graph, node_info)
    return keep_random(joint_graph, node_info, saved)
