"""Metric core: agreement with the IsoScore package, invariances, exact identities and clear errors."""

import warnings

import numpy as np
import pytest
from sklearn.metrics.pairwise import cosine_similarity

from replib._validation import OrientationWarning
from replib.metrics import (
    CovarianceAccumulator,
    avg_pairwise_cosine,
    effective_dimensions,
    isoscore,
    isoscore_from_covariance,
    isoscore_star,
    partition_isotropy,
)
from replib.synthetic import even_k_of_n, random_rotation

IsoScorePkg = pytest.importorskip("IsoScore.IsoScore", reason="IsoScore 2.0.1 package (test oracle) not installed")


def _clouds() -> dict:
    """Fixed test clouds (their own seed: the same whatever tests run)."""
    rng = np.random.default_rng(1234)
    return {
        "scaled": rng.normal(size=(3000, 100)) * np.linspace(0.1, 3, 100),
        "iso": rng.normal(size=(2000, 50)),
        "lowrank_offset": rng.normal(size=(1500, 4)) @ rng.normal(size=(4, 40)) + 25.0,
        "heavy": rng.standard_t(3, size=(4000, 16)),
        "fewer_samples": rng.normal(size=(60, 200)) * np.linspace(0.5, 2, 200),
    }


CLOUDS = _clouds()


@pytest.mark.parametrize("name", sorted(CLOUDS))
def test_isoscore_agrees_with_package(name):
    X = CLOUDS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrientationWarning)
        ours = isoscore(X)
    assert abs(ours - float(IsoScorePkg.IsoScore(X))) < 1e-6


def test_isoscore_star_agrees_with_package(rng):
    X = CLOUDS["fewer_samples"]
    C0 = np.cov(rng.normal(size=(5000, 200)), rowvar=False)
    for zeta in (0.0, 0.3, 0.9):
        ours = isoscore_star(X, C0, zeta)
        theirs = float(IsoScorePkg.IsoScore_star(X, C0, zeta))
        assert abs(ours - theirs) < 1e-6


def test_isoscore_star_limits():
    X = CLOUDS["scaled"]
    assert isoscore_star(X, np.eye(100), 0.0) == pytest.approx(isoscore(X), abs=1e-12)
    assert isoscore_star(X, np.eye(100), 1.0) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="zeta"):
        isoscore_star(X, np.eye(100), 1.5)
    with pytest.raises(ValueError, match="C0 must have shape"):
        isoscore_star(X, np.eye(10), 0.5)


@pytest.mark.parametrize("n", [2, 7, 25, 128])
def test_even_k_of_n_is_exact(n):
    for k in range(1, n + 1, max(1, n // 9)):
        assert isoscore(even_k_of_n(k, n, seed=k)) == pytest.approx((k - 1) / (n - 1), abs=1e-12)


def test_effective_dimensions_is_participation_ratio():
    X = CLOUDS["scaled"]
    n = X.shape[1]
    assert effective_dimensions(X) == pytest.approx(isoscore(X) * (n - 1) + 1, rel=1e-12)
    ev = np.linalg.eigvalsh(np.cov(X, rowvar=False))
    assert effective_dimensions(X) == pytest.approx(ev.sum() ** 2 / (ev**2).sum(), rel=1e-9)


def test_isoscore_invariances(rng):
    X = CLOUDS["scaled"][:, :30]
    base = isoscore(X)
    R = random_rotation(30, seed=3)
    assert isoscore(X @ R.T) == pytest.approx(base, abs=1e-12)
    assert isoscore(X + 1e4) == pytest.approx(base, abs=1e-9)
    assert isoscore(X * 1e-4) == pytest.approx(base, abs=1e-12)
    assert isoscore(X[rng.permutation(len(X))]) == pytest.approx(base, abs=1e-12)


@pytest.mark.parametrize("name", ["scaled", "iso", "lowrank_offset", "heavy"])
@pytest.mark.parametrize("scale", [1.0, 1e30, 1e-30])
def test_float32_input_gives_the_float64_isoscore(name, scale):
    """float32 input takes the float32 scatter path (blocks summed in float64): the same IsoScore as the
    float64 computation on the same values, also with a common mean far above the spread, at extreme
    scales (no overflow of squares in float32) and across block edges."""
    X32 = (CLOUDS[name] * scale).astype(np.float32)
    if name == "lowrank_offset":
        X32 = X32 + np.float32(500 * scale)  # mean about 500 times the spread
    want = isoscore(X32.astype(np.float64))
    for block in (4096, 333):
        from replib.metrics.isoscore import _participation_ratio, _trace_and_frobenius_sq

        tr, fro2 = _trace_and_frobenius_sq(X32, block_rows=block)
        got = (tr * tr / fro2 - 1) / (X32.shape[1] - 1)
        assert abs(got - want) < 1e-7, (block, got, want)
    assert abs(isoscore(X32) - want) < 1e-7
    assert effective_dimensions(X32) == pytest.approx(_participation_ratio(X32.astype(np.float64)), rel=1e-6)


def test_float32_constant_input_is_refused():
    with pytest.raises(ValueError, match="zero total variance"):
        isoscore(np.ones((50, 4), dtype=np.float32))


def test_isoscore_extremes(rng):
    line = np.outer(rng.normal(size=500), rng.normal(size=8))
    assert isoscore(line + 1e-300) == pytest.approx(0.0, abs=1e-9)
    assert isoscore_from_covariance(3.7 * np.eye(12)) == 1.0


def test_transposed_input_warns_and_differs():
    X = CLOUDS["scaled"]
    with pytest.warns(OrientationWarning, match="transposed"):
        t = isoscore(X.T)
    assert abs(t - isoscore(X)) > 0.1


def test_fewer_samples_deflates_towards_m_over_n_plus_m(rng):
    n = 200
    for m in (20, 100, 400):
        X = rng.normal(size=(m, n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OrientationWarning)
            assert isoscore(X) == pytest.approx(m / (n + m), abs=0.03)


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.array([[1.0, np.nan], [2.0, 3.0], [1.0, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, np.inf], [2.0, 3.0], [1.0, 1.0]]), "NaN or infinite"),
        (np.ones((1, 5)), "at least 2 samples"),
        (np.ones((5, 1)), "at least 2 features"),
        (np.ones((5, 3)), "zero total variance"),
        (np.ones(5), "2-D"),
        (np.ones((2, 3, 4)), "2-D"),
        ([["a", "b"], ["c", "d"]], "numeric"),
    ],
)
def test_clear_errors(bad, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OrientationWarning)
        with pytest.raises(ValueError, match=match):
            isoscore(bad)


def test_torch_tensor_input():
    torch = pytest.importorskip("torch")
    X = CLOUDS["iso"]
    t = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    assert isoscore(t) == pytest.approx(isoscore(X.astype(np.float32)), abs=1e-12)


def test_avg_pairwise_cosine_matches_brute_force(rng):
    X = rng.normal(size=(700, 12)) + 0.7
    S = cosine_similarity(X)
    brute = (S.sum() - np.trace(S)) / (len(X) * (len(X) - 1))
    assert avg_pairwise_cosine(X) == pytest.approx(brute, abs=1e-12)
    Z = X.copy()
    Z[3] = 0.0
    with pytest.raises(ValueError, match="all-zero rows"):
        avg_pairwise_cosine(Z)


def _naive_partition(W):
    """The authors' formula in plain float64 (no log space), same eigenvectors."""
    _, U = np.linalg.eigh(W.T @ W)
    F = np.exp(W @ U).sum(axis=0)
    return F.min() / F.max()


def test_partition_isotropy_matches_naive_and_survives_underflow(rng):
    W = rng.normal(size=(3000, 16))
    W[:, 0] += 1.0
    assert partition_isotropy(W).value == pytest.approx(_naive_partition(W), rel=1e-9)
    W[:, 0] += 800.0  # naive exp overflows (inf/inf); log space stays exact
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(_naive_partition(W)) or _naive_partition(W) == 0.0
    res = partition_isotropy(W)
    assert np.isfinite(res.log10) and res.log10 < -100
    assert partition_isotropy(W, sign="both").log10 <= res.log10 + 1e-12
    with pytest.raises(ValueError, match="sign"):
        partition_isotropy(W, sign="plus")


@pytest.mark.parametrize("shift", [0.0, 700.0, -700.0])
def test_log_partition_blocks_match_scipy_logsumexp(shift):
    """The blocked running-maximum log-sum-exp equals scipy's on the whole product, across block edges
    (the row blocks' maxima differ by hundreds: a block that sets a new maximum rescales the sum)."""
    from scipy.special import logsumexp

    from replib.metrics.partition import _log_partition

    g = np.random.default_rng(7)
    W = g.normal(size=(1000, 6))
    W[500:, 0] += shift  # the second half dominates (or vanishes) in the first direction
    U = np.linalg.qr(g.normal(size=(6, 6)))[0]
    ref = logsumexp(W @ U, axis=0)
    for block in (64, 333, 1000, 5000):
        np.testing.assert_allclose(_log_partition(W, U, block_rows=block), ref, rtol=1e-13, atol=1e-10)


def test_partition_isotropy_isotropic_is_near_one(rng):
    W = rng.normal(size=(20000, 8)) * 0.05
    assert partition_isotropy(W, sign="both").value > 0.95


def test_covariance_accumulator_matches_numpy_and_merges(rng):
    X = rng.normal(size=(5000, 24)) * np.linspace(0.1, 5, 24)
    X[:, 3] += 1e6  # a large common offset must not cancel catastrophically
    a, b = CovarianceAccumulator(), CovarianceAccumulator()
    for chunk in np.array_split(X[:3000], 13):
        a.update(chunk)
    for chunk in np.array_split(X[3000:], 5):
        b.update(chunk)
    a.merge(b)
    assert a.count == 5000
    assert np.allclose(a.covariance(), np.cov(X, rowvar=False), rtol=1e-9, atol=1e-9)
    assert a.isoscore() == pytest.approx(isoscore(X), abs=1e-9)
    restored = CovarianceAccumulator.from_state_dict(a.state_dict())
    assert restored.isoscore() == a.isoscore()
    with pytest.raises(ValueError, match="features"):
        a.update(np.ones((2, 5)))
    with pytest.raises(ValueError, match="at least 2"):
        CovarianceAccumulator().update(np.ones((1, 3))).isoscore()
