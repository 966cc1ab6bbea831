"""Streaming statistics equal the in-memory metrics (issue 26, item 1): 1e-9 relative on data that fit both ways."""

from __future__ import annotations

import numpy as np
import pytest

from replib.metrics import (
    CovarianceAccumulator,
    LayerAccumulator,
    avg_pairwise_cosine,
    effective_dimensions,
    isoscore,
)

REL = 1e-9


def _cloud(n=3000, d=48, seed=0, offset=30.0, dtype=np.float64):
    """An anisotropic cloud with a large common offset on one axis (a rogue dimension)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.geomspace(5.0, 0.05, d)
    X[:, 3] += offset
    return X.astype(dtype)


def _batches(X, sizes):
    edges = np.cumsum([0, *sizes])
    return [X[a:b] for a, b in zip(edges[:-1], edges[1:]) if b > a]


@pytest.mark.parametrize("split", [[3000], [1] * 5 + [2995], [700, 1, 1299, 1000], [64] * 46 + [56]])
def test_layer_accumulator_equals_in_memory(split):
    X = _cloud()
    acc = LayerAccumulator()
    for B in _batches(X, split):
        acc.update(B)
    s = acc.summary()
    assert s["n_samples"] == 3000 and s["n_features"] == 48
    assert s["isoscore"] == pytest.approx(isoscore(X), rel=REL)
    assert s["eff_dims"] == pytest.approx(effective_dimensions(X), rel=REL)
    assert s["avg_cosine"] == pytest.approx(avg_pairwise_cosine(X), rel=REL)
    assert s["mean_norm"] == pytest.approx(np.linalg.norm(X, axis=1).mean(), rel=REL)


def test_float32_vectors_as_the_chapters_hold_them():
    X = _cloud(dtype=np.float32, seed=1)
    acc = LayerAccumulator()
    for B in np.array_split(X, 11):
        acc.update(B)
    s = acc.summary()
    assert s["isoscore"] == pytest.approx(isoscore(X.astype(np.float64)), rel=REL)
    assert s["avg_cosine"] == pytest.approx(avg_pairwise_cosine(X), rel=REL)


def test_merge_and_state_round_trip_are_exact():
    X = _cloud(seed=2)
    whole = LayerAccumulator()
    for B in np.array_split(X, 6):
        whole.update(B)
    a, b = LayerAccumulator(), LayerAccumulator()
    for B in np.array_split(X[:1200], 3):
        a.update(B)
    for B in np.array_split(X[1200:], 3):
        b.update(B)
    merged = LayerAccumulator.from_state_dict(dict(a.state_dict())).merge(
        LayerAccumulator.from_state_dict(b.state_dict())
    )
    for key, value in whole.summary().items():
        assert merged.summary()[key] == pytest.approx(value, rel=REL)
    # a state saved and read back continues bit for bit (resuming a killed accumulation)
    resumed = LayerAccumulator()
    for B in np.array_split(X, 6)[:2]:
        resumed.update(B)
    resumed = LayerAccumulator.from_state_dict({k: np.array(v) for k, v in resumed.state_dict().items()})
    for B in np.array_split(X, 6)[2:]:
        resumed.update(B)
    assert resumed.summary() == whole.summary()


def test_layer_accumulator_refuses_a_zero_row_and_other_widths():
    acc = LayerAccumulator().update(np.ones((3, 4)))
    with pytest.raises(ValueError, match="accumulator has 4"):
        acc.update(np.ones((2, 5)))
    with pytest.raises(ValueError, match="different numbers of features"):
        acc.merge(LayerAccumulator().update(np.ones((2, 5))))
    with pytest.raises(ValueError, match="all-zero"):
        LayerAccumulator().update(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="at least 2"):
        LayerAccumulator().update(np.ones((1, 4))).summary()


def test_covariance_accumulator_still_matches_numpy():
    X = _cloud(seed=4)
    acc = CovarianceAccumulator()
    for B in np.array_split(X, 5):
        acc.update(B)
    np.testing.assert_allclose(acc.covariance(), np.cov(X, rowvar=False), rtol=1e-9, atol=1e-9)
