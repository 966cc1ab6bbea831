"""Sampling spread of a statistic and the sample size a check needs (the precision rule).

A paper's number is a statistic of a sample (tokens, sentences, proteins, pairs). Its sampling spread, the
standard error :math:`s(n)`, falls as :math:`1/\\sqrt{n}` in the number :math:`n` of independent sampling
units. The precision rule chooses the smallest :math:`n` at which :math:`s(n)` is at most a quarter of the
check's band (:data:`BAND_FRACTION`) instead of inheriting the paper's full compute.

The spread is estimated by the bootstrap :cite:`efron1993bootstrap` over the sampling unit
(:func:`bootstrap_spread`; a unit holding several rows, e.g. a window of tokens or a protein's residues, is
resampled whole with ``groups``). Across sizes it follows the :math:`1/\\sqrt{n}` law (:func:`spread_at`,
:func:`n_for_spread`); :func:`coverage_trials` checks on real data that a sample of the chosen size with its
band covers the value of a ten times larger sample.

A statistic that is not a mean of its units also has a finite-sample *bias*, shrinking with :math:`n`, which
no spread shows: the average cosine of the tokens of :math:`n` windows holds a share :math:`\\approx 1/n` of
within-window pairs (of higher cosine, one context), the IsoScore of :math:`n` windows the between-window
part of their covariance. :func:`half_sample_bias` estimates it within a sample (the half-samples' mean
minus the whole's, the bias at :math:`n` of a statistic :math:`a + b/n`), and the error of a sample is then
:math:`\\sqrt{s^2 + b^2}`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from tqdm.auto import tqdm

__all__ = [
    "BAND_FRACTION",
    "Z",
    "bootstrap_spread",
    "coverage_trials",
    "draw_units",
    "half_sample_bias",
    "jackknife_spread",
    "n_for_spread",
    "spread_at",
]

#: the precision rule: a sample is large enough when its spread is at most this fraction of the check's band
BAND_FRACTION = 0.25
#: standard errors either side of a value in a check's interval (as :data:`bookkit.claims.checker.Z_SPREAD`)
Z = 2.0
#: groups of a delete-a-group jackknife: at least 10 resamples, so that the spread itself is not noisy
JACKKNIFE_GROUPS = 10


def _units(n_rows: int, groups) -> tuple[np.ndarray, list[np.ndarray]]:
    """(unit labels, the rows of each unit): every row its own unit when ``groups`` is None."""
    if groups is None:
        return np.arange(n_rows), []
    groups = np.asarray(groups)
    if groups.shape != (n_rows,):
        raise ValueError(f"groups must have one label per row ({n_rows}), got shape {groups.shape}")
    labels, inverse = np.unique(groups, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    rows = np.split(order, np.cumsum(np.bincount(inverse))[:-1])
    return labels, rows


def draw_units(n_rows: int, n: int, rng: np.random.Generator, *, groups=None, replace: bool = False) -> np.ndarray:
    """Row indices of ``n`` sampling units drawn from ``n_rows`` rows (a unit is a row, or every row sharing a
    ``groups`` label), without replacement unless ``replace``."""
    labels, rows = _units(n_rows, groups)
    if not replace and n > len(labels):
        raise ValueError(f"cannot draw {n} units without replacement from {len(labels)}")
    pick = rng.choice(len(labels), size=n, replace=replace)
    return pick if groups is None else np.concatenate([rows[i] for i in pick])


def _check_n(X, n, groups) -> tuple[int, int]:
    n_rows = len(X)
    n_units = n_rows if groups is None else len(np.unique(np.asarray(groups)))
    if n_units < 2:
        raise ValueError(f"need at least 2 sampling units, got {n_units}")
    n = n_units if n is None else int(n)
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    return n_rows, n


def bootstrap_spread(
    stat: Callable[[np.ndarray], float],
    X,
    n: int | None = None,
    *,
    groups=None,
    n_boot: int = 200,
    seed: int = 0,
) -> float:
    """Bootstrap standard error of ``stat`` on samples of ``n`` units drawn from ``X``.

    .. math:: s(n) = \\operatorname{sd}_b\\, \\mathrm{stat}(X^{*b}_n), \\quad b = 1..B,

    each :math:`X^{*b}_n` being ``n`` sampling units drawn with replacement from ``X``
    :cite:`efron1993bootstrap`. With ``n`` the number of units of ``X`` this is the ordinary bootstrap
    standard error of ``stat(X)``; a smaller ``n`` estimates the spread of a sample of that size from the
    population ``X`` stands for.

    Parameters
    ----------
    stat : callable
        ``stat(rows) -> float`` of an array of rows of ``X`` (e.g. :func:`replib.metrics.isoscore`).
    X : array of shape (n_samples, ...)
        The rows (points, or pairs' columns for a statistic over pairs).
    n : int, optional
        Sampling units per resample (default: as many as ``X`` holds).
    groups : array of shape (n_samples,), optional
        The sampling unit of each row (a token's window, a residue's protein): units are resampled whole.
    n_boot : int
        Resamples :math:`B`.
    seed : int

    Returns
    -------
    float
        The standard deviation (ddof 1) of the resampled statistic.
    """
    X = np.asarray(X)
    n_rows, n = _check_n(X, n, groups)
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2, got {n_boot}")
    rng = np.random.default_rng(seed)
    values = [float(stat(X[draw_units(n_rows, n, rng, groups=groups, replace=True)])) for _ in range(n_boot)]
    return float(np.std(values, ddof=1))


def jackknife_spread(
    stat: Callable[[np.ndarray], float], X, *, groups=None, n_groups: int = JACKKNIFE_GROUPS, seed: int = 0
) -> float:
    r"""Delete-a-group jackknife standard error of ``stat(X)``: the sampling units (rows, or every row sharing
    a ``groups`` label) split at random into :math:`g` = ``n_groups`` groups, ``stat`` computed with each group
    left out (:math:`\theta_1..\theta_g`), :math:`\sqrt{\tfrac{g-1}{g}\sum_i(\theta_i - \bar\theta)^2}`
    :cite:`efron1993bootstrap`. Each replicate holds nearly all the sample, so a statistic biased at small sizes
    (IsoScore) is not measured on a fraction of it.

    Parameters
    ----------
    stat : callable
        ``stat(rows) -> float``, as in :func:`bootstrap_spread`.
    X : array of shape (n_samples, ...)
    groups : array of shape (n_samples,), optional
        The sampling unit of each row.
    n_groups : int
        Replicates (at least :data:`JACKKNIFE_GROUPS` by default); at most the number of units.
    seed : int
    """
    X = np.asarray(X)
    labels, _ = _units(len(X), groups)
    if not 2 <= n_groups <= len(labels):
        raise ValueError(f"n_groups must be between 2 and the {len(labels)} sampling units, got {n_groups}")
    unit_group = np.random.default_rng(seed).permutation(len(labels)) % n_groups
    row_group = unit_group if groups is None else unit_group[np.unique(groups, return_inverse=True)[1]]
    theta = np.array([float(stat(X[row_group != g])) for g in range(n_groups)])
    return float(math.sqrt((n_groups - 1) / n_groups * np.sum((theta - theta.mean()) ** 2)))


def spread_at(spread: float, n0: int, n: int) -> float:
    """The spread at ``n`` units of a statistic whose spread at ``n0`` units is ``spread``: :math:`s(n) =
    s(n_0)\\sqrt{n_0/n}` (the :math:`1/\\sqrt{n}` law of a smooth statistic of i.i.d. units)."""
    if n0 < 1 or n < 1:
        raise ValueError(f"sizes must be positive, got n0={n0}, n={n}")
    return float(spread) * math.sqrt(n0 / n)


def n_for_spread(spread: float, n0: int, target: float) -> int:
    """The smallest ``n`` at which :func:`spread_at` is at most ``target``: :math:`\\lceil n_0 (s_0/t)^2
    \\rceil`."""
    if target <= 0:
        raise ValueError(f"target must be positive, got {target}")
    return max(2, math.ceil(n0 * (float(spread) / target) ** 2 * (1 - 1e-12)))


def half_sample_bias(
    stat: Callable[[np.ndarray], float], X, *, groups=None, n_halves: int = 10, seed: int = 0
) -> float:
    """Finite-sample bias of ``stat`` on ``X``, from half-samples of its units.

    .. math:: \\hat b(n) = \\overline{\\mathrm{stat}(X_{n/2})} - \\mathrm{stat}(X_n),

    the mean over ``n_halves`` random halves (units without replacement) minus the statistic of the whole: for
    a statistic whose expectation at :math:`n` units is :math:`a + b/n` this is :math:`b/n`, its bias at
    :math:`n` against an unlimited sample (a jackknife-type estimate that needs no larger set).

    Parameters
    ----------
    stat : callable
        ``stat(rows) -> float``, as in :func:`bootstrap_spread`.
    X : array of shape (n_samples, ...)
    groups : array of shape (n_samples,), optional
        The sampling unit of each row; units are kept whole.
    n_halves : int
    seed : int

    Returns
    -------
    float
        The estimated bias, signed.
    """
    X = np.asarray(X)
    n_rows, n = _check_n(X, None, groups)
    if n < 4:
        raise ValueError(f"need at least 4 sampling units for half-samples, got {n}")
    rng = np.random.default_rng(seed)
    halves = [float(stat(X[draw_units(n_rows, n // 2, rng, groups=groups)])) for _ in range(n_halves)]
    return float(np.mean(halves) - float(stat(X)))


def coverage_trials(
    stat: Callable[[np.ndarray], float],
    X,
    n_sample: int,
    *,
    trials: int = 20,
    groups=None,
    n_boot: int = 50,
    bias: bool = False,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Does a sample of ``n_sample`` units with its spread cover the value of the whole of ``X``?

    Each trial draws ``n_sample`` units of ``X`` without replacement and computes the estimate, independently
    of the other trials. Its spread, for every trial, is the spread at ``n_sample`` bootstrapped once from all
    of ``X`` (what the precision rule predicts for that size; ``n_boot`` evaluations). With ``bias``, each
    sample's :func:`half_sample_bias` is estimated from the sample alone.

    Returns
    -------
    dict
        ``full_value`` (``stat(X)``), ``estimates``, ``spreads`` and ``biases`` (one per trial; zeros without
        ``bias``).
    """
    X = np.asarray(X)
    n_rows, n_sample = _check_n(X, n_sample, groups)
    full = float(stat(X))
    rng = np.random.default_rng(seed)
    estimates, biases = [], []
    spread = bootstrap_spread(stat, X, n_sample, groups=groups, n_boot=n_boot, seed=seed + 1)
    for t in tqdm(range(trials), desc="trials", leave=False, disable=not progress):
        rows = draw_units(n_rows, n_sample, rng, groups=groups)
        sample = X[rows]
        sub_groups = None if groups is None else np.asarray(groups)[rows]
        estimates.append(float(stat(sample)))
        biases.append(half_sample_bias(stat, sample, groups=sub_groups, seed=seed + 3 + t) if bias else 0.0)
    return {
        "full_value": full,
        "estimates": np.array(estimates),
        "spreads": np.full(trials, spread),
        "biases": np.array(biases),
    }
