"""The history page: each paper's verdict night by night, from the folder of reports the nightly keeps on the
``reports`` branch (``scripts/nightly.py drift`` stores ``<date>-<profile>.json``; each paper part lands as
``<date>-paper--<chapter>--<part>.json``, merged here per night by :func:`bookkit.book.report.merge`).

The page shows, per paper, a strip of the latest nights' verdicts per profile, then one row per night: the
verdict (:func:`bookkit.book.pages.chapter_verdicts`, from :func:`bookkit.claims.verdicts.paper_verdicts` over the papers'
tables), whether it changed since the previous night of that profile,
and the claims whose status depends on the seed (a run over several seeds records ``seed_statuses``: the
offline job runs seed 0 beside a new seed every night, so a verdict that changes with the seed shows here).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from replib.profiles import PROFILES

from .pages import BADGES, chapter_verdicts, counts_text
from .report import chapter_titles, merge

#: a night's report of one profile, as ``scripts/nightly.py drift`` stores it
REPORT_NAME = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<profile>[a-z]+)\.json")
#: a paper part's report, as ``scripts/nightly.py store-part`` stores it
PART_NAME = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-paper--(?P<chapter>.+?)--(?P<part>.+)\.json")
#: nights in each paper's strip of verdicts
STRIP_NIGHTS = 14
#: the mark of each verdict in the strip (the badges' emoji)
STRIP = {v: badge.split(" ")[0] for v, badge in BADGES.items()}


@dataclass
class Night:
    date: str  # YYYY-MM-DD
    profile: str
    report: dict


def load_nights(folder: Path) -> tuple[list[Night], list[str]]:
    """Every night's report per profile in ``folder`` (oldest first) and the names of the files that look like
    reports but cannot be read. A night's paper parts are merged into one paper report; a whole
    ``<date>-paper.json`` of that night wins over its parts."""
    folder = Path(folder)
    nights: dict[tuple[str, str], dict] = {}
    parts: dict[str, list[dict]] = {}
    unreadable = []
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        whole, part = REPORT_NAME.fullmatch(f.name), PART_NAME.fullmatch(f.name)
        if not (whole and whole["profile"] in PROFILES) and not part:
            continue  # drift files, atlases, latest.json
        try:
            rep = json.loads(f.read_text())
        except (OSError, ValueError):
            rep = None
        if not (isinstance(rep, dict) and {"profile", "claims", "chapters"} <= set(rep)):
            unreadable.append(f.name)
        elif whole:
            nights[(whole["date"], whole["profile"])] = rep
        else:
            parts.setdefault(part["date"], []).append(rep)
    for date, reps in parts.items():
        if (date, "paper") not in nights:
            nights[(date, "paper")] = merge(reps)[0]
    rank = {p: i for i, p in enumerate(PROFILES)}
    keys = sorted(nights, key=lambda k: (k[0], rank.get(k[1], len(PROFILES))))
    return [Night(d, p, nights[(d, p)]) for d, p in keys], unreadable


def seed_dependent(claims: list[dict]) -> list[dict]:
    """The claims whose status differs between the seeds they ran with (``seed_statuses``)."""
    return [c for c in claims if len(set((c.get("seed_statuses") or {}).values())) > 1]


def _seed_cell(claims: list[dict]) -> str:
    flips = seed_dependent(claims)
    if not flips:
        seeds = {s for c in claims for s in (c.get("seed_statuses") or {})}
        return f"no (seeds {', '.join(sorted(seeds, key=int))})" if len(seeds) > 1 else "one seed"
    return "<br>".join(
        f"`{c['key']}` (" + ", ".join(f"seed {s}: {st.replace('_', ' ')}" for s, st in c["seed_statuses"].items()) + ")"
        for c in flips
    )


def chapter_rows(nights: list[Night], verdicts: list[dict], chapter: str) -> list[str]:
    """One Markdown table row per night (newest first) for ``chapter``: night and profile, verdict (marked 🔁
    when it differs from the previous night of the profile), counts, and the claims that change with the
    seed."""
    rows, previous = [], {}
    for n, v in zip(nights, verdicts):
        if chapter not in v:
            continue
        mine = [c for c in n.report["claims"] if c["chapter"] == chapter]
        verdict = v[chapter]["verdict"]
        before = previous.get(n.profile)
        changed = f" 🔁 (was {before})" if before is not None and before != verdict else ""
        previous[n.profile] = verdict
        rows.append(
            f"| {n.date}<br>`{n.profile}` | {BADGES[verdict]}{changed}<br><small>{counts_text(mine)}</small> "
            f"| {_seed_cell(mine)} |"
        )
    return rows[::-1]


def _strip(nights: list[Night], verdicts: list[dict], chapter: str) -> list[str]:
    """Per profile, the marks of the latest :data:`STRIP_NIGHTS` nights' verdicts, each with its night's month
    and day (🎲: a claim changed with the seed that night); the book draws each mark as an icon with its name
    (``book/_ext/replib_html_fixes.py``)."""
    out = []
    for profile in PROFILES:
        seen = [(n, v) for n, v in zip(nights, verdicts) if n.profile == profile and chapter in v][-STRIP_NIGHTS:]
        if not seen:
            continue
        marks = [
            STRIP[v[chapter]["verdict"]]
            + ("🎲" if seed_dependent([c for c in n.report["claims"] if c["chapter"] == chapter]) else "")
            + f" {n.date[5:]}"  # each mark with its night: a reader can tell the nights apart without a font
            for n, v in seen
        ]
        out.append(f"- `{profile}`, {seen[0][0].date} → {seen[-1][0].date}: {' · '.join(marks)}")
    return out


def history_markdown(
    nights: list[Night], tables: dict, links: dict[str, str] | None = None, unreadable: list[str] = ()
) -> str:
    """The history page's body: a legend, then per paper its strip of verdicts and its table of nights
    (``tables``: the papers' tables the verdicts are drawn against, :func:`replib.papers.load_paper_tables`)."""
    links = links or {}
    if not nights:
        return "```{note}\nNo nightly report was found when this book was built.\n```\n"
    titles = chapter_titles([n.report for n in nights])
    verdicts = [chapter_verdicts(n.report, tables) for n in nights]  # each night's, computed once
    legend = ", ".join(f"{STRIP[v]} {v}" for v in BADGES)
    out = [
        f"{len(nights)} report{'s' if len(nights) > 1 else ''} from {nights[0].date} to {nights[-1].date}. Each "
        "strip reads oldest → newest "
        f"({legend}; 🎲 a claim's status changed with the seed that night); 🔁 marks a verdict that differs "
        "from the previous night of the same profile.",
        "",
    ]
    for ch, title in titles.items():
        head = f"{{doc}}`{title} <{links[ch]}>`" if ch in links else title
        out += [f"## {title}", "", f"Chapter: {head}", "", *_strip(nights, verdicts, ch), ""]
        out += ["| night, profile | verdict | changes with the seed |", "|---|---|---|"]
        out += [*chapter_rows(nights, verdicts, ch), ""]
    if unreadable:
        out += ["Reports that could not be read: " + ", ".join(f"`{u}`" for u in unreadable), ""]
    return "\n".join(out)


def nights_of_runs(reports: list[dict]) -> list[Night]:
    """This build's own reports as nights (the page of a book built outside the nightly)."""
    return [Night(str(r.get("started") or "?")[:10], r["profile"], r) for r in reports]
