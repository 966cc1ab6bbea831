"""Local intrinsic dimension (LID) by the maximum-likelihood estimator on k nearest neighbours.

Two variants share one neighbour search:

``"levina_bickel"``
    The estimator of Levina & Bickel :cite:`levina2004maximum` on plain distances
    :math:`R_1 \\le \\dots \\le R_k` to the k nearest neighbours (self excluded),

    .. math:: \\hat m(x) = \\Big[\\frac{1}{k-1}\\sum_{j=1}^{k-1} \\log\\frac{R_k(x)}{R_j(x)}\\Big]^{-1},

    identical to ``skdim.id.MLE().fit(X, n_neighbors=k).dimension_pw_`` :cite:`bac2021skdim`.

``"cai"``
    The formula of Cai et al.'s code :cite:`cai2021isotropy` (``analysis.py``): FAISS returns
    *squared* L2 distances (``IndexFlatL2``) or ``1 - cos`` (``IndexFlatIP`` on unit vectors, itself
    half a squared chord), and the mean runs over all k columns including :math:`\\log 1 = 0`,

    .. math:: \\hat m_{\\mathrm{Cai}}(x) = -\\Big[\\frac1k\\sum_{i=1}^{k}\\log\\frac{d_i(x)}{d_k(x)}\\Big]^{-1},
              \\quad d_i = R_i^2 \\;(\\text{or } 1-\\cos = R_i^2/2),

    so that :math:`\\hat m_{\\mathrm{Cai}} = \\frac{k}{2(k-1)}\\,\\hat m_{\\mathrm{LB}}` exactly
    (0.505 for k = 100). Zero distances are clamped to 1e-8, an infinite estimate becomes the ambient
    dimension and NaNs are dropped, as in the authors' code.

For ``metric="cosine"`` the neighbours are those of the unit-normalised rows; the Levina–Bickel
variant then uses the chord distance :math:`\\lVert\\hat x - \\hat y\\rVert = \\sqrt{2(1-\\cos)}`.

Scale
    Both estimates depend on distance ratios only, and so does the computation: ``X`` is first multiplied
    by the power of two that brings its largest absolute entry into [0.5, 1) (:func:`power_of_two_scale`).
    That product is exact in floating point, so values at ordinary scales are unchanged bit for bit, while
    at extreme scales (1e-30, 1e+30) no squared distance underflows or overflows, in float64 nor in the
    float32 candidate search of the FAISS and torch backends. The one quantity that is not scale-free is
    the authors' clamp of zero distances (``"cai"`` with duplicates kept): it stays 1e-8 in the units of
    ``X``, as in their code. A cloud whose points are all one point has no dimension: a ``ValueError``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from sklearn.neighbors import NearestNeighbors

from .._optional import import_at_use, optional_import, require
from .._validation import check_array, max_abs
from .cosine import unit_rows

faiss = optional_import("faiss")

__all__ = [
    "lid_mle",
    "lid_mle_variants",
    "LIDResult",
    "cai_over_levina_bickel",
    "CAI_ZERO_CLAMP",
    "GPU_SEARCH_MIN_PAIRS",
]

#: the authors' clamp for non-positive distances (``analysis.py``)
CAI_ZERO_CLAMP = 1e-8
_VARIANTS = ("cai", "levina_bickel")
_METRICS = ("euclidean", "cosine")
_DUPLICATES = ("keep", "drop")
_BACKENDS = ("auto", "sklearn", "torch", "faiss")
#: ``backend="auto"`` searches with torch on the GPU when there is one and the search compares more than this
#: many (index row, query) pairs. The training chapter's paper profile measures 10,000 tokens a layer, 10^8
#: pairs: 3.7 s of one CPU thread here (faiss, 512 features), so its 182 layer measures spent minutes on the
#: CPU of a GPU machine; at 10^7 pairs the search is about 0.4 s of a CPU thread
GPU_SEARCH_MIN_PAIRS = 10**7


def cai_over_levina_bickel(k: int) -> float:
    """The exact ratio :math:`k/(2(k-1))` of Cai's LID to the Levina–Bickel LID (0.50505 at k = 100)."""
    k = int(k)
    if k < 2:
        raise ValueError("k must be >= 2")
    return k / (2.0 * (k - 1.0))


@dataclass
class LIDResult:
    """Pointwise LID estimates and their summary.

    Attributes
    ----------
    pointwise : ndarray (n_queries,)
        One estimate per query point (NaN where undefined; see ``n_nonfinite``).
    query_index : ndarray (n_queries,) int
        Row of each query in the input ``X``.
    mean, median, std : float
        Arithmetic mean (the authors' "avg LID"), median and standard deviation over finite values.
    harmonic_mean : float
        MacKay–Ghahramani's combination (skdim's default ``dimension_``), over finite positive values.
    k, metric, variant : the settings
    n_points : int
        Rows of ``X``; ``n_index`` rows in the neighbour index after duplicate handling.
    n_duplicates : int
        Rows of ``X`` that exactly repeat an earlier row (after unit-normalisation for cosine).
    n_zero_distance : int
        Queries with at least one zero neighbour distance (self excluded): LID 0 (Levina–Bickel) or
        nearly 0 (Cai's clamp) for them.
    n_nonfinite : int
        Queries whose raw estimate was inf or NaN (Cai: inf set to the ambient dimension, NaN dropped).
    """

    pointwise: np.ndarray
    query_index: np.ndarray
    mean: float
    median: float
    std: float
    harmonic_mean: float
    k: int
    metric: str
    variant: str
    n_points: int
    n_index: int
    n_duplicates: int
    n_zero_distance: int
    n_nonfinite: int
    info: dict = field(default_factory=dict)


def _unique_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First occurrence index of each distinct row, and for every row the index of its first copy.

    Rows of 8-byte numbers are grouped by a 64-bit hash of their bytes (one pass), and every row grouped
    under another is compared byte for byte with it. Should two different rows share a hash, that check
    fails and the exact sort of the rows' bytes is used instead (as for other dtypes): 40 times slower on
    80k x 384 rows, and always right.
    """
    A = np.ascontiguousarray(X)
    if A.shape[0] and A.shape[1] and A.dtype.itemsize == 8:
        words = A.view(np.uint64)
        mult = np.random.default_rng(0x5EED).integers(1, 2**63, size=A.shape[1], dtype=np.uint64) | np.uint64(1)
        h = np.einsum("ij,j->i", words, mult)  # sum of word * multiplier, modulo 2**64
        _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        first_of = first[inverse.ravel()]
        copies = np.flatnonzero(first_of != np.arange(len(A)))  # rows grouped under another row
        if np.array_equal(words[copies], words[first_of[copies]]):  # each is that row's exact copy
            return first, first_of
    view = A.view(np.dtype((np.void, A.dtype.itemsize * A.shape[1]))).ravel()
    _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
    return first, first[inverse.ravel()]


def _refine(
    index: np.ndarray,
    queries: np.ndarray,
    cand: np.ndarray,
    n_neighbors: int,
    block: int = 32,
    n_jobs: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact float64 distances to float32-selected candidates, re-sorted; the ``n_neighbors`` nearest.

    Each distance is the norm of the difference (no dot-product expansion, so no cancellation). The work
    is gathering candidate rows (memory-bound): small blocks stay in cache, and blocks run on ``n_jobs``
    threads (numpy releases the GIL; default: every core). Each block writes its own rows of the result,
    so the result does not depend on the number of threads.
    """
    dist = np.empty(cand.shape)

    def rows(s: int) -> None:
        diff = np.take(index, cand[s : s + block], axis=0)
        diff -= queries[s : s + block, None, :]
        np.sqrt(np.einsum("ijk,ijk->ij", diff, diff), out=dist[s : s + block])

    starts = range(0, len(queries), block)
    workers = int(n_jobs) if n_jobs is not None and n_jobs > 0 else (os.cpu_count() or 1)
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(min(workers, len(starts))) as pool:
            list(pool.map(rows, starts))
    else:
        for s in starts:
            rows(s)
    order = np.argsort(dist, axis=1, kind="stable")[:, :n_neighbors]
    return np.take_along_axis(dist, order, 1), np.take_along_axis(cand, order, 1)


def _knn_torch(
    index: np.ndarray, queries: np.ndarray, n_neighbors: int, device: str | None, block: int = 1024, margin: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """Exact brute-force neighbours with torch (GPU when there is one), for paper-scale indexes.

    Candidates are selected in float32 (``n_neighbors + margin`` per query, like FAISS' flat index),
    then their distances are recomputed in float64 and re-sorted, so the returned distances are exact
    and the order can only differ from a float64 search among near-ties beyond the margin.
    """
    torch = import_at_use("torch", "LID's torch backend")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    m = min(len(index), n_neighbors + margin)
    I = torch.as_tensor(index, dtype=torch.float32, device=device)
    n2 = (I * I).sum(1)
    cand = np.empty((len(queries), m), dtype=np.int64)
    for s in range(0, len(queries), block):
        Q = torch.as_tensor(queries[s : s + block], dtype=torch.float32, device=device)
        d2 = (Q * Q).sum(1, keepdim=True) - 2.0 * (Q @ I.T) + n2
        cand[s : s + block] = torch.topk(d2, m, dim=1, largest=False).indices.cpu().numpy()
    return _refine(index, queries, cand, n_neighbors)


def _knn_faiss(
    index: np.ndarray, queries: np.ndarray, n_neighbors: int, margin: int = 16, n_jobs: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact neighbours with a FAISS flat (brute-force) L2 index, the search engine of Cai et al.'s code.

    Candidates from FAISS' float32 search (``n_neighbors + margin``; on a GPU index when FAISS has one),
    distances recomputed in float64 and re-sorted (:func:`_refine`): the same distances as a float64
    search, the order differing at most among near-ties beyond the margin.
    """
    faiss_ = require(faiss, "faiss", "LID's FAISS backend", pip="faiss-cpu")
    m = min(len(index), n_neighbors + margin)
    # FAISS' thread count is the process's OpenMP setting, shared with torch (one libgomp): set it for this
    # search only and restore it, or every later torch op in the process runs on n_jobs threads (a training
    # run then no longer resumes bit for bit in another process).
    before = faiss_.omp_get_max_threads()
    if n_jobs is not None and n_jobs > 0:
        faiss_.omp_set_num_threads(int(n_jobs))
    try:
        xb = np.ascontiguousarray(index, dtype=np.float32)
        flat = faiss_.IndexFlatL2(xb.shape[1])
        if hasattr(faiss_, "StandardGpuResources") and faiss_.get_num_gpus() > 0:  # pragma: no cover - GPU only
            flat = faiss_.index_cpu_to_gpu(faiss_.StandardGpuResources(), 0, flat)
        flat.add(xb)
        _, cand = flat.search(np.ascontiguousarray(queries, dtype=np.float32), m)
    finally:
        faiss_.omp_set_num_threads(before)
    return _refine(index, queries, cand.astype(np.int64), n_neighbors, n_jobs=n_jobs)


def _knn_distances(
    index: np.ndarray,
    queries: np.ndarray,
    self_rows: np.ndarray,
    k: int,
    n_jobs: int | None,
    copy_of: np.ndarray | None = None,
    backend: str = "sklearn",
    device: str | None = None,
) -> np.ndarray:
    """Euclidean distances from each query to its k nearest rows of ``index``, the query itself excluded.

    ``self_rows[i]`` is the row of ``index`` that *is* query i; it is removed by identity (not by
    position), so an exact duplicate of the query stays in the neighbour list as a zero distance;
    ``copy_of[j]`` (first copy of index row j) makes the distance between exact copies exactly 0.
    """
    if backend == "auto":  # torch only for large searches (and only then imported)
        large = len(index) * len(queries) > GPU_SEARCH_MIN_PAIRS
        torch = optional_import("torch") if large else None  # imported here, at use (never with the metrics)
        backend = "torch" if torch is not None and torch.cuda.is_available() else "faiss" if faiss else "sklearn"
    if backend == "torch":
        dist, idx = _knn_torch(index, queries, k + 1, device)
    elif backend == "faiss":
        dist, idx = _knn_faiss(index, queries, k + 1, n_jobs=n_jobs)
    else:
        nn = NearestNeighbors(n_neighbors=k + 1, algorithm="brute", metric="euclidean", n_jobs=n_jobs).fit(index)
        dist, idx = nn.kneighbors(queries, n_neighbors=k + 1)
    mask = idx != np.asarray(self_rows)[:, None]
    no_self = mask.all(axis=1)  # self beyond the k+1 found (more than k exact copies): drop the last
    mask[no_self, -1] = False
    dist, idx = dist[mask].reshape(len(queries), k), idx[mask].reshape(len(queries), k)
    if copy_of is not None:  # exact duplicates: distance exactly 0 (the dot-product expansion
        same = copy_of[idx] == copy_of[np.asarray(self_rows)][:, None]  # leaves ~1e-8 round-off)
        dist = np.sort(np.where(same, 0.0, dist), axis=1)
    return dist


def lid_mle(
    X,
    k: int = 100,
    metric: str = "euclidean",
    variant: str = "cai",
    n_queries: int | None = None,
    seed: int = 0,
    *,
    duplicates: str = "keep",
    n_jobs: int | None = None,
    backend: str = "auto",
    device: str | None = None,
) -> LIDResult:
    r"""Pointwise maximum-likelihood local intrinsic dimension on k nearest neighbours.

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
        The point cloud; every row is in the neighbour index.
    k : int
        Neighbours per point, self excluded (the authors use 100).
    metric : {"euclidean", "cosine"}
        Cosine: neighbours of the unit-normalised rows (distance ``1 - cos`` for ``"cai"``, chord
        distance for ``"levina_bickel"``).
    variant : {"cai", "levina_bickel"}
        See the module docstring; ``cai = k/(2(k-1)) * levina_bickel`` exactly.
    n_queries : int, optional
        Estimate at a uniform random subset of this many rows (without replacement, seeded) instead of
        at every row; neighbours are always searched in all of ``X``.
    seed : int
        Seed of the query subsample.
    duplicates : {"keep", "drop"}
        ``"keep"`` (faithful to the authors): exact duplicate rows stay, give zero distances and an LID
        of (nearly) 0 at those points. ``"drop"``: keep only the first copy of each distinct row before
        indexing and querying. Either way the count is reported in ``n_duplicates``.
    n_jobs : int, optional
        Passed to scikit-learn's neighbour search.
    backend : {"auto", "sklearn", "faiss", "torch"}
        Exact brute-force search by scikit-learn, by a FAISS flat index, or by torch (FAISS and torch:
        float32 candidate selection, float64 distances; on the GPU when there is one). ``"auto"``: torch
        on CUDA for large searches (n_index · n_queries > 1e9), else FAISS when installed, else
        scikit-learn. All return the same distances to float round-off.
    device : str, optional
        Torch device for ``backend="torch"``.

    Returns
    -------
    LIDResult

    Raises
    ------
    ValueError
        Unknown metric/variant/duplicates, ``k`` < 2, fewer than ``k + 1`` (distinct) points, or a cloud
        whose points are all one point (every distance 0: no dimension to estimate).

    Notes
    -----
    Brute-force search costs O(n_queries · n · d); subsample queries for large ``n``.
    Scale-invariant in value and in computation: see "Scale" in the module docstring.
    """
    return lid_mle_variants(
        X, k, metric, (variant,), n_queries, seed, duplicates=duplicates, n_jobs=n_jobs, backend=backend, device=device
    )[variant]


def lid_mle_variants(
    X,
    k: int = 100,
    metric: str = "euclidean",
    variants=_VARIANTS,
    n_queries: int | None = None,
    seed: int = 0,
    *,
    duplicates: str = "keep",
    n_jobs: int | None = None,
    backend: str = "auto",
    device: str | None = None,
) -> dict:
    """:func:`lid_mle` of several ``variants`` from one neighbour search: the variants are two formulas on the
    same neighbour distances, so each result equals :func:`lid_mle`'s with that variant (same queries, same
    neighbours) at the cost of one search. Returns variant -> :class:`LIDResult`; other parameters as
    :func:`lid_mle`."""
    variants = tuple(variants)
    if not variants:
        raise ValueError("variants must name at least one variant")
    for variant in variants:
        _check_options(metric, variant, duplicates, backend, k)
    k = int(k)
    X = check_array(X, min_samples=k + 1, min_features=1, metric="lid_mle")
    n_points, dim = X.shape
    P, row_of, first_of, n_dup, e = _index_points(X, k, metric, duplicates)
    q = _query_rows(len(P), n_queries, seed)
    R = _knn_distances(
        P, P[q], q, k, n_jobs, None if duplicates == "drop" or n_dup == 0 else first_of, backend, device
    )  # plain Euclidean (chord for cosine), ascending
    with np.errstate(over="ignore"):  # the clamp in the units of R² (beyond float64 at scales under 1e-150)
        clamp = min(float(np.ldexp(CAI_ZERO_CLAMP, -2 * e)), np.finfo(np.float64).max)
    out = {}
    for variant in variants:
        lid = _pointwise(R, k, metric, variant, clamp=clamp)
        n_nonfinite = int((~np.isfinite(lid)).sum())
        if variant == "cai":
            lid = np.where(np.isinf(lid), float(dim), lid)  # authors: inf -> ambient dimension
        out[variant] = LIDResult(
            pointwise=lid,
            query_index=row_of[q],
            **_summary(lid),
            k=k,
            metric=metric,
            variant=variant,
            n_points=int(n_points),
            n_index=int(len(P)),
            n_duplicates=n_dup,
            n_zero_distance=int((R[:, 0] <= 0).sum()),
            n_nonfinite=n_nonfinite,
            info={"duplicates": duplicates, "n_queries": int(len(q)), "seed": int(seed), "ambient_dim": int(dim)},
        )
    return out


def _summary(lid: np.ndarray) -> dict:
    """Mean, median, standard deviation (finite values) and harmonic mean (finite positive values)."""
    finite = lid[np.isfinite(lid)]
    pos = finite[finite > 0]
    nan = float("nan")
    return {
        "mean": float(finite.mean()) if finite.size else nan,
        "median": float(np.median(finite)) if finite.size else nan,
        "std": float(finite.std()) if finite.size else nan,
        "harmonic_mean": float(len(pos) / np.sum(1.0 / pos)) if pos.size else nan,
    }


def _check_options(metric: str, variant: str, duplicates: str, backend: str, k) -> None:
    """Refuse unknown settings (and a FAISS backend without FAISS) before any work."""
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS}; got {metric!r}")
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {_VARIANTS}; got {variant!r}")
    if duplicates not in _DUPLICATES:
        raise ValueError(f"duplicates must be one of {_DUPLICATES}; got {duplicates!r}")
    if int(k) < 2:
        raise ValueError(f"k must be >= 2; got {int(k)}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be 'auto', 'sklearn', 'torch' or 'faiss'; got {backend!r}")
    if backend == "faiss":
        require(faiss, "faiss", "LID's backend='faiss'", pip="faiss-cpu (or faiss-gpu)")


def power_of_two_scale(X: np.ndarray) -> tuple[np.ndarray, int]:
    """``(X · 2^-e, e)`` with ``2^(e-1) <= max|X| < 2^e``: largest entry in [0.5, 1), every entry scaled exactly.

    Multiplying by a power of two changes only the exponent of each float, so every distance and ratio
    computed from the result is the original one times an exact power of two (no rounding), and squares
    of distances stay far from float64's and float32's overflow and underflow. An all-zero ``X`` is
    returned unchanged (``e = 0``).
    """
    peak = max_abs(X) if X.size else 0.0
    if peak == 0.0:
        return X, 0
    e = int(np.frexp(peak)[1])
    return np.ldexp(X, -e), e


def _index_points(X: np.ndarray, k: int, metric: str, duplicates: str):
    """The rows to index (rescaled, unit-normalised for cosine, duplicates dropped if asked), the row of ``X``
    of each, the first copy of each row, the number of duplicate rows and the exponent ``e`` of the scale
    (the rows are ``X · 2^-e``; see :func:`power_of_two_scale`).

    Raises ``ValueError`` when every point is the same point (after unit-normalisation for cosine).
    """
    P, e = (unit_rows(X), 0) if metric == "cosine" else power_of_two_scale(X)
    first, first_of = _unique_rows(P)
    if len(first) == 1:
        raise ValueError(
            f"lid_mle: all {len(X)} points are the same point"
            f"{' (after unit-normalising the rows)' if metric == 'cosine' else ''}: every neighbour distance is "
            "0 and the local intrinsic dimension is undefined. Check the input (a constant layer, or rows "
            "filled with one value)"
        )
    n_dup = int(len(X) - len(first))
    if duplicates == "drop":
        row_of = np.sort(first)  # row of X for each index row
        if len(row_of) < k + 1:
            raise ValueError(f"only {len(row_of)} distinct points; need at least k + 1 = {k + 1}")
        return P[row_of], row_of, first_of, n_dup, e
    return P, np.arange(len(X)), first_of, n_dup, e


def _query_rows(n_index: int, n_queries: int | None, seed: int) -> np.ndarray:
    """Every index row, or a seeded uniform subset of ``n_queries`` of them (sorted)."""
    if n_queries is None or n_queries >= n_index:
        return np.arange(n_index)
    if n_queries < 1:
        raise ValueError(f"n_queries must be >= 1; got {n_queries}")
    return np.sort(np.random.default_rng(seed).choice(n_index, size=int(n_queries), replace=False))


def _pointwise(R: np.ndarray, k: int, metric: str, variant: str, clamp: float = CAI_ZERO_CLAMP) -> np.ndarray:
    """The pointwise estimates from ascending neighbour distances ``R`` (n_queries, k); see the module docstring.

    ``clamp``: Cai's replacement of a zero distance, in the units of ``R²`` (the authors' 1e-8 in the units
    of the input, times the exact rescaling).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant == "levina_bickel":
            logs = np.log(R[:, -1:] / R[:, :-1])  # log(R_k / R_j), j < k
            lid = (k - 1) / logs.sum(axis=1)
            lid[R[:, 0] <= 0] = 0.0  # a zero distance: log ratio inf -> 0
            lid[~(R[:, -1] > 0)] = np.nan  # all k neighbours at distance 0
            return lid
        D = R**2 if metric == "euclidean" else 0.5 * R**2  # FAISS: squared L2, or 1 - cos
        D = np.where(D <= 0, clamp, D)
        return -1.0 / np.mean(np.log(D / D[:, -1:]), axis=1)
