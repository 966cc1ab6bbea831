"""CONTRIBUTING's "Adding a chapter", followed in a copy of the project: a throwaway chapter written in exactly the
files the steps name, then run in the smoke profile through the runner (so the steps stay true)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAME = "scaffold_demo"

METHOD = '''"""A throwaway chapter: IsoScore of an isotropic Gaussian."""

import numpy as np

from ...chapter import Chapter
from ...metrics import isoscore
from ...parts import Budget, rest_part
from ...profiles import PROFILES


def gaussian_isoscore(n_samples: int, n_features: int, seed: int) -> float:
    """IsoScore of ``n_samples`` draws of a standard normal in ``n_features`` dimensions."""
    return isoscore(np.random.default_rng(seed).standard_normal((n_samples, n_features)))


CHAPTER = Chapter(
    "NAME",
    papers=("rudman2022isoscore",),
    table={profile: {"models": [], "n_samples": 2000} for profile in PROFILES},
    schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["models", "n_samples"],
        "properties": {"models": {"type": "array"}, "n_samples": {"type": "integer", "minimum": 2}},
    },
    steps=(),
    parts=lambda profile, params: [rest_part(CHAPTER.name, [], Budget(t4_hours=0.01, peak_rss_gb=1.0, cache_gb=0.0))],
)
'''

NOTEBOOK = """---
jupytext:
  text_representation: {extension: .md, format_name: myst, format_version: 0.13}
kernelspec: {display_name: Python 3, language: python, name: python3}
---
# A throwaway chapter

*Reproducing nothing:* the IsoScore {cite}`rudman2022isoscore` of an isotropic Gaussian.

```{code-cell}
:tags: [parameters, hide-cell]

profile = None
seed = 0
models = None
part = None
```

```{code-cell}
:tags: [hide-cell]

from replib import record_all
from replib.config import chapter_config
from replib.methods import NAME as demo
from bookkit.run.parts import select_cells

cfg = chapter_config("NAME", profile, models=models, seed=seed, part=part)
select_cells(cfg.part)
```

```{code-cell}
record_all({"gaussian_isoscore": demo.gaussian_isoscore(cfg.n_samples, 8, cfg.seed)})
```

## Deviations from the paper

None: nothing of the paper is reproduced.
"""

CLAIMS = """chapter: NAME
title: "A throwaway chapter"
timeout: {smoke: 600, offline: 600, paper: 600}
claims:
  - key: gaussian_isoscore
    claim: "An isotropic Gaussian scores near 1"
    sanity: true
    paper: {value: null, source: "IsoScore's definition"}
    checks:
      smoke: {property: {op: gt, value: 0.9}}
      offline: {property: {op: gt, value: 0.9}}
      paper: {property: {op: gt, value: 0.9}}
"""

TEST = """from replib.methods import NAME as demo


def test_a_gaussian_is_isotropic():
    assert demo.gaussian_isoscore(2000, 8, 0) > 0.9
"""

FILES = {
    f"replib/methods/{NAME}/__init__.py": METHOD,
    f"notebooks/{NAME}.md": NOTEBOOK,
    f"notebooks/{NAME}.claims.yml": CLAIMS,
    f"tests/test_{NAME}.py": TEST,
}


def _steps_files() -> set[str]:
    """The files CONTRIBUTING's "Adding a chapter" names (``<name>`` spelled as this test's chapter)."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text.split("## Adding a chapter", 1)[1].split("\n## ", 1)[0]
    steps = re.findall(r"^\d\. `([^`]+)`", section, re.M)
    return {s.replace("<name>", NAME) for s in steps}


def _add_to_toc(toc: str) -> str:
    """``_toc.yml`` with the chapter after the last chapter and its validation page after the last one."""
    for prefix in ("notebooks/", "book/validation/"):
        last = [line for line in toc.splitlines() if line.strip().startswith(f"- file: {prefix}")][-1]
        toc = toc.replace(last + "\n", f"{last}\n{last.split(prefix)[0]}{prefix}{NAME}\n", 1)
    return toc


def test_the_steps_name_at_most_five_files_and_this_test_writes_them():
    assert _steps_files() == {*FILES, "_toc.yml"} and len(_steps_files()) <= 5


@pytest.mark.chapter
def test_a_chapter_added_by_the_steps_runs_in_smoke(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", "build", "_build", "__pycache__"))
    for path, text in FILES.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text.replace("NAME", NAME))
    (project / "_toc.yml").write_text(_add_to_toc((project / "_toc.yml").read_text()))
    env = {**os.environ, "PYTHONPATH": str(project), "REPLIB_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("REPLIB_BOOK_ROOT", None)
    proc = subprocess.run(
        [sys.executable, "-m", "replib", "run", NAME, "--profile", "smoke"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((project / "build" / "runs" / "smoke" / "report.json").read_text())
    (entry,) = [c for c in report["chapters"] if c["chapter"] == NAME]
    assert entry["status"] == "ok"
    assert [(c["key"], c["status"]) for c in report["claims"] if c["chapter"] == NAME] == [
        ("gaussian_isoscore", "sanity")  # a sanity check that holds
    ]
