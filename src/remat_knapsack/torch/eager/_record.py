"""One eager training step, recorded op by op: what each unit's forward runs, what it allocates, and for how long.

:func:`record_step` runs ``loss(model(*args)).backward()`` once under a
``TorchDispatchMode`` and returns a :class:`Recording`:

* every aten op, in order, with the unit whose forward ran it, its measured
  seconds, the storages it created and read, whether it is random and which
  storages it wrote in place;
* every storage created during the step, with its size and the op indices
  of its creation and its release (seen through a weak reference to the
  storage, so a free is seen when it happens);
* each op's workspace: what it allocates and frees within itself (a
  convolution's backward buffers), from the allocator's events of
  ``torch.profiler`` inside a profiler range around the op.

The counts of each op within a unit's forward are those of
``torch.utils.checkpoint``'s selective-checkpoint cache (the same ops
ignored, the same per-op counter), so a plan can name an op by
``(op, occurrence)`` and the cache finds it. What the step leaves behind is
put back: gradients, buffers and the random number generators are as the
caller had them.

May import: torch, and ``.._measure`` (the profiler's allocator events).
"""

from __future__ import annotations

import bisect
import contextlib
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import SAC_IGNORED_OPS

from .._measure import profile_timeline

__all__ = ["Op", "Recording", "Storage", "clear_grads", "device_of", "preserved", "record_step"]

#: Ops that update batch norm's running statistics although their schema does not mark them mutable.
_HIDDEN_WRITES = {
    torch.ops.aten.native_batch_norm.default,
    torch.ops.aten.cudnn_batch_norm.default,
    torch.ops.aten.miopen_batch_norm.default,
}

RANGE = "remat_knapsack.op "  # profiler range around op i: RANGE + str(i)

OUTSIDE = -1  # unit index of an op outside every unit's forward (the loss, the backward, eager glue)


@dataclass
class Op:
    """One aten op of the step."""

    index: int
    name: str  # e.g. "aten.mm.default"
    unit: int  # index of the unit whose forward ran it, or OUTSIDE
    occurrence: int  # how many ops of the same overload ran before it in this unit's forward (-1 outside)
    backward: bool  # ran inside .backward()
    seconds: float
    created: tuple[int, ...]  # storages first seen as this op's outputs
    reads: tuple[int, ...]  # tracked storages (Storage.index) of its tensor arguments
    writes: tuple[int, ...]  # storages it mutates in place
    random: bool  # drew from a random number generator (dropout, rand_like, bernoulli; attention with dropout)
    own_generator: bool  # random, from a generator passed to it (not restored by checkpoint's replay)
    writes_outside: tuple[int, ...]  # storage keys it writes in place that its unit's forward did not create
    read_keys: tuple[int, ...]  # raw storage keys (untyped_storage()._cdata) of every tensor argument, parameters too
    workspace: int = 0  # bytes above its new outputs that it allocated at its worst and freed before returning


@dataclass
class Storage:
    """One storage allocated during the step (parameters, inputs and older storages are not tracked)."""

    index: int
    nbytes: int
    birth: int  # index of the op that created it
    death: int  # index of the first op that ran after it was freed (len(ops) when it outlived the step)
    unit_output: bool = False  # part of what a unit's forward returned


@dataclass
class Recording:
    """A recorded step: its ops and storages, and the units' forwards among them."""

    ops: list[Op]
    storages: list[Storage]
    unit_names: tuple[str, ...]
    first_backward: int  # index of the first op of .backward() (len(ops) when there is none)
    #: Per unit: the storages its forward was given (tracked ones; checkpoint keeps them to the backward)
    unit_inputs: list[tuple[int, ...]]
    #: Per unit: the storage keys of every tensor its forward was given (parameters' excepted)
    unit_input_keys: list[frozenset[int]]
    unit_ops: list[list[int]] = field(default_factory=list)  # per unit, its forward ops' indices

    def __post_init__(self) -> None:
        self.unit_ops = [[] for _ in self.unit_names]
        for op in self.ops:
            if op.unit != OUTSIDE:
                self.unit_ops[op.unit].append(op.index)


class _Recorder(TorchDispatchMode):
    """Records each op and each new storage; the unit hooks set :attr:`unit`."""

    def __init__(self, units: int, time_ops: bool, synchronize: Any, ranges: bool, generator_state: Any) -> None:
        super().__init__()
        self.outputs: list[list[int]] = [[] for _ in range(units)]  # per unit, the storages its forward returned
        self.inputs: list[tuple[int, ...]] = [() for _ in range(units)]
        self.input_keys: list[frozenset[int]] = [frozenset() for _ in range(units)]
        self._ranges = ranges
        self._generator_state = generator_state
        self.ops: list[Op] = []
        self.storages: list[Storage] = []
        self._alive: dict[int, int] = {}  # storage's C pointer -> Storage.index, while it lives
        self._refs: dict[int, weakref.ref] = {}
        self.unit = OUTSIDE
        self.backward = False
        self._counts: dict[Any, int] = {}
        self._unit_start = 0
        self._time_ops = time_ops
        self._synchronize = synchronize

    def enter_unit(self, unit: int) -> None:
        self.unit, self._counts, self._unit_start = unit, {}, len(self.ops)

    def _storage_ids(self, values: Any) -> list[int]:
        out = []
        for t in tree_leaves(values):
            if isinstance(t, torch.Tensor) and not t.is_meta:
                key = t.untyped_storage()._cdata
                if key in self._alive:
                    out.append(self._alive[key])
        return out

    def _created(self, out: Any, index: int, inputs: set[int]) -> tuple[int, ...]:
        """New storages among ``out``'s: not tracked yet, and not an argument's (a view of a parameter is not new)."""
        created = []
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or t.is_meta:
                continue
            st = t.untyped_storage()
            key = st._cdata
            if key in self._alive or key in inputs or st.nbytes() == 0:
                continue
            sid = len(self.storages)
            self.storages.append(Storage(sid, st.nbytes(), index, -1))
            self._alive[key] = sid
            self._refs[sid] = weakref.ref(st, self._freed_callback(key, sid))
            created.append(sid)
        return tuple(created)

    def _freed_callback(self, key: int, sid: int) -> Any:
        def freed(_ref: Any) -> None:
            self.storages[sid].death = len(self.ops)
            if self._alive.get(key) == sid:
                del self._alive[key]
            self._refs.pop(sid, None)

        return freed

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        index = len(self.ops)
        reads = self._storage_ids((args, kwargs))
        read_keys = tuple({t.untyped_storage()._cdata for t in tree_leaves((args, kwargs))
                           if isinstance(t, torch.Tensor) and not t.is_meta})  # fmt: skip
        written = self._written(func, args, kwargs)
        writes = self._storage_ids(written)
        writes_outside = tuple(t.untyped_storage()._cdata for t in written
                               if self._alive.get(t.untyped_storage()._cdata, -1) < 0
                               or self.storages[self._alive[t.untyped_storage()._cdata]].birth < self._unit_start)
        seeded = torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())
        own_generator = seeded and any(isinstance(a, torch.Generator) for a in tree_leaves((args, kwargs)))
        state = self._generator_state() if seeded else None
        start = time.perf_counter()
        if self._time_ops:
            self._synchronize()
        if self._ranges:
            with torch.profiler.record_function(f"{RANGE}{index}"):
                out = func(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        if self._time_ops:
            self._synchronize()
        seconds = time.perf_counter() - start
        unit = OUTSIDE if self.backward else self.unit
        occurrence = -1
        if unit != OUTSIDE and func not in SAC_IGNORED_OPS:
            occurrence = self._counts.get(func, 0)
            self._counts[func] = occurrence + 1
        # a seeded op is random if it moved the generator (attention with dropout_p=0 does not)
        random = own_generator or (seeded and not _same_state(state, self._generator_state()))
        created = self._created(out, index, set(read_keys))
        self.ops.append(Op(index, str(func), unit, occurrence, self.backward, seconds, created,
                           tuple(reads), tuple(writes), random, own_generator, writes_outside, read_keys))  # fmt: skip
        return out

    @staticmethod
    def _written(func: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
        """The tensors ``func`` writes in place: its schema's mutable arguments, and batch norm's running statistics."""
        schema = getattr(func, "_schema", None)
        if schema is None:
            return []
        written = []
        if func in _HIDDEN_WRITES and len(args) > 5 and args[5]:  # training=True
            written += [t for t in args[3:5] if isinstance(t, torch.Tensor)]
        for position, argument in enumerate(schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            written += [t for t in tree_leaves(value) if isinstance(t, torch.Tensor) and not t.is_meta]
        return written

    def finish(self) -> None:
        for storage in self.storages:
            if storage.death < 0:
                storage.death = len(self.ops)


def record_step(model: Any, args: tuple, loss_fn: Any, units: list[tuple[str, torch.nn.Module]],
                time_ops: bool = True, workspaces: bool = True) -> Recording:  # fmt: skip
    """Run one step of ``loss_fn(model(*args)).backward()`` under the recorder; leave the model as found.

    ``units`` are ``(name, module)`` pairs; each must run its forward exactly
    once in the step (``ValueError`` naming the unit otherwise). With
    ``workspaces``, the step runs under ``torch.profiler`` to measure each
    op's workspace.
    """
    device = device_of(model, args)
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    recorder = _Recorder(len(units), time_ops, synchronize, workspaces, _generator_state(device))
    calls = [0] * len(units)
    handles = []
    names = [name for name, _ in units]
    parameters = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    parameter_keys = {p.untyped_storage()._cdata for p in parameters}
    for index, (_, module) in enumerate(units):
        handles.append(module.register_forward_pre_hook(_enter(recorder, index, calls, names, parameter_keys),
                                                        with_kwargs=True))  # fmt: skip
        handles.append(module.register_forward_hook(_leave(recorder)))
    try:
        first_backward = 0

        def step() -> None:
            nonlocal first_backward
            with recorder:
                loss = loss_fn(model(*args))
                recorder.unit = OUTSIDE
                recorder.backward = True
                first_backward = len(recorder.ops)
                loss.backward()
                del loss
            synchronize()

        with preserved(model, args, device):
            timeline = profile_timeline(step, [RANGE], device) if workspaces else None
            if timeline is None:
                step()
    finally:
        for handle in handles:
            handle.remove()
    recorder.finish()
    if timeline is not None:
        _set_workspaces(recorder, timeline)
    for index, count in enumerate(calls):
        if count != 1:
            raise ValueError(f"unit {units[index][0]!r} ran its forward {count} times in one step; "
                             "a unit must run exactly once (name a module called once per step)")  # fmt: skip
    for sids in recorder.outputs:
        for sid in sids:
            recorder.storages[sid].unit_output = True
    return Recording(recorder.ops, recorder.storages, tuple(names), first_backward, recorder.inputs,
                     recorder.input_keys)  # fmt: skip


def _set_workspaces(recorder: _Recorder, timeline: Any) -> None:
    """Each op's allocator peak inside its profiler range, above its start, less the new storages it returned."""
    times = [t for t, _ in timeline.events]
    running = [0]
    for _, nbytes in timeline.events:
        running.append(running[-1] + nbytes)
    for name, start, end in timeline.intervals:
        op = recorder.ops[int(name[len(RANGE):])]
        first, last = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
        if last <= first:
            continue
        inner = max(running[first + 1: last + 1]) - running[first]
        created = sum(recorder.storages[sid].nbytes for sid in op.created)
        op.workspace = max(0, inner - created)


def _enter(recorder: _Recorder, index: int, calls: list[int], names: list[str], parameter_keys: set[int]) -> Any:
    def hook(module: Any, args: Any, kwargs: Any) -> None:
        if recorder.unit != OUTSIDE:
            raise ValueError(f"units nest: {names[index]!r} runs inside {names[recorder.unit]!r}; "
                             "name modules that do not contain each other")  # fmt: skip
        calls[index] += 1
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and not t.is_meta]
        recorder.inputs[index] = tuple(recorder._storage_ids(tensors))
        recorder.input_keys[index] = frozenset(t.untyped_storage()._cdata for t in tensors) - parameter_keys
        recorder.enter_unit(index)

    return hook


def _leave(recorder: _Recorder) -> Any:
    def hook(module: Any, inputs: Any, output: Any) -> None:
        if recorder.unit != OUTSIDE:
            recorder.outputs[recorder.unit] += recorder._storage_ids(output)
        recorder.unit = OUTSIDE

    return hook


def _generator_state(device: str) -> Any:
    """A function returning the default generators' states (what a random op advances): the CPU's, and CUDA's."""
    if device == "cuda":
        cuda = torch.cuda.default_generators[torch.cuda.current_device()]
        return lambda: (torch.default_generator.get_state(), cuda.get_offset())
    return lambda: (torch.default_generator.get_state(),)


def _same_state(a: tuple, b: tuple) -> bool:
    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b))


def device_of(model: Any, args: tuple) -> str:
    tensors = [a for a in tree_leaves(args) if isinstance(a, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        tensors += list(model.parameters())[:1]
    return "cuda" if any(t.is_cuda for t in tensors) else "cpu"


@contextlib.contextmanager
def preserved(model: Any, args: tuple, device: str) -> Iterator[None]:
    """Inside the block: no gradient on the model's parameters or on the inputs that collect one; after it,
    those gradients, the model's buffers and the random generators are as they were before it."""
    leaves = _grad_leaves(model, args)
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
    for t in _grad_leaves(model, args):
        t.grad = None


def _grad_leaves(model: Any, args: tuple) -> list[torch.Tensor]:
    """The tensors a step's backward gives a ``.grad``: the parameters, and leaf inputs that require grad."""
    parameters = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    return parameters + [t for t in tree_leaves(args) if isinstance(t, torch.Tensor) and t.requires_grad
                         and t.is_leaf]  # fmt: skip


def snapshot_buffers(model: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if not isinstance(model, torch.nn.Module):
        return []
    return [(b, b.detach().clone()) for b in model.buffers()]


def restore_buffers(model: Any, buffers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    with torch.no_grad():
        for buffer, saved in buffers:
            buffer.copy_(saved)
