"""Timings of the chapter's kernels on synthetic data (run: PYTHONPATH=. python benchmarks/bench_manifolds.py).

S_inter/S_intra through the O(N·d) identity against the brute-force N×N matrix, and LID with 100
neighbours (scikit-learn brute force; torch backend) as the index grows.
"""

import time

import numpy as np

from replib.methods.manifolds import s_inter, s_intra
from replib.metrics.lid import lid_mle


def _time(f, *a, **kw):
    t = time.perf_counter()
    f(*a, **kw)
    return time.perf_counter() - t


def main():
    rng = np.random.default_rng(0)
    d = 384
    for n in (10_000, 100_000):
        X = rng.normal(size=(n, d))
        types = rng.integers(0, n // 20, size=n)
        print(f"n={n:>7,}  s_inter {_time(s_inter, X, types):.3f} s  s_intra {_time(s_intra, X, types):.3f} s")
        if n <= 10_000:
            U = X / np.linalg.norm(X, axis=1, keepdims=True)
            print(f"           brute-force N×N cosine matrix {_time(lambda U=U: U @ U.T):.3f} s")
    for n in (20_000, 100_000):
        X = rng.normal(size=(n, 8)) @ rng.normal(size=(8, d))
        for backend in ("sklearn", "torch"):
            t = _time(lid_mle, X, 100, "cosine", "cai", n_queries=1000, backend=backend)
            print(f"LID n={n:>7,} d={d} 1,000 queries, {backend:7s}: {t:.2f} s")


if __name__ == "__main__":
    main()
