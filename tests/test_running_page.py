"""The running page is a guide: short, without commit hashes or issue numbers (nor any page of the book), and
its measurements are tables generated from data files (run times, the rehearsal, seed sweeps) at staging."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bookkit.book import book, pages
from bookkit.notebooks import REHEARSAL_CSV
from bookkit.project import toc_chapters, toc_files
from replib._io import read_csv

ROOT = Path(__file__).resolve().parents[1]
#: a commit-like token: 7 to 40 hex digits with at least one digit and one letter (not a plain number or word)
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
ISSUE = re.compile(r"\bissues? #?\d+|#\d{1,4}\b", re.I)
SOURCES = sorted(
    [*ROOT.glob("book/**/*.md"), *ROOT.glob("book/*.txt"), *ROOT.glob("book/**/*.csv"), *ROOT.glob("notebooks/*.md")]
)


def _history_free(text: str) -> list[str]:
    return COMMIT.findall(text) + ISSUE.findall(text)


def test_the_scan_finds_what_it_looks_for():
    assert _history_free("fixed at `c89b3d3` (issue 27), see #41") == ["c89b3d3", "issue 27", "#41"]
    assert _history_free("2147483647 tokens, a decade, sha 1e-9, 0.0535") == []


def test_the_running_page_is_a_guide_of_at_most_250_lines():
    assert len((ROOT / "book" / "running.md").read_text().splitlines()) <= 250


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_commit_hashes_or_issue_numbers_in_the_books_pages(path):
    assert _history_free(path.read_text()) == [], f"{path.relative_to(ROOT)}: history belongs in git"


def test_the_pages_generated_from_data_name_no_commits_or_issues():
    rows = read_csv(ROOT / REHEARSAL_CSV)
    generated = [pages.fill_tables(p.read_text(), ROOT) for p in ROOT.glob("book/**/*.md")]
    generated += [pages.colab_costs_markdown(rows, toc_chapters(ROOT)), book.measurement_links(ROOT)]
    for text in generated:
        assert _history_free(text) == []
        assert not pages.TABLE_MARKER.search(text), "every data table is filled"


def test_the_running_pages_measurements_come_from_data_files():
    text = (ROOT / "book" / "running.md").read_text()
    assert book.COLAB_COSTS_MARKER in text and book.MEASUREMENTS_MARKER in text
    (path,) = pages.TABLE_MARKER.findall(text)
    filled = pages.fill_tables(text, ROOT)
    with (ROOT / path).open() as f:
        head = f.readline().strip().split(",")
        n = sum(1 for _ in f)
    assert {"date", "machine", "chapter", "seconds"} <= set(head), "each time says when and on what it was measured"
    table = filled.split("| " + " | ".join(h.replace("_", " ") for h in head) + " |")[1]
    assert len([ln for ln in table.splitlines() if ln.startswith("| ")]) == n


def test_the_colab_costs_table_has_a_row_per_chapter():
    rows = [
        {"chapter": "a", "part": "x", "t4_hours_estimate": "0.5", "peak_rss_gb": "3", "cache_gb": "1"},
        {"chapter": "a", "part": "y", "t4_hours_estimate": "1.0", "peak_rss_gb": "5", "cache_gb": "2"},
    ]
    md = pages.colab_costs_markdown(rows, ["a", "b"]).splitlines()
    assert md[0] == "| chapter | T4-hours | peak RAM (GB) | disk (GB) | runs as |"
    assert md[2] == "| a | 1.5 | 5.0 | 3.0 | 2 parts |" and md[3] == "| b | not rehearsed | | | |"
    whole = [{"chapter": "a", "part": "all", "t4_hours_estimate": "2", "l4_hours_estimate": "1", "peak_rss_gb": "4"}]
    md = pages.colab_costs_markdown(rows + whole, ["a"]).splitlines()
    assert md[0] == "| chapter | T4-hours | L4 hours | peak RAM (GB) | disk (GB) | runs as |"
    assert md[2] == "| a | 2 | 1 | 4.0 | — | a whole |"


def test_measurement_pages_are_linked_from_the_running_page():
    links = book.measurement_links(ROOT).splitlines()
    files = [f for f in toc_files(ROOT / "_toc.yml") if f.startswith("book/")]
    assert links and all(re.fullmatch(r"- \[[^]]+\]\(\.\./(book/[^)]+)\.md\)", ln) for ln in links)
    for ln in links:
        target = re.search(r"\(\.\./(.+)\.md\)", ln).group(1)
        assert target in files and (ROOT / f"{target}.md").exists()
    assert "- [The paper profile rehearsed](../book/rehearsal.md)" in links


def test_a_table_marker_without_its_file_is_a_clear_error(tmp_path):
    (tmp_path / "t.csv").write_text("a_b,c\n1,\n")
    assert pages.fill_tables("x\n<!-- replib:table t.csv -->\ny", tmp_path) == "x\n| a b | c |\n|---|---|\n| 1 | — |\ny"
    with pytest.raises(FileNotFoundError, match="no file"):
        pages.fill_tables("<!-- replib:table missing.csv -->", tmp_path)
