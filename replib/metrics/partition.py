"""Partition-function isotropy I(W) of Mu & Viswanath (2018), as used by Rajaee & Pilehvar (2021)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from .._validation import check_array, max_abs_scale

__all__ = ["partition_isotropy", "PartitionIsotropy"]


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
    W = check_array(W, name="W", min_samples=2, min_features=2, warn_fewer_samples=True,
                    metric="partition_isotropy")
    if sign not in ("eigh", "both"):
        raise ValueError(f"sign must be 'eigh' or 'both'; got {sign!r}")
    Ws, _ = max_abs_scale(W)  # same eigenvectors; WᵀW stays inside float64 for any finite W
    _, U = np.linalg.eigh(Ws.T @ Ws)
    proj = W @ U  # (N, d): u_j^T w_i
    logF = logsumexp(proj, axis=0)
    if sign == "both":
        logF = np.concatenate([logF, logsumexp(-proj, axis=0)])
    log_i = float(logF.min() - logF.max())
    return PartitionIsotropy(value=float(np.exp(log_i)), log10=float(log_i / np.log(10.0)), log_partition=logF)
