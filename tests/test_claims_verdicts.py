"""A verdict per paper (bookkit.claims.verdicts), by evidence class: it rests on the paper's own results compared at the
paper's word (most of them holding for "reproduced"); the paper's findings on this run's models, stand-in
experiments and alternative explanations are shown apart and never decide it; sanity checks and unverified
claims are never evidence."""

from pathlib import Path

from bookkit.claims.claims import load_claims
from bookkit.claims.paper_tables import load_paper_tables
from bookkit.claims.verdicts import (
    at_papers_word,
    chapter_papers,
    chapter_verdict_markdown,
    declared_refs,
    paper_verdicts,
    verdicts_markdown,
)
from replib.papers import PaperNumber

ROOT = Path(__file__).resolve().parents[1]


def _n(paper, rid, value=1.0, kind="result"):
    return PaperNumber(paper, rid, "T1", "r", "c", "m", value, "linear", "src", "P", printed=str(value), kind=kind)


TABLES = {
    "p": {**{f"x{i}": _n("p", f"x{i}") for i in range(4)}, "e": _n("p", "e", kind="example")},
    "q": {"y": _n("q", "y")},
}
TOL = "tolerance abs=0.05 (the paper's printed precision)"


def _c(key, status, ref=None, chapter="ch", check=TOL, paper_value=1.0, **kw):
    return {
        "chapter": chapter,
        "key": key,
        "status": status,
        "ref": ref,
        "detail": "d",
        "check": check,
        "paper_value": paper_value,
        **kw,
    }


def _finding(key, status, **kw):
    return _c(key, status, check="gt 0", paper_value=None, **kw)


def _report(*claims, status="ok", error=None):
    return {
        "profile": "offline",
        "started": "2026-11-28T00:15:00+00:00",
        "chapters": [{"chapter": "ch", "title": "A paper (X et al.)", "status": status, "error": error}],
        "claims": list(claims),
    }


def _one(*claims, **kw):
    (v,) = paper_verdicts(_report(*claims, **kw), TABLES)
    return v


def test_the_chapter_reproduces_the_paper_it_refers_to_most():
    rep = _report(_c("a", "reproduced", "p:x0"), _c("b", "unverified", "p:x1"), _c("c", "consistent", "q:y"))
    assert chapter_papers(rep, TABLES) == {"ch": "p"}
    assert paper_verdicts({"profile": "smoke", "chapters": [], "claims": [_c("z", "consistent")]}, TABLES) == []


def test_one_number_of_four_is_not_reproduced():
    """The verdict the issue found wrong: one paper number of four reproduced made the paper 'reproduced'."""
    v = _one(_c("a", "reproduced", "p:x0"), _finding("b", "consistent"), _c("s", "sanity", "p:x1", sanity=True))
    assert v["verdict"] == "partially reproduced"
    assert v["numbers"] == {
        "reported": 4,
        "declared": None,
        "compared": 1,
        "reproduced": 1,
        "consistent": 0,
        "deviating": 0,
    }
    assert "1 of the paper's 4 results compared" in v["reason"] and v["findings"]["hold"] == 1


def test_reproduced_needs_most_numbers_compared_and_holding():
    v = _one(*[_c(f"a{i}", "reproduced", f"p:x{i}") for i in range(3)], _c("b", "unverified", "p:x3"))
    assert v["verdict"] == "reproduced" and v["date"] == "2026-11-28"
    w = _one(*[_c(f"a{i}", "reproduced", f"p:x{i}") for i in range(3)], _c("b", "expected_failure", "p:x3"))
    assert w["verdict"] == "partially reproduced" and w["numbers"]["deviating"] == 1
    three = _one(_c("a", "expected_failure", "p:x0"), _c("b", "failed", "p:x1"), _c("c", "failed", "p:x2"))
    assert three["verdict"] == "not reproduced here"


def test_a_few_numbers_deviating_do_not_refute_the_paper():
    """One of four results compared, deviating: too few to call the paper not reproduced; the words say so."""
    v = _one(_c("a", "expected_failure", "p:x0"), _c("u", "unverified", "p:x1", detail="no weights"))
    assert v["verdict"] == "not checked here" and v["numbers"]["deviating"] == 1
    assert "1 of the paper's 4 results compared" in v["reason"]


def test_without_numbers_compared_the_findings_never_make_a_verdict():
    v = _one(*[_finding(f"f{i}", "consistent") for i in range(5)], _c("u", "unverified", "p:x0", detail="no weights"))
    assert v["verdict"] == "not checked here" and v["numbers"]["compared"] == 0
    assert v["reason"].startswith("Numbers not checked in this run: no weights (0 of the paper's 4 results")
    assert "Other checks of the chapter on this run's models: 5 hold, 0 do not." in v["reason"]


def test_stand_ins_alternatives_examples_and_sanity_never_count_against_the_paper():
    numbers = [_c(f"a{i}", "reproduced", f"p:x{i}") for i in range(3)]
    apart = [
        _c("s", "expected_failure", "p:x3", stand_in="GloVe for the paper's vectors"),
        _c("alt", "expected_failure", "p:e", alternative=True),
        _c("ex", "failed", "p:e"),  # a worked example: a finding, never one of the paper's results
        _c("san", "sanity", "p:x3", sanity=True),
        _c("san2", "inconclusive", sanity=True),  # a sanity check undecided: shown, never evidence
    ]
    v = _one(*numbers, *apart)
    assert v["verdict"] == "reproduced" and v["numbers"]["compared"] == 3
    assert v["stand_in"] == {"hold": 0, "fail": 1, "undecided": 0} and v["alternatives"] == ["alt"]
    assert v["findings"]["fail"] == 1 and v["failed"] == ["ex"]
    assert "Apart, never against the paper" in v["reason"] and "1 sanity check" in v["reason"]
    assert "Sanity checks that did not hold in this run: `san2`." in v["reason"]


def test_a_bound_compares_a_number_only_at_the_papers_word():
    assert at_papers_word("le -0.998", -0.998) and at_papers_word("lt 9.1 (expected to fail)", 9.1)
    assert not at_papers_word("lt 9.15", 9.1) and not at_papers_word("between [0, 1]", 0.5)
    assert not at_papers_word("unverified", 1.0) and at_papers_word(TOL, 1.0)
    v = _one(_c("a", "consistent", "p:x0", check="lt 2", paper_value=1.0))
    assert v["numbers"]["compared"] == 0 and v["findings"]["hold"] == 1


def test_a_crash_is_not_reproduced_and_smoke_never_checks_a_paper():
    crash = _one(_c("a", "reproduced", "p:x0"), status="error", error="Timeout after 10 s")
    assert crash["verdict"] == "not reproduced here" and "did not complete (Timeout after 10 s)" in crash["reason"]
    rep = _report(*[_c(f"a{i}", "reproduced", f"p:x{i}") for i in range(4)])
    (v,) = paper_verdicts({**rep, "profile": "smoke"}, TABLES)
    assert v["verdict"] == "not checked here" and "tiny random models" in v["reason"]


def test_the_markdown_names_the_verdict_the_profile_the_date_and_the_evidence():
    v = _one(*[_c(f"a{i}", "reproduced", f"p:x{i}") for i in range(3)], _finding("f", "expected_failure"))
    md = chapter_verdict_markdown(v)
    assert md.startswith(":::{admonition} Verdict: ✅ reproduced (profile `offline`, 2026-11-28)")
    assert md.rstrip().endswith(":::")
    page = verdicts_markdown([[v]])
    assert "**Profile `offline`, 2026-11-28**" in page
    assert (
        "- **A paper (X et al.)** (`ch`): ✅ reproduced, 3 of 4 numbers compared (3 reproduced, 0 consistent, "
        "0 deviating); other checks: 0 hold, 1 does not." in page
    )


def test_declared_numbers_are_results_compared_at_the_papers_word_in_some_profile(tmp_path):
    (tmp_path / "c.claims.yml").write_text(
        "chapter: c\ntitle: t\nclaims:\n"
        "  - {key: a, claim: c, paper: {value: 1.0, source: s}, checks: {smoke: {unverified: r}, "
        "offline: {unverified: r}, paper: {tolerance: {abs: 0.1}}}}\n"
    )
    cc = load_claims(tmp_path / "c.claims.yml", tables=TABLES)
    cc.claims[0].ref = "p:x0"
    assert declared_refs([cc], TABLES) == {"p:x0"}
    cc.claims[0].stand_in = "a stand-in"
    assert declared_refs([cc], TABLES) == set()
    (v,) = paper_verdicts(_report(_c("u", "unverified", "p:x0")), TABLES, declared={"p:x0", "p:e"})
    assert v["numbers"]["declared"] == 1  # the example is not one of the paper's results


def test_the_projects_papers_each_get_a_verdict_from_a_report():
    tables = load_paper_tables(ROOT)
    chapters = {"isoscore": "rudman2022", "cluster_isotropy": "rajaee2021", "protein_isotropy": "hakim2025"}
    claims = [
        _c(f"k{i}", "consistent", f"{p}:{next(iter(tables[p]))}", chapter=ch)
        for i, (ch, p) in enumerate(chapters.items())
    ]
    claims += [_c("deck", "unverified", "deck003:" + next(iter(tables["deck003"])), chapter="cluster_isotropy")]
    rep = {"profile": "offline", "chapters": [{"chapter": ch, "status": "ok"} for ch in chapters], "claims": claims}
    assert {v["chapter"]: v["paper"] for v in paper_verdicts(rep, tables)} == chapters
