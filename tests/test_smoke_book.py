"""The README's test command includes the smoke run of every chapter, the claim check and the strict
book build (through the session fixture ``smoke_book`` of conftest.py, shared with the browser test):
a broken formula or a missing number fails here, and so fails CI."""

import json
from pathlib import Path

import yaml

from bookkit.claims.claims import load_claims


def test_smoke_run_all_claims_pass(smoke_book):
    report = json.loads(smoke_book.report.read_text())
    assert report["profile"] == "smoke"
    bad = [
        f"{c['chapter']}:{c['key']} {c['status']} ({c.get('detail')})"
        for c in report["claims"]
        if c["status"] == "failed"
    ]
    assert report["summary"]["chapter_failures"] == 0, report["chapters"]
    assert not bad, "\n".join(bad)
    assert report["summary"]["failed"] == 0


def test_every_toc_chapter_ran_and_was_checked(smoke_book):
    report = json.loads(smoke_book.report.read_text())
    root = Path(__file__).resolve().parents[1]
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    chapters = [
        c["file"].split("/")[-1]
        for part in toc["parts"]
        for c in part["chapters"]
        if c["file"].startswith("notebooks/")
    ]
    checked = {c["chapter"] for c in report["claims"]}
    assert set(chapters) <= checked, set(chapters) - checked
    for ch in chapters:
        assert (smoke_book.executed / f"{ch}.ipynb").exists(), ch
        n_claims = len(load_claims(root / "notebooks" / f"{ch}.claims.yml").claims)
        assert sum(c["chapter"] == ch for c in report["claims"]) == n_claims, ch


def test_strict_book_build(smoke_book):
    html = smoke_book.html
    assert (html / "index.html").exists()
    validation = (html / "book" / "validation.html").read_text()
    assert "smoke" in validation


def test_rendered_chapters_hide_the_boilerplate(smoke_book):
    """The page shows science first: no Colab bootstrap and no papermill parameters on the page."""
    for page in (smoke_book.html / "notebooks").glob("*.html"):
        text = page.read_text()
        assert "Colab bootstrap" not in text, page.name
        assert "Parameters" not in text or "injected-parameters" not in text, page.name
        assert "bookkit.run.colab import finish" not in text, page.name


def test_colab_buttons_open_the_published_notebooks(smoke_book):
    """A built book's launch buttons open notebooks/<chapter>.ipynb on the branch the nightly publishes them to
    (tests/test_nightly.py checks that the publish step puts them there), not on main, where none exist."""
    from bookkit.book.book import COLAB_BRANCH

    for page in (smoke_book.html / "notebooks").glob("*.html"):
        want = f"/blob/{COLAB_BRANCH}/notebooks/{page.stem}.ipynb"
        assert want in page.read_text(), f"{page.name}: no Colab link to {want}"


def test_the_running_pages_tables_are_generated(smoke_book):
    running = (smoke_book.html / "book" / "running.html").read_text()
    assert "replib:" not in running, "a marker left unfilled"
    assert "machine" in running and "T4-hours" in running and "rehearsal.html" in running
    assert "<table" in (smoke_book.html / "book" / "rehearsal.html").read_text()
