"""The statuses a claim can get, how they are shown and counted: the bottom of the kit's imports (it imports
nothing of the kit), so that the checker, the pages, the papers' tables and the reports share one list.

Each status means one thing:

``reproduced``
    the paper's value, within a tolerance derived from its printed precision (or its stated ±, or our
    value's spread);
``consistent``
    a property that would fail if the science broke holds (or a stand-in meets the paper's value);
``sanity``
    a check that holds by construction (an invariance of the algebra, a count fixed by the data, a
    configuration constant): shown apart, never evidence for the paper;
``deviates``
    the check holds, but on a stand-in that differs from the paper's set-up, for the stated reason;
``expected_failure``
    the paper's statement does not hold here, as documented (beyond the value's spread), for the stated
    scientific reason;
``does_not_hold``
    a paper's finding, tested on a model of the book that is not the paper's (:mod:`bookkit.claims.findings`), does not
    hold on it: a finding about that model, never a failure of the paper or of the run;
``inconclusive``
    the value's spread (its bootstrap interval, or the values over seeds) straddles the bound: the data of
    this run cannot decide, and the claim is neither passed nor failed by chance;
``failed``
    a check failed, a value is missing or the chapter did not run;
``unverified``
    needs pretrained weights, a GPU or data that the profile does not have.
"""

from __future__ import annotations

from replib.tables import format_number

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
#: (``missing``: the claim's value comes from a part of the chapter that has not run yet, bookkit.run.parts)
STATUSES = (
    "reproduced",
    "consistent",
    "sanity",
    "deviates",
    "expected_failure",
    "does_not_hold",
    "inconclusive",
    "failed",
    "unverified",
    "missing",
)
STATUS_BADGE = {
    "reproduced": "✅ reproduced",
    "consistent": "✅ consistent",
    "sanity": "🔧 sanity",
    "deviates": "⚠️ deviates",
    "expected_failure": "🔶 expected failure",
    "does_not_hold": "🔷 does not hold on this model",
    "inconclusive": "❔ inconclusive",
    "failed": "❌ failed",
    "unverified": "⏸ unverified",
    "missing": "🧩 missing part",
}
#: statuses that do not fail a run. A deviation or an expected failure is documented, not a pass: each is
#: counted and shown apart. An inconclusive claim does not fail the run either (its spread straddles the
#: bound: no verdict is drawn), but it is never counted as passing (see :func:`summarize`)
PASSING = {"reproduced", "consistent", "deviates", "expected_failure", "sanity", "does_not_hold"}


def status_counts(claims: list[dict]) -> dict[str, int]:
    """How many of ``claims`` (report entries) have each status, in :data:`STATUSES` order."""
    return {s: sum(1 for c in claims if c["status"] == s) for s in STATUSES}


def summarize(claims: list[dict], chapters: list[dict]) -> dict:
    """Counts per status, and the run's verdict: ``failed`` counts failed claims plus every chapter that did
    not complete without a failed claim of its own; ``chapter_failures`` the chapters. An ``inconclusive``
    claim is counted apart: its spread straddles its bound, so it neither passes nor fails the run."""
    counts = status_counts(claims)
    bad = [c["chapter"] for c in chapters if c.get("status") != "ok"]
    silent = sum(1 for ch in bad if not any(c["chapter"] == ch and c["status"] == "failed" for c in claims))
    return {**counts, "failed": counts["failed"] + silent, "chapter_failures": len(bad)}


def closing_line(summary: dict) -> str:
    """The runner's last line: every status separately (a deviation is never called a pass)."""
    return (
        ", ".join(f"{summary.get(st, 0)} {st}" for st in STATUSES if st != "failed") + f"; {summary['failed']} failing"
    )


def format_value(v) -> str:
    """A recorded value as the book shows it: a number as the book's tables show it
    (:func:`replib.tables.format_number`: 4 significant digits, — for NaN), lists cut after 6 items, — for None."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return format_number(v)
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x) for x in v[:6]) + (", …" if len(v) > 6 else "") + "]"
    return str(v)
