"""k-means clusters chosen by the silhouette, and the isotropy inside each cluster after per-cluster centring."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import pairwise_distances, pairwise_distances_argmin, silhouette_score

from ..._validation import OrientationWarning, check_array
from ...metrics import isoscore, partition_isotropy
from ...metrics.silhouette import silhouette_score as exact_silhouette
from ...metrics.types import _check_xt, s_inter, s_intra
from ...profiles import torch_device
from ..streaming import sample_rows

#: rows up to which the silhouettes of every k share one distance matrix (20,000 rows: 3.2 GB in float64, the
#: authors' sample size), instead of scikit-learn computing the distances again for each k
PRECOMPUTED_MAX = 20_000


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
    """

    k: int
    labels: np.ndarray
    silhouettes: dict
    best_k: int
    best_silhouette: float


def silhouette_rows(labels, sample_size: int | None, seed: int) -> np.ndarray | None:
    """The rows on which the sampled silhouette of ``labels`` is computed (None: all rows).

    scikit-learn's draw for ``silhouette_score(..., sample_size, random_state=seed)`` (the first
    ``sample_size`` of ``RandomState(seed).permutation(n)``), so that the score is scikit-learn's whenever
    that draw holds two clusters or more. A very unbalanced clustering (a cluster of a few isolated
    vectors) can leave a single cluster in the draw, where scikit-learn raises "Number of labels is 1":
    then the draw's last row is replaced by the first row of the permutation from another cluster, so the
    sample keeps two clusters and stays a seeded function of the data.
    """
    labels = np.asarray(labels)
    if not sample_size or sample_size >= len(labels):
        return None
    order = np.random.RandomState(seed).permutation(len(labels))
    rows = order[:sample_size]
    if len(np.unique(labels[rows])) < 2 and len(np.unique(labels)) >= 2:
        other = order[sample_size:][labels[order[sample_size:]] != labels[rows[0]]][0]
        rows = np.r_[rows[:-1], other]
    return rows


def kmeans_torch(X, k: int, *, n_init: int = 10, seed: int = 0, max_iter: int = 300, tol: float = 1e-4, device=None):
    r"""Lloyd's k-means :cite:`pedregosa2011sklearn` in PyTorch, as scikit-learn's ``KMeans(algorithm="lloyd")``:
    greedy k-means++ seeding (:math:`2 + \lfloor\ln k\rfloor` candidates a centre, the one that lowers the
    potential most kept), iterations until the centres move by at most ``tol`` times the mean feature variance
    (squared) or the labels stop changing, an empty cluster re-seeded at the point farthest from its centre,
    and the restart of least inertia :math:`\sum_i \min_c \lVert x_i - \mu_c\rVert^2` kept.

    Parameters
    ----------
    X : array_like (n_samples, n_features), or a float32 ``torch.Tensor`` already on its device (a caller
        that fits several k copies the points there once)
    k : int
    n_init, seed, max_iter, tol : as scikit-learn's (the draws are numpy's, seeded by ``seed``: the same on
        every device)
    device : str, optional
        For an array: default CUDA when available, else the CPU.

    Returns
    -------
    ndarray (k, n_features)
        The centres of the best restart (float64).
    """
    import torch  # only here: the CPU path of the chapter needs no torch

    if isinstance(X, torch.Tensor):
        T = X
    else:
        X = check_array(X, min_samples=k + 1)
        T = torch.as_tensor(np.asarray(X, dtype=np.float32), device=torch.device(device or torch_device()))
    if len(T) <= k:
        raise ValueError(f"k = {k} needs more than {len(T)} points")
    sq = (T * T).sum(1)
    rng = np.random.default_rng(seed)
    threshold = tol * float(T.double().var(0, unbiased=False).mean())

    def dist2(C):  # squared distances of every row to the centres C
        return (sq[:, None] - 2 * T @ C.T + (C * C).sum(1)[None, :]).clamp_min_(0)

    best = (np.inf, None)
    for _ in range(n_init):
        idx = [int(rng.integers(len(X)))]
        d2 = dist2(T[idx]).squeeze(1)
        for _ in range(1, k):
            probs = (d2 / d2.sum()).double().cpu().numpy()
            cand = rng.choice(len(X), size=2 + int(np.log(k)), p=probs / probs.sum())
            pots = torch.minimum(d2[:, None], dist2(T[cand])).sum(0)
            idx.append(int(cand[int(torch.argmin(pots))]))
            d2 = torch.minimum(d2, dist2(T[idx[-1:]]).squeeze(1))
        C, labels = T[idx].clone(), None
        for _ in range(max_iter):
            d, new = dist2(C).min(1)
            sums = torch.zeros_like(C).index_add_(0, new, T)
            counts = torch.bincount(new, minlength=k).to(T.dtype)
            C_new = sums / counts.clamp_min(1)[:, None]
            for c in torch.nonzero(counts == 0).flatten().tolist():  # an empty cluster: the farthest point
                far = int(torch.argmax(d))
                C_new[c], d[far] = T[far], 0.0
            shift = float(((C_new - C) ** 2).sum())
            C = C_new
            if (labels is not None and torch.equal(new, labels)) or shift <= threshold:
                break
            labels = new
        inertia = float(dist2(C).min(1).values.double().sum())
        if inertia < best[0]:
            best = (inertia, C)
    return best[1].double().cpu().numpy()


def choose_clusters(
    X,
    ks=range(2, 16),
    threshold: float = 0.1,
    *,
    sil_sample: int | None = 20_000,
    n_init: int = 10,
    n_fit: int | None = None,
    seed: int = 0,
    backend: str | None = None,
) -> ClusterChoice:
    r"""K-means with k chosen by the silhouette score, as in Cai et al. :cite:`cai2021isotropy`.

    For each k in ``ks``: scikit-learn ``KMeans(k, n_init, random_state=seed)``
    :cite:`pedregosa2011sklearn` fitted on ``X`` (or a seeded subsample of ``n_fit`` rows, all rows
    then assigned to the nearest centre), scored by the silhouette :cite:`rousseeuw1987silhouettes` of
    ``sil_sample`` random rows (:func:`silhouette_rows`: scikit-learn's
    ``silhouette_score(X, labels, sample_size=sil_sample, random_state=seed)`` draw, which keeps at least
    two clusters; the draw is the same for every k, so the sample's distance matrix is computed once). The k
    with the largest silhouette is kept if that silhouette is at least ``threshold`` (0.1); otherwise k = 1
    (the space is treated as one cluster).

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
    backend : {"sklearn", "torch"} or None
        ``sklearn``: scikit-learn's k-means and silhouettes (on one distance matrix of the rows for every k, up
        to :data:`PRECOMPUTED_MAX` rows). ``torch``: :func:`kmeans_torch` and the exact
        :func:`replib.metrics.silhouette.silhouette_score`, on CUDA. None = ``torch`` where CUDA is available.

    Returns
    -------
    ClusterChoice
    """
    X = check_array(X, min_samples=3)
    if backend is None:
        backend = "torch" if torch_device() == "cuda" else "sklearn"
    if backend not in ("sklearn", "torch"):
        raise ValueError(f"backend must be 'sklearn' or 'torch'; got {backend!r}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 2:
        raise ValueError(f"candidate ks must all be >= 2; got {ks}")
    if ks[-1] >= len(X):
        raise ValueError(f"k = {ks[-1]} needs more than {len(X)} points")
    fit_rows = sample_rows(len(X), n_fit, seed) if n_fit and n_fit < len(X) else None
    Xf = X if fit_rows is None else X[fit_rows]
    if backend == "torch":  # the fitted points copied to the device once for every k
        import torch

        Xf = torch.as_tensor(np.asarray(Xf, dtype=np.float32), device=torch_device())
    sil, fits, sample = {}, {}, (None, None)  # sample: the silhouette rows and their distance matrix
    for k in ks:
        if backend == "torch":
            centers = kmeans_torch(Xf, k, n_init=n_init, seed=seed)
            labels = pairwise_distances_argmin(X, centers)
        else:
            km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(Xf)
            labels = km.predict(X) if fit_rows is not None else km.labels_
        if len(np.unique(labels)) < 2:
            sil[k] = float("nan")
            continue
        rows = silhouette_rows(labels, sil_sample, seed)
        if rows is None and len(X) <= PRECOMPUTED_MAX:
            rows = np.arange(len(X))
        if backend == "torch":
            sil[k] = exact_silhouette(X if rows is None else X[rows], labels if rows is None else labels[rows])
        elif rows is None:
            sil[k] = float(silhouette_score(X, labels))
        else:  # every k draws the same rows (unless it left one cluster there): their distances computed once
            if sample[0] is None or not np.array_equal(sample[0], rows):
                sample = (rows, pairwise_distances(X[rows]))
            sil[k] = float(silhouette_score(sample[1], labels[rows], metric="precomputed"))
        fits[k] = labels
    finite = {k: v for k, v in sil.items() if np.isfinite(v)}
    if not finite:
        raise ValueError("no candidate k gave two or more non-empty clusters")
    best_k = max(finite, key=lambda k: (finite[k], -k))
    best = finite[best_k]
    labels, k = (fits[best_k], best_k) if best >= threshold else (np.zeros(len(X), dtype=np.int64), 1)
    return ClusterChoice(k, np.asarray(labels, dtype=np.int64), sil, best_k, best)


def _finite_mean(values) -> float:
    """The mean of the finite values (NaN when there are none)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else float("nan")


def _cluster_row(X, codes, m, c: int, max_per_type: int, seed: int) -> dict:
    """One cluster (rows ``m``) of :func:`cluster_centered_isotropy`: size, types, and after centring its
    S_inter, S_intra, IsoScore (``deflated`` when it has fewer vectors than dimensions) and I(W)."""
    d = X.shape[1]
    Xc = X[m] - X[m].mean(axis=0)
    n = int(m.sum())
    rec = {
        "cluster": c,
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
    return rec


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
    X, codes = _check_xt(X, types)
    labels = np.asarray(labels).ravel()
    if len(labels) != len(X):
        raise ValueError(f"labels has {len(labels)} entries for {len(X)} rows of X")
    rows = [_cluster_row(X, codes, labels == c, int(c), max_per_type, seed) for c in np.unique(labels)]
    return {
        "per_cluster": rows,
        "k": len(rows),
        "s_inter": _finite_mean([r["s_inter"] for r in rows]),
        "s_intra": _finite_mean([r["s_intra"] for r in rows]),
        "isoscore_mean": _finite_mean([r["isoscore"] for r in rows if not r["deflated"]]),
        "isoscore_mean_all": _finite_mean([r["isoscore"] for r in rows]),
        "partition_isotropy_mean": _finite_mean([r["partition_isotropy"] for r in rows]),
        "n_deflated": int(sum(r["deflated"] for r in rows)),
    }
