"""Patterns the model zoo (benchmarks/bench_zoo.py) found the peak model getting wrong, each on a small model.

Each test checks a predicted peak against one measured step (torch.profiler's allocation trace on the CPU):

* compiled (aot_eager): the backward recomputes an op whose forward value is a user output the step keeps
  (the partition copies the forward's fake tensor, so the recomputation looked like the same storage);
* compiled (aot_eager): an op's workspace is measured on made-up tensors of its arguments' strides, which an
  expanded key (stride 0, Falcon's multi-query attention) could not be filled as;
* compiled (inductor): a user output the backward also reads (the logits a loss inside the model saved) is
  held by the step through the backward, not freed after the backward's last read; the saved activations
  aot_autograd donates to the backward are written over once read, as inductor's backward does;
* compiled block by block (``regions=``): two blocks of one class on inputs of different lengths are
  recompiled with dynamic shapes, whose symbolic sizes the workspace signatures must take (and whose
  prediction is still low: it warns);
* eager (``plan_checkpoints``): ``torch.utils.checkpoint``'s selective-checkpoint cache holds the outputs of
  saved ops the replay never reaches (the unit's output, ops after the last stored tensor) until the unit's
  backward ends;
* eager under ``torch.autocast``: autocast's cache holds each parameter's low-precision cast until the
  outermost autocast region exits, so a checkpointed unit cannot drop it after its last use;
* eager: a checkpointed unit is replayed when the autograd node that first reads its dropped storages
  unpacks its saved tensors, before the node's first op (a Linear's backward computes its input's gradient,
  then reads the saved input for its weight's gradient);
* eager on fake tensors: ``transformers`` builds the attention mask when it sees a fake tensor, and skips it
  on the real all-ones mask; the values the real token ids decide are followed beside the fakes;
* eager: a storage a checkpointed unit drops goes when the forward lets go of it (a local variable at its
  function's return), and a saved op's temporary leaves the replay after its last use there;
* eager: the autograd engine sums a second gradient of one input in place into the one it holds, which it
  does not on fake tensors (Mamba's reference scan: a gradient of the whole input per step), unless the
  one it holds is a view (a tied weight's gradient from the output layer).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("remat_knapsack.torch")

from torch import nn  # noqa: E402

from remat_knapsack.torch import plan_checkpoints, predict_peaks, sweep  # noqa: E402
from remat_knapsack.torch.eager._plan import _resolve_units, build_plan  # noqa: E402

# ---------------------------------------------------------------------- compiled: a recomputed user output


class KeptOutput(nn.Module):
    """Returns (loss, an output the loss does not use, ``h``): the partitioner recomputes ``h`` in the backward
    at budget 0.9, although the step keeps the forward's ``h`` (an output) alive."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return h.square().mean(), self.b(h), h


def test_a_recomputed_op_whose_forward_value_is_a_kept_output_allocates_anew():
    torch.manual_seed(0)
    model, args = KeptOutput(), (torch.randn(256, 64),)

    def loss(out):
        return out[0]

    (predicted,) = predict_peaks(model, args, [0.9], loss=loss, backend="aot_eager")
    (measured,) = sweep(model, args, budgets=[0.9], loss=loss, backend="aot_eager", repeats=1, progress=False).points
    assert measured.ok
    # within 16 bytes (the CPU kernels' wrapped scalars, which the model does not count); 13.8% low before
    assert abs(predicted.peak_bytes - measured.peak_bytes) <= 16, (predicted.peak_bytes, measured.peak_bytes)


class MultiQuery(nn.Module):
    """Causal attention with one key and value head expanded to the four query heads (stride 0), as Falcon's."""

    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 32)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q(x).view(b, t, 4, 16).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 1, 32).transpose(1, 2).chunk(2, dim=-1)
        y = torch.nn.functional.scaled_dot_product_attention(q, k.expand(b, 4, t, 16), v.expand(b, 4, t, 16),
                                                             is_causal=True)  # fmt: skip
        return self.o(y.transpose(1, 2).reshape(b, t, d)).square().mean()


def test_an_attention_kernel_on_expanded_keys_has_its_workspace_measured():
    torch.manual_seed(0)
    model, args = MultiQuery(), (torch.randn(2, 32, 64),)
    (predicted,) = predict_peaks(model, args, [0.05], backend="aot_eager")
    (measured,) = sweep(model, args, budgets=[0.05], backend="aot_eager", repeats=1, progress=False).points
    assert measured.ok
    # the attention backward's scratch was counted 0 before (2.4% low on Falcon): the made-up keys it is
    # measured on are expanded, and filling them in place raised
    assert abs(predicted.peak_bytes - measured.peak_bytes) <= 16, (predicted.peak_bytes, measured.peak_bytes)


def test_a_kept_output_the_backward_reads_is_not_freed_there_under_inductor():
    """Llama's loss inside the model: at budget 0.4 the backward reads the logits it saved, then drops its
    reference; the step still holds them (its output). 10.1% low before: the logits counted as freed there."""
    model, args, _, loss = _decoder("LlamaConfig", "LlamaForCausalLM")
    (predicted,) = predict_peaks(model, args, [0.4], loss=loss, backend="inductor")
    (measured,) = sweep(model, args, budgets=[0.4], loss=loss, backend="inductor", repeats=1, progress=False).points
    assert measured.ok
    assert abs(predicted.peak_bytes - measured.peak_bytes) <= 16, (predicted.peak_bytes, measured.peak_bytes)


def test_inductor_writes_over_the_saved_activations_aot_autograd_donates():
    """BERT's masked-LM step at budget 0.9: aot_autograd tells inductor which saved activations nothing else
    shares, and its backward reuses their buffers once read. Modelled without that, the backward's buffers
    land elsewhere: 2.5% low here, 4.7% high on the zoo's BERT in training mode."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, vocab_size=256, max_position_embeddings=128)  # fmt: skip
    torch.manual_seed(0)
    inner = transformers.BertForMaskedLM(config).eval()

    class Step(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids, labels):
            return self.inner(input_ids=ids, labels=labels)

    ids = torch.randint(3, 256, (2, 32))
    labels = torch.where(torch.rand(2, 32) < 0.25, ids, torch.full_like(ids, -100))
    labels[:, 0] = ids[:, 0]
    model, args = Step(), (ids, labels)

    def loss(out):
        return out.loss

    (predicted,) = predict_peaks(model, args, [0.9], loss=loss, backend="inductor")
    (measured,) = sweep(model, args, budgets=[0.9], loss=loss, backend="inductor", repeats=1, progress=False).points
    assert measured.ok
    assert abs(predicted.peak_bytes - measured.peak_bytes) <= 16, (predicted.peak_bytes, measured.peak_bytes)


# ---------------------------------------------------------------------- eager: the selective-checkpoint cache


class Layer(nn.Module):
    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, 2 * d)
        self.down = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Stack(nn.Module):
    def __init__(self, layers: int = 2, d: int = 64, classes: int = 512, autocast: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(d) for _ in range(layers))
        self.head = nn.Linear(d, classes)
        self.autocast = autocast
        self.scratch = autocast

    def run(self, x, y):
        for layer in self.layers:
            x = layer(x)
        loss = torch.nn.functional.cross_entropy(self.head(x).float(), y)
        if self.scratch:  # a 4 MiB scratch buffer at the end of the forward: the step's peak
            torch.empty(1024, 1024).fill_(1.0)
        return loss

    def forward(self, x, y):
        if self.autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.run(x, y)
        return self.run(x, y)


def _stack(classes: int = 512, autocast: bool = False):
    """The stack on 512 rows; with 512 classes its peak is the head's loss, with 16 in the units' backward."""
    torch.manual_seed(0)
    model = Stack(classes=classes, autocast=autocast)
    return model, (torch.randn(512, 64), torch.randint(0, classes, (512,)))


def _measured(model, args, timeline, choice):
    units = _resolve_units(model, None)
    plan = build_plan(model, units, timeline, choice, 0, 1 << 50, 0, 0)
    return timeline.peak(choice), plan.measure(args, loss=lambda out: out)


def test_saved_ops_the_replay_never_reaches_stay_cached_until_the_unit_backward_ends():
    model, args = _stack(classes=16)
    timeline = plan_checkpoints(model, args, 1 << 50, loss=lambda out: out)._timeline
    rec = timeline.recording
    choice = []
    for items in timeline.units:
        # the replay stops at the last kept storage (gelu's output, read by `down`'s backward): save every
        # eligible op after it (`down`'s addmm, a temporary, and the residual add, the unit's output)
        end = int(items.kept_birth.max())
        saved = items.forced | (items.eligible & (items.ops > end))
        assert saved.sum() >= 2, [rec.ops[i].name for i in items.ops]
        choice.append(saved)
    predicted, measured = _measured(model, args, timeline, choice)
    # 7.8% low before (the cached outputs counted as freed at the replay, or not held at all)
    assert abs(predicted - measured) <= 0.005 * measured, (predicted, measured)


def test_autocast_keeps_a_checkpointed_unit_weight_casts_until_its_region_exits():
    model, args = _stack(autocast=True)
    timeline = plan_checkpoints(model, args, 1 << 50, loss=lambda out: out)._timeline
    # every unit recomputed: the peak is a scratch buffer at the end of the forward, where the units' weight
    # casts are still in autocast's cache (1.6% low before)
    choice = timeline.full()
    assert all(c is not None for c in choice)
    predicted, measured = _measured(model, args, timeline, choice)
    assert abs(predicted - measured) <= 0.005 * measured, (predicted, measured)
    held = [s for s in timeline.recording.storages if getattr(s, "held_until", -1) >= 0]
    assert len(held) == 10  # the weight and bias of each Linear (2 layers x 2, and the head), cast once each


def test_without_autocast_nothing_is_held():
    model, args = _stack()
    timeline = plan_checkpoints(model, args, 1 << 50, loss=lambda out: out)._timeline
    assert not [s for s in timeline.recording.storages if s.held_until >= 0]
    assert np.all(timeline.held_until < 0)


class CachedTemporary(Layer):
    """The layer, its input scaled by a sum of a large ``repeat`` of it: a temporary that only the sum reads (the
    sum's backward keeps nothing)."""

    def forward(self, x):
        h = self.norm(x)
        scale = h.repeat(1, 16).sum(dim=1, keepdim=True)
        return x + self.down(torch.nn.functional.gelu(self.up(h * scale)))


def test_a_saved_temporary_is_freed_within_the_replay_and_a_dropped_local_at_its_return():
    torch.manual_seed(0)
    model = nn.Sequential(CachedTemporary(), CachedTemporary(), nn.Linear(64, 16))
    args = (torch.randn(512, 64),)

    def loss(out):
        return out.square().mean()

    timeline = plan_checkpoints(model, args, 1 << 50, loss=loss, units=["0", "1"])._timeline
    ops = timeline.recording.ops
    choice = []
    for items in timeline.units:
        repeat = np.array([ops[i].name == "aten.repeat.default" for i in items.ops])
        assert repeat.sum() == 1 and items.eligible[repeat].all()
        choice.append(items.forced | repeat)
    units = _resolve_units(model, ["0", "1"])
    plan = build_plan(model, units, timeline, choice, 0, 1 << 50, 0, 0)
    predicted, measured = timeline.peak(choice), plan.measure(args, loss=loss)
    # 6.2% high before: the cache hands the repeat's 2 MiB to the replay, which frees it after the sum, but it
    # was counted to the replay's end; 2.7% low with that alone: `h` and `scale`, dropped by the checkpoint,
    # are the forward's locals, held until it returns, not freed after their last use
    assert abs(predicted - measured) <= 0.005 * measured, (predicted, measured)


class Scan(nn.Module):
    """A loop over a sequence, as Mamba's reference scan runs: each step's select has its own backward, which
    makes a gradient of the whole input, and the engine sums them into one."""

    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        h = self.proj(x)
        return torch.stack([h[:, i] * h[:, i + 1] for i in range(16)], dim=1)


def test_the_engine_sums_a_second_gradient_in_place_into_the_one_it_holds():
    torch.manual_seed(0)
    model = nn.Sequential(Scan(), nn.Linear(16, 8))
    args = (torch.randn(2048, 64),)

    def loss(out):
        return out.square().mean()

    timeline = plan_checkpoints(model, args, 1 << 50, loss=loss, units=["0"])._timeline
    summed = [s for s in timeline.recording.storages if s.nbytes == 0]
    assert len(summed) >= 14, len(summed)  # 16 selects of h, 16 of its gradients after the first, summed in place
    plan = build_plan(model, _resolve_units(model, ["0"]), timeline, timeline.none(), 0, 1 << 50, 0, 0)
    predicted, measured = timeline.peak(timeline.none()), plan.measure(args, loss=loss)
    # 28.9% high before (each sum counted as a new 512 KiB gradient)
    assert predicted == measured, (predicted, measured)


class TiedHead(nn.Module):
    """An embedding and an output layer that share one weight (BART, Whisper, GPT-2): two gradients of it."""

    def __init__(self, vocab: int = 4096, d: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.mid = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.mid(self.embed(ids)))


def test_a_gradient_that_is_a_view_is_summed_into_a_new_one():
    torch.manual_seed(0)
    model, args = TiedHead(), (torch.randint(0, 4096, (2, 8)),)

    def loss(out):
        return out.logsumexp(-1).mean()

    timeline = plan_checkpoints(model, args, 1 << 50, loss=loss, units=["mid"])._timeline
    plan = build_plan(model, _resolve_units(model, ["mid"]), timeline, timeline.none(), 0, 1 << 50, 0, 0)
    predicted, measured = timeline.peak(timeline.none()), plan.measure(args, loss=loss)
    # the output layer's weight gradient is a transpose of what its mm made, so the engine holds a view and
    # allocates the sum with the embedding's gradient (30.5% low, counted as summed in place)
    assert predicted == measured, (predicted, measured)


class TwoTowers(nn.Module):
    """Two blocks of one class on inputs of different lengths (CLIP's text and vision towers, T5's encoder and
    decoder): compiled block by block, the second call recompiles the shared code with dynamic shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.text = Layer()
        self.image = Layer()

    def forward(self, x, y):
        return self.text(x).square().mean() + self.image(y).square().mean()


def test_blocks_compiled_with_dynamic_shapes_are_predicted_with_a_warning():
    torch.manual_seed(0)
    model, args = TwoTowers(), (torch.randn(256, 64), torch.randn(384, 64))
    # a TypeError before: an op's workspace signature held the symbolic sizes, which do not hash
    with pytest.warns(RuntimeWarning, match="dynamic shapes"):
        (predicted,) = predict_peaks(model, args, [0.4], backend="aot_eager", regions=["text", "image"])
    assert predicted.peak_bytes > 0


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a block compiled with dynamic shapes is predicted one activation low (10.8%); the "
                          "prediction warns")  # fmt: skip
def test_blocks_compiled_with_dynamic_shapes_are_predicted_exactly():
    torch.manual_seed(0)
    model, args = TwoTowers(), (torch.randn(256, 64), torch.randn(384, 64))
    regions = ["text", "image"]
    with pytest.warns(RuntimeWarning, match="dynamic shapes"):
        (predicted,) = predict_peaks(model, args, [0.4], backend="aot_eager", regions=regions)
    (measured,) = sweep(model, args, budgets=[0.4], backend="aot_eager", repeats=1, progress=False,
                        regions=regions).points  # fmt: skip
    assert measured.ok
    assert abs(predicted.peak_bytes - measured.peak_bytes) <= 0.02 * measured.peak_bytes, (
        predicted.peak_bytes, measured.peak_bytes)  # fmt: skip


# ---------------------------------------------------------------------- eager: transformers decoders


def _decoder(config_name: str, model_name: str):
    """A tiny ``transformers`` decoder (2 layers, hidden 64), its ids as labels: ``(model, args, units, loss)``."""
    transformers = pytest.importorskip("transformers")
    sizes = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=256,
                 max_position_embeddings=128, use_cache=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    config = getattr(transformers, config_name)(**sizes)
    torch.manual_seed(0)
    inner = getattr(transformers, model_name)(config).train()

    class Step(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids):
            return self.inner(input_ids=ids, labels=ids)

    ids = torch.randint(3, 256, (2, 32))
    layers = [n for n, _ in Step().named_modules() if n.count(".") == 3 and ".layers." in n]
    return Step(), (ids,), layers, lambda out: out.loss


@pytest.mark.parametrize(("config_name", "model_name"), [("LlamaConfig", "LlamaForCausalLM"),
                                                         ("GPTNeoXConfig", "GPTNeoXForCausalLM")],
                         ids=["llama", "gpt_neox"])  # fmt: skip
def test_a_transformers_decoder_plan_is_predicted_to_the_byte(config_name, model_name):
    """Llama: 4.5% high before (the fake step built the causal mask the real one skips); GPT-NeoX: 7.8% high
    before (that, and its units replayed after their backward node's first op, on top of its output)."""
    model, args, units, loss = _decoder(config_name, model_name)
    assert len(units) == 2, units
    first = plan_checkpoints(model, args, 1 << 50, loss=loss, units=units)
    assert first._timeline.recording.fake
    limit = (first.full_checkpoint_peak_bytes + first.unplanned_peak_bytes) // 2
    plan = plan_checkpoints(model, args, limit, loss=loss, units=units)
    assert any(u.checkpointed for u in plan.units)
    assert plan.predicted_peak_bytes == plan.measure(args, loss=loss)


def test_a_replay_runs_before_the_first_op_of_its_backward_node():
    model, args = _stack()
    timeline = plan_checkpoints(model, args, 1 << 50, loss=lambda out: out)._timeline
    ops = timeline.recording.ops
    for items in timeline.units:
        at = items.replay_at
        # `down`'s AddmmBackward: its input's gradient (t, mm), then its weight's (t, mm), which reads gelu's output
        node = [op.name for op in ops if op.node_start == at]
        assert node[:4] == ["aten.t.default", "aten.mm.default", "aten.t.default", "aten.mm.default"], node
        unit_ops = set(items.ops.tolist())
        dropped = {s.index for s in timeline.recording.storages if s.birth in unit_ops and not s.unit_output}
        reader = next(op for op in ops if op.backward and dropped & set(op.reads))
        assert reader.node_start == at < reader.index
