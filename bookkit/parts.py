"""The runner's side of a chapter's parts (:mod:`replib.parts`): time limits, the list the nightly reads, the
state of each part in an output folder, the merge of their records (in one folder, or from several reports),
and the claims that wait for a part.

A part runs as its own execution of the chapter (parameter ``part``) into
``<out>/notebooks/parts/<chapter>--<part>.ipynb``, with a fingerprint manifest beside it
(:mod:`bookkit.reuse`). A part is then

``done``
    its notebook completed and its manifest's fingerprint is the one its inputs give now;
``stale``
    it completed once, but its inputs changed since (code, chapter, parameters, models, packages): rerun it;
``failed``
    its last execution did not complete;
``missing``
    it never ran into this folder.

The chapter's records are the records of its done parts, each contributing only the keys it owns; a claim
whose key is missing while a part that owns it is not done is ``missing`` (waiting for that part), never
``failed``. The report keeps every part's state, the patterns of the keys it owns and the values it
contributed, so that ``python -m replib report merge`` combines the parts of one chapter run on different
machines (:func:`merge_chapter_entries`) without the science package.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path

from replib.record import read_records

from . import reuse
from .execute import completed

__all__ = [
    "PART_FLOOR_SECONDS",
    "SETUP_MINUTES",
    "TIME_MARGIN",
    "await_parts",
    "merge_chapter_entries",
    "merge_records",
    "owns",
    "part_limit",
    "part_notebook",
    "part_row",
    "part_states",
    "read_part_records",
    "states_line",
]

#: a part's time limit is never below this (a kernel, its imports and the data take a minute or two)
PART_FLOOR_SECONDS = 300
#: a paper part's limit is its declared T4-hours times this
TIME_MARGIN = 1.25
#: minutes a CI job needs around the part itself (install, downloads, upload): added to ``timeout_minutes``
SETUP_MINUTES = 20
_ORDER = ("done", "stale", "failed", "missing")


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


def part_notebook(out_dir: Path, chapter: str, part: str) -> Path:
    """Where the execution of one part is kept."""
    return Path(out_dir) / "notebooks" / "parts" / f"{chapter}--{part}.ipynb"


def owns(patterns: Iterable[str], key: str) -> bool:
    """True when ``key`` matches one of the ``fnmatch`` patterns (a part's ``records``)."""
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


# ------------------------------------------------------------------------------------------ states
def part_states(out_dir: Path, chapter: str, parts, fingerprint_of: Callable) -> dict[str, dict]:
    """``part name -> {"status", "notebook", "executed", "seconds", "owns"}`` of every part in ``out_dir`` (see
    the module docstring); ``fingerprint_of(part)`` gives the fingerprint its inputs have now."""
    out = {}
    for p in parts:
        nb = part_notebook(out_dir, chapter, p.name)
        manifest = reuse.read_manifest(nb)
        state = {"notebook": str(nb.relative_to(out_dir)), "executed": None, "seconds": None, "owns": list(p.records)}
        if not nb.exists():
            state["status"] = "missing"
        elif manifest is None or not completed(nb):
            state["status"] = "failed"
        else:
            fresh = manifest["fingerprint"] == fingerprint_of(p)["fingerprint"]
            state.update(status="done" if fresh else "stale", executed=manifest.get("executed"))
            state["seconds"] = manifest.get("seconds")
        out[p.name] = state
    return out


def states_line(states: dict[str, dict]) -> str:
    """``3 done (a, b, c); 1 stale (d); 2 missing (e, rest)``: the parts by state."""
    groups: dict[str, list[str]] = {}
    for name, s in states.items():
        groups.setdefault(s["status"], []).append(name)
    return "; ".join(f"{len(groups[k])} {k} ({', '.join(groups[k])})" for k in _ORDER if k in groups)


# ------------------------------------------------------------------------------------------ records
def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def read_part_records(out_dir: Path, states: dict[str, dict]) -> None:
    """Put into each done part's state the values it contributes (``records``: the keys it owns)."""
    for state in states.values():
        if state["status"] == "done":
            recorded = read_records(Path(out_dir) / state["notebook"])
            state["records"] = {k: v for k, v in recorded.items() if owns(state["owns"], k)}


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
        if r["status"] == "failed" and r["key"] not in records:
            waiting = _waiting(r["key"], states)
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
def _newest_done(entries: list[tuple[dict, dict]]) -> dict[str, dict]:
    """Per part, the state of the latest report (``started``) in which it is done; else its latest state."""
    out: dict[str, dict] = {}
    for entry, rep in sorted(entries, key=lambda er: er[1].get("started") or ""):
        for name, state in entry.get("parts", {}).items():
            if state["status"] == "done" or out.get(name, {}).get("status") != "done":
                out[name] = dict(state, report_started=rep.get("started"))
    return out


def merge_chapter_entries(entries: list[tuple[dict, dict]], claims, check: Callable) -> tuple[dict, list[dict]]:
    """One chapter's entry and claim results from several reports of its parts (``(chapter entry, report)``
    pairs, entries with ``parts``): every part's newest done state, the records of the done parts, and the
    claims checked again on them (``check(claims, records) -> results``), waiting parts ``missing``."""
    states = _newest_done(entries)
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
