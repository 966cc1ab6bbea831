"""The "paper vs ours" figure staged into every chapter: for each claim with a paper value, our value against
the paper's with the band the claim's tolerance accepts (drawn by :func:`replib.plotting.plot_paper_vs_ours`).

The values and statuses come from the runner's report, the tolerances from the claims files (the check of the
report's profile): a claim checked by a property, or unverified in that profile, is drawn without a band.
"""

from __future__ import annotations

import math
from pathlib import Path

from replib._validation import finite_number
from replib.papers import PaperTableError, resolve_ref
from replib.plotting import plot_paper_vs_ours, plot_paper_vs_ours_by_group, save_figure

from ..claims.checker import split_check, tolerance_bounds

#: the figure's file name beside the staged notebook
FIGURE_SUFFIX = ".paper-vs-ours.png"
#: the most claims drawn one per row in the chapter's figure: more (or claims from several of the paper's tables)
#: are drawn one row per table, with a figure per table in a dropdown below it
MAX_ROWS = 30
#: the group of a claim whose number is in none of the papers' tables
NO_TABLE = "other claims"


def tolerance_interval(paper: float, check: dict | None) -> tuple[float, float] | None:
    """The values a tolerance check accepts around the paper's value (:func:`bookkit.claims.checker.tolerance_bounds`);
    None for any other check, or a band open on one side."""
    kind, spec, _ = split_check(check) if check else (None, None, None)
    if kind != "tolerance":
        return None
    lo, hi = tolerance_bounds(paper, spec)
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _number_of(claim: dict, tables: dict | None):
    """The paper's number a claim refers to (its ``ref`` in ``tables``), or None."""
    try:
        return resolve_ref(claim["ref"], tables) if tables and claim.get("ref") else None
    except PaperTableError:
        return None


def paper_vs_ours_rows(claims: list[dict], checks: dict[str, dict], tables: dict | None = None) -> list[dict]:
    """The figure's rows: every report entry of ``claims`` whose paper value is a non-zero number, with our
    value (None unless a finite number), the tolerance band of its check (``checks``: key -> the claim's
    check in the report's profile) and its group, the paper's table it comes from (``tables``:
    :func:`replib.papers.load_paper_tables`; the paper is named too when the claims cite several;
    :data:`NO_TABLE` without one)."""
    numbers = {c["key"]: _number_of(c, tables) for c in claims}
    several = len({n.paper for n in numbers.values() if n is not None}) > 1
    rows = []
    for c in claims:
        paper = c.get("paper_value")
        if not finite_number(paper) or paper == 0:
            continue
        band = tolerance_interval(paper, checks.get(c["key"]))
        n = numbers[c["key"]]
        rows.append(
            {
                "label": c["key"],
                "paper": float(paper),
                "ours": float(c["value"]) if finite_number(c.get("value")) else None,
                "low": band[0] if band else None,
                "high": band[1] if band else None,
                "status": c["status"],
                "group": NO_TABLE if n is None else f"{n.paper}: {n.table}" if several else n.table,
            }
        )
    return rows


def figure_md(name: str, alt: str, caption: str, label: str | None = None) -> list[str]:
    """A MyST figure: the image ``name`` with its alt text, caption and (``label``) target name."""
    return [f":::{{figure}} {name}", f":alt: {alt}", *([f":name: {label}"] if label else []), "", caption, ":::"]


def _chunks(rows: list[dict], groups: list[str]):
    """(group, its rows, the figure's title) per figure of the dropdown: a group of more than :data:`MAX_ROWS`
    claims is cut into figures of at most that many, so that no figure is taller than a few screens."""
    for g in groups:
        mine = [r for r in rows if r["group"] == g]
        n = -(-len(mine) // MAX_ROWS)
        for k in range(n):
            yield g, mine[k * MAX_ROWS : (k + 1) * MAX_ROWS], g if n == 1 else f"{g} (part {k + 1} of {n})"


def stage_paper_vs_ours(
    folder: Path, chapter: str, claims: list[dict], checks: dict, profile: str, tables: dict | None = None
) -> str | None:
    """Write the chapter's figure into ``folder`` (beside its staged notebook) and return the Markdown that
    shows it, or None when no claim of the chapter has a non-zero paper value.

    Up to :data:`MAX_ROWS` claims of one table are drawn one per row; more, or claims from several of the
    paper's tables (``tables``), are drawn one row per table, and a dropdown below holds one figure per table
    with a row per claim."""
    rows = paper_vs_ours_rows(claims, checks, tables)
    if not rows:
        return None
    name = chapter + FIGURE_SUFFIX
    groups = list(dict.fromkeys(r["group"] for r in rows))
    title = f"The paper's values against ours (profile {profile})"
    by_table = len(groups) > 1 or len(rows) > MAX_ROWS
    fig = plot_paper_vs_ours_by_group(rows, title) if by_table else plot_paper_vs_ours(rows, title=title)
    save_figure(fig, Path(folder) / name, dpi=100, bbox_inches="tight")
    banded = sum(r["low"] is not None for r in rows)
    zero = sum(1 for c in claims if finite_number(c.get("paper_value")) and c["paper_value"] == 0)
    computed = sum(r["ours"] is not None for r in rows)
    drawn = "each dot is our value divided by the paper's, on a log scale"
    drawn += f", one row per table of the paper ({len(groups)})" if by_table else ""
    caption = (
        f"The paper's value against ours for the {len(rows)} claims with a non-zero paper value (profile "
        f"`{profile}`; {computed} computed here): {drawn}, coloured by the claim's status"
        + (
            "; the dropdown below draws every claim of each table with the interval its tolerance accepts."
            if by_table
            else f"; the grey bar is the interval its tolerance accepts ({banded} claims are checked by a "
            "tolerance here, the others by a property or not at all)."
        )
        + (f" {zero} claims whose paper value is 0 have no ratio and are not drawn." if zero else "")
    )
    alt = (
        f"Dot plot of our value over the paper's for {len(rows)} claims of this chapter, "
        + ("one row per table of the paper" if by_table else "with the tolerance bands in grey")
        + ", with the paper's value as a dashed line at 1"
    )
    out = figure_md(name, alt, caption, f"paper-vs-ours-{chapter}")
    if by_table:
        out += ["", "::::{dropdown} Every claim against the paper, table by table", ""]
        for i, (g, mine, label) in enumerate(_chunks(rows, groups), 1):
            part = f"{chapter}.paper-vs-ours-{i}.png"
            save_figure(plot_paper_vs_ours(mine, title=label), Path(folder) / part, dpi=100, bbox_inches="tight")
            out += figure_md(
                part,
                f"Dot plot of our value over the paper's for {len(mine)} claims of {g}",
                f"{label}: our value over the paper's for {len(mine)} claims (profile `{profile}`), coloured by "
                "status; the grey bar is the interval a claim's tolerance accepts.",
            )
            out.append("")
        out.append("::::")
    return "\n".join(out)
