"""The statuses a claim can get, how they are shown and counted: the bottom of the kit's imports (it imports
nothing of the kit), so that the checker, the pages, the papers' tables and the reports share one list.
"""

from __future__ import annotations

__all__ = [
    "PASSING",
    "STATUSES",
    "STATUS_BADGE",
    "closing_line",
    "format_value",
    "status_counts",
    "summarize",
]

#: every status, in the order reports show them
#: (``missing``: the claim's value comes from a part of the chapter that has not run yet, bookkit.parts)
STATUSES = ("reproduced", "consistent", "sanity", "deviates", "inconclusive", "failed", "unverified", "missing")
STATUS_BADGE = {
    "reproduced": "✅ reproduced",
    "consistent": "✅ consistent",
    "sanity": "🔧 sanity",
    "deviates": "⚠️ deviates",
    "inconclusive": "❔ inconclusive",
    "failed": "❌ failed",
    "unverified": "⏸ unverified",
    "missing": "🧩 missing part",
}
#: statuses that do not fail a run (a deviation is a documented failure of the paper's claim, not a pass:
#: it is counted and shown apart)
PASSING = {"reproduced", "consistent", "deviates", "sanity"}


def status_counts(claims: list[dict]) -> dict[str, int]:
    """How many of ``claims`` (report entries) have each status, in :data:`STATUSES` order."""
    return {s: sum(1 for c in claims if c["status"] == s) for s in STATUSES}


def summarize(claims: list[dict], chapters: list[dict]) -> dict:
    """Counts per status, and the run's verdict: ``failed`` counts failed and inconclusive claims plus every
    chapter that did not complete without a failed claim of its own; ``chapter_failures`` the chapters."""
    counts = status_counts(claims)
    bad = [c["chapter"] for c in chapters if c.get("status") != "ok"]
    silent = sum(1 for ch in bad if not any(c["chapter"] == ch and c["status"] == "failed" for c in claims))
    return {**counts, "failed": counts["failed"] + counts["inconclusive"] + silent, "chapter_failures": len(bad)}


def closing_line(summary: dict) -> str:
    """The runner's last line: every status separately (a deviation is never called a pass)."""
    return (
        ", ".join(f"{summary.get(st, 0)} {st}" for st in STATUSES if st != "failed") + f"; {summary['failed']} failing"
    )


def format_value(v) -> str:
    """A recorded value as the book shows it: 4 significant digits, lists cut after 6 items, — for None."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x) for x in v[:6]) + (", …" if len(v) > 6 else "") + "]"
    return str(v)
