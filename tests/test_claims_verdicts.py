"""A verdict per paper (bookkit.verdicts): reproduced, partially reproduced, not reproduced here, with the
reason and the profile; sanity checks and unverified claims are never evidence."""

from pathlib import Path

from bookkit.paper_tables import load_paper_tables
from bookkit.verdicts import chapter_papers, chapter_verdict_markdown, paper_verdicts, verdicts_markdown
from replib.papers import PaperNumber

ROOT = Path(__file__).resolve().parents[1]


def _n(paper, rid, value=1.0):
    return PaperNumber(paper, rid, "T1", "r", "c", "m", value, "linear", "src", "P", printed=str(value))


TABLES = {"p": {f"x{i}": _n("p", f"x{i}") for i in range(4)}, "q": {"y": _n("q", "y")}}


def _c(key, status, ref=None, chapter="ch", **kw):
    return {"chapter": chapter, "key": key, "status": status, "ref": ref, "detail": "d", **kw}


def _report(*claims, status="ok", error=None):
    return {
        "profile": "offline",
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


def test_reproduced_needs_a_paper_number_and_nothing_against():
    v = _one(_c("a", "reproduced", "p:x0"), _c("b", "consistent"), _c("s", "sanity", "p:x1"))
    assert v["verdict"] == "reproduced" and v["paper"] == "p" and v["profile"] == "offline"
    assert v["numbers"] == {"reported": 4, "checked": 1, "reproduced": 1}  # the sanity check is not evidence
    assert "1 of the paper's 4 table numbers reproduced" in v["reason"] and "1 property holds" in v["reason"]


def test_properties_alone_or_a_documented_failure_make_it_partial():
    assert _one(_c("a", "consistent", "p:x0"), _c("b", "unverified", "p:x1"))["verdict"] == "partially reproduced"
    v = _one(_c("a", "reproduced", "p:x0"), _c("b", "expected_failure", "p:x1", deviation="MiniLM differs"))
    assert v["verdict"] == "partially reproduced"
    assert v["expected_failures"] == [("b", "MiniLM differs")] and "MiniLM differs" in v["reason"]
    w = _one(_c("a", "reproduced", "p:x0"), _c("b", "inconclusive", "p:x1"))
    assert w["verdict"] == "partially reproduced" and w["inconclusive"] == ["b"] and "inconclusive" in w["reason"]


def test_nothing_in_support_or_a_crash_is_not_reproduced():
    assert _one(_c("a", "expected_failure", "p:x0"), _c("b", "failed"))["verdict"] == "not reproduced here"
    crash = _one(_c("a", "reproduced", "p:x0"), status="error", error="Timeout after 10 s")
    assert crash["verdict"] == "not reproduced here" and "did not complete (Timeout after 10 s)" in crash["reason"]


def test_only_unverified_or_sanity_is_not_checked():
    v = _one(_c("a", "unverified", "p:x0"), _c("b", "sanity", "p:x1"))
    assert v["verdict"] == "not checked here" and v["numbers"]["checked"] == 0


def test_the_smoke_profile_never_checks_a_paper():
    rep = _report(_c("a", "reproduced", "p:x0"), _c("b", "consistent"))
    (v,) = paper_verdicts({**rep, "profile": "smoke"}, TABLES)
    assert v["verdict"] == "not checked here" and "tiny random models" in v["reason"]


def test_the_markdown_names_the_verdict_and_the_profile():
    v = _one(_c("a", "reproduced", "p:x0"))
    md = chapter_verdict_markdown(v)
    assert md.startswith(":::{admonition} Verdict: ✅ reproduced (profile `offline`)") and md.rstrip().endswith(":::")
    page = verdicts_markdown([[v]])
    assert "## A verdict per paper" in page
    assert "- **A paper (X et al.)** (`ch`): ✅ reproduced, 1 / 1 / 4 numbers reproduced / compared / reported." in page


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
