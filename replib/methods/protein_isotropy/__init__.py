"""Isotropy of protein embeddings and their relation to sequence alignment (Hakim et al. 2025,
:cite:`hakim2025protein`).

The package is split by concern and re-exports the chapter's names here: :mod:`.isotropy` (global isotropy:
IsoScore, effective dimensions and their rounding, average cosine), :mod:`.residues` (per-residue isotropy per
amino acid from streaming covariances), :mod:`.alignment` (global alignment of two sequences, PAM250, gap open
10 / extend 1, with parasail), :mod:`.crosscheck` (the engine against Biopython and parasail's statistics
kernel), :mod:`.pairs` (the resumable parallel pair engine, embedding distances of the same pairs and their
correlations), :mod:`.composition` (amino-acid and k-mer composition baselines that no paper gives),
:mod:`.spreads` (the spread of the values compared with the paper), :mod:`.setup` (the protein sample, models,
embeddings), :mod:`.streamed` (the paper-scale streamed embeddings), :mod:`.book` (this book's trained model)
and :mod:`.config` (the sizes per profile). Arrays of points are ``(n_samples, n_features)``; metrics are
computed in float64.
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
from .crosscheck import alignment_crosscheck, alignment_settings, crosscheck_records
from .isotropy import (
    AMINO_ACIDS,
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
    ResidueIsotropy,
    accumulate_residues,
    local_records,
    local_reference_lines,
    local_samples,
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
