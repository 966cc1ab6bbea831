"""Training runs side by side (replib.training.parallel): the same runs as one after the other."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from replib.training import config_for, parallel_workers, run_dir, trained_model, trained_models

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
