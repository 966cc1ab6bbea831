"""The "paper vs ours" figure staged into every chapter: for each claim with a paper value, our value against
the paper's with the band the claim's tolerance accepts (drawn by :func:`replib.plotting.plot_paper_vs_ours`).

The values and statuses come from the runner's report, the tolerances from the claims files (the check of the
report's profile): a claim checked by a property, or unverified in that profile, is drawn without a band.
"""

from __future__ import annotations

import math
from pathlib import Path

from replib.plotting import plot_paper_vs_ours, save_figure

from .checker import ChapterClaims, split_check

#: the figure's file name beside the staged notebook
FIGURE_SUFFIX = ".paper-vs-ours.png"


def tolerance_interval(paper: float, check: dict | None) -> tuple[float, float] | None:
    """The values a tolerance check accepts around the paper's value (every bound of the check at once:
    ``abs`` :math:`|v - p| \\le a`, ``rel`` :math:`|v - p| \\le r|p|`, ``log10`` :math:`|\\log_{10} v - \\log_{10}
    p| \\le t`); None for any other check."""
    if not check:
        return None
    kind, spec, _ = split_check(check)
    if kind != "tolerance":
        return None
    lo, hi = -math.inf, math.inf
    if "abs" in spec:
        lo, hi = max(lo, paper - spec["abs"]), min(hi, paper + spec["abs"])
    if "rel" in spec:
        lo, hi = max(lo, paper - spec["rel"] * abs(paper)), min(hi, paper + spec["rel"] * abs(paper))
    if "log10" in spec and paper > 0:
        lo, hi = max(lo, paper * 10 ** -spec["log10"]), min(hi, paper * 10 ** spec["log10"])
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def paper_vs_ours_rows(claims: list[dict], checks: dict[str, dict]) -> list[dict]:
    """The figure's rows: every report entry of ``claims`` whose paper value is a non-zero number, with our
    value (None unless a finite number) and the tolerance band of its check (``checks``: key -> the claim's
    check in the report's profile)."""
    rows = []
    for c in claims:
        paper = c.get("paper_value")
        if not _number(paper) or paper == 0:
            continue
        band = tolerance_interval(paper, checks.get(c["key"]))
        rows.append(
            {
                "label": c["key"],
                "paper": float(paper),
                "ours": float(c["value"]) if _number(c.get("value")) else None,
                "low": band[0] if band else None,
                "high": band[1] if band else None,
                "status": c["status"],
            }
        )
    return rows


def profile_checks(chapter: ChapterClaims | None, profile: str) -> dict[str, dict]:
    """key -> the check of ``profile`` of every claim of a chapter's claims file."""
    if chapter is None:
        return {}
    return {c.key: c.checks.get(profile) for c in chapter.claims}


def stage_paper_vs_ours(folder: Path, chapter: str, claims: list[dict], checks: dict, profile: str) -> str | None:
    """Write the chapter's figure into ``folder`` (beside its staged notebook) and return the Markdown that
    shows it, or None when no claim of the chapter has a non-zero paper value."""
    rows = paper_vs_ours_rows(claims, checks)
    if not rows:
        return None
    name = chapter + FIGURE_SUFFIX
    fig = plot_paper_vs_ours(rows, title=f"The paper's values against ours (profile {profile})")
    save_figure(fig, Path(folder) / name, dpi=100, bbox_inches="tight")
    banded = sum(r["low"] is not None for r in rows)
    zero = sum(1 for c in claims if _number(c.get("paper_value")) and c["paper_value"] == 0)
    computed = sum(r["ours"] is not None for r in rows)
    caption = (
        f"The paper's value against ours for the {len(rows)} claims with a non-zero paper value (profile "
        f"`{profile}`; {computed} computed here): each dot is our value divided by the paper's, on a log scale, "
        f"coloured by the claim's status; the grey bar is the interval its tolerance accepts ({banded} claims "
        "are checked by a tolerance here, the others by a property or not at all)."
        + (f" {zero} claims whose paper value is 0 have no ratio and are not drawn." if zero else "")
    )
    return "\n".join(
        [
            f":::{{figure}} {name}",
            f":alt: Dot plot of our value over the paper's for {len(rows)} claims of this chapter, "
            "with the paper's value as a dashed line at 1 and the tolerance bands in grey",
            f":name: paper-vs-ours-{chapter}",
            "",
            caption,
            ":::",
        ]
    )
