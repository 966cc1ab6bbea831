"""The spread of the chapter's values that sit near a bound or are compared with the paper's numbers, so
that no verdict rests on the one draw a seed made :cite:`cai2021isotropy`; and the Swiss roll, a manifold
whose dimension is known.

- :func:`drop_spread`: S_inter draws one instance per type, so its drop raw - per-cluster centred moves
  when other instances are drawn; its sd over fresh draws (same clusters);
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
from sklearn.datasets import make_swiss_roll

from ..._validation import check_array
from ...metrics.lid import lid_mle, lid_mle_variants
from ...metrics.types import _s_inter, type_codes
from ...models.static import load_static_vectors

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


def _at_min(results: pd.DataFrame, value: pd.Series, sd_col: str) -> float:
    return float(results.loc[value.idxmin(), sd_col])


def spread_records(results: pd.DataFrame, glove_lid, paper_models=()) -> dict:
    """The spreads the chapter's checks use, from the per-layer results (columns of
    :func:`~.analysis.analyse_layer`) and GloVe's :class:`~replib.metrics.lid.LIDResult`:

    - ``s_inter_drop_min_spread``: the drop's sd in the layer where it is smallest;
    - ``lid_contextual_model_max``: the largest mean over layers of one model's LID (cosine; Table 3 reports
      one such mean per model), with ``lid_contextual_model_max_spread`` (its standard error over queries);
    - ``lid_static_glove_standin`` and its ``_spread``: GloVe 6B 50-d's mean LID (cosine) over its queries;
    - ``lid_cosine_<model>_spread`` for each of the paper's models (``paper_models``, e.g.
      :data:`~.setup.PAPER_LID_TABLE3`) that ran.
    """
    out = {
        "s_inter_drop_min_spread": _at_min(results, results["s_inter"] - results["s_inter_cluster"], "s_inter_drop_sd")
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
