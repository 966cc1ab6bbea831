"""The papers' numbers as data: one table per paper (``data/papers/<paper>.csv``), each number once.

Columns: ``id`` (unique within the paper, ``/``-separated parts, e.g. ``T2/bert/cluster/stsb``), ``table``,
``row`` and ``column`` (the paper's labels), ``metric``, ``value``, ``scale`` (``linear`` or ``log10``: the
natural scale to compare it in), ``source`` (paper, table and page where known), ``provenance`` (``P``: read
in the paper or the authors' released results; ``S``: a secondary source, e.g. slides or a third party's
quote; ``I``: inferred), ``note``, and ``not_registered`` (why no claim checks this number; empty when one
does).

A claim refers to a number as ``paper: {ref: "<paper>:<id>"}``; a claims file's ``families`` expand one
template over many rows (:func:`expand_family`). :func:`coverage` counts, per paper, the numbers reported,
registered (referenced by a claim), checked in a profile and reproduced.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

COLUMNS = ("id", "table", "row", "column", "metric", "value", "scale", "source", "provenance", "note", "not_registered")
SCALES = ("linear", "log10")
PROVENANCE = ("P", "S", "I")


class PaperTableError(ValueError):
    """A paper table that does not follow the format, or a reference to a number it does not hold."""


@dataclass(frozen=True)
class PaperNumber:
    paper: str
    id: str
    table: str
    row: str
    column: str
    metric: str
    value: float
    scale: str
    source: str
    provenance: str
    note: str = ""
    not_registered: str = ""

    @property
    def ref(self) -> str:
        return f"{self.paper}:{self.id}"

    @property
    def parts(self) -> list[str]:
        return self.id.split("/")

    def cited(self) -> str:
        """The source as a claim shows it: ``source [provenance]; note``."""
        return f"{self.source} [{self.provenance}]" + (f"; {self.note}" if self.note else "")


def papers_dir(root) -> Path:
    return Path(root) / "data" / "papers"


def load_paper_table(path) -> dict[str, PaperNumber]:
    """Read and validate one paper's table (fails closed: unknown or missing columns, duplicate ids,
    non-finite values, unknown scales or provenance levels are errors)."""
    path = Path(path)
    paper = path.stem
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise PaperTableError(f"{path}: columns must be {', '.join(COLUMNS)}; got {reader.fieldnames}")
        out: dict[str, PaperNumber] = {}
        for i, row in enumerate(reader, start=2):
            where = f"{path.name} line {i}"
            if None in row or any(v is None for v in row.values()):
                raise PaperTableError(f"{where}: wrong number of fields")
            rid = row["id"].strip()
            if not rid or rid != row["id"] or " " in rid:
                raise PaperTableError(f"{where}: id must be non-empty, without spaces; got {row['id']!r}")
            if rid in out:
                raise PaperTableError(f"{where}: duplicate id {rid!r}")
            try:
                value = float(row["value"])
            except ValueError:
                raise PaperTableError(f"{where} ({rid}): value {row['value']!r} is not a number") from None
            if not math.isfinite(value):
                raise PaperTableError(f"{where} ({rid}): value must be finite")
            if row["scale"] not in SCALES:
                raise PaperTableError(f"{where} ({rid}): scale must be one of {SCALES}")
            if row["scale"] == "log10" and value <= 0:
                raise PaperTableError(f"{where} ({rid}): a log10-scale value must be positive")
            if row["provenance"] not in PROVENANCE:
                raise PaperTableError(f"{where} ({rid}): provenance must be one of {PROVENANCE}")
            for col in ("table", "row", "column", "metric", "source"):
                if not row[col].strip():
                    raise PaperTableError(f"{where} ({rid}): {col} is empty")
            out[rid] = PaperNumber(paper=paper, **{**row, "id": rid, "value": value})
    return out


def load_paper_tables(root) -> dict[str, dict[str, PaperNumber]]:
    """Every paper table of the project: ``{paper: {id: PaperNumber}}`` (empty when there is none)."""
    folder = papers_dir(root)
    return {p.stem: load_paper_table(p) for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}


def resolve_ref(ref: str, tables: dict[str, dict[str, PaperNumber]]) -> PaperNumber:
    """The number a ``<paper>:<id>`` reference names."""
    paper, sep, rid = str(ref).partition(":")
    if not sep:
        raise PaperTableError(f"ref {ref!r} must be '<paper>:<id>'")
    if paper not in tables:
        raise PaperTableError(f"ref {ref!r}: no paper table {paper!r} (known: {sorted(tables)})")
    if rid not in tables[paper]:
        raise PaperTableError(f"ref {ref!r}: {paper}.csv has no id {rid!r}")
    return tables[paper][rid]


def select_rows(patterns, tables: dict[str, dict[str, PaperNumber]]) -> list[PaperNumber]:
    """The numbers whose ``<paper>:<id>`` matches any of the glob ``patterns`` (in table order, once each);
    a pattern that matches nothing is an error."""
    if isinstance(patterns, str):
        patterns = [patterns]
    chosen: dict[str, PaperNumber] = {}
    for pat in patterns:
        paper = str(pat).partition(":")[0]
        if paper not in tables:
            raise PaperTableError(f"rows {pat!r}: no paper table {paper!r} (known: {sorted(tables)})")
        hits = [n for n in tables[paper].values() if fnmatchcase(n.ref, pat)]
        if not hits:
            raise PaperTableError(f"rows {pat!r} matches no number of {paper}.csv")
        for n in hits:
            chosen.setdefault(n.ref, n)
    return list(chosen.values())


def expand_family(family: dict, tables: dict[str, dict[str, PaperNumber]], where: str) -> list[dict]:
    """One claim per selected row: ``key`` and ``claim`` are ``str.format`` templates over the row's fields
    (``parts`` = the id split on ``/``, ``row``, ``column``, ``table``, ``metric``); the other fields
    (``checks``, ``deviation``, ``sanity``, ``stand_in``, ``seeds``) are copied to every claim."""
    import copy

    allowed = {"key", "claim", "rows", "checks", "deviation", "sanity", "stand_in", "seeds"}
    unknown = set(family) - allowed
    if unknown:
        raise PaperTableError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    for req in ("key", "claim", "rows"):
        if req not in family:
            raise PaperTableError(f"{where}: a family needs {req!r}")
    out = []
    for n in select_rows(family["rows"], tables):
        fields = {
            "parts": n.parts,
            "id": n.id,
            "row": n.row,
            "column": n.column,
            "table": n.table,
            "metric": n.metric,
            "paper": n.paper,
        }
        try:
            key = family["key"].format(**fields)
            text = family["claim"].format(**fields)
        except (KeyError, IndexError, AttributeError) as exc:
            raise PaperTableError(f"{where}: template field {exc} not available for {n.ref}") from None
        claim = {"key": key, "claim": text, "paper": {"ref": n.ref}}
        for k in ("checks", "deviation", "sanity", "stand_in", "seeds"):
            if k in family:
                claim[k] = copy.deepcopy(family[k])
        out.append(claim)
    return out


def coverage(tables, claims_by_ref: dict[str, list[dict]], registered: set[str] | None = None) -> list[dict]:
    """Per paper: numbers reported, registered (a claim refers to them; ``registered``, default: the refs of
    ``claims_by_ref``), not registered (with the reason), checked in the report's profile (a claim that is not
    unverified), and reproduced.

    ``claims_by_ref`` maps ``<paper>:<id>`` to the report's claim results that refer to it (each with a
    ``status``)."""
    registered = set(claims_by_ref) if registered is None else set(registered)
    rows = []
    for paper, numbers in tables.items():
        reg = [n for n in numbers.values() if n.ref in registered]
        results = {n.ref: claims_by_ref.get(n.ref, []) for n in reg}
        checked = [r for r, res in results.items() if any(c.get("status") != "unverified" for c in res)]
        reproduced = [r for r, res in results.items() if any(c.get("status") == "reproduced" for c in res)]
        missing = [n for n in numbers.values() if n.ref not in registered]
        rows.append(
            {
                "paper": paper,
                "reported": len(numbers),
                "registered": len(reg),
                "checked": len(checked),
                "reproduced": len(reproduced),
                "not_registered": [(n.ref, n.not_registered) for n in missing],
            }
        )
    return rows


def _fmt(v) -> str:
    from .pages import format_value

    return format_value(v)


def claims_by_ref(report: dict, refs: dict[tuple[str, str], str] | None = None) -> dict[str, list[dict]]:
    """The report's claim results grouped by the paper number they refer to: the result's own ``ref``, else
    ``refs[(chapter, key)]`` (from the claims files; reports written before refs existed)."""
    out: dict[str, list[dict]] = {}
    for c in report.get("claims", []):
        ref = c.get("ref") or (refs or {}).get((c.get("chapter"), c.get("key")))
        if ref:
            out.setdefault(ref, []).append(c)
    return out


def papers_markdown(tables, report: dict | None, refs: dict[tuple[str, str], str] | None = None) -> str:
    """The validation page's section on the papers' numbers: per paper, the coverage (reported, registered,
    checked in the report's profile, reproduced), the numbers not registered with the reason, and each of the
    paper's tables with, in every cell, the paper's value, ours and the status. ``refs`` maps
    ``(chapter, key)`` of every claim in the claims files to its paper number (what is *registered*)."""
    from .claims import STATUS_BADGE

    report = report or {"claims": []}
    by_ref = claims_by_ref(report, refs)
    prof = report.get("profile", "?")
    out = [
        "## The papers' numbers",
        "",
        "Every number of the papers' main tables is in `data/papers/<paper>.csv` (with its table, source and "
        "provenance: P = the paper or the authors' released results, S = a secondary source such as slides or a "
        f"third party's quote). Coverage in the profile `{prof}`: *registered* = a claim refers to the number, "
        "*checked* = that claim is not unverified in this profile, *reproduced* = within the claim's tolerance.",
        "",
        "| paper | reported | registered | checked | reproduced | not registered |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    cov = coverage(tables, by_ref, set((refs or {}).values()) | set(by_ref))
    for row in cov:
        out.append(
            f"| {row['paper']} | {row['reported']} | {row['registered']} | {row['checked']} | {row['reproduced']} "
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
            cells = [n for n in numbers.values() if n.table == table]
            rows = list(dict.fromkeys(n.row for n in cells))
            cols = list(dict.fromkeys(n.column for n in cells))
            grid = {(n.row, n.column): n for n in cells}
            out += [f"**{table}** (paper / ours, status)", ""]
            out.append("| | " + " | ".join(c.replace("|", "/") for c in cols) + " |")
            out.append("|---|" + "---|" * len(cols))
            for r in rows:
                line = []
                for c in cols:
                    n = grid.get((r, c))
                    if n is None:
                        line.append("")
                        continue
                    res = by_ref.get(n.ref, [])
                    if not res:
                        line.append(
                            f"{_fmt(n.value)}<br><small>{'not run' if n.ref in (refs or {}).values() else 'not registered'}</small>"
                        )
                        continue
                    first = res[0]
                    ours = "—" if first.get("value") is None else _fmt(first["value"])
                    badge = STATUS_BADGE.get(first["status"], first["status"])
                    line.append(f"{_fmt(n.value)} / {ours}<br><small>{badge} `{first.get('key', '')}`</small>")
                out.append(f"| {r.replace('|', '/')} | " + " | ".join(line) + " |")
            out.append("")
    return "\n".join(out)
