"""Chapters side by side (``--jobs``, :mod:`bookkit.run.lanes`): order, overlap, a chain's seeds in turn, errors,
the kernels' threads, and a run on two lanes giving the same verdicts as one lane."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from bookkit.run import execute, runner
from bookkit.run.lanes import lane_threads, run_lanes

FIXTURES = Path(__file__).parent / "fixtures" / "runner"


def test_two_lanes_run_two_chains_at_once_and_one_lane_one_at_a_time():
    barrier = threading.Barrier(2, timeout=5)  # passes only when two steps run at the same time

    def step(name, s, first):
        barrier.wait()
        return name

    out = run_lanes(2, [("a", [0]), ("b", [0])], step, lambda n: 1.0)
    assert out == {("a", 0): "a", ("b", 0): "b"}
    barrier.reset()
    with pytest.raises(threading.BrokenBarrierError):
        run_lanes(1, [("a", [0]), ("b", [0])], step, lambda n: 1.0)


def test_longest_chain_first_and_a_chains_steps_in_turn():
    log, lock = [], threading.Lock()

    def step(name, s, first):
        with lock:
            log.append(("start", name, s, first))
        time.sleep(0.05)
        with lock:
            log.append(("end", name, s))

    cost = {"short": 1.0, "long": 10.0, "mid": 5.0}
    run_lanes(1, [(n, [0, 1]) for n in cost], step, cost.get)
    starts = [(n, s, f) for kind, n, s, *f in log if kind == "start"]
    assert starts[0] == ("long", 0, [True])  # the longest first; a chain's first step is marked first
    assert [x[:2] for x in starts].index(("long", 1)) > [x[:2] for x in starts].index(("long", 0))
    log.clear()
    run_lanes(3, [(n, [0, 1, 2]) for n in cost], step, cost.get)
    for name in cost:  # on three lanes too, no step of a chain starts before the one before it ended
        events = [(kind, s) for kind, n, s, *_ in log if n == name]
        assert events == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2)]


def test_an_error_ends_its_chain_the_others_finish_and_it_is_raised():
    done = []

    def step(name, s, first):
        if name == "bad" and s == 0:
            raise RuntimeError("chapter crashed")
        done.append((name, s))

    with pytest.raises(RuntimeError, match="chapter crashed"):
        run_lanes(2, [("bad", [0, 1]), ("good", [0, 1])], step, lambda n: 1.0)
    assert sorted(done) == [("good", 0), ("good", 1)]


def test_lane_threads():
    assert lane_threads(2, cores=2) == 1 and lane_threads(2, cores=16) == 8 and lane_threads(4, cores=2) == 1
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        lane_threads(0)


def test_kernels_get_the_lanes_thread_count_unless_the_user_set_it(tmp_path, monkeypatch):
    seen = {}

    def fake_run(cmd, **kwargs):
        seen.update(kwargs["env"])
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(execute.subprocess, "run", fake_run)
    for k in execute.THREAD_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    execute.execute_notebook(tmp_path / "x.ipynb", tmp_path / "out" / "x.ipynb", "smoke", timeout=5, threads=1)
    assert seen["OMP_NUM_THREADS"] == "1" and seen["OPENBLAS_NUM_THREADS"] == "1" and seen["MKL_NUM_THREADS"] == "3"
    seen.clear()
    execute.execute_notebook(tmp_path / "x.ipynb", tmp_path / "out" / "x.ipynb", "smoke", timeout=5)
    assert "OMP_NUM_THREADS" not in seen  # one lane: the kernel keeps every core


def test_later_seeds_run_at_a_lower_priority_beside_the_first_seeds(tmp_path, monkeypatch):
    """On lanes a later seed's papermill (and so its kernel) runs under ``nice``; a first seed, and every seed
    of a one-lane run, at the runner's own priority."""
    cmds = []

    def fake_run(cmd, **kwargs):
        cmds.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(execute.subprocess, "run", fake_run)
    monkeypatch.setattr(execute.shutil, "which", lambda name: "/usr/bin/nice" if name == "nice" else None)
    execute.execute_notebook(tmp_path / "x.ipynb", tmp_path / "out" / "x.ipynb", "smoke", timeout=5, nice=10)
    execute.execute_notebook(tmp_path / "x.ipynb", tmp_path / "out" / "x.ipynb", "smoke", timeout=5)
    assert cmds[0][:3] == ["nice", "-n", "10"] and cmds[0][3:] == cmds[1] and cmds[1][0] != "nice"
    monkeypatch.setattr(execute.shutil, "which", lambda name: None)  # no nice on this system: run as it is
    execute.execute_notebook(tmp_path / "x.ipynb", tmp_path / "out" / "x.ipynb", "smoke", timeout=5, nice=10)
    assert cmds[2] == cmds[1]

    given = []
    monkeypatch.setattr(
        runner,
        "_execute",
        lambda *a, **k: given.append(k.get("nice")) or runner._SeedRun("error", "x", 0.0, tmp_path / "none.ipynb"),
    )
    ch = runner.discover_chapters(FIXTURES)[0]
    for jobs, first in ((2, True), (2, False), (1, False)):
        plan = runner._Plan(
            "smoke", FIXTURES, tmp_path, False, 1.0, None, False, lambda *_: None, [0, 1], False, jobs=jobs
        )
        runner._run_seed(plan, ch, 1, first)
    assert given == [0, runner.LATER_SEED_NICE, 0]


def test_jobs_and_part_do_not_go_together(tmp_path):
    with pytest.raises(ValueError, match="--jobs runs whole chapters side by side"):
        runner.run("smoke", root=FIXTURES, out_dir=tmp_path, part="x", jobs=2, progress=lambda *_: None)


@pytest.mark.chapter
def test_two_lanes_give_the_verdicts_of_one(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    chapters = ["good", "wrong", "broken"]

    def verdicts(jobs):
        rep = runner.run("smoke", chapters=chapters, out_dir=tmp_path / f"out{jobs}", root=project, seeds=[0, 1],
                         jobs=jobs, progress=lambda *_: None)  # fmt: skip
        return (
            [c["chapter"] for c in rep["chapters"]],
            {(c["chapter"], c["key"]): c["status"] for c in rep["claims"]},
            {c["chapter"]: c["status"] for c in rep["chapters"]},
        )

    assert verdicts(2) == verdicts(1)


def test_after_first_is_called_once_when_every_chains_first_step_has_ended():
    log, lock = [], threading.Lock()

    def step(name, s, first):
        with lock:
            log.append((name, s))
        time.sleep(0.02)
        return f"{name}{s}"

    def after_first(firsts):
        with lock:
            log.append(("after_first", dict(firsts)))

    cost = {"short": 1.0, "long": 10.0, "mid": 5.0}
    run_lanes(1, [(n, [0, 1]) for n in cost], step, cost.get, after_first=after_first)
    (i,) = [k for k, x in enumerate(log) if x[0] == "after_first"]
    assert log[i][1] == {("long", 0): "long0", ("mid", 0): "mid0", ("short", 0): "short0"}
    assert sorted(log[:i]) == sorted([("long", 0), ("mid", 0), ("short", 0)])  # one lane: every first step first
    log.clear()
    run_lanes(2, [(n, [0, 1]) for n in cost], step, cost.get, after_first=after_first)
    (i,) = [k for k, x in enumerate(log) if x[0] == "after_first"]
    assert {x for x in log[:i] if x[1] == 0} == {("long", 0), ("mid", 0), ("short", 0)}


def test_lanes_order_a_cold_run_by_its_measured_time_then_the_budget_then_the_time_limit(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    found = {c.chapter: c for c in runner.discover_chapters(project) if not c.error}
    names = sorted(found)[:2]
    (project / "book" / "measurements").mkdir(parents=True)
    (project / "book" / "measurements" / "budget.csv").write_text(f"chapter,first_seed_s,next_seed_s\n{names[0]},7,3\n")

    def cost(profile):
        plan = runner._Plan(profile, project, tmp_path / "out", False, 1.0, None, False, print, [0, 1], False)
        return runner._lane_cost(plan, found)

    assert cost("offline")(names[0]) == 7.0  # no previous report: the budget (offline, the budget's profile)
    assert cost("offline")(names[1]) == found[names[1]].timeout_for("offline")  # not in the budget: its limit
    assert cost("smoke")(names[0]) == found[names[0]].timeout_for("smoke")  # the budget is the offline profile's
    # a cold measurement in the run-time table wins over the budget; the newest row of a chapter and seed counts
    head = "chapter,profile,cache,seeds,seconds,date,machine,what\n"
    rows = [
        f"{names[0]},offline,cold,0,40,d,m,w",
        f"{names[0]},offline,warm,0,2,d,m,w",
        f"{names[1]},offline,cold,0,9,d,m,w",
        f"{names[1]},offline,cold,1,4,d,m,w",
        f"{names[1]},offline,cold,0,11,d,m,w2",
        f"{names[0]},smoke,cold,0,99,d,m,w",
    ]
    (project / "book" / "measurements" / "run_times.csv").write_text(head + "\n".join(rows) + "\n")
    assert cost("offline")(names[0]) == 40.0 and cost("offline")(names[1]) == 11.0
    plan = runner._Plan("offline", project, tmp_path / "out", False, 1.0, None, False, print, [0, 1], False)
    assert runner._expected(plan) == {names[0]: (40.0, 3.0), names[1]: (11.0, 4.0)}  # a seed not measured: budgeted
