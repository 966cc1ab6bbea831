"""replib.sampling: the bootstrap spread against closed forms, the 1/sqrt(n) law, the unit of resampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from replib import sampling


def _mean(x):
    return float(np.mean(x))


def _pearson(xy):
    return float(np.corrcoef(xy[:, 0], xy[:, 1])[0, 1])


def _bivariate(rng, n, r):
    return rng.multivariate_normal([0, 0], [[1, r], [r, 1]], size=n)


def _mean_se(x):
    """The closed form: the standard error of a mean, s / sqrt(n) (ddof 1)."""
    return float(np.std(x, ddof=1) / math.sqrt(len(x)))


def test_bootstrap_spread_of_a_mean_is_its_standard_error(rng):
    x = rng.normal(size=20_000)
    for n in (50, 400):
        s = sampling.bootstrap_spread(_mean, x, n, n_boot=600, seed=1)
        assert s == pytest.approx(1 / math.sqrt(n), rel=0.12)


def test_bootstrap_spread_of_a_whole_sample_matches_mean_standard_error(rng):
    x = rng.exponential(size=500)
    s = sampling.bootstrap_spread(_mean, x, n_boot=800, seed=2)
    assert s == pytest.approx(_mean_se(x), rel=0.1)


def test_bootstrap_spread_of_a_correlation_matches_fisher_z(rng):
    xy = _bivariate(rng, 50_000, 0.6)
    s = sampling.bootstrap_spread(_pearson, xy, 200, n_boot=600, seed=3)
    assert s == pytest.approx((1 - 0.6**2) / math.sqrt(200 - 3), rel=0.12)  # Fisher's z: (1 - r^2) / sqrt(n - 3)


def test_spread_falls_as_one_over_root_n(rng):
    x = rng.normal(size=50_000)
    s100 = sampling.bootstrap_spread(_mean, x, 100, n_boot=600, seed=4)
    s1600 = sampling.bootstrap_spread(_mean, x, 1600, n_boot=600, seed=5)
    assert s1600 == pytest.approx(sampling.spread_at(s100, 100, 1600), rel=0.15)


def test_n_for_spread_inverts_spread_at():
    n = sampling.n_for_spread(0.1, 100, 0.01)
    assert n == 10_000
    assert sampling.spread_at(0.1, 100, n) <= 0.01 * (1 + 1e-9) < sampling.spread_at(0.1, 100, n - 1)


def test_groups_resample_whole_units(rng):
    # 200 units of 10 identical rows: the rows are not independent, the units are
    unit_values = rng.normal(size=200)
    x = np.repeat(unit_values, 10)
    groups = np.repeat(np.arange(200), 10)
    by_unit = sampling.bootstrap_spread(_mean, x, groups=groups, n_boot=600, seed=6)
    by_row = sampling.bootstrap_spread(_mean, x, n_boot=600, seed=6)
    assert by_unit == pytest.approx(_mean_se(unit_values), rel=0.12)
    assert by_row == pytest.approx(by_unit / math.sqrt(10), rel=0.15)  # rows as units: 10x too many


def test_draw_units_without_replacement_takes_distinct_units(rng):
    groups = np.repeat(np.arange(30), 3)
    rows = sampling.draw_units(90, 10, rng, groups=groups)
    assert len(rows) == 30 and len(np.unique(groups[rows])) == 10
    with pytest.raises(ValueError, match="without replacement"):
        sampling.draw_units(90, 31, rng, groups=groups)


def test_n_for_spread_refuses_a_zero_target():
    with pytest.raises(ValueError):
        sampling.n_for_spread(0.1, 10, 0.0)


def test_bootstrap_refuses_too_few_units():
    with pytest.raises(ValueError, match="2 sampling units"):
        sampling.bootstrap_spread(_mean, np.ones(5), groups=np.zeros(5))


def test_coverage_with_the_pooled_spread_uses_one_spread(rng):
    x = rng.normal(size=10_000)
    out = sampling.coverage_trials(_mean, x, 400, trials=30, n_boot=300, seed=8)
    assert len(set(out["spreads"])) == 1 and out["spreads"][0] == pytest.approx(1 / 20, rel=0.15)
    assert np.mean(np.abs(out["estimates"] - out["full_value"]) <= sampling.Z * out["spreads"]) >= 0.85


def test_half_sample_bias_of_a_variance_is_its_one_over_n_bias(rng):
    # np.var (ddof 0) of n normal values has expectation (1 - 1/n): a bias of -1/n
    n = 40
    got = [sampling.half_sample_bias(np.var, rng.normal(size=n), n_halves=20, seed=s) for s in range(400)]
    assert np.mean(got) == pytest.approx(-1 / n, rel=0.25)


def _grouped_directions(rng, k, per, d=50):
    """Rows that share their group's direction (as the tokens of one window share its context)."""
    centres = 2 * rng.normal(size=(k, d)) / math.sqrt(d)
    groups = np.repeat(np.arange(k), per)
    return centres[groups] + rng.normal(size=(k * per, d)) / math.sqrt(d), groups


def test_within_group_pairs_bias_a_few_groups_and_the_error_covers_it(rng):
    """The average cosine of the rows of k groups holds a share ~1/k of within-group pairs: a bias that no
    spread shows (the isoscore rows of book/sampling.csv); the half-sample bias in the error restores coverage."""
    from replib.metrics import avg_pairwise_cosine

    X, groups = _grouped_directions(rng, 200, 20)
    kw = dict(groups=groups, trials=30, n_boot=60, seed=9)
    plain = sampling.coverage_trials(avg_pairwise_cosine, X, 8, **kw)
    off = np.abs(plain["estimates"] - plain["full_value"])
    assert np.mean(off <= sampling.Z * plain["spreads"]) < 0.5  # the spread alone misses
    out = sampling.coverage_trials(avg_pairwise_cosine, X, 8, bias=True, **kw)
    error = np.hypot(out["spreads"], out["biases"])
    assert np.mean(np.abs(out["estimates"] - out["full_value"]) <= sampling.Z * error) >= 0.9
    assert np.mean(out["biases"]) == pytest.approx(np.mean(out["estimates"]) - out["full_value"], rel=0.35)


def test_the_jackknife_leaves_out_whole_units(rng):
    # a statistic of windows: every row of a window is the window's value, so resampling rows as if they were
    # independent would shrink the spread by sqrt(rows per window)
    windows = rng.normal(size=200)
    X = np.repeat(windows, 50)[:, None]
    groups = np.repeat(np.arange(200), 50)
    by_window = sampling.jackknife_spread(lambda A: float(A.mean()), X, groups=groups, seed=1)
    assert by_window == pytest.approx(sampling.jackknife_spread(lambda A: float(A.mean()), windows[:, None], seed=1))
    mean_se = np.mean(
        [sampling.jackknife_spread(lambda A: float(A.mean()), X, groups=groups, seed=s) for s in range(30)]
    )
    assert mean_se == pytest.approx(np.std(windows, ddof=1) / np.sqrt(200), rel=0.15)
    assert sampling.jackknife_spread(lambda A: float(A.mean()), X, seed=1) < mean_se / 3
    with pytest.raises(ValueError, match="n_groups"):
        sampling.jackknife_spread(lambda A: float(A.mean()), X[:5], n_groups=10)
