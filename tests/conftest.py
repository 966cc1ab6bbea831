"""Shared fixtures. ``smoke_book``: the HTML book built from the smoke profile, built once per session.

The browser test and any other test of the rendered book use it. If ``build/book/_build/html`` is
missing, or older than its sources (chapters, claims, book pages, _toc/_config, the book builder), the
fixture runs ``python -m replib run --profile smoke`` and ``python -m replib book --profile smoke`` itself.
Set ``REPLIB_REBUILD_BOOK=1`` to force the rebuild, ``REPLIB_SKIP_SMOKE=1`` to skip these tests.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BuiltBook:
    html: Path        # folder holding index.html
    executed: Path    # executed notebooks of the smoke run
    report: Path      # the runner's report.json
    rebuilt: bool     # True when this session built it


def _newest(paths) -> float:
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "replib", *cmd], cwd=ROOT, env=env, capture_output=True,
                          text=True)


def book_is_stale(html: Path, runs: Path) -> tuple[bool, bool]:
    """(run needed, book build needed) from modification times."""
    chapters = (list((ROOT / "notebooks").glob("*.ipynb")) + list((ROOT / "notebooks").glob("*.claims.yml"))
                + list((ROOT / "replib").rglob("*.py")))  # a changed formula re-runs the chapters
    executed = list((runs / "notebooks").glob("*.ipynb"))
    run_needed = (not (runs / "report.json").exists()
                  or {p.name for p in executed} < {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
                  or _newest(chapters) > (runs / "report.json").stat().st_mtime)
    sources = chapters + list((ROOT / "book").rglob("*")) + [ROOT / "_toc.yml", ROOT / "_config.yml",
                                                             ROOT / "replib" / "book.py", ROOT / "replib" / "report.py"]
    index = html / "index.html"
    book_needed = run_needed or not index.exists() or _newest(sources + [runs / "report.json"]) > index.stat().st_mtime
    return run_needed, book_needed


@pytest.fixture(scope="session")
def smoke_book() -> BuiltBook:
    if os.environ.get("REPLIB_SKIP_SMOKE"):
        pytest.skip("REPLIB_SKIP_SMOKE is set")
    html, runs = ROOT / "build" / "book" / "_build" / "html", ROOT / "build" / "runs" / "smoke"
    run_needed, book_needed = book_is_stale(html, runs)
    if os.environ.get("REPLIB_REBUILD_BOOK"):
        run_needed = book_needed = True
    if run_needed:
        proc = _run(["run", "--profile", "smoke"])
        # a failing claim still leaves executed notebooks: the book is built and shows the failure
        if not (runs / "report.json").exists():
            pytest.fail("smoke run wrote no report:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
    if book_needed:
        proc = _run(["book", "--profile", "smoke"])
        if proc.returncode != 0:
            pytest.fail("book build failed:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
    return BuiltBook(html=html, executed=runs / "notebooks", report=runs / "report.json", rebuilt=book_needed)
