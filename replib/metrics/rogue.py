"""Rogue dimensions: the few coordinates that dominate cosine similarity (Timkey & van Schijndel 2021)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._validation import check_array
from .cosine import unit_rows

__all__ = ["cosine_contributions", "rogue_dimensions", "RogueDimensions"]


def cosine_contributions(X) -> np.ndarray:
    r"""Contribution of every dimension to the average pairwise cosine :cite:`timkey2021rogue`.

    .. math::

        CC_i = \frac{2}{N(N-1)} \sum_{a<b} \hat x_{a,i}\,\hat x_{b,i}
             = \frac{(\sum_a \hat x_{a,i})^2 - \sum_a \hat x_{a,i}^2}{N(N-1)},
        \qquad \sum_i CC_i = \overline{\cos}(X),

    with :math:`\hat x_a = x_a/\lVert x_a\rVert`: the expected cosine of two distinct rows splits exactly
    into one term per dimension (Timkey & van Schijndel's Eq. 2, computed over every pair rather than a
    sample). Exact, O(N·d), no N×N matrix.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_features,)
    """
    X = check_array(X, min_samples=2, min_features=1, metric="cosine_contributions")
    U = unit_rows(X)
    n = U.shape[0]
    return (U.sum(axis=0) ** 2 - (U**2).sum(axis=0)) / (n * (n - 1.0))


class RogueDimensions(NamedTuple):
    """Result of :func:`rogue_dimensions`."""

    dims: np.ndarray  # indices of the top-k dimensions by contribution, largest first
    contributions: np.ndarray  # their CC_i
    share: float  # sum of their CC_i over the average cosine (sum of all CC_i)
    avg_cosine: float


def rogue_dimensions(X, k: int = 3) -> RogueDimensions:
    r"""The ``k`` dimensions with the largest contribution to the average cosine, and their share of it.

    Timkey & van Schijndel :cite:`timkey2021rogue` find that in GPT-2, BERT, RoBERTa and XLNet 1–3
    dimensions account for most of the average cosine of contextual token representations in many layers.
    ``share`` is :math:`\sum_{i\in top_k} CC_i / \sum_i CC_i`; it is undefined (NaN) when the average
    cosine is 0, and can exceed 1 when other dimensions contribute negatively.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    k : int
        Number of dimensions, 1 <= k <= n_features.
    """
    cc = cosine_contributions(X)
    if not 1 <= int(k) <= cc.size:
        raise ValueError(f"k must be in [1, {cc.size}]; got {k}")
    order = np.argsort(-cc, kind="stable")[: int(k)]
    total = float(cc.sum())
    share = float(cc[order].sum() / total) if total != 0 else float("nan")
    return RogueDimensions(order, cc[order], share, total)
