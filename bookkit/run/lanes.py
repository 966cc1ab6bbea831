"""Chapters side by side: the executions of one run on ``jobs`` lanes (``python -m replib run --jobs N``).

On a machine with a few cores the chapters' kernels do not use them well one at a time: much of a chapter is
single-threaded Python, and a small BLAS or OpenMP call on two threads, with the other core busy, spins at
its barriers (measured for the training loop: 387 ms an update on one thread, 3,441 ms on two). With lanes,
``jobs`` kernels run at once, each with ``cores // jobs`` threads (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``; a value the user set wins).

Order: every chapter's first seed before any later seed (so that the first seed's verdicts, and the main job's
book built from them, come as early as they can), the longest first (its time in the previous report, else its
cold budget, :mod:`bookkit.run.budget`, else its time limit); a chapter's next seed becomes ready when its previous
seed has finished, so that the later seeds find the caches their first seed filled (the embeddings of the data,
which do not depend on the seed) instead of computing them twice or waiting on their locks. A later seed's kernel
runs at a lower priority (``nice``, :data:`bookkit.run.runner.LATER_SEED_NICE`), so that the first seeds still
running, and the book built from them, keep the cores they can use.

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
    after_first: Callable[[dict], object] | None = None,
) -> dict:
    """Execute chains of steps on ``jobs`` threads: ``chains`` is ``[(name, [step0, step1, ...]), ...]``; a
    chain's step ``i + 1`` starts after its step ``i`` ends; a free lane takes, of the ready steps, one of the
    lowest index (every chain's first step before any second step), of those the chain with the largest
    ``cost(name)``. ``execute(name, step, first)`` runs one step (``first``: the chain's first).
    ``after_first``, if given, is called once, on the lane that ended the last of the chains' first steps, with
    ``(name, first step) -> result`` of every chain that has one (the other lanes go on meanwhile).

        Returns
        -------
        dict
            ``(name, step) -> execute's result``. An exception in one step ends its chain there (its later steps
            are not run) and is re-raised after every lane has stopped.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1; got {jobs}")
    order = itertools.count()
    ready: list = []  # (index, -cost, order, name)
    steps = {name: list(seq) for name, seq in chains}
    for name, seq in steps.items():
        if seq:
            heapq.heappush(ready, (0, -float(cost(name)), next(order), name))
    results: dict = {}
    errors: list[BaseException] = []
    cond = threading.Condition()
    running = [0]
    firsts_left = [sum(1 for seq in steps.values() if seq)]

    def lane() -> None:
        while True:
            with cond:
                while not ready and running[0]:
                    cond.wait()
                if not ready:
                    cond.notify_all()
                    return
                i, neg, _, name = heapq.heappop(ready)
                running[0] += 1
            try:
                out, error = execute(name, steps[name][i], i == 0), None
            except BaseException as exc:
                error = exc
            with cond:
                if error is not None:
                    errors.append(error)
                else:
                    results[(name, steps[name][i])] = out
                    if i + 1 < len(steps[name]):
                        heapq.heappush(ready, (i + 1, neg, next(order), name))
                firsts_left[0] -= i == 0
                firsts = None
                if i == 0 and firsts_left[0] == 0 and after_first is not None:
                    firsts = {(n, q[0]): results[(n, q[0])] for n, q in steps.items() if q and (n, q[0]) in results}
                running[0] -= 1
                cond.notify_all()
            if firsts is not None:
                try:
                    after_first(firsts)
                except BaseException as exc:
                    with cond:
                        errors.append(exc)

    threads = [threading.Thread(target=lane, name=f"lane-{k}", daemon=True) for k in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
