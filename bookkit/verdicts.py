"""A verdict per paper, in the words of ReScience C: *reproduced*, *partially reproduced* or *not reproduced
here*, with the reason and the profile it rests on.

A paper's evidence is the claims of the chapter that reproduces it (the chapter whose claims refer to that
paper's numbers most often, :func:`chapter_papers`), judged in one runner report:

- **supporting**: ``reproduced`` (a paper number within its tolerance), ``consistent`` (a property of the
  paper holds) and ``deviates`` (it holds on a stand-in for the paper's set-up);
- **against**: ``expected_failure`` (documented not to hold here, with the scientific reason) and ``failed``;
- **undecided**: ``inconclusive`` (the value's spread straddles the bound);
- never evidence: ``sanity`` (holds by construction) and ``unverified`` (not run in this profile).

The verdict is

- *reproduced*: at least one of the paper's numbers reproduced, nothing against and nothing undecided;
- *not reproduced here*: the chapter did not complete, or nothing supports the paper;
- *partially reproduced*: anything between;
- *not checked here*: no claim is evidence in this profile (all unverified or sanity), or the profile is
  ``smoke``, whose tiny random models test the code paths, never the papers.

"here" is the profile: an offline verdict rests on the packaged stand-in models, never on the papers' own.
"""

from __future__ import annotations

from collections import Counter

from .status import STATUS_BADGE

__all__ = ["chapter_papers", "chapter_verdict_markdown", "paper_verdicts", "verdicts_markdown"]

SUPPORTING = ("reproduced", "consistent", "deviates")
AGAINST = ("expected_failure", "failed")
UNDECIDED = ("inconclusive",)
VERDICT_BADGE = {
    "reproduced": "✅ reproduced",
    "partially reproduced": "🟡 partially reproduced",
    "not reproduced here": "❌ not reproduced here",
    "not checked here": "⏸ not checked here",
}


def _paper_of(ref: str | None) -> str | None:
    return ref.partition(":")[0] if ref else None


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


def _verdict(run: dict | None, counts: Counter, n_reproduced: int, profile: str) -> str:
    supporting = sum(counts[s] for s in SUPPORTING)
    against = sum(counts[s] for s in AGAINST)
    undecided = sum(counts[s] for s in UNDECIDED)
    if run is not None and run.get("status") != "ok":
        return "not reproduced here"
    if profile == "smoke" or supporting + against + undecided == 0:
        return "not checked here"
    if supporting == 0:
        return "not reproduced here"
    if n_reproduced and not against and not undecided:
        return "reproduced"
    return "partially reproduced"


def _n(k: int, one: str, many: str) -> str:
    return f"{k} {one if k == 1 else many}"


def _reason(v: dict) -> str:
    """One paragraph: what the verdict rests on."""
    n = v["numbers"]
    cnt = v["counts"]
    parts = [
        f"{n['reproduced']} of the paper's {n['reported']} table numbers reproduced, {n['checked']} compared "
        f"in this profile",
        _n(cnt.get("consistent", 0), "property holds", "properties hold"),
    ]
    if v["profile"] == "smoke":
        parts.insert(0, "the smoke profile runs tiny random models: its checks test the code paths, not the paper")
    if cnt.get("deviates"):
        parts.append(_n(cnt["deviates"], "claim holds", "claims hold") + " on a stand-in for its set-up")
    if v["expected_failures"]:
        parts.append(
            _n(len(v["expected_failures"]), "claim does", "claims do")
            + " not hold here, as documented ("
            + "; ".join(f"`{k}`: {_short(r, 120)}" for k, r in v["expected_failures"][:3])
            + ("; …" if len(v["expected_failures"]) > 3 else "")
            + ")"
        )
    if v["inconclusive"]:
        parts.append(f"{len(v['inconclusive'])} inconclusive (" + ", ".join(f"`{k}`" for k in v["inconclusive"]) + ")")
    if v["failed"]:
        parts.append(f"{len(v['failed'])} failed (" + ", ".join(f"`{k}`" for k in v["failed"]) + ")")
    if cnt.get("unverified"):
        parts.append(f"{cnt['unverified']} not run in this profile")
    if cnt.get("sanity"):
        parts.append(f"{cnt['sanity']} sanity checks (not evidence)")
    return "; ".join(parts) + "."


def paper_verdicts(report: dict, tables: dict) -> list[dict]:
    """The verdict on each paper a chapter of ``report`` reproduces (see the module docstring).

    Parameters
    ----------
    report : a runner report (one profile)
    tables : the papers' tables, ``{paper: {id: PaperNumber}}`` (:func:`replib.papers.load_paper_tables`)

    Returns
    -------
    list of dict
        One per paper, in the report's chapter order: ``paper``, ``chapter``, ``title``, ``profile``,
        ``verdict``, ``reason``, ``counts`` (per status), ``numbers`` (``reported``, ``checked``,
        ``reproduced``: the paper's numbers), ``expected_failures`` (key, reason), ``inconclusive`` and
        ``failed`` (keys).
    """
    papers = chapter_papers(report, tables)
    runs = {ch["chapter"]: ch for ch in report.get("chapters", [])}
    order = list(dict.fromkeys([*runs, *papers]))
    out = []
    for chapter in order:
        paper = papers.get(chapter)
        if paper is None:
            continue
        claims = [c for c in report.get("claims", []) if c["chapter"] == chapter]
        counts = Counter(c["status"] for c in claims)
        refs = {c["ref"] for c in claims if _paper_of(c.get("ref")) == paper}
        checked = {c["ref"] for c in claims if c.get("ref") in refs and c["status"] not in ("unverified", "sanity")}
        reproduced = {c["ref"] for c in claims if c.get("ref") in refs and c["status"] == "reproduced"}
        run = runs.get(chapter)
        v = {
            "paper": paper,
            "chapter": chapter,
            "title": (run or {}).get("title") or chapter,
            "profile": report.get("profile", "?"),
            "counts": dict(counts),
            "numbers": {"reported": len(tables[paper]), "checked": len(checked), "reproduced": len(reproduced)},
            "expected_failures": [
                (c["key"], c.get("deviation") or c.get("detail")) for c in claims if c["status"] == "expected_failure"
            ],
            "inconclusive": [c["key"] for c in claims if c["status"] == "inconclusive"],
            "failed": [c["key"] for c in claims if c["status"] == "failed"],
        }
        v["verdict"] = _verdict(run, counts, len(reproduced), v["profile"])
        crashed = run is not None and run.get("status") != "ok"
        v["reason"] = (
            f"the chapter did not complete ({_short(run.get('error'), 200)}); " if crashed else ""
        ) + _reason(v)
        out.append(v)
    return out


def chapter_verdict_markdown(verdict: dict) -> str:
    """The verdict shown at the top of a chapter: one admonition with the verdict, the profile and the reason.

    A colon fence (MyST ``colon_fence``): the title holds backticks, which a backtick fence's info string may not
    (CommonMark), so a backtick fence would be read as a paragraph and its closing fence would swallow the page."""
    return "\n".join(
        [
            f":::{{admonition}} Verdict: {VERDICT_BADGE[verdict['verdict']]} (profile `{verdict['profile']}`)",
            ":class: replib-verdict",
            f"{verdict['reason']} Every claim, with its paper value, ours and its status, is in the table below "
            "and on the {doc}`validation page <../book/validation>`.",
            ":::",
            "",
        ]
    )


def verdicts_markdown(verdicts_by_profile: list[list[dict]]) -> str:
    """The validation page's section "A verdict per paper": one list per profile."""
    out = [
        "## A verdict per paper",
        "",
        "In the words of ReScience C: *reproduced* (a paper number within its tolerance, nothing against), "
        "*partially reproduced*, or *not reproduced here*, on the evidence of one profile (sanity checks and "
        "unverified claims are never evidence; an inconclusive claim is neither for nor against). Statuses: "
        + ", ".join(f"{b}" for b in STATUS_BADGE.values())
        + ".",
        "",
    ]
    for verdicts in verdicts_by_profile:  # a list, not a table: the reasons are paragraphs (no table wider
        if not verdicts:  # than the text column, issue 29)
            continue
        out += [f"**Profile `{verdicts[0]['profile']}`**", ""]
        for v in verdicts:
            n = v["numbers"]
            out.append(
                f"- **{v['title']}** (`{v['chapter']}`): {VERDICT_BADGE[v['verdict']]}, "
                f"{n['reproduced']} / {n['checked']} / {n['reported']} numbers reproduced / compared / reported. "
                + " ".join(v["reason"].split())
            )
        out.append("")
    return "\n".join(out)
