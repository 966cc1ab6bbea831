"""Streaming (out-of-core) statistics of a point cloud, so that every layer of a model can be measured on more
vectors than fit in memory (issue 26): the covariance (IsoScore, effective dimensions), the exact average
pairwise cosine and the norms as running sums.

Every accumulator takes batches of rows in any split, merges with another one (parallel or resumed work) and
round-trips through ``state_dict`` / ``from_state_dict`` (arrays for ``np.savez``), so a long accumulation is
checkpointed and resumed exactly. On data that fit in memory each equals the in-memory metric to rounding
(``tests/test_streaming.py``: 1e-9 relative).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_array
from .cosine import unit_rows
from .isoscore import isoscore_from_covariance

__all__ = ["CovarianceAccumulator", "LayerAccumulator"]


class CovarianceAccumulator:
    r"""Accumulate the covariance of a stream of batches, float64, shifted for stability.

    Keeps the count m, the shifted sum :math:`s = \sum (x - c)` and the shifted scatter
    :math:`S = \sum (x - c)(x - c)^\top` with the shift c fixed to the mean of the first batch, so
    large common offsets (rogue dimensions) do not cancel catastrophically. Then

    .. math:: C = \frac{S - s s^\top / m}{m - 1}.

    Memory is O(d²) (8 MB for d = 1024), independent of the number of vectors. Accumulators merge
    (``a.merge(b)``), so batches can be processed in parallel or resumed from a saved state.

    Parameters
    ----------
    n_features : int, optional
        Fixed from the first batch when omitted.

    Examples
    --------
    >>> acc = CovarianceAccumulator()
    >>> for batch in np.array_split(np.random.default_rng(0).normal(size=(1000, 8)), 7):
    ...     acc.update(batch)
    >>> acc.count
    1000
    """

    def __init__(self, n_features: int | None = None):
        self.n_features = n_features
        self.count = 0
        self.shift: np.ndarray | None = None
        self._sum: np.ndarray | None = None
        self._scatter: np.ndarray | None = None

    def update(self, X) -> CovarianceAccumulator:
        """Add a batch of shape (n_samples, n_features); a batch of one row is allowed."""
        X = check_array(X, min_samples=1, min_features=1, metric="CovarianceAccumulator")
        if self.n_features is None:  # the first batch fixes the width
            self.n_features = X.shape[1]
        if X.shape[1] != self.n_features:
            raise ValueError(f"batch has {X.shape[1]} features; the accumulator has {self.n_features}")
        if self.shift is None:
            self.shift = X.mean(axis=0)
            self._sum = np.zeros(self.n_features)
            self._scatter = np.zeros((self.n_features, self.n_features))
        Y = X - self.shift
        self._sum += Y.sum(axis=0)
        self._scatter += Y.T @ Y
        self.count += X.shape[0]
        return self

    def merge(self, other: CovarianceAccumulator) -> CovarianceAccumulator:
        """Fold another accumulator (any shift) into this one."""
        if other.count == 0:
            return self
        if self.count == 0:
            self.n_features, self.count, self.shift = other.n_features, other.count, other.shift.copy()
            self._sum, self._scatter = other._sum.copy(), other._scatter.copy()
            return self
        if other.n_features != self.n_features:
            raise ValueError("accumulators have different numbers of features")
        delta = other.shift - self.shift  # re-express other's sums around self.shift
        s_o = other._sum + other.count * delta
        S_o = (
            other._scatter
            + np.outer(other._sum, delta)
            + np.outer(delta, other._sum)
            + other.count * np.outer(delta, delta)
        )
        self._sum += s_o
        self._scatter += S_o
        self.count += other.count
        return self

    def covariance(self, ddof: int = 1) -> np.ndarray:
        """Sample covariance (ddof=1 by default, as ``numpy.cov``)."""
        self._require(ddof + 1)
        C = (self._scatter - np.outer(self._sum, self._sum) / self.count) / (self.count - ddof)
        return (C + C.T) / 2.0

    def isoscore(self) -> float:
        """IsoScore of the accumulated covariance (see :func:`replib.metrics.isoscore`)."""
        self._require(2)
        return isoscore_from_covariance(self.covariance())

    def state_dict(self) -> dict:
        """Arrays for ``np.savez`` (resume a long accumulation)."""
        self._require(1)
        return {"count": np.array(self.count), "shift": self.shift, "sum": self._sum, "scatter": self._scatter}

    @classmethod
    def from_state_dict(cls, state) -> CovarianceAccumulator:
        acc = cls(int(np.asarray(state["shift"]).shape[0]))
        acc.count = int(state["count"])
        acc.shift = np.array(state["shift"], dtype=np.float64)
        acc._sum = np.array(state["sum"], dtype=np.float64)
        acc._scatter = np.array(state["scatter"], dtype=np.float64)
        return acc

    def _require(self, m: int) -> None:
        if self.count < m:
            raise ValueError(f"need at least {m} accumulated samples; have {self.count}")


class LayerAccumulator:
    r"""Everything the chapters measure on one layer's vectors, in one pass: the covariance
    (:class:`CovarianceAccumulator`: IsoScore, effective dimensions), the exact average pairwise cosine, the
    mean norm and the largest absolute entry (part of the saved state).

    The cosine is kept as the sum of the unit rows :math:`u = \sum_i \hat x_i`, so that

    .. math:: \overline{\cos} = \frac{\lVert u \rVert^2 - N}{N(N-1)}

    over every pair (:func:`~replib.metrics.avg_pairwise_cosine`, Ethayarajh 2019), in O(d) memory; the norms
    as their sum and the sum of their squares. A zero row is an error (its cosine is undefined).

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(500, 8))
    >>> acc = LayerAccumulator()
    >>> for batch in np.array_split(X, 7):
    ...     _ = acc.update(batch)
    >>> acc.summary()["n_samples"]
    500
    """

    def __init__(self, n_features: int | None = None):
        self.cov = CovarianceAccumulator(n_features)
        self._unit_sum: np.ndarray | None = None
        self._norm_sum = self._norm_sq_sum = 0.0
        self.max_abs = 0.0

    @property
    def count(self) -> int:
        return self.cov.count

    @property
    def n_features(self) -> int | None:
        return self.cov.n_features

    def update(self, X) -> LayerAccumulator:
        """Add a batch of shape (n_samples, n_features)."""
        X = check_array(X, min_samples=1, min_features=1, metric="LayerAccumulator")
        self.cov.update(X)
        if self._unit_sum is None:
            self._unit_sum = np.zeros(self.n_features)
        self._unit_sum += unit_rows(X).sum(axis=0)
        norms = np.linalg.norm(X, axis=1)
        self._norm_sum += float(norms.sum())
        self._norm_sq_sum += float(norms @ norms)
        self.max_abs = max(self.max_abs, float(np.max(np.abs(X))))
        return self

    def merge(self, other: LayerAccumulator) -> LayerAccumulator:
        empty = self.count == 0
        self.cov.merge(other.cov)  # refuses another width
        if other.count:
            self._unit_sum = other._unit_sum.copy() if empty else self._unit_sum + other._unit_sum
        self._norm_sum += other._norm_sum
        self._norm_sq_sum += other._norm_sq_sum
        self.max_abs = max(self.max_abs, other.max_abs)
        return self

    def summary(self) -> dict:
        """``n_samples``, ``n_features``, ``isoscore``, ``eff_dims`` (ι(n−1)+1), ``avg_cosine``, ``mean_norm``."""
        iota = self.cov.isoscore()  # refuses fewer than 2 samples
        n = self.count
        return {
            "n_samples": n,
            "n_features": self.n_features,
            "isoscore": iota,
            "eff_dims": iota * (self.n_features - 1) + 1.0,
            "avg_cosine": float((self._unit_sum @ self._unit_sum - n) / (n * (n - 1.0))),
            "mean_norm": self._norm_sum / n,
        }

    def state_dict(self) -> dict:
        """Arrays for ``np.savez`` (resume a long accumulation)."""
        out = {f"cov_{k}": v for k, v in self.cov.state_dict().items()}
        sums = np.array([self._norm_sum, self._norm_sq_sum])
        out.update(cos_count=np.array(self.count), cos_unit_sum=self._unit_sum, cos_norm_sums=sums)
        out["max_abs"] = np.array(self.max_abs)
        return out

    @classmethod
    def from_state_dict(cls, state) -> LayerAccumulator:
        acc = cls()
        acc.cov = CovarianceAccumulator.from_state_dict({k[4:]: state[k] for k in state if k.startswith("cov_")})
        acc._unit_sum = np.array(state["cos_unit_sum"], dtype=np.float64)
        acc._norm_sum, acc._norm_sq_sum = (float(v) for v in np.asarray(state["cos_norm_sums"], dtype=np.float64))
        acc.max_abs = float(state["max_abs"])
        return acc
