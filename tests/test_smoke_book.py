"""The README's test command includes the smoke run of every chapter, the claim check and the strict
book build: a broken formula or a missing number fails here (and so fails CI)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def smoke_run():
    """Run every chapter in the smoke profile once per test session (python -m replib run)."""
    if os.environ.get("REPLIB_SKIP_SMOKE"):
        pytest.skip("REPLIB_SKIP_SMOKE is set")
    proc = subprocess.run([sys.executable, "-m", "replib", "run", "--profile", "smoke"], cwd=ROOT,
                          capture_output=True, text=True)
    print(proc.stdout[-20000:])
    print(proc.stderr[-5000:], file=sys.stderr)
    return proc


def test_smoke_run_all_claims_pass(smoke_run):
    last = smoke_run.stdout.strip().splitlines()[-1]
    assert smoke_run.returncode == 0, f"smoke run failed: {last}\n{smoke_run.stdout[-6000:]}"
    assert last.endswith("0 failed") or " 0 failed," in last, last


def test_strict_book_build(smoke_run):
    assert smoke_run.returncode == 0
    proc = subprocess.run([sys.executable, "-m", "replib", "book", "--profile", "smoke"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    html = ROOT / "build" / "book" / "_build" / "html"
    assert (html / "index.html").exists()
    validation = (html / "book" / "validation.html").read_text()
    assert "Profile" in validation and "smoke" in validation
