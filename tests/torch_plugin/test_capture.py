"""Planning without the unplanned step: fake tensors in place of the model's, models on the meta device.

Checked: the fake swap leaves the real model as it was; ``FakeMemory`` counts
what the profiler measures for the loss; ``predict_peaks`` gives, for a model
on the meta device, the predictions of the same model materialised (the suite's models, transformers GPT-2 and
LLaMA among them); ``fit`` plans on fake tensors and compiles for real only
a plan whose modelled peak fits.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install 'remat-knapsack[torch]')")

from torch._subclasses.fake_tensor import FakeTensor  # noqa: E402

from remat_knapsack.torch import fit, predict_peaks  # noqa: E402
from remat_knapsack.torch.capture import FakeMemory, fake_model, fake_unsupported, target_device  # noqa: E402
from remat_knapsack.torch.step import profile_peak_bytes  # noqa: E402
from tests.training_models import MODELS  # noqa: E402

AOT = "aot_eager"
BUDGETS = [0.05, 0.5, 1.0]


def _logits_loss(out):
    logits = getattr(out, "logits", out)
    return logits.float().logsumexp(-1).mean()


def test_the_fake_swap_leaves_the_real_model_as_it_was():
    model, args, loss = MODELS["batchnorm"]()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = list(model.parameters())
    with fake_model(model, args) as fm:
        assert all(isinstance(p, FakeTensor) and p is not q for p, q in zip(model.parameters(), params))
        with fm.mode:
            loss(model(*fm.args)).backward()
    assert list(model.parameters()) == params  # the same objects back
    assert all(p.grad is None for p in params)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # running statistics untouched


def test_tied_weights_stay_tied():
    model = torch.nn.Sequential(torch.nn.Embedding(16, 8), torch.nn.Linear(8, 16, bias=False))
    model[1].weight = model[0].weight
    with fake_model(model, (torch.zeros(2, 3, dtype=torch.long),)):
        assert model[1].weight is model[0].weight
    assert model[1].weight is model[0].weight


def test_fake_memory_counts_what_the_profiler_measures():
    """A vocabulary loss and its gradient: 3 tensors of the logits' size at its peak, counted alike."""
    b, t, v = 4, 64, 512
    target = torch.randint(0, v, (b * t,))

    def region(out):
        value = torch.nn.functional.cross_entropy(out.flatten(0, 1), target)
        return torch.autograd.grad(value, [out])

    real = torch.randn(b, t, v, requires_grad=True) * 1.0
    measured = profile_peak_bytes(lambda: region(real))
    with fake_model(torch.nn.Module(), (real,)) as fm:
        with fm.mode:
            out = fm.args[0] * 1.0
            with FakeMemory() as memory:
                region(out)
    assert memory.peak_bytes == measured


@pytest.mark.parametrize("name", ["decoder", "conv_groupnorm", "dropout_mlp"])
def test_a_meta_model_is_predicted_as_the_materialised_one(name):
    model, args, loss = MODELS[name]()
    expected = predict_peaks(model, args, BUDGETS, loss=loss, backend=AOT)
    factory = MODELS[name]
    with torch.device("meta"):
        meta_model, meta_args, _ = factory()
    got = predict_peaks(meta_model, meta_args, BUDGETS, loss=loss, backend=AOT, device="cpu")
    assert [(p.peak_bytes, p.saved_bytes) for p in got] == [(p.peak_bytes, p.saved_bytes) for p in expected]


def _gpt2():
    transformers = pytest.importorskip("transformers")
    return transformers.GPT2LMHeadModel, transformers.GPT2Config(
        n_embd=64, n_layer=2, n_head=4, vocab_size=512, n_positions=64, bos_token_id=0, eos_token_id=0,
        use_cache=False)  # fmt: skip


def _llama():
    transformers = pytest.importorskip("transformers")
    return transformers.LlamaForCausalLM, transformers.LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=512, use_cache=False)  # fmt: skip


@pytest.mark.parametrize("make", [_gpt2, _llama], ids=["gpt2", "llama"])
@pytest.mark.parametrize("backend", [AOT, pytest.param("inductor", marks=pytest.mark.slow)])
def test_a_meta_transformer_is_predicted_as_the_materialised_one(make, backend):
    if backend == "inductor" and make is _llama:
        pytest.skip("one inductor model is enough for the suite's time")
    cls, config = make()
    torch.manual_seed(0)
    model = cls(config)
    ids = torch.randint(0, 512, (2, 64))
    expected = predict_peaks(model, (ids,), BUDGETS, loss=_logits_loss, backend=backend)
    with torch.device("meta"):
        meta = cls(config)
    got = predict_peaks(meta, (ids.to("meta"),), BUDGETS, loss=_logits_loss, backend=backend)
    for e, g in zip(expected, got):
        assert abs(g.peak_bytes - e.peak_bytes) <= 0.01 * e.peak_bytes, (g, e)
        assert g.saved_bytes == e.saved_bytes


def test_fit_compiles_for_real_only_a_plan_that_fits(monkeypatch):
    """A limit below every plan's modelled peak raises before any real step (nothing measured)."""
    from remat_knapsack.errors import PeakLimitError
    from remat_knapsack.torch import _fit

    model, args, loss = MODELS["decoder"]()
    smallest = min(p.peak_bytes for p in predict_peaks(model, args, [0.0, 0.05, 0.3, 1.0], loss=loss, backend=AOT))
    measured = []
    monkeypatch.setattr(_fit, "profile_peak_bytes", lambda step, device="cpu": measured.append(1) or 0)
    with pytest.raises(PeakLimitError):
        fit(model, args, smallest // 3, loss=loss, backend=AOT, repeats=1)
    assert measured == []


def test_fit_refuses_to_measure_a_meta_model_with_a_message_saying_why():
    with torch.device("meta"):
        model, args, loss = MODELS["decoder"]()
    with pytest.raises(ValueError, match="meta device: pass measure=False"):
        fit(model, args, 1 << 30, loss=loss, backend=AOT)
    with pytest.raises(ValueError, match="measure must be True or False"):
        fit(model, args, 1 << 30, loss=loss, backend=AOT, measure="no")


def test_fit_without_measuring_plans_a_meta_model_as_the_materialised_one():
    """``fit(measure=False)`` compiles once on fake tensors and runs nothing; on the meta model it gives the
    materialised model's plan, and that plan, compiled for real, peaks within 1% of its prediction, within the limit,
    and trains as eager does (test_gradients.py)."""
    from remat_knapsack.torch import use_solver

    model, args, loss = MODELS["decoder"]()
    low, high = (p.peak_bytes for p in predict_peaks(model, args, [0.05, 0.9], loss=loss, backend=AOT))
    limit = (low + high) // 2
    real = fit(model, args, limit, loss=loss, backend=AOT, measure=False)
    assert (real.peak_bytes, real.step_seconds, real.saved_bytes, real.compiles) == (None, None, None, 0)
    assert real.predicted_peak_bytes <= limit and "not measured" in real.summary()
    assert all(p.grad is None for p in model.parameters())  # nothing ran
    with torch.device("meta"):
        meta_model, meta_args, _ = MODELS["decoder"]()
    meta = fit(meta_model, meta_args, limit, loss=loss, backend=AOT, measure=False)
    assert meta.predicted_peak_bytes == real.predicted_peak_bytes
    assert {k: p.saved_names for k, p in meta.solver.plans.items()} == {
        k: p.saved_names for k, p in real.solver.plans.items()}
    assert all(p.is_meta for p in meta_model.parameters())

    torch._dynamo.reset()
    with use_solver(real.solver):
        compiled = torch.compile(model, backend=AOT)

        def step():  # the step predicted (keep_output=True): the output alive through the backward
            out = compiled(*args)
            loss(out).backward()

        step()  # compiles: the measured step is the next one, as fit measures it
        model.zero_grad(set_to_none=True)
        measured = profile_peak_bytes(step)
    torch._dynamo.reset()
    assert measured <= limit and abs(measured - real.predicted_peak_bytes) <= 0.01 * measured, (measured, real)


def test_the_device_is_checked():
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        target_device(None, (), "tpu")
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        target_device(None, (), "not a device")
    with torch.device("meta"):
        model = torch.nn.Linear(2, 2)
    assert target_device(model, ()) == "cpu" and target_device(model, (), "cuda") == "cuda"


def test_a_data_dependent_model_is_planned_on_the_real_tensors_with_a_warning():
    class Selects(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            h = self.lin(x)
            return h[h > 0]  # an output whose shape depends on values

    torch.manual_seed(0)
    model, x = Selects(), torch.randn(64, 8)
    with fake_model(model, (x,)) as fm, fm.mode, pytest.raises(Exception) as raised:
        model(*fm.args).sum()
    assert fake_unsupported(raised.value)
    with pytest.warns(RuntimeWarning, match="fake tensors cannot run the model"):
        got = predict_peaks(model, (x,), [0.5], backend=AOT)
    assert got[0].peak_bytes > 0


META_TARGET = '''
import torch


def make():
    torch.manual_seed(0)
    blocks = [torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
              for _ in range(3)]
    return torch.nn.Sequential(*blocks), (torch.randn(512, 64),), lambda out: out.square().mean()
'''


def test_cli_plans_a_meta_model_without_measuring(tmp_path, capsys):
    """``remat-knapsack fit --meta`` builds the model on the meta device and plans it, eager (``--eager``) or
    compiled: the plan of the materialised model, nothing measured; ``--device`` without ``--eager`` is
    refused."""
    import json

    from remat_knapsack.cli import main
    from remat_knapsack.torch import plan_checkpoints

    target = tmp_path / "meta_target.py"
    target.write_text(META_TARGET)
    namespace: dict = {}
    exec(META_TARGET, namespace)
    model, args, loss = namespace["make"]()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    limit = (first.full_checkpoint_peak_bytes + first.unplanned_peak_bytes) // 2
    expected = plan_checkpoints(model, args, limit, loss=loss)
    out = tmp_path / "plan.json"
    assert main(["fit", f"{target}:make", "--max-peak", str(limit), "--eager", "--meta", "--out", str(out)]) == 0
    assert "not measured" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["measured_peak_bytes"] is None
    assert result["predicted_peak_bytes"] == expected.predicted_peak_bytes
    assert [u["saved_ops"] for u in result["units"]] == [list(u.saved_ops) for u in expected.units]
    # Compiled: fit(measure=False) on the meta model, the plan of the materialised one.
    unmeasured = fit(model, args, limit, loss=loss, backend=AOT, measure=False)
    out = tmp_path / "compiled.json"
    assert main(["fit", f"{target}:make", "--max-peak", str(limit), "--meta", "--backend", AOT,
                 "--out", str(out)]) == 0  # fmt: skip
    assert "not measured" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["peak_bytes"] is None and result["compiles"] == 0
    assert result["predicted_peak_bytes"] == unmeasured.predicted_peak_bytes
    assert main(["fit", f"{target}:make", "--max-peak", str(limit), "--meta", "--device", "cpu"]) == 2
