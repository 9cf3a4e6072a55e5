"""plan_checkpoints without running the step: recorded on fake tensors, planned for a meta model.

A fake recording must be the real one (same ops, same storages and lifetimes,
same modelled seconds and workspaces); a model built on the meta device must
get the plan of the same model materialised, and that plan, applied after
``to_empty`` and ``load_state_dict``, must train as eager does. When fake
tensors cannot run the model, the step is recorded for real, with a warning.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("remat_knapsack.torch")

from torch import nn  # noqa: E402

from remat_knapsack.errors import StepOutOfMemoryError  # noqa: E402
from remat_knapsack.torch import plan_checkpoints  # noqa: E402
from remat_knapsack.torch.eager._plan import _resolve_units  # noqa: E402
from remat_knapsack.torch.eager._record import is_random, record_step  # noqa: E402
from remat_knapsack.torch.eager._roofline import CPU, CUDA, op_seconds  # noqa: E402
from tests.torch_plugin.test_eager import MODELS, Steps  # noqa: E402
from tests.training_models import assert_same_step  # noqa: E402

aten = torch.ops.aten


def on_meta(model: nn.Module, args: tuple) -> tuple[nn.Module, tuple]:
    """The same model built under ``torch.device("meta")`` (its class's defaults), and meta inputs."""
    with torch.device("meta"):
        meta = type(model)()
    return meta, tuple(torch.empty_like(a, device="meta") for a in args)


def middle_limit(model: nn.Module, args: tuple, loss) -> int:
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    return (first.full_checkpoint_peak_bytes + first.unplanned_peak_bytes) // 2


def same_plan(a, b) -> None:
    assert a.predicted_peak_bytes == b.predicted_peak_bytes
    assert a.unplanned_peak_bytes == b.unplanned_peak_bytes
    assert a.full_checkpoint_peak_bytes == b.full_checkpoint_peak_bytes
    assert [(u.name, u.checkpointed, u.saved_ops) for u in a.units] == [(u.name, u.checkpointed, u.saved_ops)
                                                                         for u in b.units]  # fmt: skip


# ---------------------------------------------------------------------- fake recordings are real ones


def op_facts(recording) -> list[tuple]:
    return [(op.name, op.unit, op.occurrence, op.backward, op.created, op.reads, op.writes, op.random,
             op.own_generator, op.seconds, op.workspace, op.node_start) for op in recording.ops]  # fmt: skip


def storage_facts(recording) -> list[tuple]:
    return [(s.nbytes, s.birth, s.death, s.unit_output) for s in recording.storages]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_fake_recording_is_the_real_one(name):
    """Same ops (names, units, occurrences, storages read, written and created, random), same modelled
    seconds and workspaces, same storages with the same sizes, births and deaths."""
    model, args, loss = MODELS[name]()
    units = _resolve_units(model, None)
    fake = record_step(model, args, loss, units)
    real = record_step(model, args, loss, units, fake=False)
    assert fake.fake and not real.fake
    assert op_facts(fake) == op_facts(real)
    assert storage_facts(fake) == storage_facts(real)
    assert (fake.first_backward, fake.unit_inputs, fake.unit_ops) == (real.first_backward, real.unit_inputs,
                                                                      real.unit_ops)  # fmt: skip
    assert any(op.seconds > 0 for op in fake.ops)


def test_a_fake_recording_allocates_nothing_of_the_model():
    """The parameters stay real and untouched: values, no gradient, same objects."""
    model, args, loss = MODELS["stack"]()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids = {n: id(p) for n, p in model.named_parameters()}
    record_step(model, args, loss, _resolve_units(model, None))
    for n, p in model.named_parameters():
        assert id(p) == ids[n] and p.grad is None and torch.equal(p, before[n])


# ---------------------------------------------------------------------- meta models


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_meta_model_gets_the_plan_of_the_materialised_one(name):
    model, args, loss = MODELS[name]()
    meta, meta_args = on_meta(model, args)
    limit = middle_limit(model, args, loss)
    planned = plan_checkpoints(model, args, limit, loss=loss)
    on_the_meta_device = plan_checkpoints(meta, meta_args, limit, loss=loss)
    assert any(u.checkpointed for u in planned.units) == (planned.full_checkpoint_peak_bytes
                                                          < planned.unplanned_peak_bytes)  # fmt: skip
    same_plan(planned, on_the_meta_device)
    assert all(p.is_meta for p in meta.parameters())


@pytest.mark.parametrize("name", ["stack", "decoder"])
def test_a_plan_made_on_the_meta_device_trains_as_eager(name):
    """to_empty keeps the modules the plan names; after load_state_dict the planned step is eager's."""
    model, args, loss = MODELS[name]()
    meta, meta_args = on_meta(model, args)
    limit = middle_limit(model, args, loss)
    plan = plan_checkpoints(meta, meta_args, limit, loss=loss)
    assert any(u.checkpointed for u in plan.units)
    modules = list(meta.modules())
    meta.to_empty(device="cpu")
    meta.load_state_dict(model.state_dict())
    assert all(a is b for a, b in zip(modules, meta.modules()))
    expected = Steps(model, args, loss)()
    with plan:
        got = Steps(meta, args, loss)()
    assert_same_step(expected, got, where=name)


def test_measure_refuses_a_meta_model():
    model, args, loss = MODELS["stack"]()
    meta, meta_args = on_meta(model, args)
    plan = plan_checkpoints(meta, meta_args, 1 << 40, loss=loss)
    with pytest.raises(ValueError, match="the model is on the meta device; materialise it"):
        plan.measure(args, loss=loss)
    with pytest.raises(ValueError, match="meta device"):
        plan_checkpoints(model, args, 1 << 40, loss=loss).measure(meta_args, loss=loss)


# ---------------------------------------------------------------------- transformers


def llama():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                                      use_cache=False)  # fmt: skip
    return transformers.LlamaForCausalLM, config


def gpt2():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=256, n_positions=64,
                                     bos_token_id=0, eos_token_id=0, use_cache=False)  # fmt: skip
    return transformers.GPT2LMHeadModel, config


def logits_loss(out):
    return out.logits.float().logsumexp(-1).mean()


@pytest.mark.parametrize("make", [llama, gpt2], ids=["llama", "gpt2"])
def test_a_meta_transformer_gets_the_plan_of_the_materialised_one(make):
    cls, config = make()
    torch.manual_seed(0)
    model = cls(config)
    with torch.device("meta"):
        meta = cls(config)
    ids = torch.randint(0, 256, (2, 32))
    limit = middle_limit(model, (ids,), logits_loss)
    planned = plan_checkpoints(model, (ids,), limit, loss=logits_loss)
    assert [u.name for u in planned.units][-1].endswith(".1") and any(u.checkpointed for u in planned.units)
    # the real token ids beside the meta model: what their values decide is followed (the mask skipped)
    same_plan(planned, plan_checkpoints(meta, (ids,), limit, loss=logits_loss))
    # meta ids: transformers' tracing path, which builds the mask: planned for the larger step
    traced = plan_checkpoints(meta, (ids.to("meta"),), 1 << 40, loss=logits_loss)
    assert traced.unplanned_peak_bytes >= planned.unplanned_peak_bytes


def test_a_meta_llama_plan_trains_as_eager():
    cls, config = llama()
    torch.manual_seed(0)
    model = cls(config)
    with torch.device("meta"):
        meta = cls(config)
    ids = torch.randint(0, 256, (2, 32))
    plan = plan_checkpoints(meta, (ids.to("meta"),), middle_limit(model, (ids,), logits_loss), loss=logits_loss)
    meta.to_empty(device="cpu")
    meta.load_state_dict(model.state_dict())
    with torch.no_grad():  # buffers kept out of the state dict (the rotary frequencies)
        for name, buffer in meta.named_buffers():
            buffer.copy_(model.get_buffer(name))
    expected = Steps(model, (ids,), logits_loss)()
    with plan:
        got = Steps(meta, (ids,), logits_loss)()
    assert_same_step(expected, got, where="llama")


# ---------------------------------------------------------------------- when fake tensors cannot run the model


class Positive(nn.Module):
    """Scales by the mean of its positive activations: ``h[h > 0]`` has a shape that depends on values."""

    def __init__(self, d: int = 32, oom: bool = False) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.oom = oom

    def forward(self, x):
        h = torch.tanh(self.a(x))
        positive = h[h > 0]
        if self.oom:
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: "
                               "you tried to allocate 1099511627776 bytes")  # fmt: skip
        return x + self.b(h * positive.mean())


def test_a_data_dependent_model_is_recorded_for_real_with_a_warning():
    torch.manual_seed(0)
    model = nn.Sequential(Positive(), Positive(), nn.Linear(32, 1))
    x = torch.randn(64, 32)
    with pytest.warns(RuntimeWarning, match=r"fake tensors cannot run the model \(DynamicOutputShapeException"):
        first = plan_checkpoints(model, (x,), 1 << 40, units=["0", "1"])
    assert first._timeline.recording.fake is False
    with pytest.warns(RuntimeWarning):
        plan = plan_checkpoints(model, (x,), first.full_checkpoint_peak_bytes, units=["0", "1"])
    assert any(u.checkpointed for u in plan.units)


class ReadsItsIds(nn.Module):
    """Reads the values of its integer inputs, as ``transformers``' decoders do: it masks only when some
    position is masked (``mask.all()``), and scales by the number of even token ids (``nonzero``, a shape
    that depends on values)."""

    def __init__(self, d: int = 32, vocab: int = 64) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
                                    for _ in range(2))  # fmt: skip

    def forward(self, ids, mask):
        h = self.embedding(ids)
        if not mask.all():
            h = h * mask[..., None]
        evens = torch.nonzero(ids % 2 == 0).shape[0]
        for block in self.blocks:
            h = h + block(h)
        return h.square().mean() * evens


@pytest.mark.parametrize("masked", [False, True], ids=["all-ones-mask", "padded"])
def test_what_the_integer_inputs_decide_is_followed_on_fakes(masked):
    """The fake step takes the branch the real one takes, with no fallback to the real tensors."""
    torch.manual_seed(0)
    model = ReadsItsIds()
    ids = torch.randint(0, 64, (4, 16))
    mask = torch.ones(4, 16, dtype=torch.bool)
    if masked:
        mask[:, -3:] = False
    units = _resolve_units(model, ["blocks.0", "blocks.1"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "planning on the real tensors" warning
        fake = record_step(model, (ids, mask), lambda out: out, units)
    real = record_step(model, (ids, mask), lambda out: out, units, fake=False)
    assert fake.fake
    assert op_facts(fake) == op_facts(real)
    assert storage_facts(fake) == storage_facts(real)
    assert ("aten.mul.Tensor" in [op.name for op in fake.ops[:8]]) == masked


def test_a_meta_model_that_fake_tensors_cannot_run():
    with torch.device("meta"):
        model = nn.Sequential(Positive(), Positive())
    with pytest.raises(ValueError, match="cannot be planned on the meta device: its step needs tensor values"):
        plan_checkpoints(model, (torch.empty(64, 32, device="meta"),), 1 << 40, units=["0", "1"])


def test_a_real_step_that_runs_out_of_memory_says_so():
    model = nn.Sequential(Positive(oom=True), Positive())
    with pytest.warns(RuntimeWarning), pytest.raises(StepOutOfMemoryError, match="unplanned step does not fit"):
        plan_checkpoints(model, (torch.randn(64, 32),), 1 << 40, units=["0", "1"])


def test_wrong_shapes_are_a_broken_model_not_a_fallback():
    model, _, loss = MODELS["stack"]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="the model does not run on args: .* raised RuntimeError"):
            plan_checkpoints(model, (torch.randn(8, 3),), 1 << 30, loss=loss)


# ---------------------------------------------------------------------- the device, the roofline, random ops


def test_the_device_sets_the_rates():
    """Planned for CUDA: the same bytes, other seconds; a GPU's workspaces count 0 where there is none."""
    model, args, loss = MODELS["conv_groupnorm"]()
    units = _resolve_units(model, None)
    cpu = record_step(model, args, loss, units)
    cuda = record_step(model, args, loss, units, device="cuda")
    assert (cpu.device, cuda.device) == ("cpu", "cuda")
    assert storage_facts(cpu) == storage_facts(cuda)
    assert [op.seconds for op in cpu.ops] != [op.seconds for op in cuda.ops]
    assert any(op.workspace for op in cpu.ops)  # the CPU convolution's backward buffers
    if not torch.cuda.is_available():
        assert not any(op.workspace for op in cuda.ops)
    for device in ("tpu", 3):
        with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
            plan_checkpoints(model, args, 1 << 30, loss=loss, device=device)


def test_roofline_seconds():
    a, b = torch.randn(64, 128), torch.randn(128, 32)
    out = a @ b
    flops = 2 * 64 * 128 * 32
    moved = (a.numel() + b.numel() + out.numel()) * 4
    for rates in (CPU, CUDA):
        expected = max(flops / rates.flops, moved / rates.bandwidth) + rates.per_op
        assert op_seconds(aten.mm.default, (a, b), {}, out, rates) == pytest.approx(expected)
        meta = tuple(t.to("meta") for t in (a, b, out))
        assert op_seconds(aten.mm.default, meta[:2], {}, meta[2], rates) == op_seconds(aten.mm.default, (a, b), {},
                                                                                       out, rates)  # fmt: skip
    assert op_seconds(aten.view.default, (a, [-1]), {}, a.view(-1), CPU) == 0
    relu = op_seconds(aten.relu.default, (a,), {}, a.relu(), CPU)
    assert relu == pytest.approx(2 * a.numel() * 4 / CPU.bandwidth + CPU.per_op)


def test_random_ops_are_told_by_their_schema():
    x = torch.randn(4, 8)
    q = torch.randn(1, 2, 4, 8)
    assert is_random(aten.native_dropout.default, (x, 0.5, True), {})
    assert not is_random(aten.native_dropout.default, (x, 0.0, True), {})
    assert not is_random(aten.native_dropout.default, (x, 0.5, False), {})
    assert is_random(aten.bernoulli_.float, (x, 0.5), {})
    assert is_random(aten.rand_like.default, (x,), {})
    sdpa = aten._scaled_dot_product_flash_attention_for_cpu.default
    assert not is_random(sdpa, (q, q, q), {})  # dropout_p defaults to 0
    assert not is_random(sdpa, (q, q, q, 0.0, True), {})
    assert is_random(sdpa, (q, q, q, 0.1), {})
    assert not is_random(aten.mm.default, (x, x.t()), {})

