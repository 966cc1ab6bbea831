"""The time budget of the main job: each chapter's seconds, cold, in the ``offline`` profile, on one of the main
job's :data:`BUDGET_LANES` lanes of one core each (``book/measurements/budget.csv``: the first seed, with the
chapter's shared work, and each further seed), and the setup's and the book's; the runner prints every
chapter's time against it. The chapters run side by side on the lanes, so their seconds together, divided by
the lanes, are the chapters' wall-clock time: 13 minutes for two seeds on 2 cores."""

from __future__ import annotations

from pathlib import Path

from replib._io import read_csv

__all__ = ["BUDGET_FILE", "BUDGET_LANES", "BUDGET_PROFILE", "against", "allowed", "load_budget"]

BUDGET_FILE = Path("book") / "measurements" / "budget.csv"
#: the profile the budget is for (the main job's)
BUDGET_PROFILE = "offline"
#: the lanes the chapters' seconds are on (the main job's ``--jobs`` on 2 cores)
BUDGET_LANES = 2


def load_budget(root: Path) -> dict[str, tuple[float, float | None]]:
    """``chapter -> (first seed's seconds, each further seed's seconds or None)``; empty without the file."""
    rows = read_csv(Path(root) / BUDGET_FILE)
    return {
        r["chapter"]: (float(r["first_seed_s"]), float(r["next_seed_s"]) if r["next_seed_s"] else None) for r in rows
    }


def allowed(budget: dict, chapter: str, n_seeds: int) -> float | None:
    """The seconds ``chapter`` may take for ``n_seeds`` seeds (None: not in the budget)."""
    if chapter not in budget:
        return None
    first, each = budget[chapter]
    return first + (n_seeds - 1) * (each or 0.0)


def against(seconds: float, limit: float | None) -> str:
    """``"123 s"`` beside its budget: ``"123 s of 150 s"`` or ``"180 s, over its 150 s budget by 30 s"``."""
    if limit is None:
        return f"{seconds:.0f} s"
    if seconds <= limit:
        return f"{seconds:.0f} s of {limit:.0f} s"
    return f"{seconds:.0f} s, over its {limit:.0f} s budget by {seconds - limit:.0f} s"
