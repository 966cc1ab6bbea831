"""One layer's measurements: S_inter/S_intra raw, centred and per cluster, IsoScore and LID."""

from __future__ import annotations

import os
import warnings

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from ..._io import progress_off
from ..._validation import OrientationWarning, check_array
from ...metrics import isoscore
from ...metrics.lid import lid_mle
from ...metrics.types import s_inter, s_intra, type_codes
from .clusters import choose_clusters, cluster_centered_isotropy


# ------------------------------------------------------------------------------------ several layers
def layer_jobs(cfg: dict, n_layers: int) -> int:
    """Processes for :func:`analyse_layers`: ``cfg["layer_jobs"]``, or by default one per core (at most one
    per layer) when every layer is limited to one thread (``cfg["threads"] == 1``), else 1."""
    jobs = cfg.get("layer_jobs")
    if jobs is None:
        jobs = (os.cpu_count() or 1) if cfg.get("threads") == 1 else 1
    if int(jobs) < 1:
        raise ValueError(f"layer_jobs must be >= 1; got {jobs}")
    return max(1, min(int(jobs), int(n_layers)))


def analyse_layers(
    layers,
    tokens,
    cfg: dict,
    seed: int = 0,
    *,
    n_jobs: int | None = None,
    progress: bool = True,
) -> list:
    """:func:`analyse_layer` of every layer of ``layers`` (a mapping ``layer -> X``), in that order.

    The layers go to ``n_jobs`` worker processes (default :func:`layer_jobs`; joblib's loky backend); a layer
    computes the same in a worker as in the parent, so the results do not depend on ``n_jobs`` (tested).

    Returns
    -------
    list of dict
        The rows of :func:`analyse_layer`, one per layer, in the order of ``layers``.
    """
    keys = list(layers)
    jobs = layer_jobs(cfg, len(keys)) if n_jobs is None else max(1, min(int(n_jobs), len(keys)))
    tokens = np.asarray(tokens)
    if jobs == 1:
        rows = (analyse_layer(layers[k], tokens, cfg, seed) for k in keys)
    else:
        run = Parallel(n_jobs=jobs, backend="loky", return_as="generator")
        rows = run(delayed(analyse_layer)(layers[k], tokens, cfg, seed) for k in keys)
    return list(tqdm(rows, total=len(keys), desc="layers", disable=progress_off(progress)))


# ------------------------------------------------------------------------------------ one layer's run
def layer_clusters(X, cfg, seed: int = 0):
    """:func:`choose_clusters` of one layer with the configuration's candidates ``ks``, ``threshold``,
    silhouette sample ``sil_sample``, restarts ``n_init`` and fitting subsample ``kmeans_fit``."""
    return choose_clusters(
        X,
        cfg["ks"],
        cfg["threshold"],
        sil_sample=cfg["sil_sample"],
        n_init=cfg["n_init"],
        n_fit=cfg["kmeans_fit"],
        seed=seed,
    )


def analyse_layer(X, tokens, cfg: dict, seed: int = 0) -> dict:
    """Every per-layer number of the chapter for one matrix of token vectors.

    S_inter/S_intra raw and after global centring; the silhouette choice of k (:func:`choose_clusters`)
    and the per-cluster centred S_inter/S_intra, IsoScore and partition isotropy
    (:func:`cluster_centered_isotropy`); IsoScore of the whole layer; the authors' LID
    (:func:`replib.metrics.lid.lid_mle`, ``variant="cai"``) with the cosine and the Euclidean distance.

    Parameters
    ----------
    X : array_like (n_tokens, d)
    tokens : sequence of str (n_tokens,)
    cfg : mapping
        The chapter's :class:`~replib.config.ChapterConfig` or any mapping with its keys (``threads`` limits
        BLAS/OpenMP threads; None = no limit).
    seed : int

    Returns
    -------
    dict of scalars (a table row) plus ``silhouettes``, ``per_cluster`` and ``labels``.
    """
    # BLAS/OpenMP threads: 1 on a small shared machine (oversubscribed threads are slow), None at paper scale
    with threadpool_limits(cfg.get("threads")):
        X = check_array(X, min_samples=3)
        # the types as integer codes, once: every S_inter/S_intra below groups by them (the same groups in the same
        # order as the strings, so the same values) instead of sorting the token strings again at each call
        tokens, uniq = type_codes(tokens)
        row = {"n_tokens": len(X), "n_types": int(len(uniq)), "dim": X.shape[1]}
        row["s_inter"] = s_inter(X, tokens, seed)
        row["s_intra"] = s_intra(X, tokens, cfg["max_per_type"], seed)
        row["s_inter_centered"] = s_inter(X, tokens, seed, center=True)
        row["s_intra_centered"] = s_intra(X, tokens, cfg["max_per_type"], seed, center=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OrientationWarning)
            row["isoscore"] = isoscore(X)
        choice = layer_clusters(X, cfg, seed)
        cc = cluster_centered_isotropy(X, tokens, choice.labels, cfg["max_per_type"], seed)
        row.update(
            k=choice.k,
            best_k=choice.best_k,
            best_silhouette=choice.best_silhouette,
            s_inter_cluster=cc["s_inter"],
            s_intra_cluster=cc["s_intra"],
            isoscore_cluster=cc["isoscore_mean"],
            isoscore_cluster_all=cc["isoscore_mean_all"],
            partition_cluster=cc["partition_isotropy_mean"],
            n_deflated=cc["n_deflated"],
        )
        for metric in ("cosine", "euclidean"):
            r = lid_mle(X, k=cfg["lid_k"], metric=metric, variant="cai", n_queries=cfg["lid_queries"], seed=seed)
            row[f"lid_{metric}"] = r.mean
            row[f"lid_{metric}_se"] = r.std / np.sqrt(max(1, int(np.isfinite(r.pointwise).sum())))
            row[f"lid_{metric}_duplicates"] = r.n_duplicates
        row["silhouettes"] = choice.silhouettes
        row["per_cluster"] = cc["per_cluster"]
        row["labels"] = choice.labels
        return row
