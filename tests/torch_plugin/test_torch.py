"""torch.compile integration.

torch.compile costs 10-40 s per model on these CPUs, so the module compiles one small
transformer once (fixture ``compiled``) and the tests share it: gradients, the
solver's call, the recorded instance and the cache all come from that compile, plus
one cache-hit recompile and one recompile under PyTorch's own "dp".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid as _uuid

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("remat_knapsack.torch")

import torch._functorch.config as fconfig  # noqa: E402
import torch._functorch.partitioners as partitioners  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402
from torch._functorch._activation_checkpointing.knapsack import dp_knapsack as torch_dp  # noqa: E402

from remat_knapsack import frontier, solve  # noqa: E402
from remat_knapsack.torch import (  # noqa: E402
    MIN_TORCH,
    KnapsackSolver,
    UnsupportedTorchError,
    _plugin,
    install,
    read_instances,
    record_instances,
    uninstall,
    use_solver,
)

if getattr(_plugin, "_HOOK", None) is None:
    pytest.skip(f"torch {torch.__version__} has no CustomKnapsackSolver hook", allow_module_level=True)

# AOTAutograd's on-disk cache outlives this process and is keyed by our uuid, so a
# second run of this file would be served from the cache and never call the solver.
# The compiles here therefore use a solver whose key is our uuid *plus* a nonce of
# this test session: the first compile misses, later compiles in the session hit
# only if our own uuid is stable. (A fresh TORCHINDUCTOR_CACHE_DIR would do the
# same but recompile every C++ kernel, tripling the time.)
_NONCE = _uuid.uuid4().hex


class SessionSolver(KnapsackSolver):
    def uuid(self):
        return ("test-session", _NONCE, super().uuid())


def _model():
    torch.manual_seed(0)
    layers = [torch.nn.TransformerEncoderLayer(32, 4, 128, dropout=0.0, batch_first=True) for _ in range(2)]
    model = torch.nn.Sequential(*layers)
    x = torch.randn(4, 16, 32)
    return model, x


def _grads(model, fn, x):
    model.zero_grad(set_to_none=True)
    out = fn(x)
    out.square().mean().backward()
    return out.detach(), {k: p.grad.detach().clone() for k, p in model.named_parameters()}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    model, x = _model()
    eager_out, eager_grads = _grads(model, model, x)
    path = tmp_path_factory.mktemp("instances") / "instances.jsonl"
    torch._dynamo.reset()
    counters.clear()
    with fconfig.patch(activation_memory_budget=0.5), use_solver(SessionSolver()) as solver:  # "auto"
        with record_instances(path, bypass_cache=False) as rec:
            out, grads = _grads(model, torch.compile(model), x)
    return {
        "model": model,
        "x": x,
        "solver": solver,
        "eager": (eager_out, eager_grads),
        "compiled": (out, grads),
        "path": path,
        "recorded": rec.count,
        "counters": dict(counters["aot_autograd"]),
    }


def test_gradients_equal_eager_and_our_solver_was_called(compiled):
    eager_out, eager_grads = compiled["eager"]
    out, grads = compiled["compiled"]
    torch.testing.assert_close(out, eager_out, rtol=1e-4, atol=1e-5)
    assert grads.keys() == eager_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], eager_grads[name], rtol=1e-4, atol=1e-5, msg=name)

    history = compiled["solver"].history
    assert len(history) == 1, "the 0.5 budget must reach the knapsack once for this one joint graph"
    rec = history[0]
    # the runtimes are PyTorch's own estimate_runtime values (FLOPs), not the 1s it
    # would produce under the no_dispatch() the custom-solver hook runs in
    assert rec.runtimes_source == "partitioner"
    assert max(rec.runtimes) > 1
    sol = rec.solution
    assert sol.saved and sol.recomputed, "a 0.5 budget should save some candidates and recompute others"
    weights = [round(m * 10_000) for m in rec.memory]
    assert sum(weights[i] for i in sol.saved) <= round(rec.max_memory * 10_000)
    assert rec.max_memory == 0.5


def test_estimate_runtimes_counts_flops_under_no_dispatch():
    # The fallback for a solver called without the partitioner's runtime list: PyTorch
    # calls custom solvers under no_dispatch(), where estimate_runtime's FLOP counter
    # sees nothing and returns 1; ours lifts that and counts 2*m*k*n for an mm.
    import torch.fx as fx
    from torch._subclasses.fake_tensor import FakeTensorMode

    g = fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    mm = g.call_function(torch.ops.aten.mm.default, (a, b))
    relu = g.call_function(torch.ops.aten.relu.default, (a,))
    with FakeTensorMode() as mode:
        a.meta["val"] = mode.from_tensor(torch.empty(8, 16))
        b.meta["val"] = mode.from_tensor(torch.empty(16, 4))
        relu.meta["val"] = mode.from_tensor(torch.empty(8, 16))
        mm.meta["val"] = mode.from_tensor(torch.empty(8, 4))
    from torch.utils._mode_utils import no_dispatch

    with no_dispatch():
        assert _plugin.estimate_runtimes([mm]) == [2 * 8 * 16 * 4]
        # and a KnapsackSolver called with no partitioner around it uses that fallback
        s = KnapsackSolver()
        assert s([0.25, 0.5], g, 0.5, None, [mm, relu]) == ([0], [1])
    (rec,) = s.history
    assert rec.runtimes_source == "estimate_runtime"
    assert rec.runtimes == [2 * 8 * 16 * 4, 1]
    assert rec.node_names == [mm.name, relu.name] and rec.node_bytes == [8 * 4 * 4, 8 * 16 * 4]


def test_recorded_instance_matches_pytorch_dp(compiled):
    lines = read_instances(compiled["path"])
    assert compiled["recorded"] == len(lines) == 1
    inst = lines[0]
    assert set(inst) == {"memory", "runtimes", "max_memory", "n", "graph"}
    assert inst["n"] == len(inst["memory"]) == len(inst["runtimes"]) > 0
    assert isinstance(inst["graph"], str) and inst["graph"]
    # exactly what our solver was handed
    rec = compiled["solver"].history[0]
    assert inst["memory"] == rec.memory and inst["runtimes"] == rec.runtimes
    assert inst["max_memory"] == rec.max_memory

    # (On this small model every sum stays below 2**24, so the sets are equal; the
    # float32 branch of the helper is exercised by the next test.)
    assert _matches_pytorch_dp(inst["memory"], inst["runtimes"], inst["max_memory"]) == {"same set"}


def test_float32_tie_in_pytorch_is_not_a_tie_in_float64():
    # 16777217 = 2**24 + 1 rounds to 2**24 in float32: PyTorch's table sees a tie and
    # keeps the lower index; float64 sees that item 1 is worth one more.
    memory, runtimes = [0.0001, 0.0001], [16777216.0, 16777217.0]
    assert torch_dp(memory, runtimes, 0.0001)[1] == [0]
    assert solve(memory, runtimes, 0.0001).saved == [1]
    assert _matches_pytorch_dp(memory, runtimes, 0.0001) == {"equal value in float32"}


def _matches_pytorch_dp(memory, runtimes, max_memory):
    """Check our exact solvers against PyTorch's dp_knapsack; say how they matched."""
    t_value, t_saved, t_recomputed = torch_dp(memory, runtimes, max_memory)
    how = set()
    for solver in ("auto", "dp", "hirschberg"):
        ours = solve(memory, runtimes, max_memory, solver=solver)
        assert sorted(ours.saved + ours.recomputed) == list(range(len(memory)))
        if ours.saved == t_saved:
            assert ours.value == pytest.approx(t_value, rel=1e-6)  # PyTorch's value is a float32 sum
            assert ours.recomputed[::-1] == t_recomputed
            how.add("same set")
            continue
        # The sets may differ only where PyTorch's float32 DP sees a tie that our
        # float64 DP does not. FLOP counts are large integers; once sums pass 2**24
        # float32 rounds them, so two sets whose exact sums differ can compare equal
        # in PyTorch's table, and its backtracking then keeps the lower-indexed one.
        # So: both sets have the same value in float32, ours is feasible and at
        # least as good in exact (float64) arithmetic.
        weights = [round(m * 10_000) for m in memory]
        assert sum(weights[i] for i in ours.saved) <= round(max_memory * 10_000)
        theirs64 = float(np.sum(np.asarray(runtimes, dtype=np.float64)[t_saved]))
        assert ours.value >= theirs64
        assert np.float32(ours.value) == np.float32(t_value)
        how.add("equal value in float32")
    return how


def test_second_compile_reuses_cache_and_pytorch_dp_sees_same_instance(compiled, tmp_path):
    model, x = compiled["model"], compiled["x"]
    assert compiled["counters"].get("autograd_cache_miss", 0) == 1

    # a new solver object with the same settings: same uuid, so AOTAutograd's cache hits
    again = SessionSolver()
    assert again.uuid() == compiled["solver"].uuid()
    torch._dynamo.reset()
    counters.clear()
    with fconfig.patch(activation_memory_budget=0.5, activation_memory_budget_solver=again):
        out, _ = _grads(model, torch.compile(model), x)
    assert counters["aot_autograd"]["autograd_cache_hit"] == 1
    assert again.history == [], "a cache hit must not run the partitioner"
    torch.testing.assert_close(out, compiled["compiled"][0])

    # recording works under PyTorch's own string solvers too, and sees the same instance
    torch._dynamo.reset()
    path = tmp_path / "dp.jsonl"
    with fconfig.patch(activation_memory_budget=0.5, activation_memory_budget_solver="dp"):
        with record_instances(path) as rec:  # bypasses the cache by default
            _grads(model, torch.compile(model), x)
    (inst,) = read_instances(path)
    assert rec.count == 1
    ours = compiled["solver"].history[0]
    assert (inst["memory"], inst["runtimes"], inst["max_memory"]) == (ours.memory, ours.runtimes, ours.max_memory)
    torch._dynamo.reset()


def test_uuid_stable_across_processes_and_changes_with_version_and_options(monkeypatch):
    code = "from remat_knapsack.torch import KnapsackSolver as K; print(K('auto', scale=10_000).uuid())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == KnapsackSolver().uuid()  # defaults filled in: same key
    base = KnapsackSolver().uuid()
    assert KnapsackSolver("hirschberg").uuid() != base
    assert KnapsackSolver(scale=1000).uuid() != base
    assert KnapsackSolver(memory_limit=1 << 30).uuid() != base
    monkeypatch.setattr(_plugin, "__version__", "999.0")
    assert KnapsackSolver().uuid() != base


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown solver"):
        KnapsackSolver("simplex")
    with pytest.raises(TypeError, match="unknown option"):
        KnapsackSolver(scal=10)


def test_use_solver_restores_config_even_when_body_raises():
    before = fconfig.activation_memory_budget_solver
    with pytest.raises(RuntimeError, match="boom"):
        with use_solver("hirschberg", scale=1000) as s:
            assert fconfig.activation_memory_budget_solver is s
            assert isinstance(s, KnapsackSolver) and s.solver == "hirschberg"
            with use_solver() as inner:
                assert fconfig.activation_memory_budget_solver is inner
                raise RuntimeError("boom")
    assert fconfig.activation_memory_budget_solver is before

    with use_solver():
        pass
    assert fconfig.activation_memory_budget_solver is before


def test_install_sets_global_solver_and_uninstall_undoes_everything():
    before = fconfig.activation_memory_budget_solver
    original = partitioners._optimize_runtime_with_given_memory
    assert not getattr(original, "_remat_knapsack", False) and original.__module__ == partitioners.__name__
    try:
        s = install("dp")
        assert fconfig.activation_memory_budget_solver is s and s.solver == "dp"
        assert partitioners._optimize_runtime_with_given_memory is not original
        t = install("sparse", budget="knee")  # a second install replaces the solver, not the record
        assert fconfig.activation_memory_budget_solver is t
    finally:
        uninstall()
    assert fconfig.activation_memory_budget_solver is before
    assert partitioners._optimize_runtime_with_given_memory is original
    uninstall()  # nothing installed: a no-op
    assert fconfig.activation_memory_budget_solver is before


def test_use_solver_restores_patch_and_config_exactly_as_found(tmp_path):
    original = partitioners._optimize_runtime_with_given_memory
    with use_solver() as s:
        assert partitioners._optimize_runtime_with_given_memory is not original
        with record_instances(tmp_path / "r.jsonl"):
            pass
        assert partitioners._optimize_runtime_with_given_memory is not original  # still held by use_solver
        assert fconfig.activation_memory_budget_solver is s
    assert partitioners._optimize_runtime_with_given_memory is original
    with record_instances(tmp_path / "r.jsonl"):
        assert partitioners._optimize_runtime_with_given_memory is not original
    assert partitioners._optimize_runtime_with_given_memory is original
    # installed before the block: the block leaves both the solver and the patch in place
    try:
        kept = install("hirschberg")
        with use_solver("dp"):
            pass
        assert fconfig.activation_memory_budget_solver is kept
        assert partitioners._optimize_runtime_with_given_memory is not original
    finally:
        uninstall()
    assert partitioners._optimize_runtime_with_given_memory is original
    with pytest.raises(TypeError, match="instance"):
        with use_solver(KnapsackSolver(), scale=10):
            pass


def test_knee_budget_solves_at_the_frontier_knee():
    memory = [0.4, 0.3, 0.2, 0.1, 0.05, 0.05]
    runtimes = [10.0, 9.0, 8.0, 1.0, 0.5, 0.4]
    s = KnapsackSolver(budget="knee")
    s._runtimes = lambda memory, graph, nodes: (runtimes, "test", "g")  # type: ignore[method-assign]
    saved, recomputed = s(memory, None, 0.9, None, [])
    (rec,) = s.history
    knee = frontier(memory, runtimes, 0.9).knee()
    assert rec.max_memory == knee < 0.9 and rec.requested_max_memory == 0.9
    assert rec.solution.saved == solve(memory, runtimes, knee).saved == saved
    assert sorted(saved + recomputed) == list(range(len(memory)))
    assert KnapsackSolver(budget="knee").uuid() != KnapsackSolver().uuid()
    assert "knee" in repr(KnapsackSolver(budget="knee"))
    with pytest.raises(ValueError, match="unknown budget"):
        KnapsackSolver(budget="elbow")


def test_knee_budget_in_a_real_compile():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh())
    x = torch.randn(128, 64)
    torch._dynamo.reset()
    with fconfig.patch(activation_memory_budget=0.99, enable_autograd_cache=False):
        with use_solver(budget="knee") as s:
            torch.compile(model, backend="aot_eager")(x).sum().backward()
    torch._dynamo.reset()
    assert s.history, "budget 0.99 < 1 must reach the knapsack"
    for rec in s.history:
        assert rec.requested_max_memory == 0.99
        assert rec.max_memory == frontier(rec.memory, rec.runtimes, 0.99).knee()
        assert rec.runtimes_source == "partitioner"


def test_solver_call_returns_pytorch_convention():
    # called directly (no partitioner around it), on an instance whose ties matter
    s = KnapsackSolver()
    memory, runtimes = [0.0001] * 3, [1.0] * 3
    s._runtimes = lambda memory, graph, nodes: (runtimes, "test", "g")  # type: ignore[method-assign]
    saved, recomputed = s(memory, None, 0.0001, None, [])
    assert (saved, recomputed) == ([0], [2, 1])  # dp_knapsack: saved ascending, recomputed descending
    assert torch_dp(memory, runtimes, 0.0001)[1:] == (saved, recomputed)


def test_record_instances_restores_cache_flag_and_appends(tmp_path):
    before = fconfig.enable_autograd_cache
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"memory": [], "runtimes": [], "max_memory": 0.0, "n": 0, "graph": "old"}) + "\n")
    with pytest.raises(KeyError):
        with record_instances(path):
            assert fconfig.enable_autograd_cache is False
            raise KeyError
    assert fconfig.enable_autograd_cache == before
    assert [i["graph"] for i in read_instances(path)] == ["old"]


_HIDE = """
import importlib, sys
for module, name in {places!r}:
    try:
        delattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        pass
from remat_knapsack.errors import UnsupportedTorchError
try:
    import remat_knapsack.torch
except UnsupportedTorchError as e:
    print("raised:", e)
else:
    print("imported")
"""


@pytest.mark.parametrize("entry", [0, 1, 4, 5, 8, -1])
def test_a_torch_without_a_name_we_need_fails_at_import(entry):
    # A torch that lacks one of the private names (here deleted before the import)
    # makes the import fail, naming it, instead of a compile failing later.
    from remat_knapsack.torch import _symbols

    places = _symbols.REQUIRED[entry]
    code = _HIDE.format(places=list(places))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    module, name = places[0]
    assert out.startswith("raised:"), out
    assert f"{module}.{name}" in out and torch.__version__ in out and f">= {MIN_TORCH}" in out


def test_every_name_we_need_is_there():
    from remat_knapsack.torch import _symbols

    found = _symbols.check()
    assert len(found) == len(_symbols.REQUIRED) and all(v is not None for v in found.values())
    assert found["torch._inductor.custom_graph_pass.CustomKnapsackSolver"] is _plugin._HOOK
    assert issubclass(KnapsackSolver, _plugin._HOOK)
    assert issubclass(UnsupportedTorchError, RuntimeError)


def test_import_remat_knapsack_does_not_import_torch():
    code = "import sys, remat_knapsack, remat_knapsack.compat; print('torch' in sys.modules)"
    env = {**os.environ}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"


def test_without_torch_the_error_says_how_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "try:\n    import remat_knapsack.torch\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "remat-knapsack[torch]" in out.stdout


def test_read_instances_goes_through_io(tmp_path):
    from remat_knapsack._common._io import InstanceFileError

    path = tmp_path / "r.jsonl"
    with record_instances(path):
        pass
    assert read_instances(path) == []  # created, nothing recorded yet
    rec = {"memory": [0.5], "runtimes": [1.0], "max_memory": 0.5, "n": 1, "graph": "g"}
    path.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "graph": "h"}) + "\n")
    assert [r["graph"] for r in read_instances(str(path))] == ["g", "h"]
    path.write_text(json.dumps(rec) + "\n" + json.dumps({"memory": [0.5]}) + "\n")
    with pytest.raises(InstanceFileError, match="instance 1: missing key 'runtimes'"):
        read_instances(path)
