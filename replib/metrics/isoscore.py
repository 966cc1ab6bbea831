"""IsoScore and effective dimensions (Rudman et al. 2022), in closed form.

IsoScore's algorithm (reorient by PCA, take the variance vector σ, normalise it to the
length of the all-ones vector, measure the defect δ, rescale) collapses to the participation
ratio of the covariance:

    σ̂ = √n σ/‖σ‖,   δ = ‖σ̂ − 1‖ / √(2(n − √n)),
    ι = ((n − δ²(n − √n))² − n) / (n(n − 1)) = (PR − 1)/(n − 1),   PR = tr(C)² / ‖C‖_F²,

because ‖σ̂‖² = n implies n − δ²(n − √n) = σ̂·1 = √n Σσ/‖σ‖. No eigendecomposition is needed.
The scatter matrix is accumulated in float64, or for float32 input in float32 blocks summed in float64
(see :func:`_trace_and_frobenius_sq`).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg.blas import dsyrk, ssyrk

from .._validation import OrientationWarning, check_array, max_abs, max_abs_scale

__all__ = [
    "isoscore",
    "effective_dimensions",
    "isoscore_star",
    "isoscore_from_covariance",
]


def _points(X, metric: str) -> np.ndarray:
    """Validated points: float32 data (a numpy array or a torch tensor) stay float32 (see
    :func:`_trace_and_frobenius_sq`), anything else becomes float64."""
    if hasattr(X, "detach") and str(getattr(X, "dtype", "")) == "torch.float32":
        X = X.detach().cpu().numpy()
    dtype = np.float32 if isinstance(X, np.ndarray) and X.dtype == np.float32 else np.float64
    return check_array(X, min_samples=2, min_features=2, dtype=dtype, warn_fewer_samples=True, metric=metric)


def _trace_and_frobenius_sq(X: np.ndarray, block_rows: int = 4096) -> tuple[float, float]:
    """tr(S) and ‖S‖_F² of the centred scatter matrix S = X_cᵀX_c, in the smaller Gram space.

    S is symmetric, so only its upper triangle is formed (BLAS ``syrk``: half the work of a matrix
    product) and ‖S‖_F² = 2 Σ_{i≤j} S_ij² − Σ_i S_ii². The ratio tr(S)²/‖S‖_F² is scale-invariant; the
    data are rescaled by their largest centred entry wherever a fourth power could leave the float range.

    float64 input: centred and accumulated in float64 (``dsyrk``).
    float32 input (embeddings usually are): the mean is taken in float64 and each block of
    ``block_rows`` rows is centred in float64, scaled into [-1, 1] and cast to float32; the block's
    scatter is accumulated in float32 (``ssyrk``, twice the speed of ``dsyrk``) and the blocks' scatters
    are summed in float64, so rounding grows with the block, not with the number of rows. The result
    differs from the float64 computation by about 1e-9 (tested below 1e-7 with a common mean 500 times
    the spread, and at scales 1e±30), less than the IsoScore package's own float32 computation differs.
    """
    m, n = X.shape
    if X.dtype == np.float32 and m > n:
        mu = X.mean(axis=0, dtype=np.float64)
        s = float(max(np.max(X.max(axis=0) - mu), np.max(mu - X.min(axis=0))))
        if not s > 0:
            return 0.0, 0.0
        S = np.zeros((n, n))
        for a in range(0, m, block_rows):
            B = X[a : a + block_rows] - mu  # float64
            B *= 1.0 / s
            # the block is C-ordered, so its transpose is the same memory in Fortran order: no copy
            S += ssyrk(1.0, B.astype(np.float32).T, trans=0)  # upper triangle; the lower one stays zero
    else:
        # float64, or fewer rows than columns (then in the m x m Gram space, at full precision)
        Xc = X.astype(np.float64)  # a fresh array: edited in place
        big = max_abs(Xc)
        if big > 1e100:  # the mean itself could overflow
            Xc /= big
        Xc -= Xc.mean(axis=0)
        s = max_abs(Xc)
        if s > 0 and not 1e-50 < s < 1e50:
            Xc /= s
        # Xc is C-ordered, so Xc.T is the same memory in Fortran order: no copy reaches BLAS.
        # trans=0 gives Xc.T @ Xc (n × n), trans=1 gives Xc @ Xc.T (m × m): the same non-zero spectrum.
        S = dsyrk(1.0, Xc.T, trans=0 if m >= n else 1)
    diag = np.diagonal(S)
    return float(diag.sum()), float(2.0 * np.sum(S * S) - np.dot(diag, diag))


def _participation_ratio(X: np.ndarray) -> float:
    tr, fro2 = _trace_and_frobenius_sq(X)
    if not tr > 0 or not fro2 > 0:
        raise ValueError("X has zero total variance: IsoScore is undefined for a point cloud without spread")
    return tr * tr / fro2


def isoscore(X) -> float:
    r"""IsoScore ι(X) of a point cloud :cite:`rudman2022isoscore`.

    .. math::

        ι(X) = \frac{PR(C) - 1}{n - 1}, \qquad PR(C) = \frac{tr(C)^2}{\|C\|_F^2},

    with :math:`C` the covariance of the rows of ``X`` and :math:`n` the number of features. This is
    algebraically identical to the published algorithm (PCA reorientation, normalised variance
    vector, isotropy defect δ, ι = ((n − δ²(n − √n))² − n)/(n(n − 1))) and agrees with the
    ``IsoScore`` 2.0.1 package to about 1e-8 (the package's own float32 constants).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        Points as rows. A torch tensor of any real dtype is accepted (detached, copied to CPU,
        converted to float64). float32 data (numpy or torch) are scored by the float32 scatter path,
        about 1e-9 from the float64 value (:func:`_trace_and_frobenius_sq`); see
        :func:`replib._validation.check_array` for what is refused.

    Returns
    -------
    float
        ι in [0, 1]: 0 when all variance lies on one axis, 1 when it is spread evenly over all
        n axes. Variance spread evenly over exactly k axes gives (k − 1)/(n − 1). Scale-invariant
        for any finite input (computed on ``X / max|X|``, so ``isoscore(X * 1e200) == isoscore(X)``
        to rounding).

    Raises
    ------
    ValueError
        Fewer than 2 samples or features, NaN/inf, complex, masked entries, or zero total variance.

    Warns
    -----
    OrientationWarning
        When n_samples < n_features: the input may be transposed, and even isotropic data then
        scores only about m/(n + m) (use :func:`isoscore_star`).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(10_000, 2)) @ np.diag([1.0, 0.0001])
    >>> round(isoscore(X), 6)
    0.0
    """
    X = _points(X, "isoscore")
    pr = _participation_ratio(X)
    n = X.shape[1]
    return float(np.clip((pr - 1.0) / (n - 1.0), 0.0, 1.0))


def effective_dimensions(X) -> float:
    r"""Number of dimensions uniformly used, :math:`k(X) = ι(X)(n-1) + 1` :cite:`rudman2022isoscore`.

    Equal to the participation ratio of the covariance. Hakim et al. :cite:`hakim2025protein`
    report integers that equal ``ceil(k)``; round explicitly where a table needs integers.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)

    Returns
    -------
    float
    """
    return _participation_ratio(_points(X, "effective_dimensions"))


def isoscore_from_covariance(C) -> float:
    r"""IsoScore of a covariance matrix, :math:`(tr(C)^2/\|C\|_F^2 - 1)/(n-1)`.

    Parameters
    ----------
    C : array_like of shape (n_features, n_features)
        Symmetric positive semi-definite.
    """
    C = check_array(C, name="C", min_samples=2, min_features=2, metric="isoscore_from_covariance")
    if C.shape[0] != C.shape[1]:
        raise ValueError(f"C must be square; got shape {C.shape}")
    if not np.allclose(C, C.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(C).max()))):
        raise ValueError("C must be symmetric")
    C, _ = max_abs_scale(C)  # the ratio is scale-invariant; keeps C*C inside float64
    tr = float(np.trace(C))
    fro2 = float(np.sum(C * C))
    if not tr > 0:
        raise ValueError("C has zero (or negative) trace: IsoScore is undefined")
    n = C.shape[0]
    return float(np.clip((tr * tr / fro2 - 1.0) / (n - 1.0), 0.0, 1.0))


def isoscore_star(X, C0, zeta: float) -> float:
    r"""IsoScore* with RDA shrinkage towards a prior covariance :cite:`rudman2024stable`.

    .. math:: ι^*(X) = ι\big((1-ζ)\, C_X + ζ\, C_0\big),

    with :math:`C_X` the sample covariance (ddof = 1, as the reference implementation uses
    ``torch.cov``). Shrinkage counters the deflation of IsoScore when n_samples < n_features;
    ζ = 1 returns the IsoScore of ``C0`` itself, so ζ must be justified.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    C0 : array_like of shape (n_features, n_features)
        Prior covariance, e.g. the covariance of a larger sample or the identity.
    zeta : float in [0, 1]
    """
    if not 0.0 <= float(zeta) <= 1.0:
        raise ValueError(f"zeta must lie in [0, 1]; got {zeta}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrientationWarning)  # shrinkage is the remedy for m < n
        X = check_array(X, min_samples=2, min_features=2, metric="isoscore_star")
    C0 = check_array(C0, name="C0", min_samples=2, min_features=2, metric="isoscore_star")
    n = X.shape[1]
    if C0.shape != (n, n):
        raise ValueError(f"C0 must have shape ({n}, {n}) to match X; got {C0.shape}")
    C = np.cov(X, rowvar=False, ddof=1)
    return isoscore_from_covariance((1.0 - zeta) * C + zeta * C0)
