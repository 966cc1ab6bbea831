"""The alignment engine checked against independent implementations on a sample of pairs: Biopython's
``PairwiseAligner`` :cite:`cock2009biopython` (same score, identity up to co-optimal alignments) and
parasail's statistics kernel (right score, impossible lengths) :cite:`daily2016parasail`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .alignment import (
    aligned_strings,
    alignment_stats_biopython,
    alignment_stats_kernel,
    map_residues_for_alignment,
    rescore_alignment,
)


def alignment_settings(cfg) -> dict:
    """``gap_open``, ``gap_extend`` and ``matrix`` of a configuration, as keyword arguments."""
    return {"gap_open": cfg["gap_open"], "gap_extend": cfg["gap_extend"], "matrix": cfg["matrix"]}


@dataclass
class CrossCheck:
    """Result of :func:`alignment_crosscheck`.

    Attributes
    ----------
    check : pandas.DataFrame
        The sampled rows of the pair table (columns i, j, score, matches, length, identity).
    biopython, kernel : pandas.DataFrame
        The same statistics by Biopython and by parasail's statistics kernel (index of ``check``).
    too_short : ndarray of bool
        Pairs whose kernel length is shorter than the longer sequence (impossible for a global alignment).
    worst : label
        The sampled pair with the largest identity difference from Biopython.
    worst_table : pandas.DataFrame
        That pair rescored from scratch: parasail's and Biopython's alignments, the kernel, Biopython's counts.
    worst_both_optimal : bool
        Whether both alignments of that pair score the optimal score (co-optimal alignments).
    differing_both_optimal : pandas.Series of bool
        For every sampled pair whose identities differ (index of ``check``), whether both tools' alignments,
        rescored from scratch, score the optimal score: a difference that is co-optimal tie-breaking.
    """

    check: pd.DataFrame
    biopython: pd.DataFrame
    kernel: pd.DataFrame
    too_short: np.ndarray
    worst: object
    worst_table: pd.DataFrame
    worst_both_optimal: bool
    differing_both_optimal: pd.Series


def _stats(fn, seqs, check, settings) -> pd.DataFrame:
    rows = [
        fn(map_residues_for_alignment(seqs[i]), map_residues_for_alignment(seqs[j]), **settings)
        for i, j in zip(check.i, check.j)
    ]
    return pd.DataFrame(rows, index=check.index)


def _rescored(seqs, check, pair, settings) -> tuple[dict, bool]:
    """Both tools' alignments of one sampled pair rescored from scratch (tool -> score, matches, length,
    identity), and whether both reach the pair's optimal score."""
    a, b = (map_residues_for_alignment(seqs[k]) for k in (check.i[pair], check.j[pair]))
    g = (settings["gap_open"], settings["gap_extend"], settings["matrix"])
    resc = {tool: rescore_alignment(*aligned_strings(a, b, tool, *g), *g) for tool in ("parasail", "biopython")}
    return resc, all(r["score"] == int(check.score[pair]) for r in resc.values())


def alignment_crosscheck(
    seqs: Sequence[str], aln: pd.DataFrame, n_pairs: int, seed: int, *, gap_open: int, gap_extend: int, matrix: str
) -> CrossCheck:
    """Re-align a seeded sample of ``n_pairs`` pairs of ``aln`` (the output of
    :func:`~replib.methods.protein_isotropy.alignment_pair_stats` on ``seqs``) with Biopython and parasail's statistics
    kernel, rescore every pair whose identities differ (are both alignments optimal?) and show the pair where
    they differ most."""
    settings = {"gap_open": gap_open, "gap_extend": gap_extend, "matrix": matrix}
    check = aln.sample(min(n_pairs, len(aln)), random_state=seed)
    bio = _stats(alignment_stats_biopython, seqs, check, settings)
    kern = _stats(alignment_stats_kernel, seqs, check, settings)
    too_short = np.array([k < max(len(seqs[i]), len(seqs[j])) for k, i, j in zip(kern["length"], check.i, check.j)])
    d_identity = (bio.identity - check.identity).abs()
    worst = d_identity.idxmax()  # its alignments by both tools rescored from scratch, beside the kernel's counts
    resc, both = _rescored(seqs, check, worst, settings)
    resc["parasail stats kernel (no traceback)"] = kern.loc[worst, list(resc["parasail"])].to_dict()
    resc["Biopython counts()"] = bio.loc[worst, list(resc["parasail"])].to_dict()
    table = pd.DataFrame(resc).T.rename_axis("worst pair, alignment from")
    differ = d_identity.index[d_identity > 0]
    coopt = pd.Series([_rescored(seqs, check, k, settings)[1] for k in differ], index=differ, dtype=bool)
    return CrossCheck(check, bio, kern, too_short, worst, table, both, coopt)


def crosscheck_records(cc: CrossCheck) -> dict:
    """Pairs checked, largest score and identity differences from Biopython, the pairs whose identities differ
    and the largest difference among those whose two alignments are not both optimal (0 when every difference
    is co-optimal tie-breaking: the statement that holds on every pair, whichever pairs a seed draws; the
    largest difference over all pairs depends on whether the sample holds a rare co-optimal pair of very
    different identities), the kernel's impossible lengths and score difference, and whether the worst pair's
    two alignments are co-optimal."""
    d_identity = (cc.biopython.identity - cc.check.identity).abs()
    not_coopt = d_identity[cc.differing_both_optimal.index[~cc.differing_both_optimal.to_numpy()]]
    return {
        "biopython_n_pairs": len(cc.check),
        "biopython_score_max_diff": int((cc.biopython.score - cc.check.score).abs().max()),
        "biopython_identity_max_diff": float(d_identity.max()),
        "biopython_n_identity_differs": len(cc.differing_both_optimal),
        "biopython_identity_max_diff_not_coopt": float(not_coopt.max()) if len(not_coopt) else 0.0,
        "biopython_identity_mean_diff": float(d_identity.mean()),
        "biopython_identity_frac_over_002": float((d_identity > 0.02).mean()),
        "stats_kernel_impossible_length_frac": float(np.mean(cc.too_short)),
        "stats_kernel_score_max_diff": int(max(abs(k - s) for k, s in zip(cc.kernel["score"], cc.check.score))),
        "coopt_worst_both_optimal": cc.worst_both_optimal,
    }
