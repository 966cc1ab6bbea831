"""Average pairwise cosine similarity, exact over all pairs in O(N·d)."""
from __future__ import annotations

import numpy as np

from .._validation import check_array

__all__ = ["avg_pairwise_cosine", "unit_rows"]


def unit_rows(X: np.ndarray, *, name: str = "X") -> np.ndarray:
    """Rows of ``X`` scaled to unit Euclidean norm; a zero row is an error (its cosine is undefined)."""
    norms = np.linalg.norm(X, axis=1)
    if (norms == 0).any():
        raise ValueError(f"{name} has {int((norms == 0).sum())} all-zero rows: cosine similarity is undefined")
    return X / norms[:, None]


def avg_pairwise_cosine(X) -> float:
    r"""Mean cosine similarity over all unordered pairs of distinct rows.

    .. math::

        \overline{\cos}(X) = \frac{2}{N(N-1)} \sum_{i<j} \hat x_i \cdot \hat x_j
                           = \frac{\|\sum_i \hat x_i\|^2 - N}{N(N-1)},
        \qquad \hat x_i = x_i / \|x_i\|,

    exact, in O(N·d) time and O(d) extra memory (no N×N matrix). This is the statistic of
    Ethayarajh (2019) and Cai et al. :cite:`cai2021isotropy` computed over *every* pair rather than a
    random sample of pairs; Rudman et al. :cite:`rudman2022isoscore` report it as 1 − |mean cos|.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)

    Returns
    -------
    float in [-1/(N-1), 1]

    Raises
    ------
    ValueError
        Fewer than 2 samples, NaN/inf, or an all-zero row.
    """
    X = check_array(X, min_samples=2, min_features=1)
    U = unit_rows(X)
    n = U.shape[0]
    s = U.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1.0)))
