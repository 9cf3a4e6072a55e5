"""The budget sweep: reports without torch, measurements with a tiny MLP under aot_eager.

Report logic (``best``, ``non_monotonic``, CSV, table) is checked on constructed
reports and needs no torch. The torch part sweeps one hand-written 2-block MLP
once (module fixture, three budgets, one timed step each) and checks its
measurements against independent ones.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remat_knapsack.sweep_report import BudgetPoint, SweepReport, check_budgets, parse_bytes

try:
    import torch  # noqa: F401

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False
HAS_MPL = importlib.util.find_spec("matplotlib") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (pip install 'remat-knapsack[torch]')")
needs_mpl = pytest.mark.skipif(not HAS_MPL, reason="needs matplotlib")
MiB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- reports, no torch


def _report(rows):
    return SweepReport(BudgetPoint(b, peak, t) if peak is not None else BudgetPoint(b, error="boom")
                       for b, peak, t in rows)  # fmt: skip


def test_best_on_a_constructed_report():
    r = _report([(1.0, 86 * MiB, 0.10), (0.0, 110 * MiB, 0.30), (0.1, 61 * MiB, 0.22),
                 (0.3, 52 * MiB, 0.25), (0.5, 58 * MiB, 0.20), (0.8, None, None)])  # fmt: skip
    assert [p.budget for p in r.points] == [0.0, 0.1, 0.3, 0.5, 0.8, 1.0]  # budget order
    assert r.best(200 * MiB).budget == 1.0  # everything fits: the fastest
    assert r.best(86 * MiB).budget == 1.0  # the limit is inclusive
    assert r.best(86 * MiB - 1).budget == 0.5
    assert r.best(61 * MiB).budget == 0.5  # 0.1 fits too, but is slower
    assert r.best(58 * MiB - 1).budget == 0.3
    assert r.best(55 * MiB).budget == 0.3
    assert r.best(52 * MiB - 1) is None
    assert r.non_monotonic == [(0.0, 0.1), (0.1, 0.3)]  # the errored 0.8 is skipped, 0.5 -> 1.0 rises
    with pytest.raises(ValueError, match="max_peak_bytes"):
        r.best(-1)
    with pytest.raises(ValueError, match="max_peak_bytes"):
        r.best(float("nan"))


def test_best_breaks_ties_by_peak_then_budget():
    r = _report([(0.2, 50, 1.0), (0.4, 40, 1.0), (0.6, 40, 1.0), (0.8, 10, 2.0)])
    assert r.best(100).budget == 0.4
    assert r.best(39).budget == 0.8


rows = st.lists(
    st.tuples(st.integers(0, 10), st.one_of(st.none(), st.integers(0, 100)), st.integers(1, 5)),
    min_size=1, max_size=8, unique_by=lambda r: r[0],
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(rows, st.integers(0, 110))
def test_best_and_non_monotonic_against_brute_force(data, limit):
    r = _report([(b / 10, peak, t / 10) for b, peak, t in data])
    ok = [p for p in r.points if p.error is None]
    fits = [p for p in ok if p.peak_bytes <= limit]
    pick = r.best(limit)
    if not fits:
        assert pick is None
    else:
        assert pick in fits
        assert all(pick.step_seconds <= p.step_seconds for p in fits)
        assert all((pick.peak_bytes, pick.budget) <= (p.peak_bytes, p.budget)
                   for p in fits if p.step_seconds == pick.step_seconds)  # fmt: skip
    # every pair where the lower budget peaks higher contains a flagged consecutive pair
    flagged = set(r.non_monotonic)
    assert all(a.peak_bytes > b.peak_bytes for a, b in (({p.budget: p for p in ok}[x], {p.budget: p for p in ok}[y])
                                                         for x, y in flagged))  # fmt: skip
    for a, b in itertools.combinations(ok, 2):
        if a.peak_bytes > b.peak_bytes:
            between = [p.budget for p in ok if a.budget <= p.budget <= b.budget]
            assert any(pair in flagged for pair in zip(between, between[1:]))
    if not any(a.peak_bytes > b.peak_bytes for a, b in itertools.combinations(ok, 2)):
        assert flagged == set()


def test_csv_round_trip_and_table(tmp_path):
    r = SweepReport(
        [BudgetPoint(0.0, 3 * MiB, 0.01, 2 * MiB, 0.0, 0, 0.0),
         BudgetPoint(0.5, 2 * MiB, 0.02, MiB, 0.4375, 2, 0.0012),
         BudgetPoint(1.0, error="BackendCompilerFailed: no\nsecond line")],
        backend="aot_eager",
    )  # fmt: skip
    r.to_csv(tmp_path / "s.csv")
    back = SweepReport.read_csv(tmp_path / "s.csv")
    assert back.points == r.points
    text = r.table(max_peak_bytes=2.5 * MiB)
    lines = text.splitlines()
    assert len(lines) == 2 + 3
    assert "| 0.5 | 2.0 | 20.0 | 1.0 | 0.4375 | 2 | 1.20 | best, non-monotonic |" in lines
    assert "error: BackendCompilerFailed: no" in lines[-1] and "second line" not in text


@needs_mpl
def test_plot_writes_a_png(tmp_path):
    r = _report([(0.0, 110 * MiB, 0.30), (0.3, 52 * MiB, 0.25), (0.6, None, None), (1.0, 86 * MiB, 0.2)])
    r.plot(tmp_path / "s.png", max_peak_bytes=60 * MiB)
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_parse_bytes_and_check_budgets():
    assert parse_bytes("512MiB") == 512 * MiB and parse_bytes("2GiB") == 2 << 30 and parse_bytes(7) == 7
    assert parse_bytes("1.5 MB") == 1_500_000
    for bad in ("12 parsecs", "-1MiB", "", "MiB", float("inf")):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    assert check_budgets(None) == [k / 10 for k in range(11)]
    assert check_budgets([1, 0, "0.5"]) == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match=r"budgets\[1\] = 1.5 is outside \[0, 1\]"):
        check_budgets([0.2, 1.5])
    with pytest.raises(ValueError, match=r"budgets\[0\] = nan"):
        check_budgets([math.nan])
    with pytest.raises(ValueError, match="duplicates"):
        check_budgets([0.5, 0.5])
    with pytest.raises(ValueError, match="not a number"):
        check_budgets(["half"])


# ---------------------------------------------------------------------- with torch


def _mlp():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self, d: int = 128, blocks: int = 2) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(d, d) for _ in range(blocks))

        def forward(self, x):
            for layer in self.layers:
                x = torch.tanh(layer(x)) * torch.sigmoid(x)
            return x

    torch.manual_seed(0)
    return MLP(), torch.randn(256, 128)


@pytest.fixture(scope="module")
def swept():
    from remat_knapsack.torch import sweep

    model, x = _mlp()
    report = sweep(model, (x,), budgets=[1.0, 0.0, 0.3], backend="aot_eager", repeats=1, progress=False)
    return model, x, report


def _config():
    import torch._functorch.config as fconfig
    import torch._functorch.partitioners as partitioners

    from remat_knapsack.torch import _plugin as rt

    return (fconfig.activation_memory_budget, fconfig.activation_memory_budget_solver,
            fconfig.enable_autograd_cache, partitioners._optimize_runtime_with_given_memory,
            len(rt._observers), rt._holds)  # fmt: skip


def _compiled_step(model, x, budget):
    import torch
    import torch._functorch.config as fconfig

    torch._dynamo.reset()
    with fconfig.patch(activation_memory_budget=budget, enable_autograd_cache=False):
        fn = torch.compile(model, backend="aot_eager")
        fn(x).sum().backward()  # compile now, under this budget

    def step():  # as sweep's step: the output lives until backward is done
        model.zero_grad(set_to_none=True)
        out = fn(x)
        out.sum().backward()

    return step


@needs_torch
def test_sweep_points_are_measured(swept):
    _, _, report = swept
    assert [p.budget for p in report.points] == [0.0, 0.3, 1.0]
    for p in report.points:
        assert p.error is None, p.error
        assert p.peak_bytes > 0 and p.step_seconds > 0 and p.saved_bytes > 0
    by = {p.budget: p for p in report.points}
    # PyTorch runs the knapsack only strictly between 0 and 1
    assert by[0.0].graphs == by[1.0].graphs == 0 and by[0.0].predicted_saved == 0
    assert by[0.3].graphs == 1 and 0 < by[0.3].predicted_saved <= 0.3 and by[0.3].solve_seconds > 0
    assert by[0.0].saved_bytes < by[0.3].saved_bytes < by[1.0].saved_bytes
    assert report.meta["backend"] == "aot_eager" and report.meta["device"] == "cpu"


@needs_torch
def test_saved_bytes_match_saved_tensors_hooks(swept):
    import torch

    model, x, report = swept
    for p in report.points:
        step = _compiled_step(model, x, p.budget)
        storages: dict[int, int] = {}

        def pack(t, storages=storages):
            storages[t.untyped_storage()._cdata] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            step()
        assert p.saved_bytes == sum(storages.values()), p.budget
    torch._dynamo.reset()


@needs_torch
def test_peak_matches_the_allocators_own_running_total(swept, tmp_path):
    # Independent of profile_peak_bytes' summation: the profiler's chrome trace
    # carries the CPU allocator's "Total Allocated" at every event.
    from torch.profiler import ProfilerActivity, profile

    model, x, report = swept
    for p in report.points:
        step = _compiled_step(model, x, p.budget)
        model.zero_grad(set_to_none=True)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        trace = tmp_path / f"trace{p.budget}.json"
        prof.export_chrome_trace(str(trace))
        events = [e["args"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("name") == "[memory]"]
        events = [a for a in events if a.get("Device Type") == 0]  # CPU
        start = events[0]["Total Allocated"] - events[0]["Bytes"]
        peak = max(a["Total Allocated"] for a in events) - start
        assert p.peak_bytes == pytest.approx(peak, rel=0.02), p.budget
        assert p.peak_bytes >= x.numel() * 4  # at least the output


@needs_torch
def test_pytorch_solver_by_name_and_knee_solver():
    from remat_knapsack.torch import KnapsackSolver, sweep

    model, x = _mlp()
    r = sweep(model, (x,), budgets=[0.3], backend="aot_eager", solver="dp_knapsack", repeats=1, progress=False)
    (p,) = r.points
    assert p.error is None and p.graphs == 1 and r.meta["solver"] == "torch dp_knapsack"
    r = sweep(model, (x,), budgets=[0.9], backend="aot_eager", solver=KnapsackSolver(budget="knee"),
              repeats=1, progress=False)  # fmt: skip
    assert r.points[0].error is None


@needs_torch
def test_bad_input_raises_before_compiling():
    import torch

    from remat_knapsack.torch import sweep

    model, x = _mlp()
    compiled = []

    def backend(gm, inputs):
        compiled.append(gm)
        return gm

    def run(**kw):
        return sweep(kw.pop("model", model), kw.pop("args", (x,)), backend=backend, progress=False, **kw)

    with pytest.raises(ValueError, match=r"budgets\[1\] = -0.1 is outside"):
        run(budgets=[0.5, -0.1])
    with pytest.raises(ValueError, match="model does not run.*RuntimeError"):
        run(args=(torch.randn(4, 7),))
    with pytest.raises(ValueError, match=r"loss must be a scalar tensor, got \(256, 128\)"):
        run(loss=lambda out: out * 2)
    with pytest.raises(ValueError, match="loss does not require grad"):
        run(loss=lambda out: out.detach().sum())
    with pytest.raises(ValueError, match="unknown solver 'dp_knapsak'"):
        run(solver="dp_knapsak")
    with pytest.raises(ValueError, match="repeats"):
        run(repeats=0)
    assert compiled == []


@needs_torch
def test_a_failing_compile_is_that_points_error_and_config_is_restored():
    import torch
    import torch._functorch.config as fconfig

    from remat_knapsack.torch import sweep

    model, x = _mlp()
    aot_eager = torch._dynamo.lookup_backend("aot_eager")

    def flaky(gm, inputs):
        if fconfig.activation_memory_budget == 0.5:
            raise RuntimeError("no compiler at 0.5")
        return aot_eager(gm, inputs)

    before = _config()
    r = sweep(model, (x,), budgets=[0.0, 0.5, 1.0], backend=flaky, repeats=1, progress=False)
    assert _config() == before
    assert [p.error is None for p in r.points] == [True, False, True]
    assert "no compiler at 0.5" in r.points[1].error and r.points[1].peak_bytes is None


@needs_torch
def test_ctrl_c_ends_the_sweep_with_config_restored():
    from remat_knapsack.torch import install, sweep, uninstall

    model, x = _mlp()
    calls = []

    def loss(out):
        calls.append(1)
        if len(calls) == 3:  # 1: the eager check, 2: budget 0's compile, 3: its next step
            raise KeyboardInterrupt
        return out.sum()

    for installed in (False, True):
        calls.clear()
        if installed:
            install("dp")
        try:
            before = _config()
            with pytest.raises(KeyboardInterrupt):
                sweep(model, (x,), budgets=[0.0, 0.5], loss=loss, backend="aot_eager", repeats=1, progress=False)
            assert _config() == before
        finally:
            uninstall()


@needs_torch
def test_cli_sweep(tmp_path, capsys):
    from remat_knapsack.cli import main

    mod = tmp_path / "tinymodel.py"
    mod.write_text(
        "import torch\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    m = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))\n"
        "    return m, (torch.randn(64, 32),), lambda out: out.square().mean()\n"
    )
    out = tmp_path / "out"
    code = main(["sweep", f"{mod}:make", "--budgets", "0", "1", "--backend", "aot_eager", "--repeats", "1",
                 "--max-peak", "1GiB", "--out", str(out), "--quiet"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0, text
    assert "| budget | peak MiB" in text and "best within 1024.0 MiB: budget" in text
    back = SweepReport.read_csv(out / "sweep.csv")
    assert [p.budget for p in back.points] == [0.0, 1.0] and all(p.ok for p in back.points)
    assert (out / "sweep.png").exists() == HAS_MPL
    assert main(["sweep", f"{mod}:nothing", "--out", str(out)]) == 2
    assert "has no function 'nothing'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", f"{mod}:make", "--budgets", "2"])
    # MODULE as an importable name
    sys.path.insert(0, str(tmp_path))
    try:
        assert main(["sweep", "tinymodel:make", "--budgets", "1", "--backend", "aot_eager", "--repeats", "1",
                     "--out", str(tmp_path / "o2"), "--quiet"]) == 0  # fmt: skip
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("tinymodel", None)
    assert "wrote" in capsys.readouterr().out


@needs_torch
@pytest.mark.skipif(os.environ.get("REMAT_NO_TORCH_RUN") == "1", reason="already the inner run")
def test_without_torch_everything_collects_and_skips(tmp_path):
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError('torch hidden by the test', name='torch')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT / "src")]),
           "REMAT_NO_TORCH_RUN": "1"}  # fmt: skip
    # the src directory, as `python -m pytest` collects it (explicit file arguments bypass collect_ignore)
    files = ["src", "tests/torch_plugin"]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *files],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "error" not in text.lower().replace("valueerror", "")
    assert "could not import 'torch'" in text and "needs torch" in text
    assert " passed" in text  # the report tests still run
