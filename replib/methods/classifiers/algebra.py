r"""The argument of :cite:`mickus2024isotropy` (Sec. 2), as small functions checked numerically on random data.

Per-dimension variance through pairwise squared differences (:cite:`zhang2012variance`), the IsoScore defect
as a function of the angle between the variance vector and the all-ones vector, the silhouette objective as a
signed sum of pairwise squared distances, and a "collapse the clusters" path along which silhouette rises
while IsoScore falls.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..._validation import check_array
from ...metrics.isoscore import isoscore
from ...metrics.silhouette import silhouette_score


def variance_from_pairwise_differences(X, chunk_size: int = 1024) -> np.ndarray:
    r"""Per-dimension (population) variance from pairwise differences :cite:`zhang2012variance`.

    .. math:: \operatorname{Var}(X_k) = \frac{1}{N^2}\sum_{i=1}^{N}\sum_{j=1}^{N} \tfrac12 (x_{ik} - x_{jk})^2 ,

    computed literally over all N² ordered pairs (in row chunks), so that it can be compared with the usual
    ``X.var(axis=0)`` (ddof = 0). O(N² d): use it to check the identity, not to compute variances.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    chunk_size : int
        Rows per chunk.

    Returns
    -------
    numpy.ndarray of shape (n_features,)
    """
    X = check_array(X, min_samples=1)
    n = X.shape[0]
    acc = np.zeros(X.shape[1])
    for a in range(0, n, chunk_size):
        diff = X[a : a + chunk_size, None, :] - X[None, :, :]
        acc += 0.5 * np.einsum("ijk,ijk->k", diff, diff)
    return acc / (n * n)


def variance_vector(X) -> np.ndarray:
    """Variance of each principal component (descending), population convention (ddof = 0).

    The paper assumes the cloud PCA-transformed, so the covariance is diagonal and this is its diagonal.
    """
    X = check_array(X, min_samples=2, min_features=2)
    Xc = X - X.mean(0)
    s = np.linalg.svd(Xc, compute_uv=False)
    var = np.zeros(X.shape[1])
    var[: len(s)] = s**2 / X.shape[0]
    return var


def _check_sigma(sigma) -> np.ndarray:
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.ndim != 1 or sigma.size < 2:
        raise ValueError(f"sigma must be a 1-D variance vector with at least 2 entries; got shape {sigma.shape}")
    if not np.isfinite(sigma).all() or (sigma < 0).any() or not sigma.sum() > 0:
        raise ValueError("sigma must be finite, non-negative and not all zero")
    return sigma


def isotropy_defect(sigma) -> float:
    r"""IsoScore's isotropy defect of a variance vector :cite:`rudman2022isoscore`.

    .. math:: \delta(\sigma) = \frac{\lVert \hat\sigma - \mathbf 1\rVert}{\sqrt{2(n - \sqrt n)}},
              \qquad \hat\sigma = \sqrt n\, \sigma / \lVert\sigma\rVert .
    """
    sigma = _check_sigma(sigma)
    n = sigma.size
    hat = math.sqrt(n) * sigma / np.linalg.norm(sigma)
    return float(np.linalg.norm(hat - 1.0) / math.sqrt(2.0 * (n - math.sqrt(n))))


def variance_angle_cosine(sigma) -> float:
    r"""Cosine of the angle θ between the variance vector and the all-ones vector.

    .. math:: \cos\theta = \frac{\sigma\cdot\mathbf 1}{\lVert\sigma\rVert\sqrt n} \in [1/\sqrt n, 1]

    (θ ∈ [0, π/2] because σ ≥ 0).
    """
    sigma = _check_sigma(sigma)
    return float(sigma.sum() / (np.linalg.norm(sigma) * math.sqrt(sigma.size)))


def defect_from_cosine(cos_theta, n: int) -> np.ndarray:
    r"""Defect through the angle: σ̂ and **1** lie on the sphere of radius √n, the chord between them is
    :math:`2\sqrt n \sin(θ/2)`, so

    .. math:: \delta^2 = \frac{4n\sin^2(\theta/2)}{2(n-\sqrt n)} = \frac{n\,(1 - \cos\theta)}{n - \sqrt n} .

    The defect squared is *affine in* cos θ (not in cos² θ, see :func:`isoscore_from_cosine`).
    """
    c = np.asarray(cos_theta, dtype=np.float64)
    return np.sqrt(np.clip(n * (1.0 - c) / (n - math.sqrt(n)), 0.0, None))


def isoscore_from_cosine(cos_theta, n: int) -> np.ndarray:
    r"""IsoScore as a function of the angle :cite:`rudman2022isoscore,mickus2024isotropy`.

    Substituting :func:`defect_from_cosine` into ι = ((n − δ²(n − √n))² − n)/(n(n − 1)) gives
    n − δ²(n − √n) = n cos θ, hence

    .. math:: \iota = \frac{n\cos^2\theta - 1}{n - 1} ,

    IsoScore is affine in cos² θ: this is the "cosine squared" of the paper's prose.
    """
    c = np.asarray(cos_theta, dtype=np.float64)
    return (n * c * c - 1.0) / (n - 1.0)


def _codes(labels, n: int) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim == 2:
        _, lab = np.unique(lab, axis=0, return_inverse=True)
    lab = lab.reshape(-1)
    if lab.shape[0] != n:
        raise ValueError(f"labels must have one entry per sample ({n}); got {lab.shape[0]}")
    return np.unique(lab, return_inverse=True)[1].reshape(-1)


def silhouette_objective_pairwise(X, labels) -> float:
    r"""The silhouette objective of Eq. (1), literally over all ordered pairs (O(N² d), for checks).

    .. math:: O_S = \sum_{d\in D}\sum_{d'\in D} \operatorname{sign}(\ell(d), \ell(d'))\,\lVert d - d'\rVert^2,
              \qquad \operatorname{sign}(\omega,\omega') = -1 \text{ if } \omega = \omega' \text{ else } +1 .
    """
    X = check_array(X, min_samples=2)
    c = _codes(labels, X.shape[0])
    sq = (X * X).sum(1)
    D2 = np.clip(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0, None)
    sign = np.where(c[:, None] == c[None, :], -1.0, 1.0)
    return float((sign * D2).sum())


def silhouette_objective(X, labels) -> float:
    r"""Eq. (1) in O(N d): all pairs minus twice the same-label pairs,

    .. math:: O_S = 2N\sum_i\lVert x_i-\mu\rVert^2 \;-\; 2\sum_{\omega}2|D_\omega|\sum_{i\in D_\omega}\lVert x_i-\mu_\omega\rVert^2 ,

    using :math:`\sum_{i,j\in S}\lVert x_i - x_j\rVert^2 = 2|S|\sum_{i\in S}\lVert x_i - \mu_S\rVert^2`.
    Maximising it pulls same-label points together and pushes the rest apart :cite:`mickus2024isotropy`.
    """
    X = check_array(X, min_samples=2)
    c = _codes(labels, X.shape[0])
    n = X.shape[0]
    total = 2 * n * ((X - X.mean(0)) ** 2).sum()
    within = 0.0
    for k in np.unique(c):
        Xk = X[c == k]
        within += 2 * len(Xk) * ((Xk - Xk.mean(0)) ** 2).sum()
    return float(total - 2 * within)


def isotropy_objective(X) -> float:
    r"""Eq. (2): the sum of all ordered pairwise squared distances, :math:`O_I = \sum_{d,d'}\lVert d-d'\rVert^2
    = 2N^2\sum_k \sigma_k` (by the variance identity). cos θ = Σσ/(√n‖σ‖) grows with it at fixed ‖σ‖."""
    X = check_array(X, min_samples=2)
    return float(2 * X.shape[0] * ((X - X.mean(0)) ** 2).sum())


def collapse_clusters(X, labels, t: float) -> np.ndarray:
    r"""Move every point towards its cluster mean: :math:`x \mapsto \mu_{\ell(x)} + t\,(x - \mu_{\ell(x)})`.

    t = 1 leaves the cloud unchanged, t = 0 collapses each cluster to a point (the optimum of Eq. (4)).
    """
    X = check_array(X, min_samples=2)
    if not 0.0 <= float(t) <= 1.0:
        raise ValueError(f"t must lie in [0, 1]; got {t}")
    c = _codes(labels, X.shape[0])
    out = X.copy()
    for k in np.unique(c):
        m = c == k
        mu = X[m].mean(0)
        out[m] = mu + t * (X[m] - mu)
    return out


def collapse_path(X, labels, ts, *, device=None) -> pd.DataFrame:
    """IsoScore, silhouette and the two objectives along :func:`collapse_clusters` for each t in ``ts``."""
    rows = []
    for t in ts:
        Y = collapse_clusters(X, labels, t)
        rows.append(
            dict(
                t=float(t),
                isoscore=isoscore(Y),
                silhouette=silhouette_score(Y, labels, device=device),
                silhouette_objective=silhouette_objective(Y, labels),
                isotropy_objective=isotropy_objective(Y),
            )
        )
    return pd.DataFrame(rows)
