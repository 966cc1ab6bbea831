"""What staging adds to the book's pages from the runner's report (nothing here is written by hand).

- :func:`reproduces_markdown`: the "what this chapter reproduces" table (claim, paper, ours, status) that
  opens every chapter, with a link to the chapter's recorded numbers as CSV (:func:`claims_csv`);
- :func:`front_page_markdown`: the front page's first screen: counts per chapter (paper) and status, with
  links to each chapter;
- :func:`claim_target`: the anchor placed before the cell that recorded a claim's value, so the
  validation page can link each claim to the cell that computed it;
- :func:`strip_noise`: removes stderr streams and progress-bar/warning text from executed outputs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re

import nbformat

from replib.record import RECORD_MIME

from .status import STATUS_BADGE, STATUSES, format_value, status_counts

BADGE = STATUS_BADGE
#: a line of executed output that is noise, not science: progress bars and warnings
NOISE = re.compile(
    r"\d+%\|.*\||\d+it/s\]|it/s\]|s/it\]|TqdmWarning|IProgress not found|"
    r"^\S*Warning: |warnings\.warn\(",
    re.M,
)
#: more claims than this: the chapter's table is folded (a dropdown) under its one-line summary
SHORT_TABLE = 12
CSV_FIELDS = ("chapter", "key", "claim", "profile", "value", "paper_value", "source", "check", "status", "detail")


_fmt = format_value


def _item(text) -> str:
    """One list-table cell: a single line of Markdown, with TeX delimiters and roles left inert."""
    return str(text).replace("\n", " ").replace("$", "\\$").replace("`", "'") or " "


def csv_name(chapter: str) -> str:
    return f"{chapter}.numbers.csv"


def claims_csv(claims: list[dict]) -> str:
    """The recorded numbers of ``claims`` (report entries) as CSV, one row per claim."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for c in claims:
        w.writerow({k: ("" if c.get(k) is None else c.get(k)) for k in CSV_FIELDS})
    return buf.getvalue()


def reproduces_markdown(chapter: str, claims: list[dict], profile: str, commit: str | None = None) -> str:
    """The table opening a chapter: every claim with the paper's value, ours and the status."""
    counts = status_counts(claims)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    at = f" at commit `{commit[:10]}`" if commit else ""
    out = [
        f"**What this chapter reproduces** (profile `{profile}`{at}; {summary or 'no claims'}; "
        f"{{download}}`the recorded numbers as CSV <{csv_name(chapter)}>`; every claim of the book on the "
        "{doc}`validation page <../book/validation>`)",
        "",
    ]
    table = [
        "```{list-table}",
        ":header-rows: 1",
        ":class: replib-reproduces",
        "",
        "* - claim",
        "  - paper",
        "  - ours",
        "  - status",
    ]
    for c in claims:
        table += [
            f"* - {_item(c.get('claim') or c['key'])}",
            f"  - {_item(_fmt(c.get('paper_value')))}",
            f"  - {_item(_fmt(c.get('value')))}",
            f"  - {BADGE.get(c['status'], c['status'])}",
        ]
    table.append("```")
    if len(claims) > SHORT_TABLE:  # a long list stays folded: the chapter opens with its science
        out += [
            f"````{{admonition}} The {len(claims)} claims: paper, ours, status",
            ":class: dropdown",
            *table,
            "````",
            "",
        ]
    else:
        out += [*table, ""]
    return "\n".join(out)


def _markdown_cell(source: str):
    """A markdown cell whose id derives from its content, so that staging the same notebook twice gives the
    same bytes (nbformat's ids are random; the book is not rebuilt when nothing changed)."""
    cell = nbformat.v4.new_markdown_cell(source)
    cell.id = "replib-" + hashlib.sha256(source.encode()).hexdigest()[:16]
    return cell


def add_reproduces_cell(nb, markdown: str) -> None:
    """Insert ``markdown`` right after the chapter's title (the first ``# `` line of the first markdown cell)."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        title = next((j for j, line in enumerate(lines) if line.startswith("# ")), None)
        if title is None:
            break
        head, rest = "\n".join(lines[: title + 1]), "\n".join(lines[title + 1 :]).strip("\n")
        cell.source = head
        new = [_markdown_cell(markdown)]
        if rest:
            new.append(_markdown_cell(rest))
        nb.cells[i + 1 : i + 1] = new
        return
    nb.cells.insert(0, _markdown_cell(markdown))


def target_name(chapter: str, key: str) -> str:
    """The MyST target of the cell that recorded ``key`` (linked from the validation page)."""
    return f"claim-{chapter}-{re.sub(r'[^A-Za-z0-9]+', '-', key).strip('-').lower()}"


def claim_target(nb, chapter: str, keys: list[str]) -> dict[str, str]:
    """Put a MyST target before the code cell that recorded each of ``keys`` (the last one recording it);
    returns ``{key: target}`` for the keys found."""
    where: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            for mime, data in (out.get("data") or {}).items():
                if mime.endswith(RECORD_MIME) and isinstance(data, dict) and data.get("name") in keys:
                    where[data["name"]] = i
    found = {}
    for i in sorted(set(where.values()), reverse=True):
        names = [k for k, j in where.items() if j == i]
        targets = [target_name(chapter, k) for k in names]
        nb.cells.insert(i, _markdown_cell("\n".join(f"({t})=" for t in targets)))
        found.update(zip(names, targets))
    return found


def strip_noise(nb) -> int:
    """Remove stderr streams, and stdout streams that are progress bars or warnings, from every code
    cell's outputs; returns how many outputs were removed."""
    removed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text = out.get("text", "")
                text = "".join(text) if isinstance(text, list) else text
                if out.get("name") == "stderr" or NOISE.search(text):
                    removed += 1
                    continue
            kept.append(out)
        cell["outputs"] = kept
    return removed


def front_page_markdown(reports: list[dict], links: dict[str, str] | None = None) -> str:
    """Counts per chapter (paper) and status, for each profile's report, with links to the chapters."""
    links = links or {}
    if not reports:
        return "```{note}\nNo runner report was found when this book was built.\n```\n"
    out = []
    for rep in reports:
        claims = rep["claims"]
        total = status_counts(claims)
        commit = (rep.get("environment") or {}).get("git_commit")
        out += [
            f"**How well it reproduces** (profile `{rep['profile']}`, run {str(rep.get('started', '?'))[:10]}"
            + (f", commit `{commit[:10]}`" if commit else "")
            + "): "
            + ", ".join(f"{n} {s}" for s, n in total.items() if n)
            + f" of {len(claims)} claims.",
            "",
            "```{list-table}",
            ":header-rows: 1",
            ":class: replib-summary",
            "",
            "* - chapter (paper)",
            *[f"  - {s}" for s in STATUSES],
        ]
        for ch in rep["chapters"]:
            name = ch["chapter"]
            title = ch.get("title") or name
            label = f"{{doc}}`{_item(title)} <{links[name]}>`" if name in links else _item(title)
            counts = status_counts([c for c in claims if c["chapter"] == name])
            out += [f"* - {label}", *[f"  - {counts[s]}" for s in STATUSES]]
        out += ["```", ""]
    return "\n".join(out)
