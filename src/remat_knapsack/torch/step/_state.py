"""What a planning call leaves as it found it: the gradients, the buffers and the random generators.

Planning runs steps of the user's model (measured ones, and fake ones that
allocate nothing). Whatever happens in them, a step that runs out of memory
included, the model's ``.grad`` fields, its buffers (batch norm's running
statistics) and the random number generators come back as they were.

May import: torch. Imports nothing else of the package.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

__all__ = ["clear_grads", "grad_leaves", "preserved", "restore_buffers", "snapshot_buffers"]


@contextlib.contextmanager
def preserved(model: Any, args: tuple, device: str) -> Iterator[None]:
    """Inside the block: no gradient on the model's parameters or on the inputs that collect one; after it,
    those gradients, the model's buffers and the random generators are as they were before it."""
    leaves = grad_leaves(model, args)
    grads = [t.grad for t in leaves]
    buffers = snapshot_buffers(model)
    try:
        for t in leaves:
            t.grad = None
        with torch.random.fork_rng(devices=[torch.cuda.current_device()] if device == "cuda" else []):
            yield
    finally:
        for t, g in zip(leaves, grads):
            t.grad = g
        restore_buffers(model, buffers)


def clear_grads(model: Any, args: tuple) -> None:
    """No gradient on the model's parameters or on the inputs that collect one (a step as a training loop runs it)."""
    for t in grad_leaves(model, args):
        t.grad = None


def grad_leaves(model: Any, args: tuple) -> list[torch.Tensor]:
    """The tensors a step's backward gives a ``.grad``: the parameters, and leaf inputs that require grad."""
    parameters = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    return parameters + [t for t in tree_leaves(args) if isinstance(t, torch.Tensor) and t.requires_grad
                         and t.is_leaf]  # fmt: skip


def snapshot_buffers(model: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each real buffer of ``model`` with a copy of its values (a meta buffer has none to keep)."""
    if not isinstance(model, torch.nn.Module):
        return []
    return [(b, b.detach().clone()) for b in model.buffers() if not b.is_meta]


def restore_buffers(model: Any, buffers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    with torch.no_grad():
        for buffer, saved in buffers:
            buffer.copy_(saved)
