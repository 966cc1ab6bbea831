"""The papers' numbers as data (data/papers/*.csv) and the claims derived from them."""

import shutil
import textwrap
from pathlib import Path

import pytest

from bookkit import paper_tables as pt
from bookkit.claims import ClaimsFileError, load_claims

ROOT = Path(__file__).resolve().parents[1]
TABLES = pt.load_paper_tables(ROOT)
CLAIMS = {p.stem.split(".")[0]: load_claims(p) for p in sorted((ROOT / "notebooks").glob("*.claims.yml"))}
REFS = {c.ref for cc in CLAIMS.values() for c in cc.claims if c.ref}

HEADER = ",".join(pt.COLUMNS)


def test_every_paper_has_a_table():
    assert {"rudman2022", "hakim2025", "mickus2024", "cai2021", "rajaee2021", "deck003"} <= set(TABLES)
    assert all(TABLES.values())


@pytest.mark.parametrize("paper", sorted(TABLES))
def test_every_number_is_registered_or_says_why_not(paper):
    for n in TABLES[paper].values():
        if n.ref in REFS:
            assert not n.not_registered, f"{n.ref} is checked by a claim but says it is not registered"
        else:
            assert n.not_registered.strip(), f"{n.ref} ({n.table}, {n.row}, {n.column}) has no claim and no reason"


def test_claims_quote_the_table_exactly():
    for cc in CLAIMS.values():
        for c in cc.claims:
            if c.ref:
                n = pt.resolve_ref(c.ref, TABLES)
                assert c.paper_value == pytest.approx(n.value, rel=1e-12), c.key


def test_the_cluster_chapter_is_written_as_families():
    text = (ROOT / "notebooks" / "cluster_isotropy.claims.yml").read_text()
    assert len(text.splitlines()) < 600 and "families:" in text
    assert len(CLAIMS["cluster_isotropy"].claims) > 200  # expanded: every registered table cell is a claim


def _csv(tmp_path, rows, name="p2000"):
    d = tmp_path / "data" / "papers"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return d / f"{name}.csv"


GOOD = [
    "T1/a/x,Table 1,A,X,score,0.5,linear,Paper 2000 Table 1,P,,",
    "T1/a/y,Table 1,A,Y,score,0.25,linear,Paper 2000 Table 1,P,,",
    "T1/b/x,Table 1,B,X,score,1e-30,log10,Paper 2000 Table 1,S,a note,",
]


@pytest.mark.parametrize(
    "bad, match",
    [
        ("T1/a/x,Table 1,A,X,score,0.5,linear,S,P,,", "duplicate id"),
        ("T1/c/x,Table 1,C,X,score,high,linear,S,P,,", "not a number"),
        ("T1/c/x,Table 1,C,X,score,nan,linear,S,P,,", "finite"),
        ("T1/c/x,Table 1,C,X,score,0.5,cubic,S,P,,", "scale"),
        ("T1/c/x,Table 1,C,X,score,-1,log10,S,P,,", "positive"),
        ("T1/c/x,Table 1,C,X,score,0.5,linear,S,Q,,", "provenance"),
        ("T1/c/x,Table 1,,X,score,0.5,linear,S,P,,", "row is empty"),
        ("T1/c/x,Table 1,C,X,score,0.5,linear,S,P,", "number of fields"),
    ],
)
def test_a_malformed_table_is_refused(tmp_path, bad, match):
    with pytest.raises(pt.PaperTableError, match=match):
        pt.load_paper_table(_csv(tmp_path, [*GOOD, bad]))


def _claims(tmp_path, body):
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    p = tmp_path / "notebooks" / "x.claims.yml"
    p.write_text("chapter: x\ntitle: x\n" + textwrap.dedent(body))
    return p


CHECKS = "{smoke: {unverified: r}, offline: {unverified: r}, paper: {tolerance: {abs: 0.1}}}"


def test_refs_and_families_expand_from_the_table(tmp_path):
    _csv(tmp_path, GOOD)
    p = _claims(
        tmp_path,
        f"""\
        defaults:
          checks: {CHECKS}
        claims:
          - key: one
            claim: the A/X score
            paper: {{ref: "p2000:T1/a/x", value: 0.5}}
        families:
          - key: "score_{{parts[1]}}_{{parts[2]}}"
            claim: "{{table}}: {{row}} on {{column}}"
            rows: ["p2000:T1/*/x"]
        """,
    )
    cc = load_claims(p)
    by = {c.key: c for c in cc.claims}
    assert set(by) == {"one", "score_a_x", "score_b_x"}
    assert by["one"].paper_value == 0.5 and by["one"].ref == "p2000:T1/a/x"
    assert by["score_b_x"].paper_value == 1e-30 and by["score_b_x"].claim == "Table 1: B on X"
    assert by["score_b_x"].source == "Paper 2000 Table 1 [S]; a note"
    assert by["score_a_x"].checks["paper"] == {"tolerance": {"abs": 0.1}}


@pytest.mark.parametrize(
    "claims, match",
    [
        ('claims:\n  - {key: k, claim: c, paper: {ref: "p2000:T1/z/z"}, checks: CHECKS}\n', "no id"),
        ('claims:\n  - {key: k, claim: c, paper: {ref: "nopaper:T1/a/x"}, checks: CHECKS}\n', "no paper table"),
        ('claims:\n  - {key: k, claim: c, paper: {ref: "p2000:T1/a/x", value: 0.6}, checks: CHECKS}\n', "disagrees"),
        (
            'claims: []\nfamilies:\n  - {key: "k_{parts[1]}", claim: c, rows: "p2000:T9/*", checks: CHECKS}\n',
            "matches no",
        ),
        ('claims: []\nfamilies:\n  - {key: "k", claim: c, rows: "p2000:T1/*", checks: CHECKS}\n', "duplicate key"),
        (
            'claims: []\nfamilies:\n  - {key: "k_{parts[7]}", claim: c, rows: "p2000:T1/*", checks: CHECKS}\n',
            "template",
        ),
        (
            'claims: []\nfamilies:\n  - {key: "k_{id}", claim: c, rows: "p2000:T1/*", check: CHECKS}\n',
            "'check' was unexpected",
        ),
        ('claims: []\nfamilies:\n  - {key: "k_{id}", claim: c, rows: 5, checks: CHECKS}\n', r"families\[0\]\.rows: 5"),
    ],
)
def test_bad_refs_and_families_are_refused(tmp_path, claims, match):
    _csv(tmp_path, GOOD)
    p = _claims(tmp_path, claims.replace("CHECKS", CHECKS))
    with pytest.raises(ClaimsFileError, match=match) as err:
        load_claims(p)
    assert str(err.value).startswith(f"{p}:"), "the error names the file (and the line)"


def test_coverage_counts_registered_checked_and_reproduced(tmp_path):
    tables = {"p2000": pt.load_paper_table(_csv(tmp_path, GOOD))}
    by_ref = {
        "p2000:T1/a/x": [{"status": "reproduced"}],
        "p2000:T1/b/x": [{"status": "unverified"}],
    }
    (row,) = pt.coverage(tables, by_ref)
    assert (row["reported"], row["registered"], row["checked"], row["reproduced"]) == (3, 2, 1, 1)
    assert [r for r, _ in row["not_registered"]] == ["p2000:T1/a/y"]


def test_the_project_tables_load_through_a_copied_project(tmp_path):
    """Claims resolve their refs from the project the claims file lives in (two folders up)."""
    shutil.copytree(ROOT / "data" / "papers", tmp_path / "data" / "papers")
    (tmp_path / "notebooks").mkdir()
    shutil.copy2(ROOT / "notebooks" / "cluster_isotropy.claims.yml", tmp_path / "notebooks")
    cc = load_claims(tmp_path / "notebooks" / "cluster_isotropy.claims.yml")
    assert len(cc.claims) == len(CLAIMS["cluster_isotropy"].claims)
