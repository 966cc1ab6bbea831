"""What staging adds to the pages from the report: chapter tables, CSV, front-page counts, claim targets,
noise removal (replib.pages)."""

from __future__ import annotations

import csv
import io
import math

import nbformat
import numpy as np

from bookkit.book import pages
from replib._io import read_csv
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
            "check": "tolerance abs=0.01",
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
            "check": "tolerance abs=1",
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
    md = pages.reproduces_markdown("alpha", claims, "smoke")
    assert md.count("\n* - ") == 1 + len(claims)  # header + rows
    assert "alpha.numbers.csv" in md and "1 reproduced, 1 consistent" in md and "commit" not in md
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


def _report(profile="smoke", claims=None, started="2026-01-02T00:00:00"):
    return {
        "profile": profile,
        "started": started,
        "environment": {"git_commit": "f" * 40},
        "chapters": [
            {"chapter": "alpha", "title": "Alpha (A 2020)", "status": "ok"},
            {"chapter": "beta", "title": "Beta", "status": "ok"},
        ],
        "claims": _claims() if claims is None else claims,
    }


#: the papers' tables the verdicts are drawn against: claims refer to ``<paper>:<id>``
TABLES = {"A2020": {"iso": 0.216}, "B2021": {"x": 2.0}}


def _with_refs(claims):
    refs = {"a_iso": "A2020:iso", "b_fail": "B2021:x"}
    return [dict(c, ref=refs.get(c["key"])) for c in claims]


def test_front_page_shows_each_papers_verdict_and_counts_in_three_columns():
    rep = _report("offline", claims=_with_refs(_claims()))  # smoke checks code paths, never a paper
    rep["chapters"].append(
        {"chapter": "gamma", "title": "Gamma", "status": "ok"}
    )  # claims that refer to no paper's table
    rep["claims"].append(dict(_claims()[1], chapter="gamma", key="g"))
    md = pages.front_page_markdown([rep], links={"alpha": "../notebooks/alpha"}, tables=TABLES)
    assert "profile `offline`, 2026-01-02" in md
    assert "{doc}`Alpha (A 2020) <../notebooks/alpha>`" in md
    rows = md.split("\n```")[1].split("* - ")[1:]
    cells = [[x.strip() for x in ("- " + r).split("\n  - ")] for r in rows]
    assert all(len(c) == 3 for c in cells), cells  # paper, verdict, evidence: no column per status
    alpha, beta, gamma = cells[1:]
    assert alpha[1] == "✅ reproduced (offline, 2026-01-02)"
    assert (
        alpha[2] == "1 of 1 numbers compared (1 reproduced, 0 consistent, 0 deviating); other checks: 1 holds, 0 do not"
    )
    assert beta[1].startswith("❌ not reproduced here") and beta[2].startswith("1 of 1 numbers compared (0 reproduced")
    assert gamma[1].startswith("🔬 an experiment of this book") and gamma[2] == "1 consistent"


def test_the_verdict_rests_on_the_highest_profile_with_evidence():
    claim = _with_refs(_claims())[0]
    smoke = _report("smoke", [dict(claim, status="reproduced")])
    offline = _report("offline", [dict(claim, status="failed")], started="2026-01-03T00:00:00")
    paper = _report("paper", [dict(claim, status="unverified")])
    assert pages.resting_report([smoke, offline, paper], "alpha", TABLES)["profile"] == "offline"
    md = pages.front_page_markdown([smoke, offline, paper], tables=TABLES)
    assert "❌ not reproduced here (offline, 2026-01-03)" in md
    assert pages.resting_report([paper], "alpha", TABLES)["profile"] == "paper"  # no evidence anywhere


def test_what_ran_names_the_models_and_data_files():
    entry = {
        "chapter": "alpha",
        "models": [{"name": "all-MiniLM-L6-v2", "kind": "packaged", "resolved": "sha256:" + "a" * 64}],
        "data": [
            {"dataset": "stsb", "file": "sts-dev.csv", "checksum": "sha256:1", "source": "mirror"},
            {"dataset": "stsb", "file": "sts-test.csv", "checksum": "sha256:2", "source": "mirror"},
        ],
        "seeds": {"0": {}, "8000": {}},
    }
    md = pages.what_ran_markdown(entry, _report("offline"))
    assert md.startswith("**What ran here**: profile `offline`, 2026-01-02, seeds 0, 8000.")
    assert "`all-MiniLM-L6-v2` (packaged, sha256:aaaaaaaaaaaa)" in md
    assert "Data: `stsb` (sts-dev.csv, sts-test.csv)." in md
    assert "Data: none read: generated in the chapter." in pages.what_ran_markdown({"data": []}, _report())
    assert "Data: not recorded by this run." in pages.what_ran_markdown({}, _report())
    assert "Models: none." in pages.what_ran_markdown({}, _report())


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


def test_tolerance_interval_is_every_bound_of_the_check_at_once():
    from bookkit.book.figures import tolerance_interval

    assert tolerance_interval(2.0, {"tolerance": {"abs": 0.5}}) == (1.5, 2.5)
    assert tolerance_interval(-2.0, {"tolerance": {"rel": 0.25}}) == (-2.5, -1.5)
    lo, hi = tolerance_interval(1e-5, {"tolerance": {"log10": 1.0}})
    assert math.isclose(lo, 1e-6) and math.isclose(hi, 1e-4)
    lo, hi = tolerance_interval(2.0, {"tolerance": {"abs": 0.5, "rel": 0.1}})  # the tighter bound wins
    assert math.isclose(lo, 1.8) and math.isclose(hi, 2.2)
    assert tolerance_interval(2.0, {"property": {"op": "gt", "value": 1}}) is None
    assert tolerance_interval(2.0, {"unverified": "needs a GPU"}) is None and tolerance_interval(2.0, None) is None


def test_paper_vs_ours_figure_is_staged_with_its_caption(tmp_path):
    from bookkit.book import figures
    from replib.plotting import LEGEND_KEY, png_text

    claims = [dict(c) for c in _claims()] + [dict(_claims()[0], key="zero", paper_value=0.0)]
    checks = {"a_iso": {"tolerance": {"abs": 0.01}}, "b_fail": {"tolerance": {"rel": 0.1}}}
    rows = figures.paper_vs_ours_rows(claims, checks)
    assert [(r["label"], r["ours"]) for r in rows] == [("a_iso", 0.2204), ("b_fail", None)]  # a.prop: no paper
    assert np.allclose([(r["low"], r["high"]) for r in rows], [(0.206, 0.226), (1.8, 2.2)])  # value; zero: no ratio
    md = figures.stage_paper_vs_ours(tmp_path, "alpha", claims, checks, "smoke")
    png = tmp_path / ("alpha" + figures.FIGURE_SUFFIX)
    assert png_text(png.read_bytes())[LEGEND_KEY] == "ok: legend"
    assert md.startswith(":::{figure} alpha.paper-vs-ours.png") and ":alt: " in md
    assert "2 claims with a non-zero paper value" in md and "1 computed here" in md and "1 claims whose paper" in md
    assert figures.stage_paper_vs_ours(tmp_path, "beta", claims[1:2], {}, "smoke") is None


def test_colab_budget_line_from_the_rehearsal(tmp_path):
    """Each chapter's header says what its paper profile asks of a Colab session, from book/rehearsal.csv."""
    path = tmp_path / "rehearsal.csv"
    path.write_text(
        "chapter,part,model,data,fraction_of_paper,seconds,peak_rss_gb,cache_gb,status,t4_hours_estimate\n"
        "alpha,m1,fullsize m1,d,0.01,10,3.9,1.8,ok,2.5\n"
        "alpha,rest,the parts,d,1,5,1.2,0.1,ok,0.5\n"
        "beta,m1,fullsize m1,d,0.01,10,1.0,0.1,failed,0.1\n"
    )
    rows = read_csv(path)
    line = pages.colab_budget_markdown("alpha", rows)
    assert "2 of 2 parts ok" in line and "largest needs 2.5 T4-hours, 3.9 GB of RAM and 1.8 GB of disk" in line
    assert "3 T4-hours in all" in line
    assert "0 of 1 parts ok" in pages.colab_budget_markdown("beta", rows)
    assert pages.colab_budget_markdown("gamma", rows) == ""
    assert read_csv(tmp_path / "none.csv") == []
    whole = [{"chapter": "alpha", "part": "all", "status": "ok", "t4_hours_estimate": "1.84",
              "l4_hours_estimate": "0.99", "peak_rss_gb": "6.02", "cache_gb": "2.5", "fraction_of_paper": "0.01",
              "extrapolation": "100"}, *rows]  # fmt: skip
    line = pages.colab_budget_markdown("alpha", whole)  # the chapter as a whole: its row alone
    assert "one run, about 1.8 hours on a T4 (0.99 on an L4), 6.0 GB of RAM and 2.5 GB of disk" in line
    assert "rehearsed at 1 % of its sizes and extrapolated 100×" in line  # how far the estimate reaches
    missing = [{"chapter": "alpha", "part": "all", "status": "missing", "note": "not rehearsed: n_snli is None"}]
    line = pages.colab_budget_markdown("alpha", missing)
    assert "not rehearsed yet" in line and "n_snli is None" in line and "nan" not in line


def test_paper_vs_ours_with_many_claims_is_drawn_per_table(tmp_path):
    """81 or 267 claims in one figure had 7 px labels: more than MAX_ROWS claims (or several tables) are drawn
    one row per table of the paper, with a figure per table in a dropdown."""
    from bookkit.book import figures
    from replib.papers import PaperNumber
    from replib.plotting import LEGEND_KEY, png_text

    def number(i, table):
        return PaperNumber("p", f"x/{i}", table, "r", "c", "m", 1.0 + i, "raw", "P", "P")

    tables = {"p": {f"x/{i}": number(i, "Table 1" if i < 40 else "Table 2") for i in range(50)}}
    claims = [dict(_claims()[0], key=f"k{i}", ref=f"p:x/{i}", paper_value=1.0 + i, value=1.05 + i) for i in range(50)]
    claims.append(dict(_claims()[0], key="loose", ref=None))
    rows = figures.paper_vs_ours_rows(claims, {}, tables)
    assert [r["group"] for r in rows].count("Table 1") == 40 and rows[-1]["group"] == figures.NO_TABLE
    md = figures.stage_paper_vs_ours(tmp_path, "alpha", claims, {}, "smoke", tables)
    assert md.startswith(":::{figure} alpha.paper-vs-ours.png") and "one row per table of the paper (3)" in md
    # Table 1's 40 claims in two figures of at most 30, Table 2's 10 in one, the claim without a table in one
    assert "::::{dropdown}" in md and md.count(":::{figure}") == 5 and md.count(":alt:") == 5
    assert "Table 1 (part 2 of 2): our value over the paper's for 10 claims" in md
    for name in ("alpha.paper-vs-ours.png", "alpha.paper-vs-ours-1.png", "alpha.paper-vs-ours-4.png"):
        assert png_text((tmp_path / name).read_bytes())[LEGEND_KEY] == "ok: legend"
    few = figures.stage_paper_vs_ours(tmp_path, "beta", claims[:5], {}, "smoke", tables)
    assert "dropdown" not in few and few.count(":::{figure}") == 1  # a few claims of one table: a row each


def test_a_provisional_report_says_so_in_its_run_label():
    rep = {"profile": "offline", "started": "2026-11-28T03:00:00+00:00", "environment": {"git_commit": "0123456789ab"}}
    assert pages.run_label(rep) == "profile `offline`, 2026-11-28"
    rep["provisional"] = {"seeds_done": [0], "seeds": [0, 1]}
    assert pages.run_label(rep) == "profile `offline`, 2026-11-28, provisional: seed 0 of seeds 0 1"
