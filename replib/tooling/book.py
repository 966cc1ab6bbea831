"""Build the book from executed notebooks (Jupyter Book 1, execution off).

Each chapter's source is one MyST Markdown notebook (``notebooks/<chapter>.md``). The book is built
from a staging copy of the book tree in which every chapter is the notebook the runner executed and
checked (``notebooks/<chapter>.ipynb``, papermill's injected cell removed from the page), and the
validation page is generated from the runner's report, so the rendered book shows exactly the numbers
the checker validated.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from .notebooks import for_the_page
from .project import chapter_source, find_root, toc_chapters
from .report import dashboard_markdown

VALIDATION_PAGE = "book/validation.md"


def validation_markdown(reports: list[dict], root: Path | None = None) -> str:
    """The validation dashboard page: a chapter x status matrix per profile, what is and is not
    reproduced, the environment, and every claim of every chapter (see
    :func:`replib.tooling.report.dashboard_markdown`)."""
    root = Path(root or find_root())
    names = {c["chapter"] for r in reports for c in r.get("chapters", [])}
    links = {n: f"../notebooks/{n}.ipynb" for n in names if chapter_source(root, n).exists()}
    return dashboard_markdown(reports, chapter_links=links)


def load_reports(profiles: list[str], runs_dir: Path) -> list[dict]:
    runs_dir = Path(runs_dir)
    reps = []
    for p in profiles:
        f = runs_dir / p / "report.json"
        if f.exists():
            reps.append(json.loads(f.read_text()))
    return reps


def stage(profile: str, stage_dir: Path | None = None, runs_dir: Path | None = None,
          report_profiles: list[str] | None = None, root: Path | None = None) -> Path:
    """Copy the book tree into ``stage_dir`` with executed notebooks and the generated validation page."""
    root = Path(root or find_root())
    runs_dir = Path(runs_dir or root / "build" / "runs")
    stage_dir = Path(stage_dir or root / "build" / "book")
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / f, stage_dir / f)
    shutil.copytree(root / "book", stage_dir / "book")
    (stage_dir / "notebooks").mkdir()
    executed = runs_dir / profile / "notebooks"
    missing = []
    for chapter in toc_chapters(root):
        ran = executed / f"{chapter}.ipynb"
        if not ran.exists():
            missing.append(ran.name)
            continue
        nb = for_the_page(nbformat.read(str(ran), as_version=4))
        nbformat.write(nb, str(stage_dir / "notebooks" / ran.name))
    if missing:
        raise FileNotFoundError(f"no executed notebook for {missing} in {executed}: run "
                                f"`python -m replib run --profile {profile}` first")
    # plotly.js served locally (the book must render without internet)
    static = stage_dir / "book" / "_static"
    static.mkdir(exist_ok=True)
    try:
        import plotly

        js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        shutil.copy2(js, static / "plotly.min.js")
    except (ImportError, FileNotFoundError):
        (static / "plotly.min.js").write_text("/* plotly not installed at build time */\n")
    reports = load_reports(report_profiles or [profile], runs_dir)
    (stage_dir / VALIDATION_PAGE).write_text(validation_markdown(reports, root))
    return stage_dir


def build(profile: str, strict: bool = True, stage_dir: Path | None = None, runs_dir: Path | None = None,
          report_profiles: list[str] | None = None, root: Path | None = None) -> Path:
    """Stage and build the HTML book; returns the folder holding ``index.html``."""
    stage_dir = stage(profile, stage_dir, runs_dir, report_profiles, root)
    exe = Path(sys.executable).parent / "jupyter-book"
    exe = str(exe) if exe.exists() else shutil.which("jupyter-book")
    if not exe:
        raise RuntimeError("jupyter-book is not installed: pip install 'jupyter-book<2' (or '.[book]')")
    cmd = [exe, "build", str(stage_dir), "--builder", "html", "--all"]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, cwd=stage_dir)
    if proc.returncode != 0:
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}); see the log above")
    return stage_dir / "_build" / "html"
