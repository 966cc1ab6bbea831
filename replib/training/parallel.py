"""Several training runs at once, each in a worker process of its own.

The training chapter trains two small models (protein and text) per seed, each on one thread
(:data:`replib.training.config` ``threads``: a second thread does not pay at their width). Trained one after the
other they leave a core idle; trained side by side, each in a worker process on one thread, a cold seed takes
as long as its longer run instead of the sum of both. A run's weights do not depend on the process that
trains it (one thread, the batches and masks a pure function of ``(seed, step)``, :mod:`replib.training.loop`),
so the runs and their content keys are those of :func:`~replib.training.loop.trained_model` (tested
bit-identical). This module is not part of the runs' content key (:data:`replib.training.cache.CODE_MODULES`):
it decides where a run trains, never what it computes.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_EXCEPTION, wait

import torch
from joblib.externals.loky import get_reusable_executor
from tqdm.auto import tqdm

from .config import config_for
from .loop import TrainRun, run_dir, trained_model
from .ranges import resume_step

__all__ = ["parallel_workers", "trained_models"]

#: seconds between two looks at the runs' resume states (the progress bars)
POLL_SECONDS = 2.0


def parallel_workers(cfgs: list[dict], budget: int | None = None) -> int:
    """How many of the runs ``cfgs`` (their ``config_for(profile)[task]``) train at once: one per core of
    ``budget`` (default: torch's intra-op threads of this process, which follow ``OMP_NUM_THREADS``, so a chapter
    run beside another with ``--jobs`` gets 1), each run on its one thread; 1 (one after the other) when a run
    has no fixed thread count (the ``paper`` profile's GPU runs share one device)."""
    if len(cfgs) < 2 or any(c.get("threads") is None for c in cfgs):
        return 1
    per_run = max(int(c["threads"]) for c in cfgs)
    cores = torch.get_num_threads() if budget is None else int(budget)
    return max(1, min(len(cfgs), cores // per_run))


def trained_models(
    tasks, profile: str, seed: int = 0, *, root=None, workers: int | None = None, progress: bool = True
) -> dict[str, TrainRun]:
    """:func:`~replib.training.loop.trained_model` of each task, the ones not yet in the cache trained side by
    side (:func:`parallel_workers` of them at once, in loky worker processes, which end with this process).

    Parameters
    ----------
    tasks : iterable of {"protein", "text"}
    profile : str
    seed : int
    root : path-like, optional
        Parent folder of the run folders (default ``$REPLIB_CACHE_DIR/training``).
    workers : int, optional
        Runs at once (default :func:`parallel_workers`); 1 trains them one after the other in this process.
    progress : bool
        Progress bars of the updates done, read from each run's resume state.

    Returns
    -------
    dict
        task -> :class:`~replib.training.loop.TrainRun` with ``final/`` complete, in the order of ``tasks``.
    """
    tasks = list(tasks)
    sizes = config_for(profile)
    folders = {t: run_dir(t, sizes[t], seed, root) for t in tasks}
    # finished as train_lm decides it: final/ with its sha256 manifest
    todo = [t for t in tasks if not (TrainRun(t, sizes[t], seed, folders[t]).final_dir / "sha256.json").exists()]
    n = parallel_workers([sizes[t] for t in todo]) if workers is None else max(1, min(int(workers), len(todo)))
    if n > 1:
        _train_side_by_side(todo, profile, seed, root, n, progress, folders)
    return {t: trained_model(t, profile, seed, root=root, progress=progress) for t in tasks}


def _updates_done(folder) -> int:
    """The run's latest resume state's update (0 before the first, or while the state is being replaced)."""
    try:
        return max(resume_step(folder), 0)
    except (OSError, ValueError, KeyError):
        return 0


def _train_side_by_side(tasks: list[str], profile: str, seed: int, root, n: int, progress: bool, folders: dict) -> None:
    """Train ``tasks`` in ``n`` worker processes; the parent shows each run's updates done (from its run folder in
    ``folders``) until all end (a failed run's exception is raised once the others have ended, so none is left
    training)."""
    sizes = config_for(profile)
    # the workers get this process's environment as it is now (the data mirror, the cache folder); loky starts
    # new workers when it differs from the last call's
    executor = get_reusable_executor(max_workers=n, env=dict(os.environ))
    futures = {t: executor.submit(trained_model, t, profile, seed, root=root, progress=False) for t in tasks}
    bars = {
        t: tqdm(total=sizes[t]["steps"], desc=f"train {t} (worker)", disable=not progress, leave=False) for t in tasks
    }
    try:
        pending = set(futures.values())
        while pending:
            done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_EXCEPTION)
            for t, bar in bars.items():
                bar.n = max(_updates_done(folders[t]), bar.n)
                bar.refresh()
            if any(f.exception() for f in done):
                wait(pending)  # let the others end (resumable) before raising
                break
    finally:
        for bar in bars.values():
            bar.close()
    for f in futures.values():
        f.result()  # raises the first failure
