"""Clusters and manifolds in contextual embedding space (Cai et al. 2021).

The quantities of :cite:`cai2021isotropy`, computed on arrays of token vectors and their types, one idea
per module:

* :mod:`replib.metrics.types` (shared with other chapters): :func:`s_inter` (one random instance per type,
  mean off-diagonal cosine, :math:`S_{inter} = E_{i\\ne j}[\\cos(\\phi(t_i), \\phi(t_j))]`) and :func:`s_intra` (per type at most
  1,000 random instances, mean off-diagonal cosine, then the unweighted mean over types); every cosine
  average is exact over all pairs in O(N·d), no N×N matrix is formed;
* :mod:`.clusters`: :func:`choose_clusters` (k-means for k = 2..15 scored by the sampled, seeded silhouette
  :cite:`rousseeuw1987silhouettes`; no clustering when the best silhouette is below 0.1) and
  :func:`cluster_centered_isotropy` (per-cluster centring, S_inter/S_intra, IsoScore
  :cite:`rudman2022isoscore` and partition isotropy :cite:`mu2018allbutthetop` inside each cluster);
* :mod:`.tokens`: :func:`token_kind`, :func:`pca_view` for the Swiss-roll figures;
* :mod:`.analysis`: :func:`analyse_layer`, one layer's measurements, and :func:`analyse_layers`, several
  layers in parallel processes;
* :mod:`.setup`: the corpora, token streams and :func:`analyse_models` (every model, corpus and layer);
* :mod:`.summary`: the chapter's records and tables from the per-layer results;
* :mod:`.checks`: the estimators checked on the chapter's own data (brute force, repeatability, LID);
* :mod:`.spread`: the spread of the values near a bound (the smallest drops over fresh draws of the clustering
  and the instances) or compared with the paper, and the Swiss roll's LID;
* :mod:`.config`: the paper's models and the sizes of each profile (:func:`replib.config.chapter_config`).

Local intrinsic dimension lives in :mod:`replib.metrics.lid`.
"""

from __future__ import annotations

from ...metrics.types import s_inter, s_intra, type_codes, type_frequencies
from .analysis import analyse_layer, analyse_layers, layer_clusters, layer_jobs
from .checks import brute_force_records, last_layer, lid_estimator_records, repeatability_records, static_lid
from .clusters import ClusterChoice, choose_clusters, cluster_centered_isotropy, silhouette_rows
from .config import CHAPTER, KNOWN_MODELS, PAPER_MODELS
from .setup import (
    PAPER_LID_TABLE3,
    LayerRun,
    analyse_models,
    layer_passes,
    load_corpora,
    stream_corpus,
)
from .spread import (
    DROP_DRAWS,
    STATIC_TABLE3_FILES,
    drop_min_spread_records,
    intra_type_cosines,
    redrawn_drops,
    spread_records,
    static_table3_records,
    swiss_roll_lid_records,
)
from .summary import (
    anisotropy_records,
    cluster_view_records,
    cosine_long,
    lid_records,
    lid_table,
    silhouette_table,
    smallest_drop,
)
from .tokens import TOKEN_KINDS, pca_view, swiss_roll_views, token_kind, token_kinds
