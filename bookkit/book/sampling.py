"""The paper profile's chosen sample sizes (``book/sampling_plan.csv``, :mod:`replib.precision`) on a chapter's
validation page: each group of claims with its size, the stand-in's spread and the reason."""

from __future__ import annotations

from pathlib import Path

from replib._io import read_csv
from replib.precision import PLAN_CSV

__all__ = ["plan_markdown"]


def plan_markdown(chapter: str, plan_csv: Path = PLAN_CSV) -> list[str]:
    """Markdown lines: the chapter's rows of the plan as a table (nothing when it has none)."""
    rows = [r for r in read_csv(plan_csv) if r["chapter"] == chapter]
    if not rows:
        return []
    out = [
        "## Sample sizes of the paper profile",
        "",
        "Chosen by the precision rule ({doc}`../sampling`): the smallest size whose spread is a quarter of the "
        "check's band, the spread measured on a stand-in (a proxy: the papers' models are not run here).",
        "",
        "| claims | parameter | size | paper's data | spread at the size | stand-in | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r['claims']}` | `{r['parameter']}` | {_count(r['n'])} {r['unit']} | {_count(r['paper_n'])} | "
            f"{r['spread'] or '-'} | {r['standin'] or '-'} | {r['reason']} |"
        )
    return [*out, ""]


def _count(n: str) -> str:
    """A size as the table shows it: ``8,900``; a word (``all``: the whole data set) as it is; empty as "—"."""
    return f"{int(n):,}" if n.isdigit() else (n or "—")
