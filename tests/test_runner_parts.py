"""The runner in parts (bookkit.run.runner, bookkit.run.parts) on a fixture chapter split in three parts: a part
runs alone and its chapter's claims wait for the others ("missing", never failed), parts merge in one folder
and across reports, a stale part is shown, and a killed part resumes to the records of an uninterrupted run."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bookkit import cli
from bookkit.book import report
from bookkit.run import runner
from bookkit.run.part_records import PART_FLOOR_SECONDS, await_parts, merge_records, part_limit
from replib.parts import REST, Budget, Part
from replib.record import read_records

FIXTURE = Path(__file__).parent / "fixtures" / "parts"
ROOT = Path(__file__).resolve().parents[1]
_B = Budget(0.1, 1.0, 1.0)
PARTS = (
    Part("a", "split", 0.4, _B, models=(), records=("a_sum",)),
    Part("b", "split", 0.4, _B, models=(), records=("b_sum",)),
    Part(REST, "split", 0.2, _B, needs=("a", "b")),
)
pytestmark = pytest.mark.chapter


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("SPLIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "parts_of", lambda chapter, profile: PARTS if chapter == "split" else ())
    return root


def _run(root, part, out="out", **kw):
    return runner.run(
        "smoke", chapters=["split"], out_dir=root / out, root=root, part=part, progress=lambda *_: None, **kw
    )


def _claims(rep):
    return {c["key"]: c for c in rep["claims"]}


def _computed(root, job):
    return len(list((Path(os.environ["SPLIT_CACHE"])).glob(f"computed-{job}-*")))


def test_parts_run_one_at_a_time_and_the_claims_wait_for_the_parts_not_run(project):
    rep = _run(project, "a")
    c = _claims(rep)
    assert c["a_sum"]["status"] == "consistent"
    assert c["b_sum"]["status"] == "missing" and "part b (missing)" in c["b_sum"]["detail"]
    assert "--part b" in c["b_sum"]["detail"]
    # recorded by part a, but owned by rest only (a value over more than part a's work): waits for rest
    assert c["n_items"]["status"] == "missing" and "rest" in c["n_items"]["detail"]
    assert c["total"]["status"] == "missing"
    assert rep["summary"]["failed"] == 0 and rep["summary"]["missing"] == 3
    entry = rep["chapters"][0]
    assert entry["part"] == "a" and {n: s["status"] for n, s in entry["parts"].items()} == {
        "a": "done",
        "b": "missing",
        "rest": "missing",
    }
    assert entry["parts"]["a"]["records"] == {"a_sum": c["a_sum"]["value"]}

    rep = _run(project, "b")
    assert {k: v["status"] for k, v in _claims(rep).items()} == {
        "a_sum": "consistent",
        "b_sum": "consistent",
        "total": "missing",
        "n_items": "missing",
    }
    assert _computed(project, "a") == 6 and _computed(project, "b") == 6
    rep = _run(project, REST)
    assert all(c["status"] == "consistent" for c in rep["claims"]), rep["claims"]
    assert _computed(project, "a") == 6 and _computed(project, "b") == 6  # rest read both jobs from the cache
    on_disk = json.loads((project / "out" / "report.json").read_text())
    assert on_disk["chapters"][0]["parts"]["rest"]["status"] == "done"

    # the chapter changes: every part is stale, its claims wait for it again, and --list-parts says so
    src = project / "notebooks" / "split.md"
    src.write_text(src.read_text() + "\n<!-- changed -->\n")
    rows = runner.part_list("smoke", ["split"], project, project / "out")
    assert [(r["part"], r["status"]) for r in rows] == [("a", "stale"), ("b", "stale"), (REST, "stale")]
    rep = _run(project, "a")
    assert _claims(rep)["a_sum"]["status"] == "consistent" and _claims(rep)["b_sum"]["status"] == "missing"
    assert "part b (stale)" in _claims(rep)["b_sum"]["detail"]


def test_the_whole_chapter_and_a_part_record_the_same_values_for_the_part(project):
    whole = runner.run("smoke", chapters=["split"], out_dir=project / "whole", root=project, progress=lambda *_: None)
    assert whole["summary"]["failed"] == 0
    _run(project, "b")
    recorded = read_records(project / "whole" / "notebooks" / "split.ipynb")
    part = read_records(project / "out" / "notebooks" / "parts" / "split--b.ipynb")
    assert part["b_sum"] == recorded["b_sum"] and "a_sum" not in part


def test_parts_run_on_different_machines_merge_into_one_report(project, tmp_path, monkeypatch):
    reports = []
    for i, part in enumerate(("a", "b")):
        monkeypatch.setenv("SPLIT_CACHE", str(tmp_path / f"cache-{part}"))  # each machine its own cache
        Path(os.environ["SPLIT_CACHE"]).mkdir()
        _run(project, part, out=f"machine-{i}")
        reports.append(str(project / f"machine-{i}" / "report.json"))
        time.sleep(1.1)  # distinct start times: the latest report of a part wins
    monkeypatch.chdir(project)  # the merge checks the chapter's claims again: it finds the project from here
    assert cli.main(["report", "merge", *reports, "-o", str(tmp_path / "merged.json")]) == 0
    (merged,) = report.load(tmp_path / "merged.json")
    c = _claims(merged)
    assert c["a_sum"]["status"] == "consistent" and c["b_sum"]["status"] == "consistent"
    assert c["total"]["status"] == "missing" and merged["summary"]["failed"] == 0
    states = merged["chapters"][0]["parts"]
    assert (states["a"]["status"], states["b"]["status"], states[REST]["status"]) == ("done", "done", "missing")


def test_the_part_list_and_the_part_option(project, capsys):
    assert cli.main(["--root", str(project), "run", "--profile", "paper", "--list-parts", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["part"] for r in rows] == ["a", "b", REST]
    assert set(rows[0]) == {"chapter", "part", "timeout_minutes", "models"}  # what the nightly's matrix reads
    assert rows[0]["timeout_minutes"] == -(-part_limit(PARTS[0], "paper", 300) // 60) + 20
    assert cli.main(["--root", str(project), "run", "split", "--profile", "smoke", "--list-parts"]) == 0
    assert "missing" in capsys.readouterr().out
    assert cli.main(["--root", str(project), "run", "split", "--profile", "smoke", "--part", "nope"]) == 2
    assert "split has no part 'nope'" in capsys.readouterr().err
    assert cli.main(["--root", str(project), "run", "--profile", "smoke", "--json"]) == 2
    assert "--json goes with --list-parts" in capsys.readouterr().err


def test_time_limits_scale_with_the_part():
    big, small = Part("x", "c", 0.5, Budget(2.0, 1, 1)), Part("y", "c", 0.05, Budget(0.1, 1, 1))
    assert part_limit(big, "paper", 3600) == 2 * 3600 * 1.25  # the declared T4-hours with a margin
    assert part_limit(big, "smoke", 3600) == 1800 and part_limit(small, "smoke", 3600) == PART_FLOOR_SECONDS


def test_conflicting_part_values_are_reported_and_a_comparison_key_waits_too():
    states = {
        "a": {"status": "done", "owns": ["x", "y"], "records": {"x": 1.0, "y": 2.0}},
        "b": {"status": "done", "owns": ["x"], "records": {"x": 1.5}},
        "c": {"status": "missing", "owns": ["z"]},
    }
    records, sources, conflicts = merge_records(states)
    assert records == {"x": 1.5, "y": 2.0} and sources["x"] == "b" and conflicts[0]["parts"] == ["a", "b"]
    failed = {"chapter": "ch", "profile": "smoke", "status": "failed", "key": "y", "check": ""}
    rows = await_parts([dict(failed, detail="comparison key 'z' not recorded")], states, records)
    assert rows[0]["status"] == "missing" and "part c (missing)" in rows[0]["detail"]
    assert await_parts([dict(failed, key="x", detail="check failed")], states, records)[0]["status"] == "failed"
    cell = dict(failed, key="finding.p.f.m", record="z", detail="value not recorded")  # a findings-grid cell
    assert await_parts([cell], states, records)[0]["status"] == "missing"


def _cli(root, boot, *args):
    """The command line in a fresh process, with this test's parts registered (``boot``, a launcher)."""
    return [sys.executable, str(boot), "--root", str(root), "run", "split", "--profile", "smoke", *args]


def test_a_killed_part_resumes_to_the_records_of_an_uninterrupted_run(project, tmp_path):
    """Fault injection: the runner of part `a` (and its kernel) killed after two of its six shards, rerun."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    clean = dict(env, SPLIT_CACHE=str(tmp_path / "clean"), SHARD_SECONDS="0")
    killed = dict(env, SPLIT_CACHE=str(tmp_path / "cache"), SHARD_SECONDS="1.5")
    Path(clean["SPLIT_CACHE"]).mkdir()
    boot = tmp_path / "boot.py"  # the fixture's parts exist in a fresh process only through this registration
    boot.write_text(
        "import sys\n"
        "from bookkit import cli\nfrom bookkit.run import runner\n"
        "from replib.parts import Budget, Part\n"
        "_B = Budget(0.1, 1.0, 1.0)\n"
        "_P = (Part('a', 'split', 0.4, _B, models=(), records=('a_sum',)),"
        " Part('b', 'split', 0.4, _B, models=(), records=('b_sum',)),"
        " Part('rest', 'split', 0.2, _B, needs=('a', 'b')))\n"
        "runner.parts_of = lambda chapter, profile: _P if chapter == 'split' else ()\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    nb = project / "build" / "runs" / "smoke" / "notebooks" / "parts" / "split--a.ipynb"
    ok = subprocess.run(_cli(project, boot, "--part", "a"), env=clean, cwd=project, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    expected = read_records(nb)
    shutil.rmtree(project / "build")

    cache = Path(killed["SPLIT_CACHE"])
    proc = subprocess.Popen(_cli(project, boot, "--part", "a"), env=killed, cwd=project, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 600
    while len(list(cache.rglob("shard-*.npz"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the machine is gone: runner, papermill and the kernel at once
    proc.wait()
    stored, computed = len(list(cache.rglob("shard-*.npz"))), len(list(cache.glob("computed-a-*")))
    assert 2 <= stored < 6, stored
    again = subprocess.run(_cli(project, boot, "--part", "a"), env=dict(killed, SHARD_SECONDS="0"), cwd=project,
                           capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert read_records(nb) == expected
    assert len(list(cache.glob("computed-a-*"))) - computed == 6 - stored  # only the shards the kill lost
