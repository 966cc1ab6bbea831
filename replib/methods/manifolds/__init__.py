"""Clusters and manifolds in contextual embedding space (Cai et al. 2021, :cite:`cai2021isotropy`).

One idea per module: :mod:`.clusters` (k-means chosen by the silhouette :cite:`rousseeuw1987silhouettes`, and
S_inter/S_intra, IsoScore :cite:`rudman2022isoscore` and partition isotropy :cite:`mu2018allbutthetop` inside
each cluster after per-cluster centring), :mod:`.tokens` (token kinds, the Swiss-roll PCA views),
:mod:`.analysis` (one layer's measurements, several layers in parallel processes), :mod:`.setup` (the corpora,
the token streams, every model, corpus and layer), :mod:`.summary` (the records and tables), :mod:`.checks`
(the estimators on the chapter's own data), :mod:`.spread` (the spread of the values near a bound or compared
with the paper, the Swiss roll's LID) and :mod:`.config` (the sizes of each profile). S_inter and S_intra live
in :mod:`replib.metrics.types`, local intrinsic dimension in :mod:`replib.metrics.lid`.
"""

from __future__ import annotations

from ...metrics.types import s_inter, s_intra, type_codes, type_frequencies
from .analysis import analyse_layers, layer_clusters, layer_jobs
from .checks import brute_force_records, last_layer, lid_estimator_records, repeatability_records, static_lid
from .clusters import choose_clusters, cluster_centered_isotropy, silhouette_rows
from .config import CHAPTER, PAPER_MODELS
from .setup import (
    PAPER_LID_TABLE3,
    analyse_models,
    layer_passes,
    load_corpora,
)
from .spread import (
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
from .tokens import TOKEN_KINDS, pca_view, swiss_roll_views, token_kind
