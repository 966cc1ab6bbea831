"""The papers' reported numbers as data: one table per paper (``data/papers/<paper>.csv``), each number once.

Columns: ``id`` (unique within the paper, ``/``-separated parts, e.g. ``T2/bert/cluster/stsb``), ``table``,
``row`` and ``column`` (the paper's labels), ``metric``, ``value`` (as printed: its digits state the paper's
precision, kept in :attr:`PaperNumber.printed`), ``scale`` (``linear`` or ``log10``: the
natural scale to compare it in), ``source`` (paper, table and page where known), ``provenance`` (``P``: read
in the paper or the authors' released results; ``S``: a secondary source, e.g. slides or a third party's
quote; ``I``: inferred), ``note``, ``not_registered`` (why no claim checks this number; empty when one
does) and ``kind`` (:data:`KINDS`: ``result``, a number the paper reports as its finding, in a results table or
its text, the numbers a verdict rests on; ``data``, a description of its data or set-up: items, parameters,
pairs; ``example``, a worked illustration on synthetic data; ``quoted``, another paper's number it quotes;
``context``, a source other than the paper, never checked; a table without the column holds results).

The book kit (:mod:`bookkit.claims.paper_tables`) builds claims and coverage on these tables; the isotropy card
places a model's values beside them.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

COLUMNS = ("id", "table", "row", "column", "metric", "value", "scale", "source", "provenance", "note", "not_registered")
#: what a number is to its paper (the optional last column ``kind``); only ``result`` numbers decide a verdict
KINDS = ("result", "data", "example", "quoted", "context")
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
    printed: str = ""  # the value as the paper prints it ("0.990", "5.02E-174"): its last digit is its precision
    kind: str = "result"  # KINDS: a result of the paper, or a description of its data, an example, a quote

    @property
    def main(self) -> bool:
        """A number of the paper's results (its main tables or text), on which its verdict rests."""
        return self.kind == "result"

    @property
    def ref(self) -> str:
        return f"{self.paper}:{self.id}"

    @property
    def parts(self) -> list[str]:
        return self.id.split("/")

    def cited(self) -> str:
        """The source as a claim shows it: ``source [provenance]; note``."""
        return f"{self.source} [{self.provenance}]" + (f"; {self.note}" if self.note else "")


def half_unit(printed: str) -> float:
    """Half a unit in the last digit of a number as printed: its rounding precision (``"0.990"`` -> 0.0005,
    ``"5.02E-174"`` -> 5e-177, ``"10662"`` -> 0.5, ``"6.4e6"`` -> 5e4).

    Raises
    ------
    ValueError
        ``printed`` is not a plain decimal number.
    """
    text = str(printed).strip().lstrip("+-")
    mantissa, _, exponent = text.lower().partition("e")
    if not mantissa or not mantissa.replace(".", "", 1).isdigit():
        raise ValueError(f"not a printed decimal number: {printed!r}")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def printed_band(number: PaperNumber) -> float:
    """The half-width its printed precision allows a number, in its table's scale: :func:`half_unit`
    :math:`h` (linear) or :math:`\\log_{10}(1 + h/|v|)` (log10)."""
    h = half_unit(number.printed or repr(number.value))
    return math.log10(1 + h / abs(number.value)) if number.scale == "log10" else h


def load_paper_table(path) -> dict[str, PaperNumber]:
    """Read and validate one paper's table (fails closed: unknown or missing columns, duplicate ids,
    non-finite values, unknown scales or provenance levels are errors)."""
    path = Path(path)
    paper = path.stem
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) not in (COLUMNS, (*COLUMNS, "kind")):
            raise PaperTableError(
                f"{path}: columns must be {', '.join(COLUMNS)} (and optionally kind); got {reader.fieldnames}"
            )
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
            row.setdefault("kind", "result")
            if row["kind"] not in KINDS:
                raise PaperTableError(f"{where} ({rid}): kind must be one of {KINDS}; got {row['kind']!r}")
            for col in ("table", "row", "column", "metric", "source"):
                if not row[col].strip():
                    raise PaperTableError(f"{where} ({rid}): {col} is empty")
            out[rid] = PaperNumber(paper=paper, **{**row, "id": rid, "value": value, "printed": row["value"].strip()})
    return out


def load_paper_tables(root) -> dict[str, dict[str, PaperNumber]]:
    """Every paper table of the project: ``{paper: {id: PaperNumber}}`` (empty when there is none)."""
    folder = Path(root) / "data" / "papers"
    return {p.stem: load_paper_table(p) for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}


def project_tables() -> dict[str, dict[str, PaperNumber]]:
    """The tables of the project this ``replib`` belongs to (``data/papers`` beside the package)."""
    return load_paper_tables(Path(__file__).resolve().parents[1])


def project_table(paper: str) -> dict[str, PaperNumber]:
    """One paper's table of this project (``{id: PaperNumber}``; empty for an installed package away from its
    project): the one place code reads a paper's numbers, never a copy of them."""
    path = Path(__file__).resolve().parents[1] / "data" / "papers" / f"{paper}.csv"
    return load_paper_table(path) if path.is_file() else {}


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
