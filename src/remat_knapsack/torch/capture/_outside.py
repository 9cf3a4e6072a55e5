"""The eager code around a compiled model: the loss between the forward and the backward, and its gradients.

The compiled graphs do not see the loss computed on their outputs, yet the
loss over a language model's vocabulary (a float copy of the logits,
``logsumexp``, their gradients) is often the peak of the whole step. It is
learnt once: on fake tensors (what its ops would allocate, counted by
:class:`~._fake.FakeMemory`), or, when fake tensors cannot run the model, on
the real ones under the allocator's profiler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from ..step import allocated_bytes, profile_peak_bytes
from ._fake import FakeMemory, FakeModel

__all__ = ["OutsideStep", "measure_outside"]


@dataclass(frozen=True)
class OutsideStep:
    """What the eager code around a compiled model does in one step, learnt once.

    Attributes
    ----------
    tangent_bytes : list of int
        Bytes of the gradient the autograd engine hands each output that needs
        one (the compiled backward's tangents): ``out.sum()`` hands an expanded
        scalar (4 bytes), ``cross_entropy(logits, y)`` a full-size gradient.
    loss_peak_bytes : int
        The highest the loss's forward and its backward down to the model's
        outputs allocate above the outputs themselves. A language model's loss
        over its vocabulary (a float copy of the logits, ``logsumexp``, their
        gradients) is often the peak of the whole step.
    loss_phases : tuple of int, or None
        The loss's forward peak, what it holds after its forward, and the
        peak of its backward down to the outputs, each above the outputs
        (learnt on fake tensors). A step that drops its outputs after the loss
        (``keep_output=False``) frees them between the two phases, unless the
        loss saved one for its backward. None when unknown (learnt on real
        tensors) or when the loss saved an output.
    """

    tangent_bytes: list[int]
    loss_peak_bytes: int
    loss_phases: tuple[int, int, int] | None = None


def measure_outside(model: Any, args: tuple, loss_fn: Callable[[Any], Any], device: str = "cpu",
                    fake: FakeModel | None = None) -> OutsideStep:  # fmt: skip
    """Run ``model(*args)`` eagerly once and learn the loss around it (:class:`OutsideStep`).

    The loss's forward and ``torch.autograd.grad`` of it with respect to the
    outputs allocate what the step's loss does. With ``fake`` (from
    :func:`~._fake.fake_model`), the model and the loss run on its fake
    tensors and :class:`~._fake.FakeMemory` counts the loss's allocations
    (nothing is allocated); without, they run for real under the allocator's
    profiler (CPU) or peak counter (CUDA). No parameter's ``.grad`` changes.
    """
    phases = None
    if fake is not None:
        with fake.mode:
            out = model(*fake.args)
            leaves = _needing_grad(out)
            memory = FakeMemory(rounding=allocated_bytes)
            outputs = {t.untyped_storage()._cdata for t in leaves}
            saved: set[int] = set()
            with memory:
                with torch.autograd.graph.saved_tensors_hooks(_note_storage(saved), lambda t: t):
                    value = loss_fn(out)
                forward_peak, held = memory.peak_bytes, memory.running
                memory.peak_bytes = memory.running  # from here: the backward's peak
                grads = list(torch.autograd.grad(value, leaves, allow_unused=True))
                del value
            peak = max(forward_peak, memory.peak_bytes)
            if not saved & outputs:
                phases = (forward_peak, held, memory.peak_bytes)
    else:
        out = model(*args)
        leaves = _needing_grad(out)
        grads: list[Any] = []
        peak = profile_peak_bytes(lambda: grads.extend(_loss_grads(loss_fn, out, leaves)), device)
    sizes = []
    for t, g in zip(leaves, grads):
        if g is None:  # AOTAutograd materialises a missing gradient as zeros of the output's size
            sizes.append(int(t.numel() * t.element_size()))
        else:
            sizes.append(allocated_bytes(int(g.untyped_storage().nbytes()), g.device.type))
    return OutsideStep(tangent_bytes=sizes, loss_peak_bytes=int(peak), loss_phases=phases)


def _needing_grad(out: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad]


def _note_storage(saved: set[int]) -> Callable[[torch.Tensor], torch.Tensor]:
    """A pack hook that notes the storage of each tensor the loss saves for its backward."""

    def pack(t: torch.Tensor) -> torch.Tensor:
        try:
            saved.add(t.untyped_storage()._cdata)
        except Exception:  # a tensor without a storage saves nothing of the outputs'
            pass
        return t

    return pack


def _loss_grads(loss_fn: Callable[[Any], Any], out: Any, leaves: list[torch.Tensor]) -> list[Any]:
    value = loss_fn(out)
    return list(torch.autograd.grad(value, leaves, allow_unused=True))
