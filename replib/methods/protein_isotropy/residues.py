"""Per-residue ("local") isotropy per amino acid :cite:`hakim2025protein` from streaming covariances, without
holding any per-residue matrix in memory (:class:`ResidueIsotropy`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ..._io import progress_off
from ..._validation import check_array
from ...embeddings import embed_proteins
from ...metrics import CovarianceAccumulator, isoscore
from ...papers import project_table
from .isotropy import AMINO_ACIDS, effective_dimensions_from_isoscore, round_effective_dimensions


# ------------------------------------------------------------------------------------ per-residue (local)
@dataclass
class ResidueIsotropy:
    """Per-amino-acid covariances of per-residue embeddings, accumulated in a stream.

    One :class:`~replib.metrics.CovarianceAccumulator` per residue letter (float64, O(d²) each), fed
    one protein at a time; no per-residue matrix outlives its protein. IsoScore per amino acid is
    deflated towards m/(n+m) when the residue count m is small against the dimension n
    :cite:`rudman2024stable`, so every row carries ``enough = m ≥ min_ratio·n``.

    Parameters
    ----------
    n_features : int
    min_ratio : float
        Required samples per dimension (default 5).
    """

    n_features: int
    min_ratio: float = 5.0
    acc: dict = field(default_factory=dict)

    def update(self, seq: str, R) -> ResidueIsotropy:
        """Add the residue rows ``R`` (len(seq), n_features) of one protein, grouped by letter."""
        R = check_array(R, name="R", min_samples=1, min_features=1)
        if R.shape[1] != self.n_features:
            raise ValueError(f"R has {R.shape[1]} features; expected {self.n_features}")
        if len(seq) != R.shape[0]:
            raise ValueError(f"sequence has {len(seq)} residues but R has {R.shape[0]} rows")
        letters = np.frombuffer(seq.encode("ascii"), dtype=np.uint8)
        for code in np.unique(letters):
            ch = chr(int(code))
            self.acc.setdefault(ch, CovarianceAccumulator(self.n_features)).update(R[letters == code])
        return self

    def table(self, letters: str = AMINO_ACIDS) -> pd.DataFrame:
        """One row per amino acid: count m, IsoScore, effective dimensions (real, ceil), ``enough``."""
        rows = []
        for ch in letters:
            a = self.acc.get(ch)
            m = 0 if a is None else a.count
            row = {
                "residue": ch,
                "count": m,
                "isoscore": np.nan,
                "eff_dims": np.nan,
                "eff_dims_ceil": np.nan,
                "enough": m >= self.min_ratio * self.n_features,
            }
            if m >= 2:
                try:
                    iota = a.isoscore()
                except ValueError:  # zero variance (e.g. a single repeated row)
                    iota = np.nan
                if np.isfinite(iota):
                    k = effective_dimensions_from_isoscore(iota, self.n_features)
                    row.update(isoscore=iota, eff_dims=k, eff_dims_ceil=round_effective_dimensions(k, "ceil"))
            rows.append(row)
        return pd.DataFrame(rows)

    def mean_effective_dimensions(self, letters: str = AMINO_ACIDS, require_enough: bool = True) -> float:
        """Mean effective dimensions over amino acids (only those with ``enough`` residues by default)."""
        t = self.table(letters)
        if require_enough:
            t = t[t["enough"]]
        if t["eff_dims"].notna().sum() == 0:
            raise ValueError("no amino acid has enough residues for IsoScore (m ≥ min_ratio·n)")
        return float(t["eff_dims"].mean())


def accumulate_residues(
    lm,
    seqs: Sequence[str],
    layer=-1,
    max_length: int = 1022,
    chunk: int = 64,
    min_ratio: float = 5.0,
    progress: bool = True,
) -> ResidueIsotropy:
    """Per-amino-acid streaming covariances of one layer's per-residue embeddings.

    Sequences are embedded ``chunk`` at a time (``return_residues=True``) and each chunk's residue
    matrices are folded into the accumulators and dropped, so memory is O(20·d² + chunk·L·d).
    Residues are labelled by the sequence as the model saw it (truncated to ``max_length``).
    """
    seqs = [s.upper() for s in seqs]
    acc = None
    for s in tqdm(range(0, len(seqs), chunk), desc=f"residues {lm.name}", disable=progress_off(progress), leave=False):
        part = seqs[s : s + chunk]
        out = embed_proteins(lm, part, layers=(layer,), max_length=max_length, return_residues=True, progress=False)
        key = "local" if lm.spec.recipe == "proteinbert" else layer
        mats = out.residues[key]
        if acc is None:
            acc = ResidueIsotropy(mats[0].shape[1], min_ratio)
        for idx, R in zip(out.index, mats):
            acc.update(part[int(idx)][: R.shape[0]], R)
    if acc is None:
        raise ValueError("no sequences to embed")
    return acc


# ------------------------------------------------------------------------------ the chapter's local view
#: "about 14 effective dimensions on average" for the 1024-d ProtTrans models (Hakim et al., [S]; the row
#: ``local/mean_eff_dims`` of ``data/papers/hakim2025.csv``; None without the tables)
PAPER_LOCAL_MEAN_EFF_DIMS = getattr(project_table("hakim2025").get("local/mean_eff_dims"), "value", None)


def streaming_vs_memory(lm, seqs: Sequence[str], layer=-1, max_length: int = 1022) -> float:
    """Largest |streaming − in-memory| IsoScore over the amino acids of ``seqs``: :func:`accumulate_residues`
    against every residue row held in memory (float64), grouped by letter and scored with numpy."""
    stream = accumulate_residues(lm, seqs, layer=layer, max_length=max_length, min_ratio=0, progress=False)
    stream = stream.table().set_index("residue")
    seqs = [s.upper() for s in seqs]
    out = embed_proteins(lm, seqs, layers=(layer,), max_length=max_length, return_residues=True, progress=False)
    key = "local" if lm.spec.recipe == "proteinbert" else layer
    groups: dict = {}
    for r, idx in enumerate(out.index):
        R = np.asarray(out.residues[key][r], dtype=np.float64)
        letters = np.array(list(seqs[int(idx)][: R.shape[0]]))
        for ch in np.unique(letters):
            groups.setdefault(str(ch), []).append(R[letters == ch])
    rows = {ch: np.vstack(v) for ch, v in groups.items()}
    diffs = [
        abs(stream.loc[a, "isoscore"] - isoscore(R))
        for a, R in rows.items()
        if len(R) >= 2 and a in stream.index and np.isfinite(stream.loc[a, "isoscore"])
    ]
    return max(diffs)


def local_records(acc: ResidueIsotropy, model_name: str, label: str, tiny: bool) -> dict:
    """The local analysis' claimed numbers: the model, the residues required and found per amino acid, and
    the mean effective dimensions over amino acids, recorded as ``local_mean_eff_dims`` for ProtBERT with its
    real weights (``standin_local_mean_eff_dims`` for its stand-in) and ``<label>_local_mean_eff_dims`` for a
    reader's model."""
    local = acc.table()
    mean_k = acc.mean_effective_dimensions()
    if label == "prot_bert":
        key = "standin_local_mean_eff_dims" if tiny else "local_mean_eff_dims"
    else:
        key = f"{label}_local_mean_eff_dims"
    return {
        "local_model": model_name,
        "local_min_ratio_required": acc.min_ratio,
        "local_min_count": int(local["count"].min()),
        "local_min_ratio": float(local["count"].min() / acc.n_features),
        "local_mean_eff_dims_value": mean_k,
        key: mean_k,
    }


def local_samples(seqs: Sequence[str], n_local: int, n_samples: int = 1) -> list[list[str]]:
    """``n_samples`` disjoint samples of ``n_local`` proteins for the per-residue analysis: consecutive slices of
    the chapter's seeded random order (the first is the one every profile uses)."""
    if n_samples < 1 or n_samples * n_local > len(seqs):
        raise ValueError(f"{n_samples} samples of {n_local} proteins need more than the {len(seqs)} given")
    return [list(seqs[k * n_local : (k + 1) * n_local]) for k in range(n_samples)]


def sample_records(first: ResidueIsotropy, others=()) -> dict:
    """The size of the per-residue sample (``local_n_residues``: residues folded in; the paper states none)
    and, with a second sample, its mean effective dimensions and the spread between the two
    (``local_mean_eff_dims_sample2``, ``local_mean_eff_dims_spread``: the absolute difference)."""
    out = {"local_n_residues": int(sum(a.count for a in first.acc.values()))}
    for k, acc in enumerate(others, start=2):
        out[f"local_mean_eff_dims_sample{k}"] = acc.mean_effective_dimensions()
        out["local_mean_eff_dims_spread"] = abs(acc.mean_effective_dimensions() - first.mean_effective_dimensions())
    return out


def local_reference_lines(n_features: int, tiny: bool) -> list[tuple[float, str, str]]:
    """Horizontal lines of the local figure, ``(y, line style, label)``: the width n, and the paper's ~14
    effective dimensions when the real models ran (not beside tiny stand-ins)."""
    paper = [] if tiny or PAPER_LOCAL_MEAN_EFF_DIMS is None else [(PAPER_LOCAL_MEAN_EFF_DIMS, "--", "paper: ~14")]
    lines = [(y, style, label + " (1024-d ProtTrans, [S])") for y, style, label in paper]
    return lines + [(n_features, ":", f"all n = {n_features} dimensions")]
