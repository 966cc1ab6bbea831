"""Streaming (out-of-core) covariance so IsoScore can use more vectors than fit in memory."""

from __future__ import annotations

import numpy as np

from .._validation import check_array
from .isoscore import isoscore_from_covariance

__all__ = ["CovarianceAccumulator"]


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
        if self.n_features is None:
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

    @property
    def mean(self) -> np.ndarray:
        self._require(1)
        return self.shift + self._sum / self.count

    def covariance(self, ddof: int = 1) -> np.ndarray:
        """Sample covariance (ddof=1 by default, as ``numpy.cov``)."""
        self._require(ddof + 1)
        C = (self._scatter - np.outer(self._sum, self._sum) / self.count) / (self.count - ddof)
        return (C + C.T) / 2.0

    def isoscore(self) -> float:
        """IsoScore of the accumulated covariance (see :func:`replib.metrics.isoscore`)."""
        self._require(2)
        return isoscore_from_covariance(self.covariance())

    def effective_dimensions(self) -> float:
        """ι(n − 1) + 1 of the accumulated covariance."""
        return self.isoscore() * (self.n_features - 1) + 1.0

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
