"""Checks of the chapter's estimators on its own data: the O(N·d) cosine identities against brute-force
matrices, the repeatability of the cluster choice, the authors' LID estimator against Levina–Bickel's and
scikit-dimension's :cite:`cai2021isotropy,levina2004maximum,bac2021skdim`; and the static GloVe reference."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..._optional import optional_import, require
from ...metrics.lid import cai_over_levina_bickel, lid_mle, lid_mle_variants
from ...metrics.types import s_inter, s_intra, type_codes
from ...models import load_glove
from ..streaming import sample_rows
from .analysis import layer_clusters

skdim = optional_import("skdim")  # scikit-dimension: an independent Levina-Bickel implementation


def last_layer(streams: dict) -> tuple[str, str, int, np.ndarray, np.ndarray]:
    """The first stream's last layer: model, corpus, layer, its vectors (float64) and their token types."""
    (model, corpus), stream = next(iter(streams.items()))
    layer = sorted(stream.layers)[-1]
    return model, corpus, layer, stream.layers[layer].astype(np.float64), np.asarray(stream.tokens)


def _offdiag_cosine(V: np.ndarray) -> float:
    """Mean off-diagonal cosine from the explicit N × N cosine matrix (the authors' way)."""
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    C = U @ U.T
    return (C.sum() - np.trace(C)) / (len(V) * (len(V) - 1))


def brute_force_records(X, tokens, seed: int, max_types: int = 2000, max_per_type: int = 1000) -> dict:
    """|S_inter − brute force| and |S_intra − brute force| on the instances of the first ``max_types`` types of
    ``tokens`` (the same one-instance-per-type draw; S_intra on the types with 2 to ``max_per_type``
    instances, so that nothing is sub-sampled); with the numbers of instances and types compared."""
    keep = np.isin(tokens, list(set(pd.unique(tokens)[:max_types])))
    Xs, ts = X[keep], tokens[keep]
    order = np.random.default_rng(seed).permutation(len(ts))  # the draw s_inter makes
    codes, _ = type_codes(ts)
    _, first = np.unique(codes[order], return_index=True)
    inter = abs(s_inter(Xs, ts, seed) - _offdiag_cosine(Xs[order[first]]))
    groups = pd.Series(np.arange(len(ts))).groupby(ts).indices  # type -> its rows
    small = {t: g for t, g in groups.items() if 2 <= len(g) <= max_per_type}
    per_type = [_offdiag_cosine(Xs[g]) for g in small.values()]
    m = np.isin(ts, list(small))
    intra = abs(s_intra(Xs[m], ts[m], max_per_type, seed) - np.mean(per_type))
    return {
        "s_inter_brute_max_diff": inter,
        "s_intra_brute_max_diff": intra,
        "n_instances": len(Xs),
        "n_types": int(len(np.unique(ts))),
    }


def repeatability_records(streams: dict, extras: dict, cfg, seed: int) -> dict:
    """Whether re-running :func:`choose_clusters` on the first analysed layer gives the same labels
    (``cluster_choice_repeatable``); empty when that layer's vectors are no longer in memory (paper scale)."""
    model, corpus, layer = next(iter(extras))
    stream = streams[(model, corpus)]
    if layer not in stream.layers:
        return {}
    again = layer_clusters(stream.layers[layer], cfg, seed)
    return {"cluster_choice_repeatable": bool(np.array_equal(again.labels, extras[(model, corpus, layer)]["labels"]))}


def lid_estimator_records(X, k: int, n_queries, check_points: int, seed: int) -> dict:
    """The authors' LID over Levina–Bickel's on the same neighbours against k/(2(k−1)) (largest deviation
    over both metrics, ``lid_ratio_max_dev``), and our Levina–Bickel against scikit-dimension's
    ``MLE().dimension_pw_`` on ``check_points`` distinct rows with the same (scikit-learn) neighbour search
    (``lid_skdim_max_diff``); with the Euclidean means for the chapter's printout."""
    dev = []
    for metric in ("cosine", "euclidean"):  # both estimators on one neighbour search
        both = lid_mle_variants(X, k, metric, ("cai", "levina_bickel"), n_queries=n_queries, seed=seed)
        a, b = both["cai"], both["levina_bickel"]
        ok = b.pointwise > 0
        dev.append(np.max(np.abs(a.pointwise[ok] / b.pointwise[ok] - cai_over_levina_bickel(k))))
    package = require(skdim, "scikit-dimension", "the comparison with scikit-dimension's LID", pip="scikit-dimension")
    Xsub = np.unique(X[sample_rows(len(X), check_points, seed)], axis=0)  # distinct rows: skdim handles no duplicates
    ours = lid_mle(Xsub, k, "euclidean", "levina_bickel", backend="sklearn")  # skdim's neighbour search
    theirs = package.id.MLE().fit(Xsub, n_neighbors=k).dimension_pw_
    return {
        "lid_ratio_max_dev": max(dev),
        "lid_skdim_max_diff": np.max(np.abs(ours.pointwise - theirs)),
        "ratio": a.mean / b.mean,
        "n_points": len(Xsub),
        "ours": ours.mean,
        "skdim": float(np.mean(theirs)),
    }


def static_lid(max_words: int | None, k: int, n_queries, seed: int) -> dict:
    """The authors' LID (cosine) and Levina–Bickel's of GloVe 6B 50-d (the first ``max_words`` words, through
    :func:`replib.models.load_glove`)."""
    G = load_glove()[1][:max_words]
    both = lid_mle_variants(G, k, "cosine", ("cai", "levina_bickel"), n_queries=n_queries, seed=seed)
    return {**both, "n_words": len(G)}
