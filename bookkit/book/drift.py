"""Drift between two sets of reports: the claims whose status or value changed (``python -m replib report
drift OLD.json NEW.json``), as rows and as a Markdown table."""

from __future__ import annotations

import math

from .report import md_value, merge

#: the fields of a drift row
FIELDS = "profile chapter key change old_status new_status old_value new_value relative_change".split()


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def relative_change(old, new) -> float | None:
    """(new - old) / |old| for numbers (``inf`` when old is 0 and new is not); None otherwise."""
    if not (_num(old) and _num(new)):
        return None
    if old == new:
        return 0.0
    if old == 0 or not math.isfinite(old):
        return math.inf
    return (new - old) / abs(old)


def drift(old: list[dict], new: list[dict], rtol: float = 1e-9) -> list[dict]:
    """Claims whose status or value changed between two sets of reports (matched by profile, chapter, key).

    Values are equal when both are numbers within ``rtol`` (relative) or when they compare equal
    otherwise. Claims present on one side only are reported as ``added`` / ``removed``.
    """

    def index(reps):
        return {(r["profile"], c["chapter"], c["key"]): c for r in merge(reps) for c in r["claims"]}

    a, b = index(old), index(new)
    rows = []
    for k in sorted(set(a) | set(b)):
        ca, cb = a.get(k), b.get(k)
        va, vb = (ca or {}).get("value"), (cb or {}).get("value")
        sa, sb = (ca or {}).get("status", "absent"), (cb or {}).get("status", "absent")
        rel = relative_change(va, vb)
        if ca is None or cb is None:
            change = "added" if ca is None else "removed"
        elif sa != sb:
            change = "status"
        elif rel is not None and (abs(rel) <= rtol or math.isnan(rel)) or rel is None and va == vb:
            continue
        else:
            change = "value"
        rows.append(dict(zip(FIELDS, (*k, change, sa, sb, va, vb, rel))))
    return rows


def _rel(r) -> str:
    if r is None:
        return "—"
    if math.isinf(r):
        return "∞"
    return f"{r:+.2%}"


def format_drift(rows: list[dict]) -> str:
    """Drift rows as a Markdown table (or a one-line note when nothing changed)."""
    if not rows:
        return "No claim changed status or value."
    out = ["| profile | chapter | claim | change | status | value | relative change |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        status = r["old_status"] if r["old_status"] == r["new_status"] else f"{r['old_status']} → {r['new_status']}"
        out.append(
            f"| {r['profile']} | {r['chapter']} | `{r['key']}` | {r['change']} | {status} "
            f"| {md_value(r['old_value'])} → {md_value(r['new_value'])} | {_rel(r['relative_change'])} |"
        )
    n_status = sum(1 for r in rows if r["change"] in ("status", "added", "removed"))
    return "\n".join([*out, "", f"{len(rows)} claim(s) changed, {n_status} of them in status."])
