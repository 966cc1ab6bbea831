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
:mod:`.residues` (per-residue), :mod:`.alignment` (two sequences), :mod:`.pairs` (the pair engine and the
pair measures), :mod:`.composition` (baselines) and :mod:`.setup` (profiles, models, embeddings).

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
from .composition import composition_embeddings, kmer_labels
from .isotropy import (
    AMINO_ACIDS,
    HAKIM2025_CORRELATIONS,
    HAKIM2025_REPORTED,
    effective_dimensions_from_isoscore,
    global_isotropy,
    round_effective_dimensions,
    rounding_rule_matches,
)
from .pairs import (
    alignment_pair_stats,
    all_pairs,
    embedding_pair_stats,
    pair_correlations,
    pair_count_for_proteins,
    proteins_for_pair_count,
    sample_proteins,
)
from .residues import ResidueIsotropy, accumulate_residues, residue_rows
from .setup import (
    book_model_analysis,
    config_for,
    embed_global,
    load_book_model,
    load_protein_model,
    model_label,
    protein_models,
)

__all__ = [
    "AMINO_ACIDS",
    "HAKIM2025_REPORTED",
    "HAKIM2025_CORRELATIONS",
    "config_for",
    "effective_dimensions_from_isoscore",
    "round_effective_dimensions",
    "rounding_rule_matches",
    "global_isotropy",
    "map_residues_for_alignment",
    "alignment_stats",
    "alignment_stats_biopython",
    "alignment_stats_kernel",
    "aligned_strings",
    "rescore_alignment",
    "all_pairs",
    "sample_proteins",
    "pair_count_for_proteins",
    "proteins_for_pair_count",
    "alignment_pair_stats",
    "embedding_pair_stats",
    "pair_correlations",
    "composition_embeddings",
    "ResidueIsotropy",
    "residue_rows",
    "protein_models",
    "model_label",
    "load_protein_model",
    "load_book_model",
    "book_model_analysis",
    "embed_global",
    "accumulate_residues",
    "kmer_labels",
]
