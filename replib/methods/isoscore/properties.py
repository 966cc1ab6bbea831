r"""The synthetic property tests of IsoScore :cite:`rudman2022isoscore`, one function per test.

Each returns the table the chapter shows (and the records it claims); the random draws are those of the
chapter's generator, in the chapter's order, so a test and its chapter see the same numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ... import synthetic
from ..._optional import optional_import, require
from ..._validation import OrientationWarning
from ...metrics import (
    CovarianceAccumulator,
    avg_pairwise_cosine,
    isoscore,
    isoscore_from_covariance,
    isoscore_star,
    partition_isotropy,
    rudman_partition_score,
    rudman_partition_score_gaussian,
)

_isoscore_package = optional_import("IsoScore.IsoScore")  # the authors' implementation (independent oracle)

#: the rotation test's covariance (the paper's 2-D Gaussian) and its orientations in degrees
ROTATION_COV = ((1.0, 0.8), (0.8, 1.0))
ROTATION_ANGLES = {"0": 0.0, "120": 120.0, "240": 240.0}
#: numbers of points m of the "fewer points than dimensions" sweep (in n = 100 dimensions)
DEFLATION_SIZES = (10, 25, 50, 100, 200, 500, 1000, 5000, 20000)


def package_isoscore(X) -> float:
    """IsoScore of ``X`` by the authors' package (IsoScore 2.0.1 on PyPI)."""
    package = require(_isoscore_package, "IsoScore", "the comparison with the authors' IsoScore package")
    return float(package.IsoScore(X))


# ----------------------------------------------------------------------------------------- agreement
def agreement_clouds(rng) -> dict:
    """Four point clouds of different shapes (scaled, isotropic, low-rank with an offset, heavy-tailed)."""
    return {
        "Gaussian 3000x100, scales 0.1..3": rng.normal(size=(3000, 100)) * np.linspace(0.1, 3, 100),
        "Gaussian 2000x50, isotropic": rng.normal(size=(2000, 50)),
        "rank-5 in 64-d + offset": rng.normal(size=(4000, 5)) @ rng.normal(size=(5, 64)) + 40.0,
        "heavy-tailed 5000x32": rng.standard_t(3, size=(5000, 32)),
    }


def package_agreement(clouds: dict) -> pd.DataFrame:
    """``replib``'s IsoScore against the authors' package on every cloud: columns cloud, replib,
    IsoScore 2.0.1, |diff|."""
    rows = []
    for name, X in clouds.items():
        ours, theirs = isoscore(X), package_isoscore(X)
        rows.append({"cloud": name, "replib": ours, "IsoScore 2.0.1": theirs, "|diff|": abs(ours - theirs)})
    return pd.DataFrame(rows)


def orientation_check(X) -> dict:
    """IsoScore of ``X`` the right way round and transposed, and whether the transposed call warned
    (:class:`~replib._validation.OrientationWarning`)."""
    correct = isoscore(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        transposed = isoscore(X.T)  # n_features "samples" of n_samples features: the wrong way round
    warns = any(issubclass(w.category, OrientationWarning) for w in caught)
    return {"orientation_correct": correct, "orientation_transposed": transposed, "orientation_warns": warns}


# ------------------------------------------------------------------------------------------ rotation
def rotation_versions(n: int, seed: int) -> tuple[np.ndarray, dict, dict]:
    """The rotation test's cloud: ``n`` points of the 2-D Gaussian, rotated by 0°, 120° and 240° and put
    in its PCA frame; with the population covariance of each version.

    Returns
    -------
    base, versions (orientation -> points), population (orientation -> covariance)
    """
    cov = np.array(ROTATION_COV)
    base = synthetic.rotated_gaussian_2d(0.0, n=n, seed=seed)
    versions = {k: base @ synthetic.rotation_2d(a).T for k, a in ROTATION_ANGLES.items()}
    versions["pca"] = synthetic.pca_orient(base)
    population = {k: synthetic.rotation_2d(a) @ cov @ synthetic.rotation_2d(a).T for k, a in ROTATION_ANGLES.items()}
    population["pca"] = np.diag(np.linalg.eigvalsh(cov)[::-1])  # the covariance in its principal axes
    return base, versions, population


def rotation_table(versions: dict, population: dict) -> pd.DataFrame:
    """Per orientation: IsoScore, the exact all-pairs average cosine, Mu & Viswanath's partition score over
    the eigenvectors, the authors' loop over the rows of ``eig`` (dot and element-wise product) and the
    expected values of that loop for the population covariance."""
    rows = [
        {
            "orientation": k,
            "IsoScore": isoscore(X),
            "avg cosine (all pairs)": avg_pairwise_cosine(X),
            "partition, eigenvectors (Mu & Viswanath)": partition_isotropy(X).value,
            "partition, rows of eig (authors' loop)": rudman_partition_score(X),
            "expected, rows of eig": rudman_partition_score_gaussian(population[k]),
            "rows of eig, element-wise product": rudman_partition_score(X, product="elementwise"),
            "expected, element-wise": rudman_partition_score_gaussian(population[k], product="elementwise"),
        }
        for k, X in versions.items()
    ]
    return pd.DataFrame(rows).set_index("orientation")


def cosine_estimate_draws(X, seed: int, n_estimates: int = 200, n_pairs: int = 1000) -> np.ndarray:
    """The authors' cosine statistic, :math:`1 - |\\overline{\\cos}|` over ``n_pairs`` random pairs (drawn
    independently), estimated ``n_estimates`` times: how much one estimate scatters."""
    pairs = np.random.default_rng(seed).integers(0, len(X), size=(n_estimates, n_pairs, 2))
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    return 1.0 - np.abs(np.sum(U[pairs[..., 0]] * U[pairs[..., 1]], axis=-1).mean(axis=1))


def rotation_records(base, rotation: pd.DataFrame, seed: int) -> dict:
    """The rotation test's claimed numbers: IsoScore and the rows-of-eig expectation per orientation, the
    spreads across orientations, the expected eigenvector partition score, the population IsoScore and the
    5th/95th percentiles of the 1,000-pair cosine estimate."""
    out = {f"rotation_isoscore_{k}": v for k, v in rotation["IsoScore"].items()}
    out.update({f"rotation_partition_rows_expected_{k}": v for k, v in rotation["expected, rows of eig"].items()})
    spread = rotation.max() - rotation.min()
    out["rotation_isoscore_spread"] = spread["IsoScore"]
    out["rotation_cosine_spread"] = spread["avg cosine (all pairs)"]
    # Mu & Viswanath's F over the eigenvectors: E F(±u) = N exp(λ_u / 2) for x ~ N(0, Σ), whatever the sign
    # and the orientation, so the expected score is exp((λ_min - λ_max) / 2) everywhere
    lam = np.linalg.eigvalsh(np.array(ROTATION_COV))
    out["rotation_partition_eigenvector_expected"] = float(np.exp((lam.min() - lam.max()) / 2))
    out["rotation_isoscore_population"] = isoscore_from_covariance(np.array(ROTATION_COV))
    draws = cosine_estimate_draws(base, seed)
    out["rotation_cosine_1000_pairs_p05"] = float(np.percentile(draws, 5))
    out["rotation_cosine_1000_pairs_p95"] = float(np.percentile(draws, 95))
    return out


# ------------------------------------------------------------------------------------- invariances
def mean_and_scale_records(rng) -> dict:
    """Mean shift by 100 in every coordinate, scaling by 1e-3 and 1e3, and scalar covariances λI, on a
    5,000 × 20 Gaussian with scales 0.5..2 (drawn from ``rng``)."""
    X = rng.normal(size=(5000, 20)) * np.linspace(0.5, 2.0, 20)
    shifted = X + 100.0
    return {
        "meanshift_isoscore_diff": abs(isoscore(shifted) - isoscore(X)),
        "meanshift_cosine_before": avg_pairwise_cosine(X),
        "meanshift_cosine_after": avg_pairwise_cosine(shifted),
        "meanshift_partition_log10_after": partition_isotropy(shifted).log10,
        "scale_isoscore_diff": max(abs(isoscore(c * X) - isoscore(X)) for c in (1e-3, 1e3)),
        "scalar_cov_isoscore_min": min(isoscore_from_covariance(lam * np.eye(20)) for lam in (1e-3, 1.0, 1e3)),
    }


def fraction_of_dimensions(sweep: int, seed: int) -> pd.DataFrame:
    """IsoScore of clouds whose variance is spread evenly over k of n dimensions (±e_i, randomly rotated),
    every k for n = 25, ``sweep`` values of k for n = 512, beside the exact (k − 1)/(n − 1)."""
    rows = []
    for n in (25, 512):
        ks = np.unique(np.linspace(1, n, sweep if n == 512 else n).round().astype(int))
        rotation = synthetic.random_rotation(n, seed)  # the rotation even_k_of_n(k, n, seed) draws, drawn once per n
        for k in ks:
            iota = isoscore(synthetic.even_k_of_n(int(k), n, seed=None) @ rotation.T)
            rows.append({"n": n, "k": int(k), "IsoScore": iota, "(k-1)/(n-1)": (k - 1) / (n - 1)})
    return pd.DataFrame(rows)


def skewered_meatball(sweep: int, seed: int) -> pd.DataFrame:
    """IsoScore, average cosine and I(W) of a 3-D Gaussian ball as a share 0..0.95 (``sweep`` steps) of its
    points is moved onto a line."""
    rows = []
    for f in np.linspace(0.0, 0.95, sweep):
        X = synthetic.skewered_meatball(f, seed=seed)
        rows.append(
            {
                "share on skewer": f,
                "IsoScore": isoscore(X),
                "avg cosine": avg_pairwise_cosine(X),
                "partition I(W)": partition_isotropy(X, sign="both").value,
            }
        )
    return pd.DataFrame(rows)


def deflation(seed: int, n: int = 100, sizes=DEFLATION_SIZES) -> pd.DataFrame:
    """IsoScore of an isotropic Gaussian in ``n`` dimensions sampled with m points (each of ``sizes``),
    beside m/(n + m), whether ``isoscore`` warned, and IsoScore* (ζ = 0.5, C₀ = I) :cite:`rudman2024stable`."""
    rows = []
    for m in sizes:
        X = synthetic.isotropic_gaussian(m, n, seed=seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            iota = isoscore(X)
        rows.append(
            {
                "m": m,
                "IsoScore": iota,
                "m/(n+m)": m / (n + m),
                "warned": bool(caught),
                "IsoScore* (zeta=0.5, C0=I)": isoscore_star(X, np.eye(n), 0.5),
            }
        )
    return pd.DataFrame(rows)


def streaming_difference(rng, n_batches: int = 37) -> float:
    """|IsoScore of :class:`~replib.metrics.CovarianceAccumulator` − in-memory IsoScore| on a 50,000 × 64
    cloud (drawn from ``rng``) with an offset of 200 on one axis, fed in ``n_batches`` batches."""
    X = rng.normal(size=(50_000, 64)) * np.linspace(0.2, 3.0, 64)
    X[:, 0] += 200.0
    acc = CovarianceAccumulator()
    for batch in np.array_split(X, n_batches):
        acc.update(batch)
    return abs(acc.isoscore() - isoscore(X))
