"""Isotropy of protein embeddings and their relation to sequence alignment (Hakim et al. 2025).

Method code of the chapter ``protein_isotropy`` :cite:`hakim2025protein`:

- global isotropy of a table of protein embeddings (IsoScore, effective dimensions and their
  rounding, average pairwise cosine);
- per-residue ("local") isotropy per amino acid from streaming covariances, without holding any
  per-residue matrix in memory (:class:`ResidueIsotropy`);
- pairwise global alignment (PAM250, gap open 10 / extend 1) with parasail, Biopython as an
  independent cross-check, in a resumable chunked pair engine run in parallel through joblib
  (:func:`alignment_pair_stats`);
- embedding distances of the same pairs and their correlation with the alignment measures;
- composition baselines (amino-acid and k-mer composition vectors) that no paper gives.

The package is split by concern and re-exports every public name here: :mod:`.isotropy` (global),
:mod:`.residues` (per-residue), :mod:`.alignment` (two sequences), :mod:`.crosscheck` (the engine against
Biopython and parasail's statistics kernel), :mod:`.pairs` (the pair engine and the pair measures),
:mod:`.composition` (baselines), :mod:`.spreads` (the spread of the values compared with the paper), :mod:`.setup` (the protein sample, models, embeddings), :mod:`.book` (this
book's trained model) and :mod:`.config` (the sizes per profile, read by :func:`replib.config.chapter_config`).

All arrays of points are ``(n_samples, n_features)``; metrics are computed in float64.
"""

from __future__ import annotations

from .alignment import (
    aligned_strings,
    alignment_stats,
    alignment_stats_biopython,
    alignment_stats_kernel,
    map_residues_for_alignment,
    rescore_alignment,
)
from .book import book_model_analysis, book_records, book_side_table, load_book_model
from .composition import composition_baselines, composition_embeddings
from .config import CHAPTER, PAPER_MODELS
from .crosscheck import CrossCheck, alignment_crosscheck, alignment_settings, crosscheck_records
from .isotropy import (
    AMINO_ACIDS,
    HAKIM2025_CORRELATIONS,
    HAKIM2025_REPORTED,
    accumulated_isotropy,
    effective_dimensions_from_isoscore,
    esm_layer_curves,
    esm_layer_records,
    global_isotropy,
    global_records,
    global_table,
    package_difference,
    round_effective_dimensions,
    rounding_rule_matches,
    rounding_table,
)
from .pairs import (
    alignment_pair_stats,
    all_pairs,
    correlation_table,
    embedding_pair_stats,
    identity_regimes,
    pair_correlation_records,
    pair_correlations,
    pair_embeddings,
    pair_tables,
    score_identity_records,
    shown_representations,
    with_paper_correlations,
)
from .residues import (
    PAPER_LOCAL_MEAN_EFF_DIMS,
    ResidueIsotropy,
    accumulate_residues,
    local_records,
    local_reference_lines,
    local_samples,
    residue_rows,
    sample_records,
    streaming_vs_memory,
)
from .setup import (
    ModelEmbeddings,
    embed_models,
    global_sample,
    load_protein_model,
    local_model,
    model_label,
    require_protein_models,
    user_models,
)
from .spreads import (
    PAPER_GLOBAL_MODELS,
    comparator_records,
    correlation_spread_records,
    global_spread_records,
    item_multiplicities,
    pair_bootstrap_corr,
    pair_bootstrap_corr_se,
)
