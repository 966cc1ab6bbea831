"""scripts/setup.sh, the set-up of the README's two commands, run against a stand-in ``.venv/bin/python`` that
records what it is asked to install (no network, no packages): PyTorch's CPU wheel unless a GPU is asked for,
WordNet and MathJax fetched, a first run that says what it downloads."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# answers "torch is missing" to setup.sh's version check and "not a CUDA build" to its build check
STAND_IN = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../../calls.log"
case "$*" in
  *"split('+')"*) exit 1 ;;
  *"torch.version.cuda is None"*) exit ${CUDA_BUILD:-1} ;;
  *"urlopen"*) exit ${INDEX_DOWN:-0} ;;
esac
exit 0
"""


def _project(tmp_path: Path, with_venv: bool = True) -> Path:
    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup.sh", proj / "scripts" / "setup.sh")
    if with_venv:
        (proj / ".venv" / "bin").mkdir(parents=True)
        (proj / ".venv" / "bin" / "python").write_text(STAND_IN)
        (proj / ".venv" / "bin" / "python").chmod(0o755)
    return proj


def _setup(proj: Path, **env) -> tuple[subprocess.CompletedProcess, list[str]]:
    clean = {k: v for k, v in os.environ.items() if k not in ("TORCH_SPEC", "TORCH_INDEX", "REPLIB_GPU")}
    r = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=proj, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )
    log = proj / "calls.log"
    return r, log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_torch_is_the_cpu_wheel_unless_a_gpu_is_asked_for(tmp_path):
    proj = _project(tmp_path)
    r, calls = _setup(proj)
    assert r.returncode == 0, r.stderr
    torch = [c for c in calls if c.startswith("-m pip install -q torch==")]
    assert torch == [f"-m pip install -q torch==2.13.0 --extra-index-url {CPU_INDEX} --timeout 20 --retries 1"]
    assert r.stderr == ""
    assert "-m pip install -q -e .[dev]" in calls
    assert "-m replib.data prefetch --dataset wordnet" in calls and "-m bookkit.book.mathjax" in calls
    assert "first run" not in r.stdout  # the venv was there

    (proj / "calls.log").unlink()
    r, calls = _setup(proj, REPLIB_GPU="1")
    assert [c for c in calls if c.startswith("-m pip install -q torch==")] == ["-m pip install -q torch==2.13.0"]

    (proj / "calls.log").unlink()
    r, calls = _setup(proj, TORCH_INDEX="https://download.pytorch.org/whl/cu126")
    assert "-m pip install -q torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126" in calls


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_a_cuda_build_from_the_fallback_is_said_and_a_first_run_says_what_it_downloads(tmp_path):
    proj = _project(tmp_path)
    r, calls = _setup(proj, INDEX_DOWN="1", CUDA_BUILD="0")  # no CPU index: PyPI's build, here a CUDA one
    assert r.returncode == 0, r.stderr
    assert [c for c in calls if c.startswith("-m pip install -q torch==")] == ["-m pip install -q torch==2.13.0"]
    assert f"{CPU_INDEX} cannot be reached: torch from PyPI" in r.stderr
    assert "warning: PyPI's CUDA build of torch was installed" in r.stderr
    fresh = _project(tmp_path / "fresh", with_venv=False)
    maker = tmp_path / "python3"  # the interpreter that creates the venv: lays the stand-in down
    maker.write_text(
        f'#!/usr/bin/env bash\nmkdir -p .venv/bin\ncat > .venv/bin/python <<"X"\n{STAND_IN}X\nchmod +x .venv/bin/python\n'
    )
    maker.chmod(0o755)
    r, calls = _setup(fresh, PYTHON=str(maker))
    assert r.returncode == 0, r.stderr
    first = [line for line in r.stdout.splitlines() if line.startswith("setup: first run")]
    assert len(first) == 1 and "MB" in first[0] and "torch" in first[0] and "WordNet" in first[0]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_a_second_run_skips_pip_until_the_project_or_the_torch_asked_for_changes(tmp_path):
    """The main job and the tests each run setup.sh first: unchanged, it installs nothing (the install is
    editable); a changed pyproject.toml or another torch installs again."""
    proj = _project(tmp_path)
    (proj / "pyproject.toml").write_text("[project]\nname = 'x'\n")

    def pip_calls(**env):
        (proj / "calls.log").unlink(missing_ok=True)
        r, calls = _setup(proj, **env)
        assert r.returncode == 0, r.stderr
        return [c for c in calls if c.startswith("-m pip")]

    assert "-m pip install -q -e .[dev]" in pip_calls()
    assert pip_calls() == []
    (proj / "pyproject.toml").write_text("[project]\nname = 'x'\ndependencies = ['numpy']\n")
    assert "-m pip install -q -e .[dev]" in pip_calls()
    assert pip_calls() == []
    assert "-m pip install -q -e .[dev]" in pip_calls(TORCH_SPEC="torch==2.12.0")
