"""replib: the shared library of the isotropy replication book.

Small plain functions named after the quantity they compute (``isoscore(X)``,
``avg_pairwise_cosine(X)``), inputs ``(n_samples, n_features)`` checked once at
the edge, float64 inside.
"""

import warnings

# tqdm.auto in a Jupyter kernel without ipywidgets (the headless runner) warns "IProgress not found" when
# first imported and falls back to the text bar: a fact about the kernel, not about the science.
warnings.filterwarnings("ignore", message="IProgress not found")

from .metrics import (  # noqa: E402 - after the warning filter
    CovarianceAccumulator,
    avg_pairwise_cosine,
    effective_dimensions,
    isoscore,
    isoscore_star,
    partition_isotropy,
)
from .record import record, record_all  # noqa: E402

__version__ = "0.1.0"
