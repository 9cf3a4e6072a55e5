"""benchmarks/bench_planning_memory.py's helpers: the limits, a row from its children's results, the table and
the choice of models (no model is built, no child is started)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_planning_memory.py"
MiB = 1 << 20


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("_bench_planning_memory", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop(spec.name, None)


def test_limits_are_midway(bench):
    probed = {"predictions": [100, 160, 300], "full_checkpoint": 80, "unplanned_eager": 280}
    assert bench.limits(probed) == {"predict_peaks": None, "fit": 200, "plan_checkpoints": 180}


def test_row_is_each_child_above_the_floor(bench):
    floor = {"rss_mib": 300.0}
    probed = {"unplanned_compiled": 301 * MiB}
    got = {
        "rss_mib": 400.0,
        "seconds": 1.234,
        "predicted": 119 * MiB,
        "fit_peak": 150 * MiB,
        "compiles": 2,
        "run_rss_mib": 500.0,
        "measured": 120 * MiB,
    }
    row = bench.make_row("attention", "fit", False, 160 * MiB, floor, probed, got)
    assert row["planning_rss_mib"] == 100.0 and row["plan_and_run_rss_mib"] == 200.0 and row["ratio"] == 0.5
    assert (row["predicted_peak_mib"], row["measured_step_peak_mib"], row["unplanned_step_peak_mib"]) == (119, 120, 301)
    assert row["fit_peak_mib"] == 150 and row["limit_mib"] == 160 and row["planning_seconds"] == 1.23
    assert row["built_on"] == "cpu" and "2 time(s)" in row["note"]


def test_eager_row_reads_the_plans_unplanned_peak_and_errors_become_notes(bench):
    floor = {"rss_mib": 300.0}
    got = {
        "rss_mib": 350.0,
        "seconds": 1.0,
        "predicted": 100 * MiB,
        "unplanned": 250 * MiB,
        "run_error": "ValueError: boom",
    }
    row = bench.make_row("decoder", "plan_checkpoints", True, None, floor, {"unplanned_compiled": 1}, got)
    assert row["unplanned_step_peak_mib"] == 250 and row["built_on"] == "meta"
    assert row["plan_and_run_rss_mib"] == "" and row["ratio"] == "" and row["measured_step_peak_mib"] == ""
    assert row["planning_rss_mib"] == 50.0 and row["note"] == "run: ValueError: boom"


def test_table_has_the_columns_and_the_notes(bench):
    text = bench.table([{"model": "decoder", "api": "fit", "ratio": 0.5, "note": "something"}])
    header, line, note = text.splitlines()
    assert "planning_rss_mib" in header and "unplanned_step_peak_mib" in header
    assert "decoder" in line and "0.5" in line and note.strip() == "note: something"


def test_chosen_models(bench):
    assert set(bench.chosen_models(None, quick=True)) <= set(bench.QUICK_MODELS)
    assert set(bench.chosen_models(None, quick=False)) <= set(bench.ALL_MODELS)
    assert set(bench.models()) == set(bench.ALL_MODELS)
    with pytest.raises(SystemExit, match="unknown model"):
        bench.chosen_models(["nope"], quick=False)


def test_peak_rss_is_positive(bench):
    assert bench.peak_rss_mib() > 0
