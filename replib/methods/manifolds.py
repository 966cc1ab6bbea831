"""Clusters and manifolds in contextual embedding space (Cai et al. 2021).

The quantities of :cite:`cai2021isotropy`, computed on arrays of token vectors and their types:

* :func:`s_inter`: one random instance per type, mean off-diagonal cosine,
  :math:`S_{inter} = E_{i\\ne j}[\\cos(\\phi(t_i), \\phi(t_j))]`.
* :func:`s_intra`: per type at most 1,000 random instances, mean off-diagonal cosine, then the
  unweighted mean over types, :math:`S_{intra} = E_i[E_{k\\ne l}[\\cos(\\phi_k(t_i), \\phi_l(t_i))]]`.
* :func:`choose_clusters`: k-means for k = 2..15 scored by the (sampled, seeded) silhouette
  :cite:`rousseeuw1987silhouettes`; no clustering (k = 1) when the best silhouette is below 0.1.
* :func:`cluster_centered_isotropy`: subtract each cluster's mean, recompute S_inter/S_intra inside
  every cluster, average over clusters; alongside, IsoScore :cite:`rudman2022isoscore` and the
  partition isotropy :cite:`mu2018allbutthetop` inside each cluster (the view of
  :cite:`rajaee2021cluster`).
* :func:`token_kind`, :func:`type_frequencies`, :func:`pca_view`: the Swiss-roll figures.

Every cosine average is exact over all pairs in O(N·d) (:func:`replib.metrics.avg_pairwise_cosine`'s
identity); no N×N matrix is formed. Local intrinsic dimension lives in :mod:`replib.metrics.lid`.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._validation import OrientationWarning, check_array
from ..metrics.cosine import avg_pairwise_cosine, unit_rows

__all__ = [
    "config_for",
    "PAPER_MODELS",
    "PAPER_LID_TABLE3",
    "type_codes",
    "type_frequencies",
    "s_inter",
    "s_intra",
    "ClusterChoice",
    "choose_clusters",
    "cluster_centered_isotropy",
    "token_kind",
    "token_kinds",
    "TOKEN_KINDS",
    "pca_view",
    "load_stream_model",
    "embed_corpus",
    "static_glove",
]

#: Models of the paper (HF ids through :mod:`replib.models`) and their number of Transformer blocks.
PAPER_MODELS = {
    "BERT": ("bert-base-uncased", 12),
    "D-BERT": ("distilbert-base-uncased", 6),
    "GPT": ("openai-gpt", 12),
    "GPT2": ("gpt2", 12),
}
#: Table 3 of Cai et al. 2021, average LID with cosine distance [S: authors' slides, seed 002].
PAPER_LID_TABLE3 = {
    "BERT": 5.6,
    "D-BERT": 7.3,
    "GPT": 6.8,
    "GPT2": 7.0,
    "ELMo": 9.1,
    "GloVe": 18.0,
    "GloVe-2M": 26.1,
    "GNEWS": 21.1,
}


def config_for(profile: str, models=None) -> dict:
    """Sizes for one profile (the notebook and the tests read the same dict).

    ``smoke``: two tiny random models (BERT and GPT-2 architectures) on the first lines of PTB test;
    ``offline``: all-MiniLM-L6-v2 on PTB test and the first part of WikiText-2 test, GloVe-50d;
    ``paper``: BERT, DistilBERT, GPT, GPT-2 on the PTB and WikiText-2 *train* splits (Cai et al.).

    ``models`` (a spec or list of specs, :func:`replib.models.resolve_model`) replaces the profile's
    models. The paper's models keep their display names (``BERT``...: their Table 3 values stay bound to
    them); any other model is shown under :func:`replib.models.model_slug`, with its first, middle and last
    layers as Swiss-roll views.
    """
    cfg = _profile_config(profile)
    if models is None:
        return cfg
    from ..models.resolve import model_n_layers, model_slug, select_models

    known = {
        spec: (display, n)
        for display, (spec, n) in {
            **PAPER_MODELS,
            "MiniLM": ("all-MiniLM-L6-v2", 6),
            "tiny-BERT": ("tiny-bert", 2),
            "tiny-GPT2": ("tiny-gpt2", 2),
        }.items()
    }
    chosen, swiss = {}, dict(cfg["swiss_layers"])
    for spec in select_models(models, []):
        display, n = known.get(spec, (model_slug(spec), None))
        n = n or model_n_layers(spec)
        chosen[display] = (spec, n)
        swiss.setdefault(display, sorted({min(1, n - 1), n // 2, n - 1}))
    cfg.update(models=chosen, swiss_layers=swiss)
    return cfg


def _profile_config(profile: str) -> dict:
    base = dict(
        window=512,
        ks=tuple(range(2, 16)),
        threshold=0.1,
        max_per_type=1000,
        lid_k=100,
        sil_sample=20_000,
        n_init=10,
        kmeans_fit=None,
        lid_queries=None,
        glove_queries=None,
        pca_points=20_000,
        swiss_layers={"GPT": [2], "GPT2": [2, 6], "BERT": [6], "D-BERT": [1]},
        glove_max_words=None,
        layers_per_pass=None,
        lid_check_points=3000,
        threads=1,
    )
    if profile == "smoke":
        return dict(
            base,
            models={"tiny-BERT": ("tiny-bert", 2), "tiny-GPT2": ("tiny-gpt2", 2)},
            corpora={"ptb": ("ptb", "test", 250)},
            window=128,
            ks=tuple(range(2, 6)),
            sil_sample=1500,
            n_init=2,
            kmeans_fit=3000,
            lid_k=20,
            lid_queries=400,
            glove_queries=400,
            glove_max_words=50_000,
            pca_points=2000,
            lid_check_points=1000,
            swiss_layers={"tiny-GPT2": [1], "tiny-BERT": [1]},
        )
    if profile == "offline":
        return dict(
            base,
            models={"MiniLM": ("all-MiniLM-L6-v2", 6)},
            corpora={"ptb": ("ptb", "test", None), "wikitext2": ("wikitext2", "test", 1400)},
            sil_sample=3000,
            n_init=1,
            kmeans_fit=5000,
            lid_queries=1000,
            glove_queries=2000,
            pca_points=8000,
            swiss_layers={"MiniLM": [1, 2, 5]},
        )
    if profile == "paper":
        return dict(
            base,
            models=dict(PAPER_MODELS),
            corpora={"ptb": ("ptb", "train", None), "wikitext2": ("wikitext2", "train", None)},
            kmeans_fit=200_000,
            lid_queries=50_000,
            glove_queries=50_000,
            layers_per_pass=2,
            lid_check_points=5000,
            threads=None,
        )
    raise ValueError(f"unknown profile {profile!r}")


# --------------------------------------------------------------------------------------------- types
def type_codes(types) -> tuple[np.ndarray, np.ndarray]:
    """Integer code per instance and the distinct types (in ``np.unique`` order)."""
    types = np.asarray(types)
    if types.ndim != 1:
        raise ValueError("types must be 1-D (one type label per row of X)")
    uniq, codes = np.unique(types, return_inverse=True)
    return codes.ravel().astype(np.int64), uniq


def type_frequencies(types) -> np.ndarray:
    """For every instance, the number of occurrences of its type in the stream (Cai's ``repeats``)."""
    codes, uniq = type_codes(types)
    return np.bincount(codes, minlength=len(uniq))[codes]


def _check_xt(X, types, min_samples=2):
    X = check_array(X, min_samples=min_samples)
    codes, _ = type_codes(types)
    if len(codes) != len(X):
        raise ValueError(f"types has {len(codes)} labels for {len(X)} rows of X")
    return X, codes


def s_inter(X, types, seed: int = 0, *, center: bool = False) -> float:
    r"""Inter-type cosine :math:`S_{inter} = E_{i\ne j}[\cos(\phi(t_i), \phi(t_j))]` :cite:`cai2021isotropy`.

    One instance per type is drawn uniformly at random (seeded), then the mean cosine over all
    unordered pairs of the drawn vectors, exactly and without an N×N matrix.

    Parameters
    ----------
    X : array_like (n_samples, n_features)
        Token vectors.
    types : array_like (n_samples,)
        Type label of each row (token string or id).
    seed : int
    center : bool
        Subtract the mean of ``X`` (all rows) before the cosines (Cai's ``--center``).

    Returns
    -------
    float (NaN when fewer than 2 types)
    """
    X, codes = _check_xt(X, types)
    if center:
        X = X - X.mean(axis=0)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(codes))  # a random instance per type: first in a random order
    _, first = np.unique(codes[order], return_index=True)
    pick = order[first]
    if len(pick) < 2:
        return float("nan")
    return avg_pairwise_cosine(X[pick])


def _per_type_cosines(U: np.ndarray, codes: np.ndarray, max_per_type: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Mean off-diagonal cosine per type (rows of U unit-norm), with at most ``max_per_type`` instances."""
    order = rng.permutation(len(codes))
    c = codes[order]
    srt = np.argsort(c, kind="stable")
    c_sorted = c[srt]
    rows = order[srt]
    starts = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
    rank = np.arange(len(c_sorted)) - np.repeat(starts, np.diff(np.r_[starts, len(c_sorted)]))
    keep = rank < max_per_type  # the first max_per_type of a random order
    rows, c_sorted = rows[keep], c_sorted[keep]
    starts = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
    n = np.diff(np.r_[starts, len(c_sorted)]).astype(np.float64)
    S = np.add.reduceat(U[rows], starts, axis=0)
    ok = n >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (np.einsum("ij,ij->i", S, S) - n) / (n * (n - 1.0))
    return cos[ok], c_sorted[starts][ok]


def s_intra(X, types, max_per_type: int = 1000, seed: int = 0, *, center: bool = False) -> float:
    r"""Intra-type cosine :math:`S_{intra} = E_i[E_{k\ne l}[\cos(\phi_k(t_i), \phi_l(t_i))]]` :cite:`cai2021isotropy`.

    For every type with at least two instances, at most ``max_per_type`` instances drawn at random
    (seeded); the exact mean cosine over their pairs; then the unweighted mean over types.

    Parameters
    ----------
    X : array_like (n_samples, n_features)
    types : array_like (n_samples,)
    max_per_type : int
        1,000 in the authors' code.
    seed : int
    center : bool
        Subtract the mean of ``X`` first.

    Returns
    -------
    float (NaN when no type has two instances)
    """
    X, codes = _check_xt(X, types)
    if max_per_type < 2:
        raise ValueError("max_per_type must be >= 2")
    if center:
        X = X - X.mean(axis=0)
    cos, _ = _per_type_cosines(unit_rows(X), codes, int(max_per_type), np.random.default_rng(seed))
    return float(cos.mean()) if cos.size else float("nan")


# ------------------------------------------------------------------------------------------ clusters
@dataclass
class ClusterChoice:
    """Result of :func:`choose_clusters`.

    Attributes
    ----------
    k : int
        Chosen number of clusters (1 = no clustering: best silhouette below the threshold).
    labels : ndarray (n_samples,) int
        Cluster of every row (all 0 when k = 1).
    silhouettes : dict int -> float
        Sampled silhouette per candidate k.
    best_k, best_silhouette : the argmax before the threshold
    threshold : float
    centers : ndarray (k, n_features)
    """

    k: int
    labels: np.ndarray
    silhouettes: dict
    best_k: int
    best_silhouette: float
    threshold: float
    centers: np.ndarray = field(repr=False, default=None)


def choose_clusters(
    X,
    ks=range(2, 16),
    threshold: float = 0.1,
    *,
    sil_sample: int | None = 20_000,
    n_init: int = 10,
    n_fit: int | None = None,
    seed: int = 0,
) -> ClusterChoice:
    r"""K-means with k chosen by the silhouette score, as in Cai et al. :cite:`cai2021isotropy`.

    For each k in ``ks``: scikit-learn ``KMeans(k, n_init, random_state=seed)``
    :cite:`pedregosa2011sklearn` fitted on ``X`` (or a seeded subsample of ``n_fit`` rows, all rows
    then assigned to the nearest centre), scored by
    ``silhouette_score(X, labels, sample_size=sil_sample, random_state=seed)``
    :cite:`rousseeuw1987silhouettes`. The k with the largest silhouette is kept if that silhouette is
    at least ``threshold`` (0.1); otherwise k = 1 (the space is treated as one cluster).

    Parameters
    ----------
    X : array_like (n_samples, n_features)
    ks : iterable of int
        Candidate numbers of clusters (each >= 2).
    threshold : float
    sil_sample : int or None
        Points sampled for the silhouette (the authors: 20,000); None = all.
    n_init : int
        k-means restarts (scikit-learn's historic default was 10).
    n_fit : int or None
        Fit on a subsample of this many rows (stated in the chapter); None = all rows.
    seed : int
        Seeds the subsample, k-means and the silhouette sample: same seed, same result.

    Returns
    -------
    ClusterChoice
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    X = check_array(X, min_samples=3)
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 2:
        raise ValueError(f"candidate ks must all be >= 2; got {ks}")
    if ks[-1] >= len(X):
        raise ValueError(f"k = {ks[-1]} needs more than {len(X)} points")
    rng = np.random.default_rng(seed)
    fit_rows = np.sort(rng.choice(len(X), n_fit, replace=False)) if n_fit and n_fit < len(X) else None
    Xf = X if fit_rows is None else X[fit_rows]
    sil, fits = {}, {}
    for k in ks:
        km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(Xf)
        labels = km.predict(X) if fit_rows is not None else km.labels_
        if len(np.unique(labels)) < 2:
            sil[k] = float("nan")
            continue
        ss = sil_sample if sil_sample and sil_sample < len(X) else None
        sil[k] = float(silhouette_score(X, labels, sample_size=ss, random_state=seed))
        fits[k] = (labels, km.cluster_centers_)
    finite = {k: v for k, v in sil.items() if np.isfinite(v)}
    if not finite:
        raise ValueError("no candidate k gave two or more non-empty clusters")
    best_k = max(finite, key=lambda k: (finite[k], -k))
    best = finite[best_k]
    if best >= threshold:
        labels, centers = fits[best_k]
        k = best_k
    else:
        labels, centers, k = np.zeros(len(X), dtype=np.int64), X.mean(axis=0, keepdims=True), 1
    return ClusterChoice(k, np.asarray(labels, dtype=np.int64), sil, best_k, best, float(threshold), centers)


def cluster_centered_isotropy(X, types, labels, max_per_type: int = 1000, seed: int = 0) -> dict:
    r"""S_inter and S_intra inside every cluster after subtracting the cluster mean, and their means.

    Cai et al. :cite:`cai2021isotropy`: within cluster :math:`c`, :math:`\tilde x = x - \mu_c`, then
    :math:`S^c_{inter}` (one instance per type present in c) and :math:`S^c_{intra}`, and the
    unweighted mean over clusters (NaN clusters skipped). Alongside, inside every cluster:

    * IsoScore :cite:`rudman2022isoscore` (mean-agnostic, so centring does not change it). A cluster
      with fewer vectors than dimensions is flagged ``deflated``: even isotropic data score only about
      n/(n+d) there, so the mean over clusters ``isoscore_mean`` skips such clusters.
    * the partition isotropy :math:`I(W)` :cite:`mu2018allbutthetop` of the centred cluster, the metric
      with which Rajaee & Pilehvar :cite:`rajaee2021cluster` find GPT-2 "still far from isotropic".

    Parameters
    ----------
    X : array_like (n_samples, n_features)
    types : array_like (n_samples,)
    labels : array_like (n_samples,) int
        Cluster of each row (e.g. ``choose_clusters(X).labels``).
    max_per_type : int
    seed : int

    Returns
    -------
    dict
        ``per_cluster`` (list of dicts: cluster, n, n_types, s_inter, s_intra, isoscore, deflated,
        isotropic_reference, partition_isotropy), and the means ``s_inter``, ``s_intra``,
        ``isoscore_mean`` (non-deflated clusters), ``isoscore_mean_all``, ``partition_isotropy_mean``,
        ``n_deflated``.
    """
    from ..metrics import isoscore, partition_isotropy

    X, codes = _check_xt(X, types)
    labels = np.asarray(labels).ravel()
    if len(labels) != len(X):
        raise ValueError(f"labels has {len(labels)} entries for {len(X)} rows of X")
    d = X.shape[1]
    rows = []
    for c in np.unique(labels):
        m = labels == c
        Xc = X[m] - X[m].mean(axis=0)
        n = int(m.sum())
        rec = {
            "cluster": int(c),
            "n": n,
            "n_types": int(len(np.unique(codes[m]))),
            "s_inter": np.nan,
            "s_intra": np.nan,
            "isoscore": np.nan,
            "deflated": n < d,
            "isotropic_reference": n / (n + d),
            "partition_isotropy": np.nan,
        }
        if n >= 2:
            nz = np.linalg.norm(Xc, axis=1) > 0
            if nz.sum() >= 2:
                rec["s_inter"] = s_inter(Xc[nz], codes[m][nz], seed)
                rec["s_intra"] = s_intra(Xc[nz], codes[m][nz], max_per_type, seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OrientationWarning)  # flagged as `deflated` instead
                try:
                    rec["isoscore"] = isoscore(Xc)
                    rec["partition_isotropy"] = float(partition_isotropy(Xc).value)
                except ValueError:  # zero variance
                    pass
        rows.append(rec)

    def _mean(key, where=None):
        v = np.array([r[key] for r in rows if where is None or where(r)], dtype=float)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else float("nan")

    return {
        "per_cluster": rows,
        "k": len(rows),
        "s_inter": _mean("s_inter"),
        "s_intra": _mean("s_intra"),
        "isoscore_mean": _mean("isoscore", lambda r: not r["deflated"]),
        "isoscore_mean_all": _mean("isoscore"),
        "partition_isotropy_mean": _mean("partition_isotropy"),
        "n_deflated": int(sum(r["deflated"] for r in rows)),
    }


# ---------------------------------------------------------------------------------------- token kinds
TOKEN_KINDS = ("special", "punctuation", "number", "word")
_SPECIAL = re.compile(r"^(\[[A-Z]+\]|<\|?[a-z_]+\|?>|<unk>|<eos>|<pad>)$")
_NUMBER = re.compile(r"^[+-]?(\d+([.,:/]\d+)*|\d*[.,]\d+)(st|nd|rd|th|s)?$")


def token_kind(token: str) -> str:
    """Kind of one token string: ``special``, ``punctuation``, ``number`` or ``word``.

    Sub-word markers are removed first: WordPiece ``##``, GPT-2's leading ``Ġ`` (space) and ``Ċ``
    (newline), GPT's trailing ``</w>``. ``special``: ``[CLS]``-style and ``<...>`` tokens (PTB's
    ``<unk>``); ``punctuation``: no letter or digit; ``number``: digits with separators (``1,000``,
    ``3.5``, ``1990s``); ``word``: everything else (any letter).
    """
    t = str(token)
    if _SPECIAL.match(t):
        return "special"
    if t.startswith("##"):
        t = t[2:]
    if t.endswith("</w>"):
        t = t[:-4]
    t = t.lstrip("ĠĊ▁")
    if not t:
        return "punctuation"  # a bare space/newline marker
    if _NUMBER.match(t) or t.isdigit():
        return "number"
    if not any(ch.isalnum() for ch in t):
        return "punctuation"
    if any(ch.isalpha() for ch in t):
        return "word"
    return "number"


def token_kinds(tokens) -> np.ndarray:
    """:func:`token_kind` of every token (cached per distinct string)."""
    tokens = list(tokens)
    cache = {t: token_kind(t) for t in set(tokens)}
    return np.array([cache[t] for t in tokens], dtype=object)


# ------------------------------------------------------------------------------------------------ PCA
def pca_view(X, n_components: int = 3, n_points: int | None = None, seed: int = 0) -> dict:
    """Project onto the first principal components, as in the authors' ``--draw 2d/3d``.

    PCA is fitted on all rows (scikit-learn, float64); ``n_points`` rows are drawn (seeded) to plot.

    Returns
    -------
    dict
        ``coords`` (n_points, n_components), ``index`` (rows of X), ``explained`` (ratio per component),
        ``explained_total``.
    """
    from sklearn.decomposition import PCA

    X = check_array(X, min_samples=max(2, n_components))
    pca = PCA(n_components=n_components, random_state=seed).fit(X)
    idx = np.arange(len(X))
    if n_points is not None and n_points < len(X):
        idx = np.sort(np.random.default_rng(seed).choice(len(X), n_points, replace=False))
    return {
        "coords": pca.transform(X[idx]),
        "index": idx,
        "explained": pca.explained_variance_ratio_,
        "explained_total": float(pca.explained_variance_ratio_.sum()),
    }


# ------------------------------------------------------------------------------ models and embeddings
@dataclass
class _Stream:
    layers: dict
    tokens: list
    token_ids: np.ndarray


def load_stream_model(name: str, seed: int = 0):
    """A model for :func:`embed_corpus`: any spec :func:`replib.models.resolve_model` accepts
    (``tiny-bert``/``tiny-gpt2`` random smoke models, a registry key, a local folder, a Hub id)."""
    from ..models import resolve_model

    return resolve_model(name, seed=seed)


def embed_corpus(model, lines, window: int = 512, layers=None, cache_dir=None, progress: bool = True) -> _Stream:
    """Cai et al.'s token stream: lines encoded one by one (special tokens as ``encode`` adds them),
    concatenated, cut into non-overlapping ``window``-token windows (short tail dropped), every layer's
    hidden states (code layer 0 = output of the first block) per token, through
    :func:`replib.embeddings.embed_token_stream`.

    Returns an object with ``layers`` (dict layer -> (n_tokens, d) float32), ``tokens`` (type strings)
    and ``token_ids``.
    """
    from ..embeddings import embed_token_stream

    ts = embed_token_stream(model, list(lines), window=window, layers=layers, cache_dir=cache_dir, progress=progress)
    return _Stream(ts.layers, list(ts.tokens), np.asarray(ts.token_ids))


def static_glove(max_words: int | None = None):
    """GloVe 6B 50-d (words, float32 matrix) through :func:`replib.models.load_glove`."""
    from ..models import load_glove

    words, vecs = load_glove()
    if max_words is not None:
        words, vecs = words[:max_words], vecs[:max_words]
    return words, vecs


# ------------------------------------------------------------------------------------ one layer's run
def analyse_layer(X, tokens, cfg: dict, seed: int = 0, *, lid_metrics=("cosine", "euclidean")) -> dict:
    """Every per-layer number of the chapter for one matrix of token vectors.

    S_inter/S_intra raw and after global centring; the silhouette choice of k (:func:`choose_clusters`)
    and the per-cluster centred S_inter/S_intra, IsoScore and partition isotropy
    (:func:`cluster_centered_isotropy`); IsoScore of the whole layer; the authors' LID
    (:func:`replib.metrics.lid.lid_mle`, ``variant="cai"``) for each metric in ``lid_metrics``.

    Parameters
    ----------
    X : array_like (n_tokens, d)
    tokens : sequence of str (n_tokens,)
    cfg : dict
        :func:`config_for` of the profile (``threads`` limits BLAS/OpenMP threads; None = no limit).
    seed : int

    Returns
    -------
    dict of scalars (a table row) plus ``silhouettes``, ``per_cluster`` and ``labels``.
    """
    from threadpoolctl import threadpool_limits

    # BLAS/OpenMP threads: 1 on the shared 2-core build machine, where oversubscribed threads make a
    # 384x384 eigh take seconds; unlimited (None) at paper scale
    with threadpool_limits(cfg.get("threads")):
        return _analyse_layer(X, tokens, cfg, seed, lid_metrics)


def _analyse_layer(X, tokens, cfg, seed, lid_metrics):
    from ..metrics import isoscore
    from ..metrics.lid import lid_mle

    X = check_array(X, min_samples=3)
    tokens = np.asarray(tokens)
    row = {"n_tokens": len(X), "n_types": int(len(np.unique(tokens))), "dim": X.shape[1]}
    row["s_inter"] = s_inter(X, tokens, seed)
    row["s_intra"] = s_intra(X, tokens, cfg["max_per_type"], seed)
    row["s_inter_centered"] = s_inter(X, tokens, seed, center=True)
    row["s_intra_centered"] = s_intra(X, tokens, cfg["max_per_type"], seed, center=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrientationWarning)
        row["isoscore"] = isoscore(X)
    choice = choose_clusters(
        X,
        cfg["ks"],
        cfg["threshold"],
        sil_sample=cfg["sil_sample"],
        n_init=cfg["n_init"],
        n_fit=cfg["kmeans_fit"],
        seed=seed,
    )
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
    for metric in lid_metrics:
        r = lid_mle(X, k=cfg["lid_k"], metric=metric, variant="cai", n_queries=cfg["lid_queries"], seed=seed)
        row[f"lid_{metric}"] = r.mean
        row[f"lid_{metric}_duplicates"] = r.n_duplicates
    row["silhouettes"] = choice.silhouettes
    row["per_cluster"] = cc["per_cluster"]
    row["labels"] = choice.labels
    return row
