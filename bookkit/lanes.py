"""Chapters side by side: the executions of one run on ``jobs`` lanes (``python -m replib run --jobs N``).

On a machine with a few cores the chapters' kernels do not use them well one at a time: much of a chapter is
single-threaded Python, and a small BLAS or OpenMP call on two threads, with the other core busy, spins at
its barriers (measured for the training loop: 387 ms an update on one thread, 3,441 ms on two). With lanes,
``jobs`` kernels run at once, each with ``cores // jobs`` threads (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``; a value the user set wins).

Order: every chapter's first seed, the longest first (its time in the previous report, else its time
limit); a chapter's next seed becomes ready when its previous seed has finished, so that the later seeds
find the caches their first seed filled (the embeddings of the data, which do not depend on the seed) instead
of computing them twice or waiting on their locks. A lane takes the longest ready execution.

What the chapters compute does not depend on the lanes; the floating-point reduction order of a kernel's BLAS
calls does depend on its thread count, so records can differ in their last digits from a run with other
thread counts (as between two machines with different core counts).
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from collections.abc import Callable, Hashable, Sequence

__all__ = ["lane_threads", "run_lanes"]


def lane_threads(jobs: int, cores: int | None = None) -> int:
    """Threads of each kernel when ``jobs`` run at once on ``cores`` (default: this machine's): at least 1."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1; got {jobs}")
    return max(1, (cores or os.cpu_count() or 1) // jobs)


def run_lanes(
    jobs: int,
    chains: Sequence[tuple[Hashable, Sequence]],
    execute: Callable[[Hashable, object, bool], object],
    cost: Callable[[Hashable], float],
) -> dict:
    """Execute chains of steps on ``jobs`` threads: ``chains`` is ``[(name, [step0, step1, ...]), ...]``; a
    chain's step ``i + 1`` starts after its step ``i`` ends; a free lane takes the ready step of the chain with
    the largest ``cost(name)``. ``execute(name, step, first)`` runs one step (``first``: the chain's first).

    Returns
    -------
    dict
        ``(name, step) -> execute's result``. An exception in one step ends its chain there (its later steps
        are not run) and is re-raised after every lane has stopped.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1; got {jobs}")
    order = itertools.count()
    ready: list = []  # (-cost, order, name, index)
    steps = {name: list(seq) for name, seq in chains}
    for name, seq in steps.items():
        if seq:
            heapq.heappush(ready, (-float(cost(name)), next(order), name, 0))
    results: dict = {}
    errors: list[BaseException] = []
    cond = threading.Condition()
    running = [0]

    def lane() -> None:
        while True:
            with cond:
                while not ready and running[0]:
                    cond.wait()
                if not ready:
                    cond.notify_all()
                    return
                neg, _, name, i = heapq.heappop(ready)
                running[0] += 1
            try:
                out = execute(name, steps[name][i], i == 0)
            except BaseException as exc:
                with cond:
                    errors.append(exc)
                    running[0] -= 1
                    cond.notify_all()
                continue
            with cond:
                results[(name, steps[name][i])] = out
                if i + 1 < len(steps[name]):
                    heapq.heappush(ready, (neg, next(order), name, i + 1))
                running[0] -= 1
                cond.notify_all()

    threads = [threading.Thread(target=lane, name=f"lane-{k}", daemon=True) for k in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
