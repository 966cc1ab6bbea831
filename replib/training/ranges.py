"""A training run in step ranges: one run cut into consecutive ranges of updates, each its own session.

At paper size one run is about 5 T4-hours (``book/rehearsal.csv``), longer than one Colab session. The run
is cut into ``n`` consecutive ranges of updates (:func:`step_ranges`), each ending on a multiple of
``save_every`` (where the loop writes a resume state) or on the last update. Range ``k`` trains from the
resume state the range before it left (:func:`train_until`): the loop already resumes a killed run to
bit-identical weights on the same number of threads (:mod:`replib.training.loop`), so training in ranges
gives the weights of one uninterrupted run (tested). Only the last range exports ``final/``.

This module adds no state of its own: a range stops through the loop's ``callback`` (raising
:class:`~replib.training.loop.TrainingInterrupted` once the resume state of its last update is on disk), so
the run folder, its content key and its files are those of an uninterrupted run.
"""

from __future__ import annotations

import json
import math

from .loop import TrainingInterrupted, TrainRun, run_dir, train_lm

__all__ = ["n_ranges", "resume_step", "step_ranges", "train_until"]


def n_ranges(hours: float, limit: float) -> int:
    """The fewest equal ranges of a run of ``hours`` that keep each within ``limit`` hours (at least 1)."""
    if not (hours >= 0 and limit > 0):
        raise ValueError(f"need hours >= 0 and limit > 0; got hours={hours}, limit={limit}")
    return max(1, math.ceil(hours / limit - 1e-9))


def step_ranges(steps: int, save_every: int, n: int) -> list[tuple[int, int]]:
    """``n`` consecutive ranges ``(first, last)`` of the updates ``1..steps``, as equal as the resume points
    allow: every ``last`` but the final one is a multiple of ``save_every`` (the loop saves a resume state
    there), the final one is ``steps``.

    Raises
    ------
    ValueError
        When ``steps`` has fewer than ``n`` resume points to cut at (``n - 1`` multiples of ``save_every``
        below ``steps``), or a size is not positive.
    """
    if steps < 1 or save_every < 1 or n < 1:
        raise ValueError(f"need steps, save_every and n >= 1; got {steps}, {save_every}, {n}")
    cuts = sorted({save_every * round(steps * k / n / save_every) for k in range(1, n)})
    if len(cuts) != n - 1 or (cuts and (cuts[0] < 1 or cuts[-1] >= steps)):
        raise ValueError(f"{steps} updates saved every {save_every} cannot be cut into {n} ranges")
    ends = [*cuts, steps]
    return [(first + 1, last) for first, last in zip([0, *cuts], ends)]


def resume_step(folder) -> int:
    """The update of the latest resume state of a run folder (``resume.json``), or -1 when it has none."""
    ptr = folder / "resume.json"
    return int(json.loads(ptr.read_text())["step"]) if ptr.exists() else -1


def train_until(task: str, cfg: dict, seed: int, until: int, *, root=None, progress: bool = True) -> TrainRun:
    """Train one run up to update ``until`` and stop there, its resume state on disk.

    ``until`` is the last update of a range of :func:`step_ranges` (a multiple of ``save_every``) or
    ``cfg["steps"]`` (the whole run: :func:`~replib.training.loop.train_lm`, ``final/`` exported). A run whose
    resume state is already at or past ``until`` is not trained further.

    Returns
    -------
    TrainRun
        Complete (``final/`` verified) when ``until == cfg["steps"]``; otherwise partial (no ``final/``).
    """
    total, every = int(cfg["steps"]), int(cfg["save_every"])
    if until == total:
        return train_lm(task, cfg, seed, root=root, progress=progress)
    if not (0 < until < total and until % every == 0):
        raise ValueError(f"a range must end on a multiple of save_every ({every}) below {total}, or at {total}; "
                         f"got {until}")  # fmt: skip
    run = TrainRun(task, dict(cfg), int(seed), run_dir(task, cfg, seed, root))
    if (run.final_dir / "sha256.json").exists() or resume_step(run.dir) >= until:
        return run

    def stop(step: int) -> None:
        if step == until:  # the resume state of this update is on disk (a multiple of save_every)
            raise TrainingInterrupted(step)

    try:
        train_lm(task, cfg, seed, root=root, callback=stop, progress=progress)
    except TrainingInterrupted:
        pass
    return run
