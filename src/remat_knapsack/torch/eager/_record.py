"""One eager training step, recorded op by op: what each unit's forward runs, what it allocates, and for how long.

:func:`record_step` runs ``loss(model(*args)).backward()`` once under a
``TorchDispatchMode`` and returns a :class:`Recording`. By default the step
runs on fake tensors (:func:`..capture.fake_model`): every op computes its
outputs' shapes and allocates nothing, so a step that does not fit in memory,
and a model built on the meta device, are recorded as well. What the step's
real integer inputs decide (a mask's ``.all()``, ``nonzero`` of token ids)
is followed on their values (:mod:`._values`), so the model takes the branch
it takes on real tensors. When fake tensors cannot run the model (an op whose
output depends on other values), or with ``fake=False``, it runs on the model's
own tensors. Either way the recording
holds:

* every aten op, in order, with the unit whose forward ran it, its modelled
  seconds (:mod:`._roofline`), the storages it created and read, whether it
  is random and which storages it wrote in place;
* every storage created during the step, with its size and the op indices
  of its creation and its release (seen through a weak reference to the
  storage, fake or real, so a free is seen when it happens); a storage
  resized in place (``UntypedStorage.resize_``, no aten op: FSDP2 frees a
  layer's unsharded parameters by resizing their storage to 0 and
  all-gathers them again into it resized back) ends there, and its new size
  is a storage of its own, created by no op, so never a knapsack item;
* each op's workspace: what it allocates and frees within itself (a
  convolution's backward buffers), measured once per distinct op signature
  on real tensors of its arguments' shapes (:mod:`._workspace`);
* the casts of parameters that ``torch.autocast`` caches, and where its cache
  is cleared (the outermost region's exit, seen through
  ``torch.clear_autocast_cache``): a checkpointed unit cannot free them earlier;
* on fakes, where each storage a unit makes would be freed if the unit were
  checkpointed (:attr:`Storage.released`): the model's forward runs once
  more, alone, with every unit's forward in ``torch.utils.checkpoint``, so
  autograd holds nothing and the forward's own references decide;
* the autograd engine's sums of two gradients of one input, made in place
  where the real engine makes them so (:meth:`_Recorder.finish`): on fake
  tensors, and under a dispatch mode, it allocates each sum.

An op is random when it is tagged ``nondeterministic_seeded``, unless its
schema's ``dropout_p`` (or a dropout op's ``p``) is 0 or its ``train`` is
False: that is what draws from a generator, and a fake op draws nothing, so
the rule is the schema's, not the generator's state.

A unit's forward runs from the last of its forward pre-hooks to the first
of its forward hooks: what hooks registered before the recorder's run
(FSDP2's all-gather before the forward, its reshard after it) is outside the
unit, as it is outside a checkpointed forward, which wraps ``forward`` alone.

The counts of each op within a unit's forward are those of
``torch.utils.checkpoint``'s selective-checkpoint cache (the same ops
ignored, the same per-op counter), so a plan can name an op by
``(op, occurrence)`` and the cache finds it. What the step leaves behind is
put back: gradients, buffers and the random number generators are as the
caller had them (:func:`..step.preserved`).

May import: torch, ``..step``, ``..capture`` (fake tensors), ``._roofline``,
``._values`` and ``._workspace``.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map
from torch.utils.checkpoint import SAC_IGNORED_OPS

from ..capture import FakeModel, on_fakes, target_device
from ..step import preserved
from ._roofline import DeviceRates, op_seconds, rates_for
from ._values import KnownValues, known_to_transformers
from ._workspace import OpCall, measure_workspaces, op_call

__all__ = ["Op", "Recording", "Storage", "fake_device", "record_step"]

#: Ops that update batch norm's running statistics although their schema does not mark them mutable.
_HIDDEN_WRITES = {
    torch.ops.aten.native_batch_norm.default,
    torch.ops.aten.cudnn_batch_norm.default,
    torch.ops.aten.miopen_batch_norm.default,
}

#: Metadata queries (sizes, strides, the device): they compute nothing, and fake tensors dispatch some of
#: them (``prim.device``) where real ones do not, so they are not recorded.
_UNRECORDED = frozenset(op for op in SAC_IGNORED_OPS if op is not torch.ops.aten.detach.default)

#: Ops whose ``p`` is a drop probability: with ``p == 0`` they draw nothing.
_DROPOUT_OPS = frozenset({"native_dropout", "dropout", "dropout_", "feature_dropout", "feature_dropout_",
                          "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_"})

#: Namespaces of ops whose workspace is not measured: collectives (run alone on made-up tensors, one would
#: wait for the other ranks), FSDP's copies in and out of its all-gather buffers, the profiler's ranges.
_UNMEASURED_NAMESPACES = frozenset({"c10d", "_c10d_functional", "fsdp", "profiler"})

OUTSIDE = -1  # unit index of an op outside every unit's forward (the loss, the backward, eager glue)


@dataclass
class Op:
    """One aten op of the step."""

    index: int
    name: str  # e.g. "aten.mm.default"
    unit: int  # index of the unit whose forward ran it, or OUTSIDE
    occurrence: int  # how many ops of the same overload ran before it in this unit's forward (-1 outside)
    backward: bool  # ran inside .backward()
    seconds: float  # seconds the op is modelled to take (._roofline)
    created: tuple[int, ...]  # storages first seen as this op's outputs
    reads: tuple[int, ...]  # tracked storages (Storage.index) of its tensor arguments
    writes: tuple[int, ...]  # storages it mutates in place
    random: bool  # draws from a random number generator (dropout, rand_like, bernoulli; attention with dropout)
    own_generator: bool  # random, from a generator passed to it (not restored by checkpoint's replay)
    writes_outside: tuple[int, ...]  # storage keys it writes in place that its unit's forward did not create
    read_keys: tuple[int, ...]  # raw storage keys (untyped_storage()._cdata) of every tensor argument, parameters too
    workspace: int = 0  # bytes above its new outputs that it allocates at its worst and frees before returning
    #: In the backward: index of the first op of the autograd node that ran it (the node unpacks its saved
    #: tensors, and so replays a checkpoint, before its first op); -1 in the forward.
    node_start: int = -1


@dataclass
class Storage:
    """One storage allocated during the step (parameters, inputs and older storages are not tracked)."""

    index: int
    #: Negative: an older storage resized in place from ``-nbytes`` at ``birth`` (its bytes leave); 0: the
    #: engine's sum of two gradients, made in place in the one it held (:meth:`_Recorder.finish`)
    nbytes: int
    birth: int  # index of the op that created it
    death: int  # index of the first op that ran after it was freed (len(ops) when it outlived the step)
    unit_output: bool = False  # part of what a unit's forward returned
    #: A cast of a parameter that autocast caches: index of the first op after the cache was cleared (the
    #: outermost autocast region's exit), or -1. A checkpointed unit cannot free it before then.
    held_until: int = -1
    #: Made in a unit's forward: index of the first op after it was freed when every unit's forward runs
    #: checkpointed (nothing saved for the backward: what holds it then is the forward's own Python
    #: references, a local variable until its function returns); ``len(ops)`` when it outlived the
    #: forward then, -1 when that forward was not recorded (see :func:`record_step`).
    released: int = -1


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
    device: str = "cpu"  # where the step is planned to run: the ops' seconds and workspaces are that device's
    fake: bool = True  # recorded on fake tensors (False: on the model's own tensors)
    keep_output: bool = True  # the step kept the model's output through the backward (False: dropped after the loss)
    unit_ops: list[list[int]] = field(default_factory=list)  # per unit, its forward ops' indices

    def __post_init__(self) -> None:
        self.unit_ops = [[] for _ in self.unit_names]
        for op in self.ops:
            if op.unit != OUTSIDE:
                self.unit_ops[op.unit].append(op.index)


class _Recorder(TorchDispatchMode):
    """Records each op and each new storage; the unit hooks set :attr:`unit`.

    Works the same on real and on fake tensors: it sits above a
    ``FakeTensorMode`` (``with fm.mode, recorder:``), so it sees each op
    first and runs it through the fake mode. ``fake_mode``: that mode; a
    real tensor an op meets there (one the loss closes over, a module's
    unregistered attribute) is handed to the op as the mode's fake of it, so
    that its storage is an old one, as the real tensor's is in a real step.
    """

    def __init__(self, units: int, rates: DeviceRates, fake_mode: Any = None) -> None:
        super().__init__()
        self._fake_mode = fake_mode
        self.fake = fake_mode is not None
        self.outputs: list[list[int]] = [[] for _ in range(units)]  # per unit, the storages its forward returned
        self.inputs: list[tuple[int, ...]] = [() for _ in range(units)]
        self.input_keys: list[frozenset[int]] = [frozenset() for _ in range(units)]
        self.ops: list[Op] = []
        self.storages: list[Storage] = []
        self.signatures: list[Any] = []  # per op, its workspace signature (None: a view, never measured)
        self.calls: dict[Any, OpCall] = {}  # per distinct signature, one call to measure
        self._rates = rates
        self._alive: dict[int, int] = {}  # storage's C pointer -> Storage.index, while it lives
        self._refs: dict[int, weakref.ref] = {}
        self.unit = OUTSIDE
        self.backward = False
        self._counts: dict[Any, int] = {}
        self._unit_start = 0
        self.autocast_depth = 0  # nesting of autocast regions (their __enter__ and __exit__, seen by _autocast_seen)
        self._autocast_cached: list[int] = []  # storages of parameters' casts that autocast's cache holds
        self.known = KnownValues()  # on fakes: the values the step's integer inputs decide
        self._node: Any = None  # the autograd node that ran the last backward op, and its first op's index
        self._node_first = -1
        self.finished_node: Any = None  # the autograd node whose outputs the engine is adding to its buffers
        # (op index, buffered gradient's storage, sum's storage) of each sum the engine could make in place
        self._accumulations: list[tuple[int, int, int]] = []

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

    def resized(self, storage: Any, old: int, new: int) -> None:
        """A storage resized in place (``UntypedStorage.resize_``): FSDP2 frees a layer's unsharded
        parameters by resizing their storage to 0 and allocates them again by resizing it back.

        The bytes it held end here (a tracked storage dies; an untracked one, allocated before the step,
        counts ``-old`` from here on) and its new bytes are a new storage, created by no op.
        """
        if old == new:
            return
        key = storage._cdata
        sid = self._alive.pop(key, None)
        if sid is not None:
            self.storages[sid].death = len(self.ops)
            self._refs.pop(sid, None)  # the weak reference goes, and its callback with it
        elif old > 0:
            self.storages.append(Storage(len(self.storages), -old, len(self.ops), -1))
        if new > 0:
            sid = len(self.storages)
            self.storages.append(Storage(sid, new, len(self.ops), -1))
            self._alive[key] = sid
            self._refs[sid] = weakref.ref(storage, self._freed_callback(key, sid))

    def _freed_callback(self, key: int, sid: int) -> Any:
        def freed(_ref: Any) -> None:
            self.storages[sid].death = len(self.ops)
            if self._alive.get(key) == sid:
                del self._alive[key]
            self._refs.pop(sid, None)

        return freed

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        if func in _UNRECORDED:
            return func(*args, **kwargs)
        if self._fake_mode is not None:
            args, kwargs = tree_map(self._as_fake, (args, kwargs))
        index = len(self.ops)
        reads = self._storage_ids((args, kwargs))
        read_keys = tuple({t.untyped_storage()._cdata for t in tree_leaves((args, kwargs))
                           if isinstance(t, torch.Tensor) and not t.is_meta})  # fmt: skip
        written = self._written(func, args, kwargs)
        writes = self._storage_ids(written)
        writes_outside = tuple(t.untyped_storage()._cdata for t in written
                               if self._alive.get(t.untyped_storage()._cdata, -1) < 0
                               or self.storages[self._alive[t.untyped_storage()._cdata]].birth < self._unit_start)
        random = is_random(func, args, kwargs)
        own_generator = random and any(isinstance(a, torch.Generator) for a in tree_leaves((args, kwargs)))
        self._note_call(func, args, kwargs)
        out = self._call(func, args, kwargs, random, written)
        seconds = op_seconds(func, args, kwargs, out, self._rates)
        unit = OUTSIDE if self.backward else self.unit
        occurrence = -1
        if unit != OUTSIDE and func not in SAC_IGNORED_OPS:
            occurrence = self._counts.get(func, 0)
            self._counts[func] = occurrence + 1
        created = self._created(out, index, set(read_keys))
        if created and self._autocast_caches(func, args, kwargs):
            self._autocast_cached += created
        if self.backward and func is torch.ops.aten.add.Tensor and len(created) == 1:
            self._note_accumulation(index, args, created[0])
        self.ops.append(Op(index, str(func), unit, occurrence, self.backward, seconds, created,
                           tuple(reads), tuple(writes), random, own_generator, writes_outside, read_keys,
                           node_start=self._node_start(index)))  # fmt: skip
        return out

    def _node_start(self, index: int) -> int:
        """In the backward, the index of the first op of the autograd node running op ``index``; else -1."""
        if not self.backward:
            return -1
        node = torch._C._current_autograd_node()
        if node is None or node is not self._node:
            self._node, self._node_first = node, index  # holds the node until the next one runs: one at a time
        return self._node_first

    def _note_accumulation(self, index: int, args: tuple, sid: int) -> None:
        """Op ``index`` (an ``add``) is the engine summing two gradients of one input, if the node whose
        outputs are being passed on runs it: keep it when the real engine could sum in place into the
        buffered one (a dense tensor of its own storage, not a view, of the sum's shape and dtype), see
        :meth:`finish`."""
        node = self.finished_node
        if node is None or torch._C._current_autograd_node() is not node:
            return
        old, new = args[0], args[1]
        if not (isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor)):
            return
        key = old.untyped_storage()._cdata
        if key not in self._alive or old.shape != new.shape or old.dtype != new.dtype:
            return
        # a view (a weight's gradient transposed back to the weight's layout) shares its storage with its base
        if old._is_view() or old.untyped_storage().nbytes() != self.storages[sid].nbytes or not old.is_contiguous():
            return
        self._accumulations.append((index, self._alive[key], sid))

    def _call(self, func: Any, args: tuple, kwargs: dict, random: bool, written: list[torch.Tensor]) -> Any:
        """``func`` on its arguments; on fakes, with the values the step's integer inputs decide (:mod:`._values`):
        a read of a known value answered, an op whose output shape depends on known values run on them."""
        if self._fake_mode is None:
            return func(*args, **kwargs)
        found, value = self.known.read(func, args, kwargs)
        if found:
            return value
        try:
            out = func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException):
            ran, out = self.known.run_on_values(func, args, kwargs, self._fake_mode)
            if not ran:
                raise
            return out
        self.known.follow(func, args, kwargs, out, random=random, written=written)
        return out

    def _autocast_caches(self, func: Any, args: tuple, kwargs: dict) -> bool:
        """Whether ``func`` is a cast that autocast's cache keeps (``cached_cast``): a float32 leaf that requires
        grad (a parameter) copied to a lower precision, inside an autocast region with its cache enabled."""
        if func is not torch.ops.aten._to_copy.default or not self.autocast_depth or not args:
            return False
        if not torch.is_autocast_cache_enabled():
            return False
        a = args[0]
        dtype = kwargs.get("dtype")
        return (isinstance(a, torch.Tensor) and a.dtype == torch.float32 and a.requires_grad and a.is_leaf
                and not a._is_view() and dtype in (torch.bfloat16, torch.float16))  # fmt: skip

    def autocast_cleared(self) -> None:
        """The outermost autocast region exited and cleared its cache: the casts it held may go from here."""
        for sid in self._autocast_cached:
            self.storages[sid].held_until = len(self.ops)
        self._autocast_cached = []

    def _as_fake(self, value: Any) -> Any:
        """The fake mode's fake of a real tensor (the same one each time), anything else as it is."""
        from torch._subclasses.fake_tensor import FakeTensor

        if isinstance(value, torch.Tensor) and not isinstance(value, FakeTensor):
            fake = self._fake_mode.from_tensor(value)
            self.known.seed(value, fake)  # a constant the model made (``x[:, [-1, 0]]``'s index): its values are known
            return fake
        return value

    def _note_call(self, func: Any, args: tuple, kwargs: dict) -> None:
        """Keep the op's workspace signature, and one call per signature for :func:`measure_workspaces`."""
        if getattr(func, "is_view", False) or getattr(func, "namespace", "aten") in _UNMEASURED_NAMESPACES:
            self.signatures.append(None)
            return
        signature, call = op_call(func, args, kwargs)
        self.signatures.append(signature)
        self.calls.setdefault(signature, call)

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

    def finish(self, workspaces: dict[Any, int]) -> None:
        """Close the storages still alive at the step's end, and give each op its signature's workspace."""
        self.autocast_cleared()
        for storage in self.storages:
            if storage.death < 0:
                storage.death = len(self.ops)
        self._accumulate_in_place()
        for op, signature in zip(self.ops, self.signatures):
            op.workspace = workspaces.get(signature, 0) if signature is not None else 0

    def _accumulate_in_place(self) -> None:
        """The engine's sums of two gradients, made in place where the real step makes them so.

        The autograd engine adds a second gradient of one input into the one
        it holds (``old.add_(new)``) when it holds the last reference to it;
        on fake tensors (a tensor subclass), or under a dispatch mode, it
        allocates the sum instead. Where the recording saw the held gradient
        freed right after the sum (nothing else held it), the sum is that
        storage: it lives on to the sum's death, and the sum allocates nothing.
        """
        root: dict[int, int] = {}
        for index, old, new in self._accumulations:
            held = root.get(old, old)
            if self.storages[old].death != index + 1 or self.storages[new].birth != index:
                continue
            self.storages[held].death = self.storages[new].death
            self.storages[new].nbytes = 0
            root[new] = held
        self._accumulations = []


def is_random(func: Any, args: tuple, kwargs: dict) -> bool:
    """Whether ``func`` draws from a random number generator: tagged ``nondeterministic_seeded``, and
    neither a ``dropout_p`` (a dropout op's ``p``) of 0 nor ``train=False`` among its arguments."""
    if torch.Tag.nondeterministic_seeded not in getattr(func, "tags", ()):
        return False
    values = _arguments(func, args, kwargs)
    if values.get("train", True) is False:
        return False
    name = func._schema.name.split("::")[-1]
    p = values.get("dropout_p", values.get("p") if name in _DROPOUT_OPS else None)
    return not (isinstance(p, (int, float)) and not isinstance(p, bool) and p == 0)


def _arguments(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """``func``'s arguments by their schema's names, defaults filled in."""
    values = {}
    for position, argument in enumerate(func._schema.arguments):
        if position < len(args) and not argument.kwarg_only:
            values[argument.name] = args[position]
        elif argument.name in kwargs:
            values[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            values[argument.name] = argument.default_value
    return values


def fake_device(target: str) -> str:
    """Where the fake tensors of a step planned for ``target`` live: ``target``, except CUDA where no GPU is
    available (a PyTorch without CUDA cannot run fake CUDA ops), which is recorded on fake CPU tensors."""
    return "cuda" if target == "cuda" and torch.cuda.is_available() else "cpu"


def record_step(model: Any, args: tuple, loss_fn: Any, units: list[tuple[str, torch.nn.Module]], *,
                device: str | None = None, fake: bool = True, workspaces: bool = True,
                keep_output: bool = True) -> Recording:  # fmt: skip
    """Run one training step under the recorder; leave the model as found.

    ``keep_output``: the step is ``out = model(*args); loss_fn(out).backward()``
    (the output alive through the backward), or, False,
    ``loss_fn(model(*args)).backward()`` (the output freed after the loss).

    ``units`` are ``(name, module)`` pairs; each must run its forward exactly
    once in the step (``ValueError`` naming the unit otherwise). ``device``:
    where the step is planned to run, "cpu" or "cuda" (default: where the
    model's parameters or the inputs are, the CPU for a meta model); it sets
    the ops' modelled seconds and where workspaces are measured.
    ``workspaces``: measure each distinct op's workspace (else every op's is 0).

    ``fake``: run the step on fake tensors (nothing of the step is
    allocated; a step planned for CUDA where no GPU is available runs on
    fake CPU tensors), or, when fake tensors cannot run the model
    (:func:`..capture.on_fakes`: a warning naming the cause; a ``ValueError``
    for a meta model), on the model's own tensors, as with ``fake=False``.
    :attr:`Recording.fake` says which. Other exceptions of the step
    propagate as they are.
    """
    target = target_device(model, args, device)
    names = [name for name, _ in units]
    calls = [0] * len(units)
    rates = rates_for(target)

    def record(fm: FakeModel | None) -> tuple[_Recorder, int]:
        calls[:] = [0] * len(units)
        if fm is None:
            recorder = _Recorder(len(units), rates)
            return recorder, _run(recorder, model, args, loss_fn, units, calls, contextlib.nullcontext(), keep_output)
        recorder = _Recorder(len(units), rates, fm.mode)
        recorder.known.seed(args, fm.args)
        first_backward = _run(recorder, model, fm.args, loss_fn, units, calls, fm.mode, keep_output)
        if not _distributed():
            checkpointed = _Recorder(len(units), rates, fm.mode)
            checkpointed.known.seed(args, fm.args)
            _checkpointed_forward(checkpointed, model, fm.args, units, fm.mode)
            _note_releases(recorder.storages, recorder.ops[:first_backward], checkpointed)
        return recorder, first_backward

    with preserved(model, args, target_device(model, args)):
        recorder, first_backward = on_fakes(model, args, fake_device(target), record) if fake else record(None)
        measured = measure_workspaces(recorder.calls, target) if workspaces else {}
    recorder.finish(measured)
    for index, count in enumerate(calls):
        if count != 1:
            raise ValueError(f"unit {names[index]!r} ran its forward {count} times in one step; "
                             "a unit must run exactly once (name a module called once per step)")  # fmt: skip
    for sids in recorder.outputs:
        for sid in sids:
            recorder.storages[sid].unit_output = True
    return Recording(recorder.ops, recorder.storages, tuple(names), first_backward, recorder.inputs,
                     recorder.input_keys, device=target, fake=recorder.fake, keep_output=keep_output)  # fmt: skip


def _run(recorder: _Recorder, model: Any, args: tuple, loss_fn: Any, units: list[tuple[str, torch.nn.Module]],
         calls: list[int], mode: Any, keep_output: bool) -> int:  # fmt: skip
    """The step under ``mode`` (the fake mode, or none) and the recorder, with the unit hooks on; the index
    of its first backward op."""
    parameters = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    parameter_keys = {p.untyped_storage()._cdata for p in parameters}
    handles = _unit_hooks(recorder, units, calls, parameter_keys)
    try:
        with mode, recorder, _resizes_seen(recorder), _autocast_seen(recorder), known_to_transformers(recorder.known):
            out = model(*args)
            loss = loss_fn(out)
            if not keep_output:
                del out  # freed here, before the backward, unless the loss saved it
            recorder.unit = OUTSIDE
            recorder.backward = True
            first_backward = len(recorder.ops)
            with _node_ends_seen(recorder, loss):
                loss.backward()
            del loss
            out = None  # kept through the backward: freed after it
    finally:
        for handle in handles:
            handle.remove()
    return first_backward


def _unit_hooks(recorder: _Recorder, units: list[tuple[str, torch.nn.Module]], calls: list[int],
                parameter_keys: set[int]) -> list[Any]:  # fmt: skip
    """Each unit's hooks that tell ``recorder`` where its forward starts and ends; their handles."""
    names = [name for name, _ in units]
    handles = []
    for index, (_, module) in enumerate(units):
        handles.append(module.register_forward_pre_hook(_enter(recorder, index, calls, names, parameter_keys),
                                                        with_kwargs=True))  # fmt: skip
        # first of the forward hooks: what the others run (FSDP2's reshard after forward) is outside the
        # unit, as it is outside the checkpointed forward
        handles.append(module.register_forward_hook(_leave(recorder), prepend=True))
    return handles


@contextlib.contextmanager
def _node_ends_seen(recorder: _Recorder, loss: Any) -> Any:
    """While the backward runs, each autograd node's post-hook tells the recorder that the node has run:
    the engine then passes its outputs on, summing two gradients of one input (:meth:`_Recorder.finish`)."""
    handles = []
    grad_fn = getattr(loss, "grad_fn", None)
    seen: dict[int, Any] = {}  # held while the walk runs, so that no node's id is reused for another
    stack = [grad_fn] if grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if node.next_functions:
            handles.append(node.register_hook(_ended(recorder, node)))
        stack += [n for n, _ in node.next_functions if n is not None]
    seen.clear()
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        recorder.finished_node = None


def _ended(recorder: _Recorder, node: Any) -> Any:
    def hook(grad_inputs: Any, grad_outputs: Any) -> None:
        recorder.finished_node = node

    return hook


def _distributed() -> bool:
    """Whether this process is one of several ranks (their collectives must run in step: no extra forward)."""
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _checkpointed_forward(recorder: _Recorder, model: Any, args: tuple, units: list[tuple[str, torch.nn.Module]],
                          mode: Any) -> None:  # fmt: skip
    """The step's forward alone, on fakes, under ``recorder``, with every unit's forward in a non-reentrant
    ``torch.utils.checkpoint``: autograd saves nothing inside the units, so each storage a unit makes is
    freed where the forward's own references to it go (:attr:`Storage.released`)."""
    handles, patched = _unit_hooks(recorder, units, [0] * len(units), set()), []
    for _, module in units:
        own = module.__dict__.get("forward")
        patched.append((module, own))
        module.forward = _in_checkpoint(module.forward)
    try:
        with mode, recorder, _autocast_seen(recorder), known_to_transformers(recorder.known):
            model(*args)
    finally:
        for handle in handles:
            handle.remove()
        for module, own in patched:
            if own is None:
                del module.forward
            else:
                module.forward = own
    recorder.finish({})


def _in_checkpoint(forward: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)

    return run


def _note_releases(storages: list[Storage], forward: list[Op], checkpointed: _Recorder) -> None:
    """Each unit-made storage's :attr:`Storage.released`, from the checkpointed forward's recording (the
    model's call alone: the step's ``forward`` ops go on with the loss); left at -1 when that forward ran
    other ops than the step's (then the timeline assumes a free after the last use)."""
    end = len(checkpointed.ops)
    if [op.name for op in forward[:end]] != [op.name for op in checkpointed.ops]:
        return
    for op, again in zip(forward, checkpointed.ops):
        if op.unit == OUTSIDE or len(op.created) != len(again.created):
            continue
        for sid, twin in zip(op.created, again.created):
            storages[sid].released = min(checkpointed.storages[twin].death, end)


@contextlib.contextmanager
def _autocast_seen(recorder: _Recorder) -> Any:
    """The recorder follows autocast's regions while the step runs: their nesting (``torch.autocast`` enters
    and exits through ``torch.autocast_increment_nesting`` and ``torch.autocast_decrement_nesting``) and the
    clearing of its cache of parameters' casts when the outermost one exits (``torch.clear_autocast_cache``),
    which no aten op shows."""
    names = ("autocast_increment_nesting", "autocast_decrement_nesting", "clear_autocast_cache")
    originals = {name: getattr(torch, name) for name in names}

    def increment() -> int:
        recorder.autocast_depth += 1
        return originals["autocast_increment_nesting"]()

    def decrement() -> int:
        recorder.autocast_depth = max(0, recorder.autocast_depth - 1)
        return originals["autocast_decrement_nesting"]()

    def clear() -> None:
        recorder.autocast_cleared()
        originals["clear_autocast_cache"]()

    torch.autocast_increment_nesting, torch.autocast_decrement_nesting, torch.clear_autocast_cache = (
        increment, decrement, clear)
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


@contextlib.contextmanager
def _resizes_seen(recorder: _Recorder) -> Any:
    """``UntypedStorage.resize_`` reports each resize to the recorder while the step runs (a resize is no
    aten op: the dispatch mode does not see it)."""
    cls = torch.UntypedStorage
    own = cls.__dict__.get("resize_")
    original = cls.resize_

    def resize_(storage: Any, size: int) -> Any:
        old = storage.nbytes()
        out = original(storage, size)
        recorder.resized(storage, old, storage.nbytes())
        return out

    cls.resize_ = resize_
    try:
        yield
    finally:
        if own is None:
            del cls.resize_
        else:
            cls.resize_ = own


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
