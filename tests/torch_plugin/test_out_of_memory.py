"""Out-of-memory is an answer: a step that does not fit, planned under a real memory cap, and OOM mid-planning.

The cap test runs ``capped_worker.py`` in a process whose address space is
capped between what the planned step needs and what the unplanned one needs:
the unplanned step must run out of memory there (the cap bites), and every
planning path (``predict_peaks``, ``fit``, ``plan_checkpoints``,
``remat-knapsack fit`` compiled and ``--eager``) must succeed and train the
planned step, and ``sweep`` must measure the budget that fits and record the
one that does not. The other tests make a measured step run out of memory on
purpose and check what ``fit`` and ``sweep`` do then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install 'remat-knapsack[torch]')")

from remat_knapsack.errors import PeakLimitError, StepOutOfMemoryError  # noqa: E402
from remat_knapsack.torch import _fit, _sweep, fit, sweep  # noqa: E402
from remat_knapsack.torch.step import check_model, is_out_of_memory  # noqa: E402
from tests.training_models import MODELS  # noqa: E402

WORKER = Path(__file__).with_name("capped_worker.py")
AOT = "aot_eager"
#: Address space allowed above what the worker uses after loading the compile machinery: the
#: planned steps (about 120-165 MiB at their peak) fit with room for the allocator; the
#: unplanned one (about 301 MiB) does not.
MARGIN_MIB = 240
CPU_OOM = "[enforce fail at alloc_cpu.cpp:127] . DefaultCPUAllocator: can't allocate memory: you tried to allocate 1"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status: Linux")
@pytest.mark.parametrize("paths", [
    pytest.param(("predict", "fit", "eager"), id="api"),
    pytest.param(("cli-fit", "cli-eager", "sweep"), id="cli-sweep", marks=pytest.mark.slow),
])  # fmt: skip
def test_every_planning_path_works_where_the_unplanned_step_does_not_fit(tmp_path, paths):
    out = tmp_path / "capped.json"
    # one malloc arena per thread reserves 64 MiB of address space: keep their number small
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    proc = subprocess.run([sys.executable, str(WORKER), str(out), str(MARGIN_MIB), *paths], capture_output=True,
                          text=True, timeout=900, env=env, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["unplanned"] == "out of memory", report  # the cap bites
    failed = {p: report[p] for p in paths if isinstance(report[p], dict) and "error" in report[p]}
    assert not failed, failed
    limit = 160 << 20
    if "predict" in paths:
        assert all(isinstance(p, int) and p > 0 for p in report["predict"])
    if "fit" in paths:
        assert report["fit"]["peak"] <= limit
        assert report["eager"]["predicted"] <= limit
        assert report["fit"]["loss"] == pytest.approx(report["eager"]["loss"], rel=1e-5)  # both trained the same step
    if "sweep" in paths:
        fits, does_not = report["sweep"]  # sweep goes on past a budget that does not fit, and says why
        assert isinstance(fits, int) and fits > 0
        assert does_not.startswith("the step at budget 1 does not fit in memory"), does_not
        assert report["cli-fit"]["code"] == 0 and report["cli-eager"]["code"] == 0


def test_out_of_memory_is_told_from_a_broken_model():
    assert is_out_of_memory(RuntimeError(CPU_OOM))
    assert is_out_of_memory(MemoryError())
    wrapped = RuntimeError("compile failed")
    wrapped.__cause__ = RuntimeError(CPU_OOM)
    assert is_out_of_memory(wrapped)
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    if hasattr(torch, "OutOfMemoryError"):
        assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))


def _out_of_memory_once(measure):
    """``measure`` (a step's peak) that runs out of memory the first time it is called, as a real step would."""
    calls = []

    def measured(step, device="cpu"):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(CPU_OOM)
        return measure(step, device)

    return measured


def _snapshot(model):
    return ({k: v.clone() for k, v in model.state_dict().items()}, [p.grad for p in model.parameters()],
            torch.random.get_rng_state())  # fmt: skip


def _same(before, model):
    state, grads, rng = before
    now = model.state_dict()
    assert all(torch.equal(state[k], now[k]) for k in state)
    assert all(g is None for g in grads) and all(p.grad is None for p in model.parameters())
    assert torch.equal(rng, torch.random.get_rng_state())


def test_fit_aims_lower_when_a_plan_runs_out_of_memory(monkeypatch):
    """The first plan measured runs out of memory: fit compiles a plan aimed 10% lower, which it reports;
    the model's state, its gradients and the random generator are as they were."""
    model, args, loss = MODELS["dropout_mlp"]()
    monkeypatch.setattr(_fit, "profile_peak_bytes", _out_of_memory_once(_fit.profile_peak_bytes))
    before = _snapshot(model)
    report = fit(model, args, 1 << 30, loss=loss, backend=AOT, repeats=1)
    _same(before, model)
    first, second = report.attempts[0], report.attempts[1]
    assert "can't allocate memory" in first["out_of_memory"] and first["peak_bytes"] is None
    assert second["target_bytes"] == int(first["target_bytes"] * _fit.OOM_AIM)
    assert report.peak_bytes == second["peak_bytes"] <= report.max_peak_bytes


def test_fit_says_every_plan_ran_out_of_memory(monkeypatch):
    model, args, loss = MODELS["dropout_mlp"]()

    def out_of_memory(step, device="cpu"):
        raise RuntimeError(CPU_OOM)

    monkeypatch.setattr(_fit, "profile_peak_bytes", out_of_memory)
    before = _snapshot(model)
    with pytest.raises(PeakLimitError, match="ran out of memory") as raised:
        fit(model, args, 1 << 30, loss=loss, backend=AOT, repeats=1)
    assert raised.value.out_of_memory >= 1
    _same(before, model)


def test_sweep_records_a_budget_that_does_not_fit_and_goes_on(monkeypatch):
    model, args, loss = MODELS["dropout_mlp"]()
    monkeypatch.setattr(_sweep, "profile_peak_bytes", _out_of_memory_once(_sweep.profile_peak_bytes))
    before = _snapshot(model)
    report = sweep(model, args, budgets=[0.0, 1.0], loss=loss, backend=AOT, repeats=1, progress=False)
    _same(before, model)
    first, second = report.points
    assert first.error.startswith("the step at budget 0 does not fit in memory") and first.peak_bytes is None
    assert second.error is None and second.peak_bytes > 0


def test_a_real_check_that_runs_out_of_memory_says_the_step_does_not_fit():
    class OutOfMemory(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError(CPU_OOM)

    with pytest.raises(StepOutOfMemoryError, match="does not fit in memory"):
        check_model(OutOfMemory(), (torch.randn(2),), None)
    with pytest.raises(ValueError, match="does not run on args"):  # on fake tensors: a real error is the model's
        fit(torch.nn.Linear(3, 3), (torch.randn(2, 4),), 1 << 20, backend=AOT)
