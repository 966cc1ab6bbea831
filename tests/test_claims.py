"""Claims files: schema validation and the checker's verdicts."""

import textwrap

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from replib.record import GLUE_PREFIX, RECORD_MIME, _plain, read_records, record
from bookkit.claims import ClaimsFileError, check_chapter, evaluate_claim, load_claims


def _write(tmp_path, body):
    p = tmp_path / "x.claims.yml"
    p.write_text(textwrap.dedent(body))
    return p


BASE = """
chapter: x
title: X
claims:
  - key: k
    claim: c
    paper: {value: 2.0, source: "Table 1, p. 3"}
    checks:
      smoke: %s
      offline: {property: {op: gt, value: 0}}
      paper: {unverified: "needs a GPU"}
"""


def _claims(tmp_path, smoke_check, extra=""):
    return load_claims(_write(tmp_path, BASE % smoke_check + extra))


@pytest.mark.parametrize(
    "check,value,status",
    [
        ("{tolerance: {abs: 0.1}}", 2.05, "reproduced"),
        ("{tolerance: {abs: 0.1}}", 2.2, "failed"),
        ("{tolerance: {rel: 0.1}}", 2.15, "reproduced"),
        ("{tolerance: {rel: 0.01}}", 2.15, "failed"),
        ("{tolerance: {log10: 1}}", 15.0, "reproduced"),
        ("{tolerance: {log10: 1}}", 25.0, "failed"),
        ("{tolerance: {log10: 1}}", -2.0, "failed"),
        ("{property: {op: lt, value: 3}}", 2.9, "consistent"),
        ("{property: {op: lt, value: 3}}", 3.0, "failed"),
        ("{property: {op: between, value: [1, 2]}}", 1.5, "consistent"),
        ("{property: {op: between, value: [1, 2]}}", 2.5, "failed"),
        ("{property: {op: 'true'}}", True, "consistent"),
        ("{property: {op: 'true'}}", 1, "failed"),
        ("{property: {op: 'false'}}", False, "consistent"),
        ("{property: {op: gt, value: 0}}", float("nan"), "failed"),
        ("{tolerance: {abs: 1}}", float("inf"), "failed"),
        ("{tolerance: {abs: 1}}", "2.0", "failed"),
    ],
)
def test_verdicts(tmp_path, check, value, status):
    ch = _claims(tmp_path, check)
    assert evaluate_claim(ch.claims[0], "smoke", {"k": value}).status == status


def test_key_comparisons(tmp_path):
    ch = _claims(tmp_path, "{property: {op: close, key: other, abs: 0.01}}")
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 1.0, "other": 1.005}).status == "consistent"
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 1.0, "other": 1.1}).status == "failed"
    r = evaluate_claim(ch.claims[0], "smoke", {"k": 1.0})
    assert r.status == "failed" and "comparison key" in r.detail
    ch = _claims(tmp_path, "{property: {op: lt, key: other}}")
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 1.0, "other": 2.0}).status == "consistent"


def test_missing_key_error_unverified_and_deviation(tmp_path):
    ch = _claims(tmp_path, "{tolerance: {abs: 0.1}}")
    r = evaluate_claim(ch.claims[0], "smoke", {})
    assert r.status == "failed" and "missing key" in r.detail
    r = evaluate_claim(ch.claims[0], "smoke", {"k": 2.0}, notebook_error="timeout")
    assert r.status == "failed" and "did not complete" in r.detail
    assert evaluate_claim(ch.claims[0], "paper", {}).status == "unverified"
    ch = load_claims(
        _write(
            tmp_path,
            (BASE % "{property: {op: gt, value: 1}}").replace(
                "    checks:", "    deviation: the sign differs\n    checks:"
            ),
        )
    )
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 2.0}).status == "deviates"
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 0.0}).status == "failed"
    with pytest.raises(ValueError, match="unknown profile"):
        check_chapter(ch, "gpu", {})


OK = BASE % "{tolerance: {abs: 0.1}}"


@pytest.mark.parametrize(
    "body,match",
    [
        (OK.replace('source: "Table 1, p. 3"', "table: 1"), "source"),
        (OK + OK.split("claims:\n")[1], "duplicate key"),
        (OK.replace('      paper: {unverified: "needs a GPU"}\n', ""), "no check for profile"),
        (BASE % "{guess: {abs: 1}}", "unknown"),
        (BASE % "{unverified: ''}", "reason"),
        (BASE % "{property: {op: approx, value: 1}}", "op must be"),
        (BASE % "{property: {op: lt}}", "exactly one of value/key"),
        (BASE % "{property: {op: between, value: 1}}", "between needs"),
        (BASE.replace("value: 2.0", "value: null") % "{tolerance: {abs: 1}}", "numeric paper value"),
        ("claims: [\n  - {key: a", "not valid YAML"),
    ],
)
def test_schema_errors(tmp_path, body, match):
    with pytest.raises(ClaimsFileError, match=match):
        load_claims(_write(tmp_path, body))


def test_record_plain_values():
    np = pytest.importorskip("numpy")
    assert _plain(np.float32(0.5)) == 0.5 and isinstance(_plain(np.int64(3)), int)
    assert _plain(np.bool_(True)) is True
    assert _plain(np.arange(3)) == [0, 1, 2]
    with pytest.raises(TypeError):
        _plain(object())
    with pytest.raises(ValueError, match="record name"):
        record("bad name", 1.0)


def test_read_records_reads_glue_outputs():
    nb = new_notebook()
    cell = new_code_cell("record('a', 1.5)")
    cell.outputs = [
        new_output(
            "display_data",
            data={GLUE_PREFIX + "text/plain": "1.5", GLUE_PREFIX + RECORD_MIME: {"name": "a", "value": 1.5}},
            metadata={"scrapbook": {"name": "a", "mime_prefix": GLUE_PREFIX}},
        ),
        new_output("stream", text="noise"),
    ]
    nb.cells = [cell]
    nb = nbformat.reads(nbformat.writes(nb), as_version=4)  # through JSON, as on disk
    assert read_records(nb) == {"a": 1.5}


@pytest.mark.parametrize(
    "check,records,status",
    [
        # the paper's claim does not hold in this profile, as documented: deviates, with the reason
        ('{property: {op: gt, value: 3}, expected_failure: "model differs"}', {"k": 2.5}, "deviates"),
        ('{tolerance: {abs: 0.1}, expected_failure: "model differs"}', {"k": 2.5}, "deviates"),
        # strict: when it holds after all, the file is out of date -> failed
        ('{property: {op: gt, value: 1}, expected_failure: "model differs"}', {"k": 2.5}, "failed"),
        # a missing number is never excused
        ('{property: {op: gt, value: 3}, expected_failure: "model differs"}', {}, "failed"),
    ],
)
def test_expected_failure_is_strict(tmp_path, check, records, status):
    c = _claims(tmp_path, check).claims[0]
    r = evaluate_claim(c, "smoke", records)
    assert r.status == status, r.detail
    if status == "deviates":
        assert r.deviation == "model differs" and "expected to fail" in r.check


def test_expected_failure_needs_reason_and_a_real_check(tmp_path):
    with pytest.raises(ClaimsFileError, match="reason"):
        _claims(tmp_path, '{property: {op: gt, value: 3}, expected_failure: ""}')
    with pytest.raises(ClaimsFileError, match="unverified"):
        _claims(tmp_path, '{unverified: "x", expected_failure: "y"}')


# ------------------------------------------------------------------ the checker fails closed (issue 16)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), None, "0.5", [1.0], {"a": 1}, True])
@pytest.mark.parametrize(
    "check",
    [
        "{property: {op: ne, value: 0}}",
        "{property: {op: gt, value: 0}}",
        "{property: {op: lt, value: 1e9}}",
        "{property: {op: between, value: [-1e9, 1e9]}}",
        "{property: {op: close, value: 0.5, abs: 1e9}}",
    ],
)
def test_non_numbers_never_pass_a_numeric_property(tmp_path, check, value):
    ch = _claims(tmp_path, check)
    r = evaluate_claim(ch.claims[0], "smoke", {"k": value})
    assert r.status == "failed", (check, value, r.detail)


@pytest.mark.parametrize("other", [float("nan"), float("inf"), float("-inf"), None, "1"])
def test_a_non_finite_comparison_key_fails(tmp_path, other):
    ch = _claims(tmp_path, "{property: {op: lt, key: other}}")
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 0.5, "other": other}).status == "failed"
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 0.5, "other": 1.0}).status == "consistent"


def test_numbers_in_any_yaml_spelling(tmp_path):
    """PyYAML reads 1e-6 (no dot) as a string: the loader turns numeric strings into numbers."""
    ch = _claims(tmp_path, "{property: {op: lt, value: 1e-6}}")
    assert ch.claims[0].checks["smoke"]["property"]["value"] == 1e-6
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 1e-9}).status == "consistent"
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 1e-3}).status == "failed"
    ch = _claims(tmp_path, "{tolerance: {abs: 1e-2}}")
    assert ch.claims[0].checks["smoke"]["tolerance"]["abs"] == 0.01


@pytest.mark.parametrize(
    "body,match",
    [
        (BASE % "{property: {op: lt, value: tiny}}", "expected a number"),
        (BASE % "{tolerance: {abs: .nan}}", "finite"),
        (BASE % "{tolerance: {abs: -1}}", ">= 0"),
        (BASE % "{property: {op: gt, value: 0, value: 1}}", "duplicate key"),
        (BASE.replace("    claim: c\n", "    claim: c\n    claim: d\n") % "{tolerance: {abs: 1}}", "duplicate key"),
        (BASE.replace("    claim: c\n", "    claim: c\n    colour: red\n") % "{tolerance: {abs: 1}}", "unknown field"),
        (BASE.replace("title: X\n", "title: X\nextra: 1\n") % "{tolerance: {abs: 1}}", "unknown field"),
        ("chapter: x\ntitle: X\nclaims: [a, b]\n", "a claim is a mapping"),
        (BASE % "{property: {op: lt, value: 1, within: 2}}", "unknown field"),
    ],
)
def test_malformed_claims_files_are_refused(tmp_path, body, match):
    with pytest.raises(ClaimsFileError, match=match):
        load_claims(_write(tmp_path, body))


def test_sanity_checks_are_never_reproductions(tmp_path):
    ch = _claims(tmp_path, "{tolerance: {abs: 0.1}}", "")
    ch.claims[0].sanity = True
    r = evaluate_claim(ch.claims[0], "smoke", {"k": 2.0})
    assert r.status == "sanity"
    assert evaluate_claim(ch.claims[0], "smoke", {"k": 3.0}).status == "failed"


def test_a_stand_in_is_at_best_consistent(tmp_path):
    body = BASE.replace("    claim: c\n", "    claim: c\n    stand_in: GloVe-50d instead of the paper's word2vec\n")
    ch = load_claims(_write(tmp_path, body % "{tolerance: {abs: 0.1}}"))
    r = evaluate_claim(ch.claims[0], "smoke", {"k": 2.0})
    assert r.status == "consistent" and "stand-in" in r.detail
