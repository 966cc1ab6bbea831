"""The spread of the chapter's values that are compared with the paper's numbers, so that a verdict never
rests on the sample one seed drew :cite:`hakim2025protein`.

The pairs are all pairs of a sample of proteins, so they are not independent: a correlation over them is
bootstrapped by proteins (:func:`pair_bootstrap_corr_se`). A global IsoScore is resampled by proteins too
(:func:`replib.sampling.jackknife_spread`, ten groups). And the comparators the paper quotes from Rudman et al. are put
beside the authors' released values (:func:`comparator_records`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...metrics import isoscore
from ...papers import project_tables
from ...sampling import jackknife_spread
from .isotropy import HAKIM2025_CORRELATIONS

#: the paper's four models, in the global table's and the record keys' names
PAPER_GLOBAL_MODELS = ("prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert")


#: fewest items a bootstrap over items takes: at least 10 independent units behind a spread
PAIR_BOOT_MIN_ITEMS = 10
#: bootstrap resamples of the items behind a correlation over their pairs
PAIR_BOOT = 200


def item_multiplicities(n_items: int, n_boot: int = PAIR_BOOT, seed: int = 0) -> np.ndarray:
    """How often each of ``n_items`` items is drawn in each of ``n_boot`` bootstrap resamples of ``n_items``
    items with replacement: array (n_items, n_boot) of counts, each column summing to ``n_items``."""
    if n_items < PAIR_BOOT_MIN_ITEMS:
        raise ValueError(f"a bootstrap over items needs at least {PAIR_BOOT_MIN_ITEMS} items; got {n_items}")
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2, got {n_boot}")
    draws = np.random.default_rng(seed).integers(0, n_items, size=(n_boot, n_items))
    return np.stack([np.bincount(d, minlength=n_items) for d in draws], axis=1).astype(np.float64)


def _pair_sums(pairs: np.ndarray, v: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Per resample (column of ``W``), the sum of ``v`` over the pairs of the resampled items:
    :math:`\\sum_{(i,j)} w_i w_j v_{ij}`, as :math:`\\tfrac12 w^\\top M w` with :math:`M` the symmetric matrix of
    ``v`` over the items."""
    n = W.shape[0]
    M = np.zeros((n, n))
    np.add.at(M, (pairs[:, 0], pairs[:, 1]), v)
    M += M.T
    return 0.5 * np.einsum("ib,ib->b", W, M @ W)


def pair_bootstrap_corr(pairs, x, y, n_items: int, n_boot: int = PAIR_BOOT, seed: int = 0) -> np.ndarray:
    r"""Bootstrap replicates of the Pearson correlation of two measures of pairs of items, the *items*
    resampled :cite:`efron1993bootstrap`.

    The pairs are all (or some) pairs of a random sample of items (proteins), so they are not independent:
    the draw a seed makes is the items. Each resample draws ``n_items`` items with replacement (multiplicities
    :math:`w`, :func:`item_multiplicities`) and takes every pair of two different draws, so a pair
    :math:`(i, j)` counts :math:`w_i w_j` times and the replicate is the weighted correlation

    .. math:: r^* = \frac{\sum w_i w_j (x_{ij}-\bar x^*)(y_{ij}-\bar y^*)}
                         {\sqrt{\sum w_i w_j (x_{ij}-\bar x^*)^2 \sum w_i w_j (y_{ij}-\bar y^*)^2}}.

    Parameters
    ----------
    pairs : array_like (n_pairs, 2) int
        Item indices of each pair (two different items).
    x, y : array_like (n_pairs,)
        The two measures of each pair.
    n_items : int
        Items the pairs are drawn among (at least :data:`PAIR_BOOT_MIN_ITEMS`).
    n_boot : int
    seed : int

    Returns
    -------
    ndarray (n_boot,)
    """
    pairs = np.asarray(pairs)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or x.shape != y.shape or x.shape != (len(pairs),):
        raise ValueError(f"pairs must have shape (n_pairs, 2) and x, y one value per pair; got {pairs.shape}")
    if np.any(pairs[:, 0] == pairs[:, 1]) or pairs.min() < 0 or pairs.max() >= n_items:
        raise ValueError(f"pairs must join two different items among {n_items}")
    W = item_multiplicities(n_items, n_boot, seed)
    x, y = x - x.mean(), y - y.mean()  # shift invariant: centred first, so that the raw moments do not cancel
    s1, sx, sy = (_pair_sums(pairs, v, W) for v in (np.ones_like(x), x, y))
    mx, my = sx / s1, sy / s1
    sxx, syy, sxy = (_pair_sums(pairs, v, W) / s1 for v in (x * x, y * y, x * y))
    return (sxy - mx * my) / np.sqrt((sxx - mx * mx) * (syy - my * my))


def pair_bootstrap_corr_se(pairs, x, y, n_items: int, n_boot: int = PAIR_BOOT, seed: int = 0) -> float:
    """Standard error (ddof 1) of the Pearson correlation of pair measures: the standard deviation of
    :func:`pair_bootstrap_corr`, the items resampled."""
    return float(np.std(pair_bootstrap_corr(pairs, x, y, n_items, n_boot, seed), ddof=1))


def correlation_spread_records(aln: pd.DataFrame, tables: dict, pairs, n_proteins: int, tiny: bool, seed: int) -> dict:
    """Bootstrap standard errors (the proteins resampled, :func:`pair_bootstrap_corr_se`) of the correlations
    compared with the paper: the alignment score against identity (``corr_score_identity_spread``), and
    ProtBERT's five embedding correlations (``prot_bert_corr_<a>_<b>_spread``) when the real ProtBERT ran
    (``tiny`` false)."""

    def se(df, a, b):
        return pair_bootstrap_corr_se(pairs, df[a].to_numpy(float), df[b].to_numpy(float), n_proteins, seed=seed)

    out = {"corr_score_identity_spread": se(aln, "score", "identity")}
    if tiny or "prot_bert" not in tables:
        return out
    for a, b in HAKIM2025_CORRELATIONS:
        if {a, b} != {"score", "identity"}:
            out[f"prot_bert_corr_{a}_{b}_spread"] = se(tables["prot_bert"], a, b)
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
