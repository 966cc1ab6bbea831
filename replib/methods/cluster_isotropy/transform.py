r"""The transform: cluster-based isotropy enhancement :cite:`rajaee2021cluster` and all-but-the-top
:cite:`mu2018allbutthetop` (one cluster), as a scikit-learn transformer.

.. math::

    x' = (x - \mu_c) - \sum_{j=1}^{m_c} \big((x - \mu_c)^\top u_{c,j}\big)\, u_{c,j},
    \qquad m_c = \min(n_{pc},\; n_c - 1).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture

from ..._optional import optional_import
from ..._validation import check_array

# kmeans2's own update step (private to scipy: the sparse product below stands in if it goes)
_vq_update_cluster_means = getattr(optional_import("scipy.cluster._vq"), "update_cluster_means", None)

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
        (Lloyd iterations from k random data points), seeded through ``rng``, as computed by
        :func:`lloyd_points`. ``"sklearn"``:
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
        return lloyd_points(X, n_clusters, n_iter=n_iter, rng=random_state)[1], None
    seed = int(random_state.integers(2**31 - 1)) if isinstance(random_state, np.random.Generator) else random_state
    if clusterer == "sklearn":
        km = KMeans(n_clusters=n_clusters, n_init=1, random_state=seed).fit(X)
        return km.labels_.astype(np.int64), km
    fit_rows = X
    if n > GMM_MAX_FIT_ROWS:  # EM on every token is slow on CPU: fit on a seeded sample, assign all rows
        fit_rows = X[np.random.default_rng(seed).choice(n, GMM_MAX_FIT_ROWS, replace=False)]
    gm = GaussianMixture(
        n_components=n_clusters,
        covariance_type="diag",
        random_state=seed,
        reg_covar=1e-4,
        init_params="k-means++",
        max_iter=100,
    ).fit(fit_rows)
    return gm.predict(X).astype(np.int64), gm


def _cluster_means_sparse(X: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's mean (zeros where empty) and which clusters have members, by a sparse indicator
    product (members summed in row order)."""
    counts = np.bincount(labels, minlength=k)
    ind = scipy.sparse.csr_matrix((np.ones(len(X)), (labels, np.arange(len(X)))), shape=(k, len(X)))
    return (ind @ X) / np.maximum(counts, 1)[:, None], counts > 0


def _cluster_means(X: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """kmeans2's own update step, ``scipy.cluster._vq.update_cluster_means`` (one pass over ``X``, twice as
    fast as the sparse product), or :func:`_cluster_means_sparse` should a scipy release drop that private
    function."""
    if _vq_update_cluster_means is None:  # pragma: no cover - depends on scipy's private module
        return _cluster_means_sparse(X, labels, k)
    means, has = _vq_update_cluster_means(X, labels.astype(np.int32), k)
    return means, has.astype(bool)


def lloyd_points(X, n_clusters: int, *, n_iter: int = 10, rng=None):
    r"""``scipy.cluster.vq.kmeans2(X, k, iter=n_iter, minit="points", missing="warn", rng=rng)``, faster.

    The same algorithm step for step: the initial centroids are ``X[rng.choice(n, k, replace=False)]``
    (the same draw from the same generator), then ``n_iter`` times: assign every row to its nearest
    centroid (first index on ties), move each centroid to its members' mean, and leave a centroid that
    lost all its members where it was. The labels returned are those of the last assignment, as kmeans2's.
    The difference is the assignment: :math:`\arg\min_c \lVert c\rVert^2 - 2\,x^\top c` by one matrix
    product (BLAS) instead of kmeans2's loop over squared differences, about twice as fast at 384
    features; the update step is kmeans2's own. Rounding can differ only where two centroids are
    equidistant to about 1e-15 relative, so the partitions are kmeans2's except at such ties
    (``tests/test_cluster_isotropy.py`` compares them).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    n_clusters : int
    n_iter : int
    rng : numpy.random.Generator, int or None

    Returns
    -------
    centroids : ndarray (n_clusters, n_features)
    labels : ndarray of int64 (n_samples,)
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, k = X.shape[0], int(n_clusters)
    if int(n_iter) < 1:
        raise ValueError(f"n_iter must be >= 1; got {n_iter}")
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must be in [1, n_samples={n}]; got {n_clusters}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    C = X[rng.choice(n, size=k, replace=False)]
    for _ in range(int(n_iter)):
        D = C @ X.T  # (k, n): the wide orientation of the product is the faster one for BLAS
        D *= -2.0
        D += np.einsum("ij,ij->i", C, C)[:, None]
        labels = D.argmin(axis=0)
        means, has = _cluster_means(X, labels, k)
        C = np.where(has[:, None], means, C)
    return C, labels.astype(np.int64)


def _grouped_rows(X, labels, n_clusters: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A float64 copy of the rows of ``X`` grouped by cluster (each cluster's rows in their original order), with
    that order (the rows' stable order by cluster) and each cluster's rows ``[bounds[c], bounds[c+1])`` in it."""
    X = np.asarray(X)
    if X.ndim != 2 or len(X) != len(labels):
        raise ValueError(f"X must be (n_samples, n_features) with one label per row; got {X.shape}, {len(labels)}")
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D; got shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= n_clusters):
        raise ValueError(f"labels must lie in [0, {n_clusters}); got [{labels.min()}, {labels.max()}]")
    bounds = np.zeros(n_clusters + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=n_clusters), out=bounds[1:])
    order = np.argsort(labels, kind="stable")
    return X[order].astype(np.float64, copy=False), order, bounds


def _group_bases(Z: np.ndarray, bounds: np.ndarray, n_directions: int | None) -> list:
    """Top ``n_directions`` (None: all) principal directions of each cluster's centred rows
    ``Z[bounds[c]:bounds[c+1]]``, by decreasing eigenvalue, at most ``members - 1`` (the rank of the centred
    members), each up to sign; None for empty clusters. A partial eigendecomposition (LAPACK ``syevr``) where
    fewer than all are wanted: several times faster than the full one at 384 features."""
    d = Z.shape[1]
    bases = [None] * (len(bounds) - 1)
    for c in np.flatnonzero(np.diff(bounds)):
        Zc = Z[bounds[c] : bounds[c + 1]]
        r = min(len(Zc) - 1, d, d if n_directions is None else int(n_directions))
        if r == 0:
            bases[c] = np.zeros((d, 0))
        elif len(Zc) < d:  # thin SVD is cheaper and exact for few members
            bases[c] = np.linalg.svd(Zc, full_matrices=False)[2][:r].T
        elif r < d:  # the top r eigenvectors only
            _, V = scipy.linalg.eigh(Zc.T @ Zc, subset_by_index=[d - r, d - 1], driver="evr")
            bases[c] = V[:, ::-1]
        else:
            bases[c] = np.linalg.eigh(Zc.T @ Zc)[1][:, ::-1]
    return bases


def _fit_groups(X, labels, n_clusters: int, n_directions: int | None):
    """Rows grouped by cluster (:func:`_grouped_rows`) and centred, with each cluster's mean (NaN rows for empty
    clusters) and top ``n_directions`` directions (:func:`_group_bases`): ``(Z, order, bounds, means, bases)``."""
    Z, order, bounds = _grouped_rows(X, labels, n_clusters)
    means = np.full((n_clusters, Z.shape[1]), np.nan)
    for c in np.flatnonzero(np.diff(bounds)):
        seg = Z[bounds[c] : bounds[c + 1]]
        means[c] = seg.mean(axis=0)
        seg -= means[c]
    return Z, order, bounds, means, _group_bases(Z, bounds, n_directions)


def _remove_group_directions(Z: np.ndarray, bounds: np.ndarray, bases: list, n_pc: int) -> np.ndarray:
    """Project each cluster's rows of the grouped, centred ``Z`` off its top ``n_pc`` directions, in place;
    the number removed per cluster."""
    n_removed = np.zeros(len(bases), dtype=np.int64)
    for c, B in enumerate(bases):
        if B is None:
            continue
        m = n_removed[c] = min(n_pc, B.shape[1])
        if m == 0 or bounds[c] == bounds[c + 1]:
            continue
        seg = Z[bounds[c] : bounds[c + 1]]
        V = B[:, :m]
        seg -= (seg @ V) @ V.T
    return n_removed


def _ungroup(Z: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rows of the grouped ``Z`` back in their original order."""
    out = np.empty_like(Z)
    out[order] = Z
    return out


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
    Z, order, bounds = _grouped_rows(X, labels, len(bases))
    for c in np.flatnonzero(np.diff(bounds)):
        Z[bounds[c] : bounds[c + 1]] -= means[c]
    n_removed = _remove_group_directions(Z, bounds, bases, int(n_pc))
    return _ungroup(Z, order), n_removed


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

    def __init__(
        self, n_clusters: int = 27, n_pc: int = 12, *, clusterer: str = "scipy", n_iter: int = 10, random_state=None
    ):
        self.n_clusters = n_clusters
        self.n_pc = n_pc
        self.clusterer = clusterer
        self.n_iter = n_iter
        self.random_state = random_state

    def fit(self, X, y=None):
        """Cluster ``X`` and compute every cluster's mean and directions to remove."""
        self._fit(X)
        return self

    def _fit(self, X):
        X = check_array(X, name="X", min_samples=2, min_features=2)
        if int(self.n_clusters) != self.n_clusters or self.n_clusters < 1:
            raise ValueError(f"n_clusters must be a positive integer; got {self.n_clusters!r}")
        if int(self.n_pc) != self.n_pc or self.n_pc < 0:
            raise ValueError(f"n_pc must be a non-negative integer; got {self.n_pc!r}")
        if self.n_pc >= X.shape[1]:
            raise ValueError(
                f"n_pc={self.n_pc} must be smaller than n_features={X.shape[1]} "
                "(removing every direction leaves zero vectors)"
            )
        if self.n_clusters > X.shape[0]:
            raise ValueError(f"n_clusters={self.n_clusters} exceeds n_samples={X.shape[0]}")
        k = int(self.n_clusters)
        labels, model = cluster_labels(
            X, k, clusterer=self.clusterer, random_state=self.random_state, n_iter=self.n_iter
        )
        # rows grouped by cluster and centred once: the scatter matrices and, in fit_transform, the output
        Z, order, bounds, means, bases = _fit_groups(X, labels, k, int(self.n_pc))
        counts = np.diff(bounds)
        self.labels_ = labels
        self.means_ = means
        self.n_members_ = counts
        self._bases = bases
        self._model = model
        self.n_features_in_ = X.shape[1]
        self.empty_clusters_ = np.flatnonzero(counts == 0)
        self.small_clusters_ = np.flatnonzero((counts > 0) & (counts <= self.n_pc))
        self.n_removed_ = np.array([0 if b is None else min(int(self.n_pc), b.shape[1]) for b in bases])
        self.components_ = [
            np.zeros((0, X.shape[1])) if b is None else b[:, :m].T.copy() for b, m in zip(bases, self.n_removed_)
        ]
        if self.empty_clusters_.size:
            warnings.warn(
                f"{self.empty_clusters_.size} of {k} clusters are empty and were dropped "
                f"(clusters {self.empty_clusters_.tolist()})",
                EmptyClusterWarning,
                stacklevel=3,
            )
        if self.small_clusters_.size:
            warnings.warn(
                f"{self.small_clusters_.size} cluster(s) have <= n_pc={self.n_pc} members; removed "
                f"members - 1 directions from them (see small_clusters_, n_removed_)",
                SmallClusterWarning,
                stacklevel=3,
            )
        return Z, order, bounds  # grouped and centred: fit_transform projects these rows

    def fit_transform(self, X, y=None):
        """Fit and transform the training rows with their own cluster labels (as the authors)."""
        Z, order, bounds = self._fit(X)  # centred in _fit: the same arithmetic as remove_cluster_directions
        _remove_group_directions(Z, bounds, self._bases, int(self.n_pc))
        return _ungroup(Z, order)

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


def transform_residuals(transformer: ClusterIsotropy, out):
    r"""The two identities the transform must satisfy on its own training rows, as residuals.

    .. math::

        r_\mu = \max_c \max_j \Big|\frac{1}{n_c}\sum_{i \in c} x'_{ij}\Big|, \qquad
        r_\perp = \max_c \max_{i \in c,\, k \le m_c} |x_i'^\top u_{c,k}|,

    over the non-empty clusters :math:`c` :cite:`rajaee2021cluster`. A cluster with one member has no
    removed direction (:math:`m_c = 0`) and contributes 0 to :math:`r_\perp`; so does ``n_pc=0``.

    Parameters
    ----------
    transformer : ClusterIsotropy
        Fitted (``fit_transform`` was called).
    out : ndarray of shape (n_samples, n_features)
        ``transformer.fit_transform(X)``, rows in the order of ``transformer.labels_``.

    Returns
    -------
    cluster_mean_max, orthogonality_max : float
        Absolute (divide by a data scale to make them relative).
    """
    if not hasattr(transformer, "labels_"):
        raise ValueError("transformer is not fitted; call fit_transform first")
    out = check_array(out, name="out", min_samples=1, min_features=2)
    if out.shape[0] != transformer.labels_.shape[0]:
        raise ValueError(f"out has {out.shape[0]} rows; the transformer was fitted on {transformer.labels_.shape[0]}")
    mean_max, orth_max = 0.0, 0.0
    for c in np.flatnonzero(transformer.n_members_):
        rows = out[transformer.labels_ == c]
        mean_max = max(mean_max, float(np.abs(rows.mean(axis=0)).max()))
        V = transformer.components_[c]
        if V.shape[0]:  # a single-member cluster (or n_pc=0) removes no direction: nothing to be orthogonal to
            orth_max = max(orth_max, float(np.abs(rows @ V.T).max()))
    return mean_max, orth_max


def all_but_the_top(X, n_pc: int):
    r"""Global post-processing of Mu & Viswanath :cite:`mu2018allbutthetop`: remove the mean and the top
    ``n_pc`` principal directions, :math:`x' = \tilde x - \sum_{j \le D} (u_j^\top \tilde x) u_j`,
    :math:`\tilde x = x - \bar x` (the centred coefficient; the paper's Algorithm 1 is often quoted with
    the uncentred :math:`v(w)`, which differs only along the removed directions' mean component).
    Same code as :class:`ClusterIsotropy` with one cluster.
    """
    return ClusterIsotropy(n_clusters=1, n_pc=n_pc).fit_transform(X)
