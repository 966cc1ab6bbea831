"""Shared fixtures. ``smoke_book``: the HTML book built from the smoke profile, built once per session.

The browser test and any other test of the rendered book use it. The smoke run is keyed by a content
hash of its inputs (chapters, claims files, the ``replib`` code) and the book by the hash of those plus
the book pages and ``_toc``/``_config``: when a key differs from the one stored beside the last build,
the fixture runs ``python -m replib run --profile smoke`` and/or ``python -m replib book --profile smoke``.
Set ``REPLIB_REBUILD_BOOK=1`` to force the rebuild, ``REPLIB_SKIP_SMOKE=1`` to skip these tests.

``rng``: a fresh ``numpy.random.Generator`` per test, seeded from the test's name, so a test's random data
do not depend on which other tests ran before it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BuiltBook:
    html: Path  # folder holding index.html
    executed: Path  # executed notebooks of the smoke run
    report: Path  # the runner's report.json
    rebuilt: bool  # True when this session built it


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "replib", "--root", str(ROOT), *cmd], cwd=ROOT, env=env, capture_output=True, text=True
    )


def content_key(paths) -> str:
    """sha256 over the relative paths and contents of ``paths`` (order-independent)."""
    h = hashlib.sha256()
    for p in sorted({Path(p) for p in paths if Path(p).is_file()}):
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def input_keys() -> tuple[str, str]:
    """(key of the smoke run's inputs, key of the book's inputs)."""
    run_inputs = [
        *(ROOT / "notebooks").glob("*.md"),
        *(ROOT / "notebooks").glob("*.claims.yml"),
        *(ROOT / "replib").rglob("*.py"),
        *(ROOT / "data").rglob("*.csv"),
    ]
    book_inputs = [*run_inputs, *(ROOT / "book").rglob("*"), ROOT / "_toc.yml", ROOT / "_config.yml"]
    return content_key(run_inputs), content_key(book_inputs)


def _stored(path: Path) -> str | None:
    return path.read_text().strip() if path.exists() else None


def pytest_collection_modifyitems(config, items):
    """A test of the smoke book runs every chapter (the first time): it is a ``chapter`` test, left out of the
    quick loop (``scripts/quick.sh``)."""
    for item in items:
        if "smoke_book" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.chapter)


@pytest.fixture(scope="session")
def smoke_book() -> BuiltBook:
    if os.environ.get("REPLIB_SKIP_SMOKE"):
        pytest.skip("REPLIB_SKIP_SMOKE is set")
    html, runs = ROOT / "build" / "book" / "_build" / "html", ROOT / "build" / "runs" / "smoke"
    run_key, book_key = input_keys()
    run_stamp, book_stamp = runs / ".inputs-sha256", ROOT / "build" / "book-inputs-sha256"
    run_needed = _stored(run_stamp) != run_key or not (runs / "report.json").exists()
    book_needed = run_needed or _stored(book_stamp) != book_key or not (html / "index.html").exists()
    if os.environ.get("REPLIB_REBUILD_BOOK"):
        run_needed = book_needed = True
    if run_needed:
        proc = _run(["run", "--profile", "smoke"])
        # a failing claim still leaves executed notebooks: the book is built and shows the failure
        if not (runs / "report.json").exists():
            pytest.fail("smoke run wrote no report:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
        run_stamp.write_text(run_key)
    if book_needed:
        proc = _run(["book", "--profile", "smoke"])
        if proc.returncode != 0:
            pytest.fail("book build failed:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
        book_stamp.write_text(book_key)
    return BuiltBook(html=html, executed=runs / "notebooks", report=runs / "report.json", rebuilt=book_needed)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test's node id: reproducible, and independent of test order/selection."""
    seed = int.from_bytes(hashlib.sha256(request.node.nodeid.encode()).digest()[:8], "little")
    return np.random.default_rng(seed)
