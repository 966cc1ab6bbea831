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

from bookkit.notebooks import BOOTSTRAP_TAG, colab_bootstrap, runnable_notebook
from bookkit.project import toc_chapters
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
    assert cell.source == colab_bootstrap(REPO_URL, REF)
    assert "remove-cell" in cell.metadata["tags"], "the bootstrap never shows on the rendered page"
    assert "parameters" in nb.cells[2].metadata.get("tags", [])


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
    source = _first_code_cell(CHAPTERS[0])
    name = urlparse(REPO_URL).path.rstrip("/").split("/")[-1]
    out = _run_bootstrap(tmp_path, source, colab=True)
    clone, fetch, checkout, *install = out["calls"]
    assert clone[:2] == ["git", "clone"] and REPO_URL in clone and clone[-1] == f"/content/{name}"
    assert fetch[-2:] == ["origin", REF] and checkout[-1] == REF
    for cmd in install:
        assert cmd[1:5] == ["-m", "pip", "install", "-q"] and cmd[-1] == f"/content/{name}[colab]"
    assert out["chdirs"] == [f"/content/{name}/notebooks"] and out["path_added"] == [f"/content/{name}"]


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
