"""replib: the shared library of the isotropy replication book.

Small plain functions named after the quantity they compute (``isoscore(X)``,
``avg_pairwise_cosine(X)``), inputs ``(n_samples, n_features)`` checked once at
the edge, float64 inside.
"""
__version__ = "0.1.0"
