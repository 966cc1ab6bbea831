"""The runner: papermill execution, isolation of failing/timed-out chapters, and the claim check."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bookkit.errors import RunLockedError
from bookkit.run import execute, runner

FIXTURES = Path(__file__).parent / "fixtures" / "runner"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runner") / "project"
    shutil.copytree(FIXTURES, tmp)
    report = runner.run("smoke", out_dir=tmp / "out", root=tmp, progress=lambda *_: None)
    return report, tmp


def _claims(report, chapter):
    return {c["key"]: c for c in report["claims"] if c["chapter"] == chapter}


@pytest.mark.chapter
def test_good_chapter_passes_with_injected_profile(smoke_report):
    report, _ = smoke_report
    good = _claims(report, "good")
    assert good["answer"]["status"] == "reproduced"
    assert good["flag"]["status"] == "consistent"  # profile 'smoke' was injected by papermill


@pytest.mark.chapter
def test_failing_chapter_fails_and_others_still_run(smoke_report):
    report, _ = smoke_report
    chapters = {c["chapter"]: c for c in report["chapters"]}
    assert set(chapters) == {"good", "broken", "slow", "wrong"}
    assert chapters["broken"]["status"] == "error" and "science broke" in chapters["broken"]["error"]
    broken = _claims(report, "broken")
    assert broken["answer"]["status"] == "failed" and broken["flag"]["status"] == "failed"


@pytest.mark.chapter
def test_timed_out_chapter_fails_even_with_recorded_keys(smoke_report):
    report, _ = smoke_report
    chapters = {c["chapter"]: c for c in report["chapters"]}
    assert chapters["slow"]["status"] == "timeout"
    assert chapters["slow"]["seconds"] < 50
    assert all(c["status"] == "failed" for c in _claims(report, "slow").values())


@pytest.mark.chapter
def test_out_of_tolerance_value_fails(smoke_report):
    report, _ = smoke_report
    wrong = _claims(report, "wrong")
    assert wrong["answer"]["status"] == "failed" and "0.9" in wrong["answer"]["detail"]


@pytest.mark.chapter
def test_report_file_summary_and_closing_line(smoke_report):
    report, tmp = smoke_report
    on_disk = json.loads((tmp / "out" / "report.json").read_text())
    assert on_disk["summary"] == report["summary"]
    # good: 2 pass; wrong: its flag passes, its answer fails; broken and slow: 2 fail each
    assert report["summary"]["reproduced"] == 1 and report["summary"]["consistent"] == 2
    assert report["summary"]["failed"] == 5
    assert report["summary"]["chapter_failures"] == 2
    last = runner.format_table(report).splitlines()[-1]
    assert last == (
        "1 reproduced, 2 consistent, 0 sanity, 0 deviates, 0 expected_failure, 0 does_not_hold, 0 inconclusive, "
        "0 unverified, 0 missing; 5 failing"
    )
    assert "passed" not in last  # a deviation is never called a pass: every status is counted on its own
    assert "torch" in report["environment"]["packages"]


@pytest.mark.chapter
def test_check_only_rechecks_existing_outputs(smoke_report, tmp_path):
    _, tmp = smoke_report
    rep = runner.run(
        "smoke", out_dir=tmp / "out", root=tmp, check_only=True, chapters=["good", "wrong"], progress=lambda *_: None
    )
    assert rep["summary"]["reproduced"] + rep["summary"]["consistent"] == 3 and rep["summary"]["failed"] == 1
    ran = {c["chapter"]: c["seconds"] for c in smoke_report[0]["chapters"]}
    kept = {c["chapter"]: c["seconds"] for c in rep["chapters"]}
    assert kept == {k: ran[k] for k in ("good", "wrong")} and all(v > 0 for v in kept.values())


def test_unknown_chapter_and_empty_folder(tmp_path):
    with pytest.raises(ValueError, match="unknown chapter"):
        runner.discover_chapters(FIXTURES, only=["nope"])
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    with pytest.raises(FileNotFoundError, match="no chapters"):
        runner.run("smoke", out_dir=tmp_path / "o", root=tmp_path, progress=lambda *_: None)


@pytest.mark.chapter
def test_cli_exit_code_on_failure(tmp_path):
    # the CLI's run command exits non-zero when a claim fails (repository chapters are not touched)
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    code = subprocess.run(
        [sys.executable, "-m", "replib", "--root", str(project), "run", "--profile", "smoke", "--chapters", "wrong"],
        capture_output=True,
        text=True,
    )
    assert code.returncode == 1, code.stdout + code.stderr
    assert (project / "build" / "runs" / "smoke" / "report.json").exists()


@pytest.mark.chapter
def test_report_says_which_model_weights_each_chapter_loaded(smoke_report):
    from bookkit.book.report import environment_lines, models_used

    report, tmp = smoke_report
    models = {c["chapter"]: c["models"] for c in report["chapters"]}
    assert [m["name"] for m in models["good"]] == ["tiny-bert"]  # noted twice, reported once
    assert models["good"][0]["kind"] == "random" and models["good"][0]["source"] == "random:seed=0"
    assert models["wrong"] == [] and models["slow"] == []
    assert [m["chapters"] for m in models_used(report)] == [["good"]]
    assert any("`tiny-bert` random @ `random:seed=0`" in line for line in environment_lines(report))
    # check-only reads the same log back: the weights stay attached to the executed notebook
    rep = runner.run(
        "smoke", out_dir=tmp / "out", root=tmp, check_only=True, chapters=["good"], progress=lambda *_: None
    )
    assert rep["chapters"][0]["models"] == models["good"]


# ------------------------------------------------------------------ reliability of the runner (issue 16)
@pytest.mark.chapter
def test_check_refuses_a_notebook_that_raised_after_recording(smoke_report):
    """`broken` records its keys, then raises: a re-check must not call it ok."""
    _, tmp = smoke_report
    rep = runner.run(
        "smoke", out_dir=tmp / "out", root=tmp, check_only=True, chapters=["broken"], progress=lambda *_: None
    )
    (ch,) = rep["chapters"]
    assert ch["status"] == "error" and "science broke" in ch["error"]
    assert all(c["status"] == "failed" for c in rep["claims"])
    code = subprocess.run(
        [sys.executable, "-m", "replib", "--root", str(tmp), "check", "--profile", "smoke", "--chapters", "broken"],
        capture_output=True,
        text=True,
    )
    assert code.returncode == 1, code.stdout + code.stderr


@pytest.mark.chapter
def test_a_partial_run_merges_into_the_report(smoke_report):
    report, tmp = smoke_report
    rep = runner.run(
        "smoke", out_dir=tmp / "out", root=tmp, check_only=True, chapters=["good"], progress=lambda *_: None
    )
    assert [c["chapter"] for c in rep["chapters"]] == ["good"]  # what this run did
    on_disk = json.loads((tmp / "out" / "report.json").read_text())
    assert {c["chapter"] for c in on_disk["chapters"]} == {"good", "broken", "slow", "wrong"}
    assert len(on_disk["claims"]) == len(report["claims"])
    assert on_disk["summary"]["failed"] == report["summary"]["failed"]


def test_chapters_option_needs_names(tmp_path):
    with pytest.raises(ValueError, match="at least one chapter"):
        runner.discover_chapters(FIXTURES, only=[])


@pytest.mark.chapter
def test_a_malformed_claims_file_fails_its_own_chapter_only(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    nb = project / "notebooks"
    shutil.copy(nb / "good.md", nb / "bad.md")
    (nb / "bad.claims.yml").write_text(
        (nb / "good.claims.yml")
        .read_text()
        .replace("chapter: good", "chapter: bad")
        .replace("abs: 0.01", "abs: 1e-2, abs: 2")
    )  # a duplicate key
    rep = runner.run(
        "smoke", out_dir=tmp_path / "out", root=project, chapters=["good", "bad"], progress=lambda *_: None
    )
    status = {c["chapter"]: c for c in rep["chapters"]}
    assert status["good"]["status"] == "ok" and status["bad"]["status"] == "error"
    assert "duplicate key" in status["bad"]["error"]
    assert rep["summary"]["failed"] >= 1


_HOLD_LOCK = """
import sys, time
from pathlib import Path
from bookkit.run.runner import run_lock
with run_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(600)
"""


def _holder(out: Path) -> subprocess.Popen:
    """Another process holding the runner's lock on ``out`` (until it is killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(out)], stdout=subprocess.PIPE, text=True, env=_env_with_root()
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def _env_with_root() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_two_runners_cannot_write_one_folder(tmp_path):
    out = tmp_path / "out"
    with runner.run_lock(out):
        assert (out / ".lock.pid").read_text() == str(os.getpid())
        with pytest.raises(RunLockedError, match=f"another runner \\(pid {os.getpid()}\\)"):
            with runner.run_lock(out):
                pass
    with runner.run_lock(out):  # released: the next runner takes it
        pass


@pytest.mark.slow  # a fresh Python process (imports the stack)
def test_a_lock_held_by_another_process_and_one_left_by_a_killed_runner(tmp_path):
    """Fault injection: a live runner in another process keeps the folder; once it is killed (SIGKILL: no
    clean-up runs) the next runner takes the folder without waiting."""
    out = tmp_path / "out"
    holder = _holder(out)
    try:
        with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
            with runner.run_lock(out):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (out / ".lock").exists()  # what the killed runner left behind
    with runner.run_lock(out):
        assert (out / ".lock.pid").read_text() == str(os.getpid())


def test_kernels_get_the_malloc_settings_unless_the_user_set_them(tmp_path, monkeypatch):
    """Chapter kernels keep freed memory for reuse (glibc tunables in their environment); a value already in
    the environment is left as the user set it."""
    seen = {}

    def fake_run(cmd, **kwargs):
        seen.update(kwargs["env"])
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(execute.subprocess, "run", fake_run)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    status, _, _ = execute.execute_notebook(tmp_path / "x.ipynb", tmp_path / "out" / "x.ipynb", "smoke", timeout=5)
    assert status == "ok"
    assert seen["MALLOC_MMAP_THRESHOLD_"] == execute.KERNEL_MALLOC_ENV["MALLOC_MMAP_THRESHOLD_"]
    assert seen["MALLOC_TRIM_THRESHOLD_"] == "12345"


def test_papermill_gets_typed_parameters_and_a_long_iopub_grace(tmp_path):
    """The command hands papermill's API the parameters with their JSON types (a list stays a list, None stays
    None, a numeric-looking string a string) and an IOPub grace far above papermill's 4 s, which failed a cell
    on a loaded machine. Run against a stand-in ``papermill`` module that writes what it was given."""
    (tmp_path / "papermill.py").write_text(
        "import json, pathlib\n"
        "def execute_notebook(**kw):\n"
        f"    pathlib.Path({str(tmp_path / 'got.json')!r}).write_text(json.dumps(kw))\n"
    )
    params = {"profile": "smoke", "seeds": (0, 1), "models": None, "part": "1", "seed": 0, "rate": 0.5}
    cmd = execute.papermill_command(tmp_path / "a.ipynb", tmp_path / "b.ipynb", tmp_path, 30, params)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    subprocess.run(cmd, check=True, env=env, cwd=tmp_path)
    got = json.loads((tmp_path / "got.json").read_text())
    assert got["parameters"] == {"profile": "smoke", "seeds": [0, 1], "models": None, "part": "1", "seed": 0,
                                 "rate": 0.5}  # fmt: skip
    assert got["execution_timeout"] == 30 and got["log_output"] is True and got["kernel_name"] == "python3"
    assert got["iopub_timeout"] >= 60 and got["iopub_timeout"] == execute.IOPUB_TIMEOUT


JOBLIB_CHAPTER = """
```{code-cell}
from joblib import Parallel, delayed


def silhouette_of(i):
    raise ValueError("Number of labels is 1. Valid values are 2 to n_samples - 1 (inclusive)")


Parallel(n_jobs=2)(delayed(silhouette_of)(i) for i in range(2))
```
"""


@pytest.mark.chapter
def test_the_error_of_a_failed_chapter_names_its_exception_raised_in_a_joblib_worker(tmp_path):
    """Issue 28 (16): the one-line error is the chapter's exception, not joblib's source lines."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    nb = project / "notebooks"
    (nb / "good.md").write_text((nb / "good.md").read_text() + JOBLIB_CHAPTER)
    rep = runner.run("smoke", chapters=["good"], out_dir=tmp_path / "out", root=project, progress=lambda *_: None)
    (ch,) = rep["chapters"]
    assert ch["status"] == "error"
    assert ch["error"].startswith("ValueError: Number of labels is 1. Valid values are 2"), ch["error"]
    assert "joblib" not in ch["error"].split("(log:")[0]
    assert all(c["status"] == "failed" and "Number of labels is 1" in c["detail"] for c in rep["claims"])


@pytest.mark.parametrize(
    "body,match",
    [
        # before: a TypeError from the family expansion stopped the whole run with a traceback
        (
            b"chapter: bad\ntitle: B\nclaims: []\nfamilies:\n  - {key: k, claim: c, rows: 5}\n",
            r":5: families\[0\]\.rows",
        ),
        # before: a UnicodeDecodeError with neither file nor line
        (b"chapter: bad\ntitle: caf\xe9\nclaims: []\n", r"bad\.claims\.yml: a claims file is UTF-8 text"),
        (b"chapter: good\ntitle: B\nclaims: []\n", r"bad\.claims\.yml:1: chapter: 'good', but"),
        # before: a ReaderError traceback aborted the whole check or run
        (b"chapter: bad\ntitle: B\x07\nclaims: []\n", r"bad\.claims\.yml:2: .*control character '\\x07'"),
        (b"chapter: bad\n\ntitle: B\x00\nclaims: []\n", r"bad\.claims\.yml:3: .*control character '\\x00'"),
        # before: accepted (an empty interval, a negative limit)
        (
            b"chapter: bad\ntitle: B\nclaims:\n  - key: k\n    claim: c\n    paper: {value: 2.0, source: T1}\n"
            b"    checks:\n      smoke: {property: {op: between, value: [5, 1]}}\n"
            b"      offline: {unverified: x}\n      paper: {unverified: x}\n",
            r":8: .*between: \[5(\.0)?, 1(\.0)?\] is empty",
        ),
        (
            b"chapter: bad\ntitle: B\nclaims: []\ntimeout:\n  smoke: -5\n",
            r":5: timeout\.smoke is seconds and must be > 0",
        ),
    ],
)
@pytest.mark.probe(
    "a claims file with a control character (`\\x07`, `\\x00`), a family of the wrong type, bytes that are not "
    "UTF-8, `between: [5, 1]`, a negative timeout",
    "that chapter fails with `file:line: what is wrong`; the other chapters load and run",
)
def test_a_claims_file_that_crashed_the_loader_fails_its_chapter_with_file_and_line(tmp_path, body, match):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    shutil.copy(project / "notebooks" / "good.md", project / "notebooks" / "bad.md")
    (project / "notebooks" / "bad.claims.yml").write_bytes(body)
    found = {c.chapter: c for c in runner.discover_chapters(project)}
    assert found["good"].error is None and found["good"].claims
    assert re.search(match, found["bad"].error), found["bad"].error
    assert found["bad"].error.startswith(f"claims file: {project / 'notebooks' / 'bad.claims.yml'}")


def test_the_main_job_runs_every_chapter_for_the_first_seed_then_hands_over_a_provisional_report(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    calls, seen = [], []

    def fake_execute(plan, ch, seed, dst, tag, part=None, limit=None, nice=0):
        calls.append((ch.chapter, seed))
        return runner._SeedRun("ok", None, 1.0, dst)

    def after_first_seed(rep):
        seen.append((len(calls), rep, json.loads((project / "out" / "report.json").read_text())))

    monkeypatch.setattr(runner, "_execute", fake_execute)
    lines = []
    report = runner.run(
        "smoke",
        out_dir=project / "out",
        root=project,
        progress=lines.append,
        seeds=[0, 1],
        after_first_seed=after_first_seed,
    )
    chapters = runner.chapter_names(project)
    assert len(calls) == 2 * len(chapters)
    assert {c for c, s in calls[: len(chapters)]} == set(chapters) and all(s == 0 for _, s in calls[: len(chapters)])
    assert all(s == 1 for _, s in calls[len(chapters) :])
    ((n_before, provisional, on_disk),) = seen  # called once, after the first seed's executions, before the second's
    assert n_before == len(chapters)
    assert provisional["provisional"] == {"seeds_done": [0], "seeds": [0, 1]} and provisional["seeds"] == [0]
    assert on_disk["provisional"] == provisional["provisional"]
    assert {c["chapter"] for c in provisional["chapters"]} == set(chapters)
    assert "provisional" not in report and report["seeds"] == [0, 1]
    assert "provisional" not in json.loads((project / "out" / "report.json").read_text())
    progress = [line for line in lines if line.startswith("[progress]")]
    assert progress[0].startswith(f"[progress] {calls[0][0]} seed 0: 0 min ")
    assert progress[0].endswith(f"{2 * len(chapters)} executions to go")  # the fixture has no budget: no estimate
    assert progress[-1].endswith("1 execution to go")
    # an unchanged re-run (every first-seed execution reused): no provisional report, no book in between
    monkeypatch.setattr(
        runner, "_execute", lambda plan, ch, seed, dst, *a, **k: runner._SeedRun("ok", None, 1.0, dst, reused="x")
    )
    runner.run(
        "smoke",
        out_dir=project / "out",
        root=project,
        progress=lines.append,
        seeds=[0, 1],
        after_first_seed=after_first_seed,
    )
    assert len(seen) == 1
    monkeypatch.setattr(runner, "_execute", fake_execute)
    # one lane, one seed, or no callback: the chapters run one after the other, every seed of each in turn
    calls.clear()
    runner.run("smoke", out_dir=project / "out2", root=project, progress=lines.append, seeds=[0, 1])
    assert calls[:2] == [(calls[0][0], 0), (calls[0][0], 1)]


def test_on_two_lanes_the_main_job_also_hands_over_the_first_seeds_verdicts(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    calls, seen = [], []

    def fake_execute(plan, ch, seed, dst, tag, part=None, limit=None, nice=0):
        calls.append((ch.chapter, seed))
        return runner._SeedRun("ok", None, 1.0, dst)

    monkeypatch.setattr(runner, "_execute", fake_execute)
    report = runner.run(
        "smoke", out_dir=project / "out", root=project, progress=lambda *_: None, seeds=[0, 1], jobs=2,
        after_first_seed=lambda rep: seen.append((list(calls), rep)),
    )  # fmt: skip
    chapters = set(runner.chapter_names(project))
    ((before, provisional),) = seen  # once, after every chapter's first seed (later seeds may have begun)
    assert {c for c, s in before if s == 0} == chapters
    assert provisional["provisional"] == {"seeds_done": [0], "seeds": [0, 1]} and provisional["seeds"] == [0]
    assert {c["chapter"] for c in provisional["chapters"]} == chapters
    assert sorted(calls) == sorted((c, s) for c in chapters for s in (0, 1))  # nothing executed twice
    assert "provisional" not in report and report["seeds"] == [0, 1]
