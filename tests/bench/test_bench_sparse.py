"""The exact-core benchmark's pieces: combo's reference table and targets, per-job runner options,
and benchmarks/bench_sparse.py end to end on a tiny grid (no timing is asserted)."""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remat_knapsack.bench import combo
from remat_knapsack.bench.runner import Job, Runner
from remat_knapsack.instances import ALL_CLASSES, CLASSES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_sparse.py"
MS = 1e-3


# ---------------------------------------------------------------- combo's reference and the targets


def test_reference_rows():
    assert combo.reference("strongly", 10**3, 10**6) == combo.ComboRef(1.4 * MS, 1.4 * MS)
    assert combo.reference("subset_sum", 10**3, 10**6).hi == pytest.approx(1.6 * MS)
    assert combo.reference("profit_ceiling", 10**3, 10**6).hi == pytest.approx(1.6 * MS)
    assert combo.reference("spanner_strongly", 10**3, 10**6).hi == pytest.approx(3.5 * MS)
    assert combo.reference("circle", 10**4, 10**4).hi == pytest.approx(28 * MS)
    assert combo.reference("multiple_strongly", 10**4, 10**4).hi == pytest.approx(4.6 * MS)
    assert combo.reference("strongly", 10**5, 10**6).hi == pytest.approx(18 * MS)
    for fam in ("spanner_weakly", "spanner_strongly"):
        ref = combo.reference(fam, 10**4, 10**4)
        assert (ref.lo, ref.hi) == (0.6, 0.9)
    for cls in CLASSES:
        a, b = combo.reference(cls, 10**4, 10**4), combo.reference(cls, 10**5, 10**4)
        assert (a.lo, a.hi) == pytest.approx((0.07 * MS, 1.8 * MS)) and "range" in a.label()
        assert (b.lo, b.hi) == pytest.approx((0.65 * MS, 15 * MS))
    # no row in the issue: no reference, no verdict
    assert combo.reference("spanner_uncorrelated", 10**4, 10**4) is None
    assert combo.reference("circle", 10**4, 10**6) is None
    assert combo.verdict(1.0, None, 10**4) == "-"


def test_targets_and_verdicts():
    ref = combo.ComboRef(10 * MS, 10 * MS)
    assert combo.target(ref, 10**3) == pytest.approx(20.5 * MS)
    assert combo.target(ref, 10**4) == pytest.approx(20.5 * MS)
    assert combo.target(ref, 10**5) == pytest.approx(25 * MS)
    assert combo.limit(ref, 10**4) == pytest.approx(31 * MS)
    assert combo.limit(ref, 10**5) == pytest.approx(40 * MS)
    assert combo.verdict(20 * MS, ref, 10**4) == "meets"
    assert combo.verdict(30 * MS, ref, 10**4) == "near"
    assert combo.verdict(32 * MS, ref, 10**4) == "trails"
    assert combo.verdict(math.inf, ref, 10**4) == "trails"
    assert combo.verdict(None, ref, 10**4) == "-"
    # a range is checked at its top
    wide = combo.ComboRef(1 * MS, 2 * MS)
    assert combo.target(wide, 10**4) == pytest.approx(4.5 * MS)


# ---------------------------------------------------------------- per-job options of the runner


def test_job_options_scale_none_and_timeout():
    inst = {"memory": [0.25, 0.25, 0.5], "runtimes": [1.0, 1.0, 3.0], "max_memory": 0.75, "name": "x"}
    with Runner(scale=10_000, timeout=30, memory_cap=None, min_time=0.0) as runner:
        row = runner.run(Job("sparse", inst, options={"scale": None}))
        assert row["status"] == "ok" and sorted(row["saved"]) in ([0, 2], [1, 2])
        assert row["seconds_min"] <= row["seconds_median"]
        # OR-Tools needs integer weights: scale=None is an error row, not a crash
        if importlib.util.find_spec("ortools") is not None:
            bad = runner.run(Job("ortools_bb", inst, options={"scale": None}))
            assert bad["status"] == "error" and "scale=None" in bad["message"]
        with pytest.raises(ValueError, match="nope"):
            runner.run(Job("sparse", inst, options={"nope": 1}))


def test_job_timeout_option_kills_the_run():
    from remat_knapsack.instances import pisinger

    inst = pisinger("circle", 3000, R=10**6, seed=0).as_dict()
    # min_time=5: the child keeps calling solve for 5 s (or 1000 calls), however fast the kernel
    with Runner(scale=1, timeout=60, memory_cap=None, min_time=5.0) as runner:
        row = runner.run(Job("sparse", inst, options={"timeout": 0.05}))
    assert row["status"] == "timeout" and "0.05" in row["message"]


# ---------------------------------------------------------------- the script, end to end


def _script(*args, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--quiet"], capture_output=True, text=True, check=False,
                          env=env, cwd=tmp_path, timeout=600)  # fmt: skip


@pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this checkout")
def test_bench_sparse_tiny_grid(tmp_path):
    out = tmp_path / "runs.csv"
    r = _script("--families", "strongly", "profit_ceiling", "--n", "60", "--R", "1000", "--seeds", "2",
                "--timeout", "60", "--min-time", "0", "--no-ortools", "--real-n", "50", "--real-k", "2",
                "--real-paper", "40", "--paper-small", "20", "--memory-W", "1e9", "--memory-n", "100",
                "--memory-families", "strongly", "--out", str(out), tmp_path=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "| strongly | 60 | 10^3 | 2 |" in r.stdout and "| profit_ceiling | 60 | 10^3 | 2 |" in r.stdout
    assert "every finished run feasible and all solvers agree" in r.stdout
    assert "auto / combo, geometric mean: no cell with a combo reference" in r.stdout
    assert "captured-transformer12_d128-n50-s0" in r.stdout and "tiled-transformer12_d128-x2" in r.stdout
    assert "paper-n40-s0" in r.stdout and "| paper-n20-s0 | 20 | 10000 |" in r.stdout
    assert "strongly-n100-R10000-s0-W1e+09" in r.stdout
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    fam = [row for row in rows if row["section"] == "families"]
    assert len(fam) == 2 * 2 * 2  # families x seeds x (auto, sparse)
    assert {row["status"] for row in rows} == {"ok"} and {row["feasible"] for row in rows} == {"True"}
    real = [row for row in rows if row["section"] == "real"]
    assert len(real) == 5 * 2
    assert [row["scale"] for row in real[:6]] == ["None"] * 6
    assert [row["target"] for row in real[::2]] == ["captured", "tiled", "paper", "paper_small", "memory"]
    assert float(real[-1]["scale"]) * float(real[-1]["capacity"]) == pytest.approx(1e9)
    for seed in ("0", "1"):  # auto and sparse agree on every instance
        vals = {row["value"] for row in fam if row["seed"] == seed and row["family"] == "strongly"}
        assert len(vals) == 1
    # the tables can be printed again from the CSV alone
    again = _script("--from-csv", str(out), "--timeout", "60", tmp_path=tmp_path)
    assert again.returncode == 0, again.stderr

    def tables(text):
        return [ln for ln in text.splitlines() if ln.startswith("|")]

    assert tables(again.stdout) == tables(r.stdout)
    beside = _script("--from-csv", str(out), "--before", str(out), "--timeout", "60", tmp_path=tmp_path)
    assert beside.returncode == 0, beside.stderr
    assert "| family | n | R | seeds | auto (before) | auto | sparse |" in beside.stdout
    assert "| instance | n | scale | auto (before) | auto | sparse |" in beside.stdout


@pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this checkout")
def test_bench_sparse_reports_timeouts_and_skips_larger_n(tmp_path):
    r = _script("--families", "circle", "--n", "3000", "6000", "--R", "1000000", "--seeds", "2",
                "--timeout", "0.05", "--min-time", "5", "--no-ortools", "--no-real", "--out", "x.csv",
                tmp_path=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "x.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    status = [(row["n"], row["seed"], row["solver"], row["status"]) for row in rows]
    assert ("3000", "0", "sparse", "timeout") in status
    assert all(st == "skipped" for n, seed, _s, st in status if n == "6000")  # not run after a timeout
    assert "> 0.05 s" in r.stdout


@pytest.fixture
def script(monkeypatch):
    """benchmarks/bench_sparse.py as a module (it imports _results beside it)."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_sparse_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this checkout")
def test_combo_geomean_gives_ranges_at_both_ends(script):

    def row(family, n, R, seconds):
        return {"section": "families", "family": family, "n": n, "R": R, "solver": "auto", "seed": 0,
                "status": "ok", "seconds_median": seconds, "timeout": 5.0}

    # strongly 10^3, 10^6: combo 1.4 ms; uncorrelated 10^4, 10^4: a range, 0.07-1.8 ms
    rows = [row("strongly", 10**3, 10**6, 2.8 * MS), row("uncorrelated", 10**4, 10**4, 0.9 * MS)]
    text = script.combo_geomean(rows, 5.0)
    top, bottom = math.sqrt(2.0 * 0.5), math.sqrt(2.0 * 0.9 / 0.07)
    assert text == (f"{top:.2f}x over the 2 cells with a combo reference (1 of them ranges, at their top; "
                    f"{bottom:.2f}x with every range at its bottom)")
    assert script.combo_geomean(rows[:1], 5.0) == "2.00x over the one cell with a combo reference"
    assert script.combo_geomean([row("strongly", 60, 10**3, 1e-3)], 5.0) == "no cell with a combo reference"


@pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this checkout")
def test_ratio_keeps_small_ratios_readable(script):
    spanner = combo.ComboRef(0.6, 0.9)  # a range: milliseconds against combo's 0.6-0.9 s
    assert script.ratio(1.3e-3, spanner, 5.0) == "0.0014-0.0022x"
    assert script.ratio(2.8e-3, combo.ComboRef(1.4e-3, 1.4e-3), 5.0) == "2x"
    assert script.ratio(0.9e-3, combo.ComboRef(0.07e-3, 1.8e-3), 5.0) == "0.5-13x"
    assert script.ratio(script.INF, spanner, 5.0) == "> 5.6x"
    assert script.ratio(None, spanner, 5.0) == "-"


def test_every_family_is_known_to_the_script():
    assert len(ALL_CLASSES) == 13
