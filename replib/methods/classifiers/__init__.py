"""Isotropy, clusters and classifiers (Mickus, Grönroos & Attieh 2024): the argument and the experiment
:cite:`mickus2024isotropy`.

The package is split by concern and re-exports every public name here: :mod:`.algebra` (the argument of
Sec. 2 as small functions), :mod:`.checks` (the argument checked on random data), :mod:`.training` (the
experiment of Sec. 3 and App. A: the set-up type, the training loop and its summaries), :mod:`.sbert` (SBERT
vectors and their cache), :mod:`.setups` (the set-ups of the paper built from the project's data layer),
:mod:`.experiments` (the chapter's experiments assembled from its configuration), :mod:`.paper_checks` (the
arithmetic of the paper's parameter counts) and :mod:`.config` (the sizes per profile, read by
:func:`replib.config.chapter_config`).
"""

from __future__ import annotations

from .algebra import (
    collapse_clusters,
    collapse_path,
    defect_from_cosine,
    isoscore_from_cosine,
    isotropy_defect,
    isotropy_objective,
    silhouette_objective,
    silhouette_objective_pairwise,
    variance_angle_cosine,
    variance_from_pairwise_differences,
    variance_vector,
)
from .checks import (
    ANGLE_DIMENSIONS,
    angle_records,
    angle_table,
    clustered_cloud,
    collapse_records,
    silhouette_agreement,
    silhouette_precision,
    variance_identity_records,
)
from .config import CHAPTER
from .experiments import (
    PAPER_TABLE1,
    SENTENCE_KEYS,
    WORD_KEYS,
    first_seed,
    glue_experiment,
    multilabel_standin,
    reported_table,
    sentence_records,
    sentence_setups,
    setup_table,
    standin_config,
    train_config,
    train_setups,
    word2vec_records,
    word2vec_setups,
    word_records,
    word_setups,
    word_summaries,
)
from .paper_checks import GLUE_CLASSES, implied_vectors, table1_records, table2_records
from .sbert import sbert_embeddings
from .setups import (
    GLUE_TASKS_PAPER,
    SNLI_LABELS,
    glue_setup,
    load_word2vec_bin,
    multilabel_setup,
    polarity_setup,
    snli_setup,
    supersense_setup,
    wordnet_pos_setup,
)
from .training import (
    ClassifierSetup,
    TrainConfig,
    count_parameters,
    run_seeds,
    silhouette_items,
    summarize_runs,
    train_trajectory,
    trajectory_correlations,
)
