"""The user's step as planning runs it: the model and loss checked, the default loss, the device, the clears.

Every planning call (:func:`~remat_knapsack.torch.sweep`,
:func:`~remat_knapsack.torch.fit`, :func:`~remat_knapsack.torch.predict_peaks`,
:func:`~remat_knapsack.torch.plan_checkpoints`) checks the model and the loss
before any compile, with a ``ValueError`` that says what does not work; an
unplanned forward that does not fit raises :class:`StepOutOfMemoryError`
instead (the model is not broken).

May import: torch, :mod:`remat_knapsack.errors` and this package's ``_memory``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from ...errors import StepOutOfMemoryError
from ._memory import is_out_of_memory, out_of_memory_message

__all__ = ["check_keep_output", "check_loss_value", "check_model", "checked_loss", "default_loss", "device_of",
           "run_step", "sync", "zero_grad"]


def default_loss(out: Any) -> Any:
    value = getattr(out, "loss", None)
    if value is not None:
        return value
    if hasattr(out, "sum"):
        return out.sum()
    raise ValueError(f"the model's output ({type(out).__name__}) has no .loss and no .sum(); pass loss=")


def check_model(model: Any, args: tuple, loss: Any, fake: Any = None) -> Callable[[Any], Any]:
    """Run the model and the loss once eagerly: ValueError naming what does not work, before any compile.

    ``fake`` (a :class:`~..capture.FakeModel`): on its fake tensors, which
    allocate nothing; otherwise on the real ones, where running out of memory
    raises :class:`StepOutOfMemoryError` (the unplanned forward does not fit:
    the model is not broken).
    """
    if not callable(model):
        raise ValueError(f"model must be an nn.Module or a callable, got {type(model).__name__}")
    checked = checked_loss(loss)
    context = fake.mode if fake is not None else contextlib.nullcontext()
    with context:
        try:
            out = model(*(fake.args if fake is not None else args))
        except Exception as exc:
            if fake is None and is_out_of_memory(exc):
                raise StepOutOfMemoryError(
                    "the unplanned forward (model(*args) with every activation kept for backward) does not fit in "
                    f"memory: {out_of_memory_message(exc)}") from None  # fmt: skip
            raise ValueError(f"the model does not run on args: model(*args) raised {type(exc).__name__}: "
                             f"{exc}") from exc
        checked(out)
    return loss if loss is not None else default_loss


def checked_loss(loss: Any) -> Callable[[Any], Any]:
    """``loss`` (default: ``.loss`` or ``.sum()``) raising ValueError when it fails or is not a scalar needing grad."""
    if loss is not None and not callable(loss):
        raise ValueError(f"loss must be a callable output -> scalar, got {type(loss).__name__}")
    loss_fn = loss if loss is not None else default_loss

    def checked(out: Any) -> Any:
        try:
            value = loss_fn(out)
        except ValueError:
            raise
        except Exception as exc:
            raise ValueError(f"the loss does not run on the model's output: {type(exc).__name__}: {exc}") from exc
        check_loss_value(value)
        return value

    return checked


def check_loss_value(value: Any) -> None:
    """ValueError unless ``value`` is a scalar tensor that requires grad."""
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"the loss must be a scalar tensor, got {shape}")
    if not value.requires_grad:
        raise ValueError("the loss does not require grad: no parameter or input with requires_grad reaches it")


def device_of(model: Any, args: tuple) -> str:
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters())[:1]
    return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


def zero_grad(model: Any, args: tuple) -> None:
    if isinstance(model, torch.nn.Module):
        model.zero_grad(set_to_none=True)
    for a in args:
        if isinstance(a, torch.Tensor) and a.grad is not None:
            a.grad = None


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def check_keep_output(keep_output: Any) -> bool:
    """``keep_output`` as a bool; ValueError naming it otherwise.

    True: the step is ``out = model(*args); loss(out).backward()`` (the output
    lives through the backward). False: ``loss(model(*args)).backward()`` (the
    output is freed after the loss, before the backward, as Hugging Face's
    ``Trainer`` does).
    """
    if not isinstance(keep_output, bool):
        raise ValueError(f"keep_output must be True or False, got {keep_output!r}")
    return keep_output


def run_step(model: Callable[..., Any], args: tuple, loss_fn: Callable[[Any], Any], keep_output: bool) -> None:
    """One training step in the user's form: the output kept through the backward, or dropped after the loss."""
    if keep_output:
        out = model(*args)
        loss_fn(out).backward()
        del out
    else:
        loss_fn(model(*args)).backward()

