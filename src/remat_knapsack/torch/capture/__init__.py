"""What are the graphs? The joint graphs of one compile, on real, fake or meta tensors, and the loss around them.

Holds ``_graphs``: the partitioner's ``choose_saved_values_set`` wrapped, so
that each joint graph it is handed is kept as a :class:`Capture`
(:func:`capture_graphs`), and the saved set any budget or plan gives on it;
``_compile``: :func:`compile_and_capture`, one compile that captures the
graphs and builds no kernel.

Holds ``_fake``: :func:`fake_model` puts fake tensors (``torch._subclasses.fake_tensor``)
in place of a model's parameters, buffers and inputs for the length of a block, so
that its forward, its loss and ``torch.compile``'s capture run with shapes, dtypes
and devices but allocate nothing; a model built on the meta device is planned this
way for the device it will train on. :class:`FakeMemory` counts what a block of fake
ops would allocate and free. :func:`fake_unsupported` tells an op that fake tensors
cannot run (one whose output depends on tensor values) from a real error, and
:func:`on_fakes` runs a planning step on fake tensors, on the real ones when it must.

Holds ``_outside`` too: :func:`measure_outside`, the eager loss between the
compiled forward and backward (:class:`OutsideStep`), learnt on fake tensors.

May import: torch, ``..step`` (the allocator's rounding, and its profiler
when fake tensors cannot run the model), ``.._rng`` and ``..peaks`` (a
:class:`Capture` answers for a saved set's peak). Never the search, the
plug-in or the planning calls: the compiled path's planning (``.._fit``) and
eager planning (``..eager``) both use it.
"""

from ._compile import capture_backend, compile_and_capture
from ._fake import FakeMemory, FakeModel, fake_model, fake_unsupported, is_meta, on_fakes, target_device
from ._graphs import (
    Capture,
    acquire_choose,
    bypass,
    capture_graphs,
    find_partition_locals,
    graph_key,
    guard_choose,
    original_choose,
    release_choose,
)
from ._outside import OutsideStep, measure_outside

__all__ = ["Capture", "FakeMemory", "FakeModel", "OutsideStep", "acquire_choose", "bypass", "capture_backend",
           "capture_graphs", "compile_and_capture", "fake_model", "fake_unsupported", "find_partition_locals",
           "graph_key", "guard_choose", "is_meta", "measure_outside", "on_fakes", "original_choose",
           "release_choose", "target_device"]
