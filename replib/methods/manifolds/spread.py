"""The spread of the chapter's values that sit near a bound or are compared with the paper's numbers, so
that no verdict rests on the one draw a seed made :cite:`cai2021isotropy`; and the Swiss roll, a manifold
whose dimension is known.

- :func:`drop_spread`: S_inter draws one instance per type, so its drop raw - per-cluster centred moves
  when other instances are drawn; its sd over fresh draws (same clusters);
- :func:`intra_drop_spread`: S_intra is a mean over types, so its drop is resampled by types (a jackknife
  over ten groups of types, same clusters);
- :func:`spread_records`: the spreads of the chapter's extreme drops, the per-model mean LID and GloVe's;
- :func:`swiss_roll_lid_records`: the LID of a Swiss roll (a 2-D sheet rolled in 3-D);
- :func:`static_table3_records`: in the paper profile, the LID of the authors' static vectors (Table 3's
  GloVe, GloVe-2M and GNEWS rows) from the files the environment names (:data:`STATIC_TABLE3_FILES`).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.datasets import make_swiss_roll

from ..._validation import check_array
from ...metrics.lid import lid_mle, lid_mle_variants
from ...metrics.types import _per_type_rows, _s_inter, type_codes
from ...models.static import load_static_vectors
from ...sampling import JACKKNIFE_GROUPS, jackknife_se

#: fresh draws of the instances behind :func:`drop_spread`
DROP_DRAWS = 10
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


def drop_spread(X, tokens, labels, seed: int = 0, draws: int = DROP_DRAWS) -> dict:
    """The sd over ``draws`` fresh draws of one instance per type of the drop of S_inter, raw minus the
    unweighted mean over clusters of the per-cluster centred S_inter (the clusters ``labels`` fixed):
    ``s_inter_drop_sd``. (S_intra averages up to 1,000 instances of every type, so a new draw barely moves
    it; its variation between seeds comes from the clustering, which the runner's seeds measure.)

    Parameters
    ----------
    X : array_like (n_tokens, d)
    tokens : array_like (n_tokens,)
    labels : array_like (n_tokens,) int
    seed, draws : the draws use seeds ``seed * 1000 + 1 ...``
    """
    X = check_array(X, min_samples=2)
    labels = np.asarray(labels)
    codes, _ = type_codes(tokens)  # checked and coded once for the draws below (the same groups as the tokens)
    if not (len(X) == len(codes) == len(labels)):
        raise ValueError(f"X, tokens and labels need one entry per row; got {len(X)}, {len(codes)}, {len(labels)}")
    if draws < 2:
        raise ValueError(f"draws must be >= 2; got {draws}")
    clusters = centred_clusters(X, codes, labels)
    drops = []
    for r in range(draws):
        s = seed * 1000 + 1 + r
        inside = np.array([_s_inter(A, t, s) for A, t in clusters], dtype=float)
        inside = inside[np.isfinite(inside)]
        drops.append(_s_inter(X, codes, s) - (inside.mean() if inside.size else np.nan))
    return {"s_inter_drop_sd": float(np.nanstd(drops, ddof=1))}


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
    return _mean_cosines(S, np.bincount(group), c[first])


def _mean_cosines(S: np.ndarray, n: np.ndarray, types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean off-diagonal cosine, type) of every type with ``n >= 2`` unit vectors summing to a row of ``S``."""
    ok = n >= 2
    n = n[ok].astype(np.float64)
    return (np.einsum("ij,ij->i", S[ok], S[ok]) - n) / (n * (n - 1.0)), types[ok]


def intra_drop_spread(X, tokens, labels, max_per_type: int = 1000, seed: int = 0, groups: int = JACKKNIFE_GROUPS):
    """The standard error of the drop of S_intra, raw minus the unweighted mean over clusters of the
    per-cluster centred S_intra (the clusters ``labels`` fixed), by a delete-a-group jackknife over the types
    (S_intra is a mean over types; :func:`replib.sampling.jackknife_se`): ``s_intra_drop_sd``. The per-type
    cosines are computed once (:func:`intra_type_cosines`) and each replicate averages them without one group
    of types.

    Parameters
    ----------
    X : array_like (n_tokens, d)
    tokens : array_like (n_tokens,)
    labels : array_like (n_tokens,) int
    max_per_type, seed : as for :func:`~replib.metrics.types.s_intra`
    groups : int
        Replicates: groups of types, at most the number of types with two instances.
    """
    X = check_array(X, min_samples=2)
    labels = np.asarray(labels)
    codes, uniq = type_codes(tokens)
    if not (len(X) == len(codes) == len(labels)):
        raise ValueError(f"X, tokens and labels need one entry per row; got {len(X)}, {len(codes)}, {len(labels)}")
    raw, inside = intra_type_cosines(X, codes, labels, max_per_type, seed)
    if not 2 <= groups <= len(raw[0]):
        raise ValueError(f"groups must be between 2 and the {len(raw[0])} types with two instances; got {groups}")
    group = np.random.default_rng(seed).permutation(len(uniq)) % groups

    def drop_without(g: int) -> float:
        means = [cos[group[t] != g].mean() for cos, t in inside if np.any(group[t] != g)]
        return float(raw[0][group[raw[1]] != g].mean() - (np.mean(means) if means else np.nan))

    return {"s_intra_drop_sd": jackknife_se([drop_without(g) for g in range(groups)])}


def _at_min(results: pd.DataFrame, value: pd.Series, sd_col: str) -> float:
    return float(results.loc[value.idxmin(), sd_col])


def spread_records(results: pd.DataFrame, glove_lid, paper_models=()) -> dict:
    """The spreads the chapter's checks use, from the per-layer results (columns of
    :func:`~.analysis.analyse_layer`) and GloVe's :class:`~replib.metrics.lid.LIDResult`:

    - ``s_inter_drop_min_spread``, ``s_intra_drop_min_spread``: each drop's standard error in the layer
      where it is smallest;
    - ``lid_contextual_model_max``: the largest mean over layers of one model's LID (cosine; Table 3 reports
      one such mean per model), with ``lid_contextual_model_max_spread`` (its standard error over queries);
    - ``lid_static_glove_standin`` and its ``_spread``: GloVe 6B 50-d's mean LID (cosine) over its queries;
    - ``lid_cosine_<model>_spread`` for each of the paper's models (``paper_models``, e.g.
      :data:`~.setup.PAPER_LID_TABLE3`) that ran.
    """
    out = {
        "s_inter_drop_min_spread": _at_min(results, results["s_inter"] - results["s_inter_cluster"], "s_inter_drop_sd"),
        "s_intra_drop_min_spread": _at_min(results, results["s_intra"] - results["s_intra_cluster"], "s_intra_drop_sd"),
    }
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
