"""The peak of a checkpointed step, replayed from the recorded one.

A :class:`Timeline` turns a :class:`~._record.Recording` (a step without
checkpointing) into per-unit knapsack items and answers, for any choice of
units and saved ops, the peak of the step that choice would run. It follows
what ``torch.utils.checkpoint`` (non-reentrant, a selective policy) does:

* in a checkpointed unit's forward, autograd saves nothing; a storage the
  plain step kept for the backward is freed where the forward lets go of
  it (after its last use, or where the recording's checkpointed forward
  freed it: a local variable is held until its function returns,
  :attr:`~._record.Storage.released`), unless the op that made it is
  *saved* (its outputs cached until the backward reads them) or it is one
  of the unit's outputs;
* at the unit's backward (the autograd node whose op is the first to read
  one of those storages: the node unpacks what it saved, so the replay runs
  before the node's first op) the unit's forward is replayed up to the last
  storage the backward needs; the dropped storages are back from then on, live until
  the plain step freed them, and the replay's own temporaries add a spike;
* a saved op whose outputs the plain step freed in the forward keeps them
  until the replay, which takes them at the op and frees them after their
  last use there; a saved op that makes one of the unit's outputs keeps it
  until the replay too (the selective-checkpoint cache holds them until the
  replay takes them);
* the replay stops once the last stored tensor is back, so a saved op past
  that point never runs again: the cache holds its outputs until the unit's
  backward ends and the checkpoint is freed;
* under ``torch.autocast``, a parameter's cast is held by autocast's cache
  until the outermost autocast region exits (:attr:`~._record.Storage.held_until`):
  a checkpointed unit cannot free it earlier.

Each op's knapsack item: weight, the bytes of the storages it creates (the
unit's outputs excepted); value, its modelled seconds, the time a replay
spends on it. An op that writes in place to what the unit did not create
(batch norm's running statistics and step counter, an input) is always
saved, so a replay never applies its update twice; a unit where that is
unsafe (something before it in the unit read what it writes, so the replay
would read the updated value) is never checkpointed. Ops that create nothing (views, in-place ops), random ops
(their replay must draw the same numbers, so every random op of a unit is
replayed, in order, from the restored generator state) and ops whose output
is later written in place (the cache refuses mutated entries) are never
saved.

Each checkpointed unit also holds a copy of the CPU random number generator's
state (``torch.utils.checkpoint`` keeps it to replay random ops alike), from
its forward to the end of its backward, and takes another while its replay
runs; a step planned for the CPU counts both (on CUDA they are host memory).

Each op's workspace (what it allocates and frees within itself, measured
for the recording) adds to the step at that op, and to a replay that runs it.
A choice's peak is one pass over the step, O(S + T) (S storages, T ops),
plus, per checkpointed unit, its ops times its temporaries for the replay
(computed once per unit and choice, :meth:`Timeline.change`).

May import: torch, numpy, and ``._record``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ._record import OUTSIDE, Recording

__all__ = ["Change", "Timeline", "UnitItems"]


@dataclass
class UnitItems:
    """One unit's candidates and what checkpointing it changes."""

    ops: np.ndarray  # op indices of the unit's forward, in order
    seconds: np.ndarray  # per op: modelled seconds (the replay's cost when it is not saved)
    weights: np.ndarray  # per op: bytes it creates, the unit's outputs excepted
    eligible: np.ndarray  # per op: may be saved
    forced: np.ndarray  # per op: must be saved (writes outside the unit)
    caches_in_place_write: bool  # a forced op writes in place and creates nothing (batch norm's step counter)
    replay_at: int  # op index of the unit's backward, where the replay runs (-1: checkpointing frees nothing)
    # storages kept for the backward and made by this unit (not its outputs): freed early unless their op is saved
    kept_op: np.ndarray  # position (into ops) of the op that made each
    kept_bytes: np.ndarray
    kept_drop: np.ndarray  # op index after its last forward use
    kept_birth: np.ndarray
    kept_death: np.ndarray
    # storages the plain step freed inside the forward (temporaries)
    temp_op: np.ndarray
    temp_bytes: np.ndarray
    temp_birth: np.ndarray
    temp_death: np.ndarray
    # storages the unit's forward was given (made earlier in the step): checkpoint holds them until the replay
    input_bytes: np.ndarray
    input_death: np.ndarray
    # the unit's outputs that its own ops made (a saved op's are held by the checkpoint's cache)
    out_op: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    out_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    out_death: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def total_seconds(self) -> float:
        return float(self.seconds.sum())


@dataclass(frozen=True)
class Change:
    """One checkpointed unit's effect on the step: byte deltas at op indices, and its replay's spike."""

    where: np.ndarray
    nbytes: np.ndarray
    replay_at: int
    spike: int


class Timeline:
    """Per-unit items of a recording, and the peak of any checkpointing choice."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        ops, storages = recording.ops, recording.storages
        self.length = len(ops)
        # the CPU generator's state, as checkpoint copies it (host memory: not a CUDA step's)
        self.rng_state_bytes = torch.get_rng_state().nbytes if recording.device == "cpu" else 0
        n = len(storages)
        self.nbytes = np.array([s.nbytes for s in storages], dtype=np.int64)
        self.birth = np.array([s.birth for s in storages], dtype=np.int64)
        self.death = np.array([s.death for s in storages], dtype=np.int64)
        # a parameter's cast that autocast caches lives until the cache is cleared, checkpointed or not
        self.held_until = np.array([s.held_until for s in storages], dtype=np.int64)
        self.workspace = np.array([op.workspace for op in ops] + [0], dtype=np.int64)
        self.base = np.zeros(self.length + 2, dtype=np.int64)
        np.add.at(self.base, self.birth, self.nbytes)
        # what each op creates: a replay runs before its op, so the op's own outputs are not there yet
        self.created = self.base.copy()
        np.add.at(self.base, self.death, -self.nbytes)
        last_forward_read = self.birth.copy()
        first_backward_read = np.full(n, self.length, dtype=np.int64)
        mutated = np.full(n, -1, dtype=np.int64)
        # a unit's output: what its forward returned, or what a forward op outside the unit reads
        self.escapes = np.array([s.unit_output for s in storages], dtype=bool)
        for op in ops:
            for sid in op.reads:
                if op.backward:
                    first_backward_read[sid] = min(first_backward_read[sid], op.index)
                else:
                    last_forward_read[sid] = max(last_forward_read[sid], op.index)
                    if ops[storages[sid].birth].unit not in (op.unit, OUTSIDE):
                        self.escapes[sid] = True
            for sid in op.writes:
                mutated[sid] = max(mutated[sid], op.index)
        # a storage a checkpointed unit drops goes when its forward lets go of it: after its last forward
        # use, or later where the recording saw the checkpointed forward free it (a local variable held
        # until its function returns)
        recorded = np.array([s.released for s in storages], dtype=np.int64)
        self.released = np.maximum(last_forward_read + 1, recorded)
        self.units = [self._unit(u, last_forward_read, first_backward_read, mutated)
                      for u in range(len(recording.unit_names))]  # fmt: skip

    def _unit(self, u: int, last_read: np.ndarray, first_backward_read: np.ndarray,
              mutated: np.ndarray) -> UnitItems:  # fmt: skip
        rec = self.recording
        ops = [rec.ops[i] for i in rec.unit_ops[u]]
        start = rec.first_backward
        seconds = np.array([op.seconds for op in ops], dtype=np.float64)
        weights = np.zeros(len(ops), dtype=np.int64)
        eligible = np.zeros(len(ops), dtype=bool)
        forced = np.zeros(len(ops), dtype=bool)
        # never checkpointed: a random op on a generator of its own (the replay would not restore it), or an
        # in-place write to the unit's inputs (checkpoint holds them for the replay)
        checkpointable = not any(op.own_generator for op in ops) and not any(
            rec.unit_input_keys[u].intersection(op.writes_outside) for op in ops)
        kept: list[tuple[int, int]] = []  # (position, storage)
        temps: list[tuple[int, int]] = []
        outs: list[tuple[int, int]] = []  # the unit's outputs its ops made
        read_before: set[int] = set()  # storage keys the unit's forward read so far
        for position, op in enumerate(ops):
            made = [sid for sid in op.created if not self.escapes[sid]]
            weights[position] = int(self.nbytes[made].sum()) if made else 0
            written_later = any(mutated[sid] > op.index for sid in op.created)
            eligible[position] = bool(op.created) and not op.random and op.occurrence >= 0 and not written_later
            if op.writes_outside:
                # cached, so the replay does not apply it twice; safe only if nothing before it read what it writes
                forced[position] = True
                checkpointable &= (not op.random and op.occurrence >= 0 and not written_later
                                   and not read_before.intersection(op.writes_outside))  # fmt: skip
            read_before.update(op.read_keys)
            outs += [(position, sid) for sid in op.created if self.escapes[sid]]
            for sid in made:
                (kept if self.death[sid] > start else temps).append((position, sid))
        kept_sids = np.array([sid for _, sid in kept], dtype=np.int64)
        replay_at = int(first_backward_read[kept_sids].min()) if kept else -1
        if replay_at < 0 or replay_at >= self.length or not checkpointable:
            replay_at = -1
        elif rec.ops[replay_at].node_start >= 0:  # the node unpacks what it saved before its first op runs
            replay_at = rec.ops[replay_at].node_start
        temp_sids = np.array([sid for _, sid in temps], dtype=np.int64)
        inputs = np.array(rec.unit_inputs[u], dtype=np.int64)
        return UnitItems(
            ops=np.array(rec.unit_ops[u], dtype=np.int64), seconds=seconds, weights=weights,
            eligible=eligible & ~forced,
            forced=forced,
            caches_in_place_write=any(op.writes_outside and not op.created for op in ops),
            replay_at=replay_at,
            kept_op=np.array([p for p, _ in kept], dtype=np.int64), kept_bytes=self.nbytes[kept_sids],
            kept_drop=np.minimum(np.maximum(self.released[kept_sids], self.held_until[kept_sids]),
                                 self.death[kept_sids]),
            kept_birth=self.birth[kept_sids], kept_death=self.death[kept_sids],
            temp_op=np.array([p for p, _ in temps], dtype=np.int64), temp_bytes=self.nbytes[temp_sids],
            temp_birth=self.birth[temp_sids], temp_death=self.death[temp_sids],
            input_bytes=self.nbytes[inputs], input_death=self.death[inputs],
            out_op=np.array([p for p, _ in outs], dtype=np.int64),
            out_bytes=self.nbytes[np.array([sid for _, sid in outs], dtype=np.int64)],
            out_death=self.death[np.array([sid for _, sid in outs], dtype=np.int64)],
        )  # fmt: skip

    # ------------------------------------------------------------------ one choice

    def peak(self, choice: list[np.ndarray | None]) -> int:
        """Peak bytes of the step when unit ``u`` is checkpointed saving the ops ``choice[u]``.

        ``choice[u]`` is a boolean mask over the unit's forward ops (True:
        saved), or ``None`` for a unit left as it is.
        """
        return self.peak_of([self.change(u, saved) for u, saved in enumerate(choice)])

    def change(self, unit: int, saved: np.ndarray | None) -> Change | None:
        """What checkpointing ``unit`` with ``saved`` changes in the step (None: nothing); see :meth:`peak_of`."""
        items = self.units[unit]
        if saved is None or items.replay_at < 0:
            return None
        at = items.replay_at
        dropped = ~saved[items.kept_op]
        cached = saved[items.temp_op]
        # kept storages of replayed ops: gone from after their last forward use until the replay (one the
        # plain step freed before the replay is simply freed earlier);
        # temporaries of saved ops: cached until the replay has read them (the replay's spike counts them while
        # it runs);
        # the unit's inputs: held by the checkpoint until the replay
        back = dropped & (items.kept_death > at)
        early = dropped & ~back
        held = items.input_death <= at
        # the generator's state: from the unit's first op to the end of its backward (its last kept storage's free)
        rng_end = max(at + 1, int(items.kept_death.max()))
        # the replay stops once the last kept storage is back: a saved op past that point never runs again, so
        # the checkpoint's cache holds its outputs until the unit's backward ends and frees the checkpoint
        end = int(items.kept_birth.max()) if items.kept_birth.size else -1
        late = items.ops[items.temp_op] > end
        cached_late = cached & late
        cached = cached & ~late
        # the unit's outputs made by saved ops: the cache holds them too, until the replay takes them (or the end)
        out_hold = np.where(items.ops[items.out_op] > end, rng_end, at + 1)
        longer = saved[items.out_op] & (out_hold > items.out_death)
        where = np.concatenate([items.kept_drop[dropped], [at], items.kept_death[early],
                                items.temp_death[cached], [at], items.input_death[held], [at + 1],
                                [items.ops[0], rng_end], items.temp_death[cached_late], [rng_end],
                                items.out_death[longer], out_hold[longer]])  # fmt: skip
        nbytes = np.concatenate([-items.kept_bytes[dropped], [items.kept_bytes[back].sum()], items.kept_bytes[early],
                                 items.temp_bytes[cached], [-items.temp_bytes[cached].sum()],
                                 items.input_bytes[held], [-items.input_bytes[held].sum()],
                                 [self.rng_state_bytes, -self.rng_state_bytes],
                                 items.temp_bytes[cached_late], [-items.temp_bytes[cached_late].sum()],
                                 items.out_bytes[longer], -items.out_bytes[longer]])  # fmt: skip
        # the replay forks the generator's state
        spike = self._replay_spike(items, saved, back, ~(cached | cached_late), cached) + self.rng_state_bytes
        return Change(where, nbytes, at, spike)

    def peak_of(self, changes: list[Change | None]) -> int:
        """The step's peak with the units' changes applied (one per unit, None for a unit left as it is)."""
        deltas = self.base.copy()
        for change in changes:
            if change is not None:
                np.add.at(deltas, change.where, change.nbytes)
        live = np.cumsum(deltas)[: self.length + 1]
        peak = int((live + self.workspace).max(initial=0))
        for change in changes:
            if change is not None:
                at = change.replay_at
                peak = max(peak, int(live[at] - self.created[at]) + change.spike)
        return peak

    def _replay_spike(self, items: UnitItems, saved: np.ndarray, replayed: np.ndarray,
                      replayed_temps: np.ndarray, cached_temps: np.ndarray) -> int:  # fmt: skip
        """Bytes above the replayed storages while the replay runs: its temporaries and workspaces, at their worst.

        The replay runs the unit's forward up to the last op whose output the
        backward reads (saved or replayed), so ``replayed`` storages come back
        one by one; the unsaved temporaries alive then, and each replayed op's
        workspace, come on top. A saved op's temporary (``cached_temps``) is
        in the checkpoint's cache from the start of the replay; the replay
        takes it at its op and frees it after its last use there.
        """
        if not items.kept_birth.size:
            return 0
        end = int(items.kept_birth.max())  # the replay stops once the last needed storage is back
        points = items.ops[items.ops <= end]
        births = items.kept_birth[replayed]
        order = np.argsort(births)
        made = np.concatenate([[0], np.cumsum(items.kept_bytes[replayed][order])])
        made_bytes = made[np.searchsorted(births[order], points, side="right")]
        temp_birth = items.temp_birth[replayed_temps]
        temp_death = items.temp_death[replayed_temps]
        temp_bytes = items.temp_bytes[replayed_temps]
        alive = (temp_birth[None, :] <= points[:, None]) & (temp_death[None, :] > points[:, None])
        temps_alive = alive.astype(np.int64) @ temp_bytes
        in_cache = points[:, None] < items.temp_death[cached_temps][None, :]
        temps_alive += in_cache.astype(np.int64) @ items.temp_bytes[cached_temps]
        workspaces = np.where(saved[: points.size], 0, self.workspace[points])  # a cached op does not run
        total = int(items.kept_bytes[replayed].sum())
        return max(0, int((made_bytes + temps_alive + workspaces).max()) - total)

    def seconds(self, choice: list[np.ndarray | None]) -> float:
        """Seconds the replays spend: every unsaved op of every checkpointed unit."""
        total = 0.0
        for items, saved in zip(self.units, choice):
            if saved is not None and items.replay_at >= 0:
                total += float(items.seconds[~saved].sum())
        return total

    def full(self) -> list[np.ndarray | None]:
        """Every unit checkpointed, saving only what must be saved (full recomputation)."""
        return [items.forced.copy() if items.replay_at >= 0 else None for items in self.units]

    def none(self) -> list[np.ndarray | None]:
        return [None] * len(self.units)
