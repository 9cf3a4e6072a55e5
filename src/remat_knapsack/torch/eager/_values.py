"""The values a step on fake tensors can know: those its real integer inputs decide, kept beside the fakes.

A fake tensor has no values, so a model that reads one (``if mask.all():``,
``.item()``, ``nonzero``) cannot run on fakes; and ``transformers`` checks
for fake tensors and takes its tracing path when it sees one: it builds the
attention mask that the eager step, on the real all-ones mask, skips. A step
recorded that way is not the step the plan will run.

:class:`KnownValues` follows the values the step's real integer and boolean
inputs (token ids, attention masks, positions) decide: each op whose tensor
arguments all have known values, and whose outputs are small
(:data:`MAX_KNOWN_BYTES` each), also runs on those values (real tensors, on
the CPU), and its fake outputs get the results. Then

* a read of a value (``aten._local_scalar_dense``: ``.item()``, ``bool()``) is
  answered from them;
* an op whose output shape depends on the values (``nonzero``) is run on them,
  and its fake output takes that shape;
* ``transformers``' ``is_fake_tensor`` answers False for a tensor with known
  values (:func:`known_to_transformers`), so the model takes the path it takes
  on real tensors.

The fakes of the parameters, and of float inputs, have no known values: what
they decide stays unknown, as before. A meta input has none either (the step
then takes ``transformers``' tracing path: the mask is built, the larger of
the two). A random op's values are never known (the draw would differ), nor
are those an in-place op with an unknown argument writes.

May import: torch.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from torch.utils.weak import WeakIdKeyDictionary

__all__ = ["MAX_KNOWN_BYTES", "KnownValues", "known_to_transformers"]

#: The largest tensor whose values are followed (bytes): a causal mask of 2 x 4096 x 4096 booleans.
MAX_KNOWN_BYTES = 32 << 20

_VALUE_READS = frozenset({torch.ops.aten._local_scalar_dense.default, torch.ops.aten.item.default})


def _integer_or_bool(t: torch.Tensor) -> bool:
    return not (t.dtype.is_floating_point or t.dtype.is_complex)


class KnownValues:
    """Real values beside fake tensors (see the module docstring); an empty one knows nothing."""

    def __init__(self) -> None:
        self._values: Any = WeakIdKeyDictionary()

    def seed(self, reals: Any, fakes: Any) -> None:
        """Know the values of the fakes (``fakes``) of the real integer and boolean inputs (``reals``)."""
        from torch.utils._python_dispatch import _disable_current_modes

        for real, fake in zip(tree_leaves(reals), tree_leaves(fakes)):
            if (isinstance(real, torch.Tensor) and isinstance(fake, torch.Tensor) and not real.is_meta
                    and _integer_or_bool(real) and real.nbytes <= MAX_KNOWN_BYTES):  # fmt: skip
                with _disable_current_modes():  # a copy made under the fake mode would be a fake
                    self._values[fake] = real.detach().to("cpu", copy=True)

    def knows(self, t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t in self._values

    def _all_known(self, args: Any) -> bool:
        return all(self.knows(t) for t in tree_leaves(args) if isinstance(t, torch.Tensor))

    def _on_values(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """``func`` run on the known values (real CPU tensors), outside every mode."""
        from torch.utils._python_dispatch import _disable_current_modes

        def value(x: Any) -> Any:
            if isinstance(x, torch.Tensor):
                return self._values[x]
            if isinstance(x, torch.device):
                return torch.device("cpu")
            return x

        real_args, real_kwargs = tree_map(value, (args, kwargs))
        with _disable_current_modes(), torch.no_grad():
            return func(*real_args, **real_kwargs)

    def read(self, func: Any, args: tuple, kwargs: dict) -> tuple[bool, Any]:
        """``(True, value)`` when ``func`` reads a known value (``.item()``, ``bool()``); else ``(False, None)``."""
        if func in _VALUE_READS and args and self.knows(args[0]):
            return True, self._on_values(func, args, kwargs)
        return False, None

    def follow(self, func: Any, args: tuple, kwargs: dict, out: Any, *, random: bool,
               written: list[torch.Tensor]) -> None:  # fmt: skip
        """After ``out = func(*args, **kwargs)`` on fakes: know ``out``'s values when ``args``' are known.

        ``written``: the tensors ``func`` wrote in place; unknown from here unless their new values are known."""
        if not self._values:
            return
        outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        if random or not self._all_known((args, kwargs)) or any(t.nbytes > MAX_KNOWN_BYTES for t in outs):
            for t in outs + list(written):
                self._values.pop(t, None)
            return
        try:
            real = self._on_values(func, args, kwargs)
        except Exception:  # noqa: BLE001 - values not followed; the fake step goes on as it would
            return
        fake_leaves, _ = tree_flatten(out)
        real_leaves, _ = tree_flatten(real)
        if len(fake_leaves) != len(real_leaves):
            return
        for fake, value in zip(fake_leaves, real_leaves):
            if isinstance(fake, torch.Tensor) and isinstance(value, torch.Tensor):
                self._values[fake] = value

    def run_on_values(self, func: Any, args: tuple, kwargs: dict, fake_mode: Any) -> tuple[bool, Any]:
        """``(True, fakes)`` for an op the fake mode cannot run (its output shape depends on values) whose
        arguments' values are known: run on them, its outputs are fakes of the results. Else ``(False, None)``."""
        if not self._all_known((args, kwargs)):
            return False, None
        real = self._on_values(func, args, kwargs)
        leaves, spec = tree_flatten(real)
        fakes = [fake_mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for v in leaves]
        for fake, value in zip(fakes, leaves):
            if isinstance(value, torch.Tensor) and value.nbytes <= MAX_KNOWN_BYTES:
                self._values[fake] = value
        return True, tree_unflatten(fakes, spec)


@contextlib.contextmanager
def known_to_transformers(known: KnownValues) -> Iterator[None]:
    """Inside the block, ``transformers`` takes a fake tensor with known values for a real one.

    Its ``is_fake_tensor`` (``transformers.utils.import_utils``, which its
    ``is_tracing`` calls) answers False for such a tensor, so the model takes
    the branch it takes on real tensors (``_ignore_causal_mask_sdpa`` reads
    the mask's values and skips building it). Nothing is patched when
    ``transformers`` is not imported.
    """
    module = sys.modules.get("transformers.utils.import_utils")
    original = getattr(module, "is_fake_tensor", None)
    if original is None:
        yield
        return

    def is_fake_tensor(x: Any) -> bool:
        return bool(original(x)) and not known.knows(x)

    module.is_fake_tensor = is_fake_tensor
    try:
        yield
    finally:
        module.is_fake_tensor = original
