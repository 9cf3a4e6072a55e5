"""benchmarks/bench_zoo.py and benchmarks/_zoo.py: a few zoo models build in every precision, and the
benchmark's rows for one budget under aot_eager have sane fields (no assertion on timings or on how close the
predictions are: measuring that is the benchmark's job)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("remat_knapsack.torch")

MODELS = ["gpt2", "bert", "resnet"]


def test_registry_covers_every_family(zoo):
    zoo, _ = zoo
    assert len(zoo.ZOO) >= 30 and set(zoo.QUICK) <= set(zoo.ZOO)
    with pytest.raises(KeyError):
        zoo.make("no-such-model")
    with pytest.raises(ValueError):
        zoo.make("gpt2", "fp16")


@pytest.mark.parametrize("precision", ["fp32", "bf16", "autocast"])
def test_models_build_in_each_precision(zoo, precision):
    zoo, _ = zoo
    for name in MODELS:
        zm = zoo.make(name, precision)
        assert zm.precision == precision and zm.family in zoo.FAMILIES
        weights = {p.dtype for p in zm.model.parameters()}
        assert weights == ({torch.bfloat16} if precision == "bf16" else {torch.float32})
        assert zm.model.autocast == (precision == "autocast")
        floats = [a for a in zm.args if a.is_floating_point()]
        assert all(a.dtype == (torch.bfloat16 if precision == "bf16" else torch.float32) for a in floats)
        loss = zm.loss(zm.model(*zm.args))
        assert loss.dim() == 0 and torch.isfinite(loss.float())
        if zm.blocks:
            assert all(isinstance(zm.model.get_submodule(u), torch.nn.Module) for u in zoo.units(zm))


def _check(row, bench):
    assert not row["error"], row["error"]
    pred, meas = row["predicted_bytes"], row["measured_bytes"]
    assert pred > 0 and meas > 0
    assert row["error_pct"] == round(100.0 * (pred - meas) / meas, 2)
    assert row["predicted_mib"] == round(pred / bench.MiB, 4) and row["measured_mib"] == round(meas / bench.MiB, 4)
    assert set(row) == set(bench.FIELDS)


@pytest.mark.parametrize(("name", "precision"), [("resnet", "fp32"), ("resnet", "bf16"), ("bert", "autocast")])
def test_compiled_row_for_one_budget(zoo, name, precision):
    zoo, bench = zoo
    zm = zoo.make(name, precision)
    (row,) = bench.compiled_rows(zm, "aot_eager", [0.4])
    assert (row["model"], row["precision"], row["backend"], row["path"], row["budget"]) == (
        name, precision, "aot_eager", "compiled", 0.4)  # fmt: skip
    _check(row, bench)


def test_eager_row(zoo):
    zoo, bench = zoo
    row = bench.eager_row(zoo.make("bert", "fp32"))
    assert (row["path"], row["backend"]) == ("eager", "")
    _check(row, bench)
    assert row["limit_mib"] > 0


def test_errors_become_rows_and_the_table_reads_them(zoo, tmp_path):
    zoo, bench = zoo
    zm = zoo.make("resnet")

    def broken(out):
        raise RuntimeError("no loss here")

    zm.loss = broken
    (row,) = bench.compiled_rows(zm, "aot_eager", [0.4])
    assert row["error"] and row["error_pct"] == ""
    assert bench.error_pct(110, 100) == 10.0 and bench.error_pct(None, 100) == ""
    from _results import write_rows

    base = {k: "" for k in bench.FIELDS}
    base.update(model="m", family="decoder", precision="fp32", backend="aot_eager", path="compiled")
    rows = [{**base, "budget": 0.05, "error_pct": -3.0}, {**base, "budget": 0.9, "error_pct": 2.0},
            {**base, "path": "regions", "budget": 0.4, "error_pct": 1.0}, {**base, "path": "fit", "error_pct": 0.0},
            {**base, "backend": "", "path": "eager", "error_pct": 0.5}]  # fmt: skip
    table = bench.tables(Path(write_rows(rows, tmp_path / "zoo.csv")))
    assert "aot_eager fp32 | aot_eager fit fp32 | aot_eager regions fp32 | eager fp32 |" in table
    assert "| m | decoder | -3.0 | 0.0 | +1.0 | +0.5 |" in table
