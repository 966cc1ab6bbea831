"""Input validation shared by every public function (checked once, at the edge).

:func:`check_array` is the one validator of point clouds ``(n_samples, n_features)`` used by every metric.
What it accepts and refuses (the same everywhere):

- numpy arrays and anything ``np.asarray`` turns into a real numeric array (lists, pandas frames);
- torch tensors of any real dtype, ``bfloat16``/``float16`` included (detached, moved to the CPU and converted
  to float64 through torch, because numpy has no bfloat16);
- **masked arrays are refused** when any entry is masked (a metric cannot honour a mask, and silently using the
  hidden values would be wrong): drop the rows first, ``X[~np.ma.getmaskarray(X).any(axis=1)]``. A masked array
  without masked entries is used as its data;
- complex input, strings, objects, NaN and ±inf are refused with a ``ValueError`` that names the metric;
- fewer samples or features than the metric needs are refused;
- ``n_samples < n_features`` warns (:class:`OrientationWarning`) where the metric estimates a covariance or a
  spectrum (a transposed input looks like this, and such estimates are deflated).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = ["OrientationWarning", "check_array", "finite_number", "max_abs_scale"]


class OrientationWarning(UserWarning):
    """Fewer samples than features: the input may be transposed, or estimates are deflated."""


def finite_number(v) -> bool:
    """Whether ``v`` is a finite real number (an int or a float, never a bool): a value a check can compare."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _to_numpy(X, who: str):
    """A torch tensor as a float64 numpy array (any real dtype, bfloat16 included); anything else unchanged.

    Duck-typed (``detach``/``cpu``/``double``): torch is never imported here, so the metrics run without it.
    ``double()`` converts in torch, as numpy has no bfloat16.
    """
    if hasattr(X, "detach") and hasattr(X, "cpu") and hasattr(X, "dtype"):  # a torch tensor
        T = X.detach().cpu()
        if getattr(T, "is_complex", lambda: False)():
            raise ValueError(f"{who} is a complex tensor ({T.dtype}); the metrics need real numbers")
        try:
            return T.double().numpy()
        except (TypeError, RuntimeError, AttributeError) as exc:
            raise ValueError(f"{who}: cannot convert tensor of dtype {T.dtype} to float64: {exc}") from None
    return X


def check_array(
    X,
    *,
    name: str = "X",
    min_samples: int = 2,
    min_features: int = 1,
    dtype=np.float64,
    warn_fewer_samples: bool = False,
    metric: str | None = None,
) -> np.ndarray:
    """Validate a point cloud of shape ``(n_samples, n_features)`` and return it as a float64 numpy array.

    Parameters
    ----------
    X : array_like or torch.Tensor
    name : str
        Name of the argument in messages.
    min_samples, min_features : int
        The least number of rows and columns the metric needs.
    dtype : numpy dtype
        Result dtype (float64).
    warn_fewer_samples : bool
        Warn when ``n_samples < n_features`` (covariance- and spectrum-based metrics).
    metric : str, optional
        Name of the calling metric, put at the start of every message.

    Raises
    ------
    ValueError
        Not 2-D, too few samples or features, complex, non-numeric, masked entries, NaN or infinite values.

    Warns
    -----
    OrientationWarning
        If ``warn_fewer_samples`` and ``n_samples < n_features``.
    """
    who = f"{metric}: {name}" if metric else name
    X = _to_numpy(X, who)
    if np.ma.isMaskedArray(X):
        mask = np.ma.getmaskarray(X)
        if mask.any():
            raise ValueError(
                f"{who} is a masked array with {int(mask.sum())} masked entries; metrics do not honour masks. "
                f"Drop the masked rows first: {name}[~np.ma.getmaskarray({name}).any(axis=1)]"
            )
        X = np.ma.getdata(X)
    if np.iscomplexobj(X):
        raise ValueError(f"{who} is complex; the metrics need real numbers (pass .real or np.abs explicitly)")
    try:
        X = np.asarray(X, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{who} must be a real numeric array of shape (n_samples, n_features): {exc}") from None
    if X.ndim != 2:
        raise ValueError(f"{who} must be 2-D with shape (n_samples, n_features); got shape {X.shape}")
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{who} needs at least {min_samples} samples (rows); got {n}")
    if d < min_features:
        raise ValueError(f"{who} needs at least {min_features} features (columns); got {d}")
    # a finite sum means every entry is finite (NaN and inf propagate); only otherwise (or on overflow of the
    # sum) look at every entry, which costs a boolean array of X's shape
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(X)
    if not np.isfinite(total) and not (finite := np.isfinite(X)).all():
        bad = ~finite
        rows = np.flatnonzero(bad.any(axis=1))
        raise ValueError(f"{who} contains {int(bad.sum())} NaN or infinite values (first in row {int(rows[0])})")
    if warn_fewer_samples and n < d:
        warnings.warn(
            f"{who} has fewer samples ({n}) than features ({d}). Rows must be samples: if {name} is "
            f"transposed, pass {name}.T. Otherwise the estimate is deflated (IsoScore of isotropic data "
            f"is about m/(n+m) = {n / (n + d):.3f} here).",
            OrientationWarning,
            stacklevel=3,
        )
    return X


def max_abs(X: np.ndarray) -> float:
    """``max|X|`` of a non-empty array, from its extremes (no ``|X|`` temporary); NaN if X holds a NaN."""
    return float(max(X.max(), -X.min()))


def max_abs_scale(X: np.ndarray) -> tuple[np.ndarray, float]:
    """``X / max|X|`` and ``max|X|`` (1.0 for an all-zero ``X``).

    Scale-invariant quantities are computed on the rescaled array so that squares and products neither
    overflow (``|x| > 1e154``) nor underflow (``|x| < 1e-154``) in float64.
    """
    s = max_abs(X) if X.size else 0.0
    if s == 0.0 or not np.isfinite(s):
        return X, 1.0
    return X / s, s
