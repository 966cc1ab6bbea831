"""The command line's user errors (issue 28, 14): each class of bad input prints one line (what, where, what to
do) on stderr and exits 2, never a traceback; ``--debug`` shows the traceback. A failed claim exits 1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from bookkit import cli
from bookkit.errors import RunLockedError
from bookkit.run import runner
from replib.record import read_records

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "runner"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(FIXTURES, root)
    return root


def _main(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "argv,match",
    [
        (["run", "--profile", "gpu"], "invalid choice: 'gpu'"),
        (["run", "--seeds", "x"], "invalid int value: 'x'"),
        (["run", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["fly"], "invalid choice: 'fly'"),
        ([], "the following arguments are required"),
        # before: the chapters ran to 'exceeded the chapter limit of -600 s', the card to numpy's 'negative dimensions'
        (["run", "--timeout-scale", "-1"], "argument --timeout-scale: must be greater than 0, got '-1'"),
        (["all", "--timeout-scale", "nan"], "argument --timeout-scale: must be greater than 0, got 'nan'"),
        (["card", "tiny-bert", "--max-rows", "-3"], "argument --max-rows: must be greater than 0, got '-3'"),
        (["card", "tiny-bert", "--n-lines", "0"], "argument --n-lines: must be greater than 0, got '0'"),
        (["bench", "--repeat", "x"], "argument --repeat: invalid int value: 'x'"),
    ],
)
@pytest.mark.probe(
    "user errors at the command line: an unknown command, option or profile, a value of the wrong type",
    "one line (what, where, what to do), exit 2; the traceback only with `--debug`",
)
def test_a_bad_argument_is_one_line_with_where_to_look(capsys, argv, match):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert match in line and "--help" in line


@pytest.mark.probe(
    "a seed outside 0 .. 2³² − 1; a count, size, scale or time that is not > 0 (`--timeout-scale "
    "-1`, `card --max-rows 0`)",
    "one line, exit 2, before anything runs",
)
def test_unknown_chapter_and_repeated_seeds(project, capsys):
    code, _, err = _main(capsys, "--root", project, "run", "--profile", "smoke", "--chapters", "nope")
    assert code == 2 and "unknown chapter(s) ['nope']; known: ['good'" in _one_error_line(err)
    code, _, err = _main(capsys, "--root", project, "check", "--chapters", "good", "--seeds", "1", "1")
    assert code == 2 and "distinct seeds" in _one_error_line(err)
    for seed in ("-1", str(2**32)):  # before: the chapter ran into numpy's error on every claim
        code, _, err = _main(
            capsys, "--root", project, "run", "--profile", "smoke", "--chapters", "good", "--seeds", seed
        )
        assert code == 2 and f"from 0 to 2**32 - 1 (numpy's and scikit-learn's range), got [{seed}]" in _one_error_line(
            err
        )
        assert not (project / "build").exists()  # refused before anything ran
    code, _, err = _main(capsys, "--root", project, "run", "--profile", "smoke", "--rehearsal")
    assert code == 2 and "--profile paper" in _one_error_line(err)


def test_not_in_a_project(tmp_path, capsys):
    code, _, err = _main(capsys, "--root", tmp_path / "nowhere", "check")
    line = _one_error_line(err)
    assert code == 2 and "no book project" in line and "REPLIB_BOOK_ROOT" in line


def test_a_model_folder_that_does_not_exist(project, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _main(capsys, "--root", project, "run", "--profile", "smoke", "--model", "./no-such-model")
    line = _one_error_line(err)
    assert code == 2 and "./no-such-model" in line and str(tmp_path / "no-such-model") in line
    assert not (project / "build").exists()  # refused before anything ran


@pytest.mark.parametrize("spec", ["random:llama", "trained:dna", "tiny-nope"])
def test_a_model_spec_of_no_grammar_is_one_error_at_the_edge(project, capsys, spec):
    code, _, err = _main(capsys, "--root", project, "run", "--profile", "smoke", "--model", spec)
    assert code == 2 and "unknown" in _one_error_line(err) and spec in _one_error_line(err)
    assert not (project / "build").exists()  # refused before anything ran


def test_a_malformed_claims_file_is_named_with_its_line(project, capsys):
    bad = project / "notebooks" / "good.claims.yml"
    bad.write_text(bad.read_text().replace('op: "true"', 'op: "maybe"'))
    code, out, err = _main(capsys, "--root", project, "check", "--profile", "smoke", "--chapters", "good")
    assert code == 1 and "Traceback" not in out + err
    at = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "maybe" in text)
    line = next(x for x in out.splitlines() if x.startswith("chapter good: error: claims file:"))
    assert f"{bad}:{at}: claims[1].checks.smoke.property.op: 'maybe' is not one of" in line


def test_a_malformed_table_of_contents_is_named_with_its_line(project, capsys):
    (project / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: [notebooks/good\n")
    code, _, err = _main(capsys, "--root", project, "check", "--profile", "smoke")
    line = _one_error_line(err)
    assert code == 2 and f"{project / '_toc.yml'}:5: not valid YAML" in line


def test_an_output_that_cannot_be_written(tmp_path, capsys):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"profile": "smoke", "chapters": [], "claims": []}))
    (tmp_path / "a-file").write_text("")
    code, _, err = _main(capsys, "report", "merge", report, "-o", tmp_path / "a-file" / "merged.json")
    line = _one_error_line(err)
    assert code == 2 and str(tmp_path / "a-file") in line


def test_a_report_that_is_not_one(tmp_path, capsys):
    (tmp_path / "x.json").write_text("[1, 2]")
    code, _, err = _main(capsys, "report", "drift", tmp_path / "x.json", tmp_path / "missing.json")
    assert code == 2 and "x.json: not a runner report" in _one_error_line(err)


def test_another_runner_on_the_output_folder(project, capsys):
    with runner.run_lock(project / "build" / "runs" / "smoke"):
        code, _, err = _main(capsys, "--root", project, "check", "--profile", "smoke")
    line = _one_error_line(err)
    assert code == 2 and f"another runner (pid {os.getpid()})" in line and "wait for it" in line


@pytest.mark.slow  # imports the card (torch, transformers) and builds a tiny model
def test_missing_data_mirror_and_a_model_not_cached_offline(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("REPLIB_DATA_MIRROR", str(tmp_path / "empty-mirror"))
    monkeypatch.setenv("REPLIB_DATA_OFFLINE", "1")
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    code, _, err = _main(capsys, "card", "tiny-bert", "-o", tmp_path / "card")
    line = _one_error_line(err)
    assert code == 2 and "REPLIB_DATA" in line, line
    code, _, err = _main(capsys, "card", "someone/not-cached", "-o", tmp_path / "card2")
    line = _one_error_line(err)
    assert code == 2 and "someone/not-cached" in line, line


def test_debug_shows_the_traceback_and_ctrl_c_exits_130(project, capsys, monkeypatch):
    code, _, err = _main(capsys, "--root", project, "check", "--chapters", "nope", "--debug")
    assert code == 2 and "Traceback (most recent call last)" in err and "unknown chapter" in err.splitlines()[-1]

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "check", interrupted)
    code, _, err = _main(capsys, "--root", project, "check")
    assert code == 130 and err.strip() == "interrupted"


def test_one_line_of_an_operating_system_error():
    err = PermissionError(13, "Permission denied", "/srv/book/build")
    assert cli.one_line(err) == (
        "Permission denied: /srv/book/build: choose a folder you can write to (or change its permissions)"
    )
    assert cli.one_line(ValueError("two\n  lines")) == "two lines"
    assert cli.one_line(RunLockedError()) == "RunLockedError"


@pytest.mark.chapter
@pytest.mark.probe(
    "a relative `--model ./x`",
    "resolved from the working directory where it was typed",
)
def test_a_relative_model_folder_reaches_the_chapter_as_an_absolute_path(project, tmp_path, monkeypatch):
    """Issue 28 (10): ``--model ./x`` is resolved from the caller's directory at the command line, not from the
    folder the chapter runs in."""
    nb = project / "notebooks" / "good.md"
    text = nb.read_text().replace("profile = None\n", "profile = None\nmodels = None\n", 1)
    nb.write_text(text + '\n```{code-cell}\nrecord("models_seen", models)\n```\n')
    caller = tmp_path / "caller"
    (caller / "my-model").mkdir(parents=True)
    (caller / "my-model" / "config.json").write_text("{}")
    monkeypatch.chdir(caller)
    code = cli.main(
        ["--root", str(project), "run", "--profile", "smoke", "--chapters", "good", "--model", "./my-model"]
    )
    executed = project / "build" / "runs" / "smoke" / "notebooks" / "good.ipynb"
    records = read_records(nbformat.read(str(executed), as_version=4))
    assert records["models_seen"] == [str(caller / "my-model")]
    assert code == 0  # the property claim holds; the tolerance claim is bound to the paper's models (unverified)


@pytest.mark.slow  # a fresh Python process (imports the stack)
def test_python_m_replib_prints_one_line(project):
    """The real entry point (a fresh process), not only :func:`bookkit.cli.main`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, "-m", "replib", "--root", str(project), "check", "--chapters", "nope"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2 and "unknown chapter" in _one_error_line(proc.stderr)


def test_the_main_job_computes_the_atlas_after_the_provisional_book_and_runs_two_lanes(project, monkeypatch, capsys):
    """``all``: two lanes by default (one core: one), the provisional book first, then the atlas on that lane
    while the later seeds run, then the atlas again (its cards resumed) and the final book."""
    from bookkit.book import atlas, book
    from bookkit.run.lanes import lane_threads

    calls, seen = [], {}

    def fake_run(**kw):
        seen["jobs"] = kw["jobs"]
        kw["after_first_seed"]({"seeds": [0, 1], "provisional": {"seeds": [0, 1], "seeds_done": [0]}})
        calls.append("seed 1")
        return {"summary": {"failed": 0, "chapter_failures": 0}, "claims": []}

    monkeypatch.setattr(runner, "run", fake_run)
    monkeypatch.setattr("bookkit.run.run_report.format_table", lambda rep: "")
    monkeypatch.setattr(book, "build", lambda profile, **kw: calls.append("book") or project / "html")
    threads = []
    monkeypatch.setattr(
        atlas,
        "for_book",
        lambda profile, root, threads=None, _seen=threads: calls.append("atlas") or _seen.append(threads),
    )
    code, out, _ = _main(capsys, "--root", project, "all", "--seeds", "0", "1")
    assert code == 0
    assert calls == ["book", "atlas", "seed 1", "atlas", "book"]
    assert seen["jobs"] == min(2, os.cpu_count() or 1)
    # beside the later seeds' kernels the atlas gets its lane's share of the cores; at the end, every core
    assert threads == [lane_threads(seen["jobs"]) if seen["jobs"] > 1 else None, None]
    assert "min" in out.split("book built after seed 0 of 0 1, ")[1].split("after the chapters started")[0]
