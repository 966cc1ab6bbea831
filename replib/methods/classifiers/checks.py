r"""The argument of :cite:`mickus2024isotropy` (Sec. 2) checked numerically on random data: each function
draws its clouds from the chapter's generator (in the chapter's order) and returns what the chapter shows
and records. The identities themselves are in :mod:`.algebra`."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.metrics import silhouette_score as sklearn_silhouette

from ..._optional import optional_import, require
from ...metrics.isoscore import isoscore
from ...metrics.silhouette import silhouette_score
from .algebra import (
    defect_from_cosine,
    isoscore_from_cosine,
    isotropy_defect,
    isotropy_objective,
    silhouette_objective,
    silhouette_objective_pairwise,
    variance_angle_cosine,
    variance_from_pairwise_differences,
    variance_vector,
)

_isoscore_package = optional_import("IsoScore.IsoScore")  # the authors' implementation (independent oracle)

#: dimensions of the random variance vectors, and the largest one the (slow) IsoScore package is run at
ANGLE_DIMENSIONS = (2, 3, 10, 50, 384)
_PACKAGE_MAX_N = 50


def variance_identity_records(rng, n: int) -> dict:
    r"""Largest relative error of the pairwise-difference variance against ``numpy.var`` (population,
    ddof = 0), and against the sample variance (ddof = 1), which must fail: the identity pins the
    :math:`1/N^2` normalisation. On an ``n`` × 10 cloud with random scales and offsets."""
    X = rng.normal(size=(n, 10)) * rng.gamma(1.0, size=10) + rng.normal(size=10)
    lhs = variance_from_pairwise_differences(X)
    return {
        "variance_identity_max_rel_err": float(np.max(np.abs(lhs - X.var(0)) / X.var(0))),
        "variance_identity_ddof1_rel_err": float(np.max(np.abs(lhs - X.var(0, ddof=1)) / X.var(0))),
    }


def angle_table(rng, dimensions=ANGLE_DIMENSIONS, n_shapes: int = 10) -> pd.DataFrame:
    """Random clouds in each of ``dimensions`` (variance spectra from gamma draws of ``n_shapes`` shapes):
    the angle θ between σ and **1**, the defect and IsoScore directly and through the closed forms of θ, and
    the authors' package up to n = 50 (NaN above: it is slow in high dimension)."""
    package = require(_isoscore_package, "IsoScore", "the comparison with the authors' IsoScore package")
    rows = []
    for n in dimensions:
        for shape in np.geomspace(0.02, 50, n_shapes):
            X = rng.normal(size=(2 * n + 100, n)) * np.sqrt(rng.gamma(shape, size=n))
            sigma = variance_vector(X)
            c = variance_angle_cosine(sigma)
            rows.append(
                dict(
                    n=n,
                    cos=c,
                    theta_deg=np.degrees(np.arccos(min(c, 1.0))),
                    defect=isotropy_defect(sigma),
                    defect_from_cos=float(defect_from_cosine(c, n)),
                    isoscore=isoscore(X),
                    isoscore_from_cos=float(isoscore_from_cosine(c, n)),
                    isoscore_package=float(package.IsoScore(X)) if n <= _PACKAGE_MAX_N else np.nan,
                )
            )
    return pd.DataFrame(rows)


def angle_records(angles: pd.DataFrame, n: int = 50) -> dict:
    """Largest errors of the two closed forms (and against the package), and the residuals of the best affine
    fits of δ² in cos θ (zero: δ² is affine in cos θ) and in cos² θ (not zero), at dimension ``n``."""
    sub = angles[angles.n == n]

    def residual(x):
        return np.linalg.lstsq(np.c_[x, np.ones_like(x)], sub.defect.values**2, rcond=None)[1][0]

    return {
        "defect_cos_identity_max_err": float((angles.defect - angles.defect_from_cos).abs().max()),
        "isoscore_cos2_identity_max_err": float((angles.isoscore - angles.isoscore_from_cos).abs().max()),
        "isoscore_cos2_vs_package_max_err": float(
            (angles.isoscore_package - angles.isoscore_from_cos).abs().max(skipna=True)
        ),
        "defect_sq_affine_in_cos_residual": float(residual(sub.cos.values)),
        "defect_sq_affine_in_cos2_residual": float(residual(sub.cos.values**2)),
    }


def clustered_cloud(rng, n: int, k: int = 4, d: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points around ``k`` random centres (scale 2) in ``d`` dimensions, noise 1.5, random labels."""
    centres = rng.normal(scale=2.0, size=(k, d))
    y = rng.integers(0, k, n)
    return centres[y] + 1.5 * rng.normal(size=(n, d)), y


def collapse_records(X, y, path: pd.DataFrame) -> dict:
    r"""The objectives' closed forms against their literal sums, the exact change of :math:`O_S` along the
    collapse path, :math:`(t^2-1)\sum_\omega 2(N-2|D_\omega|)\,\mathrm{SSW}_\omega`, and the directions of
    silhouette and IsoScore along ``path`` (:func:`collapse_path` of ``X``, ``y``)."""
    n = len(X)
    o_closed, o_pairs = silhouette_objective(X, y), silhouette_objective_pairwise(X, y)
    ssw = sum(2 * (n - 2 * (y == a).sum()) * ((X[y == a] - X[y == a].mean(0)) ** 2).sum() for a in np.unique(y))
    pred = path.silhouette_objective.iloc[0] + (path.t**2 - 1) * ssw
    return {
        "silhouette_objective_identity_rel_err": abs(o_closed - o_pairs) / abs(o_pairs),
        "isotropy_objective_identity_rel_err": abs(isotropy_objective(X) - 2 * n**2 * X.var(0).sum())
        / isotropy_objective(X),
        "objective_collapse_formula_rel_err": float(
            np.max(np.abs(pred - path.silhouette_objective) / np.abs(path.silhouette_objective))
        ),
        "collapse_silhouette_increases": bool((np.diff(path.silhouette) > 0).all()),
        "collapse_isoscore_decreases": bool((np.diff(path.isoscore) < 0).all()),
        "collapse_spearman": float(spearmanr(path.isoscore, path.silhouette)[0]),
    }


def silhouette_agreement(rng, shapes=((300, 8, 2), (500, 32, 5), (400, 64, 12))) -> float:
    """Largest |exact torch silhouette − scikit-learn's| on random clusters of each ``(n, d, k)`` of
    ``shapes`` (chunks of 97 rows) and on a multi-label problem (clusters = distinct label vectors)."""
    errs = []
    for n, d, k in shapes:
        Xs = rng.normal(size=(k, d))[rng.integers(0, k, n)] * 2 + rng.normal(size=(n, d))
        ys = rng.integers(0, k, n)
        errs.append(abs(silhouette_score(Xs, ys, chunk_size=97) - sklearn_silhouette(Xs, ys)))
    Y = rng.integers(0, 2, size=(300, 4))
    X = rng.normal(size=(300, 10)) + Y @ rng.normal(size=(4, 10))
    codes = np.unique(Y, axis=0, return_inverse=True)[1].reshape(-1)
    errs.append(abs(silhouette_score(X, Y) - sklearn_silhouette(X, codes)))
    return float(max(errs))


def silhouette_precision(setup) -> dict:
    """The training loop's silhouette (exact, float32, on the centred cloud) against scikit-learn's float64
    value on a set-up's starting vectors, with the time each took."""
    E = setup.embeddings
    t = time.time()
    reference = sklearn_silhouette(E.astype(np.float64), setup.cluster_ids)
    t_reference = time.time() - t
    t = time.time()
    ours = silhouette_score(torch.from_numpy(E - E.mean(0)), setup.cluster_ids, dtype=torch.float32)
    return {"sklearn": reference, "sklearn_s": t_reference, "float32": ours, "float32_s": time.time() - t}
