"""The ``remat-knapsack`` command line, run as a subprocess (as users run it).

Never asserts on timings. The bench tests use tiny grids; the whole file runs in
well under a minute and a half.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import remat_knapsack
from remat_knapsack import instances

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def cli(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "remat_knapsack.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


SMALL = {"memory": [0.2, 0.3, 0.5], "runtimes": [2.0, 3.0, 4.0], "max_memory": 0.5}
OTHER = {"memory": [0.0001] * 3, "runtimes": [1.0] * 3, "max_memory": 0.0001, "graph": "repro"}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    obj = tmp_path / "one.json"
    obj.write_text(json.dumps(SMALL))
    lst = tmp_path / "list.json"
    lst.write_text(json.dumps([SMALL, OTHER]))
    jsonl = tmp_path / "rec.jsonl"
    jsonl.write_text("\n".join(json.dumps({**d, "n": 3}) for d in (SMALL, OTHER)) + "\n")
    return {"object": obj, "list": lst, "jsonl": jsonl}


# ----------------------------------------------------------------- solve


def test_solve_object_prints_summary(files):
    r = cli("solve", str(files["object"]))
    assert r.returncode == 0, r.stderr
    assert "runtime saved 5" in r.stdout and "[0, 1]" in r.stdout


def test_solve_json_mirrors_input_format(files):
    one = json.loads(cli("solve", str(files["object"]), "--json").stdout)
    assert one["value"] == 5.0 and one["saved"] == [0, 1] and one["recomputed"] == [2]
    assert set(one) >= {"value", "saved", "recomputed", "solver", "seconds"}

    many = json.loads(cli("solve", str(files["list"]), "--json", "--solver", "hirschberg").stdout)
    assert [m["value"] for m in many] == [5.0, 1.0]
    assert many[1]["saved"] == [0] and many[1]["solver"] == "hirschberg"

    lines = cli("solve", str(files["jsonl"]), "--json").stdout.strip().splitlines()
    assert [json.loads(x)["saved"] for x in lines] == [[0, 1], [0]]
    assert json.loads(lines[1])["name"] == "repro"


def test_solve_stdin_and_scale_flags(files):
    text = files["jsonl"].read_text()
    r = cli("solve", "-", "--json", stdin=text)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.strip().splitlines()) == 2
    # scale 10 rounds every weight of OTHER to 0: all three saved for free.
    coarse = json.loads(cli("solve", "-", "--json", "--scale", "10", stdin=json.dumps(OTHER)).stdout)
    assert coarse["saved"] == [0, 1, 2]
    both = cli("solve", "-", "--scale", "10", "--no-quantize", stdin=json.dumps(OTHER))
    assert both.returncode == 2 and "not allowed with" in both.stderr


@pytest.mark.parametrize("solver", [s for s in remat_knapsack.SOLVERS if s != "ilp"])
def test_solve_every_solver(files, solver):
    r = cli("solve", str(files["object"]), "--json", "--solver", solver)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["value"] <= 5.0 and (solver == "greedy" or out["value"] == 5.0)


BAD = {
    "invalid.json": ('{"memory": [1, 2', "invalid JSON"),
    "empty.json": ("   \n", "empty file"),
    "scalar.json": ("42", "expected a JSON object"),
    "missing.json": ('{"memory": [1], "max_memory": 1}', "missing key 'runtimes'"),
    "strings.json": ('{"memory": [1, "x"], "runtimes": [1, 2], "max_memory": 1}', "memory[1]"),
    "lengths.json": ('{"memory": [1, 2], "runtimes": [1], "max_memory": 1}', "'runtimes' has 1"),
    "nan.json": ('{"memory": [1, NaN], "runtimes": [1, 2], "max_memory": 1}', "instance 0"),
    "negative.json": ('{"memory": [1, 2], "runtimes": [1, 2], "max_memory": -1}', "instance 0"),
    "badline.jsonl": (json.dumps(SMALL) + "\n{oops}\n", "line 2"),
    "notobject.json": ("[" + json.dumps(SMALL) + ", 3]", "instance 1: expected an object"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_one_line_exit_2(tmp_path, name):
    text, needle = BAD[name]
    path = tmp_path / name
    path.write_text(text)
    r = cli("solve", str(path))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert name in lines[0]


@pytest.mark.skipif(shutil.which("remat-knapsack") is None, reason="console script not on PATH")
def test_console_script(files):
    r = subprocess.run(["remat-knapsack", "solve", str(files["object"]), "--json"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["saved"] == [0, 1]


def test_missing_file_and_bad_solver(tmp_path):
    r = cli("solve", str(tmp_path / "nope.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr and "Traceback" not in r.stderr
    r = cli("solve", "-", "--solver", "magic", stdin=json.dumps(SMALL))
    assert r.returncode == 2 and "invalid choice" in r.stderr


# ----------------------------------------------------------------- generate, frontier


def test_generate_matches_instances(tmp_path):
    out = tmp_path / "p.json"
    assert cli("generate", "paper", "--n", "7", "--seed", "3", "-o", str(out)).returncode == 0
    assert json.loads(out.read_text()) == instances.paper(7, 3).as_dict()
    r = cli("generate", "strongly", "--n", "4", "--R", "100")
    assert json.loads(r.stdout) == instances.pisinger("strongly", 4, R=100).as_dict()
    bad = cli("generate", "nonsense", "--n", "4")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_frontier(files, tmp_path):
    r = cli("frontier", str(files["object"]))
    assert r.returncode == 0, r.stderr
    assert "<- knee" in r.stdout and "file budget 0.5 -> 5" in r.stdout
    many = tmp_path / "many.json"
    many.write_text(json.dumps(instances.paper(30, 1).as_dict()))
    r = cli("frontier", str(many), "--rows", "5")
    assert r.returncode == 0, r.stderr
    assert 6 <= len(r.stdout.splitlines()) <= 8  # header lines + 5 spread rows (+ the knee)
    r = cli("frontier", str(files["list"]), "--index", "5")
    assert r.returncode == 2 and "out of range" in r.stderr


def test_frontier_plot(files, tmp_path):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib (the [bench] extra)")
    png = tmp_path / "f.png"
    r = cli("frontier", str(files["object"]), "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert "<- knee" in r.stdout and f"wrote {png}" in r.stdout
    assert png.stat().st_size > 1000


@pytest.mark.skipif(HAS_MPL, reason="checks the message given without matplotlib, which is installed")
def test_frontier_plot_without_matplotlib(files, tmp_path):
    png = tmp_path / "f.png"
    r = cli("frontier", str(files["object"]), "--plot", str(png))
    assert r.returncode == 1 and "--plot needs matplotlib" in r.stderr and "Traceback" not in r.stderr
    assert not png.exists()


# ----------------------------------------------------------------- bench


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_bench_tiny_grid(tmp_path, files):
    out = tmp_path / "bench"
    solvers = ["greedy", "hirschberg", "auto"] + (["dp_knapsack_sliding_hirschberg"] if HAS_TORCH else [])
    r = cli(
        "bench", "--sizes", "3", "5", "--repeats", "1", "--classes", "strongly", "--class-sizes", "8",
        "--instances", str(files["jsonl"]), "--solvers", *solvers, "--out", str(out), "--quiet",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = _rows(out)
    assert len(rows) == (2 + 1 + 2) * len(solvers)
    assert {row["status"] for row in rows} == {"ok"}
    assert {row["suite"] for row in rows} == {"paper", "classes", "recorded"}
    for row in rows:
        if row["solver"] != "greedy":
            assert float(row["gap_pct"]) <= 1e-9 or row["solver"] == "dp_knapsack_sliding_hirschberg"
    table = (out / "table.md").read_text()
    assert "| Solver | n=3 | n=5 |" in table and "Peak extra memory" in table and "Optimality gap" in table
    assert "paper-like instances, mean seconds" in r.stdout
    if HAS_MPL:
        assert {"runtime_vs_n.png", "memory_vs_n.png", "gap.png"} <= {p.name for p in out.iterdir()}
    # The tables can be redrawn from results.csv alone.
    redraw = subprocess.run(
        [sys.executable, "-m", "remat_knapsack.bench.run", str(out)], capture_output=True, text=True
    )
    assert redraw.returncode == 0, redraw.stderr
    assert (out / "table.md").read_text() == table


def test_bench_oom_and_timeout_cells(tmp_path):
    out = tmp_path / "oom"
    # Paper-like n=100 (W ~ 3e8): the dense tables cannot fit in 0.5 GiB; dp on n=50 cannot finish in 0.2 s.
    solvers = ["dp", "hirschberg", "greedy"] + (["dp_knapsack"] if HAS_TORCH else [])
    r = cli("bench", "--sizes", "100", "--repeats", "1", "--classes", "none", "--solvers", *solvers,
            "--memory-cap", "0.75", "--out", str(out), "--quiet")  # fmt: skip
    assert r.returncode == 0, r.stderr
    status = {row["solver"]: row["status"] for row in _rows(out)}
    assert status == {s: ("ok" if s == "greedy" else "oom") for s in solvers}
    table = (out / "table.md").read_text()
    assert "| dp | OOM |" in table

    out2 = tmp_path / "timeout"
    r = cli("bench", "--sizes", "50", "--repeats", "1", "--classes", "none", "--solvers", "dp",
            "--timeout", "0.2", "--out", str(out2), "--quiet")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert [row["status"] for row in _rows(out2)] == ["timeout"]


def test_bench_survives_failing_runs_and_spawns(tmp_path):
    # A zero-memory item: PyTorch's greedy divides by it (ZeroDivisionError), ours save it for free.
    rec = tmp_path / "zero.jsonl"
    rec.write_text(json.dumps({"memory": [0.0, 0.5], "runtimes": [1.0, 2.0], "max_memory": 0.5, "graph": "g"}) + "\n")
    solvers = ["greedy", "sparse"] + (["greedy_knapsack"] if HAS_TORCH else [])
    out = tmp_path / "spawned"
    r = cli("bench", "--sizes", "4", "--repeats", "1", "--classes", "none", "--instances", str(rec),
            "--solvers", *solvers, "--spawn", "--out", str(out), "--quiet")  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = {(row["instance"], row["solver"]): row for row in _rows(out)}
    assert rows[("g", "sparse")]["value"] == "3.0"
    if HAS_TORCH:
        assert rows[("g", "greedy_knapsack")]["status"] == "error"
        assert "ZeroDivisionError" in rows[("g", "greedy_knapsack")]["message"]
        assert "| greedy_knapsack | error |" in (out / "table.md").read_text()


def test_bench_rejects_unknown_solver(tmp_path):
    r = cli("bench", "--solvers", "nope", "--out", str(tmp_path), "--quiet")
    assert r.returncode == 2 and "nope" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------- errors and exit codes

BIG = "1" + "0" * 400  # 10**400: beyond float64
BAD_CALLS = {
    "frontier-negative": ("frontier", '{"memory": [0.1], "runtimes": [1], "max_memory": -1}', [], "max_memory"),
    "frontier-nan": ("frontier", '{"memory": [0.1], "runtimes": [1], "max_memory": NaN}', [], "max_memory"),
    "frontier-big-budget": (
        "frontier", '{"memory": [0.1], "runtimes": [1], "max_memory": ' + BIG + '}', [], "max_memory"
    ),
    "solve-big-budget": ("solve", '{"memory": [0.1], "runtimes": [1], "max_memory": ' + BIG + '}', [], "max_memory"),
    "solve-big-memory": (
        "solve", '{"memory": [0.1, ' + BIG + '], "runtimes": [1, 1], "max_memory": 1}', [], "memory[1]"
    ),
    "frontier-big-memory": ("frontier", '{"memory": [' + BIG + '], "runtimes": [1], "max_memory": 1}', [], "memory[0]"),
    "solve-huge-runtimes": (
        "solve", '{"memory": [0.1, 0.1], "runtimes": [1e308, 1e308], "max_memory": 0.1}', [], "runtimes"
    ),
    "frontier-rows-0": ("frontier", json.dumps(SMALL), ["--rows", "0"], "--rows"),
    "solve-scale": ("solve", json.dumps(SMALL), ["--scale", "nan"], "--scale"),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_file_or_flag_one_line_exit_2(tmp_path, name):
    cmd, text, flags, needle = BAD_CALLS[name]
    path = tmp_path / "f.json"
    path.write_text(text)
    r = cli(cmd, str(path), *flags)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


@pytest.mark.parametrize("flags, needle", [(["--seed", "-1"], "--seed"), (["--n", "-3"], "--n")])
def test_generate_names_the_bad_flag(flags, needle):
    r = cli("generate", "paper", *(["--n", "3"] if "--n" not in flags else []), *flags)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_frontier_one_row(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(json.dumps(SMALL))
    r = cli("frontier", str(path), "--rows", "1")
    assert r.returncode == 0, r.stderr
    assert "knee" in r.stdout
