"""Integrity rules over every claims file (bookkit.integrity): no check that cannot tell right from
wrong, no two checks of one value that contradict each other, sanity checks never read as reproductions."""

import json
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml

from bookkit.claims import claims_schema, evaluate_claim, load_claims
from bookkit.integrity import chapter_code, claims_problems, report_problems, same_value_groups

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
    problems = claims_problems(ch, code)
    assert len(problems) == 1 and "disjoint" in problems[0] and "'a'" in problems[0]
    assert claims_problems(ch, "record('a', f())\nrecord('b', g())\n") == []  # different computations
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
