"""Timing of the silhouette score at the sizes of Mickus et al. 2024 (run by hand; nothing asserted).

    PYTHONPATH=. python benchmarks/bench_classifiers.py [--device cuda]

Prints seconds per call for scikit-learn's ``silhouette_score`` and ``replib.metrics.silhouette``'s exact
chunked torch version (float64 and float32), and their differences, on random clustered data of the shapes
of the paper's setups (polarity 10,662 x 384, k = 2; SNLI pairs 9,842 x 768, k = 3; supersenses 2,275 x 300,
k = 50).
"""

import argparse
import time

import numpy as np
import torch
from sklearn.metrics import silhouette_score as sk_silhouette

from replib.metrics.silhouette import silhouette_score

SHAPES = {"polarity": (10_662, 384, 2), "snli-pairs": (9_842, 768, 3), "supersense": (2_275, 300, 50)}


def _time(f, repeat=2):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return out, best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--chunk-size", type=int, default=2048)
    ap.add_argument("--skip-sklearn", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'setup':12s} {'sklearn s':>10s} {'torch64 s':>10s} {'torch32 s':>10s} {'|64-sk|':>9s} {'|32-sk|':>9s}")
    for name, (n, d, k) in SHAPES.items():
        y = rng.integers(0, k, n)
        X = (rng.normal(size=(k, d))[y] * 0.3 + rng.normal(size=(n, d)) / np.sqrt(d)).astype(np.float32)
        ref, t_sk = (np.nan, np.nan) if args.skip_sklearn else _time(lambda X=X, y=y: sk_silhouette(X, y), 1)
        s64, t64 = _time(lambda X=X, y=y: silhouette_score(X, y, device=args.device, chunk_size=args.chunk_size))
        Xc = torch.from_numpy(X - X.mean(0))
        s32, t32 = _time(
            lambda Xc=Xc, y=y: silhouette_score(
                Xc, y, device=args.device, chunk_size=args.chunk_size, dtype=torch.float32
            )
        )
        print(f"{name:12s} {t_sk:10.2f} {t64:10.2f} {t32:10.2f} {abs(s64 - ref):9.1e} {abs(s32 - ref):9.1e}")


if __name__ == "__main__":
    main()
