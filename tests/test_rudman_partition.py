"""Rudman et al.'s partition score (rows of numpy.linalg.eig's eigenvector matrix) and its expectation.

The closed forms below are derived by hand, independently of the implementation: for x ~ N(0, Σ) the
expected F(c) = Σ_i exp(cᵀx_i) is N exp(cᵀΣc/2), and the variance of N(0, [[1,.8],[.8,1]]) along a direction
at angle α from its principal axis is 1.8 cos²α + 0.2 sin²α.
"""

import numpy as np
import pytest
from sklearn.decomposition import PCA

from replib.metrics import partition_isotropy, rudman_partition_score, rudman_partition_score_gaussian
from replib.synthetic import rotated_gaussian_2d, rotation_2d

COV = np.array([[1.0, 0.8], [0.8, 1.0]])


def _var(alpha_deg):
    a = np.deg2rad(alpha_deg)
    return 1.8 * np.cos(a) ** 2 + 0.2 * np.sin(a) ** 2


def test_expectation_has_the_closed_form_of_rows_off_the_axes():
    # 0° and the PCA frame: the rows are the eigenvectors (variances 1.8 and 0.2)
    on_axes = np.exp((_var(90) - _var(0)) / 2)  # exp(-0.8) = 0.4493
    # 120° and 240°: the rows lie 30° and 60° off the principal axis
    off_axes = np.exp((_var(60) - _var(30)) / 2)  # exp(-0.4) = 0.6703
    for deg, want in ((0, on_axes), (120, off_axes), (240, off_axes)):
        R = rotation_2d(deg)
        assert rudman_partition_score_gaussian(R @ COV @ R.T) == pytest.approx(want, abs=1e-12)
    assert rudman_partition_score_gaussian(np.diag([1.8, 0.2])) == pytest.approx(on_axes, abs=1e-12)
    # the literal element-wise line: both rows give exp(c²/2)-sums of unit-variance coordinates at 0°
    assert rudman_partition_score_gaussian(COV, product="elementwise") == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("deg", [0, 120, 240])
def test_sample_score_converges_to_its_expectation(deg):
    R = rotation_2d(deg)
    want = rudman_partition_score_gaussian(R @ COV @ R.T)
    got = [rudman_partition_score(rotated_gaussian_2d(deg, n=10_000, seed=s)) for s in range(8)]
    assert np.mean(got) == pytest.approx(want, abs=0.01)


def test_elementwise_matches_the_direct_double_sum():
    X = rotated_gaussian_2d(120, n=500, seed=3)
    _, C = np.linalg.eig(X.T @ X)
    F = [np.exp(X * c[None, :]).sum() for c in C]
    assert rudman_partition_score(X, product="elementwise") == pytest.approx(min(F) / max(F), rel=1e-12)


def test_rows_equal_eigenvectors_in_the_pca_frame():
    X = PCA(n_components=2).fit_transform(rotated_gaussian_2d(0, n=10_000, seed=5))
    both = partition_isotropy(X, sign="both").log_partition  # F over ±eigenvectors (eigh)
    eig_rows = rudman_partition_score(X)
    assert min(abs(np.log(eig_rows) - (both[i] - both[j])) for i in range(4) for j in range(4)) < 1e-9


def test_bad_product_is_refused():
    with pytest.raises(ValueError, match="product"):
        rudman_partition_score(np.eye(3), product="outer")
