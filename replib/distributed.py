"""Past one machine: the chapters' sharded jobs (alignment pairs, embedding shards) on a Dask cluster.

``python -m replib run ... --scheduler [ADDRESS]`` passes the chapters a ``scheduler`` parameter; a chapter
connects with :func:`dask_client` and hands the client to its parallel steps. Each shard is computed on a
worker and written by the process that runs the chapter, atomically, into the same resumable cache as the
serial path (:func:`replib._io.run_sharded`), so the results are the same and a killed run resumes from the
shards already stored, whichever path wrote them.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ._optional import optional_import, require

__all__ = ["LOCAL", "THREAD_VARIABLES", "dask_client", "dask_map", "on_worker", "thread_environment_kept"]

distributed = optional_import("distributed")

#: the ``scheduler`` value that starts a LocalCluster on this machine
LOCAL = "local"


#: the variables a Dask nanny sets for its workers (``distributed.nanny.pre-spawn-environ``): it sets them in
#: the starting process's ``os.environ`` and leaves them there, so every later subprocess (a training run, a
#: papermill kernel) would run on one thread
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")


@contextmanager
def thread_environment_kept():
    """Run the block, then put :data:`THREAD_VARIABLES` of ``os.environ`` back as they were (set or unset)."""
    before = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def dask_client(scheduler: str | None, n_workers: int | None = None):
    """A ``distributed.Client``: None for ``scheduler=None`` (the serial and joblib paths); for ``"local"`` a
    LocalCluster of ``n_workers`` single-threaded worker processes (default: one per core); else a client of
    the scheduler at that address (``tcp://host:8786``). The client becomes Dask's default (joblib's ``dask``
    backend uses it) and is closed when the interpreter exits."""
    if scheduler is None:
        return None
    dist = require(distributed, "distributed", "the Dask path (--scheduler)", pip="distributed")
    if scheduler == LOCAL:
        with thread_environment_kept():
            cluster = dist.LocalCluster(
                n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, dashboard_address=None
            )
            client = dist.Client(cluster)
        atexit.register(cluster.close)
    else:
        client = dist.Client(scheduler)
    atexit.register(client.close)
    return client


def dask_map(client, fn: Callable, args_of: Callable[[int, int], tuple]) -> Callable[[list], Iterator[dict]]:
    """A ``map_shards`` for :func:`replib._io.run_sharded`: ``fn(*args_of(start, stop))`` of every span on
    ``client``'s workers, yielded in the order of the spans (each as soon as it and those before it are
    done)."""

    def map_shards(spans):
        futures = [client.submit(fn, *args_of(a, b), pure=False) for a, b in spans]
        for future in futures:
            yield future.result()
            future.release()

    return map_shards


#: what :func:`on_worker` loaded in this (worker) process, by loader
_LOADED: dict = {}


def on_worker(loader: Callable[[], object], fn: Callable, *args):
    """``fn(loader(), *args)`` in a Dask worker, the object ``loader()`` gives (a model) loaded once per worker
    process: a shard's task carries how to load the model (a picklable function), never the weights."""
    key = repr(loader)
    if key not in _LOADED:
        _LOADED[key] = loader()
    return fn(_LOADED[key], *args)
