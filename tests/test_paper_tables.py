"""The papers' numbers as data (data/papers/*.csv) and the claims derived from them."""

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bookkit.claims import paper_tables as pt
from bookkit.claims.claims import ClaimsFileError, load_claims
from bookkit.claims.verdicts import declared_refs

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


TOL = "tolerance abs=0.0005 (the paper's printed precision)"


def test_coverage_counts_registered_compared_and_reproduced(tmp_path):
    tables = {"p2000": pt.load_paper_table(_csv(tmp_path, GOOD))}
    by_ref = {
        "p2000:T1/a/x": [{"status": "reproduced", "check": TOL, "paper_value": 0.5}],
        "p2000:T1/b/x": [{"status": "unverified", "check": "unverified", "paper_value": 1e-30}],
    }
    (row,) = pt.coverage(tables, by_ref, declared={"p2000:T1/a/x", "p2000:T1/b/x"})
    assert (row["reported"], row["registered"], row["compared"], row["declared"], row["reproduced"]) == (3, 2, 1, 2, 1)
    assert [r for r, _ in row["not_registered"]] == ["p2000:T1/a/y"]


def test_coverage_counts_what_ran_never_sanity_stand_ins_or_the_papers_data(tmp_path):
    """A sanity check, a stand-in, a bound other than the paper's value, or a number describing the paper's data
    compares none of its results."""
    rows = [r + ",result" for r in GOOD] + ["D/n,Data,n,items,count,100,linear,Paper 2000 data,P,,,data"]
    (tmp_path / "data" / "papers").mkdir(parents=True)
    (tmp_path / "data" / "papers" / "p2000.csv").write_text(HEADER + ",kind\n" + "\n".join(rows) + "\n")
    tables = {"p2000": pt.load_paper_table(tmp_path / "data" / "papers" / "p2000.csv")}
    assert tables["p2000"]["D/n"].kind == "data" and not tables["p2000"]["D/n"].main
    by_ref = {
        "p2000:T1/a/x": [{"status": "sanity", "sanity": True, "check": TOL, "paper_value": 0.5}],
        "p2000:T1/a/y": [{"status": "consistent", "stand_in": "GloVe", "check": TOL, "paper_value": 0.25}],
        "p2000:T1/b/x": [{"status": "consistent", "check": "lt 1", "paper_value": 1e-30}],
        "p2000:D/n": [{"status": "reproduced", "check": TOL, "paper_value": 100}],
    }
    (row,) = pt.coverage(tables, by_ref)
    assert (row["reported"], row["other"], row["compared"], row["reproduced"]) == (3, 1, 0, 0)


def test_a_kind_outside_the_list_is_an_error(tmp_path):
    (tmp_path / "p.csv").write_text(HEADER + ",kind\n" + GOOD[0] + ",main\n")
    with pytest.raises(pt.PaperTableError, match="kind must be one of"):
        pt.load_paper_table(tmp_path / "p.csv")


def test_the_project_tables_load_through_a_copied_project(tmp_path):
    """Claims resolve their refs from the project the claims file lives in (two folders up)."""
    shutil.copytree(ROOT / "data" / "papers", tmp_path / "data" / "papers")
    shutil.copy2(ROOT / "data" / "findings.yml", tmp_path / "data")  # the findings grid's cells are claims too
    (tmp_path / "notebooks").mkdir()
    shutil.copy2(ROOT / "notebooks" / "cluster_isotropy.claims.yml", tmp_path / "notebooks")
    cc = load_claims(tmp_path / "notebooks" / "cluster_isotropy.claims.yml")
    assert len(cc.claims) == len(CLAIMS["cluster_isotropy"].claims)


# ------------------------------------------------------------------ printed precision and coverage (issue 27)
@pytest.mark.parametrize(
    "printed, half",
    [
        ("0.990", 5e-4),
        ("0.216", 5e-4),
        ("5.02E-174", 5e-177),
        ("10662", 0.5),
        ("6.4e6", 5e4),
        ("-0.808", 5e-4),
        ("24.8", 0.05),
        ("0.0009730", 5e-8),
    ],
)
def test_half_a_unit_in_the_last_printed_digit(printed, half):
    assert pt.half_unit(printed) == pytest.approx(half, rel=1e-9)


@pytest.mark.parametrize("bad", ["", "about 14", "1.2.3", "0x10", "inf"])
def test_a_value_that_is_not_a_printed_decimal_is_refused(bad):
    with pytest.raises(ValueError, match="printed decimal"):
        pt.half_unit(bad)


def test_the_tables_keep_the_papers_digits():
    """Trailing zeros and exponents as printed: they state the precision a tolerance is derived from."""
    assert TABLES["rudman2022"]["rotation/0/avg_cosine"].printed == "0.990"
    assert TABLES["rudman2022"]["layers/bert/4"].printed == "0.1400"
    assert TABLES["rajaee2021"]["T1/bert/k1"].printed == "0.010"
    assert TABLES["rajaee2021"]["T6/bert/baseline/stsb"].printed == "1.1E-04"
    assert TABLES["mickus2024"]["T1/polarity/n_items"].printed == "10662"
    for numbers in TABLES.values():
        for n in numbers.values():
            assert float(n.printed) == n.value and pt.half_unit(n.printed) > 0, n.ref


def test_printed_tolerance_in_the_tables_scale():
    assert pt.printed_tolerance(TABLES["rudman2022"]["rotation/0/isoscore"]) == {"abs": pytest.approx(5e-4)}
    (log,) = pt.printed_tolerance(TABLES["rajaee2021"]["T1/gpt2/k0"]).values()  # 5.02E-174: +-0.005 in 5.02
    assert log == pytest.approx(np.log10(1 + 0.005 / 5.02))


def test_a_printed_tolerance_resolves_per_claim(tmp_path):
    _csv(tmp_path, GOOD)
    p = _claims(
        tmp_path,
        """\
        claims: []
        families:
          - key: "score_{parts[1]}_{parts[2]}"
            claim: c
            rows: "p2000:T1/*"
            spread: "{key}_se"
            checks: {smoke: {unverified: r}, offline: {unverified: r}, paper: {tolerance: {printed: true}}}
        """,
    )
    by = {c.key: c for c in load_claims(p).claims}
    assert by["score_a_x"].checks["paper"]["tolerance"] == {"abs": pytest.approx(0.05), "printed": True}
    assert by["score_a_y"].checks["paper"]["tolerance"]["abs"] == pytest.approx(0.005)
    assert by["score_b_x"].checks["paper"]["tolerance"]["log10"] == pytest.approx(np.log10(1.5))
    assert by["score_a_y"].spread == "score_a_y_se"
    bad = _claims(
        tmp_path,
        "claims:\n  - {key: k, claim: c, paper: {value: 1, source: s}, checks: "
        "{smoke: {tolerance: {printed: true}}, offline: {unverified: r}, paper: {unverified: r}}}\n",
    )
    with pytest.raises(ClaimsFileError, match="needs paper.ref"):
        load_claims(bad)


#: papers whose main tables the book cannot cover to 95 % here, with the reason (kept strict: a paper that
#: reaches the bar turns this into a failure, so the list stays true)
SHORT_OF_COVERAGE: dict[str, str] = {
    "cai2021": "ELMo's 9.1 is not compared in any profile: AllenNLP 1.0 does not install with current torch and "
    "the ELMo weights are not packaged (notebooks/manifolds.md); the 9.1 serves only as a bound on the other models",
}


def _declared(tables, chapters) -> dict[str, tuple[int, int]]:
    """paper -> (its results some profile's declared check compares at the paper's word, its results reported)."""
    rows = pt.coverage(tables, {}, declared=declared_refs(chapters, tables))
    return {r["paper"]: (r["declared"], r["reported"]) for r in rows}


@pytest.mark.parametrize("paper", sorted(set(TABLES) - {"deck003"}))
def test_at_least_95_percent_of_each_papers_numbers_are_checked(paper):
    """Coverage counts a result only when some profile's check compares it at the paper's word (registered but
    unverified everywhere, a sanity check, a stand-in or a bound other than the paper's value does not count);
    the seed deck is context, never checked."""
    checked, reported = _declared({paper: TABLES[paper]}, CLAIMS.values())[paper]
    if paper in SHORT_OF_COVERAGE:
        pytest.xfail(f"{checked}/{reported}: {SHORT_OF_COVERAGE[paper]}")
    assert checked / reported >= 0.95, f"{paper}: {checked} of {reported} numbers checked in some profile"


def test_coverage_ignores_numbers_that_are_only_unverified(tmp_path):
    _csv(tmp_path, GOOD)
    p = _claims(
        tmp_path,
        """\
        claims:
          - {key: a, claim: c, paper: {ref: "p2000:T1/a/x"}, checks: {smoke: {unverified: r}, offline: {unverified: r}, paper: {tolerance: {abs: 0.1}}}}
          - {key: b, claim: c, paper: {ref: "p2000:T1/a/y"}, checks: {smoke: {unverified: r}, offline: {unverified: r}, paper: {unverified: r}}}
        """,
    )
    tables = {"p2000": pt.load_paper_table(tmp_path / "data" / "papers" / "p2000.csv")}
    assert _declared(tables, [load_claims(p)]) == {"p2000": (1, 3)}
