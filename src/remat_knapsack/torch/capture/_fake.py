"""A model run on fake tensors: the step's shapes, dtypes and devices, and none of its memory.

The planners need the step's graphs and what the eager code around them
allocates, not its numbers. Running the step for real to learn them is the one
thing a user whose step does not fit cannot do, so they run it on fake tensors
(``torch._subclasses.fake_tensor.FakeTensorMode``): every op computes its
output's metadata and allocates nothing. A model built under
``with torch.device("meta"):`` is planned the same way, for the device it will
train on.

A meta model wrapped with FSDP2 (``fully_shard``) on a fake process group
(``init_process_group("fake", store=FakeStore(), ...)``, as torchtitan's
memory estimator runs one rank of N on one machine) is planned on fake tensors
too: FSDP keeps its own references to the sharded parameters, so swapping the
module's parameters (as :func:`fake_model` does) would not reach them.
Instead the model is materialised as fake tensors (``to_empty`` inside the
fake mode, as the estimator does) and put back on the meta device afterwards
(:func:`fake_sharded`). The fake group's collectives move nothing, so the
step is one rank's: its all-gathers and reduce-scatters at their sizes.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

__all__ = ["FakeMemory", "FakeModel", "fake_model", "fake_sharded", "fake_unsupported", "is_fake_group", "is_meta",
           "on_fakes", "target_device"]

T = TypeVar("T")


@dataclass(frozen=True)
class FakeModel:
    """What :func:`fake_model` gives the block: the mode to run in, the inputs as fake tensors, the device."""

    mode: Any  # the FakeTensorMode the model's fake tensors belong to: run the model inside ``with mode:``
    args: tuple  # the inputs, each tensor a fake one of the same shape, strides, dtype and requires_grad
    device: str  # "cpu" or "cuda": where the step is planned to run


def target_device(model: Any, args: Any, device: str | None = None) -> str:
    """Where the step is planned to run: ``device`` when given, else CUDA when a parameter or input is
    there, else the CPU (a model on the meta device included)."""
    if device is not None:
        try:
            kind = torch.device(device).type
        except (RuntimeError, TypeError):
            kind = None
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda' (where the step will run), got {device!r}")
        return kind
    tensors = [a for a in tree_leaves(args) if isinstance(a, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters())[:1]
    return "cuda" if any(t.device.type == "cuda" for t in tensors) else "cpu"


def is_meta(model: Any, args: Any) -> bool:
    """Whether any parameter, buffer or input of the step is on the meta device (it cannot run for real)."""
    tensors = [a for a in tree_leaves(args) if isinstance(a, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters()) + list(model.buffers())
    return any(t.is_meta for t in tensors)


@contextlib.contextmanager
def fake_model(model: Any, args: tuple, device: str | None = None) -> Iterator[FakeModel]:
    """Inside the block, ``model``'s parameters and buffers are fake tensors; on exit, the originals again.

    Each parameter and buffer is replaced (in its module's ``_parameters`` or
    ``_buffers``) by a fake tensor of the same shape, strides, dtype and
    ``requires_grad``, on ``device`` (default: the original's, the CPU for a
    meta tensor); a tensor shared by several modules (tied weights) stays
    shared. The inputs are given as fake tensors the same way. Nothing of the
    model's size is allocated, and the real tensors are not touched: their
    values, ``.grad`` and versions are as they were. Run the model inside
    ``with fm.mode:``; tensors that are plain attributes of a module (not
    registered) are turned into fake ones as ops meet them.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    kind = target_device(model, args, device)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    memo: dict[int, torch.Tensor] = {}

    def fake_of(t: torch.Tensor, parameter: bool) -> torch.Tensor:
        hit = memo.get(id(t))
        if hit is not None:
            return hit
        where = kind if (device is not None or t.is_meta) else t.device
        with mode:
            f = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=where)
        if parameter:
            f = torch.nn.Parameter(f, requires_grad=t.requires_grad)
        elif t.requires_grad:
            f.requires_grad_(True)
        memo[id(t)] = f
        return f

    swapped: list[tuple[dict[str, Any], str, Any]] = []
    try:
        if isinstance(model, torch.nn.Module):
            for module in model.modules():
                for table, parameter in ((module._parameters, True), (module._buffers, False)):
                    for name, value in list(table.items()):
                        if isinstance(value, torch.Tensor):
                            swapped.append((table, name, value))
                            table[name] = fake_of(value, parameter)
        fake_args = tree_map(lambda a: fake_of(a, False) if isinstance(a, torch.Tensor) else a, args)
        yield FakeModel(mode=mode, args=tuple(fake_args), device=kind)
    finally:
        for table, name, value in reversed(swapped):
            table[name] = value
        memo.clear()



def on_fakes(model: Any, args: tuple, device: str | None, fn: Callable[[FakeModel | None], T]) -> T:
    """``fn(fm)`` with the model on fake tensors (:func:`fake_model`); ``fn(None)``, on the real ones, when
    fake tensors cannot run it (:func:`fake_unsupported`), with a warning naming why.

    A model on the meta device has no real tensors to fall back on: then the
    cause is raised as a ``ValueError``. Under torch.distributed (more than
    one rank) the model's own collectives (DDP's, FSDP's) need real tensors:
    ``fn(None)``; except on a fake process group (:func:`is_fake_group`) for
    a model whose parameters and buffers are all on the meta device: it runs
    on fakes (:func:`fake_sharded`).
    """
    dist = torch.distributed
    sharded = False
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        if not (is_fake_group() and isinstance(model, torch.nn.Module) and _all_meta(model)):
            return fn(None)
        sharded = True  # a meta model on a fake process group: materialised as fake tensors
    try:
        with (fake_sharded if sharded else fake_model)(model, args, device) as fm:
            return fn(fm)
    except Exception as exc:
        if not fake_unsupported(exc):
            raise
        if is_meta(model, args):
            raise ValueError(f"the model cannot be planned on the meta device: its step needs tensor values "
                             f"({type(exc).__name__}: {exc}); materialise it and plan the real model") from exc
        warnings.warn(f"planning on the real tensors: fake tensors cannot run the model ({type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''}); the unplanned step runs once",
                      RuntimeWarning, stacklevel=3)  # fmt: skip
    return fn(None)


def _all_meta(model: torch.nn.Module) -> bool:
    """Whether every parameter and buffer of ``model`` (at least one) is on the meta device."""
    tensors = list(model.parameters()) + list(model.buffers())
    return bool(tensors) and all(t.is_meta for t in tensors)


def is_fake_group() -> bool:
    """Whether the default process group is a fake one (backend "fake": its collectives move no data)."""
    try:
        return torch.distributed.get_backend() == "fake"
    except (RuntimeError, ValueError):  # no default group
        return False


@contextlib.contextmanager
def fake_sharded(model: torch.nn.Module, args: tuple, device: str | None = None) -> Iterator[FakeModel]:
    """Inside the block, the meta ``model`` (wrapped with FSDP2 or not) holds fake tensors on ``device``; on
    exit, meta tensors again.

    ``model.to_empty(device=...)`` inside a ``FakeTensorMode``: FSDP2's own
    sharded parameters become fake tensors of the same shapes, so its
    all-gathers, reshards and reduce-scatters run on fakes. On exit,
    ``model.to_empty(device="meta")``: the parameters, buffers and gradients
    are meta tensors of the same shapes (new tensor objects: a meta model
    holds no values to lose). The inputs are given as fake tensors (meta
    inputs on ``device``).
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    kind = target_device(model, args, device)
    mode = FakeTensorMode(allow_non_fake_inputs=True)

    def fake_of(t: torch.Tensor) -> torch.Tensor:
        where = kind if (device is not None or t.is_meta) else t.device
        with mode:
            f = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=where)
        return f.requires_grad_(True) if t.requires_grad else f

    try:
        with mode:
            model.to_empty(device=kind)
        fake_args = tree_map(lambda a: fake_of(a) if isinstance(a, torch.Tensor) else a, args)
        yield FakeModel(mode=mode, args=tuple(fake_args), device=kind)
    finally:
        model.to_empty(device="meta")
        for p in model.parameters():
            p.grad = None


def fake_unsupported(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says fake tensors cannot run the step: an
    op whose output depends on tensor values (``nonzero``, ``.item()``), or one with no fake kernel."""
    from torch._subclasses import fake_tensor

    kinds = tuple(getattr(fake_tensor, name) for name in (
        "UnsupportedFakeTensorException", "DataDependentOutputException", "DynamicOutputShapeException",
        "UnsupportedOperatorException") if hasattr(fake_tensor, name))  # fmt: skip
    try:
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        kinds += (GuardOnDataDependentSymNode,)
    except ImportError:  # pragma: no cover - every supported torch has it
        pass
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, kinds):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


class FakeMemory(TorchDispatchMode):
    """Counts the bytes a block of ops would allocate: its running total and its peak, above its start.

    Enter it inside a ``FakeTensorMode`` (``with fm.mode, FakeMemory() as mem:``).
    Each op output whose storage is new (not one of the op's arguments' and not
    seen before) is an allocation of the storage's size (``rounding(nbytes,
    device type)``, as the device's allocator counts it); it is freed when the
    storage is (a weak reference to it). Storages that exist before the block
    are never counted. What it does not see: memory a kernel allocates and
    frees inside itself.
    """

    def __init__(self, rounding: Callable[[int, str], int] | None = None) -> None:
        super().__init__()
        self._rounding = rounding or (lambda nbytes, _kind: nbytes)
        self._alive: dict[int, int] = {}  # storage key -> bytes counted for it
        self._old: set[int] = set()  # storages that existed before they were first seen
        self.running = 0
        self.peak_bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        inputs = set()
        for t in tree_leaves((args, kwargs)):
            if isinstance(t, torch.Tensor):
                key = _storage_key(t)
                if key is not None:
                    inputs.add(key)
                    if key not in self._alive and key not in self._old:
                        self._old.add(key)
                        weakref.finalize(t.untyped_storage(), self._old.discard, key)
        out = func(*args, **kwargs)
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            key = _storage_key(t)
            if key is None or key in inputs or key in self._alive or key in self._old:
                continue
            st = t.untyped_storage()
            nbytes = self._rounding(int(st.nbytes()), t.device.type)
            self._alive[key] = nbytes
            self.running += nbytes
            self.peak_bytes = max(self.peak_bytes, self.running)
            weakref.finalize(st, self._freed, key)
        return out

    def _freed(self, key: int) -> None:
        self.running -= self._alive.pop(key, 0)


def _storage_key(t: torch.Tensor) -> int | None:
    try:
        if not torch._C._has_storage(t):
            return None
        return t.untyped_storage()._cdata
    except Exception:
        return None
