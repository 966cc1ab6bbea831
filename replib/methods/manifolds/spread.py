"""The spread of the chapter's values that sit near a bound or are compared with the paper's numbers, so
that no verdict rests on the one draw a seed made :cite:`cai2021isotropy`: the smallest drops under per-cluster
centring over fresh draws of the clustering and the instances, the per-model mean LID, the LID of the authors'
static vectors (paper profile) and of a Swiss roll, a manifold whose dimension is known."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.datasets import make_swiss_roll
from threadpoolctl import threadpool_limits

from ..._io import hash_array, hash_inputs, memo
from ..._validation import check_array
from ...metrics.lid import lid_mle, lid_mle_variants
from ...metrics.types import _per_type_rows, _s_inter, type_codes
from ...models.static import load_static_vectors
from .analysis import layer_clusters
from .clusters import _finite_mean

#: fresh draws of the clustering and the instances behind :func:`redrawn_drops`
DROP_DRAWS = 10
#: the parameters :func:`redrawn_drops` reads
_DRAW_KEYS = ("ks", "threshold", "sil_sample", "n_init", "kmeans_fit", "max_per_type")
#: Table 3's static rows: record key -> the environment variable naming the vector file (GloVe Twitter 100-d,
#: GloVe 840B 300-d, GoogleNews word2vec 300-d); none can be downloaded on the machines this book is built on
STATIC_TABLE3_FILES = {
    "lid_static_table3_glove": "REPLIB_GLOVE_TWITTER_100D",
    "lid_static_table3_glove_2m": "REPLIB_GLOVE_840B_300D",
    "lid_static_table3_gnews": "REPLIB_GNEWS_300D",
}


def centred_clusters(X, tokens, labels) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each cluster's rows minus the cluster mean, without the rows that become zero, with their tokens (the
    clusters :func:`~.clusters.cluster_centered_isotropy` measures; clusters of fewer than two rows left out)."""
    out = []
    for c in np.unique(labels):
        m = labels == c
        if m.sum() < 2:
            continue
        Xc = X[m] - X[m].mean(axis=0)
        nz = np.linalg.norm(Xc, axis=1) > 0
        if nz.sum() >= 2:
            out.append((Xc[nz], tokens[m][nz]))
    return out


def redrawn_drops(X, tokens, cfg, seed: int = 0, draws: int = DROP_DRAWS) -> dict:
    """The drops of S_inter and S_intra (raw minus the unweighted mean over clusters of the per-cluster centred
    value) over ``draws`` fresh draws of everything a seed draws in one layer: the clustering
    (:func:`~.analysis.layer_clusters`: k-means' fitting subsample and initialisation, the silhouette sample,
    and so the chosen k) and the instances (one per type for S_inter, up to ``cfg["max_per_type"]`` per type
    for S_intra).

    Parameters
    ----------
    X : array_like (n_tokens, d)
    tokens : array_like (n_tokens,)
    cfg : mapping
        The chapter's configuration (``ks``, ``threshold``, ``sil_sample``, ``n_init``, ``kmeans_fit``,
        ``max_per_type``; ``threads`` limits BLAS/OpenMP threads, as in :func:`~.analysis.analyse_layer`).
    seed, draws : the draws use seeds ``seed * 1000 + 1 ...``

    Returns
    -------
    dict
        ``s_inter_drop``, ``s_intra_drop``: arrays of ``draws`` values.
    """
    X = check_array(X, min_samples=3)
    codes, _ = type_codes(tokens)  # checked and coded once for the draws below (the same groups as the tokens)
    if len(X) != len(codes):
        raise ValueError(f"X and tokens need one entry per row; got {len(X)} and {len(codes)}")
    if draws < 2:
        raise ValueError(f"draws must be >= 2; got {draws}")
    inter, intra = [], []
    with threadpool_limits(cfg.get("threads")):
        for r in range(draws):
            s = seed * 1000 + 1 + r
            labels = layer_clusters(X, cfg, s).labels
            inside = np.array([_s_inter(A, t, s) for A, t in centred_clusters(X, codes, labels)], dtype=float)
            inter.append(_s_inter(X, codes, s) - _finite_mean(inside))
            raw, per_cluster = intra_type_cosines(X, codes, labels, cfg["max_per_type"], s)
            intra.append(raw[0].mean() - _finite_mean([cos.mean() for cos, _ in per_cluster]))
    return {"s_inter_drop": np.array(inter), "s_intra_drop": np.array(intra)}


def drop_min_spread_records(
    results: pd.DataFrame, streams: dict, cfg, seed: int = 0, draws: int = DROP_DRAWS, cache_dir=None
) -> dict:
    """The spread of each smallest drop: the sd of :func:`redrawn_drops` in the layer where this run's drop is
    smallest (one set of draws when both minima fall in the same layer), ``s_inter_drop_min_spread`` and
    ``s_intra_drop_min_spread``. The run's own drop is one draw of the clustering and the instances; the sd
    over fresh draws is how far another seed's draw can move it. With a ``cache_dir`` the draws are kept in
    ``cache_dir/layers`` under the content of the layer (:func:`replib._io.memo`), like the layers' analyses.

    Parameters
    ----------
    results : the per-layer results (columns ``model``, ``corpus``, ``layer``, ``s_inter``,
        ``s_inter_cluster``, ``s_intra``, ``s_intra_cluster``)
    streams : (model, corpus) -> its token stream (``layers``: layer -> (n_tokens, d), ``tokens``)
    cfg, seed, draws : as for :func:`redrawn_drops`
    cache_dir : path or None
    """
    folder = None if cache_dir is None else Path(cache_dir) / "layers"
    out, done = {}, {}
    for name, key in (("s_inter", "s_inter_drop_min_spread"), ("s_intra", "s_intra_drop_min_spread")):
        row = results.loc[(results[name] - results[f"{name}_cluster"]).idxmin()]
        where = (row["model"], row["corpus"], int(row["layer"]))
        if where not in done:
            stream = streams[where[:2]]
            X = stream.layers[where[2]]
            info = dict(fn="redrawn_drops", X=hash_array(X), tokens=hash_inputs(stream.tokens), seed=seed, draws=draws)
            info.update({k: cfg[k] for k in _DRAW_KEYS})
            done[where] = memo(folder, info, redrawn_drops, X, stream.tokens, cfg, seed, draws)
        out[key] = float(np.std(done[where][f"{name}_drop"], ddof=1))
    return out


def _type_sums(X, rows, weights, group, n_groups: int) -> np.ndarray:
    """``sum_i weights_i X[rows_i]`` per ``group`` (one sparse product over the rows, no copy of ``X``)."""
    G = sparse.csr_matrix((weights, (group, rows)), shape=(n_groups, len(X)))
    return np.asarray(G @ X)


def intra_type_cosines(X, codes, labels, max_per_type: int = 1000, seed: int = 0):
    r"""The per-type mean cosines behind the drop of S_intra: raw, and inside every cluster after subtracting
    the cluster mean, with the instances drawn as :func:`~replib.metrics.types.s_intra` draws them (so their
    means are S_intra and the clusters' S_intra of :func:`~.clusters.cluster_centered_isotropy`).

    A type's mean cosine over pairs of its :math:`n` unit vectors is :math:`(\lVert\sum_i u_i\rVert^2 -
    n)/(n(n-1))`; inside cluster :math:`c`, :math:`u_i = (x_i - \mu_c)/r_i` with :math:`r_i^2 = \lVert
    x_i\rVert^2 - 2 x_i\cdot\mu_c + \lVert\mu_c\rVert^2`, so every sum is one sparse product with ``X``
    (a row within rounding of its cluster's mean counts as the zero row the clusters leave out).

    Returns
    -------
    raw : (cosines, type codes) of the types with two instances
    inside : list of (cosines, type codes), one per cluster that has such a type
    """
    X = np.asarray(X, dtype=np.float64)
    sq = np.einsum("ij,ij->i", X, X)
    rng = np.random.default_rng(seed)
    rows, c = _per_type_rows(codes, max_per_type, rng)
    raw = _type_cosines(X, rows, 1 / np.sqrt(sq[rows]), c)
    ids, cluster = np.unique(labels, return_inverse=True)
    means = _type_sums(X, np.arange(len(X)), np.ones(len(X)), cluster, len(ids))
    means /= np.bincount(cluster)[:, None]
    mu2 = np.einsum("ij,ij->i", means, means)
    r2 = sq - 2 * (X @ means.T)[np.arange(len(X)), cluster] + mu2[cluster]  # squared norms after centring
    inside = []
    for j in range(len(ids)):
        m = np.flatnonzero(cluster == j)
        nz = m[r2[m] > 1e-12 * np.maximum(sq[m], mu2[j])]
        if len(nz) < 2:
            continue
        local, c = _per_type_rows(codes[nz], max_per_type, np.random.default_rng(seed))
        rows = nz[local]
        cos = _type_cosines(X, rows, 1 / np.sqrt(r2[rows]), c, means[j])
        if cos[0].size:
            inside.append(cos)
    return raw, inside


def _type_cosines(X, rows, w, c, mu=None) -> tuple[np.ndarray, np.ndarray]:
    """(mean off-diagonal cosine, type) of every type among ``rows`` (their type codes ``c``, grouped), each row
    ``w * (X[row] - mu)`` a unit vector (``mu`` None: not centred)."""
    first = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    group = np.cumsum(np.r_[False, c[1:] != c[:-1]])
    S = _type_sums(X, rows, w, group, len(first))
    if mu is not None:
        S -= np.outer(np.bincount(group, weights=w), mu)
    n = np.bincount(group)
    ok = n >= 2  # a type's n unit vectors sum to its row of S
    n = n[ok].astype(np.float64)
    return (np.einsum("ij,ij->i", S[ok], S[ok]) - n) / (n * (n - 1.0)), c[first][ok]


def spread_records(results: pd.DataFrame, glove_lid, paper_models=()) -> dict:
    """The spreads of the LID values the chapter's checks use, from the per-layer results (columns of
    :func:`~.analysis.analyse_layer`) and GloVe's :class:`~replib.metrics.lid.LIDResult` (the drops' spreads:
    :func:`drop_min_spread_records`):

    - ``lid_contextual_model_max``: the largest mean over layers of one model's LID (cosine; Table 3 reports
      one such mean per model), with ``lid_contextual_model_max_spread`` (its standard error over queries);
    - ``lid_static_glove_standin`` and its ``_spread``: GloVe 6B 50-d's mean LID (cosine) over its queries;
    - ``lid_cosine_<model>_spread`` for each of the paper's models (``paper_models``, e.g.
      :data:`~.setup.PAPER_LID_TABLE3`) that ran.
    """
    out = {}
    by_model = results.groupby("model")
    mean = by_model["lid_cosine"].mean()
    se = by_model["lid_cosine_se"].apply(lambda s: float(np.sqrt(np.sum(np.square(s))) / len(s)))
    top = mean.idxmax()
    out["lid_contextual_model_max"] = float(mean[top])
    out["lid_contextual_model_max_spread"] = float(se[top])
    finite = glove_lid.pointwise[np.isfinite(glove_lid.pointwise)]
    out["lid_static_glove_standin"] = float(glove_lid.mean)
    out["lid_static_glove_standin_spread"] = float(np.std(finite, ddof=1) / math.sqrt(len(finite)))
    for name in mean.index:
        if name in paper_models:
            out[f"lid_cosine_{name.replace('-', '').lower()}_spread"] = float(se[name])
    return out


def swiss_roll_lid_records(k: int = 100, n_points: int = 20_000, n_queries: int = 2_000, seed: int = 0) -> dict:
    """LID of a Swiss roll, the sheet Cai et al. see in GPT's and GPT-2's layer 2: scikit-learn's
    ``make_swiss_roll`` (a 2-D manifold in 3-D, no noise), Levina-Bickel's estimate (about 2) and the
    authors' (about k/(2(k-1)) of it): ``lid_swiss_roll_levina_bickel``, ``lid_swiss_roll_cai``. The same
    size in every profile, with the authors' k = 100 neighbours (fewer neighbours bias the estimate upwards
    on this curved sheet: about 2.1 at k = 20)."""
    X, _ = make_swiss_roll(n_points, noise=0.0, random_state=seed)
    both = lid_mle_variants(X, k, "euclidean", ("levina_bickel", "cai"), n_queries=n_queries, seed=seed)
    return {f"lid_swiss_roll_{variant}": float(r.mean) for variant, r in both.items()}


def static_table3_records(cfg, seed: int = 0, environ=None) -> dict:
    """In the paper profile, the authors' LID (cosine, mean over ``cfg.glove_queries`` queries) of each static
    vector file of Table 3 that the environment names (:data:`STATIC_TABLE3_FILES`), with its standard error
    (``<key>_spread``); nothing in the other profiles. A profile without the files records nothing, so their
    claims fail as "not recorded", never silently."""
    if cfg.profile != "paper":
        return {}
    environ = os.environ if environ is None else environ
    out = {}
    for key, var in STATIC_TABLE3_FILES.items():
        if not environ.get(var):
            continue
        _, G, _ = load_static_vectors(environ[var])
        r = lid_mle(G, cfg["lid_k"], "cosine", "cai", n_queries=cfg["glove_queries"], seed=seed)
        finite = r.pointwise[np.isfinite(r.pointwise)]
        out[key] = float(r.mean)
        out[f"{key}_spread"] = float(np.std(finite, ddof=1) / math.sqrt(len(finite)))
    return out
