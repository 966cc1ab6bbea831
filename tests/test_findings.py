"""The papers' findings on every model of the book (bookkit.claims.findings): data/findings.yml read into one claim per
cell, a cell that does not hold is a finding about the model (never a failure), and each paper's verdict shows its
findings x models grid without resting on it (bookkit.claims.verdicts)."""

from pathlib import Path

import pytest

from bookkit.claims.checker import evaluate_claim
from bookkit.claims.claims import ClaimsFileError, load_claims
from bookkit.claims.findings import FindingsFileError, finding_claims, load_findings
from bookkit.claims.status import PASSING, summarize
from bookkit.claims.verdicts import chapter_verdict_markdown, evidence_line, paper_verdicts
from replib.papers import PaperNumber

ROOT = Path(__file__).resolve().parents[1]

FINDINGS = """\
models: {m1: Model one, m2: Model two}
findings:
  - id: "p:few_dims"
    section: "§2"
    words: "the space uses few dimensions"
    statement: "|IsoScore| below 0.1"
    check: {op: lt, value: 0.1}
    models:
      m1: {chapter: ch, record: iso_m1, spread: iso_m1_se, what: "last layer"}
      m2:
        - {chapter: other, record: iso_a, what: "task a"}
        - {chapter: other, record: iso_b, what: "task b"}
  - id: "p:na"
    section: "§3"
    words: "proteins only"
    statement: "holds"
    check: {op: "true"}
    models:
      m1: {chapter: ch, not_applicable: "a text model"}
"""


def _project(tmp_path, findings=FINDINGS, claims="claims: []\n"):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "findings.yml").write_text(findings)
    (tmp_path / "notebooks").mkdir()
    for ch in ("ch", "other"):
        (tmp_path / "notebooks" / f"{ch}.claims.yml").write_text(f"chapter: {ch}\ntitle: t\n{claims}")
    load_findings.cache_clear()
    return tmp_path


def test_each_cell_is_a_claim_of_the_chapter_that_records_its_value(tmp_path):
    root = _project(tmp_path)
    ch = load_claims(root / "notebooks" / "ch.claims.yml", tables={})
    assert [c.key for c in ch.claims] == ["finding.p.few_dims.m1", "finding.p.na.m1"]
    cell = ch.claims[0]
    assert (cell.finding, cell.model, cell.record, cell.spread) == ("p:few_dims", "Model one", "iso_m1", "iso_m1_se")
    assert cell.source == "§2: “the space uses few dimensions”"
    assert cell.checks["offline"] == {"property": {"op": "lt", "value": 0.1}} and "unverified" in cell.checks["smoke"]
    other = load_claims(root / "notebooks" / "other.claims.yml", tables={})
    assert [c.key for c in other.claims] == ["finding.p.few_dims.m2.1", "finding.p.few_dims.m2.2"]


def test_a_cell_that_does_not_hold_is_a_finding_about_the_model_never_a_failure(tmp_path):
    root = _project(tmp_path)
    cell = load_claims(root / "notebooks" / "ch.claims.yml", tables={}).claims[0]
    holds = evaluate_claim(cell, "offline", {"iso_m1": 0.02, "iso_m1_se": 0.01})
    assert holds.status == "consistent" and holds.value == 0.02 and holds.finding == "p:few_dims"
    fails = evaluate_claim(cell, "offline", {"iso_m1": 0.5, "iso_m1_se": 0.01})
    assert fails.status == "does_not_hold" and "does not hold on Model one" in fails.detail
    assert "does_not_hold" in PASSING and summarize([fails.to_dict()], [])["failed"] == 0
    straddles = evaluate_claim(cell, "offline", {"iso_m1": 0.09, "iso_m1_se": 0.01})
    assert straddles.status == "inconclusive"
    missing = evaluate_claim(cell, "offline", {"iso_m1_se": 0.01})  # nothing measured: never a finding
    assert missing.status == "failed"


def test_a_cell_key_that_is_also_a_claim_and_a_cell_without_record_are_errors(tmp_path):
    claims = (
        "claims:\n  - {key: finding.p.na.m1, claim: c, paper: {source: s}, checks: {smoke: {unverified: r}, "
        "offline: {unverified: r}, paper: {unverified: r}}}\n"
    )
    root = _project(tmp_path, claims=claims)
    with pytest.raises(ClaimsFileError, match="both a claim and a cell"):
        load_claims(root / "notebooks" / "ch.claims.yml", tables={})
    bad = tmp_path / "bad"
    bad.mkdir()
    _project(bad, findings=FINDINGS.replace('not_applicable: "a text model"', 'what: "no record"'))
    with pytest.raises(FindingsFileError, match="either a record or not_applicable"):
        finding_claims(bad, "ch")


def _n(rid):
    return PaperNumber("p", rid, "T1", "r", "c", "m", 1.0, "linear", "src", "P", printed="1.0")


def test_the_grid_shows_every_model_and_never_decides_the_verdict(tmp_path):
    root = _project(tmp_path)
    results = []
    for ch, recs in (("ch", {"iso_m1": 0.5, "iso_m1_se": 0.01}), ("other", {"iso_a": 0.05, "iso_b": 0.2})):
        for c in load_claims(root / "notebooks" / f"{ch}.claims.yml", tables={}).claims:
            results.append(evaluate_claim(c, "offline", recs).to_dict())
    paper_claim = {"chapter": "ch", "key": "x", "claim": "c", "status": "unverified", "ref": "p:x0", "detail": "w"}
    report = {"profile": "offline", "chapters": [{"chapter": "ch", "status": "ok"}], "claims": [paper_claim, *results]}
    (v,) = paper_verdicts(report, {"p": {"x0": _n("x0")}})
    assert v["verdict"] == "not checked here" and v["findings"] == {"hold": 0, "fail": 0, "undecided": 0}
    assert v["not_checked"] == [("w", 1)]  # a not-applicable cell is not one of the chapter's unverified claims
    assert [row["id"] for row in v["grid"]] == ["p:few_dims", "p:na"]
    assert (
        "findings on the book's models: few_dims: Model one ❌ fails, Model two ✅ holds 1 of 2, ❌ fails 1 of 2;"
        " na: not applicable" in evidence_line(v)
    )  # each mark with its word: the page draws marks as icons
    assert "1 holds, 2 fail, 0 undecided, 1 not applicable" in v["reason"]
    md = chapter_verdict_markdown(v)
    assert "| the paper's finding, in its words | tested as | Model one | Model two |" in md
    assert (
        "| §2: “the space uses few dimensions” | \\|IsoScore\\| below 0.1 | ❌ fails 0.5 ± 0.02 | task a: ✅ holds 0.05; "
        in md
    )
    assert "task b: ❌ fails 0.2 |" in md and "n/a (a text model)" in md


def test_the_projects_findings_name_their_papers_chapters_and_records():
    data = load_findings(ROOT)
    papers = {p.stem for p in (ROOT / "data" / "papers").glob("*.csv")}
    chapters = {p.name.split(".")[0] for p in (ROOT / "notebooks").glob("*.claims.yml")}
    assert {f["id"].partition(":")[0] for f in data["findings"]} >= papers - {"deck003"}
    for f in data["findings"]:
        assert f["id"].partition(":")[0] in papers
        for cells in f["models"].values():
            for cell in cells if isinstance(cells, list) else [cells]:
                assert cell["chapter"] in chapters
                if "record" in cell:  # the chapter (or the code it calls) records the key
                    source = (ROOT / "notebooks" / f"{cell['chapter']}.md").read_text()
                    assert cell["record"] in source or cell["record"].rpartition("_")[2] in source, cell
