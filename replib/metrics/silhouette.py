"""Exact silhouette score in torch: chunked pairwise distances, GPU when present.

The silhouette of a labelled point cloud :cite:`rousseeuw1987silhouettes` needs, for every point, the
mean Euclidean distance to every cluster. That is an all-pairs computation, O(N² d); the N × N distance
matrix is never held here: rows are processed in chunks of ``chunk_size``, and each chunk's distances are
reduced at once to per-cluster sums by a product with the one-hot label matrix (``D_chunk @ Y``).
"""

from __future__ import annotations

import numpy as np

from .._optional import optional_import, require
from .._validation import check_array

_torch = optional_import("torch")  # this metric is computed in torch; the rest of replib.metrics needs none

__all__ = ["silhouette_score", "silhouette_samples", "cluster_distance_sums"]


def _labels(labels, n: int) -> tuple[np.ndarray, int]:
    lab = labels.detach().cpu().numpy() if hasattr(labels, "detach") else np.asarray(labels)
    if lab.ndim == 2:  # multi-label: each distinct label vector is one cluster
        _, lab = np.unique(lab, axis=0, return_inverse=True)
    if lab.ndim != 1 or lab.shape[0] != n:
        raise ValueError(f"labels must be 1-D with one entry per sample ({n}); got shape {lab.shape}")
    _, codes = np.unique(lab, return_inverse=True)
    k = int(codes.max()) + 1 if codes.size else 0
    if not 2 <= k <= n - 1:
        raise ValueError(f"silhouette needs 2 <= n_labels <= n_samples - 1; got {k} labels for {n} samples")
    return codes.reshape(-1).astype(np.int64), k


def cluster_distance_sums(X, labels, *, device=None, chunk_size: int | None = None, dtype=None):
    r"""Per-point sums of Euclidean distances to every cluster, :math:`S_{ic} = \sum_{j: \ell(j)=c} \lVert x_i - x_j\rVert`.

    Parameters
    ----------
    X : array_like or torch.Tensor of shape (n_samples, n_features)
    labels : array_like of shape (n_samples,) or (n_samples, n_labels)
        Cluster ids; a 2-D (multi-hot) array makes each distinct row a cluster.
    device : str or torch.device, optional
        Default ``"cuda"`` when available, else ``"cpu"``.
    chunk_size : int, optional
        Rows per chunk: memory is O(chunk_size × n_samples) on a GPU and O(chunk_size²) on the CPU,
        which visits the symmetric distance matrix in square blocks. Default 2,048 on a GPU and 512 on the CPU,
        whose blocks then stay in its caches (one thread, float32: 10,662 × 384 in 0.54 s against 0.67 s with
        2,048, 11,462 × 50 in 0.24 s against 0.41 s).
    dtype : torch.dtype, optional
        Default float64 (exact agreement with scikit-learn, which upcasts); float32 is about twice as
        fast on CPU and agrees to about 1e-6.

    Returns
    -------
    S : numpy.ndarray of shape (n_samples, n_clusters), float64
    codes : numpy.ndarray of shape (n_samples,)
        Cluster index of each point (0 .. n_clusters - 1).
    """
    torch = require(_torch, "torch", "the exact silhouette score (replib.metrics.silhouette)")
    dev = torch.device(device if device is not None else "cuda" if torch.cuda.is_available() else "cpu")
    chunk_size = (512 if dev.type == "cpu" else 2048) if chunk_size is None else chunk_size
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1; got {chunk_size}")
    if isinstance(X, torch.Tensor):  # stays on its device; same rules as check_array
        if X.ndim != 2:
            raise ValueError(
                f"silhouette: X must be 2-D with shape (n_samples, n_features); got shape {tuple(X.shape)}"
            )
        if X.is_complex():
            raise ValueError(f"silhouette: X is a complex tensor ({X.dtype}); real numbers are needed")
        if X.shape[0] < 2:
            raise ValueError(f"silhouette: X needs at least 2 samples (rows); got {X.shape[0]}")
        Xt = X.detach()
        if Xt.is_floating_point() and not torch.isfinite(Xt).all():
            raise ValueError("silhouette: X contains NaN or infinite values")
    else:
        Xt = torch.from_numpy(check_array(X, min_samples=2, metric="silhouette"))
    n = Xt.shape[0]
    codes, k = _labels(labels, n)
    dtype = dtype or torch.float64
    if dev.type == "cpu":  # numpy's BLAS: faster than torch's CPU matmul here, same algebra
        return _distance_sums_numpy(
            Xt.cpu().to(torch.float64).numpy(),
            codes,
            k,
            chunk_size,
            np.float32 if dtype == torch.float32 else np.float64,
        ), codes
    Xt = Xt.to(device=dev, dtype=dtype)
    scale = (float(Xt.abs().max()) if Xt.numel() else 0.0) or 1.0  # distances of X/scale, times scale: no overflow
    Xt = Xt / scale
    Y = torch.zeros((n, k), dtype=dtype, device=dev)
    Y[torch.arange(n, device=dev), torch.from_numpy(codes).to(dev)] = 1.0
    sq = (Xt * Xt).sum(1)
    out = torch.empty((n, k), dtype=torch.float64, device=dev)
    for a in range(0, n, chunk_size):
        b = min(a + chunk_size, n)
        # ‖x‖² + ‖y‖² − 2 x·y (one fused matmul-add, no full-size temporaries), clamped at 0 (rounding),
        # the diagonal set to exactly 0
        d2 = torch.addmm(sq[None, :].expand(b - a, n), Xt[a:b], Xt.T, alpha=-2.0)
        d2.add_(sq[a:b, None]).clamp_(min=0.0)
        idx = torch.arange(a, b, device=dev)
        d2[idx - a, idx] = 0.0
        out[a:b] = (d2.sqrt_() @ Y).to(torch.float64)
    return out.cpu().numpy() * scale, codes


def _distance_sums_numpy(X: np.ndarray, codes: np.ndarray, k: int, chunk_size: int, dtype) -> np.ndarray:
    """CPU path of :func:`cluster_distance_sums` (the same expansion, in place, with numpy).

    The distance matrix is symmetric, so it is visited in square blocks of ``chunk_size`` rows and columns,
    upper triangle only: block (i, j), j > i, adds its row sums per cluster to the rows of i (``D @ Y_j``)
    and its column sums to the rows of j (``Dᵀ @ Y_i``). Half the products and square roots of the full
    matrix; memory O(chunk_size²).
    """
    X = np.asarray(X, dtype=dtype)
    scale = (float(np.abs(X).max()) if X.size else 0.0) or 1.0  # distances of X/scale, times scale: no overflow
    X = X / dtype(scale)
    n = len(X)
    Y = np.zeros((n, k), dtype=dtype)
    Y[np.arange(n), codes] = 1.0
    sq = np.einsum("ij,ij->i", X, X)
    out = np.zeros((n, k), dtype=np.float64)
    for a in range(0, n, chunk_size):
        b = min(a + chunk_size, n)
        for c in range(a, n, chunk_size):
            e = min(c + chunk_size, n)
            d2 = X[a:b] @ X[c:e].T
            d2 *= -2.0
            d2 += sq[None, c:e]
            d2 += sq[a:b, None]
            np.maximum(d2, 0.0, out=d2)
            if c == a:
                d2[np.arange(b - a), np.arange(b - a)] = 0.0
            np.sqrt(d2, out=d2)
            out[a:b] += d2 @ Y[c:e]
            if c != a:
                out[c:e] += d2.T @ Y[a:b]
    return out * scale


def silhouette_samples(X, labels, *, device=None, chunk_size: int | None = None, dtype=None) -> np.ndarray:
    r"""Silhouette of every point :cite:`rousseeuw1987silhouettes`.

    .. math::

        a(i) = \frac{1}{|C_i| - 1}\sum_{j \in C_i, j \ne i} \lVert x_i - x_j\rVert, \quad
        b(i) = \min_{c \ne \ell(i)} \frac{1}{|C_c|}\sum_{j \in C_c} \lVert x_i - x_j\rVert, \quad
        s(i) = \frac{b(i) - a(i)}{\max\{a(i), b(i)\}},

    with :math:`s(i) = 0` for a point alone in its cluster (scikit-learn's convention).

    Parameters
    ----------
    See :func:`cluster_distance_sums`.

    Returns
    -------
    numpy.ndarray of shape (n_samples,), float64
    """
    S, codes = cluster_distance_sums(X, labels, device=device, chunk_size=chunk_size, dtype=dtype)
    n, k = S.shape
    sizes = np.bincount(codes, minlength=k).astype(np.float64)
    rows = np.arange(n)
    own = sizes[codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = S[rows, codes] / (own - 1.0)
        M = S / sizes[None, :]
        M[rows, codes] = np.inf
        b = M.min(axis=1)
        s = (b - a) / np.maximum(a, b)
    s[own <= 1] = 0.0
    return np.nan_to_num(s, nan=0.0)


def silhouette_score(X, labels, *, device=None, chunk_size: int | None = None, dtype=None) -> float:
    r"""Mean silhouette over all points, exact (no sampling) :cite:`rousseeuw1987silhouettes`.

    Agrees with :func:`sklearn.metrics.silhouette_score` (Euclidean metric) to rounding, without holding
    the N × N distance matrix: memory is O(``chunk_size`` × N).

    Parameters
    ----------
    X : array_like or torch.Tensor of shape (n_samples, n_features)
    labels : array_like of shape (n_samples,) or (n_samples, n_labels)
        Cluster ids; for multi-label data pass the multi-hot matrix: every distinct label vector is a
        cluster (as in Mickus et al. :cite:`mickus2024isotropy`).
    device : str or torch.device, optional
        Default ``"cuda"`` when available, else ``"cpu"``.
    chunk_size : int, optional
        Rows of the distance matrix computed at once (default: see :func:`cluster_distance_sums`).
    dtype : torch.dtype, optional
        Default float64.

    Returns
    -------
    float
        In [-1, 1]; higher means better separated clusters.

    Raises
    ------
    ValueError
        Not 2-D, NaN/inf, labels of the wrong length, or fewer than 2 / more than N - 1 clusters.
    """
    return float(np.mean(silhouette_samples(X, labels, device=device, chunk_size=chunk_size, dtype=dtype)))
