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

import contextlib
import ctypes
import os
import signal
import sys
from concurrent.futures import FIRST_EXCEPTION, wait
from pathlib import Path

import torch
from joblib.externals.loky import get_reusable_executor
from tqdm.auto import tqdm

from ..models.tiny import ESM_VOCAB
from .config import config_for
from .loop import TrainRun, run_dir, trained_model
from .ranges import resume_step

__all__ = ["parallel_workers", "run_cost", "train_seeds", "trained_models"]

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
    train_seeds(tasks, profile, [seed], root=root, workers=workers, progress=progress, serial=False)
    return {t: trained_model(t, profile, seed, root=root, progress=progress) for t in tasks}


def run_cost(cfg: dict) -> int:
    """A run's work up to a constant factor, to order runs longest first: updates x tokens of a batch x the
    multiply-adds of a token through its blocks (attention projections ``4 h^2``, feed-forward ``2 h f``) and its
    output layer (``h`` x the vocabulary: ``vocab``, or ESM-2's 33 tokens for the protein model)."""
    h = int(cfg["hidden"])
    per_token = int(cfg["layers"]) * (4 * h**2 + 2 * h * int(cfg["ffn"])) + h * int(cfg.get("vocab", len(ESM_VOCAB)))
    return int(cfg["steps"]) * int(cfg["batch"]) * int(cfg["seq_len"]) * per_token


def _unfinished(tasks, profile: str, seeds, root) -> dict[tuple[str, int], Path]:
    """The ``(task, seed)`` runs not yet finished as :func:`~replib.training.loop.train_lm` decides it (``final/``
    with its sha256 manifest) -> their run folders, longest first (:func:`run_cost`; ties in the given order)."""
    sizes = config_for(profile)
    folders = {(t, int(s)): run_dir(t, sizes[t], int(s), root) for s in seeds for t in tasks}
    todo = [
        (t, s) for (t, s), f in folders.items() if not (TrainRun(t, sizes[t], s, f).final_dir / "sha256.json").exists()
    ]
    todo.sort(key=lambda job: -run_cost(sizes[job[0]]))  # stable: ties keep the given order
    return {job: folders[job] for job in todo}


def train_seeds(
    tasks, profile: str, seeds, *, root=None, workers: int | None = None, progress: bool = True, serial: bool = True
) -> list[tuple[str, int]]:
    """Train every run of ``tasks`` x ``seeds`` not yet in the cache, :func:`parallel_workers` at once, longest
    first (so that on two cores two seeds' long text runs train side by side and the short protein runs fill
    in after them, instead of each seed's pair leaving a core idle while its long run ends).

    The runs are those :func:`~replib.training.loop.trained_model` makes (the same content keys, bit-identical
    weights: each run on its own thread count, its batches a function of ``(seed, step)``); this only decides
    where and when each trains. ``serial=False`` leaves a lone run (or runs that cannot train side by side) to
    the caller instead of training them here one after the other.

    Returns
    -------
    list of (task, seed)
        The runs this call trained, in the order they were started (``[]`` when it left them to the caller).
    """
    tasks, sizes = list(tasks), config_for(profile)
    todo = _unfinished(tasks, profile, seeds, root)
    n = parallel_workers([sizes[t] for t, _ in todo]) if workers is None else max(1, min(int(workers), len(todo)))
    if n > 1:
        _train_side_by_side(todo, profile, root, n, progress)
    elif serial:
        for t, s in todo:
            trained_model(t, profile, s, root=root, progress=progress)
    else:
        return []  # left to the caller
    return list(todo)


#: Linux's prctl option that sends a signal to a process when its parent dies
_PR_SET_PDEATHSIG = 1


def _end_with_parent(parent: int) -> None:
    """A worker's initializer: end (SIGTERM) when ``parent`` dies, killed or not, instead of going on training
    as a child of PID 1 with the run locks held (Linux's parent-death signal; elsewhere nothing is set up, and
    loky's own check ends an idle worker)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the signal was set up
        os._exit(1)


def _train_side_by_side(folders: dict[tuple[str, int], Path], profile: str, root, n: int, progress: bool) -> None:
    """Train the ``(task, seed)`` runs ``folders`` (-> their run folders) in ``n`` worker processes, started in the
    order given; the parent shows each run's updates done (from its run folder) until all end (a failed run's
    exception is raised once the others have ended, so none is left training)."""
    sizes = config_for(profile)
    jobs = list(folders)
    # this process's environment as it is now (the data mirror, the cache folder; loky starts new workers when it
    # differs from the last call's), each worker ending with this process
    executor = get_reusable_executor(n, env=dict(os.environ), initializer=_end_with_parent, initargs=(os.getpid(),))
    futures = {(t, s): executor.submit(trained_model, t, profile, s, root=root, progress=False) for t, s in jobs}
    seeds = {s for _, s in jobs}
    bars = {
        (t, s): tqdm(
            total=sizes[t]["steps"],
            desc=f"train {t}" + (f" seed {s}" if len(seeds) > 1 else "") + " (worker)",
            disable=not progress,
            leave=False,
        )
        for t, s in jobs
    }
    try:
        pending = set(futures.values())
        while pending:
            done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_EXCEPTION)
            for job, bar in bars.items():
                with contextlib.suppress(OSError, ValueError, KeyError):  # a resume state being replaced: later
                    bar.n = max(resume_step(folders[job]), bar.n)
                bar.refresh()
            if any(f.exception() for f in done):
                for f in pending:
                    f.cancel()  # the runs not yet started do not start
                wait(pending)  # let the others end (resumable) before raising
                break
    finally:
        for bar in bars.values():
            bar.close()
        executor.shutdown(wait=True)  # the workers end now, not after loky's idle timeout (a runner goes on)
    for f in futures.values():
        if not f.cancelled():
            f.result()  # raises the first failure
