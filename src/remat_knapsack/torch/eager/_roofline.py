"""How long an op is modelled to take: a roofline on its FLOPs and the bytes it moves.

A recorded step's ops are timed by a model, not by a clock: a step recorded on
fake tensors runs no kernel, and a model built on the meta device must get the
plan of the same model materialised. Each op is bound either by arithmetic or
by memory traffic::

    seconds = max(flops / rates.flops, bytes_moved / rates.bandwidth) + rates.per_op

``flops`` from :data:`torch.utils.flop_counter.flop_registry` (matrix
products, convolutions, attention; 0 for every other op), called as
``FlopCounterMode`` calls it; ``bytes_moved`` is the bytes of every tensor
argument and output (their elements, not their storages). Both depend only on
shapes and dtypes, so real, fake and meta tensors of the same shapes give the
same seconds. A view moves nothing and costs 0.

May import: torch. Imports nothing else of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

__all__ = ["CPU", "CUDA", "DeviceRates", "op_flops", "op_seconds", "rates_for"]


@dataclass(frozen=True)
class DeviceRates:
    """A device's nominal throughput: arithmetic (FLOP/s), memory bandwidth (bytes/s), and the fixed
    cost of running one eager op (dispatch, and a kernel launch on a GPU), in seconds."""

    flops: float
    bandwidth: float
    per_op: float = 0.0


#: Nominal, not measured: a multi-core CPU of a few hundred GFLOP/s of float32 and tens of GB/s.
#: An eager op costs some microseconds however small, so replaying one is never free.
CPU = DeviceRates(flops=5e11, bandwidth=5e10, per_op=1e-5)

#: Nominal, not measured: a data-centre GPU's tensor-core rate at 16-bit precision and its HBM bandwidth.
CUDA = DeviceRates(flops=2e14, bandwidth=2e12, per_op=1e-5)

_RATES = {"cpu": CPU, "cuda": CUDA}

_aten = torch.ops.aten

#: Ops with no formula of their own, counted with one of the same arithmetic (same leading arguments).
_FLOP_ALIASES = {
    _aten._scaled_dot_product_flash_attention_for_cpu: _aten._scaled_dot_product_efficient_attention,
    _aten._scaled_dot_product_flash_attention_for_cpu_backward: _aten._scaled_dot_product_efficient_attention_backward,
}


def rates_for(device: str) -> DeviceRates:
    """The nominal rates of ``device`` ("cpu" or "cuda")."""
    try:
        return _RATES[device]
    except KeyError:
        raise ValueError(f"no nominal rates for device {device!r}; expected one of {sorted(_RATES)}") from None


def op_flops(func: Any, args: tuple, kwargs: dict, out: Any) -> int:
    """Floating-point operations of ``func(*args, **kwargs) -> out`` by ``torch.utils.flop_counter``'s
    formulas; 0 for an op without one, or whose formula does not take these arguments."""
    from torch.utils.flop_counter import flop_registry

    packet = getattr(func, "overloadpacket", func)
    formula = flop_registry.get(_FLOP_ALIASES.get(packet, packet))
    if formula is None:
        return 0
    try:
        return int(formula(*args, **kwargs, out_val=out))
    except Exception:
        return 0


def tensor_bytes(values: Any) -> int:
    """Bytes of the elements of every tensor among ``values`` (a view counts its own elements)."""
    return sum(t.numel() * t.element_size() for t in tree_leaves(values) if isinstance(t, torch.Tensor))


def op_seconds(func: Any, args: tuple, kwargs: dict, out: Any, rates: DeviceRates) -> float:
    """Seconds ``func`` is modelled to take on a device of ``rates``: the larger of its arithmetic
    time and its memory time, plus the device's fixed cost of an op; 0 for a view (it moves no data)."""
    if getattr(func, "is_view", False):
        return 0.0
    flops = op_flops(func, args, kwargs, out)
    moved = tensor_bytes((args, kwargs)) + tensor_bytes(out)
    return max(flops / rates.flops, moved / rates.bandwidth) + rates.per_op
