"""Clusters and manifolds in contextual embedding space (Cai et al. 2021).

The quantities of :cite:`cai2021isotropy`, computed on arrays of token vectors and their types, one idea
per module:

* :mod:`.cosine`: :func:`s_inter` (one random instance per type, mean off-diagonal cosine,
  :math:`S_{inter} = E_{i\\ne j}[\\cos(\\phi(t_i), \\phi(t_j))]`) and :func:`s_intra` (per type at most
  1,000 random instances, mean off-diagonal cosine, then the unweighted mean over types); every cosine
  average is exact over all pairs in O(N·d), no N×N matrix is formed;
* :mod:`.clusters`: :func:`choose_clusters` (k-means for k = 2..15 scored by the sampled, seeded silhouette
  :cite:`rousseeuw1987silhouettes`; no clustering when the best silhouette is below 0.1) and
  :func:`cluster_centered_isotropy` (per-cluster centring, S_inter/S_intra, IsoScore
  :cite:`rudman2022isoscore` and partition isotropy :cite:`mu2018allbutthetop` inside each cluster);
* :mod:`.tokens`: :func:`token_kind`, :func:`pca_view` for the Swiss-roll figures;
* :mod:`.analysis`: :func:`analyse_layer`, one layer's measurements, and :func:`analyse_layers`, several
  layers in parallel processes;
* :mod:`.setup`: the paper's models, the sizes of each profile, token streams and GloVe.

Local intrinsic dimension lives in :mod:`replib.metrics.lid`.
"""

from __future__ import annotations

from .analysis import analyse_layer, analyse_layers, layer_jobs
from .clusters import ClusterChoice, choose_clusters, cluster_centered_isotropy
from .cosine import s_inter, s_intra, type_codes, type_frequencies
from .setup import (
    PAPER_LID_TABLE3,
    PAPER_MODELS,
    config_for,
    embed_corpus,
    load_stream_model,
    static_glove,
)
from .tokens import TOKEN_KINDS, pca_view, token_kind, token_kinds

__all__ = [
    "config_for",
    "PAPER_MODELS",
    "PAPER_LID_TABLE3",
    "type_codes",
    "type_frequencies",
    "s_inter",
    "s_intra",
    "ClusterChoice",
    "choose_clusters",
    "cluster_centered_isotropy",
    "token_kind",
    "token_kinds",
    "TOKEN_KINDS",
    "pca_view",
    "load_stream_model",
    "embed_corpus",
    "static_glove",
    "analyse_layer",
    "analyse_layers",
    "layer_jobs",
]
