"""Integrity rules over every claims file (bookkit.claims.integrity): no check that cannot tell right from
wrong, no two checks of one value that contradict each other, sanity checks never read as reproductions."""

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml

from bookkit.claims.claims import claims_schema, evaluate_claim, load_claims
from bookkit.claims.integrity import (
    chapter_code,
    claims_problems,
    double_counted,
    flag_problems,
    paper_value_copies,
    report_problems,
    reproducible_checks,
    same_value_groups,
    sanity_problems,
    significant_digits,
)
from bookkit.claims.paper_tables import load_paper_tables

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = sorted((ROOT / "notebooks").glob("*.claims.yml"))


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: p.name.split(".")[0])
def test_every_claims_file_keeps_the_rules(path):
    ch = load_claims(path)
    code = chapter_code(path.with_name(path.name.replace(".claims.yml", ".md")))
    assert claims_problems(ch, code) == []


def _write(tmp_path, claims: str, name="x"):
    p = tmp_path / f"{name}.claims.yml"
    p.write_text("chapter: x\ntitle: X\nclaims:\n" + textwrap.indent(textwrap.dedent(claims), "  "))
    return load_claims(p)


TWO_DISJOINT = """
- key: a
  claim: the baseline is 47.4
  paper: {value: 47.4, source: "Table 2"}
  checks: {smoke: {unverified: "x"}, offline: {unverified: "x"}, paper: {tolerance: {abs: 2}}}
- key: b
  claim: the baseline is 54.09 (an earlier deck)
  paper: {value: 54.09, source: "deck"}
  checks: {smoke: {unverified: "x"}, offline: {unverified: "x"}, paper: {tolerance: {abs: 3}}}
"""


def test_two_disjoint_checks_of_one_value_are_caught(tmp_path):
    ch = _write(tmp_path, TWO_DISJOINT)
    code = "v = compute()\nrecord('a', v)\nrecord('b', v)\n"
    problems = [p for p in claims_problems(ch, code) if "printed" not in p]  # (both are also too loose)
    assert len(problems) == 1 and "disjoint" in problems[0] and "'a'" in problems[0]
    different = "record('a', f())\nrecord('b', g())\n"  # different computations
    assert [p for p in claims_problems(ch, different) if "printed" not in p] == []
    report = {
        "profile": "paper",
        "claims": [{"chapter": "x", "key": "a", "value": 50.5}, {"chapter": "x", "key": "b", "value": 50.5}],
    }
    assert len(report_problems(report, {"x": ch})) == 1


def test_a_sanity_check_counted_as_a_reproduction_is_caught(tmp_path):
    ch = _write(
        tmp_path,
        """
    - key: n_labels
      claim: 26 labels
      sanity: true
      paper: {value: 26, source: "Table 1"}
      checks: {smoke: {tolerance: {abs: 0}}, offline: {tolerance: {abs: 0}}, paper: {tolerance: {abs: 0}}}
    """,
    )
    assert any("sanity claim" in p for p in claims_problems(ch))
    assert evaluate_claim(ch.claims[0], "smoke", {"n_labels": 26}).status == "sanity"  # and never "reproduced"


def test_iw_compared_in_log10_and_no_tolerance_that_accepts_zero(tmp_path):
    ch = _write(
        tmp_path,
        """
    - key: iw_bert_global_stsb
      claim: I(W) 0.05
      paper: {value: 0.05, source: "Table 2"}
      checks: {smoke: {unverified: "x"}, offline: {unverified: "x"}, paper: {tolerance: {abs: 0.15}}}
    """,
    )
    problems = claims_problems(ch)
    assert any("log10" in p for p in problems) and any("accepts 0" in p for p in problems)


def test_same_value_groups_reads_record_calls():
    code = "record('x', r.min())\nrecord('y', r.min())\nrecord('z', r.max())\n"
    assert same_value_groups(code) == [["x", "y"]]


def test_the_smoke_report_keeps_the_rules(smoke_book):
    report = json.loads(smoke_book.report.read_text())
    claims = {load_claims(p).chapter: load_claims(p) for p in CLAIMS}
    assert report_problems(report, claims) == []


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: p.name.split(".")[0])
def test_claims_files_follow_the_json_schema(path):
    """Independently of the loader: jsonschema on the plain YAML finds no error in any claims file."""
    validator = jsonschema.Draft202012Validator(claims_schema())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def test_the_schema_refuses_what_the_loader_refuses():
    schema = claims_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    good = {
        "chapter": "x",
        "title": "X",
        "claims": [
            {
                "key": "k",
                "claim": "c",
                "paper": {"value": 1, "source": "T1"},
                "checks": {p: {"property": {"op": "lt", "value": "1e-6"}} for p in ("smoke", "offline", "paper")},
            }
        ],
    }
    jsonschema.validate(good, schema)
    for bad in (
        {**good, "extra": 1},
        {**good, "claims": [{**good["claims"][0], "colour": "red"}]},
        {**good, "claims": [{**good["claims"][0], "checks": {"smoke": {"guess": {}}}}]},
        {**good, "claims": ["a", "b"]},
        {
            **good,
            "claims": [
                {
                    **good["claims"][0],
                    "checks": {p: {"property": {"op": "lt", "value": "tiny"}} for p in ("smoke", "offline", "paper")},
                }
            ],
        },
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


# ------------------------------------------------------------------ at the paper's word, each number once (issue 27)
PAPERS = """\
id,table,row,column,metric,value,scale,source,provenance,note,not_registered
T1/a,Table 1,A,r,Pearson r,-0.808,linear,Paper 2000 Table 1,P,,
T1/b,Table 1,B,r,I(W),1.1E-04,log10,Paper 2000 Table 1,P,,
"""


def _project(tmp_path, claims: str):
    (tmp_path / "data" / "papers").mkdir(parents=True)
    (tmp_path / "data" / "papers" / "p2000.csv").write_text(PAPERS)
    (tmp_path / "notebooks").mkdir()
    return _write(tmp_path / "notebooks", claims)


def _checks(paper_check: str) -> str:
    return f"{{smoke: {{unverified: x}}, offline: {{unverified: x}}, paper: {paper_check}}}"


@pytest.mark.parametrize(
    "check, extra, flagged",
    [
        ("{tolerance: {abs: 0.1}}", "", True),  # +-0.1 around a value printed to 0.001
        ("{tolerance: {abs: 0.0005}}", "", False),  # half a unit in its last digit
        ("{tolerance: {printed: true}}", "", False),
        ("{tolerance: {abs: 0.1}}", "  tolerance_reason: the authors state +-0.1 (Sec. 3)\n", False),
        ("{tolerance: {abs: 0.1}, expected_failure: differs}", "", True),  # an expected failure is held to it too
        ("{property: {op: lt, value: 0}}", "", False),  # a bound is the paper's own statement
    ],
)
def test_a_tolerance_looser_than_the_printed_precision_needs_a_reason(tmp_path, check, extra, flagged):
    ch = _project(
        tmp_path,
        f"""
    - key: r
      claim: r is -0.808
      paper: {{ref: "p2000:T1/a"}}
{textwrap.indent(extra, "    ")}      checks: {_checks(check)}
    """,
    )
    problems = [p for p in claims_problems(ch) if "printed" in p]
    assert bool(problems) == flagged, problems
    if flagged:
        assert "accepts ±0.1 around -0.808, printed to ±0.0005" in problems[0]


@pytest.mark.parametrize(
    "check, extra, flagged",
    [
        ("{property: {op: between, value: [-0.81, -0.806]}}", "", True),  # +-0.002 around -0.808 printed to 0.001
        ("{property: {op: close, value: -0.808, abs: 0.01}}", "", True),
        ("{property: {op: between, value: [-0.8085, -0.8075]}}", "", False),  # the printed precision
        ("{property: {op: close, value: -0.808, abs: 0.01}}", "  tolerance_reason: stated +-0.01 (Sec. 3)\n", False),
        ("{property: {op: between, value: [-1, 0]}}", "", False),  # a range, not a band around the paper's value
    ],
)
def test_a_band_around_the_papers_value_wider_than_printed_needs_a_reason(tmp_path, check, extra, flagged):
    """A two-sided property around the paper's own value is a tolerance by another name (issue 40: n_pairs
    between 6,336,000 and 6,464,000 against 6.4e6 printed to +-50,000; snli_n_params a range around an exact count)."""
    ch = _project(
        tmp_path,
        f"""
    - key: r
      claim: r is -0.808
      paper: {{ref: "p2000:T1/a"}}
{textwrap.indent(extra, "    ")}      checks: {_checks(check)}
    """,
    )
    problems = [p for p in claims_problems(ch) if "the band accepts" in p]
    assert bool(problems) == flagged, problems


def test_the_printed_precision_of_a_log10_number(tmp_path):
    ch = _project(
        tmp_path,
        f"""
    - key: iw_b
      claim: I(W) 1.1E-04
      paper: {{ref: "p2000:T1/b"}}
      checks: {_checks("{tolerance: {log10: 1.0}}")}
    """,
    )
    (problem,) = [p for p in claims_problems(ch) if "printed" in p]
    assert "around 1.1E-04" in problem


def test_a_paper_number_reproducible_twice_is_caught(tmp_path):
    ch = _project(
        tmp_path,
        f"""
    - key: r1
      claim: r
      paper: {{ref: "p2000:T1/a"}}
      checks: {_checks("{tolerance: {printed: true}}")}
    - key: r2
      claim: r again
      paper: {{ref: "p2000:T1/a"}}
      checks: {_checks("{tolerance: {printed: true}}")}
    - key: r3
      claim: r on a stand-in
      stand_in: another model
      paper: {{ref: "p2000:T1/a"}}
      checks: {_checks("{tolerance: {printed: true}}")}
    """,
    )
    (problem,) = double_counted([ch])
    assert "p2000:T1/a could be reproduced by 2 claims in paper: x:r1, x:r2" in problem
    assert any("could be reproduced by 2" in p for p in claims_problems(ch))


def test_no_paper_number_counts_twice_in_the_book():
    assert double_counted([load_claims(p) for p in CLAIMS]) == []


@pytest.mark.parametrize("path", CLAIMS, ids=lambda p: p.name.split(".")[0])
def test_sanity_labels_follow_the_rule(path):
    """Identities are labelled sanity; a check of a paper number at its word never is (bookkit.claims.integrity rule 8)."""
    assert sanity_problems(load_claims(path)) == []


def test_the_sanity_rule_finds_identities_and_wrong_labels(tmp_path):
    (tmp_path / "data" / "papers").mkdir(parents=True)
    (tmp_path / "data" / "papers" / "p2000.csv").write_text(
        "id,table,row,column,metric,value,scale,source,provenance,note,not_registered\n"
        "T1/n,Table 1,a,b,count,10662,linear,src,P,,\n"
    )
    (tmp_path / "notebooks").mkdir()
    ch = _write(
        tmp_path / "notebooks",
        """
    - key: identity_err
      claim: an identity holds
      paper: {value: null, source: s}
      checks: {smoke: {property: {op: lt, value: 1.0e-10}}, offline: {property: {op: lt, value: 1.0e-10}}, paper: {property: {op: lt, value: 1.0e-10}}}
    - key: sign
      claim: a sign, not an identity
      paper: {value: null, source: "Someone et al. 2020, Sec. 3"}
      checks: {smoke: {property: {op: lt, value: 0}}, offline: {property: {op: lt, value: 0}}, paper: {property: {op: lt, value: 0}}}
    - key: loss_drops
      claim: the training loop lowers the loss
      paper: {value: null, source: "sanity check of the training loop"}
      checks: {smoke: {property: {op: "true"}}, offline: {property: {op: "true"}}, paper: {property: {op: "true"}}}
    - key: n_items
      claim: the paper's count
      sanity: true
      paper: {ref: "p2000:T1/n"}
      checks: {smoke: {property: {op: eq, value: 200}}, offline: {property: {op: eq, value: 10662}}, paper: {property: {op: eq, value: 10662}}}
    """,
    )
    problems = sanity_problems(ch)
    assert len(problems) == 3 and "'identity_err'" in problems[0] and "'n_items'" in problems[2]
    assert "'loss_drops'" in problems[1] and "names neither a paper's statement" in problems[1]


def test_no_paper_value_is_copied_into_the_code():
    """Code reads the papers' results from data/papers (bookkit.claims.integrity rule 7)."""
    files = sorted((ROOT / "replib").rglob("*.py")) + sorted((ROOT / "bookkit").rglob("*.py"))
    chapters = sorted((ROOT / "notebooks").glob("*.md"))
    assert paper_value_copies(files + chapters, load_paper_tables(ROOT)) == []


def test_the_copy_rule_finds_a_results_digits_and_ignores_ordinary_constants(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("R = {('score', 'identity'): 0.847}\nN = 60.0\nK = 5\nH = 0.5\n")
    (hit,) = paper_value_copies([f], load_paper_tables(ROOT))
    assert hit.startswith(f"{f}:1: 0.847 is hakim2025:corr/score/identity")
    # a negative result is written with a minus of its own: -0.808 is Mickus et al.'s Pearson r of setup (i)
    g = tmp_path / "n.py"
    g.write_text('ROWS = [("(i) polarity", "Pearson r", -0.808)]\n')
    (hit,) = paper_value_copies([g], load_paper_tables(ROOT))
    assert hit.startswith(f"{g}:1: 0.808 is mickus2024:s3.2/polarity/pearson")
    assert significant_digits("4_094_976") == 7 and significant_digits("60.0") == 1


def test_the_rotation_tables_isoscore_is_one_reproduction():
    """The four cells of IsoScore's column are one number (rotation invariance): one claim can reproduce it,
    the other three check the invariance (sanity)."""
    iso = {c.key: c for c in load_claims(ROOT / "notebooks" / "isoscore.claims.yml").claims}
    rot = [c for k, c in iso.items() if k.startswith("rotation_isoscore_") and c.ref]
    assert len(rot) == 4 and [c.key for c in rot if reproducible_checks(c)] == ["rotation_isoscore_0"]


def test_the_protbert_sign_check_admits_the_papers_value():
    """The paper reports +0.791 between ProtBERT's cosine and squared distance; the check must accept it (and
    refuse the opposite sign), whatever our expectation of the sign."""
    (c,) = [
        c
        for c in load_claims(ROOT / "notebooks" / "protein_isotropy.claims.yml").claims
        if c.key == "prot_bert_corr_cosine_sq_euclidean"
    ]
    assert c.paper_value == 0.791 and c.ref == "hakim2025:corr/cosine/sq_euclidean"
    spread = {c.spread: 0.01}
    assert evaluate_claim(c, "paper", {c.key: 0.791, c.spread: 0.0002}).status == "reproduced"
    # agreeing within a spread wider than the paper's printed precision is no reproduction (issue 40)
    assert evaluate_claim(c, "paper", {c.key: 0.80, **spread}).status == "inconclusive"
    assert evaluate_claim(c, "paper", {c.key: -0.791, **spread}).status == "failed"


def test_a_flag_that_is_evidence_names_the_spread_of_its_margin(tmp_path):
    """'IsoScore falls' passed on a margin of 0.008 with no spread (issue 40): a flag compares two sample
    statistics, so it is judged on its margin and the margin's standard error."""
    ch = _write(
        tmp_path,
        """
    - key: isoscore_falls
      claim: IsoScore is lower at the end than at the start
      paper: {value: null, source: "Someone et al. 2020"}
      checks: {smoke: {unverified: x}, offline: {property: {op: "true"}}, paper: {property: {op: "true"}}}
    - key: isoscore_falls_too
      claim: the same, judged on its margin
      spread: isoscore_fall_spread
      paper: {value: null, source: "Someone et al. 2020"}
      checks: {smoke: {unverified: x}, offline: {property: {op: "true"}}, paper: {property: {op: "true"}}}
    - key: seeded_twice
      claim: a seeded run repeats itself
      sanity: true
      paper: {value: null, source: design}
      checks: {smoke: {property: {op: "true"}}, offline: {property: {op: "true"}}, paper: {property: {op: "true"}}}
    """,
    )
    problems = flag_problems(ch)
    assert len(problems) == 2 and all("'isoscore_falls'" in p for p in problems)
    assert problems == [p for p in claims_problems(ch) if "flag" in p]
