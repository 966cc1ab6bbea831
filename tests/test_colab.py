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

import nbformat
import pytest
import yaml

from replib.profiles import resolve_profile

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"].get("branch", "main")


def canonical_bootstrap(repo_url: str = REPO_URL, branch: str = BRANCH) -> str:
    """The one Colab bootstrap cell every chapter must start with (CONTRIBUTING.md, notebook convention 2)."""
    name = urlparse(repo_url).path.rstrip("/").split("/")[-1]
    where = f"/content/{name}"
    return f'''# Colab bootstrap: on Google Colab this clones the book and installs replib (keeping Colab's own
# torch and transformers); anywhere else it does nothing.
import os, subprocess, sys
if "google.colab" in sys.modules and not os.path.isdir("{where}"):
    subprocess.run(["git", "clone", "--depth", "1", "--branch", "{branch}",
                    "{repo_url}",
                    "{where}"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e",
                    "{where}[colab]"], check=True)
if "google.colab" in sys.modules:
    sys.path.insert(0, "{where}")
    os.chdir("{where}/notebooks")'''


def _first_code_cell(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code")


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_bootstrap_is_the_canonical_cell(path):
    got = _first_code_cell(path)
    assert got == canonical_bootstrap(), (
        f"{path.name}: the first code cell must be the canonical Colab bootstrap for {REPO_URL} @ {BRANCH} "
        f"(copy it from notebooks/isoscore.ipynb or tests/test_colab.py::canonical_bootstrap)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_bootstrap_is_second_cell_after_the_title(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[1].cell_type == "code"
    assert "parameters" not in nb.cells[1].metadata.get("tags", [])


def test_canonical_bootstrap_follows_the_config():
    cell = canonical_bootstrap("https://github.com/someone/other-book", "dev")
    assert '"--branch", "dev"' in cell and '"https://github.com/someone/other-book"' in cell
    assert "/content/other-book[colab]" in cell
    assert f'"--branch", "{BRANCH}"' in canonical_bootstrap() and f'"{REPO_URL}"' in canonical_bootstrap()


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
    p = subprocess.run([sys.executable, str(tmp_path / "harness.py"), str(tmp_path / "cell.py")], cwd=work, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not list(work.iterdir()), "the bootstrap created files"
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_bootstrap_is_a_no_op_off_colab(path, tmp_path):
    out = _run_bootstrap(tmp_path, _first_code_cell(path), colab=False)
    assert out == {"calls": [], "chdirs": [], "unchanged": True, "path_added": []}


def test_bootstrap_clones_and_installs_on_colab(tmp_path):
    """With a fake google.colab module: git clone of the configured branch, pip install -e .[colab]."""
    source = _first_code_cell(NOTEBOOKS[0])
    name = urlparse(REPO_URL).path.rstrip("/").split("/")[-1]
    out = _run_bootstrap(tmp_path, source, colab=True)
    clone, install = out["calls"]
    assert clone[:2] == ["git", "clone"] and clone[clone.index("--branch") + 1] == BRANCH
    assert REPO_URL in clone and clone[-1] == f"/content/{name}"
    assert install[1:5] == ["-m", "pip", "install", "-q"] and install[-1] == f"/content/{name}[colab]"
    assert out["chdirs"] == [f"/content/{name}/notebooks"] and out["path_added"] == [f"/content/{name}"]


def test_colab_extra_does_not_reinstall_torch():
    """pip install -e .[colab] must not pull torch/transformers beyond Colab's (loose floors only)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    import tomllib

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
