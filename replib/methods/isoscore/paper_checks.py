"""What the checks of the paper's own numbers need beyond the values :cite:`rudman2022isoscore`: the spread of
each value (how much it moves between samples, so that a verdict never rests on one draw: the rotation test's
draws, the paper's cosines among 1,000-pair estimates, each layer of the paper's models over token samples)
and the layers one by one."""

from __future__ import annotations

import numpy as np

from ...metrics import avg_pairwise_cosine, isoscore, rudman_partition_score
from ...papers import project_tables
from ...sampling import jackknife_spread
from .config import PAPER_LMS
from .properties import ROTATION_ANGLES, rotation_versions

#: random pairs behind the authors' average-cosine statistic (existing_scores.cosine_score's default)
AUTHORS_COSINE_PAIRS = 100_000


def rotation_spread_records(n: int, seed: int, draws: int = 200) -> dict:
    r"""Standard deviations over ``draws`` fresh ``n``-point clouds of the rotation test's Gaussian.

    ``rotation_isoscore_0_spread`` is :math:`\sqrt 2\,\mathrm{sd}` of IsoScore: ours and the paper's value are
    two independent draws, so their difference has that spread. ``rotation_partition_rows_expected_<k>_spread``
    is the sd of the authors' loop (:func:`replib.metrics.rudman_partition_score`) on one draw at orientation
    ``k``: our value is its expectation, the paper's one draw.
    """
    if draws < 2:
        raise ValueError(f"draws must be >= 2; got {draws}")
    iso, part = [], {k: [] for k in (*ROTATION_ANGLES, "pca")}
    for i in range(draws):
        base, versions, _ = rotation_versions(n, seed * 100_003 + 7 + i)
        iso.append(isoscore(base))
        for k, X in versions.items():
            part[k].append(rudman_partition_score(X))
    out = {"rotation_isoscore_0_spread": float(np.sqrt(2) * np.std(iso, ddof=1))}
    out.update({f"rotation_partition_rows_expected_{k}_spread": float(np.std(v, ddof=1)) for k, v in part.items()})
    return out


def cosine_rank_records(draws: np.ndarray, paper: dict | None = None) -> dict:
    """``rotation_cosine_rank_<k>``: the fraction of the 1,000-pair estimates ``draws``
    (:func:`~.properties.cosine_estimate_draws`) below the paper's average cosine at orientation ``k``
    (``paper``: orientation -> value, default the paper's table, ``rudman2022:rotation/<k>/avg_cosine``)."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 1 or draws.size < 2:
        raise ValueError(f"draws must be a 1-D array of at least 2 estimates; got shape {draws.shape}")
    if paper is None:
        table = project_tables()["rudman2022"]
        paper = {k: table[f"rotation/{k}/avg_cosine"].value for k in (*ROTATION_ANGLES, "pca")}
    return {f"rotation_cosine_rank_{k}": float(np.mean(draws < v)) for k, v in paper.items()}


def contextual_layer_records(per_layer, model: str) -> dict:
    """``contextual_isoscore_layer<L>``: the IsoScore of every layer of ``model`` (rows of the per-layer table)."""
    rows = per_layer[per_layer["model"] == model]
    if rows.empty:
        raise ValueError(f"no layer of {model!r} in the per-layer table")
    return {f"contextual_isoscore_layer{int(r.layer)}": float(r.isoscore) for r in rows.itertuples()}


def authors_cosine_spread(X: np.ndarray, seed: int, n_pairs: int = 10_000) -> float:
    """The sd of the authors' statistic, a mean cosine over 100,000 random pairs: the sd of one pair's cosine
    (estimated on ``n_pairs`` random pairs) over sqrt(100,000)."""
    X = np.asarray(X, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, len(X), size=(n_pairs, 2))
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = np.sum(U[idx[:, 0]] * U[idx[:, 1]], axis=1)
    return float(np.std(cos, ddof=1) / np.sqrt(AUTHORS_COSINE_PAIRS))


def paper_layer_spread_records(ctx, cfg, seed: int) -> dict:
    """For every layer of the paper's four models (when they ran, ``cfg.paper_layer_keys``): the spread of
    its IsoScore over token samples (``paper_<m>_layer<L>_spread``, :func:`~replib.sampling.jackknife_spread`), the authors'
    cosine statistic 1 - |average cosine| (``paper_<m>_layer<L>_avgcos``, exact over all pairs) and its
    spread (our sampling and the authors' 100,000 pairs)."""
    if not cfg.paper_layer_keys or not set(PAPER_LMS) <= set(ctx.streams):
        return {}
    out = {}
    for name, short in PAPER_LMS.items():
        for layer, X in ctx.streams[name].layers.items():
            key = f"paper_{short}_layer{int(layer)}"
            out[f"{key}_spread"] = jackknife_spread(isoscore, X, seed=seed)
            out[f"{key}_avgcos"] = 1.0 - abs(avg_pairwise_cosine(X))
            ours = jackknife_spread(avg_pairwise_cosine, X, seed=seed)
            out[f"{key}_avgcos_spread"] = float(np.hypot(ours, authors_cosine_spread(X, seed)))
    return out
