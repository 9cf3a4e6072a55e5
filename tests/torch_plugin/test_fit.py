"""``fit`` and ``remat-knapsack fit``: the retry path, PeakLimitError, bad input, on tiny MLPs under aot_eager."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install 'remat-knapsack[torch]')")

from remat_knapsack.errors import PeakLimitError  # noqa: E402

MiB = 1 << 20
#: The backend these tests plan for: the exact peak model, and compiles in a fraction of a second.
AOT = "aot_eager"


def _mlp(rows: int = 1024, d: int = 32):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d),
                                torch.nn.GELU(), torch.nn.Linear(d, 1))  # fmt: skip
    return model, (torch.randn(rows, d),)


@pytest.fixture(scope="module")
def peaks():
    from remat_knapsack.torch import predict_peaks

    model, args = _mlp()
    return predict_peaks(model, args, [0.0, 1.0], backend=AOT)


def test_fit_meets_a_reachable_limit_in_one_compile(peaks):
    from remat_knapsack.torch import FitReport, KnapsackSolver, fit

    model, args = _mlp()
    limit = max(p.peak_bytes for p in peaks) + MiB // 4
    r = fit(model, args, limit, repeats=1, backend=AOT)
    assert isinstance(r, FitReport) and r.compiles == 1
    assert r.peak_bytes <= limit and r.predicted_peak_bytes <= limit
    assert r.saved_bytes > 0 and r.step_seconds > 0
    assert isinstance(r.solver, KnapsackSolver) and r.solver.max_peak_bytes == limit
    d = json.loads(r.to_json())
    assert d["peak_bytes"] == r.peak_bytes and d["compiles"] == 1 and "max_peak_bytes" in d["solver"]


def test_fit_corrects_itself_when_the_measured_peak_is_above_the_limit(peaks, monkeypatch):
    from remat_knapsack.torch import _fit, fit

    model, args = _mlp()
    limit = max(p.peak_bytes for p in peaks) + MiB // 4
    real = _fit.profile_peak_bytes
    calls = []

    def too_high_once(step, device="cpu"):
        peak = real(step, device)
        calls.append(peak)
        return limit + MiB if len(calls) == 1 else peak

    monkeypatch.setattr(_fit, "profile_peak_bytes", too_high_once)
    r = fit(model, args, limit, repeats=1, backend=AOT)
    assert r.compiles == 2 and len(r.attempts) == 2
    assert r.attempts[0]["peak_bytes"] == limit + MiB and r.peak_bytes <= limit
    assert r.attempts[1]["target_bytes"] < r.attempts[0]["target_bytes"] == limit
    assert r.solver.max_peak_bytes == r.attempts[1]["target_bytes"]

    # always above the limit: three compiles, then PeakLimitError naming the smallest measured peak
    monkeypatch.setattr(_fit, "profile_peak_bytes", lambda step, device="cpu": (real(step, device), limit + 1)[1])
    with pytest.raises(PeakLimitError, match="measured") as info:
        fit(model, args, limit, repeats=1, backend=AOT)
    assert info.value.measured and info.value.smallest == limit + 1


def test_an_unreachable_limit_raises_peak_limit_error(peaks):
    from remat_knapsack.torch import fit

    model, args = _mlp()
    with pytest.raises(PeakLimitError) as info:
        fit(model, args, 1024, repeats=1, backend=AOT)
    assert info.value.limit == 1024 and info.value.smallest > 1024 and not info.value.measured
    assert "1024 bytes" in str(info.value)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "2GiB", True])
def test_bad_limits_raise_before_anything_compiles(bad, monkeypatch):
    from remat_knapsack.torch import _fit, fit

    def no_compile(*a, **k):
        raise AssertionError("compiled")

    monkeypatch.setattr(_fit, "_compile_and_measure", no_compile)
    model, args = _mlp()
    with pytest.raises(ValueError):
        fit(model, args, bad)
    with pytest.raises(ValueError, match="repeats"):
        fit(model, args, MiB, repeats=0)


def test_cli_fit(tmp_path, capsys, peaks):
    from remat_knapsack.cli import main

    mod = tmp_path / "tinymlp.py"
    mod.write_text(
        "import torch\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    m = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.Linear(128, 32),\n"
        "                            torch.nn.GELU(), torch.nn.Linear(32, 1))\n"
        "    return m, (torch.randn(1024, 32),)\n"
    )
    limit = max(p.peak_bytes for p in peaks) + MiB // 4
    out = tmp_path / "fit.json"
    code = main(["fit", f"{mod}:make", "--max-peak", str(limit), "--repeats", "1", "--out", str(out), "--backend", AOT])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "compile 1: target" in text and "use it: with remat_knapsack.torch.use_solver(" in text
    d = json.loads(out.read_text())
    assert d["max_peak_bytes"] == limit and d["peak_bytes"] <= limit and d["compiles"] == 1
    # each block compiled on its own, the rest eager (dynamo compiles user code, not torch.nn's own modules)
    blocks = tmp_path / "blocks.py"
    blocks.write_text(
        "import torch\n"
        "class Block(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a, self.b = torch.nn.Linear(32, 128), torch.nn.Linear(128, 32)\n"
        "    def forward(self, x):\n"
        "        return x + self.b(torch.nn.functional.gelu(self.a(x)))\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    return torch.nn.Sequential(Block(), Block(), torch.nn.Linear(32, 1)), (torch.randn(1024, 32),)\n"
    )
    code = main(["fit", f"{blocks}:make", "--max-peak", str(4 * limit), "--repeats", "1", "--out", str(out),
                 "--backend", AOT, "--regions", "0", "1"])  # fmt: skip
    assert code == 0, capsys.readouterr()
    assert json.loads(out.read_text())["peak_bytes"] <= 4 * limit
    assert main(["fit", f"{blocks}:make", "--max-peak", str(limit), "--regions", "nope"]) == 2
    assert "not a submodule" in capsys.readouterr().err
    unreachable = ["fit", f"{mod}:make", "--max-peak", "1KiB", "--repeats", "1", "--out", str(out), "--backend", AOT]
    assert main(unreachable) == 3
    assert "no plan keeps" in capsys.readouterr().err
    for bad in ("0", "-1", "lots"):
        with pytest.raises(SystemExit):
            main(["fit", f"{mod}:make", "--max-peak", bad])
