"""Colab: every chapter starts with the same bootstrap cell, pointing at the repository and branch of
_config.yml; off Colab the cell does nothing; on Colab it clones and installs; the profile is `paper`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from bookkit.notebooks import (
    BOOTSTRAP_TAG,
    FINISH_TAG,
    REHEARSAL_CSV,
    chapter_cost,
    colab_bootstrap,
    cost_comment,
    runnable_notebook,
)
from bookkit.project import toc_chapters
from bookkit.run import reuse
from bookkit.run.colab import progress_line
from replib._io import read_csv
from replib.profiles import resolve_profile

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = toc_chapters(ROOT)
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")
REF = "0123456789abcdef0123456789abcdef01234567"


def _bootstrap_cell(chapter: str, ref: str = REF):
    nb = runnable_notebook(ROOT, chapter, ref=ref)
    cells = [c for c in nb.cells if BOOTSTRAP_TAG in c.metadata.get("tags", [])]
    assert len(cells) == 1
    return nb, cells[0]


def test_there_are_chapters():
    assert CHAPTERS


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_runnable_notebook_has_the_one_bootstrap_after_the_title(chapter):
    nb, cell = _bootstrap_cell(chapter)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[1] is cell
    cost = chapter_cost(read_csv(ROOT / REHEARSAL_CSV), chapter)
    cells = sum(c.cell_type == "code" for c in nb.cells) - 1  # the bootstrap and the chapter's cells
    assert cell.source == colab_bootstrap(REPO_URL, REF, chapter, cost, cells)
    assert "remove-cell" in cell.metadata["tags"], "the bootstrap never shows on the rendered page"
    assert "parameters" in nb.cells[2].metadata.get("tags", [])
    end = nb.cells[-1]
    assert FINISH_TAG in end.metadata["tags"] and "remove-cell" in end.metadata["tags"]
    assert f"finish({chapter!r}, profile" in end.source


def test_bootstrap_follows_the_config_and_the_commit():
    cell = colab_bootstrap("https://github.com/someone/other-book", "dev")
    assert '"https://github.com/someone/other-book"' in cell and '"dev"' in cell and '"/content/other-book"' in cell
    _, c = _bootstrap_cell(CHAPTERS[0], ref=None)
    assert f'"{REPO_URL}"' in c.source and f'"{BRANCH}"' in c.source


def _first_code_cell(chapter: str) -> str:
    return _bootstrap_cell(chapter)[1].source


_HARNESS = r"""
import json, os, subprocess, sys, types
calls = []
def fake_run(cmd, *a, **k):
    calls.append(cmd)
    class P: returncode = 0
    return P()
subprocess.run = fake_run
chdirs = []
real_chdir = os.chdir
os.chdir = lambda p: chdirs.append(p)
if os.environ.get("FAKE_COLAB"):
    colab = types.ModuleType("google.colab")
    colab.drive = types.SimpleNamespace(mount=lambda p: calls.append(["mount", p]))
    sys.modules["google"] = types.ModuleType("google"); sys.modules["google.colab"] = colab
before = (os.getcwd(), list(sys.path), sorted(os.listdir(".")))
exec(compile(open(sys.argv[1]).read(), "bootstrap", "exec"), {"__name__": "__main__"})
after = (os.getcwd(), list(sys.path), sorted(os.listdir(".")))
print(json.dumps({"calls": calls, "chdirs": chdirs, "unchanged": before == after,
                  "path_added": [p for p in after[1] if p not in before[1]]}))
"""


def _run_bootstrap(tmp_path, source: str, colab: bool) -> dict:
    (tmp_path / "cell.py").write_text(source)
    (tmp_path / "harness.py").write_text(_HARNESS)
    work = tmp_path / "cwd"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "FAKE_COLAB"}
    if colab:
        env["FAKE_COLAB"] = "1"
    p = subprocess.run(
        [sys.executable, str(tmp_path / "harness.py"), str(tmp_path / "cell.py")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert not list(work.iterdir()), "the bootstrap created files"
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_bootstrap_is_a_no_op_off_colab(chapter, tmp_path):
    out = _run_bootstrap(tmp_path, _first_code_cell(chapter), colab=False)
    assert out == {"calls": [], "chdirs": [], "unchanged": True, "path_added": []}


def test_bootstrap_clones_and_installs_on_colab(tmp_path):
    """With a fake google.colab module: clone, check out the commit the notebook was built from, and
    pip install -e .[colab] (replib is not importable in the harness's fresh interpreter... unless it is:
    the install is skipped when ``importlib.util.find_spec("replib")`` finds it)."""
    base = tmp_path / "content"
    source = _first_code_cell(CHAPTERS[0]).replace('"/content/', f'"{base}/')
    name = urlparse(REPO_URL).path.rstrip("/").split("/")[-1]
    harness = tmp_path / "h"
    harness.mkdir()
    out = _run_bootstrap(harness, source, colab=True)
    clone, fetch, checkout, *install, mount = out["calls"]
    assert clone[:2] == ["git", "clone"] and REPO_URL in clone and clone[-1] == f"{base}/{name}"
    assert fetch[-2:] == ["origin", REF] and checkout[-1] == REF
    for cmd in install:
        assert cmd[1:5] == ["-m", "pip", "install", "-q"] and cmd[-1] == f"{base}/{name}[colab]"
    assert mount == ["mount", f"{base}/drive"], "Drive is mounted for the caches and results"
    assert out["chdirs"] == [f"{base}/{name}/notebooks"] and out["path_added"] == [f"{base}/{name}"]


def test_bootstrap_recovers_from_an_interrupted_clone(tmp_path):
    """A clone folder without .git (what an interrupted clone leaves) is removed and cloned again."""
    name = urlparse(REPO_URL).path.rstrip("/").split("/")[-1]
    base = tmp_path / "content"
    partial = base / name
    (partial / "replib").mkdir(parents=True)  # half a checkout, no .git
    source = _first_code_cell(CHAPTERS[0]).replace('"/content/', f'"{base}/')
    harness = tmp_path / "h"
    harness.mkdir()
    out = _run_bootstrap(harness, source, colab=True)
    assert not partial.exists(), "the interrupted clone was not removed"
    clone, fetch, checkout, *install = out["calls"]
    assert clone[:2] == ["git", "clone"] and clone[-1] == str(partial)
    assert checkout[-1] == REF


def test_colab_extra_does_not_reinstall_torch():
    """pip install -e .[colab] must not pull torch/transformers beyond Colab's (loose floors only)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10 (the declared floor): pytest's own tomli
        import tomli as tomllib

    proj = tomllib.loads(pyproject)["project"]
    assert "colab" in proj["optional-dependencies"]
    for dep in proj["dependencies"]:
        if dep.startswith(("torch", "transformers")):
            assert "==" not in dep and "<" not in dep, dep


def test_profile_is_paper_on_colab(monkeypatch):
    monkeypatch.delenv("REPLIB_PROFILE", raising=False)
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert resolve_profile(None) == "paper"
    monkeypatch.setenv("REPLIB_PROFILE", "smoke")
    assert resolve_profile(None) == "smoke"
    assert resolve_profile("offline") == "offline"


def test_profile_is_offline_elsewhere(monkeypatch):
    monkeypatch.delenv("REPLIB_PROFILE", raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert resolve_profile(None) == "offline"
    with pytest.raises(ValueError, match="unknown profile"):
        resolve_profile("fast")


def test_paper_profile_without_gpu_warns(monkeypatch):
    monkeypatch.delenv("REPLIB_PROFILE", raising=False)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr("replib.profiles.torch_device", lambda: "cpu")
    with pytest.warns(UserWarning, match="GPU"):
        resolve_profile(None)


# ------------------------------------------------------------------ "Run all" on Colab ends in the book
FIXTURE = ROOT / "tests" / "fixtures" / "runner"

_RUN_ALL = r"""
import json, os, shutil, subprocess, sys, types
from IPython.core.interactiveshell import InteractiveShell
fixture, cells_file = sys.argv[1], sys.argv[2]
calls = []
real_run = subprocess.run
def fake_run(cmd, *a, **k):  # the clone is a copy of the fixture project; fetch, checkout and pip do nothing
    if not ({"clone", "fetch", "checkout"} & set(cmd) or cmd[1:3] == ["-m", "pip"]):
        return real_run(cmd, *a, **k)
    calls.append(cmd)
    if cmd[:2] == ["git", "clone"]:
        shutil.copytree(fixture, cmd[-1])
        os.mkdir(os.path.join(cmd[-1], ".git"))  # no commit: the report's git_commit is None
    class P: returncode = 0
    return P()
subprocess.run = fake_run
colab = types.ModuleType("google.colab")
colab.drive = types.SimpleNamespace(mount=lambda p: (calls.append(["mount", p]), os.makedirs(p, exist_ok=True)))
sys.modules["google"] = types.ModuleType("google"); sys.modules["google.colab"] = colab
shell = InteractiveShell.instance()
for source in json.load(open(cells_file)):  # Runtime > Run all
    result = shell.run_cell(source)
    if not result.success:
        raise SystemExit(f"cell failed: {result.error_in_exec or result.error_before_exec}")
print("CALLS " + json.dumps(calls))
"""


def _run_all_on_fake_colab(tmp_path, runs: int = 1, part: str | None = None) -> tuple[Path, str]:
    """Every code cell of the fixture chapter's runnable notebook, in order, in one IPython shell with a fake
    ``google.colab`` (Drive mounted in ``tmp_path``); ``runs`` times, as after a disconnect. Returns the Drive
    folder and the output."""
    base = tmp_path / "content"
    nb = runnable_notebook(FIXTURE, "good", ref=REF)
    cells = [c.source.replace('"/content/', f'"{base}/') for c in nb.cells if c.cell_type == "code"]
    cells = [c.replace("profile = None", 'profile = "smoke"') for c in cells]  # the reader picks smoke
    if part:
        cells = [c.replace('profile = "smoke"', f'profile = "smoke"\npart = {part!r}') for c in cells]
    (tmp_path / "cells.json").write_text(json.dumps(cells))
    (tmp_path / "run_all.py").write_text(_RUN_ALL)
    env = {**os.environ, "REPLIB_PROFILE": "", "REPLIB_CACHE_DIR": "", "HF_HOME": ""}
    env = {k: v for k, v in env.items() if v != ""}
    out = ""
    for _ in range(runs):
        # the timeout guards against a hang, it checks no speed (under a loaded CI a run took over 120 s)
        p = subprocess.run(
            [sys.executable, str(tmp_path / "run_all.py"), str(FIXTURE), str(tmp_path / "cells.json")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        out += p.stdout
    return base / "drive", out


def test_run_all_on_colab_writes_a_report_that_merges_into_the_book(tmp_path):
    drive, out = _run_all_on_fake_colab(tmp_path)
    home = drive / "MyDrive" / "replib"
    calls = json.loads(out.split("CALLS ")[-1].splitlines()[0])
    assert ["mount", str(drive)] in calls, "Drive is mounted without a hand-written cell"
    assert f"caches on Drive: {home / 'cache'}" in out
    assert "[replib] 3/6 cells" in out and "[replib] 6/6 cells" in out and "7/6" not in out, "progress"
    report_path = home / "runs" / "smoke" / "good.report.json"
    rep = json.loads(report_path.read_text())
    (entry,) = rep["chapters"]
    assert entry["chapter"] == "good" and entry["status"] == "ok" and entry["where"] == "colab"
    want = reuse.fingerprint(FIXTURE, "good", {"profile": "smoke"})
    assert entry["fingerprint"]["fingerprint"] == want["fingerprint"], "the execution's fingerprint"
    assert [m["name"] for m in entry["models"]] == ["tiny-bert"]
    status = {c["key"]: c["status"] for c in rep["claims"]}
    assert status == {"answer": "reproduced", "flag": "consistent"}, "claims checked on the kernel's records"

    # an earlier failed run of the chapter: the Colab run, later, replaces it in the merged report
    earlier = {
        "profile": "smoke", "started": "2000-01-01T00:00:00+00:00", "environment": {},
        "chapters": [{"chapter": "good", "title": "good", "status": "error", "error": "killed", "seconds": 1.0}],
        "claims": [],
    }  # fmt: skip
    (tmp_path / "earlier.json").write_text(json.dumps(earlier))
    merged, page = tmp_path / "merged.json", tmp_path / "validation.md"
    cmd = [sys.executable, "-m", "replib", "report", "merge", str(tmp_path / "earlier.json"), str(report_path)]
    p = subprocess.run([*cmd, "-o", str(merged)], cwd=FIXTURE, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    m = json.loads(merged.read_text())
    assert [c["status"] for c in m["chapters"]] == ["ok"] and m["summary"]["failed"] == 0
    cmd = [sys.executable, "-m", "replib", "report", "dashboard", str(merged), "-o", str(page)]
    p = subprocess.run(cmd, cwd=FIXTURE, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "answer" in page.read_text() and "reproduced" in page.read_text()


def test_run_all_again_after_a_disconnect_reuses_the_clone_and_the_drive(tmp_path):
    drive, out = _run_all_on_fake_colab(tmp_path, runs=2)
    clones = [c for c in json.loads(out.split("CALLS ")[-1].splitlines()[0]) if c[:2] == ["git", "clone"]]
    assert clones == [], "the second run reuses the clone"
    assert len((drive / "MyDrive" / "replib" / "runs" / "smoke").glob("good.report.json").__next__().read_text()) > 0


def test_the_report_cell_does_nothing_off_colab(tmp_path):
    nb = runnable_notebook(FIXTURE, "good", ref=REF)
    out = _run_bootstrap(tmp_path, "profile = None\n" + nb.cells[-1].source, colab=False)
    assert out == {"calls": [], "chdirs": [], "unchanged": True, "path_added": []}


def test_progress_line_counts_down_the_rehearsed_time():
    assert (
        progress_line(3, 6, 600, 1.0) == "[replib] 3/6 cells, 10 min so far; about 50 min left (1 T4-hours rehearsed)"
    )
    assert progress_line(6, 6, 7200, 1.0).endswith("over the estimate (1 T4-hours rehearsed)")
    assert progress_line(1, 6, 30, None) == "[replib] 1/6 cells, 0 min so far"


def test_the_first_cell_says_what_the_chapter_costs():
    rows = [
        {"chapter": "a", "part": "x", "t4_hours_estimate": "0.5", "peak_rss_gb": "3", "cache_gb": "1"},
        {"chapter": "a", "part": "y", "t4_hours_estimate": "1.0", "peak_rss_gb": "5", "cache_gb": "2"},
        {"chapter": "b", "part": "x", "t4_hours_estimate": "9", "peak_rss_gb": "9", "cache_gb": "9"},
        {"chapter": "b", "part": "all", "t4_hours_estimate": "2", "peak_rss_gb": "7", "cache_gb": "4",
         "l4_hours_estimate": "1.1"},
    ]  # fmt: skip
    a, b = chapter_cost(rows, "a"), chapter_cost(rows, "b")
    assert a == {"t4_hours": 1.5, "peak_rss_gb": 5.0, "cache_gb": 3.0, "parts": 2}
    assert "In 2 parts of one session each" in cost_comment(a)
    assert b == {"t4_hours": 2.0, "peak_rss_gb": 7.0, "cache_gb": 4.0, "parts": 0, "l4_hours": 1.1}
    assert chapter_cost(rows, "c") is None and "not rehearsed" in cost_comment(None)
    assert cost_comment(b).endswith(
        "about 2 hours on a Colab T4, about 1.1 hours on an L4; 7.0 GB of RAM, 4.0 GB on Drive."
    )
    for chapter in CHAPTERS:  # the book's chapters: the cost of the rehearsal in the first cell
        cost = chapter_cost(read_csv(ROOT / REHEARSAL_CSV), chapter)
        assert cost_comment(cost) in _first_code_cell(chapter)


def test_a_part_run_on_colab_says_the_runner_merges_parts(tmp_path):
    drive, out = _run_all_on_fake_colab(tmp_path, part="first")
    assert "part 'first' done" in out and "--part first" in out
    assert not (drive / "MyDrive" / "replib" / "runs" / "smoke").exists(), "no report of one part's claims"
