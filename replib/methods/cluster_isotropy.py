r"""Cluster-based isotropy enhancement (Rajaee & Pilehvar 2021) and all-but-the-top (Mu & Viswanath 2018).

The transform :class:`ClusterIsotropy` clusters token vectors with k-means, makes every cluster
zero-mean and removes, inside each cluster, the projection on that cluster's top ``n_pc`` principal
directions :cite:`rajaee2021cluster`:

.. math::

    x' = (x - \mu_c) - \sum_{j=1}^{m_c} \big((x - \mu_c)^\top u_{c,j}\big)\, u_{c,j},
    \qquad m_c = \min(n_{pc},\; n_c - 1),

with :math:`\mu_c` the mean and :math:`u_{c,1}, u_{c,2}, \dots` the principal directions (by decreasing
variance) of the :math:`n_c` members of cluster :math:`c`. With one cluster it is the global
all-but-the-top post-processing of Mu & Viswanath :cite:`mu2018allbutthetop` (remove the mean and the
top-D principal components), so the paper's "global" baseline runs through the same code.

The module also holds the STS protocol of the paper (token pool per data set, mean of processed token
vectors, cosine, Spearman x 100), the hyperparameter search on STS-B dev, and the classification protocol
(flattened last-layer token matrix, MLP) with a fresh classifier for every condition. See the chapter
``notebooks/cluster_isotropy.ipynb``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import check_array
from ..metrics import partition_isotropy

__all__ = [
    "ClusterIsotropy", "SmallClusterWarning", "EmptyClusterWarning", "all_but_the_top", "cluster_labels",
    "cluster_bases", "remove_cluster_directions", "make_transform", "METHODS", "DECK_VARIANTS",
    "PAPER_HPARAMS", "config_for", "token_pool", "mean_pool", "cosine_rows", "sts_correlations",
    "STSResult", "evaluate_sts", "tune_hyperparameters", "pair_token_features", "MLPClassifier",
    "train_classifier", "classification_metric", "ClassificationResult", "compare_classification",
    "STS_DATASETS", "load_sts_pairs", "embed_pairs", "run_sts", "zero_mean_isotropy", "layer_isotropy",
    "load_model_for", "load_classification",
]

CLUSTERERS = ("scipy", "sklearn", "gmm")
#: the ``"gmm"`` clusterer fits its mixture on at most this many rows (seeded sample), then assigns every row
GMM_MAX_FIT_ROWS = 10_000


class SmallClusterWarning(UserWarning):
    """A cluster has ``n_pc`` or fewer members: only ``members - 1`` directions were removed from it."""


class EmptyClusterWarning(UserWarning):
    """k-means left a cluster empty; it is dropped (no members, no mean, no directions)."""


# ----------------------------------------------------------------------------------------- clustering
def cluster_labels(X, n_clusters: int, *, clusterer: str = "scipy", random_state=None, n_iter: int = 10):
    """Cluster assignments of the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    n_clusters : int
    clusterer : {"scipy", "sklearn", "gmm"}
        ``"scipy"``: the authors' ``scipy.cluster.vq.kmeans2(X, k, iter=n_iter, minit="points")``
        (Lloyd iterations from k random data points), seeded through ``rng``. ``"sklearn"``:
        ``sklearn.cluster.KMeans`` (k-means++, run to convergence). ``"gmm"``: a diagonal-covariance
        ``sklearn.mixture.GaussianMixture`` (the seed deck's "GMM" variant; k-means++ initialisation, fit on at
        most :data:`GMM_MAX_FIT_ROWS` sampled rows), hard assignments of every row.
    random_state : int, numpy Generator or None
    n_iter : int
        Lloyd iterations for ``"scipy"`` (the authors' default 10).

    Returns
    -------
    labels : ndarray of int, shape (n_samples,)
    model : object or None
        The fitted sklearn estimator (``"sklearn"``/``"gmm"``), else None.
    """
    n = X.shape[0]
    if clusterer not in CLUSTERERS:
        raise ValueError(f"clusterer must be one of {CLUSTERERS}; got {clusterer!r}")
    if not 1 <= n_clusters <= n:
        raise ValueError(f"n_clusters must be in [1, n_samples={n}]; got {n_clusters}")
    if n_clusters == 1:
        return np.zeros(n, dtype=np.int64), None
    if clusterer == "scipy":
        from scipy.cluster.vq import kmeans2

        rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*clusters is empty.*")  # reported by ClusterIsotropy
            _, labels = kmeans2(X, n_clusters, iter=n_iter, minit="points", missing="warn", rng=rng)
        return labels.astype(np.int64), None
    seed = int(random_state.integers(2**31 - 1)) if isinstance(random_state, np.random.Generator) else random_state
    if clusterer == "sklearn":
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=n_clusters, n_init=1, random_state=seed).fit(X)
        return km.labels_.astype(np.int64), km
    from sklearn.mixture import GaussianMixture

    fit_rows = X
    if n > GMM_MAX_FIT_ROWS:  # EM on every token is slow on CPU: fit on a seeded sample, assign all rows
        fit_rows = X[np.random.default_rng(seed).choice(n, GMM_MAX_FIT_ROWS, replace=False)]
    gm = GaussianMixture(n_components=n_clusters, covariance_type="diag", random_state=seed, reg_covar=1e-4,
                         init_params="k-means++", max_iter=100).fit(fit_rows)
    return gm.predict(X).astype(np.int64), gm


def cluster_bases(X, labels, n_clusters: int, *, directions: bool = True):
    """Mean and principal directions of every cluster.

    Parameters
    ----------
    X : ndarray (n_samples, n_features), float64
    labels : ndarray of int in ``[0, n_clusters)``

    Returns
    -------
    means : ndarray (n_clusters, n_features); NaN rows for empty clusters
    bases : list of ndarray (n_features, r_c) or None
        Eigenvectors of the cluster's scatter matrix :math:`\\sum (x-\\mu_c)(x-\\mu_c)^\\top`, by decreasing
        eigenvalue, ``r_c = min(n_c - 1, n_features)`` of them (the rank of the centred members).
    counts : ndarray of int (n_clusters,)

    With ``directions=False`` only means and counts are computed (bases hold empty matrices).
    """
    d = X.shape[1]
    counts = np.bincount(labels, minlength=n_clusters)
    means = np.full((n_clusters, d), np.nan)
    bases = [None] * n_clusters
    for c in np.flatnonzero(counts):
        Xc = X[labels == c]
        mu = Xc.mean(axis=0)
        means[c] = mu
        Z = Xc - mu
        r = min(len(Xc) - 1, d)
        if r == 0 or not directions:
            bases[c] = np.zeros((d, 0))
            continue
        if len(Xc) < d:  # thin SVD is cheaper and exact for few members
            _, _, Vt = np.linalg.svd(Z, full_matrices=False)
            bases[c] = Vt[:r].T
        else:
            w, V = np.linalg.eigh(Z.T @ Z)
            bases[c] = V[:, ::-1][:, :r]
    return means, bases, counts


def remove_cluster_directions(X, labels, means, bases, n_pc: int):
    """Subtract each row's cluster mean and its projection on the cluster's top ``n_pc`` directions.

    Returns
    -------
    out : ndarray (n_samples, n_features), float64
    n_removed : ndarray of int (n_clusters,)
        ``min(n_pc, r_c)`` per cluster (0 for empty clusters).
    """
    if n_pc < 0:
        raise ValueError(f"n_pc must be >= 0; got {n_pc}")
    out = X - means[labels]
    n_removed = np.zeros(len(bases), dtype=np.int64)
    for c, B in enumerate(bases):
        if B is None:
            continue
        m = min(n_pc, B.shape[1])
        n_removed[c] = m
        if m == 0:
            continue
        idx = np.flatnonzero(labels == c)
        if idx.size == 0:
            continue
        V = B[:, :m]
        Z = out[idx]
        out[idx] = Z - (Z @ V) @ V.T
    return out, n_removed


class ClusterIsotropy(TransformerMixin, BaseEstimator):
    r"""Cluster-based isotropy enhancement :cite:`rajaee2021cluster` (``n_clusters=1``: all-but-the-top).

    :math:`x' = (x-\mu_c) - \sum_{j \le m_c} ((x-\mu_c)^\top u_{c,j}) u_{c,j}` for the cluster ``c`` of
    ``x``, with :math:`m_c = \min(n_{pc}, n_c - 1)`. The cluster mean is not added back: the output
    is zero-mean in every cluster (the authors' notebook).

    Parameters
    ----------
    n_clusters : int, default 27
        Number of clusters (the paper: 27 for BERT and RoBERTa, 10 for GPT-2; 1 = global method).
    n_pc : int, default 12
        Principal directions removed per cluster (the paper: 12 for BERT and RoBERTa, 30 for GPT-2;
        0 = only make clusters zero-mean). Must be smaller than the number of features.
    clusterer : {"scipy", "sklearn", "gmm"}, default "scipy"
        See :func:`cluster_labels`. ``"scipy"`` is the authors' ``kmeans2(minit="points", iter=10)``.
    n_iter : int, default 10
        Lloyd iterations of ``kmeans2``.
    random_state : int, Generator or None
        Seed of the clustering (the authors' runs were unseeded; the paper averages five runs).

    Attributes
    ----------
    labels_ : ndarray (n_samples,)
        Cluster of every training row.
    means_ : ndarray (n_clusters, n_features)
        Cluster means (NaN rows for empty clusters).
    components_ : list of ndarray (n_removed_[c], n_features)
        Directions removed from each cluster (rows, orthonormal).
    n_members_, n_removed_ : ndarray of int (n_clusters,)
    empty_clusters_ : ndarray of int
        Clusters k-means left empty (dropped, with an :class:`EmptyClusterWarning`).
    small_clusters_ : ndarray of int
        Non-empty clusters with ``n_pc`` or fewer members, from which only ``members - 1`` directions
        were removed (with a :class:`SmallClusterWarning`).
    """

    def __init__(self, n_clusters: int = 27, n_pc: int = 12, *, clusterer: str = "scipy", n_iter: int = 10,
                 random_state=None):
        self.n_clusters = n_clusters
        self.n_pc = n_pc
        self.clusterer = clusterer
        self.n_iter = n_iter
        self.random_state = random_state

    def _check_params(self, X):
        if int(self.n_clusters) != self.n_clusters or self.n_clusters < 1:
            raise ValueError(f"n_clusters must be a positive integer; got {self.n_clusters!r}")
        if int(self.n_pc) != self.n_pc or self.n_pc < 0:
            raise ValueError(f"n_pc must be a non-negative integer; got {self.n_pc!r}")
        if self.n_pc >= X.shape[1]:
            raise ValueError(f"n_pc={self.n_pc} must be smaller than n_features={X.shape[1]} "
                             "(removing every direction leaves zero vectors)")
        if self.n_clusters > X.shape[0]:
            raise ValueError(f"n_clusters={self.n_clusters} exceeds n_samples={X.shape[0]}")

    def fit(self, X, y=None):
        """Cluster ``X`` and compute every cluster's mean and directions to remove."""
        self._fit(X)
        return self

    def _fit(self, X):
        X = check_array(X, name="X", min_samples=2, min_features=2)
        self._check_params(X)
        k = int(self.n_clusters)
        labels, model = cluster_labels(X, k, clusterer=self.clusterer, random_state=self.random_state,
                                       n_iter=self.n_iter)
        means, bases, counts = cluster_bases(X, labels, k, directions=self.n_pc > 0)
        self.labels_ = labels
        self.means_ = means
        self.n_members_ = counts
        self._bases = bases
        self._model = model
        self.n_features_in_ = X.shape[1]
        self.empty_clusters_ = np.flatnonzero(counts == 0)
        self.small_clusters_ = np.flatnonzero((counts > 0) & (counts <= self.n_pc))
        self.n_removed_ = np.array([0 if b is None else min(int(self.n_pc), b.shape[1]) for b in bases])
        self.components_ = [np.zeros((0, X.shape[1])) if b is None else b[:, :m].T.copy()
                            for b, m in zip(bases, self.n_removed_)]
        if self.empty_clusters_.size:
            warnings.warn(f"{self.empty_clusters_.size} of {k} clusters are empty and were dropped "
                          f"(clusters {self.empty_clusters_.tolist()})", EmptyClusterWarning, stacklevel=3)
        if self.small_clusters_.size:
            warnings.warn(f"{self.small_clusters_.size} cluster(s) have <= n_pc={self.n_pc} members; removed "
                          f"members - 1 directions from them (see small_clusters_, n_removed_)",
                          SmallClusterWarning, stacklevel=3)
        return X

    def fit_transform(self, X, y=None):
        """Fit and transform the training rows with their own cluster labels (as the authors)."""
        X = self._fit(X)
        out, _ = remove_cluster_directions(X, self.labels_, self.means_, self._bases, int(self.n_pc))
        return out

    def predict(self, X):
        """Cluster of new rows: nearest non-empty cluster mean (k-means) or the mixture's prediction."""
        X = check_array(X, name="X", min_samples=1, min_features=2)
        if not hasattr(self, "labels_"):
            raise ValueError("ClusterIsotropy is not fitted; call fit first")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; fitted on {self.n_features_in_}")
        if self.clusterer == "gmm" and self._model is not None:
            return self._model.predict(X).astype(np.int64)
        ok = np.flatnonzero(self.n_members_ > 0)
        M = self.means_[ok]
        d2 = (X * X).sum(1)[:, None] - 2 * X @ M.T + (M * M).sum(1)[None, :]
        return ok[np.argmin(d2, axis=1)]

    def transform(self, X):
        """Apply the fitted per-cluster means and directions to new rows (assigned by :meth:`predict`)."""
        labels = self.predict(X)
        X = check_array(X, name="X", min_samples=1, min_features=2)
        out, _ = remove_cluster_directions(X, labels, self.means_, self._bases, int(self.n_pc))
        return out


def all_but_the_top(X, n_pc: int):
    r"""Global post-processing of Mu & Viswanath :cite:`mu2018allbutthetop`: remove the mean and the top
    ``n_pc`` principal directions, :math:`x' = \tilde x - \sum_{j \le D} (u_j^\top \tilde x) u_j`,
    :math:`\tilde x = x - \bar x` (the centred coefficient; the paper's Algorithm 1 is often quoted with
    the uncentred :math:`v(w)`, which differs only along the removed directions' mean component).
    Same code as :class:`ClusterIsotropy` with one cluster.
    """
    return ClusterIsotropy(n_clusters=1, n_pc=n_pc).fit_transform(X)


# ----------------------------------------------------------------------------------------- methods
METHODS = ("baseline", "global", "cluster")
#: Seed deck (Rajaei & Sheikhi 2020) variants: (n_clusters or None = the cluster setting, n_pc setting, clusterer)
DECK_VARIANTS = {
    "Mean": ("one", "none", "scipy"),
    "Mean+PCA": ("one", "global", "scipy"),
    "K-means+Mean": ("k", "none", "scipy"),
    "GMM+Mean+PCA": ("k", "cluster", "gmm"),
    "K-means+Mean+PCA": ("k", "cluster", "scipy"),
}

#: App. B.2 of the paper [P]: cluster-based (n_clusters, n_pc) and global n_pc, tuned on STS-B dev in [5, 30].
PAPER_HPARAMS = {
    "gpt2": {"n_clusters": 10, "n_pc": 30, "global_pc": 30},
    "bert-base-uncased": {"n_clusters": 27, "n_pc": 12, "global_pc": 15},
    "roberta-base": {"n_clusters": 27, "n_pc": 12, "global_pc": 25},
}


def make_transform(method: str, *, n_clusters: int, n_pc: int, global_pc: int, random_state=None):
    """The transform of a method: ``None`` for the baseline, else a :class:`ClusterIsotropy`.

    ``method`` is one of :data:`METHODS` (``baseline``, ``global``, ``cluster``) or a seed-deck variant
    name in :data:`DECK_VARIANTS` (``Mean`` = global zero-mean, ``Mean+PCA`` = global, ``K-means+Mean``,
    ``GMM+Mean+PCA``, ``K-means+Mean+PCA`` = cluster).
    """
    if method == "baseline":
        return None
    if method == "global":
        return ClusterIsotropy(1, global_pc, random_state=random_state)
    if method == "cluster":
        return ClusterIsotropy(n_clusters, n_pc, random_state=random_state)
    if method in DECK_VARIANTS:
        kk, pp, cl = DECK_VARIANTS[method]
        k = 1 if kk == "one" else n_clusters
        pc = {"none": 0, "global": global_pc, "cluster": n_pc}[pp]
        return ClusterIsotropy(k, pc, clusterer=cl, random_state=random_state)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS + tuple(DECK_VARIANTS)}")


STS_DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "SICK-R", "STS-B")


def config_for(profile: str) -> dict:
    """Sizes and settings of the chapter per profile (read by the notebook and the tests).

    ``paper``: GPT-2, BERT-base, RoBERTa-base with the paper's hyperparameters, all data, 5 seeds.
    ``offline``: all-MiniLM-L6-v2 on the mirrored data, hyperparameters chosen on STS-B dev from a
    grid in [5, 30]. ``smoke``: tiny random BERT/GPT-2 on a few hundred pairs.
    """
    grid = tuple(range(5, 31, 5))
    if profile == "paper":
        return dict(models=list(PAPER_HPARAMS), hparams=dict(PAPER_HPARAMS), tune=False, grid_k=grid, grid_pc=grid,
                    tune_seeds=3, datasets=STS_DATASETS, stsb_split="test", max_pairs=None, seeds=5,
                    layer_sample=None, table1_ks=(1, 3, 6, 9, 20), deck_model="bert-base-uncased",
                    clf_model="bert-base-uncased", clf_tasks=("RTE", "CoLA", "SST-2", "MRPC"),
                    clf_sizes=None, clf_epochs=10, clf_lr=3e-5, clf_max_length=64)
    if profile == "offline":
        return dict(models=["all-MiniLM-L6-v2"], hparams={}, tune=True, grid_k=grid, grid_pc=grid, tune_seeds=3,
                    datasets=STS_DATASETS, stsb_split="test", max_pairs=None, seeds=5, layer_sample=1000,
                    table1_ks=(1, 3, 6, 9, 20), deck_model="all-MiniLM-L6-v2",
                    clf_model="all-MiniLM-L6-v2", clf_tasks=("SST-2", "RTE", "MRPC", "CoLA"),
                    clf_sizes=(800, 200, 400), clf_epochs=10, clf_lr=3e-5, clf_max_length=64)
    if profile == "smoke":
        return dict(models=["tiny-bert", "tiny-gpt2"], hparams={}, tune=True, grid_k=(2, 4, 6), grid_pc=(2, 4, 6),
                    tune_seeds=1, datasets=("STS12", "STS-B"), stsb_split="test", max_pairs=150, seeds=2,
                    layer_sample=150, table1_ks=(1, 3, 6), deck_model="tiny-bert", clf_model="tiny-bert",
                    clf_tasks=("SST-2",), clf_sizes=(120, 40, 60), clf_epochs=3, clf_lr=1e-3, clf_max_length=16)
    raise ValueError(f"unknown profile {profile!r}")


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
    return np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks]), lengths


def mean_pool(pool, lengths):
    """Mean of each sentence's rows of ``pool`` (rows in sentence order, ``lengths`` rows each)."""
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return np.add.reduceat(pool, starts, axis=0) / lengths[:, None]


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


@dataclass
class STSResult:
    """One STS evaluation: correlations x 100 and the partition isotropy of the processed token pool."""

    spearman: float
    pearson: float
    isotropy: float
    isotropy_log10: float
    n_tokens: int


def evaluate_sts(tokens1, tokens2, gold, transform=None, *, isotropy: bool = True) -> STSResult:
    """The paper's STS protocol (App. B.1) on token matrices of the two sides of each pair.

    All token vectors of all sentences of the data set form one pool; ``transform`` (e.g. a
    :class:`ClusterIsotropy`, ``None`` = baseline) is fit on the pool and applied to it; each sentence
    vector is the mean of its processed token vectors; the score is the cosine of the two sentence
    vectors, and the metric Spearman x 100 with the gold scores. ``isotropy`` is
    :func:`~replib.metrics.partition_isotropy` of the processed pool.
    """
    tokens1, tokens2 = list(tokens1), list(tokens2)
    if len(tokens1) != len(tokens2):
        raise ValueError(f"{len(tokens1)} first sentences but {len(tokens2)} second sentences")
    pool, lengths = token_pool(tokens1 + tokens2)
    if transform is not None:
        pool = transform.fit_transform(pool)
    means = mean_pool(pool, lengths)
    n = len(tokens1)
    sp, pe = sts_correlations(means[:n], means[n:], gold)
    iso = partition_isotropy(pool) if isotropy else None
    return STSResult(sp, pe, iso.value if iso else np.nan, iso.log10 if iso else np.nan, len(pool))


def tune_hyperparameters(tokens1, tokens2, gold, ks, pcs, *, seeds=(0,), clusterer: str = "scipy", progress=True):
    """Spearman x 100 on a dev set for every ``(n_clusters, n_pc)`` of a grid (the paper: STS-B dev, [5, 30]).

    Clusters and cluster bases are computed once per ``(k, seed)`` and reused for every ``n_pc``;
    ``k = 1`` is the global method. Returns a DataFrame with columns ``n_clusters, n_pc, seed, spearman``.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    pool, lengths = token_pool(list(tokens1) + list(tokens2))
    n = len(tokens1)
    rows = []
    todo = [(k, s) for k in ks for s in seeds]
    for k, s in tqdm(todo, desc="grid", disable=not progress):
        labels, _ = cluster_labels(pool, int(k), clusterer=clusterer, random_state=s)
        means, bases, _ = cluster_bases(pool, labels, int(k))
        for p in pcs:
            if p >= pool.shape[1]:
                continue
            out, _ = remove_cluster_directions(pool, labels, means, bases, int(p))
            m = mean_pool(out, lengths)
            rows.append({"n_clusters": int(k), "n_pc": int(p), "seed": s,
                         "spearman": sts_correlations(m[:n], m[n:], gold)[0]})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------- classification
def pair_token_features(model, texts_a, texts_b=None, *, max_length: int = 64, batch_size: int = 32,
                        progress: bool = True):
    """Last-layer token matrices padded to ``max_length``, as the authors' classification notebook.

    Each example (a sentence or a sentence pair) is tokenised with special tokens, truncated and padded to
    ``max_length``; the last hidden layer gives a ``(max_length, d)`` matrix per example **including**
    ``[CLS]``/``[SEP]``/padding rows (the notebook clusters all of them).

    Returns
    -------
    ndarray (n_examples, max_length, d) float32
    """
    import torch
    from tqdm.auto import tqdm

    tok = model.tokenizer
    texts_a = [str(t) for t in texts_a]
    texts_b = None if texts_b is None else [str(t) for t in texts_b]
    if tok.pad_token is None:  # GPT-2 has no pad token: pad with EOS (rows are kept, masked in attention)
        tok.pad_token = tok.eos_token
    out = np.zeros((len(texts_a), max_length, model.spec.hidden_size), np.float32)
    for s in tqdm(range(0, len(texts_a), batch_size), desc="features", disable=not progress):
        a = texts_a[s:s + batch_size]
        b = None if texts_b is None else texts_b[s:s + batch_size]
        enc = tok(a, b, truncation=True, max_length=max_length, padding="max_length", return_tensors="pt")
        enc = {k: v.to(model.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.inference_mode():
            h = model.model(**enc).last_hidden_state
        out[s:s + len(a)] = h.float().cpu().numpy()
    return out


class MLPClassifier:
    """The authors' classifier: flatten -> Dense(hidden, ReLU) -> Dense(1, sigmoid), binary cross-entropy."""

    def __init__(self, n_features: int, hidden: int = 100, seed: int = 0):
        import torch

        g = torch.Generator().manual_seed(seed)
        self.net = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, 1))
        with torch.no_grad():  # seeded init independent of the global torch RNG
            for p in self.net.parameters():
                bound = 1.0 / np.sqrt(p.shape[-1] if p.ndim > 1 else n_features)
                p.uniform_(-bound, bound, generator=g)

    def state(self):
        return {k: v.detach().clone() for k, v in self.net.state_dict().items()}

    def predict(self, X):
        import torch

        with torch.no_grad():
            return (self.net(torch.as_tensor(X, dtype=torch.float32)).squeeze(1) > 0).numpy().astype(int)


def classification_metric(task: str, y_true, y_pred) -> float:
    """Accuracy x 100, or Matthews correlation x 100 for CoLA (the paper's Table 3)."""
    from sklearn.metrics import accuracy_score, matthews_corrcoef

    if task == "CoLA":
        return 100.0 * matthews_corrcoef(y_true, y_pred)
    return 100.0 * accuracy_score(y_true, y_pred)


def train_classifier(clf: MLPClassifier, Xtr, ytr, Xval, yval, *, task: str, epochs: int = 10, lr: float = 3e-5,
                     batch_size: int = 32, seed: int = 0):
    """Adam + BCE for ``epochs``; keeps the weights of the epoch with the best validation metric.

    Returns the list of validation metrics per epoch; ``clf`` holds the best weights afterwards.
    """
    import torch

    torch_g = torch.Generator().manual_seed(seed)
    X = torch.as_tensor(Xtr, dtype=torch.float32)
    y = torch.as_tensor(ytr, dtype=torch.float32)
    opt = torch.optim.Adam(clf.net.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    best, best_state, history = -np.inf, clf.state(), []
    for _ in range(epochs):
        clf.net.train()
        perm = torch.randperm(len(X), generator=torch_g)
        for s in range(0, len(X), batch_size):
            idx = perm[s:s + batch_size]
            opt.zero_grad()
            loss_fn(clf.net(X[idx]).squeeze(1), y[idx]).backward()
            opt.step()
        clf.net.eval()
        m = classification_metric(task, yval, clf.predict(Xval))
        history.append(m)
        if m > best:
            best, best_state = m, clf.state()
    clf.net.load_state_dict(best_state)
    return history


@dataclass
class ClassificationResult:
    """Metric on the evaluation split per condition, and whether each classifier started from fresh weights."""

    metrics: dict
    histories: dict
    fresh_init: bool
    isotropy_log10: dict


def compare_classification(feats, labels, splits, task: str, transforms: dict, *, epochs=10, lr=3e-5,
                           batch_size=32, seed=0, isotropy=True, reuse_classifier=False) -> ClassificationResult:
    """Train one classifier per condition on (optionally post-processed) flattened token features.

    Parameters
    ----------
    feats : ndarray (n, L, d)
        Token matrices of all examples (train, val and eval together).
    labels : ndarray of int (n,)
    splits : dict with index arrays ``train``, ``val``, ``eval``
    transforms : dict name -> transform or None
        Each transform is fit on **all** token rows of all examples jointly (padding included), as the
        authors did on train+dev, then reshaped back to ``(n, L, d)``.

    Every condition gets a **new** classifier with the same seeded initial weights (the authors' notebook
    continued training the baseline's classifier for the post-processed features: a bug fixed here).
    ``reuse_classifier=True`` reproduces that bug, for comparison; ``fresh_init`` of the result is then False.
    """
    n, L, d = feats.shape
    flat_rows = feats.reshape(n * L, d).astype(np.float64)
    metrics, histories, iso, inits = {}, {}, {}, []
    clf = None
    for name, tr in transforms.items():
        rows = flat_rows if tr is None else tr.fit_transform(flat_rows)
        if isotropy:
            iso[name] = partition_isotropy(rows).log10
        X = rows.reshape(n, L * d).astype(np.float32)
        if clf is None or not reuse_classifier:
            clf = MLPClassifier(L * d, seed=seed)
        inits.append(clf.state())
        histories[name] = train_classifier(clf, X[splits["train"]], labels[splits["train"]], X[splits["val"]],
                                           labels[splits["val"]], task=task, epochs=epochs, lr=lr,
                                           batch_size=batch_size, seed=seed)
        metrics[name] = classification_metric(task, labels[splits["eval"]], clf.predict(X[splits["eval"]]))
    fresh = all(all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a) for a, b in zip(inits, inits[1:]))
    return ClassificationResult(metrics, histories, bool(fresh), iso)

# ----------------------------------------------------------------------------------------- pipeline
def load_sts_pairs(name: str, *, stsb_split: str = "test", max_pairs: int | None = None, seed: int = 0):
    """Pairs and gold scores of one STS data set through :mod:`replib.data`.

    ``name`` is one of :data:`STS_DATASETS` (``STS12``..``STS16`` = the whole test sets of each year with
    gold scores, ``SICK-R`` = SICK test relatedness, ``STS-B`` = the ``stsb_split`` split) or
    ``"STS-B-dev"``. ``max_pairs`` takes a seeded random sample (smoke runs). Returns a DataFrame with
    ``sentence1, sentence2, score``.
    """
    from replib.data import load_sick, load_sts, load_stsb

    if name.startswith("STS1"):
        df = load_sts(name)
    elif name == "SICK-R":
        df = load_sick("test")
    elif name == "STS-B":
        df = load_stsb(stsb_split)
    elif name == "STS-B-dev":
        df = load_stsb("dev")
    else:
        raise ValueError(f"unknown STS data set {name!r}; expected one of {STS_DATASETS + ('STS-B-dev',)}")
    df = df[["sentence1", "sentence2", "score"]]
    if max_pairs is not None and len(df) > max_pairs:
        df = df.sample(n=max_pairs, random_state=seed).sort_index()
    return df.reset_index(drop=True)


def embed_pairs(model, df, *, layer: int = -1, cache_dir=None, progress: bool = True):
    """Token matrices of both sides of every pair, each sentence encoded alone, special tokens dropped.

    Unique sentences are embedded once (:func:`replib.embeddings.embed_sentences`, cached in
    ``cache_dir``) and mapped back to every occurrence, so the pool holds one row block per sentence
    occurrence, as in the authors' notebook.
    """
    from replib.embeddings import embed_sentences

    texts = sorted(set(df["sentence1"]) | set(df["sentence2"]))
    emb = embed_sentences(model, texts, layer=layer, drop_special=True, cache_dir=cache_dir, progress=progress)
    where = {t: i for i, t in enumerate(texts)}
    t1 = [emb.tokens[where[s]] for s in df["sentence1"]]
    t2 = [emb.tokens[where[s]] for s in df["sentence2"]]
    return t1, t2


def run_sts(tokens1, tokens2, gold, *, methods, hparams: dict, seeds, progress: bool = False):
    """Evaluate every method on one data set; stochastic methods once per seed.

    Returns a list of dicts ``method, seed, spearman, pearson, iw, iw_log10``. The baseline and every
    one-cluster method are deterministic and run once (seed ``None``).
    """
    rows = []
    for m in methods:
        tr0 = make_transform(m, **hparams)
        deterministic = tr0 is None or tr0.n_clusters == 1
        for s in ([None] if deterministic else list(seeds)):
            tr = None if tr0 is None else make_transform(m, **hparams, random_state=s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SmallClusterWarning)
                warnings.simplefilter("ignore", EmptyClusterWarning)
                r = evaluate_sts(tokens1, tokens2, gold, tr)
            rows.append({"method": m, "seed": s, "spearman": r.spearman, "pearson": r.pearson, "iw": r.isotropy,
                         "iw_log10": r.isotropy_log10, "n_tokens": r.n_tokens})
    return rows


def zero_mean_isotropy(pool, ks, seeds):
    """Table 1 of the paper: log10 I(W) after k-means with ``k`` clusters and per-cluster zero-mean only.

    Returns a list of dicts ``k, seed, iw_log10``; ``k = 0`` denotes the raw pool (the baseline row).
    """
    rows = [{"k": 0, "seed": None, "iw_log10": partition_isotropy(pool).log10}]
    for k in ks:
        for s in ([None] if k == 1 else seeds):
            out = ClusterIsotropy(k, 0, random_state=s).fit_transform(pool)
            rows.append({"k": int(k), "seed": s, "iw_log10": partition_isotropy(out).log10})
    return rows


def layer_isotropy(model, texts, *, cache_dir=None, progress: bool = True):
    """log10 I(W) of the token pool of ``texts`` at every hidden state (0 = embeddings), special tokens dropped."""
    from replib.embeddings import embed_sentences

    out = []
    for layer in range(model.spec.n_layers + 1):
        emb = embed_sentences(model, texts, layer=layer, drop_special=True, cache_dir=cache_dir, progress=progress)
        out.append(partition_isotropy(np.concatenate(emb.tokens)).log10)
    return out


def load_model_for(name: str, seed: int = 0):
    """A registry model (``tiny-<family>`` names give the smoke profile's tiny random models)."""
    from replib.models import load_model, tiny_model

    if name.startswith("tiny-"):
        return tiny_model(name[len("tiny-"):], seed=seed)
    return load_model(name)


def load_classification(task: str, sizes=None, seed: int = 0):
    """Texts, labels and split indices of a Table-3 task available through :mod:`replib.data`.

    ``sizes=(n_train, n_val, n_eval)`` draws seeded samples (the offline demonstration); ``None`` uses
    the full splits: train (minus a 10 % validation split for checkpoint selection) and the evaluation
    split (GLUE dev for SST-2, CoLA and RTE, MRPC test). WiC and BoolQ are not in :mod:`replib.data`.

    Returns
    -------
    texts_a, texts_b (or None), labels (int array), splits (dict of index arrays)
    """
    from replib.data import load_glue

    if task not in ("SST-2", "CoLA", "RTE", "MRPC"):
        raise ValueError(f"task {task!r} is not available offline (WiC and BoolQ are not in replib.data)")
    eval_split = "test" if task == "MRPC" else "dev"
    tr, ev = load_glue(task, "train"), load_glue(task, eval_split)
    rng = np.random.default_rng(seed)
    if sizes is None:
        perm = rng.permutation(len(tr))
        n_val = len(tr) // 10
        tr_idx, val_idx, ev_idx = perm[n_val:], perm[:n_val], np.arange(len(ev))
    else:
        n_tr, n_val, n_ev = sizes
        perm = rng.permutation(len(tr))
        if n_tr + n_val > len(tr):
            raise ValueError(f"{task} train has {len(tr)} rows < {n_tr + n_val}")
        tr_idx, val_idx = perm[:n_tr], perm[n_tr:n_tr + n_val]
        ev_idx = rng.permutation(len(ev))[:min(n_ev, len(ev))]
    parts = [tr.iloc[tr_idx], tr.iloc[val_idx], ev.iloc[ev_idx]]
    import pandas as pd

    df = pd.concat(parts, ignore_index=True)
    n1, n2 = len(tr_idx), len(tr_idx) + len(val_idx)
    splits = {"train": np.arange(n1), "val": np.arange(n1, n2), "eval": np.arange(n2, len(df))}
    if task == "RTE":
        labels = (df["label"] == "entailment").astype(int).to_numpy()
    else:
        labels = df["label"].astype(int).to_numpy()
    if "sentence" in df:
        return df["sentence"].tolist(), None, labels, splits
    return df["sentence1"].tolist(), df["sentence2"].tolist(), labels, splits
