"""What are the graphs? A step traced without its memory: fake tensors in place of the real ones.

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

May import: torch and ``.._measure`` (``_outside``: the allocator's rounding, and
its profiler when fake tensors cannot run the model); nothing else of the
package, so that the peak model, the compiled path's planning (``.._fit``) and
eager planning (``..eager``) can all use it.
"""

from ._fake import FakeMemory, FakeModel, fake_model, fake_unsupported, is_meta, on_fakes, target_device
from ._outside import OutsideStep, measure_outside

__all__ = ["FakeMemory", "FakeModel", "OutsideStep", "fake_model", "fake_unsupported", "is_meta",
           "measure_outside", "on_fakes", "target_device"]
