"""Claims over the papers' numbers: a claims file's ``families`` expand one template over many rows of a
paper table (:func:`expand_family`), and :func:`coverage` counts, per paper, the numbers reported,
registered (referenced by a claim), checked in a profile and reproduced. The tables themselves are read by
:mod:`replib.papers` (the science package: the numbers are data the card uses too).
"""

from __future__ import annotations

import copy

from replib.papers import (  # noqa: F401 (re-exported: the kit's callers and tests use paper_tables.X)
    COLUMNS,
    PaperNumber,
    PaperTableError,
    half_unit,
    load_paper_table,
    load_paper_tables,
    printed_band,
    resolve_ref,
    select_rows,
)

from .status import STATUS_BADGE, format_value
from .verdicts import NUMBER_CLASS, compares


def printed_tolerance(number: PaperNumber) -> dict:
    """The tolerance a number's printed precision allows, in its table's scale: ``{"abs": h}`` (linear) or
    ``{"log10": log10(1 + h/|v|)}`` (log10), with ``h`` = :func:`half_unit` of the printed value."""
    return {number.scale.replace("linear", "abs"): printed_band(number)}


#: the fields of a family copied as they are to every claim it expands to
FAMILY_COPIES = ("checks", "deviation", "sanity", "stand_in", "seeds", "tolerance_reason")


def expand_family(family: dict, tables: dict[str, dict[str, PaperNumber]], where: str) -> list[dict]:
    """One claim per selected row: ``key`` and ``claim`` are ``str.format`` templates over the row's fields
    (``parts`` = the id split on ``/``, ``row``, ``column``, ``table``, ``metric``); the other fields
    (``checks``, ``deviation``, ``sanity``, ``stand_in``, ``seeds``, ``tolerance_reason``) are copied to every
    claim; ``spread`` is a template too, over the same fields and the claim's ``key``."""
    allowed = {"key", "claim", "rows", "spread", *FAMILY_COPIES}
    unknown = set(family) - allowed
    if unknown:
        raise PaperTableError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    for req in ("key", "claim", "rows"):
        if req not in family:
            raise PaperTableError(f"{where}: a family needs {req!r}")
    out = []
    for n in select_rows(family["rows"], tables):
        fields = {k: getattr(n, k) for k in ("parts", "id", "row", "column", "table", "metric", "paper")}
        try:
            key = family["key"].format(**fields)
            text = family["claim"].format(**fields)
            spread = family["spread"].format(key=key, **fields) if "spread" in family else None
        except (KeyError, IndexError, AttributeError) as exc:
            raise PaperTableError(f"{where}: template field {exc} not available for {n.ref}") from None
        claim = {"key": key, "claim": text, "paper": {"ref": n.ref}}
        if spread is not None:
            claim["spread"] = spread
        out.append(claim | {k: copy.deepcopy(family[k]) for k in FAMILY_COPIES if k in family})
    return out


def coverage(
    tables, claims_by_ref: dict[str, list[dict]], registered: set[str] | None = None, declared: set[str] | None = None
) -> list[dict]:
    """Per paper, what counts what ran: its results reported (``kind`` ``result``: not its data, examples or
    quotes, counted apart as ``other``), registered (a claim refers to them; ``registered``, default: the refs of
    ``claims_by_ref``), compared at the paper's word in the report's profile (:func:`bookkit.claims.verdicts.
    at_papers_word`, by a claim that is neither a sanity check nor a stand-in), compared in some profile's
    declared checks (``declared``, :func:`bookkit.claims.verdicts.declared_refs`; None when unknown), reproduced, and
    the numbers not registered with the reason.

    ``claims_by_ref`` maps ``<paper>:<id>`` to the report's claim results that refer to it (each with a
    ``status``)."""
    registered = set(claims_by_ref) if registered is None else set(registered)
    rows = []
    for paper, numbers in tables.items():
        results = [n for n in numbers.values() if n.main]
        ran = {
            n.ref: [
                c
                for c in claims_by_ref.get(n.ref, [])
                if compares({**c, "ref": n.ref}, tables) and c.get("status") in NUMBER_CLASS
            ]
            for n in results
        }
        rows.append(
            {
                "paper": paper,
                "reported": len(results),
                "other": len(numbers) - len(results),
                "registered": sum(n.ref in registered for n in results),
                "compared": sum(bool(res) for res in ran.values()),
                "declared": None if declared is None else sum(n.ref in declared for n in results),
                "reproduced": sum(any(c["status"] == "reproduced" for c in res) for res in ran.values()),
                "not_registered": [(n.ref, n.not_registered) for n in numbers.values() if n.ref not in registered],
            }
        )
    return rows


def claims_by_ref(report: dict, refs: dict[tuple[str, str], str] | None = None) -> dict[str, list[dict]]:
    """The report's claim results grouped by the paper number they refer to: the result's own ``ref``, else
    ``refs[(chapter, key)]`` (from the claims files; reports written before refs existed)."""
    out: dict[str, list[dict]] = {}
    for c in report.get("claims", []):
        ref = c.get("ref") or (refs or {}).get((c.get("chapter"), c.get("key")))
        if ref:
            out.setdefault(ref, []).append(c)
    return out


def papers_markdown(
    tables, report: dict | None, refs: dict[tuple[str, str], str] | None = None, declared: set[str] | None = None
) -> str:
    """The validation page's section on the papers' numbers: per paper, the coverage (reported, registered,
    checked in the report's profile, reproduced), the numbers not registered with the reason, and each of the
    paper's tables with, in every cell, the paper's value, ours and the status. ``refs`` maps
    ``(chapter, key)`` of every claim in the claims files to its paper number (what is *registered*)."""
    report = report or {"claims": []}
    by_ref = claims_by_ref(report, refs)
    prof = report.get("profile", "?")
    out = [
        "## The papers' numbers",
        "",
        "Every number of the papers' main tables is in `data/papers/<paper>.csv` (with its table, source and "
        "provenance: P = the paper or the authors' released results, S = a secondary source such as slides or a "
        "third party's quote). Coverage counts the paper's *results* (its data, worked examples and quotes of "
        "other papers are counted apart): *registered* = a claim refers to the number, *compared* = a claim "
        f"compares it at the paper's word in the profile `{prof}` (not a sanity check, not a stand-in), *declared* "
        "= some profile's check would compare it (whether or not that profile ran), *reproduced* = within the "
        "claim's tolerance in this profile.",
        "",
        "| paper | results | registered | compared | declared | reproduced | other numbers | not registered |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cov = coverage(tables, by_ref, set((refs or {}).values()) | set(by_ref), declared)
    for row in cov:
        out.append(
            f"| {row['paper']} | {row['reported']} | {row['registered']} | {row['compared']} "
            f"| {'—' if row['declared'] is None else row['declared']} | {row['reproduced']} | {row['other']} "
            f"| {len(row['not_registered'])} |"
        )
    out.append("")
    for row in cov:
        numbers = tables[row["paper"]]
        out += [f"### {row['paper']}", ""]
        if row["not_registered"]:
            reasons: dict[str, list[str]] = {}
            for ref, why in row["not_registered"]:
                reasons.setdefault(why, []).append(f"`{ref.partition(':')[2]}`")
            out.append("Not registered:")
            out.append("")
            for why, ids in reasons.items():
                out.append(f"- {why}: {', '.join(ids)}")
            out.append("")
        for table in dict.fromkeys(n.table for n in numbers.values()):
            out += _table_markdown(table, [n for n in numbers.values() if n.table == table], by_ref, refs)
    return "\n".join(out)


#: a paper table with more columns than this is listed one number per row (it would not fit the text column)
GRID_COLUMNS = 3


def _number_cell(n: PaperNumber, by_ref: dict, refs: dict | None) -> str:
    """The paper's value, ours and the status of one number of a paper's table."""
    res = by_ref.get(n.ref, [])
    if not res:
        return f"{format_value(n.value)}<br><small>{'not run' if n.ref in (refs or {}).values() else 'not registered'}</small>"
    first = res[0]
    ours = "—" if first.get("value") is None else format_value(first["value"])
    badge = STATUS_BADGE.get(first["status"], first["status"])
    return f"{format_value(n.value)} / {ours}<br><small>{badge} `{first.get('key', '')}`</small>"


def _table_markdown(table: str, cells: list[PaperNumber], by_ref: dict, refs: dict | None) -> list[str]:
    """One of a paper's tables with, for each number, the paper's value, ours and the status: as the paper lays
    it out (rows × columns) when it has at most :data:`GRID_COLUMNS` columns, else one number per row, so that
    no table is wider than the book's text column."""
    rows = list(dict.fromkeys(n.row for n in cells))
    cols = list(dict.fromkeys(n.column for n in cells))
    out = [f"**{table}** (paper / ours, status)", ""]
    if len(cols) > GRID_COLUMNS:
        out += ["| row | column | paper / ours, status |", "|---|---|---|"]
        for n in cells:
            out.append(
                f"| {n.row.replace('|', '/')} | {n.column.replace('|', '/')} | {_number_cell(n, by_ref, refs)} |"
            )
        return [*out, ""]
    grid = {(n.row, n.column): n for n in cells}
    out.append("| | " + " | ".join(c.replace("|", "/") for c in cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    for r in rows:
        line = [_number_cell(grid[(r, c)], by_ref, refs) if (r, c) in grid else "" for c in cols]
        out.append(f"| {r.replace('|', '/')} | " + " | ".join(line) + " |")
    return [*out, ""]
