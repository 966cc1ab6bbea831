"""``python -m replib bench``: each hot step of the book timed against its reference tool, in one run.

Per step: replib's time, the reference's time on the same data, their ratio (reference ÷ replib: above 1
means replib is faster) and the largest difference of the results. Speed is measured here, never asserted
in tests; the tests assert only that the results agree (:func:`run` with ``quick=True`` is tested).

Each timing is the best of ``repeat`` runs (the machine may be shared). Steps whose reference tool is not
installed are reported as skipped: the reference tools (IsoScore, scikit-dimension, sentence-transformers) are
optional, imported through :mod:`replib._optional`.
"""

from __future__ import annotations

import warnings

import numpy as np
import parasail
import torch
from scipy.cluster.vq import kmeans2
from scipy.linalg.blas import ssyrk
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score as sk_silhouette
from sklearn.metrics.pairwise import cosine_similarity
from sklearn.neighbors import NearestNeighbors

from replib._optional import optional_import, require
from replib.embeddings import embed_sentences
from replib.methods import protein_isotropy as P
from replib.methods.cluster_isotropy import cluster_labels
from replib.metrics import avg_pairwise_cosine, isoscore
from replib.metrics.lid import lid_mle
from replib.metrics.silhouette import silhouette_score
from replib.models import load_model, minilm_dir

from .bench_forward import _best, _sentence_batches, bare_forward
from .bench_tables import BenchRow, as_dicts, cpu_model
from .bench_tables import markdown as _markdown

__all__ = ["BenchRow", "as_dicts", "cpu_model", "markdown", "run"]

isoscore_reference = optional_import("IsoScore.IsoScore")  # the package's module of the same name
skdim = optional_import("skdim")
faiss = optional_import("faiss")
sentence_transformers = optional_import("sentence_transformers")


def _row(step, size, ours, ref_name, theirs, diff, tol, repeat, floor=None) -> BenchRow:
    """Time replib, the reference and (when ``floor = (name, fn)`` is given) the floor, each best of ``repeat``."""
    t_ours, a = _best(ours, repeat)
    t_ref, b = _best(theirs, repeat)
    row = BenchRow(
        step, size, t_ours, ref_name, t_ref, t_ref / t_ours if t_ours > 0 else float("inf"), float(diff(a, b)), tol
    )
    if floor is not None:
        row.floor, fn = floor
        row.floor_s = _best(fn, repeat)[0]
    return row


def _gemm_floor(A, B, times: int = 1):
    """``times`` products ``A @ B`` (one BLAS GEMM each): the essential work of pairwise and assignment steps."""

    def fn():
        for _ in range(times):
            out = A @ B
        return out

    return fn


def _maxdiff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def bench_isoscore(n: int, d: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    pkg = require(isoscore_reference, "IsoScore", "the IsoScore benchmark's reference", pip="IsoScore==2.0.1")
    X = (rng.normal(size=(n, d)) * np.linspace(0.1, 3, d)).astype(np.float32)

    def floor_fn():  # the scatter matrix XᵀX by one BLAS ssyrk (Xᵀ is Fortran-ordered: no copy), then its spectrum
        return np.linalg.eigvalsh(ssyrk(1.0, X.T, trans=0, lower=1), UPLO="L")

    return _row(
        "IsoScore",
        f"{n}×{d} float32",
        lambda: isoscore(X),
        "IsoScore 2.0.1",
        lambda: float(pkg.IsoScore(X)),
        _maxdiff,
        1e-5,
        repeat,
        ("ssyrk XᵀX + eigvalsh", floor_fn) if floor else None,
    )


def bench_cosine(n: int, d: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    X = rng.normal(size=(n, d)) + 0.5

    def reference():
        S = cosine_similarity(X)
        return (S.sum() - np.trace(S)) / (n * (n - 1))

    return _row(
        "average cosine (exact)",
        f"{n}×{d}",
        lambda: avg_pairwise_cosine(X),
        "scikit-learn cosine_similarity",
        reference,
        _maxdiff,
        1e-9,
        repeat,
        ("pairwise GEMM XXᵀ", _gemm_floor(X, X.T)) if floor else None,
    )


def bench_silhouette(n: int, d: int, k: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    labels = rng.integers(0, k, size=n)
    X = rng.normal(size=(n, d)) + labels[:, None] * 0.05
    return _row(
        "silhouette",
        f"{n}×{d}, {k} labels",
        lambda: silhouette_score(X, labels),
        "scikit-learn",
        lambda: sk_silhouette(X, labels),
        _maxdiff,
        1e-6,
        repeat,
        ("pairwise GEMM XXᵀ", _gemm_floor(X, X.T)) if floor else None,
    )


def _knn_floor(X, k: int):
    """The k-NN search alone (k + 1 neighbours of every row, itself included) by the engine LID uses: a FAISS
    flat index in float32 (scikit-learn's brute force when FAISS is absent)."""
    if faiss is not None:
        xb = np.ascontiguousarray(X, dtype=np.float32)

        def fn():
            index = faiss.IndexFlatL2(xb.shape[1])
            index.add(xb)
            return index.search(xb, k + 1)

        return "FAISS flat k-NN search", fn
    return "brute-force k-NN (scikit-learn)", lambda: NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)


def bench_lid(n: int, d: int, k: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    mle = require(skdim, "skdim", "the LID benchmark's reference", pip="scikit-dimension").id.MLE
    X = rng.normal(size=(n, 8)) @ rng.normal(size=(8, d)) + 0.01 * rng.normal(size=(n, d))
    return _row(
        "LID (Levina–Bickel MLE)",
        f"{n}×{d}, k={k}",
        lambda: lid_mle(X, k=k, variant="levina_bickel").pointwise,
        "scikit-dimension MLE",
        lambda: mle().fit_transform_pw(X, n_neighbors=k, n_jobs=1),
        _maxdiff,
        1e-4,
        repeat,
        _knn_floor(X, k) if floor else None,
    )


def bench_alignment(n_pairs: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    seqs = ["".join(rng.choice(aa, size=int(rng.integers(80, 300)))) for _ in range(2 * n_pairs)]
    pairs = list(zip(seqs[::2], seqs[1::2]))

    def scores(align):  # the score and identity of every pair
        return lambda: [[r["score"], r["identity"]] for r in (align(a, b) for a, b in pairs)]

    def diff(a, b):  # scores must be identical; identity may differ between co-optimal alignments
        a, b = np.asarray(a), np.asarray(b)
        return float(np.abs(a[:, 0] - b[:, 0]).max())

    def floor_fn():  # parasail's striped SIMD alignment, score only (no traceback, no statistics)
        return [parasail.nw_striped_16(a, b, 10, 1, parasail.pam250).score for a, b in pairs]

    return _row(
        "global alignment (PAM250 10/1)",
        f"{n_pairs} pairs",
        scores(P.alignment_stats),
        "Biopython PairwiseAligner",
        scores(P.alignment_stats_biopython),
        diff,
        0.0,
        repeat,
        ("parasail nw_striped_16, score only", floor_fn) if floor else None,
    )


def _inertia(X, labels) -> float:
    """The k-means objective of a partition: squared distances of the rows to their cluster's mean."""
    return sum(float(((Y - Y.mean(axis=0)) ** 2).sum()) for Y in (X[labels == c] for c in np.unique(labels)))


def bench_kmeans(n: int, d: int, k: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    """The cluster chapter's k-means (the authors' ``kmeans2``: 10 Lloyd iterations from k random data
    points, :func:`replib.methods.cluster_isotropy.cluster_labels`) against scikit-learn's Lloyd k-means from
    the same initial points and for the same 10 iterations. The difference reported is the relative
    difference of the two partitions' k-means objective (sum of squared distances to their cluster means):
    on large inputs floating-point near-ties (``vq`` against BLAS distances) move a few points between
    clusters, so the labels need not be identical, but the objective must agree."""
    centers = rng.normal(size=(k, d)) * 3
    X = centers[rng.integers(0, k, size=n)] + rng.normal(size=(n, d))
    seed = 7
    init = X[np.random.default_rng(seed).choice(n, size=k, replace=False)]  # kmeans2(minit="points") draws these

    def theirs():
        # kmeans2 returns the assignment made before its last centroid update: 9 updates, then the assignment
        return KMeans(k, init=init, n_init=1, max_iter=9, tol=0.0, algorithm="lloyd").fit(X).labels_

    return _row(
        "k-means (10 Lloyd iterations)",
        f"{n}×{d}, k={k}",
        lambda: cluster_labels(X, k, clusterer="scipy", random_state=seed)[0],
        "scikit-learn KMeans (same init)",
        theirs,
        lambda a, b: abs(_inertia(X, a) - _inertia(X, b)) / _inertia(X, b),
        1e-3,
        repeat,
        ("10 assignment GEMMs X·Cᵀ", _gemm_floor(X, init.T.copy(), 10)) if floor else None,
    )


def bench_kmeans2(n: int, d: int, k: int, rng, repeat: int, floor: bool = False) -> BenchRow:
    """The same k-means against the authors' own tool, ``scipy.cluster.vq.kmeans2(minit="points")``, from
    the same generator state: the difference reported is the fraction of rows whose cluster differs."""
    centers = rng.normal(size=(k, d)) * 3
    X = centers[rng.integers(0, k, size=n)] + rng.normal(size=(n, d))

    def theirs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return kmeans2(X, k, iter=10, minit="points", missing="warn", rng=np.random.default_rng(7))[1]

    return _row(
        "k-means (the authors' kmeans2)",
        f"{n}×{d}, k={k}",
        lambda: cluster_labels(X, k, clusterer="scipy", random_state=np.random.default_rng(7))[0],
        "scipy kmeans2 (same draw)",
        theirs,
        lambda a, b: float(np.mean(np.asarray(a) != np.asarray(b))),
        1e-3,
        repeat,
        ("10 assignment GEMMs X·Cᵀ", _gemm_floor(X, X[:k].T.copy(), 10)) if floor else None,
    )


def bench_embedding(n_texts: int, repeat: int, floor: bool = False) -> BenchRow:
    st_pkg = require(sentence_transformers, "sentence_transformers", "the embedding benchmark's reference")
    lm = load_model("all-MiniLM-L6-v2")
    st = st_pkg.SentenceTransformer(str(minilm_dir()), device="cpu")
    words = "the a man woman plays guitar runs fast slowly dog cat on beach park under bright sky".split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, int(rng.integers(5, 40)))) for _ in range(n_texts)]

    def ours():
        return embed_sentences(lm, texts, drop_special=False, progress=False).means  # ST pools over every token

    def theirs():
        return st.encode(texts, batch_size=64, normalize_embeddings=False, show_progress_bar=False)

    def diff(a, b):  # of the unit vectors
        a, b = (np.asarray(x, dtype=float) for x in (a, b))
        return _maxdiff(a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True))

    batches = _sentence_batches(lm, texts) if floor else None  # tokenised and padded before the clock starts
    return _row(
        "sentence embedding (MiniLM mean pool)",
        f"{n_texts} texts",
        ours,
        "sentence-transformers encode",
        theirs,
        diff,
        1e-4,
        repeat,
        ("bare forward, same batches", lambda: bare_forward(lm, batches)) if floor else None,
    )


def run(
    quick: bool = False,
    repeat: int = 3,
    steps: list[str] | None = None,
    progress=print,
    floor: bool = False,
) -> list[BenchRow]:
    """Run the benchmark; ``quick`` uses small sizes (seconds), else the sizes of the issue tracker's table.
    ``floor`` also times each step's floor: the one BLAS/SIMD call doing its essential work on the same data."""
    rng = np.random.default_rng(0)
    plan = {  # step: (benchmark, its quick sizes, its full sizes)
        "isoscore": (bench_isoscore, (2000, 128), (20000, 768)),
        "cosine": (bench_cosine, (800, 64), (6000, 384)),
        "silhouette": (bench_silhouette, (600, 32, 5), (6000, 384, 10)),
        "lid": (bench_lid, (800, 32, 10), (6000, 384, 20)),
        "alignment": (bench_alignment, (10,), (150,)),
        "kmeans": (bench_kmeans, (2000, 32, 8), (50000, 384, 20)),
        "kmeans2": (bench_kmeans2, (2000, 32, 8), (50000, 384, 20)),
        "embedding": (bench_embedding, (32,), (2000,)),
    }
    rows = []
    for name, (fn, small, full) in plan.items():
        if steps and name not in steps:
            continue
        args = small if quick else full
        try:  # the embedding step's texts have a seed of their own
            row = fn(*args, repeat, floor=floor) if name == "embedding" else fn(*args, rng, repeat, floor=floor)
        except ImportError as exc:  # a reference tool or packaged model missing: say so, do not fail
            progress(f"{name}: skipped ({exc})")
            continue
        rows.append(row)
        progress(
            f"{row.step}: replib {row.replib_s:.3f} s, {row.reference} {row.reference_s:.3f} s, "
            f"ratio {row.ratio:.2f}, max |diff| {row.max_abs_diff:.2g}"
            + (f", floor {row.floor_s:.3f} s ({row.over_floor:.2f}×)" if row.floor else "")
        )
    return rows


def markdown(rows: list[BenchRow], repeat: int | None = None) -> str:
    """The benchmark table (Markdown) with the machine it ran on, the date and torch's threads."""
    return _markdown(rows, repeat=repeat, threads=torch.get_num_threads())
