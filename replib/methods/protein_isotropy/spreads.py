"""The spread of the chapter's values that are compared with the paper's numbers, so that a verdict never
rests on the sample one seed drew :cite:`hakim2025protein`.

The pairs are all pairs of a sample of proteins, so they are not independent: a correlation over them is
resampled by proteins (:func:`group_jackknife_se`). A global IsoScore is resampled by proteins too
(:func:`replib.sampling.jackknife_spread`, ten groups). The largest of a sample (the tools' cross-check) is resampled with replacement
(:func:`replib.sampling.bootstrap_spread`). And the comparators the paper quotes from Rudman et al. are put beside the
authors' released values (:func:`comparator_records`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...metrics import isoscore
from ...papers import project_tables
from ...sampling import jackknife_se, jackknife_spread
from .isotropy import HAKIM2025_CORRELATIONS

#: the paper's four models, in the global table's and the record keys' names
PAPER_GLOBAL_MODELS = ("prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert")


def group_jackknife_se(pairs, stat, n_items: int, groups: int = 20, seed: int = 0) -> float:
    r"""Delete-a-group jackknife standard error of ``stat(mask)`` over pairs of items.

    The items (proteins) are split at random into ``groups`` groups; for each group, ``stat`` is computed on
    the pairs that involve no item of that group (``mask``: a boolean array over ``pairs``), and
    :math:`\mathrm{se} = \sqrt{\tfrac{g-1}{g}\sum_i(\theta_i - \bar\theta)^2}`.

    Parameters
    ----------
    pairs : array_like (n_pairs, 2) int
        Item indices of each pair.
    stat : callable
        ``stat(mask) -> float`` on the pairs selected by ``mask``.
    n_items : int
    groups : int
    seed : int
    """
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n_pairs, 2); got {pairs.shape}")
    if not 2 <= groups <= n_items:
        raise ValueError(f"groups must be between 2 and the {n_items} items; got {groups}")
    group = np.random.default_rng(seed).permutation(n_items) % groups
    g_pairs = group[pairs]
    return jackknife_se([stat((g_pairs[:, 0] != g) & (g_pairs[:, 1] != g)) for g in range(groups)])


def _pearson_on(df: pd.DataFrame, a: str, b: str):
    x, y = df[a].to_numpy(float), df[b].to_numpy(float)
    return lambda m: float(np.corrcoef(x[m], y[m])[0, 1])


def correlation_spread_records(aln: pd.DataFrame, tables: dict, pairs, n_proteins: int, tiny: bool, seed: int) -> dict:
    """Jackknife standard errors (by proteins) of the correlations compared with the paper: the alignment
    score against identity (``corr_score_identity_spread``), and ProtBERT's five embedding correlations
    (``prot_bert_corr_<a>_<b>_spread``) when the real ProtBERT ran (``tiny`` false)."""
    out = {
        "corr_score_identity_spread": group_jackknife_se(
            pairs, _pearson_on(aln, "score", "identity"), n_proteins, seed=seed
        )
    }
    if tiny or "prot_bert" not in tables:
        return out
    for a, b in HAKIM2025_CORRELATIONS:
        if {a, b} != {"score", "identity"}:
            stat = _pearson_on(tables["prot_bert"], a, b)
            out[f"prot_bert_corr_{a}_{b}_spread"] = group_jackknife_se(pairs, stat, n_proteins, seed=seed)
    return out


def global_spread_records(vectors: dict, tiny: bool, seed: int) -> dict:
    """The spread over proteins of the paper's four models' global IsoScore (``<model>_isoscore_spread``) and
    effective dimensions (``<model>_eff_dims_ceil_spread`` = that spread times n - 1), with their real weights
    only (``tiny`` false and all four embedded)."""
    if tiny or not set(PAPER_GLOBAL_MODELS) <= set(vectors):
        return {}
    out = {}
    for name in PAPER_GLOBAL_MODELS:
        X = np.asarray(vectors[name])
        se = jackknife_spread(isoscore, X, seed=seed)
        out[f"{name}_isoscore_spread"] = se
        out[f"{name}_eff_dims_ceil_spread"] = se * (X.shape[1] - 1)
    return out


def comparator_records(tables: dict | None = None) -> dict:
    """The IsoScores the paper quotes for BERT and GPT (0.11, 0.18) against the values Rudman et al. released
    for the last layer (code layer 11) of each: ``comparator_<m>_released`` and the released value cut to the
    quote's two decimals, ``comparator_<m>_released_truncated``, and rounded, ``..._rounded``."""
    rudman = (tables or project_tables())["rudman2022"]
    out = {}
    for m in ("bert", "gpt"):
        v = rudman[f"layers/{m}/11"].value
        out[f"comparator_{m}_released"] = v
        out[f"comparator_{m}_released_truncated"] = math.floor(v * 100) / 100
        out[f"comparator_{m}_released_rounded"] = round(v, 2)
    return out
