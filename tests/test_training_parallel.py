"""Training runs side by side (replib.training.parallel): the same runs as one after the other."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pytest

from replib.training import (
    config_for,
    parallel,
    parallel_workers,
    run_cost,
    run_dir,
    train_seeds,
    trained_model,
    trained_models,
)
from replib.training.parallel import _unfinished

_MIRROR = Path(os.environ.get("REPLIB_DATA_MIRROR") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
needs_mirror = pytest.mark.skipif(not _MIRROR.is_dir(), reason="offline data mirror not found (REPLIB_DATA_MIRROR)")


def _weights(folder):
    from safetensors.numpy import load_file

    return load_file(str(folder / "model.safetensors"))


def test_parallel_workers_one_run_per_core_of_the_budget():
    one = {"threads": 1}
    assert parallel_workers([one, one], budget=2) == 2
    assert parallel_workers([one, one], budget=8) == 2  # never more workers than runs
    assert parallel_workers([one, one], budget=1) == 1  # a chapter beside another (--jobs): one after the other
    assert parallel_workers([one], budget=8) == 1
    assert parallel_workers([], budget=8) == 1
    assert parallel_workers([one, {"threads": None}], budget=8) == 1  # the GPU runs share one device
    assert parallel_workers([{"threads": 2}, {"threads": 2}], budget=3) == 1
    assert parallel_workers([{"threads": 2}, {"threads": 2}], budget=4) == 2
    assert parallel_workers([one, one]) >= 1  # from this process's torch threads


@needs_mirror
def test_runs_trained_side_by_side_equal_the_runs_trained_in_turn(tmp_path):
    """Two worker processes, one run each: bit-identical weights and logs to the same runs trained one after
    the other in this process, in the same run folders (the content key does not see where a run trained)."""
    side = trained_models(["protein", "text"], "smoke", 5, root=tmp_path / "side", workers=2, progress=False)
    assert list(side) == ["protein", "text"]
    for task, run in side.items():
        alone = trained_model(task, "smoke", 5, root=tmp_path / "turn", progress=False)
        assert run.dir.name == alone.dir.name
        wa, wb = _weights(run.final_dir), _weights(alone.final_dir)
        assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)
        assert run.log() == alone.log()
    # cached now: asked again, nothing trains (the folders' files are not rewritten)
    stamps = {p: p.stat().st_mtime_ns for run in side.values() for p in run.dir.rglob("*") if p.is_file()}
    again = trained_models(["text", "protein"], "smoke", 5, root=tmp_path / "side", workers=2, progress=False)
    assert list(again) == ["text", "protein"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


@needs_mirror
@pytest.mark.probe(
    "one of two training runs trained side by side fails",
    "its exception in the chapter once the other run has ended (complete in its folder, resumable), "
    "so no worker is left training",
)
def test_a_failing_run_raises_after_the_other_has_ended(tmp_path, monkeypatch):
    """A run that cannot train (the protein data missing from the mirror) raises in the parent, once the other
    run (the text model, whose data is there) has ended complete: no worker is left training."""
    from replib.data.store import DataNotFoundError

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "wikitext2").symlink_to(_MIRROR / "wikitext2")
    monkeypatch.setenv("REPLIB_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DataNotFoundError, match="swissprot"):
        trained_models(["protein", "text"], "smoke", 5, root=tmp_path / "runs", workers=2, progress=False)
    sizes = config_for("smoke")
    assert (run_dir("text", sizes["text"], 5, tmp_path / "runs") / "final" / "sha256.json").exists()
    assert not (run_dir("protein", sizes["protein"], 5, tmp_path / "runs") / "final").exists()


@needs_mirror
def test_unfinished_runs_come_longest_first_and_finished_ones_not_at_all(tmp_path, monkeypatch):
    sizes = config_for("offline")
    long, short = sorted(("protein", "text"), key=lambda t: -run_cost(sizes[t]))
    assert run_cost(sizes[long]) > run_cost(sizes[short])  # the offline runs differ in cost
    jobs = list(_unfinished(("protein", "text"), "offline", [0, 1], tmp_path))
    assert jobs == [(long, 0), (long, 1), (short, 0), (short, 1)]
    done = run_dir(long, sizes[long], 1, tmp_path) / "final"
    done.mkdir(parents=True)
    (done / "sha256.json").write_text("{}")
    assert list(_unfinished(("protein", "text"), "offline", [0, 1], tmp_path)) == [(long, 0), (short, 0), (short, 1)]
    smoke = config_for("smoke")
    tie = {"protein": smoke["protein"], "text": dict(smoke["text"], vocab=33)}  # one shape, ESM-2's 33 tokens
    monkeypatch.setattr(parallel, "config_for", lambda profile: tie)
    assert run_cost(tie["protein"]) == run_cost(tie["text"])  # the same cost: the given order (seed, then task)
    assert list(_unfinished(("protein", "text"), "smoke", [3, 4], tmp_path)) == [
        ("protein", 3),
        ("text", 3),
        ("protein", 4),
        ("text", 4),
    ]


@needs_mirror
def test_several_seeds_trained_side_by_side_equal_each_seed_trained_alone(tmp_path):
    """train_seeds (the training chapter's preparation for several seeds): every seed's runs, two workers, the
    same folders and bit-identical weights as each run trained alone; asked again, it trains nothing."""
    jobs = train_seeds(["protein", "text"], "smoke", [5, 6], root=tmp_path / "side", workers=2, progress=False)
    assert sorted(jobs) == [("protein", 5), ("protein", 6), ("text", 5), ("text", 6)]
    sizes = config_for("smoke")
    for task, seed in jobs:
        folder = run_dir(task, sizes[task], seed, tmp_path / "side")
        assert (folder / "final" / "sha256.json").exists()
    alone = trained_model("text", "smoke", 6, root=tmp_path / "turn", progress=False)
    wa, wb = _weights(run_dir("text", sizes["text"], 6, tmp_path / "side") / "final"), _weights(alone.final_dir)
    assert wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)
    assert train_seeds(["protein", "text"], "smoke", [5, 6], root=tmp_path / "side", workers=2) == []
    # one worker and serial=False (the chapter's preparation on one core): nothing trains here
    assert train_seeds(["text"], "smoke", [7], root=tmp_path / "side", workers=1, serial=False) == []
    assert not (run_dir("text", sizes["text"], 7, tmp_path / "side") / "final").exists()


def _running(p, psutil) -> bool:
    """Whether ``p`` still runs (a zombie, ended but not yet reaped by whoever adopted it, does not)."""
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _run_folders(runs: Path) -> list:
    """The training runs' folders in ``runs``, not the hidden lock files beside them (``.<run>.lock``)."""
    return [p for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []


_PREPARE = """
import sys
from replib.training import trained_models
trained_models(["protein", "text"], "offline", 7, root=sys.argv[1], workers=2, progress=False)
"""


@pytest.mark.slow
@needs_mirror
@pytest.mark.probe(
    "the runner killed (SIGKILL) while the training preparation's workers train",
    "the workers end with it (a parent-death signal), so none goes on training or holds a run lock",
)
def test_the_workers_end_when_the_process_that_started_them_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    psutil = pytest.importorskip("psutil")
    env = {**os.environ, "REPLIB_CACHE_DIR": str(tmp_path / "cache"), "REPLIB_DATA_MIRROR": str(_MIRROR)}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-c", _PREPARE, str(tmp_path / "runs")], env=env)
    workers = []
    try:
        # a hang guard, not a speed check (under a loaded CI the second worker was not seen within 300 s)
        parent, runs, t_end = psutil.Process(proc.pid), tmp_path / "runs", time.monotonic() + 900
        while time.monotonic() < t_end and proc.poll() is None:  # both workers training (their run folders made)
            time.sleep(0.5)
            workers = [p for p in parent.children() if "popen_loky" in " ".join(p.cmdline())]
            if len(workers) == 2 and len(_run_folders(runs)) == 2:
                break
        started = len(_run_folders(runs))
        assert len(workers) == 2 and started == 2, (
            f"the two workers did not start training: {len(workers)} workers, {started} run folders, "
            f"preparation {'running' if proc.poll() is None else f'ended with {proc.returncode}'}"
        )
        time.sleep(2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        t_end = time.monotonic() + 60
        while time.monotonic() < t_end and any(_running(p, psutil) for p in workers):
            time.sleep(0.5)
        assert not [p for p in workers if _running(p, psutil)], "workers left running after their parent was killed"
    finally:
        proc.kill()
        proc.wait()
        for p in workers:  # this test's own orphans, if the fix failed
            with contextlib.suppress(psutil.Error):
                p.kill()
