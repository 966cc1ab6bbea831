"""What staging adds to the pages from the report: chapter tables, CSV, front-page counts, claim targets,
noise removal (replib.pages)."""

from __future__ import annotations

import csv
import io

import nbformat

from bookkit import pages
from replib.record import GLUE_PREFIX, RECORD_MIME


def _claims():
    return [
        {
            "chapter": "alpha",
            "key": "a_iso",
            "claim": "IsoScore of $x$ is 0.216",
            "profile": "smoke",
            "paper_value": 0.216,
            "source": "P, Table 1",
            "value": 0.2204,
            "check": "abs 0.01",
            "status": "reproduced",
            "detail": "d",
        },
        {
            "chapter": "alpha",
            "key": "a.prop",
            "claim": "a property, with | pipe",
            "profile": "smoke",
            "paper_value": None,
            "source": "P",
            "value": True,
            "check": "true",
            "status": "consistent",
            "detail": "d",
        },
        {
            "chapter": "beta",
            "key": "b_fail",
            "claim": "b",
            "profile": "smoke",
            "paper_value": 2.0,
            "source": "P",
            "value": None,
            "check": "abs 1",
            "status": "failed",
            "detail": "not recorded",
        },
    ]


def _nb():
    rec = nbformat.v4.new_output(
        "display_data",
        data={GLUE_PREFIX + "text/plain": "0.2204", GLUE_PREFIX + RECORD_MIME: {"name": "a_iso", "value": 0.2204}},
    )
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Alpha (A 2020)\n\nIntro text."),
            nbformat.v4.new_code_cell(
                "x = 1",
                outputs=[
                    nbformat.v4.new_output("stream", name="stderr", text="TqdmWarning: IProgress not found\n"),
                    nbformat.v4.new_output(
                        "stream", name="stdout", text="embed: 100%|██████| 3/3 [00:01<00:00, 2.1it/s]\n"
                    ),
                    nbformat.v4.new_output("stream", name="stdout", text="n = 3\n"),
                ],
            ),
            nbformat.v4.new_code_cell("record('a_iso', iso)", outputs=[rec]),
        ]
    )


def test_csv_round_trips_every_claim():
    rows = list(csv.DictReader(io.StringIO(pages.claims_csv(_claims()))))
    assert [r["key"] for r in rows] == ["a_iso", "a.prop", "b_fail"]
    assert float(rows[0]["value"]) == 0.2204 and rows[2]["value"] == "" and rows[1]["claim"].endswith("| pipe")


def test_reproduces_table_has_one_row_per_claim_and_opens_the_chapter():
    claims = [c for c in _claims() if c["chapter"] == "alpha"]
    md = pages.reproduces_markdown("alpha", claims, "smoke", commit="0123456789abcdef")
    assert md.count("\n* - ") == 1 + len(claims)  # header + rows
    assert "alpha.numbers.csv" in md and "1 reproduced, 1 consistent" in md and "`0123456789`" in md
    assert "\\$x\\$" in md  # a claim's TeX-looking text stays inert in the table
    nb = _nb()
    pages.add_reproduces_cell(nb, md)
    assert nb.cells[0].source == "# Alpha (A 2020)" and nb.cells[1].source == md
    assert nb.cells[2].source == "Intro text."


def test_claim_target_before_the_recording_cell():
    nb = _nb()
    found = pages.claim_target(nb, "alpha", ["a_iso", "missing"])
    assert found == {"a_iso": "claim-alpha-a-iso"}
    i = next(i for i, c in enumerate(nb.cells) if c.source == "(claim-alpha-a-iso)=")
    assert nb.cells[i + 1].source.startswith("record('a_iso'")


def test_strip_noise_keeps_science():
    nb = _nb()
    assert pages.strip_noise(nb) == 2
    assert [o.get("text") for o in nb.cells[1].outputs] == ["n = 3\n"]


def test_front_page_counts_per_chapter():
    rep = {
        "profile": "smoke",
        "started": "2026-01-02T00:00:00",
        "environment": {"git_commit": "f" * 40},
        "chapters": [{"chapter": "alpha", "title": "Alpha (A 2020)"}, {"chapter": "beta", "title": "Beta"}],
        "claims": _claims(),
    }
    md = pages.front_page_markdown([rep], links={"alpha": "../notebooks/alpha"})
    assert "1 reproduced, 1 consistent, 1 failed of 3 claims" in md
    assert "{doc}`Alpha (A 2020) <../notebooks/alpha>`" in md
    rows = md.split("\n```")[1].split("* - ")[2:]
    cells = [[x.strip() for x in r.split("\n  - ")[1:]] for r in rows]
    # reproduced, consistent, sanity, deviates, expected_failure, inconclusive, failed, unverified
    assert cells[0][:8] == ["1", "1", "0", "0", "0", "0", "0", "0"]  # alpha
    assert cells[1][:8] == ["0", "0", "0", "0", "0", "0", "1", "0"]  # beta: one failed


def test_progress_off_follows_tqdm_disable(monkeypatch):
    """The runner sets TQDM_DISABLE; replib's bars pass disable= explicitly, so they must read it too."""
    from tqdm.auto import tqdm

    from replib._io import progress_off

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert progress_off(True) is False and progress_off(False) is True
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert progress_off(True) is True
    assert tqdm(range(2), disable=progress_off(True)).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert progress_off(True) is False


def test_a_long_reproduction_table_is_folded():
    many = [dict(_claims()[0], key=f"k{i}") for i in range(pages.SHORT_TABLE + 1)]
    md = pages.reproduces_markdown("alpha", many, "smoke")
    assert ":class: dropdown" in md and md.count("\n* - ") == 1 + len(many)
    assert ":class: dropdown" not in pages.reproduces_markdown("alpha", many[:3], "smoke")
