"""One rank of the torchrun tests (tests/torch_plugin/test_distributed.py): plan a wrapped model, write what it saw.

    torchrun --nproc-per-node 2 distributed_worker.py WRAPPER OUT_DIR [fail]

WRAPPER is ``ddp`` (DistributedDataParallel over a stack of MLP blocks) or
``fsdp`` (a small decoder, ``fully_shard`` on each layer, then the root). Each
rank writes ``OUT_DIR/rank<R>.json``: predict_peaks' predictions, sweep's
measured peaks, and fit's plan, compile count and measured peak (under
``ddp``, ``remat-knapsack fit`` too, through the CLI's ``main``); with
``fail``, rank 1's loss raises during the model check and every rank writes
the error it got instead; with ``oom-forward``, rank 1 runs out of memory
inside the sharded forward (rank 0 then waits in FSDP's all-gather of the
next layer) and every rank writes the error it got.

WRAPPER ``eager`` plans selective checkpointing with ``plan_checkpoints`` on
the unsharded decoder (each rank on its own inputs), applies it, then
shards with ``fully_shard``, as torchtitan does; each rank writes its plan,
whether one training step matches the same model sharded without the plan
(loss and local gradient shards), and the error a rank made to fail gave it.

WRAPPER ``eager-sharded`` plans on the decoder already sharded with
``fully_shard`` (each layer, then the root), for each rank's peak of the
sharded step, at a limit midway between its full-checkpoint and unplanned
peaks; each rank writes its plan, the predicted and measured peaks
(unplanned and planned; each measured five times), and whether one
training step of the sharded model under the plan matches the sharded
model without it.

``python distributed_worker.py fake-sharded OUT_DIR`` (no torchrun) plans the
same sharded decoder built on the meta device, as rank 0 of 2 on a fake
process group (``FakeStore``: no collective moves data), and writes
``OUT_DIR/fake.json``: its unplanned and full-checkpoint peaks, which must
be the real ranks' to the byte.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist


class Block(torch.nn.Module):
    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.b(torch.nn.functional.gelu(self.a(x)))


class Layer(torch.nn.Module):
    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.n2(x))


class Decoder(torch.nn.Module):
    def __init__(self, vocab: int = 512, d: int = 64, layers: int = 3) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList([Layer(d) for _ in range(layers)])
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.tok(ids)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


def make_ddp():
    """``(model, args, loss)``: a stack of MLP blocks in DistributedDataParallel, each rank on its own rows."""
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(*[Block() for _ in range(4)], torch.nn.Linear(64, 1)))
    torch.manual_seed(1 + dist.get_rank())
    return model, (torch.randn(512, 64),), lambda out: out.sum()


def main() -> None:
    wrapper, out_dir, extra = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    if wrapper == "fake-sharded":
        (out_dir / "fake.json").write_text(json.dumps(fake_sharded()))
        return
    fail = "fail" in extra
    backend = "inductor" if "inductor" in extra else "aot_eager"
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    if wrapper in ("eager", "eager-sharded"):
        record = eager(rank) if wrapper == "eager" else eager_sharded(rank)
        (out_dir / f"rank{rank}.json").write_text(json.dumps(record))
        leave()
    if wrapper == "ddp":
        model, args, loss = make_ddp()
    else:
        from torch.distributed.fsdp import fully_shard

        model = Decoder()
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
        torch.manual_seed(1 + rank)
        args = (torch.randint(0, 512, (4, 64)),)

        def loss(out):
            return out.float().logsumexp(-1).mean()

    from remat_knapsack.torch import fit, predict_peaks, sweep

    record: dict = {"rank": rank}
    if "oom-forward" in extra:  # rank 1 runs out of memory inside the sharded forward, rank 0 is past it
        out_of_memory_in_forward(model, rank)
        try:
            predict_peaks(model, args, [0.5], loss=loss, backend="aot_eager")
            record["error"] = None
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
        (out_dir / f"rank{rank}.json").write_text(json.dumps(record))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the process group is broken: no barrier
    if fail:
        def failing(out):
            if rank == 1:
                raise RuntimeError("rank 1 was made to fail")
            return loss(out)

        try:
            predict_peaks(model, args, [0.5], loss=failing, backend="aot_eager")
            record["error"] = None
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
    else:
        budgets = [0.05, 0.5, 0.8]
        record["predicted"] = [p.peak_bytes for p in predict_peaks(model, args, budgets, loss=loss,
                                                                   backend=backend)]  # fmt: skip
        report = sweep(model, args, budgets=budgets, loss=loss, backend=backend, repeats=1, progress=False)
        record["measured"] = [p.peak_bytes for p in report.points]
        limit = (min(record["measured"]) + max(record["measured"])) // 2
        r = fit(model, args, limit, loss=loss, backend=backend, repeats=1)
        record["fit"] = {"limit": limit, "peak": r.peak_bytes, "predicted": r.predicted_peak_bytes,
                         "compiles": r.compiles, "targets": [a["target_bytes"] for a in r.attempts],
                         "plans": [a.get("plans") for a in r.attempts]}  # fmt: skip
        if wrapper == "ddp":  # the command line, on every rank, as a training script would call it
            from remat_knapsack.cli import main as cli

            out = out_dir / f"cli{rank}.json"
            code = cli(["fit", f"{__file__}:make_ddp", "--max-peak", str(limit), "--backend", backend,
                        "--repeats", "1", "--out", str(out)])  # fmt: skip
            report = json.loads(out.read_text())
            record["cli"] = {"code": code, "peak": report["peak_bytes"], "compiles": report["compiles"],
                             "solver": report["solver"]}  # fmt: skip
    (out_dir / f"rank{rank}.json").write_text(json.dumps(record))
    leave()


def out_of_memory_in_forward(model: torch.nn.Module, rank: int) -> None:
    """On rank 1, the second layer's forward raises the CPU allocator's out-of-memory error (on real tensors)."""
    from torch._subclasses.fake_tensor import FakeTensor

    def hook(module, args):
        if rank == 1 and not isinstance(args[0], FakeTensor):
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] . DefaultCPUAllocator: can't allocate memory: "
                               "you tried to allocate 1073741824 bytes")  # fmt: skip

    model.layers[1].register_forward_pre_hook(hook)


def same_step(planned, plain, ids, loss) -> bool:
    """One seeded training step of each sharded model: the same loss and the same local gradient shards."""
    losses = []
    for model in (planned, plain):
        torch.manual_seed(7)
        value = loss(model(ids))
        value.backward()
        losses.append(value.item())
    grads = [(a.grad.to_local(), b.grad.to_local()) for a, b in zip(planned.parameters(), plain.parameters())]
    return losses[0] == losses[1] and all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in grads)


def leave() -> None:
    dist.barrier()
    # Leave without running the process group's and FSDP's destructors: gloo can abort at exit
    # ("terminate called without an active exception") after the work is done and written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def eager(rank: int) -> dict:
    """plan_checkpoints on every rank, applied before fully_shard; one step against the unplanned model."""
    from torch.distributed.fsdp import fully_shard

    from remat_knapsack.torch import plan_checkpoints

    def loss(out):
        return out.float().logsumexp(-1).mean()

    torch.manual_seed(0)
    planned, plain = Decoder(d=64, layers=3), Decoder(d=64, layers=3)
    plain.load_state_dict(planned.state_dict())
    torch.manual_seed(1 + rank)
    ids = torch.randint(0, 512, (4, 64))
    record: dict = {"rank": rank}

    def failing(out):
        if rank == 1:
            raise RuntimeError("rank 1 was made to fail")
        return loss(out)

    try:
        plan_checkpoints(planned, (ids,), 1 << 40, loss=failing)
        record["error"] = None
    except Exception as exc:
        record["error"] = f"{type(exc).__name__}: {exc}"
    first = plan_checkpoints(planned, (ids,), 1 << 40, loss=loss)
    limit = (first.full_checkpoint_peak_bytes + first.unplanned_peak_bytes) // 2
    plan = plan_checkpoints(planned, (ids,), limit, loss=loss)
    record["plan"] = [(u.name, u.checkpointed, u.saved_ops, u.recomputed_ops) for u in plan.units]
    record["predicted"] = plan.predicted_peak_bytes
    # ranks given different limits (each its own free memory, say) plan alike, for the smallest
    uneven = plan_checkpoints(planned, (ids,), limit + rank * (limit // 4), loss=loss)
    record["uneven"] = [uneven.limit_bytes, uneven.predicted_peak_bytes,
                        [(u.name, u.checkpointed, u.saved_ops) for u in uneven.units]]  # fmt: skip
    plan.apply()
    for model in (planned, plain):
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
    record["same_step"] = same_step(planned, plain, ids, loss)
    return record



def eager_sharded(rank: int) -> dict:
    """plan_checkpoints on the sharded decoder: predicted against measured per-rank peaks; one step under the
    plan (applied after fully_shard) against the sharded model without it."""
    from torch.distributed.fsdp import fully_shard

    from remat_knapsack.torch import plan_checkpoints

    def loss(out):
        return out.float().logsumexp(-1).mean()

    torch.manual_seed(0)
    planned, plain = Decoder(d=64, layers=3), Decoder(d=64, layers=3)
    plain.load_state_dict(planned.state_dict())
    for model in (planned, plain):
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
    torch.manual_seed(1 + rank)
    ids = torch.randint(0, 512, (4, 64))
    record: dict = {"rank": rank}
    first = plan_checkpoints(planned, (ids,), 1 << 40, loss=loss)
    # measured five times: gloo's thread can drop the last reference to an all-gather buffer, a free
    # that the profile of the step's own thread then misses
    record["unplanned"] = [first.unplanned_peak_bytes, [first.measure((ids,), loss=loss) for _ in range(5)]]
    record["full_checkpoint"] = first.full_checkpoint_peak_bytes
    limit = (first.full_checkpoint_peak_bytes + first.unplanned_peak_bytes) // 2
    plan = plan_checkpoints(planned, (ids,), limit, loss=loss)
    record["limit"] = limit
    record["plan"] = [(u.name, u.checkpointed, u.saved_ops, u.recomputed_ops) for u in plan.units]
    record["predicted"] = plan.predicted_peak_bytes
    record["measured"] = [plan.measure((ids,), loss=loss) for _ in range(5)]
    plan.apply()
    record["same_step"] = same_step(planned, plain, ids, loss)
    return record


def fake_sharded() -> dict:
    """:func:`eager_sharded`'s decoder and inputs built on the meta device, sharded as rank 0 of 2 on a fake
    process group: its first plan's unplanned and full-checkpoint peaks, recorded on fake tensors."""
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from remat_knapsack.torch import plan_checkpoints

    def loss(out):
        return out.float().logsumexp(-1).mean()

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    try:
        with torch.device("meta"):
            model = Decoder(d=64, layers=3)
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
        ids = torch.empty(4, 64, dtype=torch.long, device="meta")
        first = plan_checkpoints(model, (ids,), 1 << 40, loss=loss)
        return {"unplanned": first.unplanned_peak_bytes, "full_checkpoint": first.full_checkpoint_peak_bytes,
                "still_meta": all(p.is_meta for p in model.parameters())}
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
