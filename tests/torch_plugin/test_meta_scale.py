"""Planning a model on the meta device at the size it trains: the workspace size cap, planning's own memory,
and a meta model sharded with FSDP2 on a fake process group.

The large cases (Llama 3 8B, 1 x 8192 tokens) are in ``benchmarks/_llama8b.py``; these use a small Llama
(2 layers, hidden 256, vocabulary 32,000, 2,048 tokens) and run in well under a minute.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from remat_knapsack.torch.eager import _workspace  # noqa: E402
from remat_knapsack.torch.eager._record import record_step  # noqa: E402

SMALL = dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=688, vocab_size=32000, rms_norm_eps=1e-5, rope_theta=500000,
             max_position_embeddings=2048, use_cache=False)  # fmt: skip
SEQ = 2048


class Step(torch.nn.Module):
    """``inner(input_ids=ids, labels=ids)``: the model shifts the labels and computes its cross entropy."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor):  # noqa: ANN201
        return self.inner(input_ids=ids, labels=ids)


def _meta_llama(config: dict = SMALL, seq: int = SEQ, dtype: torch.dtype = torch.bfloat16) -> tuple[Step, tuple]:
    cfg = transformers.LlamaConfig(**config)
    cfg._attn_implementation = "sdpa"
    with torch.device("meta"):
        inner = transformers.LlamaForCausalLM(cfg).to(dtype).train()
    return Step(inner), (torch.empty(1, seq, dtype=torch.long, device="meta"),)


def _attention_call() -> tuple:
    q = torch.randn(1, 4, 512, 64)
    return _workspace.op_call(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, (q, q, q), {})


def test_op_over_the_cap_is_not_run_and_counts_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the cap the attention's workspace is measured (> 0); over a tiny cap it is not run: it counts 0
    (left out of the answer) and one RuntimeWarning names it with its size."""
    signature, call = _attention_call()
    nbytes, flops = _workspace.op_size(call)
    assert nbytes == 4 * 512 * 64 * 4 * 4 + 4 * 512 * 4  # q, k, v, out (float32) and the log-sum-exp
    assert flops > 0
    measured = _workspace.measure_workspaces({signature: call}, "cpu")
    assert measured.get(signature, 0) > 0
    monkeypatch.setitem(_workspace.MAX_OP_BYTES, "cpu", nbytes - 1)
    with pytest.warns(RuntimeWarning, match=r"workspace not measured for 1 op.*_scaled_dot_product_flash_attention"):
        assert _workspace.measure_workspaces({signature: call}, "cpu") == {}
    monkeypatch.setitem(_workspace.MAX_OP_BYTES, "cpu", nbytes)  # at the cap: run
    monkeypatch.setitem(_workspace.MAX_OP_FLOPS, "cpu", flops - 1)  # over the FLOP cap: not run
    with pytest.warns(RuntimeWarning, match="MAX_OP_FLOPS"):
        assert _workspace.measure_workspaces({signature: call}, "cpu") == {}


def test_capped_recording_counts_zero_for_the_ops_over_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The small meta Llama's step recorded for plan_checkpoints: under the default cap the attention ops'
    workspaces are measured (> 0) and the logits' ops (over 256 MiB) are named in the warning; with a cap
    of 0 bytes every op counts 0, as documented, and the warning counts every distinct op."""
    step, args = _meta_llama()
    units = [(f"inner.model.layers.{i}", layer) for i, layer in enumerate(step.inner.model.layers)]
    with pytest.warns(RuntimeWarning, match=r"workspace not measured .*_log_softmax") as caught:
        rec = record_step(step, args, lambda out: out.loss, units, device="cpu")
    assert len(caught) == 1
    attention = [op.workspace for op in rec.ops if "flash_attention" in op.name]
    assert attention and min(attention) > 0
    assert all(op.workspace == 0 for op in rec.ops if "log_softmax" in op.name)
    monkeypatch.setitem(_workspace.MAX_OP_BYTES, "cpu", 0)
    with pytest.warns(RuntimeWarning, match="workspace not measured") as caught:
        capped = record_step(step, args, lambda out: out.loss, units, device="cpu")
    text = " ".join(str(w.message) for w in caught)
    counted = re.search(r"workspace not measured for (\d+) op", text)
    assert counted and int(counted.group(1)) >= 50 and "more" in text  # every distinct op, the first 8 named
    assert all(op.workspace == 0 for op in capped.ops)


_WORKER = textwrap.dedent("""
    import json, resource, sys, warnings
    import torch, transformers
    sys.path.insert(0, sys.argv[1])
    from test_meta_scale import _meta_llama
    from remat_knapsack.torch import plan_checkpoints
    config = json.loads(sys.argv[2])
    step, args = _meta_llama(config, 256, torch.float32)  # float32: the CPU's bf16 matmuls are slow
    params = sum(p.numel() * p.element_size() for p in step.parameters())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        plan = plan_checkpoints(step, args, 1 << 50, device="cpu")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("RESULT " + json.dumps({"params": params, "base": base, "peak": peak,
                                  "unplanned": plan.unplanned_peak_bytes}))
""")


def test_planning_memory_stays_far_below_the_model() -> None:
    """A meta Llama whose float32 parameters hold 1.16 GiB is planned in a process whose peak RSS grows by
    far less than that (nothing of the model's size is allocated; the ops are run for their workspaces only
    under the cap)."""
    config = dict(SMALL, num_hidden_layers=4, hidden_size=2048, num_attention_heads=16, num_key_value_heads=4,
                  intermediate_size=5632, vocab_size=32000)  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", _WORKER, os.path.dirname(__file__), json.dumps(config)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[0][7:])
    assert result["params"] > 2**30
    assert result["unplanned"] > 0
    grown = result["peak"] - result["base"]
    assert grown < 0.35 * result["params"], result  # well below the parameters


@pytest.mark.slow  # test_distributed's sharded test plans a small decoder on a fake group, against real ranks
def test_fsdp_meta_model_on_a_fake_process_group() -> None:
    """FSDP2 on each decoder layer and the root, rank 0 of 8 on a fake process group: the eager plan is one
    rank's sharded step, recorded on fakes; the model is on the meta device again afterwards."""
    proc = subprocess.run([sys.executable, "-c", _FSDP_WORKER, os.path.dirname(__file__)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-3000:]
    result = json.loads(lines[0][7:])
    assert result["meta_after"]  # put back on the meta device
    assert result["fake"]  # recorded on fakes, not on the meta tensors
    # FSDP2's collectives are in the step: one all-gather per group before its forward (root, 2 layers) and
    # before each layer's backward, one reduce-scatter per group after its backward
    assert result["all_gather_copy_in"] == 5 and result["reduce_scatter"] == 3
    assert 0.5 * result["plain_peak"] < result["sharded_peak"] < 1.5 * result["plain_peak"]


_FSDP_WORKER = textwrap.dedent("""
    import json, sys, warnings
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    sys.path.insert(0, sys.argv[1])
    from test_meta_scale import _meta_llama
    from remat_knapsack.torch.eager._record import record_step
    from remat_knapsack.torch.eager._plan import plan_checkpoints

    warnings.simplefilter("ignore", RuntimeWarning)
    step, args = _meta_llama(seq=512)
    plain = plan_checkpoints(step, args, 1 << 50, device="cpu")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
    for layer in step.inner.model.layers:
        fully_shard(layer)
    fully_shard(step)
    plan = plan_checkpoints(step, args, 1 << 50, device="cpu")
    rec = record_step(step, args, lambda out: out.loss, [], device="cpu", workspaces=False)
    names = [op.name for op in rec.ops]
    meta_after = all(p.is_meta for p in step.parameters())
    print("RESULT " + json.dumps({"meta_after": meta_after, "fake": rec.fake, "sharded_peak": plan.predicted_peak_bytes,
                                  "plain_peak": plain.predicted_peak_bytes,
                                  "all_gather_copy_in": names.count("fsdp.all_gather_copy_in.default"),
                                  "reduce_scatter": names.count("c10d._reduce_scatter_base_.default")}))
""")


def test_aot_eager_workspaces_skip_ops_over_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """aot_eager's op_workspaces runs no op over the shared cap: it counts 0 and one RuntimeWarning names it."""
    from remat_knapsack.torch.capture import compile_and_capture
    from remat_knapsack.torch.peaks import _liveness
    from remat_knapsack.torch.step import _cap

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3))
    (cap,) = compile_and_capture(model, (torch.randn(2, 3, 16, 16),), "aot_eager")
    nodes = list(cap.joint_graph.nodes)
    measured = _liveness.op_workspaces(nodes)
    assert measured  # the CPU convolution's backward has a workspace
    monkeypatch.setitem(_cap.WORKSPACE_MAX_BYTES, "cpu", 0)
    with pytest.warns(RuntimeWarning, match="over the size cap"):
        assert _liveness.op_workspaces(nodes) == {}
