"""Which ops may be run alone, for real, to measure their workspace: the size cap shared by every planner.

The peak models measure what an op allocates beyond its outputs by running it
once on real tensors of its shapes (eager's ``eager._workspace``, aot_eager's
``peaks._liveness.op_workspaces``, inductor's fallback kernels in
``peaks._inductor``). At the size a large model trains that run costs more than
planning may: Llama 3 8B at 8192 tokens has 2 GiB of bf16 logits, and its bf16
matmuls run for minutes on a CPU. So an op is run only when its input and output
storages hold at most :data:`WORKSPACE_MAX_BYTES` together and it takes at most
:data:`WORKSPACE_MAX_FLOPS` (``torch.utils.flop_counter``'s formulas), per
device; above either its workspace counts 0, and a ``RuntimeWarning`` names it.
:func:`made_up_tensor` makes the real tensors such a run is given.

May import: torch.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["WORKSPACE_MAX_BYTES", "WORKSPACE_MAX_FLOPS", "made_up_tensor", "op_cost", "over_workspace_cap"]

#: Per device: the most bytes an op's input and output storages may hold for it to be run for its workspace.
WORKSPACE_MAX_BYTES = {"cpu": 256 << 20, "cuda": 4 << 30}
#: Per device: the most FLOPs it may take (2e10: 20 s of bf16 matmul on an AVX2 CPU; 1e13: about 20 ms on an H100).
WORKSPACE_MAX_FLOPS = {"cpu": 2e10, "cuda": 1e13}


def _storage_bytes(t: torch.Tensor) -> int:
    """Bytes of the smallest storage that holds ``t`` (an expanded tensor: its one row)."""
    if t.numel() == 0:
        return 0
    return (1 + sum((int(d) - 1) * abs(int(s)) for d, s in zip(t.shape, t.stride()))) * t.element_size()


def op_cost(func: Any, args: Any, kwargs: Any, out: Any) -> tuple[int, int]:
    """``(bytes, flops)`` of one call: its tensors' storages (arguments and outputs) and its FLOPs.

    The tensors may be fake or meta (only their shapes are read). FLOPs from
    ``torch.utils.flop_counter``'s formula for the op (the CPU's flash
    attention by the efficient kernel's formula); 0 where there is none.
    """
    from torch.utils._pytree import tree_leaves
    from torch.utils.flop_counter import flop_registry

    size = sum(_storage_bytes(t) for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor))
    packet = getattr(func, "overloadpacket", func)
    aliases = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:  # no formula of their own
               torch.ops.aten._scaled_dot_product_efficient_attention,
               torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward:
               torch.ops.aten._scaled_dot_product_efficient_attention_backward}  # fmt: skip
    formula = flop_registry.get(aliases.get(packet, packet))
    try:
        flops = int(formula(*args, **kwargs, out_val=out)) if formula is not None else 0
    except Exception:  # a formula that does not take these arguments
        flops = 0
    return size, flops


def over_workspace_cap(nbytes: int, flops: int, device: str) -> bool:
    """Whether an op of ``nbytes`` and ``flops`` is over the cap on ``device`` (not to be run)."""
    return nbytes > WORKSPACE_MAX_BYTES.get(device, 0) or flops > WORKSPACE_MAX_FLOPS.get(device, 0)


def made_up_tensor(shape: Any, stride: Any, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """A real tensor of this shape and these strides for an op's workspace run: random floats, zero integers.

    The memory the strides reach is filled as one block, then viewed with
    the strides: an expanded tensor (stride 0, as multi-query attention's
    keys are) has elements that share a location, which an in-place fill of
    the view itself refuses.
    """
    shape = [int(d) for d in shape]
    stride = [int(d) for d in stride]
    size = 1 + sum((d - 1) * st for d, st in zip(shape, stride)) if all(shape) else 0
    base = torch.empty(size, dtype=dtype, device=device)
    if base.is_floating_point() or base.is_complex():
        base.normal_()
    else:
        base.zero_()
    return base.as_strided(shape, stride)
