"""Input validation shared by every public function (checked once, at the edge)."""
from __future__ import annotations

import warnings

import numpy as np


class OrientationWarning(UserWarning):
    """Fewer samples than features: the input may be transposed, or estimates are deflated."""


def _to_numpy(X):
    if hasattr(X, "detach") and hasattr(X, "cpu"):  # torch tensor, without importing torch
        X = X.detach().cpu().numpy()
    return X


def check_array(X, *, name: str = "X", min_samples: int = 2, min_features: int = 1,
                dtype=np.float64, warn_fewer_samples: bool = False) -> np.ndarray:
    """Validate a point cloud of shape ``(n_samples, n_features)`` and return it as float64.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, has too few samples or features, or holds NaN or infinite values.

    Warns
    -----
    OrientationWarning
        If ``warn_fewer_samples`` and ``n_samples < n_features`` (a transposed input looks like this).
    """
    X = _to_numpy(X)
    try:
        X = np.asarray(X, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of shape (n_samples, n_features): {exc}") from None
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D with shape (n_samples, n_features); got shape {X.shape}")
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{name} needs at least {min_samples} samples (rows); got {n}")
    if d < min_features:
        raise ValueError(f"{name} needs at least {min_features} features (columns); got {d}")
    if not np.isfinite(X).all():
        bad = int((~np.isfinite(X)).sum())
        raise ValueError(f"{name} contains {bad} NaN or infinite values")
    if warn_fewer_samples and n < d:
        warnings.warn(
            f"{name} has fewer samples ({n}) than features ({d}). Rows must be samples: if {name} is "
            f"transposed, pass {name}.T. Otherwise the estimate is deflated (IsoScore of isotropic data "
            f"is about m/(n+m) = {n / (n + d):.3f} here).",
            OrientationWarning, stacklevel=3)
    return X
