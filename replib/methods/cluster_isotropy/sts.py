"""Evaluation on STS (App. B.1 of :cite:`rajaee2021cluster`): token pool per data set, mean of processed token
vectors, cosine, Spearman x 100; the hyperparameter grid on STS-B dev; isotropy of zero-mean clusters and
across layers."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from tqdm.auto import tqdm

from ..._io import hash_array, memo, progress_off
from ...embeddings import embed_sentence_layers
from ...metrics import partition_isotropy
from .setup import make_transform
from .transform import (
    ClusterIsotropy,
    EmptyClusterWarning,
    SmallClusterWarning,
    _cluster_means_sparse,
    _fit_groups,
    _remove_group_directions,
    _ungroup,
    cluster_labels,
)


# ----------------------------------------------------------------------------------------- STS
def token_pool(token_blocks):
    """Stack per-sentence token matrices into one pool.

    Returns
    -------
    pool : ndarray (sum n_i, d) float64
    lengths : ndarray of int (n_sentences,)
    """
    blocks = list(token_blocks)
    if not blocks:
        raise ValueError("no sentences")
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    if (lengths == 0).any():
        raise ValueError(f"{int((lengths == 0).sum())} sentence(s) have no tokens after dropping special tokens")
    return np.concatenate([np.asarray(b) for b in blocks], dtype=np.float64), lengths


def _results_folder(cache_dir):
    """Where the seeded results are kept (``cache_dir/cluster_isotropy``; None: not kept)."""
    return None if cache_dir is None else Path(cache_dir) / "cluster_isotropy"


def _pool_identity(pool, lengths, gold=None) -> dict:
    """The content of a stacked pool (and the gold scores): the part of a result's key that names its data."""
    out = {"pool": hash_array(pool), "lengths": hash_array(lengths)}
    if gold is not None:
        out["gold"] = hash_array(np.asarray(gold, dtype=np.float64))
    return out


def mean_pool(pool, lengths):
    """Mean of each sentence's rows of ``pool`` (rows in sentence order, ``lengths`` rows each).

    Each sentence's rows are summed in order by the sparse indicator product of k-means' fallback update
    step (:func:`~.transform._cluster_means_sparse`, a sentence being a group; about ten times faster than
    ``np.add.reduceat`` on tall pools), then divided by the count.
    """
    pool = np.asarray(pool, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or (lengths < 1).any() or lengths.sum() != len(pool):
        raise ValueError(f"lengths must be positive and sum to the {len(pool)} rows of pool; got sum {lengths.sum()}")
    sentence = np.repeat(np.arange(len(lengths)), lengths)
    return _cluster_means_sparse(pool, sentence, len(lengths))[0]


def cosine_rows(A, B):
    """Cosine of corresponding rows of ``A`` and ``B`` (0 for a zero vector)."""
    num = (A * B).sum(1)
    den = np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def sts_correlations(emb1, emb2, gold):
    """Spearman and Pearson correlation (x 100) of the cosine of sentence vectors with the gold scores."""
    gold = np.asarray(gold, dtype=np.float64)
    cos = cosine_rows(np.asarray(emb1, np.float64), np.asarray(emb2, np.float64))
    if len(cos) != len(gold):
        raise ValueError(f"{len(cos)} pairs but {len(gold)} gold scores")
    return 100.0 * stats.spearmanr(cos, gold)[0], 100.0 * stats.pearsonr(cos, gold)[0]


def tune_hyperparameters(
    tokens1, tokens2, gold, ks, pcs, *, seeds=(0,), clusterer: str = "scipy", progress=True, cache_dir=None
):
    """Spearman x 100 on a dev set for every ``(n_clusters, n_pc)`` of a grid (the paper: STS-B dev, [5, 30]).

    Clusters and cluster bases are computed once per ``(k, seed)`` and reused for every ``n_pc``;
    ``k = 1`` is the global method, deterministic: computed once and repeated for every seed. With a
    ``cache_dir`` each ``(k, seed)``'s scores are kept under the content of the pool
    (:func:`replib._io.memo`), so a run from the next seed computes only the seeds it adds. Returns a
    DataFrame with columns ``n_clusters, n_pc, seed, spearman``.
    """
    pool, lengths = token_pool(list(tokens1) + list(tokens2))
    n = len(tokens1)
    folder = _results_folder(cache_dir)
    data = _pool_identity(pool, lengths, gold) if folder is not None else None
    rows, scores = [], {}
    todo = [(k, s) for k in ks for s in seeds]
    for k, s in tqdm(todo, desc="grid", disable=progress_off(progress)):
        key = (int(k), None if int(k) == 1 else s)  # one cluster is the same partition for every seed: fitted once
        if key not in scores:
            info = dict(
                data or {}, fn="grid_scores", n=n, k=key[0], seed=key[1], pcs=[int(p) for p in pcs], clusterer=clusterer
            )
            scores[key] = memo(
                folder, info, _grid_scores, pool, lengths, n, gold, int(k), pcs, clusterer=clusterer, random_state=s
            )
        rows += [{"n_clusters": int(k), "n_pc": p, "seed": s, "spearman": sp} for p, sp in scores[key]]
    return pd.DataFrame(rows)


def _grid_scores(pool, lengths, n: int, gold, k: int, pcs, *, clusterer: str, random_state) -> list:
    """``(n_pc, Spearman x 100)`` for every ``n_pc`` of ``pcs`` below the width, after one clustering of the pool
    into ``k`` clusters: grouped and centred once, every ``n_pc`` projects a copy (the arithmetic of
    :func:`~.transform.remove_cluster_directions`, without redoing the grouping and centring)."""
    labels, _ = cluster_labels(pool, k, clusterer=clusterer, random_state=random_state)
    Z, order, bounds, _, bases = _fit_groups(pool, labels, k, max(int(p) for p in pcs))
    out = []
    for p in pcs:
        if p >= pool.shape[1]:
            continue
        W = Z.copy()
        _remove_group_directions(W, bounds, bases, int(p))
        m = mean_pool(_ungroup(W, order), lengths)
        out.append((int(p), sts_correlations(m[:n], m[n:], gold)[0]))
    return out


def run_sts(tokens1, tokens2, gold, *, methods, hparams: dict, seeds, progress: bool = False, cache_dir=None):
    """Evaluate every method on one data set; stochastic methods once per seed.

    Returns a list of dicts ``method, seed, spearman, pearson, iw, iw_log10``. The baseline and every
    one-cluster method are deterministic and run once (seed ``None``). With a ``cache_dir`` each row is kept
    under the content of the pool, the method, its hyperparameters and the seed (:func:`replib._io.memo`):
    a run from the next seed shares all its seeds but one with this one, and computes only that one.
    """
    tokens1, tokens2 = list(tokens1), list(tokens2)
    if len(tokens1) != len(tokens2):
        raise ValueError(f"{len(tokens1)} first sentences but {len(tokens2)} second sentences")
    pool, lengths = token_pool(tokens1 + tokens2)  # stacked once for every method and seed
    folder = _results_folder(cache_dir)
    data = _pool_identity(pool, lengths, gold) if folder is not None else None
    rows = []
    for m in methods:
        tr0 = make_transform(m, **hparams)
        deterministic = tr0 is None or tr0.n_clusters == 1
        for s in [None] if deterministic else list(seeds):
            info = dict(data or {}, fn="sts_row", n=len(tokens1), method=m, seed=s, **(tr0.get_params() if tr0 else {}))
            row = memo(folder, info, _sts_row, pool, lengths, len(tokens1), gold, m, hparams, s)
            rows.append({"method": m, "seed": s, **row})
    return rows


def _sts_row(pool, lengths, n: int, gold, method: str, hparams: dict, seed) -> dict:
    """One row of :func:`run_sts`: the paper's STS protocol (App. B.1) with ``method`` and ``seed`` on the stacked
    pool of both sides (the first ``n`` sentences are the first sides). The transform (None: the baseline) is fit
    on the pool and applied to it; each sentence vector is the mean of its processed token vectors; the score is
    the cosine of the two sentence vectors, the metrics Spearman and Pearson x 100 with the gold scores; ``iw`` is
    :func:`~replib.metrics.partition_isotropy` of the processed pool."""
    tr = make_transform(method, **hparams, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallClusterWarning)
        warnings.simplefilter("ignore", EmptyClusterWarning)
        pool = pool if tr is None else tr.fit_transform(pool)
        means = mean_pool(pool, lengths)
        sp, pe = sts_correlations(means[:n], means[n:], gold)
        iw = partition_isotropy(pool)
    return {"spearman": sp, "pearson": pe, "iw": iw.value, "iw_log10": iw.log10, "n_tokens": len(pool)}


def zero_mean_isotropy(pool, ks, seeds, cache_dir=None):
    """Table 1 of the paper: log10 I(W) after k-means with ``k`` clusters and per-cluster zero-mean only.

    Returns a list of dicts ``k, seed, iw_log10``; ``k = 0`` denotes the raw pool (the baseline row). With a
    ``cache_dir`` each ``(k, seed)`` is kept under the content of the pool (:func:`replib._io.memo`).
    """
    folder = _results_folder(cache_dir)
    data = {"pool": hash_array(pool)} if folder is not None else {}

    def iw(k: int, s):
        out = pool if k == 0 else ClusterIsotropy(k, 0, random_state=s).fit_transform(pool)
        return partition_isotropy(out).log10

    todo = [(0, None)] + [(int(k), s) for k in ks for s in ([None] if k == 1 else seeds)]
    return [
        {"k": k, "seed": s, "iw_log10": memo(folder, dict(data, fn="zero_mean_iw", k=k, seed=s), iw, k, s)}
        for k, s in todo
    ]


def layer_isotropy(model, texts, *, cache_dir=None, progress: bool = True):
    """log10 I(W) of the token pool of ``texts`` at every hidden state (0 = embeddings), special tokens dropped
    (every layer from one forward pass per batch)."""
    layers = range(model.spec.n_layers + 1)
    embs = embed_sentence_layers(model, texts, layers, drop_special=True, cache_dir=cache_dir, progress=progress)
    return [partition_isotropy(np.concatenate(embs[layer].tokens)).log10 for layer in layers]
