"""Plans lowered side by side in forked workers: the same answers as one after the other, errors as they are."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install 'remat-knapsack[torch]')")

from remat_knapsack.torch import predict_peaks  # noqa: E402
from remat_knapsack.torch.peaks import _fork  # noqa: E402

needs_fork = pytest.mark.skipif(sys.platform != "linux", reason="forked workers run on Linux only")


class Unpicklable(Exception):
    """An error a worker cannot send back (it holds a lambda)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.hook = lambda: None


def _pid() -> int:
    return os.getpid()


@needs_fork
def test_tasks_run_in_other_processes_and_come_back_in_order(monkeypatch):
    monkeypatch.setenv(_fork.WORKERS_ENV, "2")
    tasks = [lambda i=i: (i, os.getpid()) for i in range(5)]
    results = _fork.side_by_side(tasks)
    assert [i for i, _ in results] == list(range(5))
    assert os.getpid() not in {pid for _, pid in results}


def test_one_worker_runs_the_tasks_here(monkeypatch):
    monkeypatch.setenv(_fork.WORKERS_ENV, "1")
    assert _fork.side_by_side([_pid, _pid]) == [os.getpid(), os.getpid()]


@needs_fork
@pytest.mark.parametrize("error", [ValueError, Unpicklable])
def test_a_task_that_fails_in_a_worker_raises_its_own_error_here(monkeypatch, error):
    monkeypatch.setenv(_fork.WORKERS_ENV, "2")
    ran_here = []

    def fails():
        ran_here.append(os.getpid())
        raise error("the task's own message")

    with pytest.raises(error, match="the task's own message"):
        _fork.side_by_side([_pid, fails, _pid])
    assert ran_here == [os.getpid()]  # the worker's run appended in the worker's copy; this one is the rerun


@needs_fork
def test_a_worker_that_dies_is_replaced_by_a_run_here(monkeypatch):
    monkeypatch.setenv(_fork.WORKERS_ENV, "2")
    parent = os.getpid()

    def dies_in_a_worker():
        if os.getpid() != parent:
            os._exit(3)
        return "ran here"

    assert _fork.side_by_side([dies_in_a_worker, dies_in_a_worker]) == ["ran here", "ran here"]


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_a_bad_worker_count_is_named(monkeypatch, bad):
    monkeypatch.setenv(_fork.WORKERS_ENV, bad)
    with pytest.raises(ValueError, match=_fork.WORKERS_ENV):
        _fork.workers()


@needs_fork
def test_inductor_budgets_lowered_side_by_side_predict_as_one_after_the_other(monkeypatch):
    """Three budgets of an attention block under inductor: the forked lowerings give the same peaks to the byte."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    model, args = torch.nn.Sequential(layer), (torch.randn(4, 32, 64),)
    answers = {}
    for workers in ("1", "2"):
        monkeypatch.setenv(_fork.WORKERS_ENV, workers)
        answers[workers] = predict_peaks(model, args, [0.05, 0.5, 0.9], backend="inductor")
    assert answers["2"] == answers["1"]
    assert len({p.saved_bytes for p in answers["1"]}) > 1  # distinct plans, so distinct lowerings
