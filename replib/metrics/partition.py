"""Partition-function isotropy I(W) of Mu & Viswanath (2018), as used by Rajaee & Pilehvar (2021)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from .._validation import check_array, max_abs_scale

__all__ = ["partition_isotropy", "PartitionIsotropy", "rudman_partition_score", "rudman_partition_score_gaussian"]


class PartitionIsotropy(NamedTuple):
    """Result of :func:`partition_isotropy`: I(W) in linear and log scale (both float64)."""

    value: float
    log10: float
    log_partition: np.ndarray  # natural log of F(u) for every eigenvector u


def partition_isotropy(W, *, sign: str = "eigh") -> PartitionIsotropy:
    r"""Isotropy :math:`I(W) = \min_u F(u) / \max_u F(u)` with :math:`F(u) = \sum_i \exp(u^\top w_i)`.

    The directions u range over the eigenvectors of :math:`W^\top W` (uncentred), as in Mu & Viswanath
    :cite:`mu2018allbutthetop` and Rajaee & Pilehvar :cite:`rajaee2021cluster` (eq. 2). Computed in
    float64 and in log space (``logsumexp``): values such as 1e-174 for GPT-2 underflow otherwise.

    Sign convention: an eigenvector is defined only up to sign and :math:`F(u) \ne F(-u)`, so I(W)
    depends on the convention. ``sign="eigh"`` keeps the signs returned by ``numpy.linalg.eigh``
    (LAPACK ``syevd``), the closest to the authors' ``np.linalg.eig`` on a symmetric matrix;
    ``sign="both"`` takes min and max over ±u (a convention-free lower bound on I). Compare papers'
    values in orders of magnitude (``log10``), not digits.

    Parameters
    ----------
    W : array_like of shape (n_samples, n_features)
    sign : {"eigh", "both"}

    Returns
    -------
    PartitionIsotropy
        ``value`` (may underflow to 0.0 for extreme anisotropy; ``log10`` stays exact).
    """
    W = check_array(W, name="W", min_samples=2, min_features=2, warn_fewer_samples=True, metric="partition_isotropy")
    if sign not in ("eigh", "both"):
        raise ValueError(f"sign must be 'eigh' or 'both'; got {sign!r}")
    Ws, _ = max_abs_scale(W)  # same eigenvectors; WᵀW stays inside float64 for any finite W
    _, U = np.linalg.eigh(Ws.T @ Ws)
    logF = _log_partition(W, U)  # log sum_i exp(u_j^T w_i) for every eigenvector u_j
    if sign == "both":
        logF = np.concatenate([logF, _log_partition(W, -U)])
    log_i = float(logF.min() - logF.max())
    return PartitionIsotropy(value=float(np.exp(log_i)), log10=float(log_i / np.log(10.0)), log_partition=logF)


_PRODUCTS = ("dot", "elementwise")


def _log_partition(W: np.ndarray, U: np.ndarray, block_rows: int = 8192) -> np.ndarray:
    r"""Column-wise :math:`\log \sum_i \exp((WU)_{ij})`, by blocks of rows with a running maximum.

    Equal to ``scipy.special.logsumexp(W @ U, axis=0)`` to rounding, without holding the ``(n, d)``
    product at once and without the overheads of scipy's general implementation (about 20 times
    slower on 60k × 384).
    """
    m = s = None
    buf = np.empty((min(block_rows, len(W)), U.shape[1]))  # one block buffer for every block
    for a in range(0, len(W), block_rows):
        B = buf[: min(block_rows, len(W) - a)]
        np.matmul(W[a : a + block_rows], U, out=B)
        bm = B.max(axis=0)
        if m is None:
            m, s = bm, np.zeros_like(bm)
        else:
            new = np.maximum(m, bm)
            s *= np.exp(m - new)
            m = new
        np.subtract(B, m, out=B)
        np.exp(B, out=B)
        s += B.sum(axis=0)
    return np.log(s) + m


def _rows_of_eig(S: np.ndarray) -> np.ndarray:
    """Rows of the eigenvector matrix returned by ``numpy.linalg.eig`` (real parts; S is symmetric)."""
    _, C = np.linalg.eig(S)
    return np.real(C)


def rudman_partition_score(X, *, product: str = "dot") -> float:
    r"""The partition score as computed for Rudman et al.'s rotation table :cite:`rudman2022isoscore`.

    Rudman et al.'s code (``existing_scores.partition_score``, points as columns) decomposes the uncentred
    scatter with ``numpy.linalg.eig`` and then iterates ``for c in C`` over the **rows** of the eigenvector
    matrix ``C``, not over its columns (the eigenvectors). With points as rows here, for every row
    :math:`c` of the eigenvector matrix of :math:`X^\top X`,

    .. math::

        F_{\mathrm{dot}}(c) = \sum_i \exp(c^\top x_i), \qquad
        F_{\mathrm{elementwise}}(c) = \sum_i \sum_j \exp(c_j x_{ij}),
        \qquad \text{score} = \min_c F(c) / \max_c F(c).

    ``product="dot"`` is Mu & Viswanath's :math:`F` :cite:`mu2018allbutthetop` evaluated on the rows: it
    reproduces the paper's partition-score column (0.445 / 0.673 / 0.669 / 0.446 at 0°, 120°, 240° and in
    the PCA frame). ``"elementwise"`` is the published line ``np.sum(np.exp(c*points.T))`` taken literally;
    it gives about 0.99 at 0° and 0.61 in the PCA frame, so it is not what produced the table.

    Why the rows matter: ``eig`` returned a proper rotation :math:`C` (det +1) for these matrices. Its rows
    are its columns reflected, so they are eigenvectors only when the principal axes lie at 0° or 45°
    (mod 90°), which is the case at 0° and in the PCA frame; at 120° and 240° the rows lie 30° and 60° off
    the principal axes. The spread of the column is therefore an artefact of iterating over rows, not of
    eigenvector signs. See :func:`rudman_partition_score_gaussian` for the seed-free expectation.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    product : {"dot", "elementwise"}

    Returns
    -------
    float in (0, 1]
    """
    if product not in _PRODUCTS:
        raise ValueError(f"product must be one of {_PRODUCTS}; got {product!r}")
    X = check_array(X, min_samples=2, min_features=2, warn_fewer_samples=True, metric="rudman_partition_score")
    S = X.T @ X  # the authors' matrix, unscaled: eig's orientation of C is what is being reproduced
    if not np.isfinite(S).all():
        Xs, _ = max_abs_scale(X)
        S = Xs.T @ Xs
    rows = _rows_of_eig(S)
    if product == "dot":
        logF = _log_partition(X, rows.T)
    else:
        logF = np.array([logsumexp(X * c) for c in rows])
    return float(np.exp(logF.min() - logF.max()))


def rudman_partition_score_gaussian(cov, *, product: str = "dot") -> float:
    r"""Expected :func:`rudman_partition_score` of a zero-mean Gaussian with covariance ``cov`` (no sampling).

    For :math:`x \sim N(0, \Sigma)`, :math:`E\,e^{c^\top x} = e^{c^\top \Sigma c / 2}` and
    :math:`E\,e^{c_j x_j} = e^{c_j^2 \Sigma_{jj} / 2}`; the uncentred scatter is proportional to
    :math:`\Sigma`, so the rows come from ``numpy.linalg.eig(cov)``. The score is the ratio of the smallest
    to the largest expected :math:`F` over the rows.

    Parameters
    ----------
    cov : array_like of shape (n_features, n_features), symmetric positive semi-definite
    product : {"dot", "elementwise"}
    """
    if product not in _PRODUCTS:
        raise ValueError(f"product must be one of {_PRODUCTS}; got {product!r}")
    S = check_array(cov, name="cov", min_samples=2, min_features=2, metric="rudman_partition_score_gaussian")
    if S.shape[0] != S.shape[1] or not np.allclose(S, S.T):
        raise ValueError(f"cov must be a symmetric square matrix; got shape {S.shape}")
    rows = _rows_of_eig(S)
    if product == "dot":
        logF = np.einsum("ij,jk,ik->i", rows, S, rows) / 2.0
    else:
        logF = logsumexp(rows**2 * np.diag(S)[None, :] / 2.0, axis=1)
    return float(np.exp(logF.min() - logF.max()))
