"""Property-based tests (Hypothesis) of the metrics' invariances and of the shared input validation.

Point clouds are drawn as ``Z @ A + b`` from a seeded generator (Hypothesis draws the seed, the shape, the
mixing matrix's conditioning, the scale and the shift), so every example is a valid cloud and shrinks to a
small readable one. ``max_examples`` is kept modest and ``deadline=None``: these are correctness checks,
never timings.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replib._validation import OrientationWarning, check_array
from replib.metrics import (
    CovarianceAccumulator,
    avg_pairwise_cosine,
    effective_dimensions,
    isoscore,
    isoscore_from_covariance,
    partition_isotropy,
)
from replib.metrics.lid import lid_mle
from replib.metrics.silhouette import silhouette_score
from replib.synthetic import even_k_of_n, random_rotation

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clouds(draw, min_n=6, max_n=60, min_d=2, max_d=8):
    """A (n, d) cloud with n > d: correlated Gaussian, random anisotropy, offset."""
    seed = draw(st.integers(0, 2**32 - 1))
    d = draw(st.integers(min_d, max_d))
    n = draw(st.integers(max(min_n, d + 2), max(max_n, d + 3)))
    spread = draw(st.floats(0.0, 3.0))  # log10 of the largest / smallest axis
    rng = np.random.default_rng(seed)
    A = random_rotation(d, seed=seed % 10_000) * np.logspace(0, -spread, d)[:, None]
    return rng.normal(size=(n, d)) @ A + rng.normal(size=d)


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrientationWarning)
        return f(*a, **k)


# ----------------------------------------------------------------------------------------- invariances
@FAST
@given(clouds(), st.integers(0, 10_000))
def test_isoscore_rotation_invariance(X, seed):
    R = random_rotation(X.shape[1], seed=seed)
    assert isoscore(X @ R.T) == pytest.approx(isoscore(X), abs=1e-9)


@FAST
@given(clouds(), st.floats(-150, 150))
def test_isoscore_and_effective_dims_scale_invariance_over_300_orders(X, log10c):
    c = 10.0**log10c
    assert isoscore(X * c) == pytest.approx(isoscore(X), abs=1e-12)
    assert effective_dimensions(X * c) == pytest.approx(effective_dimensions(X), rel=1e-12)


@FAST
@given(clouds(), st.floats(-1e3, 1e3), st.integers(0, 10_000))
def test_isoscore_translation_invariance(X, shift, seed):
    t = shift * np.random.default_rng(seed).normal(size=X.shape[1]) * X.std()
    assert isoscore(X + t) == pytest.approx(isoscore(X), abs=1e-7)


@FAST
@given(clouds())
def test_isoscore_and_effective_dims_bounds(X):
    n, d = X.shape
    iota, k = isoscore(X), effective_dimensions(X)
    assert 0.0 <= iota <= 1.0
    assert 1.0 - 1e-12 <= k <= min(d, n - 1) + 1e-9
    assert k == pytest.approx(iota * (d - 1) + 1, rel=1e-9)


@FAST
@given(st.integers(2, 12), st.data())
def test_isoscore_even_k_of_n_is_exact(n, data):
    k = data.draw(st.integers(1, n))
    assert isoscore(even_k_of_n(k, n, seed=k)) == pytest.approx((k - 1) / (n - 1), abs=1e-10)


@FAST
@given(clouds(), st.floats(-300, 300))
def test_isoscore_from_covariance_scale_invariance(X, log10c):
    C = np.cov(X, rowvar=False)
    assert isoscore_from_covariance(C * 10.0**log10c) == pytest.approx(isoscore(X), abs=1e-9)


@FAST
@given(clouds(), st.floats(-150, 150), st.integers(0, 10_000))
def test_cosine_scale_invariance_per_row_and_global(X, log10c, seed):
    base = avg_pairwise_cosine(X)
    assert avg_pairwise_cosine(X * 10.0**log10c) == pytest.approx(base, abs=1e-12)
    rowscale = 10.0 ** np.random.default_rng(seed).uniform(-100, 100, size=(len(X), 1))
    assert avg_pairwise_cosine(X * rowscale) == pytest.approx(base, abs=1e-12)


@FAST
@given(clouds(max_n=30), st.integers(0, 10_000))
def test_cosine_rotation_invariance_bounds_and_brute_force(X, seed):
    n = len(X)
    c = avg_pairwise_cosine(X)
    R = random_rotation(X.shape[1], seed=seed)
    assert avg_pairwise_cosine(X @ R.T) == pytest.approx(c, abs=1e-12)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = U @ U.T
    assert c == pytest.approx((G.sum() - np.trace(G)) / (n * (n - 1)), abs=1e-12)
    assert -1.0 / (n - 1) - 1e-12 <= c <= 1.0 + 1e-12


@FAST
@given(clouds(), st.integers(2, 4), st.floats(-150, 150), st.integers(0, 10_000))
def test_silhouette_scale_invariance(X, k, log10c, seed):
    labels = np.arange(len(X)) % k
    np.random.default_rng(seed).shuffle(labels)
    base = silhouette_score(X, labels, device="cpu")
    assert silhouette_score(X * 10.0**log10c, labels, device="cpu") == pytest.approx(base, abs=1e-9)
    assert -1.0 <= base <= 1.0


@FAST
@given(clouds(min_d=2, max_d=6))
def test_partition_isotropy_bounds_and_huge_scale(X):
    r = partition_isotropy(X)
    assert 0.0 <= r.value <= 1.0 and r.log10 <= 0.0
    # eigenvectors are scale-invariant: the largest finite scale gives the same directions, finite log10
    big = partition_isotropy(X * 1e150)
    assert np.isfinite(big.log10) and big.log10 <= 0.0


@FAST
@given(clouds(), st.integers(1, 5))
def test_streaming_covariance_matches_batch(X, parts):
    acc = CovarianceAccumulator()
    for b in np.array_split(X, parts):
        if len(b):
            acc.update(b)
    assert acc.isoscore() == pytest.approx(isoscore(X), abs=1e-9)


# ---------------------------------------------------------------------- scale regression (issue 16)
def test_isoscore_at_1e78_and_cosine_at_1e155_equal_the_unscaled_values():
    X = np.random.default_rng(0).normal(size=(400, 12)) @ np.diag(np.linspace(0.2, 3, 12)) + 1.5
    assert isoscore(X * 1e78) == pytest.approx(isoscore(X), abs=1e-12)  # was NaN
    assert avg_pairwise_cosine(X * 1e155) == pytest.approx(avg_pairwise_cosine(X), abs=1e-12)  # was wrong
    assert avg_pairwise_cosine(X * 1e-170) == pytest.approx(avg_pairwise_cosine(X), abs=1e-12)  # underflow


# ------------------------------------------------------------------------------ one validator everywhere
def _labels(n):
    return np.arange(n) % 2


METRICS = {
    "isoscore": isoscore,
    "effective_dimensions": effective_dimensions,
    "avg_pairwise_cosine": avg_pairwise_cosine,
    "partition_isotropy": partition_isotropy,
    "silhouette": lambda X: silhouette_score(X, _labels(len(X)), device="cpu"),
    "lid_mle": lambda X: lid_mle(X, k=3),
    "CovarianceAccumulator": lambda X: CovarianceAccumulator().update(X),
}
COVARIANCE_BASED = [
    "isoscore",
    "effective_dimensions",
    "partition_isotropy",
]


@FAST
@given(clouds(min_n=8), st.sampled_from(sorted(METRICS)), st.sampled_from([np.nan, np.inf, -np.inf]), st.data())
def test_nonfinite_values_are_refused_naming_the_metric(X, name, bad, data):
    i = data.draw(st.integers(0, X.shape[0] - 1))
    j = data.draw(st.integers(0, X.shape[1] - 1))
    X = X.copy()
    X[i, j] = bad
    with pytest.raises(ValueError, match=rf"{name}.*NaN or infinite"):
        _quiet(METRICS[name], X)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_complex_masked_and_non_numeric_are_refused(name):
    X = np.random.default_rng(1).normal(size=(20, 4))
    f = METRICS[name]
    with pytest.raises(ValueError, match="complex"):
        f(X + 1e-3j)
    masked = np.ma.masked_array(X, mask=np.zeros_like(X, dtype=bool))
    _quiet(f, masked)  # no masked entry: used as its data
    masked[3, 1] = np.ma.masked
    with pytest.raises(ValueError, match=rf"{name}.*masked array with 1 masked"):
        f(masked)
    with pytest.raises(ValueError, match="numeric"):
        f(np.array([["a"] * 4] * 20))


@pytest.mark.parametrize("name", sorted(METRICS))
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_torch_tensors_of_every_float_dtype(name, dtype):
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(2).normal(size=(30, 4)) * np.array([1.0, 2.0, 0.5, 3.0])
    t = torch.tensor(X, dtype=getattr(torch, dtype))
    exact = t.to(torch.float64).numpy()  # the values the tensor actually holds
    got, want = METRICS[name](t), METRICS[name](exact)
    if name == "CovarianceAccumulator":
        got, want = got.isoscore(), want.isoscore()
    elif name == "lid_mle":
        got, want = got.mean, want.mean
    elif name == "partition_isotropy":
        got, want = got.log10, want.log10
    if dtype == "float32" and name in ("isoscore", "effective_dimensions"):
        # float32 data keep IsoScore's float32 scatter path (replib.metrics.isoscore._trace_and_frobenius_sq),
        # documented to about 1e-9 of the float64 value; every other dtype and metric is computed in float64
        np.testing.assert_allclose(got, want, rtol=1e-7)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_orientation_warning_exactly_where_a_covariance_is_estimated(name):
    X = np.random.default_rng(3).normal(size=(6, 10))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        METRICS[name](X)
    warned = any(issubclass(x.category, OrientationWarning) for x in w)
    assert warned == (name in COVARIANCE_BASED)


@pytest.mark.parametrize(
    "name,n",
    [("isoscore", 1), ("avg_pairwise_cosine", 1), ("lid_mle", 3), ("silhouette", 1), ("partition_isotropy", 1)],
)
def test_too_few_samples(name, n):
    with pytest.raises(ValueError, match="at least"):
        METRICS[name](np.random.default_rng(4).normal(size=(n, 3)))


def test_check_array_messages_name_the_metric_and_row():
    X = np.zeros((5, 2))
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"^mymetric: X contains 1 NaN or infinite values \(first in row 3\)"):
        check_array(X, metric="mymetric")


def test_check_array_finite_sum_shortcut_and_max_abs_scale():
    """check_array looks at every entry only when the sum is not finite: finite values whose sum overflows
    pass without a warning, and +inf and -inf that cancel nowhere are still found; max_abs_scale's max|X| from
    the extremes equals np.abs(X).max(), negative extremes included."""
    from replib._validation import max_abs_scale

    X = np.full((4, 3), 1.5e308)
    X[1, 2] = -1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_array(X) is not None
    for bad in ([np.inf, -np.inf], [np.nan, 1.0], [np.inf, 1.0]):
        Y = np.ones((4, 3))
        Y[2, 0], Y[3, 1] = bad
        with pytest.raises(ValueError, match=r"contains \d NaN or infinite values \(first in row 2\)"):
            check_array(Y)
    for Z in (X, -np.abs(np.random.default_rng(0).normal(size=(7, 5))), np.zeros((2, 2)), np.full((2, 2), -0.0)):
        s = float(np.abs(Z).max())
        scaled, scale = max_abs_scale(Z)
        assert scale == (s if s > 0 else 1.0)
        np.testing.assert_array_equal(scaled, Z / scale)
