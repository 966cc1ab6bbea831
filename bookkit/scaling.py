"""``python -m replib bench --scaling DIR``: how each chapter's dominant step grows with its work.

For each step the cost is measured at sizes spanning at least two orders of magnitude, the exponent ``b`` of
``t = a * W**b`` is fitted by least squares in log-log, and the fit is extrapolated to the work of the
``paper`` profile. The GPU column divides that CPU extrapolation by an *assumed* speed-up (stated per step,
from the ratio of peak throughputs, not measured: no GPU was available where this ran). Everything in the
last two columns is an estimate until the nightly's paper run measures it.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from replib.methods import protein as P
from replib.methods.cluster_isotropy import cluster_labels
from replib.metrics import isoscore
from replib.metrics.lid import lid_mle
from replib.plotting import save_figure

from .bench_tables import Scaling, fit_power_law
from .bench_tables import scaling_markdown as markdown

__all__ = ["GPU_EFFICIENCY", "H100_FP32", "Scaling", "fit_power_law", "markdown", "plot", "run"]

#: an H100's FP32 (non-tensor-core) peak, FLOP/s, and the fraction of it a real kernel reaches (assumed)
H100_FP32 = 67e12
GPU_EFFICIENCY = 0.3


def _time(fn, repeat: int = 2) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def cpu_gemm_flops(n: int = 1024) -> float:
    """This machine's float32 matrix-multiply throughput (FLOP/s), the basis of the assumed GPU speed-ups."""
    a = np.random.default_rng(0).normal(size=(n, n)).astype(np.float32)
    t = _time(lambda: a @ a, repeat=3)
    return 2 * n**3 / t


def _steps(rng):
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))

    def isoscore_at(n):
        X = rng.normal(size=(n, 768)).astype(np.float32)
        return lambda: isoscore(X)

    def alignment_at(n):
        seqs = ["".join(rng.choice(aa, size=150)) for _ in range(2 * n)]
        pairs = list(zip(seqs[::2], seqs[1::2]))
        return lambda: [P.alignment_stats(a, b) for a, b in pairs]

    def lid_at(n):
        X = rng.normal(size=(n, 16)) @ rng.normal(size=(16, 384))
        return lambda: lid_mle(X, k=20, variant="levina_bickel")

    def kmeans_at(n):
        X = rng.normal(size=(n, 384))
        return lambda: cluster_labels(X, 20, clusterer="scipy", random_state=0)

    return [
        # step, chapter, unit, sizes, maker, paper work, note, speed-up kind
        (
            "IsoScore of n × 768 vectors",
            "isoscore",
            "vectors",
            [300, 1000, 3000, 10_000, 30_000],
            isoscore_at,
            46 * 150_000,
            "46 layers of BERT, DistilBERT, GPT and GPT-2, about 150k WikiText-2 tokens each (one call per layer)",
            "gemm",
        ),
        (
            "global alignment + identity (150-residue pairs)",
            "protein_isotropy",
            "pairs",
            [10, 30, 100, 300, 1000],
            alignment_at,
            6_400_000,
            "Hakim et al.'s 6.4 million Swiss-Prot pairs",
            "cores",
        ),
        (
            "LID (MLE, k = 20) of n points in 384-d",
            "manifolds",
            "points",
            [300, 1000, 3000, 10_000, 30_000],
            lid_at,
            1_190_000,
            "Cai et al.'s Table 3: 1.19 M BERT token instances, per layer (one layer)",
            "gemm",
        ),
        (
            "k-means (k = 20, 10 Lloyd iterations) of n × 384 tokens",
            "cluster_isotropy",
            "tokens",
            [500, 1500, 5000, 15_000, 50_000],
            kmeans_at,
            60_000,
            "an STS token pool of about 60k tokens (one fit of the grid; the grid and 5 seeds multiply it)",
            "gemm",
        ),
    ]


def run(rng=None, progress=print, cpu_flops: float | None = None) -> list[Scaling]:
    """Measure every step at its sizes and fit its power law (a few minutes on 2 cores)."""
    rng = rng or np.random.default_rng(0)
    cpu_flops = cpu_flops or cpu_gemm_flops()
    gemm_speedup = H100_FP32 * GPU_EFFICIENCY / cpu_flops
    out = []
    for step, chapter, unit, sizes, maker, work, note, kind in _steps(rng):
        seconds = []
        for n in sizes:
            seconds.append(_time(maker(n)))
            progress(f"{step}: {n} {unit} in {seconds[-1]:.3f} s")
        a, b = fit_power_law(sizes, seconds)
        if kind == "gemm":
            speedup, why = (
                gemm_speedup,
                f"H100 FP32 peak {H100_FP32 / 1e12:.0f} TFLOP/s × {GPU_EFFICIENCY} (assumed efficiency) ÷ this "
                f"CPU's measured {cpu_flops / 1e9:.0f} GFLOP/s",
            )
        else:
            speedup, why = 8.0, "CPU-bound (parasail SIMD): the 16 host cores of an H100 machine against 2 here"
        out.append(Scaling(step, chapter, unit, sizes, seconds, b, a, work, note, speedup, why))
    return out


def plot(rows: list[Scaling], path) -> None:
    """Log-log plot of cost against work with the fitted lines (seaborn), saved to ``path``."""
    data = pd.DataFrame(
        [
            {"step": f"{r.step} (b = {r.exponent:.2f})", "work (relative to the smallest size)": n / r.sizes[0], "s": t}
            for r in rows
            for n, t in zip(r.sizes, r.seconds)
        ]
    )
    fig = Figure(figsize=(8, 4.5))  # no pyplot: no backend, no global figure state
    ax = fig.subplots()
    sns.lineplot(data=data, x="work (relative to the smallest size)", y="s", hue="step", marker="o", ax=ax)
    ax.set(xscale="log", yscale="log", ylabel="seconds (best of 2)", title="Cost against work, with fitted exponents")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)  # the PNG carries its legend verdict (replib.plotting)
