"""A chapter's parts in the reports, with nothing but the standard library and the kit's checker: each part's
time limit and row in the nightly's list, the merge of the values the done parts contributed, the claims that
wait for a part, and the merge of one chapter's parts from several reports (``python -m replib report
merge``: parts run on different machines or nights). The parts' states in an output folder are
:mod:`bookkit.run.parts`.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Iterable

__all__ = [
    "PART_FLOOR_SECONDS",
    "SETUP_MINUTES",
    "TIME_MARGIN",
    "await_parts",
    "merge_chapter_entries",
    "merge_records",
    "owns",
    "part_limit",
    "part_row",
]

#: a part's time limit is never below this (a kernel, its imports and the data take a minute or two)
PART_FLOOR_SECONDS = 300
#: a paper part's limit is its declared T4-hours times this
TIME_MARGIN = 1.25
#: minutes a CI job needs around the part itself (install, downloads, upload): added to ``timeout_minutes``
SETUP_MINUTES = 20


def part_limit(part, profile: str, chapter_timeout: float) -> int:
    """A part's time limit in seconds: its share of the chapter's limit (``fraction``), in the paper profile at
    least its declared T4-hours with a margin (:data:`TIME_MARGIN`), never below :data:`PART_FLOOR_SECONDS`."""
    declared = part.budget.t4_hours * 3600 * TIME_MARGIN if profile == "paper" else 0.0
    return int(math.ceil(max(PART_FLOOR_SECONDS, chapter_timeout * part.fraction, declared)))


def part_row(chapter: str, part, profile: str, chapter_timeout: float, models: list[str]) -> dict:
    """One part as the nightly reads it (``--list-parts --json``): ``{"chapter", "part", "timeout_minutes",
    "models"}``, the minutes being the part's limit plus :data:`SETUP_MINUTES` for the job around it."""
    minutes = int(math.ceil(part_limit(part, profile, chapter_timeout) / 60)) + SETUP_MINUTES
    return {"chapter": chapter, "part": part.name, "timeout_minutes": minutes, "models": list(models)}


def owns(patterns: Iterable[str], key: str) -> bool:
    """True when ``key`` matches one of the ``fnmatch`` patterns (a part's ``records``)."""
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


# ------------------------------------------------------------------------------------------ records
def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def merge_records(states: dict[str, dict]) -> tuple[dict, dict, list[dict]]:
    """The chapter's records from its done parts' ``records``, in part order (a later part's value replaces
    an earlier one's).

    Returns
    -------
    records : key -> value
    sources : key -> the part it came from
    conflicts : ``{"key", "parts", "values"}`` where two done parts recorded different values (a part that
        owns a key it computes on a subset: a bug of its definition)
    """
    records, sources, conflicts = {}, {}, []
    for name, state in states.items():
        if state["status"] != "done":
            continue
        for key, value in state.get("records", {}).items():
            if key in records and not _same(records[key], value):
                conflicts.append({"key": key, "parts": [sources[key], name], "values": [records[key], value]})
            records[key], sources[key] = value, name
    return records, sources, conflicts


def _waiting(key: str, states: dict[str, dict]) -> list[str]:
    """The parts that own ``key`` and are not done."""
    return [n for n, s in states.items() if owns(s["owns"], key) and s["status"] != "done"]


def await_parts(results: list[dict], states: dict[str, dict], records: dict) -> list[dict]:
    """Claims whose key (or comparison key) is not recorded while a part that owns it is not done become
    ``missing``: they wait for that part, named with its state and the command that runs it."""
    out = []
    for r in results:
        r = dict(r)
        waiting = []
        key = r.get("record") or r["key"]  # a cell of the findings grid reads another key (bookkit.claims.findings)
        if r["status"] == "failed" and key not in records:
            waiting = _waiting(key, states)
        elif r["status"] == "failed" and r["detail"].startswith("comparison key "):
            other = r["detail"].split("'")[1] if r["detail"].count("'") >= 2 else ""
            waiting = _waiting(other, states) if other and other not in records else []
        if waiting:
            named = ", ".join(f"{n} ({states[n]['status']})" for n in waiting)
            r["status"] = "missing"
            r["detail"] = (
                f"missing part: recorded by part {named}; run it: python -m replib run {r['chapter']} "
                f"--profile {r['profile']} --part {waiting[0]}"
            )
        out.append(r)
    return out


# ------------------------------------------------------------------------------------------ reports
def merge_chapter_entries(entries: list[tuple[dict, dict]], claims, check: Callable) -> tuple[dict, list[dict]]:
    """One chapter's entry and claim results from several reports of its parts (``(chapter entry, report)``
    pairs, entries with ``parts``): every part's newest done state, the records of the done parts, and the
    claims checked again on them (``check(claims, records) -> results``), waiting parts ``missing``."""
    states: dict[str, dict] = {}  # per part, the state of the latest report in which it is done, else its latest
    for entry, rep in sorted(entries, key=lambda er: er[1].get("started") or ""):
        for name, state in entry.get("parts", {}).items():
            if state["status"] == "done" or states.get(name, {}).get("status") != "done":
                states[name] = dict(state, report_started=rep.get("started"))
    order = [n for n in entries[-1][0].get("parts", {})] or list(states)
    states = {n: states[n] for n in order if n in states} | {n: s for n, s in states.items() if n not in order}
    records, _, conflicts = merge_records(states)
    results = await_parts(check(claims, records), states, records)
    latest = max(entries, key=lambda er: er[1].get("started") or "")[0]
    bad = [s for s in states.values() if s["status"] == "failed"]
    entry = {
        **{k: v for k, v in latest.items() if k not in ("parts", "part", "conflicts")},
        "status": "error" if bad else "ok",
        "error": f"{len(bad)} part(s) failed" if bad else None,
        "parts": states,
        "seconds": round(sum(s.get("seconds") or 0.0 for s in states.values()), 1),
    }
    if conflicts:
        entry["conflicts"] = conflicts
    return entry, results
