"""What staging adds to the book's pages from the runner's report (nothing here is written by hand).

- :func:`reproduces_markdown`: the "what this chapter reproduces" table (claim, paper, ours, status) that
  opens every chapter, with a link to the chapter's recorded numbers as CSV (:func:`claims_csv`);
- :func:`front_page_markdown`: the front page's first screen: each paper's verdict (:func:`chapter_verdicts`,
  from :func:`bookkit.claims.verdicts.paper_verdicts`), the run it rests on, and its evidence by class (the paper's
  numbers compared, what its findings did on the run's models), with links to each chapter;
- :func:`what_ran_markdown`: the line under each chapter's title naming the run, models and data files;
- :func:`claim_target`: the anchor placed before the cell that recorded a claim's value, so the
  validation page can link each claim to the cell that computed it;
- :func:`strip_noise`: removes stderr streams and progress-bar/warning text from executed outputs.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from pathlib import Path

import nbformat

from replib.profiles import PROFILES
from replib.provenance import revision_label
from replib.record import RECORD_MIME

from ..claims.status import STATUS_BADGE, format_value, status_counts
from ..claims.verdicts import VERDICT_BADGE, evidence_line, paper_verdicts
from ..notebooks import chapter_cost

#: a line of executed output that is noise, not science: progress bars and warnings
NOISE = re.compile(
    r"\d+%\|.*\||\d+it/s\]|it/s\]|s/it\]|TqdmWarning|IProgress not found|"
    r"^\S*Warning: |warnings\.warn\(",
    re.M,
)
#: more claims than this: the chapter's table is folded (a dropdown) under its one-line summary
SHORT_TABLE = 12
CSV_FIELDS = ("chapter", "key", "claim", "profile", "value", "paper_value", "source", "check", "status", "detail")


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


def reproduces_markdown(chapter: str, claims: list[dict], profile: str) -> str:
    """The table opening a chapter: every claim with the paper's value, ours and the status (the run's commit is
    in the report, not on the page: the book's pages are for readers)."""
    counts = status_counts(claims)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    out = [
        f"**What this chapter reproduces** (profile `{profile}`; {summary or 'no claims'}; "
        f"{{download}}`the recorded numbers as CSV <{csv_name(chapter)}>`; every claim of the book on the "
        "{doc}`validation page <../book/validation>`)",
        "",
    ]
    rows = [
        [
            _item(c.get("claim") or c["key"]),
            _item(format_value(c.get("paper_value"))),
            _item(format_value(c.get("value"))),
            STATUS_BADGE.get(c["status"], c["status"]),
        ]
        for c in claims
    ]
    table = _list_table("replib-reproduces", [["claim", "paper", "ours", "status"], *rows])
    if len(claims) > SHORT_TABLE:  # a long list stays folded: the chapter opens with its science
        table = [
            f"````{{admonition}} The {len(claims)} claims: paper, ours, status",
            ":class: dropdown",
            *table,
            "````",
        ]
    return "\n".join([*out, *table, ""])


def _list_table(css_class: str, rows: list[list[str]], widths: str = "") -> list[str]:
    """A MyST ``list-table`` of class ``css_class`` whose first row is the header (``widths``: its ``:widths:``)."""
    out = [
        "```{list-table}",
        ":header-rows: 1",
        f":class: {css_class}",
        *([f":widths: {widths}"] if widths else []),
        "",
    ]
    for row in rows:
        out += [f"* - {row[0]}", *(f"  - {cell}" for cell in row[1:])]
    return [*out, "```"]


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
        targets = [f"claim-{chapter}-{re.sub(r'[^A-Za-z0-9]+', '-', k).strip('-').lower()}" for k in names]
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


#: the verdict of a chapter whose claims refer to no paper table (the book's own experiments)
OWN_EXPERIMENT = "own experiment"
BADGES = {**VERDICT_BADGE, OWN_EXPERIMENT: "🔬 an experiment of this book"}  # no quote: Sphinx curls quotes


def chapter_verdicts(report: dict, tables: dict, declared: set[str] | None = None) -> dict[str, dict]:
    """chapter -> the verdict on its paper in ``report`` (:func:`bookkit.claims.verdicts.paper_verdicts`: ``verdict``,
    ``reason``, ``profile``...); a chapter whose claims refer to no paper table gets :data:`OWN_EXPERIMENT`."""
    out = {v["chapter"]: v for v in paper_verdicts(report, tables, declared)}
    for ch in report["chapters"]:
        if ch["chapter"] not in out:
            mine = [c for c in report["claims"] if c["chapter"] == ch["chapter"]]
            reason = f"its claims refer to no paper's table; {counts_text(mine)}"
            out[ch["chapter"]] = {"chapter": ch["chapter"], "verdict": OWN_EXPERIMENT, "reason": reason}
    return out


def counts_text(claims: list[dict]) -> str:
    """``3 reproduced · 1 failed``: the non-zero counts per status, in :data:`STATUSES` order."""
    return " · ".join(f"{n} {s.replace('_', ' ')}" for s, n in status_counts(claims).items() if n) or "no claims"


def run_label(rep: dict) -> str:
    """``profile `offline`, 2026-11-25`` of a report (its commit stays in the report: the pages are for readers);
    a report written after the first of its seeds (the main job's first book) adds ``, provisional: seed 0 of
    seeds 0 1``."""
    at = ""
    early = rep.get("provisional")
    if early:
        done, seeds = (" ".join(map(str, early[k])) for k in ("seeds_done", "seeds"))
        at += f", provisional: seed {done} of seeds {seeds}"
    return f"profile `{rep['profile']}`, {str(rep.get('started') or '?')[:10]}{at}"


def evidence_cell(report: dict, verdict: dict) -> str:
    """The front page's evidence cell for one chapter's ``verdict`` in ``report``: the paper's numbers compared
    and what its findings did (:func:`bookkit.claims.verdicts.evidence_line`), or the claims per status for the book's
    own experiments."""
    if verdict["verdict"] != OWN_EXPERIMENT:
        return evidence_line(verdict)
    return counts_text([c for c in report["claims"] if c["chapter"] == verdict["chapter"]])


def resting_report(reports: list[dict], chapter: str, tables: dict) -> dict | None:
    """The report a chapter's verdict rests on: the highest profile (paper, offline, smoke) in which some of its
    claims are evidence (its verdict is not "not checked here"), else the highest that ran it."""
    ran = [r for r in reports if any(c["chapter"] == chapter for c in r["chapters"])]
    rank = {p: i for i, p in enumerate(PROFILES)}
    ran.sort(key=lambda r: rank.get(r["profile"], -1), reverse=True)
    for rep in ran:
        if chapter_verdicts(rep, tables)[chapter]["verdict"] != "not checked here":
            return rep
    return ran[0] if ran else None


def front_page_markdown(
    reports: list[dict],
    links: dict[str, str] | None = None,
    tables: dict | None = None,
    declared: set[str] | None = None,
) -> str:
    """Each paper's verdict (:func:`chapter_verdicts` over the papers' ``tables``), the run it rests on, and its
    evidence (:func:`bookkit.claims.verdicts.evidence_line`: the paper's numbers compared, what its findings did; the
    claims per status for the book's own experiments): three narrow columns."""
    links = links or {}
    if not reports:
        return "```{note}\nNo runner report was found when this book was built.\n```\n"
    titles = {ch["chapter"]: ch.get("title") or ch["chapter"] for rep in reports for ch in rep["chapters"]}
    out = [
        "**Where each paper stands** (runs: " + "; ".join(run_label(r) for r in reports) + "; every claim on the "
        "{doc}`validation pages <validation>`):",
        "",
    ]
    rows = [["paper (chapter)", "verdict (profile, date)", "the paper's numbers; its findings"]]
    for name in titles:  # in the order the reports first ran them
        rep = resting_report(reports, name, tables or {})
        v = chapter_verdicts(rep, tables or {}, declared)[name]
        label = f"{{doc}}`{_item(titles[name])} <{links[name]}>`" if name in links else _item(titles[name])
        when = f"{rep['profile']}, {str(rep.get('started') or '?')[:10]}"
        rows.append([label, f"{BADGES[v['verdict']]} ({when})", _item(evidence_cell(rep, v))])
    out += [*_list_table("replib-summary", rows, widths="36 30 34"), ""]
    return "\n".join(out)


def what_ran_markdown(entry: dict | None, rep: dict) -> str:
    """The line under a chapter's title naming the run, the models and the data files that produced it (from
    the report's chapter ``entry``: ``models`` noted by :func:`replib.provenance.note_model`, ``data`` by
    :func:`replib.provenance.note_data`)."""
    entry = entry or {}
    models = entry.get("models") or []
    names = [f"`{m.get('name')}` ({m.get('kind')}, {revision_label(m)[:19]})" for m in models]
    if "data" not in entry:
        data = "not recorded by this run"
    else:
        files: dict[str, list[str]] = {}
        for d in entry["data"]:
            files.setdefault(str(d.get("dataset")), []).append(str(d.get("file")))
        data = "; ".join(f"`{k}` ({', '.join(v)})" for k, v in files.items()) or "none read: generated in the chapter"
    seeds = list((entry.get("seeds") or {}).keys())
    seeded = f", seeds {', '.join(seeds)}" if len(seeds) > 1 else ""
    return f"**What ran here**: {run_label(rep)}{seeded}. Models: {'; '.join(names) or 'none'}. Data: {data}."


def colab_budget_markdown(chapter: str, rows: list[dict]) -> str:
    """The line under a chapter's title saying what its ``paper`` profile asks of a Colab session, from the
    rehearsal at paper scale (full-size architectures with random weights, the full data): the parts, the
    largest part's T4-hours, peak memory and cache, and the T4-hours in all ("" without rehearsal rows)."""
    mine = [r for r in rows if r.get("chapter") == chapter]
    if not mine:
        return ""

    def num(r, k):
        try:
            return float(r[k])
        except (KeyError, TypeError, ValueError):
            return float("nan")

    whole = next((r for r in mine if r.get("part") == "all"), None)
    if whole is not None and whole.get("status") != "ok":
        return (
            f"**On Colab** (`paper` profile): not rehearsed yet at paper scale ({{doc}}`the rehearsal <../book/rehearsal>`"
            f" says why: {whole.get('note') or whole.get('status')})."
        )
    if whole is not None:  # the chapter rehearsed as a whole: one run
        return (
            f"**On Colab** (`paper` profile, from the {{doc}}`rehearsal at paper scale <../book/rehearsal>`): "
            f"one run, about {num(whole, 't4_hours_estimate'):.2g} hours on a T4 "
            f"({num(whole, 'l4_hours_estimate'):.2g} on an L4), {num(whole, 'peak_rss_gb'):.1f} GB of RAM and "
            f"{num(whole, 'cache_gb'):.1f} GB of disk (estimated from counted FLOPs, not timed on a T4; rehearsed "
            f"at {100 * num(whole, 'fraction_of_paper'):.2g} % of its sizes and extrapolated "
            f"{num(whole, 'extrapolation'):.3g}×)."
        )

    t4 = [num(r, "t4_hours_estimate") for r in mine]
    ok = sum(r.get("status") == "ok" for r in mine)
    return (
        f"**On Colab** (`paper` profile, from the {{doc}}`rehearsal at paper scale <../book/rehearsal>`, "
        f"{ok} of {len(mine)} parts ok): {len(mine)} parts, one T4 session each (`--part NAME`); the largest "
        f"needs {max(t4):.2g} T4-hours, {max(num(r, 'peak_rss_gb') for r in mine):.1f} GB of RAM and "
        f"{max(num(r, 'cache_gb') for r in mine):.1f} GB of disk; {sum(t4):.2g} T4-hours in all (estimated "
        "from measured FLOPs, not timed on a T4)."
    )


#: a line of a book page that the staging replaces with the table of a data file: ``<!-- replib:table PATH -->``
#: (PATH relative to the project root; CSV)
TABLE_MARKER = re.compile(r"^<!-- replib:table (\S+) -->$", re.M)


def fill_tables(text: str, root: Path) -> str:
    """``text`` with every :data:`TABLE_MARKER` line replaced by its data file's table (the header's ``_`` read as
    spaces, an empty cell as "—"); a file that does not exist is an error that names the page's marker (a
    measurement shown only if it was measured)."""

    def table(m: re.Match) -> str:
        path = Path(root) / m.group(1)
        if not path.is_file():
            raise FileNotFoundError(f"{m.group(0)}: no file {path}")
        with path.open(newline="") as f:
            head, *body = list(csv.reader(f)) or [None]
        if head is None:
            raise ValueError(f"{path}: an empty table")
        lines = ["| " + " | ".join(h.replace("_", " ") for h in head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join((c.strip() or "—").replace("|", "/") for c in r) + " |" for r in body]
        return "\n".join(lines)

    return TABLE_MARKER.sub(table, text)


def colab_costs_markdown(rows: list[dict], chapters: list[str]) -> str:
    """Per chapter, what its ``paper`` profile costs by the rehearsal (:func:`chapter_cost`): T4-hours (and L4
    hours where the rehearsal has them), peak RAM and disk, and whether it runs whole or in parts."""
    costs = {ch: chapter_cost(rows, ch) for ch in chapters}
    l4 = any(c and "l4_hours" in c for c in costs.values())
    head = ["chapter", "T4-hours", *(["L4 hours"] if l4 else []), "peak RAM (GB)", "disk (GB)", "runs as"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def num(v, spec):
        return "—" if v is None else format(v, spec)

    for ch, c in costs.items():
        if c is None:
            lines.append(f"| {ch} | not rehearsed |" + " |" * (len(head) - 2))
            continue
        cells = [ch, num(c["t4_hours"], ".2g"), *([num(c.get("l4_hours"), ".2g")] if l4 else [])]
        cells += [
            num(c["peak_rss_gb"], ".1f"),
            num(c["cache_gb"], ".1f"),
            f"{c['parts']} parts" if c["parts"] else "a whole",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
