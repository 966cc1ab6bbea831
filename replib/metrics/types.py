"""S_inter and S_intra :cite:`cai2021isotropy`: the average cosine between instances of different types and
of one type (exact, O(N·d)), and the type codes they group by.

Metrics of a point cloud with one type label per row (a token string, a token id, an amino acid); used by
the manifolds chapter (:mod:`replib.methods.manifolds` re-exports them), the training chapter
(:mod:`replib.training.measure`) and the isotropy card.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array
from .cosine import avg_pairwise_cosine, unit_rows

__all__ = ["type_codes", "type_frequencies", "s_inter", "s_intra"]


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
    return _s_inter(X, codes, seed)


def _s_inter(X: np.ndarray, codes: np.ndarray, seed: int) -> float:
    """:func:`s_inter` of rows already checked, grouped by integer ``codes`` (any integers: only their order
    matters), for callers that draw many times from the same rows (:func:`~replib.methods.manifolds.redrawn_drops`)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(codes))  # a random instance per type: first in a random order
    _, first = np.unique(codes[order], return_index=True)
    pick = order[first]
    if len(pick) < 2:
        return float("nan")
    return avg_pairwise_cosine(X[pick])


def _per_type_rows(codes: np.ndarray, max_per_type: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """The rows S_intra averages, grouped by type: at most ``max_per_type`` instances of each type, the first
    of a random order (``rng``); (rows, their codes), sorted by code."""
    order = rng.permutation(len(codes))
    c = codes[order]
    srt = np.argsort(c, kind="stable")
    c_sorted = c[srt]
    rows = order[srt]
    starts = np.flatnonzero(np.r_[True, c_sorted[1:] != c_sorted[:-1]])
    rank = np.arange(len(c_sorted)) - np.repeat(starts, np.diff(np.r_[starts, len(c_sorted)]))
    keep = rank < max_per_type  # the first max_per_type of a random order
    return rows[keep], c_sorted[keep]


def _per_type_cosines(U: np.ndarray, codes: np.ndarray, max_per_type: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Mean off-diagonal cosine per type (rows of U unit-norm), with at most ``max_per_type`` instances."""
    rows, c_sorted = _per_type_rows(codes, max_per_type, rng)
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
