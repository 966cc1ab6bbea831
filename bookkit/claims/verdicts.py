"""A verdict per paper, in the words of ReScience C (*reproduced*, *partially reproduced*, *not reproduced
here*, or *not checked here*), resting on the paper's own numbers only, with the evidence shown by class.

A paper's evidence is the claims of the chapter that reproduces it (the chapter whose claims refer to that
paper's numbers most often, :func:`chapter_papers`), judged in one runner report, in three classes:

- **the paper's numbers**: its results (``kind`` ``result`` in ``data/papers/<paper>.csv``: not a description of
  its data, a worked example or another paper's quoted number) *compared at the paper's word* in this run: a
  tolerance check, or a bound equal to the paper's own value ("always below -0.998"), by a claim that is neither a
  sanity check nor a stand-in experiment. Each is *reproduced* (within its tolerance), *consistent* (agrees
  within a spread too wide to reproduce it, or holds on a documented deviation of the set-up) or *deviating*
  (an expected failure or a failure);
- **the paper's findings**: every other claim that is evidence (its stated results tested on the models this
  run had); stand-in experiments and tests of alternative explanations (``alternative: true``: their failure
  supports the paper) are shown apart and never count against the paper;
- **not checked here**: the claims this profile cannot run, with the reason.

The verdict rests on the numbers alone:

- *reproduced*: most of the paper's numbers (more than half of the results it reports) compared and reproduced,
  none deviating;
- *partially reproduced*: some of its numbers compared hold;
- *not reproduced here*: most of its numbers compared and none holds, or the chapter did not complete;
- *not checked here*: no number of the paper compared in this run (whatever its findings did), or a few compared
  and none holding (too few to refute the paper: the counts are given in words), or the profile is ``smoke``,
  whose tiny random models test the code paths, never the papers.

Sanity checks (hold by construction) are never evidence. "here" is the profile: an offline verdict rests on the
packaged models, never on the papers' own.
"""

from __future__ import annotations

import math
from collections import Counter

from .checker import describe
from .status import STATUS_BADGE, format_value

__all__ = [
    "at_papers_word",
    "chapter_papers",
    "chapter_verdict_markdown",
    "compares",
    "declared_refs",
    "evidence_line",
    "findings_grid",
    "grid_markdown",
    "paper_verdicts",
    "verdicts_markdown",
]

#: how a compared number's status counts
NUMBER_CLASS = {
    "reproduced": "reproduced",
    "consistent": "consistent",
    "deviates": "consistent",
    "inconclusive": "consistent",
    "expected_failure": "deviating",
    "failed": "deviating",
}
#: how a finding's status counts
FINDING_CLASS = {
    "reproduced": "hold",
    "consistent": "hold",
    "deviates": "hold",
    "expected_failure": "fail",
    "failed": "fail",
    "inconclusive": "undecided",
    "does_not_hold": "fail",
}
#: how a cell of the findings grid is shown (bookkit.claims.findings); any other status is "not applicable"
CELL_MARK = {"hold": "✅ holds", "fail": "❌ fails", "undecided": "❔ undecided"}
VERDICT_BADGE = {
    "reproduced": "✅ reproduced",
    "partially reproduced": "🟡 partially reproduced",
    "not reproduced here": "❌ not reproduced here",
    "not checked here": "⏸ not checked here",
}
#: ops whose bound, when it is the paper's own value, compares that value at the paper's word
_BOUNDS = ("lt", "le", "gt", "ge")


def _paper_of(ref: str | None) -> str | None:
    return ref.partition(":")[0] if ref else None


def at_papers_word(check: str, paper_value) -> bool:
    """Whether a check (as :func:`bookkit.claims.checker.describe` words it) compares the paper's value at the paper's
    word: a tolerance around it, or a one-sided bound that is the paper's value itself."""
    words = str(check).split()
    if not words or words[0] == "unverified":
        return False
    if words[0] == "tolerance":
        return True
    if words[0] not in _BOUNDS or len(words) < 2 or isinstance(paper_value, bool):
        return False
    try:
        return math.isclose(float(words[1]), float(paper_value), rel_tol=1e-9, abs_tol=0.0)
    except (TypeError, ValueError):
        return False


def _main(ref: str | None, tables: dict) -> bool:
    paper, _, rid = str(ref or "").partition(":")
    n = tables.get(paper, {}).get(rid)
    return n is not None and getattr(n, "kind", "result") == "result"


def compares(c: dict, tables: dict) -> bool:
    """A report's claim compares one of its paper's results at the paper's word (see the module docstring)."""
    return (
        _main(c.get("ref"), tables)
        and not c.get("sanity")
        and not c.get("stand_in")
        and not c.get("alternative")
        and at_papers_word(c.get("check", ""), c.get("paper_value"))
    )


def declared_refs(chapters, tables: dict) -> set[str]:
    """The paper results some claim of ``chapters`` (:class:`~bookkit.claims.checker.ChapterClaims`) compares at the
    paper's word in some profile's declared check (whether or not that profile has run)."""
    return {
        c.ref
        for ch in chapters
        for c in ch.claims
        if _main(c.ref, tables)
        and not (c.sanity or c.stand_in or getattr(c, "alternative", False))
        and any(at_papers_word(describe(check), c.paper_value) for check in c.checks.values())
    }


def chapter_papers(report: dict, tables: dict) -> dict[str, str]:
    """chapter -> the paper it reproduces: the paper (a table of ``tables``) its claims refer to most often;
    chapters whose claims refer to no paper (the book's own experiments) are left out."""
    counts: dict[str, Counter] = {}
    for c in report.get("claims", []):
        paper = _paper_of(c.get("ref"))
        if paper in tables:
            counts.setdefault(c["chapter"], Counter())[paper] += 1
    return {ch: cnt.most_common(1)[0][0] for ch, cnt in counts.items()}


def _short(text: str | None, n: int = 160) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _n(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _verdict(v: dict, crashed: bool) -> str:
    """The verdict on the paper's own numbers (see the module docstring)."""
    n = v["numbers"]
    holding = n["reproduced"] + n["consistent"]
    if crashed:
        return "not reproduced here"
    if v["profile"] == "smoke" or n["compared"] == 0:
        return "not checked here"
    if 2 * n["reproduced"] > n["reported"] and not n["deviating"]:
        return "reproduced"
    if holding:
        return "partially reproduced"
    return "not reproduced here" if 2 * n["compared"] > n["reported"] else "not checked here"


def _keys(keys: list[str], most: int = 4) -> str:
    return ", ".join(f"`{k}`" for k in keys[:most]) + (", …" if len(keys) > most else "")


def _numbers_text(v: dict) -> str:
    n = v["numbers"]
    declared = "" if n.get("declared") is None else f"; {n['declared']} compared in some profile's declared checks"
    if v["profile"] == "smoke":
        return "The smoke profile runs tiny random models: its checks test the code paths, not the paper."
    if not n["compared"]:
        why = f": {_short(v['numbers_why'], 200)}" if v.get("numbers_why") else ""
        return f"Numbers not checked in this run{why} (0 of the paper's {n['reported']} results compared{declared})."
    return (
        f"Numbers: {n['compared']} of the paper's {n['reported']} results compared at the paper's word in this run: "
        f"{n['reproduced']} reproduced, {n['consistent']} consistent, {n['deviating']} deviating"
        + (f" ({_keys(v['numbers_deviating'])})" if v["numbers_deviating"] else "")
        + f"{declared}."
    )


def _findings_text(v: dict) -> str:
    f = v["findings"]
    if not any(f.values()):
        return "Other checks: none tested in this run."
    out = f"Other checks of the chapter on this run's models: {_n(f['hold'], 'holds', 'hold')}, {_n(f['fail'], 'does not', 'do not')}"
    if v["findings_fail"]:
        why = dict(v["expected_failures"])
        fails = [f"`{k}`" + (f": {_short(why[k], 110)}" if why.get(k) else "") for k in v["findings_fail"][:3]]
        out += " (" + "; ".join(fails) + ("; …" if len(v["findings_fail"]) > 3 else "") + ")"
    if f["undecided"]:
        out += f", {f['undecided']} undecided (the spread straddles the bound)"
    return out + "."


def _cell(c: dict) -> dict:
    """One claim of the findings grid as a cell: its class (hold, fail, undecided, or n/a), value, spread, what."""
    tail = c["claim"].rpartition(f": on {c['model']}")[2].strip()
    return {
        "class": FINDING_CLASS.get(c["status"], "n/a"),
        "value": c.get("value"),
        "spread": c.get("spread"),
        "what": tail[1:-1] if tail.startswith("(") else "",
        "reason": c.get("detail") if c["status"] == "unverified" else None,
    }


def findings_grid(report: dict, paper: str) -> list[dict]:
    """The paper's findings on every model of the book in ``report`` (the claims :mod:`bookkit.claims.findings` makes,
    from any chapter): one row per finding, ``id``, ``source`` (section and the paper's words), ``statement`` and
    ``cells`` (model -> list of :func:`_cell`), in the report's order."""
    rows: dict[str, dict] = {}
    for c in report.get("claims", []):
        if not c.get("finding") or _paper_of(c["finding"]) != paper:
            continue
        row = rows.setdefault(
            c["finding"],
            {
                "id": c["finding"],
                "source": c.get("source") or "",
                "statement": c["claim"].rpartition(f": on {c['model']}")[0],
                "cells": {},
            },
        )
        row["cells"].setdefault(c["model"], []).append(_cell(c))
    return list(rows.values())


def _grid_text(v: dict) -> str:
    n = Counter(cell["class"] for row in v.get("grid") or [] for cells in row["cells"].values() for cell in cells)
    if not v.get("grid"):
        return ""
    return (
        f"Its findings on the book's models ({_n(len(v['grid']), 'finding', 'findings')}, the grid below): "
        f"{_n(n['hold'], 'holds', 'hold')}, {_n(n['fail'], 'fails', 'fail')}, {n['undecided']} undecided, "
        f"{n['n/a']} not applicable; a finding that fails on a model of the book is a finding about that model, "
        "never counted against the paper."
    )


def _cell_markdown(cells: list[dict]) -> str:
    out = []
    for cell in cells:
        what = f"{cell['what']}: " if len(cells) > 1 and cell["what"] else ""
        if cell["class"] == "n/a":
            out.append(f"{what}n/a ({_short(cell['reason'], 60)})")
        else:
            spread = f" ± {format_value(2 * cell['spread'])}" if cell.get("spread") else ""
            out.append(f"{what}{CELL_MARK[cell['class']]} {format_value(cell['value'])}{spread}")
    return "; ".join(out)


def _models(grid: list[dict]) -> list[str]:
    """The grid's models, the one with most findings tested first (then by name)."""
    tested = Counter(m for row in grid for m, cells in row["cells"].items() if any(c["class"] != "n/a" for c in cells))
    return sorted({m for row in grid for m in row["cells"]}, key=lambda m: (-tested[m], m))


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def grid_markdown(grid: list[dict]) -> str:
    """The findings x models grid of one paper as a Markdown table (holds, fails, undecided with the values;
    not applicable with the reason)."""
    if not grid:
        return ""
    models = _models(grid)
    out = [
        "| the paper's finding, in its words | tested as | " + " | ".join(models) + " |",
        "|---|---|" + "---|" * len(models),
    ]
    for row in grid:
        cells = [_cell_markdown(row["cells"].get(m, [])) or "—" for m in models]
        out.append(f"| {_md(row['source'])} | {_md(row['statement'])} | " + " | ".join(map(_md, cells)) + " |")
    return "\n".join(out) + "\n"


def _grid_line(grid: list[dict]) -> str:
    """The grid in one line: each finding's name and, per model, its mark and word (front page); a model with
    cells of several outcomes (several set-ups) gives each outcome's count."""
    models = _models(grid)
    parts = []
    for row in grid:
        tested = []
        for m, cells in sorted(row["cells"].items(), key=lambda mc: models.index(mc[0])):
            classes = [c["class"] for c in cells if c["class"] in CELL_MARK]
            kinds = list(dict.fromkeys(classes))
            if len(kinds) == 1:
                tested.append(f"{m} {CELL_MARK[kinds[0]]}")
            elif kinds:
                tested.append(
                    f"{m} " + ", ".join(f"{CELL_MARK[k]} {classes.count(k)} of {len(classes)}" for k in kinds)
                )
        parts.append(f"{row['id'].partition(':')[2]}: " + (", ".join(tested) if tested else "not applicable"))
    return "; ".join(parts)


def _apart_text(v: dict) -> str:
    s, alt = v["stand_in"], v["alternatives"]
    parts = []
    if sum(s.values()):
        parts.append(f"on stand-ins for the paper's set-up, {s['hold']} hold and {s['fail']} do not")
    if alt:
        parts.append(
            _n(len(alt), "alternative explanation tested", "alternative explanations tested") + f" ({_keys(alt)})"
        )
    return ("Apart, never against the paper: " + "; ".join(parts) + ".") if parts else ""


def _not_checked_text(v: dict) -> str:
    out = []
    if v["not_checked"]:
        reasons = "; ".join(f"{k}: {_short(r, 120)}" for r, k in v["not_checked"][:2])
        out.append(f"Not checked here: {sum(k for _, k in v['not_checked'])} claims ({reasons}).")
    if v["counts"].get("sanity"):
        out.append(
            f"{_n(v['counts']['sanity'], 'sanity check', 'sanity checks')} (hold by construction, not evidence)."
        )
    if v["sanity_open"]:
        out.append(f"Sanity checks that did not hold in this run: {_keys(v['sanity_open'])}.")
    return " ".join(out)


def paper_verdicts(report: dict, tables: dict, declared: set[str] | None = None) -> list[dict]:
    """The verdict on each paper a chapter of ``report`` reproduces (see the module docstring).

    Parameters
    ----------
    report : a runner report (one profile)
    tables : the papers' tables, ``{paper: {id: PaperNumber}}`` (:func:`replib.papers.load_paper_tables`)
    declared : the paper results some profile's declared check compares (:func:`declared_refs`), if known

    Returns
    -------
    list of dict
        One per paper, in the report's chapter order: ``paper``, ``chapter``, ``title``, ``profile``, ``date``,
        ``verdict``, ``reason``, ``counts`` (per status), ``numbers`` (``reported``: the paper's results,
        ``declared``, ``compared`` in this run, ``reproduced``, ``consistent``, ``deviating``), ``findings``,
        ``stand_in`` (``hold``, ``fail``, ``undecided``), ``alternatives``, ``not_checked`` ((reason, count)),
        ``expected_failures`` (key, reason), ``inconclusive`` and ``failed`` (keys).
    """
    papers = chapter_papers(report, tables)
    runs = {ch["chapter"]: ch for ch in report.get("chapters", [])}
    out = []
    for chapter in dict.fromkeys([*runs, *papers]):
        paper = papers.get(chapter)
        if paper is None:
            continue
        claims = [c for c in report.get("claims", []) if c["chapter"] == chapter and not c.get("finding")]
        mine = [c for c in claims if _paper_of(c.get("ref")) == paper]
        numbers = [c for c in mine if compares(c, tables) and c["status"] in NUMBER_CLASS]
        number_of = {}  # one verdict per number of the paper: the first claim comparing it
        for c in numbers:
            number_of.setdefault(c["ref"], NUMBER_CLASS[c["status"]])
        cls = Counter(number_of.values())
        evidence = [c for c in claims if c not in numbers and not c.get("sanity") and c["status"] in FINDING_CLASS]
        apart = [c for c in evidence if c.get("stand_in")]
        alternatives = [c["key"] for c in evidence if c.get("alternative") and not c.get("stand_in")]
        findings = [c for c in evidence if not c.get("stand_in") and not c.get("alternative")]
        unverified = Counter(c.get("detail") or "" for c in claims if c["status"] == "unverified")
        results = [n for n in tables[paper].values() if getattr(n, "kind", "result") == "result"]
        why = Counter(
            c.get("detail") or "" for c in mine if c["status"] == "unverified" and _main(c.get("ref"), tables)
        )
        run = runs.get(chapter)
        v = {
            "paper": paper,
            "chapter": chapter,
            "title": (run or {}).get("title") or chapter,
            "profile": report.get("profile", "?"),
            "date": str(report.get("started") or "?")[:10],
            "counts": dict(Counter(c["status"] for c in claims)),
            "numbers": {
                "reported": len(results),
                "declared": None if declared is None else sum(n.ref in declared for n in results),
                "compared": len(number_of),
                "reproduced": cls["reproduced"],
                "consistent": cls["consistent"],
                "deviating": cls["deviating"],
            },
            "numbers_deviating": [c["key"] for c in numbers if NUMBER_CLASS[c["status"]] == "deviating"],
            "numbers_why": why.most_common(1)[0][0] if why else None,
            "findings_fail": [c["key"] for c in findings if FINDING_CLASS[c["status"]] == "fail"],
            "stand_in": {k: sum(FINDING_CLASS[c["status"]] == k for c in apart) for k in ("hold", "fail", "undecided")},
            "alternatives": alternatives,
            "sanity_open": [c["key"] for c in claims if c.get("sanity") and c["status"] in FINDING_CLASS],
            "not_checked": unverified.most_common(),
            "expected_failures": [
                (c["key"], c.get("deviation") or c.get("detail")) for c in claims if c["status"] == "expected_failure"
            ],
            "inconclusive": [c["key"] for c in claims if c["status"] == "inconclusive"],
            "failed": [c["key"] for c in claims if c["status"] == "failed"],
        }
        v["findings"] = {
            k: sum(FINDING_CLASS[c["status"]] == k for c in findings) for k in ("hold", "fail", "undecided")
        }
        v["grid"] = findings_grid(report, paper)
        crashed = run is not None and run.get("status") != "ok"
        v["verdict"] = _verdict(v, crashed)
        texts = [_numbers_text(v), _grid_text(v), _findings_text(v), _apart_text(v), _not_checked_text(v)]
        if v["failed"]:
            texts.append(f"{_n(len(v['failed']), 'claim', 'claims')} failed ({_keys(v['failed'])}).")
        if crashed:
            texts.insert(0, f"The chapter did not complete ({_short(run.get('error'), 200)}).")
        v["reason"] = " ".join(t for t in texts if t)
        out.append(v)
    return out


def evidence_line(v: dict) -> str:
    """The verdict's evidence in one line, for the front page: numbers compared, and what the findings did."""
    n, f = v["numbers"], v["findings"]
    nums = f"{n['compared']} of {n['reported']} numbers compared"
    if n["compared"]:
        nums += f" ({n['reproduced']} reproduced, {n['consistent']} consistent, {n['deviating']} deviating)"
    finds = f"other checks: {_n(f['hold'], 'holds', 'hold')}, {_n(f['fail'], 'does not', 'do not')}"
    finds += f", {f['undecided']} undecided" if f["undecided"] else ""
    grid = f"; findings on the book's models: {_grid_line(v['grid'])}" if v.get("grid") else ""
    return f"{nums}; {finds}{grid}"


def chapter_verdict_markdown(verdict: dict) -> str:
    """The verdict shown at the top of a chapter: one admonition with the verdict, the profile, the date and the
    evidence by class.

    A colon fence (MyST ``colon_fence``): the title holds backticks, which a backtick fence's info string may not
    (CommonMark), so a backtick fence would be read as a paragraph and its closing fence would swallow the page."""
    return "\n".join(
        [
            f":::{{admonition}} Verdict: {VERDICT_BADGE[verdict['verdict']]} (profile `{verdict['profile']}`, "
            f"{verdict.get('date', '?')})",
            ":class: replib-verdict",
            f"{verdict['reason']} Every claim, with its paper value, ours and its status, is in the table below "
            "and on the {doc}`validation page <../book/validation>`.",
            ":::",
            "",
        ]
    ) + (
        "\n**The paper's findings on the book's models** (a finding that fails on a model of the book is a finding "
        "about that model, never counted against the paper):\n\n" + grid_markdown(verdict["grid"]) + "\n"
        if verdict.get("grid")
        else ""
    )


def verdicts_markdown(verdicts_by_profile: list[list[dict]]) -> str:
    """The validation page's section "A verdict per paper": one list per profile."""
    out = [
        "## A verdict per paper",
        "",
        "In the words of ReScience C, on the paper's own numbers only: *reproduced* (most of the paper's results "
        "compared at its word and reproduced, none deviating), *partially reproduced* (some hold), *not reproduced "
        "here* (most compared, none holds), or *not checked here* (none, or too few to refute it, compared in "
        "the profile). The paper's "
        "findings tested on the models the run had, stand-in experiments and alternative explanations are shown "
        "apart and never decide the verdict; sanity checks and unverified claims are never evidence. Statuses: "
        + ", ".join(f"{b}" for b in STATUS_BADGE.values())
        + ".",
        "",
    ]
    for verdicts in verdicts_by_profile:  # a list, not a table: the reasons are paragraphs (no table wider
        if not verdicts:  # than the text column, issue 29)
            continue
        out += [f"**Profile `{verdicts[0]['profile']}`, {verdicts[0].get('date', '?')}**", ""]
        for v in verdicts:
            out.append(
                f"- **{v['title']}** (`{v['chapter']}`): {VERDICT_BADGE[v['verdict']]}, {evidence_line(v)}. "
                + " ".join(v["reason"].split())
            )
        out.append("")
    return "\n".join(out)
