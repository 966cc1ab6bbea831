"""The runner in parts: run one part of a chapter (``--part``), list the parts (``--list-parts``), and the
chapter's report entry built from every part kept in the output folder (:mod:`bookkit.run.parts`).

The parts of a chapter come from the science (:func:`replib.config.chapter_parts`); a chapter without a
configuration there (a test fixture) has none unless given (``parts_of``).
"""

from __future__ import annotations

from collections.abc import Callable

from replib.config import chapter_parts, chapters, profile_params
from replib.provenance import read_models_log

from ..claims.checker import ChapterClaims
from ..claims.seeds import check_chapter_seeds
from .part_records import await_parts, merge_records, part_limit, part_row
from .parts import part_notebook, part_states, read_part_records, states_line

__all__ = ["check_part_option", "format_parts", "list_parts", "parts_of", "run_part"]


def parts_of(chapter: str, profile: str) -> tuple:
    """The chapter's parts in ``profile`` (none for a chapter the science does not configure)."""
    return chapter_parts(chapter, profile) if chapter in chapters() else ()


def check_part_option(found: list[ChapterClaims], part: str, profile: str, seeds) -> None:
    """``--part`` runs one part of one chapter for one seed; the part must be one of the chapter's."""
    if len(found) != 1:
        raise ValueError(f"--part runs one part of one chapter: name the chapter (got {[c.chapter for c in found]})")
    if seeds is not None and len(seeds) > 1:
        raise ValueError("--part runs one seed: give at most one --seed")
    names = [p.name for p in parts_of(found[0].chapter, profile)]
    if part not in names:
        have = ", ".join(names) or "none (the chapter is not split)"
        raise ValueError(f"{found[0].chapter} has no part {part!r} in profile {profile!r}; parts: {have}")


def _models(chapter: str, profile: str, part) -> list[str]:
    """The profile's models a part loads (every model of the chapter for ``rest``)."""
    if part.models is not None:
        return list(part.models)
    return list(profile_params(chapter, profile)["models"]) if chapter in chapters() else []


def list_parts(chapters: list[ChapterClaims], profile: str, states_of: Callable | None = None) -> list[dict]:
    """Every part of ``chapters``: the nightly's row (:func:`bookkit.run.parts.part_row`) plus, with
    ``states_of(chapter, parts)``, each part's state in the output folder (``status``)."""
    rows = []
    for ch in chapters:
        parts = parts_of(ch.chapter, profile)
        states = states_of(ch.chapter, parts) if states_of and parts else {}
        for p in parts:
            row = part_row(ch.chapter, p, profile, ch.timeout_for(profile), _models(ch.chapter, profile, p))
            if states:
                row["status"] = states[p.name]["status"]
            rows.append(row)
    return rows


def format_parts(rows: list[dict]) -> str:
    """The part list as a plain-text table."""
    head = ("chapter", "part", "minutes", "status", "models")
    table = [head] + [
        (r["chapter"], r["part"], str(r["timeout_minutes"]), r.get("status", "—"), " ".join(r["models"]) or "—")
        for r in rows
    ]
    widths = [max(len(t[i]) for t in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run_part(plan, ch: ChapterClaims, execute: Callable, fingerprint_of: Callable, chosen) -> tuple[dict, list[dict]]:
    """Execute ``plan.part`` of ``ch`` (``execute(plan, ch, seed, dst, tag, part, limit) -> run``, the runner's
    execution with reuse), then gather every part kept in the output folder: the chapter's entry (this part's
    status, every part's state) and its claims checked on the merged records, waiting parts ``missing``."""
    parts = parts_of(ch.chapter, plan.profile)
    part = next(p for p in parts if p.name == plan.part)
    seed = plan.seeds[0]
    dst = part_notebook(plan.out_dir, ch.chapter, part.name)
    tag = f"{ch.chapter}/{part.name}" + ("" if seed is None else f" seed={seed}")
    fresh = lambda p: fingerprint_of(plan, ch.chapter, p.name, seed)
    if plan.check_only:
        run = None
    else:
        needed = [p for p in parts if p.name in part.needs]
        behind = [n for n, s in part_states(plan.out_dir, ch.chapter, needed, fresh).items() if s["status"] != "done"]
        if behind:
            plan.progress(
                f"[{tag}] reads the caches of parts not done here ({', '.join(behind)}): what they would have "
                "cached is computed now (slower, unless they ran elsewhere into the same cache folder)"
            )
        limit = part_limit(part, plan.profile, ch.timeout_for(plan.profile))
        run = execute(plan, ch, seed, dst, tag, part.name, limit)
    states = part_states(plan.out_dir, ch.chapter, parts, fresh)
    read_part_records(plan.out_dir, states)
    plan.progress(f"[{ch.chapter}] parts: {states_line(states)}")
    records, _, conflicts = merge_records(states)
    for c in conflicts:
        plan.progress(f"[{ch.chapter}] parts {c['parts']} recorded {c['key']} differently: {c['values']}")
    results = check_chapter_seeds(ch, plan.profile, {seed: records}, {seed: None})
    results = await_parts(results, states, records)
    this = states[part.name]
    status = run.status if run is not None else ("ok" if this["status"] == "done" else "error")
    error = run.error if run is not None else (None if status == "ok" else f"part {part.name}: {this['status']}")
    entry = {
        "chapter": ch.chapter,
        "title": ch.title,
        "status": status,
        "error": error,
        "seconds": round(run.seconds if run is not None else (this["seconds"] or 0.0), 1),
        "notebook": this["notebook"],
        "models": read_models_log(plan.out_dir / "models" / f"{dst.stem}.jsonl"),
        "part": part.name,
        "parts": states,
    }
    if run is not None and run.reused:
        entry["reused"] = True
    if conflicts:
        entry["conflicts"] = conflicts
    if chosen:
        entry["models_override"] = [str(m) for m in chosen]
    return entry, results
