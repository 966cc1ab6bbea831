"""Synthetic point clouds with known geometry, for the IsoScore property tests (Rudman et al. 2022)."""

from __future__ import annotations

import numpy as np
from scipy.stats import special_ortho_group

__all__ = [
    "rotation_2d",
    "rotated_gaussian_2d",
    "pca_orient",
    "even_k_of_n",
    "skewered_meatball",
    "isotropic_gaussian",
    "random_rotation",
]


def rotation_2d(degrees: float) -> np.ndarray:
    t = np.deg2rad(degrees)
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


def rotated_gaussian_2d(
    degrees: float, cov=((1.0, 0.8), (0.8, 1.0)), n: int = 10_000, seed: int = 0, mean=(0.0, 0.0)
) -> np.ndarray:
    """n points of N(mean, cov), then rotated about the origin by ``degrees``: shape (n, 2)."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.asarray(mean, float), np.asarray(cov, float), size=n)
    return X @ rotation_2d(degrees).T


def pca_orient(X: np.ndarray) -> np.ndarray:
    """Coordinates of X in its principal axes (the orientation IsoScore uses internally)."""
    Xc = X - X.mean(0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    return X @ Vt.T


def random_rotation(n: int, seed: int = 0) -> np.ndarray:
    return special_ortho_group.rvs(n, random_state=seed) if n > 1 else np.ones((1, 1))


def even_k_of_n(k: int, n: int, seed: int | None = 0) -> np.ndarray:
    """2k points ±e_i (i < k) in R^n, randomly rotated: variance exactly even over k of n axes.

    IsoScore of this cloud is exactly (k − 1)/(n − 1). The 2k points are repeated until there are
    more points than dimensions (repetition leaves the covariance's shape unchanged).
    """
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n; got k={k}, n={n}")
    E = np.zeros((2 * k, n))
    E[np.arange(k), np.arange(k)] = 1.0
    E[k + np.arange(k), np.arange(k)] = -1.0
    E = np.tile(E, (n // (2 * k) + 1, 1))
    return E if seed is None else E @ random_rotation(n, seed).T


def isotropic_gaussian(m: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(m, n))


def skewered_meatball(
    fraction_on_skewer: float, n_points: int = 4000, dim: int = 3, length: float = 10.0, seed: int = 0
) -> np.ndarray:
    """A 'skewered meatball': an isotropic Gaussian ball with a share of its points moved onto a line.

    ``fraction_on_skewer`` of the ``n_points`` lie uniformly on the segment [-length, length]·e_1, the
    rest form a standard Gaussian ball in ``dim`` dimensions.
    """
    if not 0.0 <= fraction_on_skewer <= 1.0:
        raise ValueError("fraction_on_skewer must lie in [0, 1]")
    rng = np.random.default_rng(seed)
    n_line = int(round(fraction_on_skewer * n_points))
    ball = rng.normal(size=(n_points - n_line, dim))
    line = np.zeros((n_line, dim))
    line[:, 0] = rng.uniform(-length, length, size=n_line)
    return np.vstack([ball, line])
