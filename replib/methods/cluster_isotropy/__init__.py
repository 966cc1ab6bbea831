"""Cluster-based isotropy enhancement (Rajaee & Pilehvar 2021) and all-but-the-top (Mu & Viswanath 2018).

The transform :class:`ClusterIsotropy` clusters token vectors with k-means, makes every cluster zero-mean
and removes, inside each cluster, the projection on that cluster's top ``n_pc`` principal directions
:cite:`rajaee2021cluster` (the formula: :mod:`.transform`). With one cluster it is the global all-but-the-top
post-processing of Mu & Viswanath :cite:`mu2018allbutthetop`, so the paper's "global" baseline runs through
the same code.

The package is split by concern, and re-exports every public name here:

* :mod:`.transform`: the transform itself (clustering, cluster means and directions, :class:`ClusterIsotropy`);
* :mod:`.setup`: the methods, the data and models;
* :mod:`.config`: the hyperparameters of the paper and the sizes per profile (read by
  :func:`replib.config.chapter_config`);
* :mod:`.experiments`: the chapter's experiments assembled from its configuration;
* :mod:`.sts`: the STS protocol of the paper (token pool per data set, mean of processed token vectors,
  cosine, Spearman x 100), the hyperparameter search on STS-B dev, isotropy tables;
* :mod:`.spreads`: the spread of the values compared with the paper (run-to-run sd over seeds, binomial
  errors of the classification scores), and the smallest gain of I(W) over more runs;
* :mod:`.classification`: the classification protocol (flattened last-layer token matrix, MLP) with a fresh
  classifier for every condition;
* :mod:`.verbs`: Table 4, verb tense against meaning on SemCor (mean distances to the occurrences with the
  same/different tense and sense).

See the chapter ``notebooks/cluster_isotropy``.
"""

from __future__ import annotations

from .classification import (
    MLPClassifier,
    classification_metric,
    compare_classification,
    pair_token_features,
    train_classifier,
)
from .config import CHAPTER, PAPER_HPARAMS, STS_DATASETS
from .experiments import (
    DATASET_KEYS,
    VARIANT_KEYS,
    ChapterModels,
    chapter_seeds,
    choose_hyperparameters,
    classification_experiment,
    classification_records,
    deck_experiment,
    deck_records,
    deck_table,
    isotropy_records,
    isotropy_tables,
    layer_sentences,
    plane_views,
    sample_seed,
    semcor_experiment,
    semcor_records,
    semcor_rows,
    short_names,
    sts_experiment,
    sts_pairs,
    sts_records,
    sts_summary,
    table1_means,
    transform_checks,
)
from .setup import (
    DECK_VARIANTS,
    METHODS,
    embed_pairs,
    load_classification,
    load_sts_pairs,
    make_transform,
)
from .spreads import (
    IW_GAIN_DRAWS,
    PAPER_RUNS,
    classification_spread_records,
    difference_spread,
    iw_gain_records,
    notebook_records,
    sts_spread_records,
    table1_spread_records,
    table3_average_records,
)
from .sts import (
    cosine_rows,
    layer_isotropy,
    mean_pool,
    run_sts,
    sts_correlations,
    token_pool,
    tune_hyperparameters,
    zero_mean_isotropy,
)
from .transform import (
    CLUSTERERS,
    GMM_MAX_FIT_ROWS,
    ClusterIsotropy,
    EmptyClusterWarning,
    SmallClusterWarning,
    all_but_the_top,
    cluster_labels,
    lloyd_points,
    remove_cluster_directions,
    transform_residuals,
)
from .verbs import (
    anchor_distances,
    pairwise_distances,
    select_polysemous_verbs,
    tense_meaning_distances,
    verb_occurrences,
    verb_tense,
    verb_vectors,
    word_pieces,
)
