"""plan_checkpoints: selective activation checkpointing in eager mode, checked against eager training.

Every plan (the chosen ones, and random choices of saved ops) must train as
eager does: loss, gradients, buffers. Its predicted peak must be within 10%
(or 1 MiB) of one measured step's, and nothing may fit below the smallest
reachable peak.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("remat_knapsack.torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from remat_knapsack.errors import PeakLimitError  # noqa: E402
from remat_knapsack.torch import CheckpointPlan, plan_checkpoints  # noqa: E402
from remat_knapsack.torch.eager import default_units  # noqa: E402
from remat_knapsack.torch.eager._plan import _resolve_units, build_plan  # noqa: E402
from remat_knapsack.torch.eager._record import record_step  # noqa: E402
from remat_knapsack.torch.eager._split import Entry, Menu, lower_hull  # noqa: E402
from remat_knapsack.torch.eager._timeline import Timeline  # noqa: E402
from remat_knapsack.torch.step import profile_peak_bytes  # noqa: E402
from tests.training_models import assert_same_step, make_conv_groupnorm, make_decoder, train_step  # noqa: E402

MiB = 1 << 20


class Block(nn.Module):
    """Linear, batch norm (running statistics), random noise, two dropouts, an in-place op and a residual."""

    def __init__(self, d: int, in_place_after_norm: bool = False) -> None:
        super().__init__()
        self.up, self.norm, self.down = nn.Linear(d, 4 * d), nn.BatchNorm1d(4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.3)
        self.in_place_after_norm = in_place_after_norm

    def forward(self, x):
        h = self.norm(self.up(x))
        h = h.relu_() if self.in_place_after_norm else F.relu(h)
        h = self.drop(h * (1 + 0.1 * torch.rand_like(x).repeat(1, 4)))  # a random op with an output
        g = F.gelu(h)
        g.mul_(0.5)
        return x + self.drop(self.down(g))


class Stack(nn.Module):
    def __init__(self, d: int = 64, blocks: int = 3, in_place_after_norm: bool = False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, in_place_after_norm) for _ in range(blocks)])
        self.head = nn.Linear(d, 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make_stack(in_place_after_norm: bool = False):
    torch.manual_seed(0)
    return Stack(in_place_after_norm=in_place_after_norm), (torch.randn(256, 64),), lambda out: (out**2).mean()


MODELS = {"stack": make_stack, "decoder": make_decoder, "conv_groupnorm": make_conv_groupnorm}


class Steps:
    """Training steps from one starting state: buffers (batch norm's statistics) reset before each."""

    def __init__(self, model, args, loss) -> None:
        self.model, self.args, self.loss = model, args, loss
        self.buffers = {name: b.clone() for name, b in model.named_buffers()}

    def __call__(self):
        with torch.no_grad():
            for name, b in self.model.named_buffers():
                b.copy_(self.buffers[name])
        return train_step(self.model, self.model, self.args, self.loss)


def measured_peak(model, args, loss) -> int:
    def step():
        loss(model(*args)).backward()

    model.zero_grad(set_to_none=True)
    step()  # the first step's one-time allocations are not the step's
    model.zero_grad(set_to_none=True)
    return profile_peak_bytes(step)


def timeline_of(model, args, loss, units=None) -> tuple[list, Timeline]:
    resolved = _resolve_units(model, units)
    return resolved, Timeline(record_step(model, args, loss, resolved))


def random_choice(timeline: Timeline, rng: np.random.Generator) -> list:
    choice = []
    for items in timeline.units:
        if items.replay_at < 0 or rng.random() < 0.2:
            choice.append(None)
            continue
        saved = items.forced | (items.eligible & (rng.random(items.eligible.size) < 0.5))
        choice.append(saved)
    return choice


# ---------------------------------------------------------------------- gradients


@pytest.mark.parametrize("name", sorted(MODELS))
def test_random_choices_train_as_eager(name):
    """Any saved set the planner may choose trains as eager: loss, gradients, buffers (dropout and batch norm too)."""
    model, args, loss = MODELS[name]()
    step = Steps(model, args, loss)
    expected = step()
    resolved, timeline = timeline_of(model, args, loss)
    assert any(items.replay_at >= 0 for items in timeline.units)
    rng = np.random.default_rng(0)
    for trial in range(4):
        choice = random_choice(timeline, rng)
        plan = build_plan(model, resolved, timeline, choice, 0, 0, 0, 0)
        with plan:
            got = step()
        assert_same_step(expected, got, where=f"{name} choice {trial}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_planned_steps_train_as_eager(name):
    model, args, loss = MODELS[name]()
    step = Steps(model, args, loss)
    expected = step()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    full, none = first.full_checkpoint_peak_bytes, first.unplanned_peak_bytes
    for limit in (full, (full + none) // 2):
        plan = plan_checkpoints(model, args, limit, loss=loss)
        # a unit of one op frees nothing when checkpointed and holds the generator's state: where
        # every unit is one (conv_groupnorm's), checkpointing cannot lower the peak and none is chosen
        assert any(u.checkpointed for u in plan.units) == (full < none)
        with plan:
            got = step()
        assert_same_step(expected, got, where=f"{name} at {limit}")


def test_a_unit_whose_cached_output_is_written_is_never_checkpointed():
    """Batch norm then an in-place ReLU: the norm must be cached (its statistics updated once), but the
    cache cannot hold a tensor written later; such a unit stays as it is, and training matches eager."""
    model, args, loss = make_stack(in_place_after_norm=True)
    _, timeline = timeline_of(model, args, loss)
    assert all(items.replay_at < 0 for items in timeline.units)
    step = Steps(model, args, loss)
    expected = step()
    with plan_checkpoints(model, args, 1 << 40, loss=loss):
        assert_same_step(expected, step())


def test_planning_leaves_the_model_as_found():
    model, args, loss = make_stack()
    model(*args).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    buffers = [b.clone() for b in model.buffers()]
    state = torch.random.get_rng_state()
    plan_checkpoints(model, args, 1 << 30, loss=loss)
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads))
    assert all(torch.equal(b, c) for b, c in zip(model.buffers(), buffers))
    assert torch.equal(torch.random.get_rng_state(), state)


# ---------------------------------------------------------------------- the peak model


def within(predicted: int, measured: int) -> bool:
    return abs(predicted - measured) <= max(0.10 * measured, MiB)


@pytest.mark.parametrize("name", ["stack", "decoder"])
def test_predicted_peak_of_random_choices(name):
    model, args, loss = MODELS[name]()
    resolved, timeline = timeline_of(model, args, loss)
    rng = np.random.default_rng(1)
    for choice in [timeline.none(), timeline.full()] + [random_choice(timeline, rng) for _ in range(3)]:
        plan = build_plan(model, resolved, timeline, choice, timeline.peak(choice), 0, 0, 0)
        with plan:
            measured = measured_peak(model, args, loss)
        assert within(plan.predicted_peak_bytes, measured), (plan.predicted_peak_bytes, measured)


def test_a_larger_decoder_fits_its_limit():
    """Predicted within 10% of measured, measured at most 1.05 L, at two limits."""
    torch.manual_seed(0)
    from tests.training_models import Decoder

    model = Decoder(vocab=512, d=128, heads=4, layers=3, t=128)
    ids = torch.randint(0, 512, (4, 128))
    loss = lambda logits: logits.logsumexp(-1).mean()  # noqa: E731
    first = plan_checkpoints(model, (ids,), 1 << 40, loss=loss)
    full, none = first.full_checkpoint_peak_bytes, first.unplanned_peak_bytes
    assert full < none
    for limit in ((full + none) // 2, int(1.05 * full)):
        plan = plan_checkpoints(model, (ids,), limit, loss=loss)
        assert plan.predicted_peak_bytes <= limit
        with plan:
            measured = measured_peak(model, (ids,), loss)
        assert measured <= 1.05 * limit
        assert within(plan.predicted_peak_bytes, measured)


def test_limit_nothing_reaches():
    model, args, loss = make_stack()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    with pytest.raises(PeakLimitError) as info:
        plan_checkpoints(model, args, first.full_checkpoint_peak_bytes // 4, loss=loss)
    assert info.value.limit == first.full_checkpoint_peak_bytes // 4
    assert info.value.smallest <= first.full_checkpoint_peak_bytes
    plan = plan_checkpoints(model, args, info.value.smallest, loss=loss)  # the smallest peak named is reachable
    assert plan.predicted_peak_bytes <= info.value.smallest


class Tanh(nn.Module):
    """A block whose checkpoint adds more than it frees when tiny (8 x 8): the CPU generator's state that
    checkpoint copies (5,056 B), twice while it replays, against 2 KiB of activations."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def test_a_limit_that_only_no_checkpointing_meets():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), Tanh(8), Tanh(8), nn.Linear(8, 1))
    x = torch.randn(8, 8)
    first = plan_checkpoints(model, (x,), 1 << 40, units=["1", "2"])
    assert first.full_checkpoint_peak_bytes > first.unplanned_peak_bytes
    timeline, units = first._timeline, _resolve_units(model, ["1", "2"])
    full = build_plan(model, units, timeline, timeline.full(), first.full_checkpoint_peak_bytes, 1 << 40, 0, 0)
    assert full.measure((x,)) == first.full_checkpoint_peak_bytes  # so it is, measured
    plan = plan_checkpoints(model, (x,), first.unplanned_peak_bytes, units=["1", "2"])
    assert plan.predicted_peak_bytes <= first.unplanned_peak_bytes


def test_no_checkpointing_when_everything_fits():
    model, args, loss = make_stack()
    plan = plan_checkpoints(model, args, 1 << 40, loss=loss)
    assert not any(u.checkpointed for u in plan.units)
    assert plan.predicted_peak_bytes == plan.unplanned_peak_bytes
    assert plan.recompute_seconds == 0


def test_a_tighter_limit_never_saves_more():
    model, args, loss = make_stack()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    limits = np.linspace(first.full_checkpoint_peak_bytes, first.unplanned_peak_bytes, 5).astype(int)
    plans = [plan_checkpoints(model, args, int(limit), loss=loss) for limit in limits]
    for plan, limit in zip(plans, limits):
        assert plan.predicted_peak_bytes <= limit


# ---------------------------------------------------------------------- the knapsack per unit


def test_menu_entries_are_exact_optima():
    """Every menu entry is the least replay time for its bytes, by brute force over the unit's ops.

    The first entry is full recomputation (only the forced ops saved, run as plain checkpointing); the
    frontier's entries also cache the ops that cost no bytes."""
    model, args, loss = make_stack()
    _, timeline = timeline_of(model, args, loss)
    items = timeline.units[0]
    free = items.forced | (items.eligible & (items.weights == 0))
    candidates = np.flatnonzero(items.eligible & ~free & (items.seconds > 0))
    assert 1 <= candidates.size <= 14
    menu = Menu(items)
    assert len(menu.entries) > 2 and menu.entries[-1].saved is None and menu.entries[-1].seconds == 0
    first = menu.entries[0]
    assert np.array_equal(first.saved, items.forced) and np.isclose(first.seconds, items.seconds[~items.forced].sum())
    for position, entry in enumerate(menu.entries[:-1]):
        if position == 0:
            continue
        menu.saved(position)
        assert int(items.weights[entry.saved].sum()) == entry.nbytes
        assert np.isclose(items.seconds[~entry.saved].sum(), entry.seconds)
        best = min(items.seconds[~free].sum() - items.seconds[list(subset)].sum()
                   for r in range(candidates.size + 1) for subset in itertools.combinations(candidates, r)
                   if items.weights[free].sum() + items.weights[list(subset)].sum() <= entry.nbytes)  # fmt: skip
        assert np.isclose(entry.seconds, best)


def test_lower_hull():
    points = [Entry(0, 10.0, None), Entry(1, 9.5, None), Entry(2, 5.0, None), Entry(3, 5.0, None),
              Entry(4, 0.0, None)]  # fmt: skip
    assert [(e.nbytes, e.seconds) for e in lower_hull(points)] == [(0, 10.0), (2, 5.0), (4, 0.0)]


def test_random_and_state_writing_ops_are_never_replayed_from_the_cache():
    model, args, loss = make_stack()
    _, timeline = timeline_of(model, args, loss)
    recording = timeline.recording
    for items in timeline.units:
        names = [recording.ops[i].name for i in items.ops]
        for name, eligible, forced, i in zip(names, items.eligible, items.forced, items.ops):
            if recording.ops[i].random:
                assert not eligible and not forced, name
            if "batch_norm" in name and recording.ops[i].writes_outside:
                assert forced, name


# ---------------------------------------------------------------------- apply, remove, arguments


def test_apply_and_remove_restore_the_model():
    model, args, loss = make_stack()
    keys = list(model.state_dict())
    plan = plan_checkpoints(model, args, plan_checkpoints(model, args, 1 << 40, loss=loss).full_checkpoint_peak_bytes,
                            loss=loss)  # fmt: skip
    index = next(i for i, u in enumerate(plan.units) if u.checkpointed)
    block = model.blocks[index]
    assert isinstance(plan, CheckpointPlan)
    plan.apply()
    assert plan.applied and "forward" in vars(block)
    assert list(model.state_dict()) == keys
    with pytest.raises(RuntimeError, match="already applied"):
        plan.apply()
    plan.remove()
    assert not plan.applied and "forward" not in vars(block)
    plan.remove()  # a no-op
    assert "units" in plan.to_json() and "predicted peak" in plan.summary()


def test_default_units():
    assert default_units(nn.Sequential(nn.Linear(2, 2), nn.ReLU())) == ["0", "1"]
    model, _, _ = make_stack()
    assert default_units(model) == ["blocks.0", "blocks.1", "blocks.2"]
    model, _, _ = make_conv_groupnorm()
    assert default_units(model) == [f"body.{i}" for i in range(6)]
    with pytest.raises(ValueError, match="units="):
        default_units(nn.Linear(2, 2))


@pytest.mark.parametrize("limit", [0, -1, float("nan"), float("inf"), "1GiB", True, None, -(1 << 70)])
def test_bad_limit(limit):
    model, args, loss = make_stack()
    with pytest.raises(ValueError, match="max_peak_bytes"):
        plan_checkpoints(model, args, limit, loss=loss)


@pytest.mark.parametrize(("units", "match"), [
    (["blocks.9"], r"units\[0\] = 'blocks.9' is not a submodule"),
    (["blocks", "blocks.0"], "overlap"),
    ("blocks.0", "non-empty list"),
    ([], "non-empty list"),
])  # fmt: skip
def test_bad_units(units, match):
    model, args, loss = make_stack()
    with pytest.raises(ValueError, match=match):
        plan_checkpoints(model, args, 1 << 30, loss=loss, units=units)


def test_a_unit_run_twice_is_refused():
    block = Block(16)
    model = nn.Sequential(block, block)
    with pytest.raises(ValueError, match="ran its forward 2 times"):
        plan_checkpoints(model, (torch.randn(8, 16),), 1 << 30)


def test_a_loss_that_is_not_a_scalar():
    model, args, _ = make_stack()
    with pytest.raises(ValueError, match="scalar"):
        plan_checkpoints(model, args, 1 << 30, loss=lambda out: out)


def test_a_model_that_does_not_run():
    model, _, loss = make_stack()
    with pytest.raises(ValueError, match=r"the model does not run on args: .* raised RuntimeError"):
        plan_checkpoints(model, (torch.randn(8, 3),), 1 << 30, loss=loss)
    with pytest.raises(ValueError, match="loss must be a callable"):
        plan_checkpoints(model, (torch.randn(8, 64),), 1 << 30, loss="mse")


def test_measure_leaves_the_model_as_found():
    model, args, loss = make_stack()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    plan = plan_checkpoints(model, args, first.full_checkpoint_peak_bytes, loss=loss)
    buffers = [b.clone() for b in model.buffers()]
    measured = plan.measure(args, loss=loss)
    assert within(plan.predicted_peak_bytes, measured)
    assert not plan.applied and all(p.grad is None for p in model.parameters())
    assert all(torch.equal(b, c) for b, c in zip(model.buffers(), buffers))


# ---------------------------------------------------------------------- the command line

STACK_MODULE = '''
import torch
from tests.torch_plugin.test_eager import make_stack


def make():
    return make_stack()
'''


def test_cli_fit_eager(tmp_path, capsys, monkeypatch):
    import json

    from remat_knapsack.cli import main

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    target = tmp_path / "stack_model.py"
    target.write_text(STACK_MODULE)
    model, args, loss = make_stack()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    limit = (first.full_checkpoint_peak_bytes + first.unplanned_peak_bytes) // 2
    out = tmp_path / "plan.json"
    assert main(["fit", f"{target}:make", "--max-peak", str(limit), "--eager", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "measured peak" in printed and "blocks.0" in printed
    result = json.loads(out.read_text())
    assert result["predicted_peak_bytes"] <= limit and result["measured_peak_bytes"] <= 1.05 * limit
    assert [u["name"] for u in result["units"]] == ["blocks.0", "blocks.1", "blocks.2"]
    too_small = ["fit", f"{target}:make", "--max-peak", str(first.full_checkpoint_peak_bytes // 4), "--eager",
                 "--out", str(out)]  # fmt: skip
    assert main(too_small) == 3
    assert main(["fit", f"{target}:make", "--max-peak", "1MiB", "--eager", "--units", "nope"]) == 2
    assert main(["fit", f"{target}:make", "--max-peak", "1MiB", "--eager", "--regions", "blocks.0"]) == 2
    assert main(["fit", f"{target}:make", "--max-peak", "1MiB", "--units", "blocks.0"]) == 2


# ---------------------------------------------------------------------- what a unit may do


class WritesItsInput(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x.mul_(2.0)  # checkpoint holds x for the replay: a unit that writes it is never checkpointed
        return self.b(torch.tanh(self.a(x)))


class KeywordBlock(nn.Module):
    """Called with its tensor as a keyword (as Hugging Face layers are), dropout inside."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.5)

    def forward(self, hidden_states=None):
        return hidden_states + self.b(self.drop(F.gelu(self.a(hidden_states))))


class KeywordModel(nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.layers = nn.ModuleList([KeywordBlock(d) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(hidden_states=x)
        return x


class OwnGenerator(nn.Module):
    """Noise from a generator of its own: checkpoint does not restore it, so the unit is never checkpointed."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.a = nn.Linear(d, 4 * d)
        self.generator = torch.Generator().manual_seed(0)

    def forward(self, x):
        h = self.a(x)
        return h * torch.rand(h.shape, generator=self.generator)


def test_a_unit_that_writes_its_input_is_never_checkpointed():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), WritesItsInput(32), WritesItsInput(32), nn.Linear(32, 1))
    x = torch.randn(64, 32)
    _, timeline = timeline_of(model, (x,), lambda out: out.sum(), ["1", "2"])
    assert all(items.replay_at < 0 for items in timeline.units)


def test_a_unit_with_a_generator_of_its_own_is_never_checkpointed():
    torch.manual_seed(0)
    model = nn.Sequential(OwnGenerator(16), OwnGenerator(64))
    _, timeline = timeline_of(model, (torch.randn(8, 16),), lambda out: out.sum())
    assert all(items.replay_at < 0 for items in timeline.units)


def test_keyword_tensors_replay_the_same_dropout():
    torch.manual_seed(0)
    model, x = KeywordModel(), torch.randn(64, 32)
    loss = lambda out: (out**2).mean()  # noqa: E731
    step = Steps(model, (x,), loss)
    expected = step()
    resolved, timeline = timeline_of(model, (x,), loss)
    plan = build_plan(model, resolved, timeline, timeline.full(), 0, 0, 0, 0)
    assert all(u.checkpointed for u in plan.units)
    with plan:
        assert_same_step(expected, step())


def test_input_gradients_are_left_as_found():
    model, _, loss = make_stack()
    x = torch.randn(256, 64, requires_grad=True)
    plan = plan_checkpoints(model, (x,), 1 << 40, loss=loss)
    assert x.grad is None
    plan.measure((x,), loss=loss)
    assert x.grad is None


def test_an_applied_model_copies_and_pickles():
    import copy
    import io

    model, args, loss = make_stack()
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    plan = plan_checkpoints(model, args, first.full_checkpoint_peak_bytes, loss=loss).apply()
    twin = copy.deepcopy(model)
    with torch.no_grad():
        for p in twin.parameters():
            p.mul_(0.5)
    twin.eval(), model.eval()
    assert not torch.allclose(twin(*args), model(*args))  # the copy runs its own weights
    torch.save(model, io.BytesIO())
    plan.remove()


def test_apply_wraps_a_forward_set_on_the_instance():
    model, args, loss = make_stack()
    block = model.blocks[0]
    own = block.forward  # a bound method, set on the instance as a user's hook would
    block.forward = own
    first = plan_checkpoints(model, args, 1 << 40, loss=loss)
    plan = plan_checkpoints(model, args, first.full_checkpoint_peak_bytes, loss=loss)
    with plan:
        assert block.forward is not own
    assert block.forward is own


def test_a_huge_limit():
    model, args, loss = make_stack()
    assert not any(u.checkpointed for u in plan_checkpoints(model, args, 1 << 70, loss=loss).units)
