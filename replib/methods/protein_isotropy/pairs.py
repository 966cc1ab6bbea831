"""Protein pairs: sampling, the resumable chunked pair engine that aligns them in parallel through joblib
(:func:`alignment_pair_stats`), embedding distances of the same pairs and their correlation with the
alignment measures :cite:`hakim2025protein`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import joblib
import numpy as np
import pandas as pd

from ..._io import hash_array, hash_inputs, run_sharded, shard_span
from ..._validation import check_array
from ...metrics.cosine import unit_rows
from .alignment import alignment_stats, map_residues_for_alignment
from .composition import composition_baselines
from .isotropy import HAKIM2025_CORRELATIONS
from .spreads import PAPER_GLOBAL_MODELS


# ---------------------------------------------------------------------------------------------- pairs
def all_pairs(n: int) -> np.ndarray:
    """All unordered pairs ``(i, j)``, ``i < j`` of ``n`` items, shape (n(n−1)/2, 2), row-major order."""
    if n < 2:
        raise ValueError("need at least 2 items to form a pair")
    i, j = np.triu_indices(n, k=1)
    return np.stack([i, j], axis=1).astype(np.int64)


def _align_chunk(seqs: dict, pairs: np.ndarray, gap_open: int, gap_extend: int, matrix: str) -> dict:
    out = np.zeros((len(pairs), 3), dtype=np.int64)
    for r, (i, j) in enumerate(pairs):
        s = alignment_stats(seqs[int(i)], seqs[int(j)], gap_open, gap_extend, matrix)
        out[r] = (s["score"], s["matches"], s["length"])
    return {"score": out[:, 0], "matches": out[:, 1], "length": out[:, 2]}


def alignment_pair_stats(
    seqs: Sequence[str],
    pairs,
    *,
    out_dir=None,
    chunk_size: int = 20000,
    n_jobs: int = 1,
    gap_open: int = 10,
    gap_extend: int = 1,
    matrix: str = "pam250",
    backend: str | None = None,
    progress: bool = True,
    seq_ids=None,
    on_chunk: Callable[[int], None] | None = None,
    shards: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Alignment score, matches, length and identity for many pairs: chunked, parallel, resumable.

    Pairs are cut into chunks of ``chunk_size`` that run in parallel through :mod:`joblib` (``n_jobs``
    processes, ``loky`` by default; ``backend="dask"`` or ``"ray"`` dispatches to a cluster, with ``out_dir``
    on a shared file system). With ``out_dir`` the chunks are shards of :func:`replib._io.run_sharded`,
    written atomically with their checksums to ``out_dir/<job key>/``: a rerun of the same job (same
    sequences, pairs, chunk size and parameters) loads the chunks that verify, computes the missing and bad
    ones and returns identical results; a kill loses at most the chunks in flight.

    Parameters
    ----------
    seqs : sequence of str
        Raw protein sequences; each is validated and mapped (U→C, O→K) by
        :func:`map_residues_for_alignment` before anything runs.
    pairs : array_like of int, shape (n_pairs, 2)
        Indices into ``seqs``.
    out_dir : path-like, optional
        Folder of the resumable chunk store (no caching when None).
    chunk_size, n_jobs, backend, progress
        Parallel and progress settings; ``n_jobs=-1`` uses every core.
    gap_open, gap_extend, matrix
        Passed to :func:`alignment_stats`.
    seq_ids : sequence of str, optional
        Names for error messages.
    on_chunk : callable, optional
        Called with the chunk index after a chunk is stored (tests simulate a kill with it).
    shards : (k, n), optional
        Only the k-th of n equal ranges of the chunks (one part of the chapter, :mod:`replib.parts`): they are
        computed and stored, and only their pairs returned.

    Returns
    -------
    pandas.DataFrame
        Columns ``i``, ``j``, ``score``, ``matches``, ``length``, ``identity`` (one row per pair, input order;
        with ``shards``, the pairs of those chunks).
    """
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError(f"pairs must be an integer array of shape (n_pairs, 2); got {pairs.shape} {pairs.dtype}")
    pairs = pairs.astype(np.int64)
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(seqs)):
        raise ValueError(f"pair indices must lie in [0, {len(seqs)})")
    # the sequences the pairs use, validated and mapped (U→C, O→K), and what keys the job's chunk store
    used = np.unique(pairs) if len(pairs) else np.zeros(0, np.int64)
    ids = seq_ids if seq_ids is not None else [str(k) for k in range(len(seqs))]
    mapped = {int(k): map_residues_for_alignment(seqs[int(k)], seq_id=ids[int(k)]) for k in used}
    info = {
        "gap_open": gap_open,
        "gap_extend": gap_extend,
        "matrix": matrix,
        "engine": "parasail.nw_trace_scan_16 traceback (32-bit on saturation)",
        "fn": "alignment_pair_stats",
        "seqs": hash_inputs(mapped[int(k)] for k in used),
        "pairs": hash_array(pairs),
    }

    def chunk_args(a, b):  # only the sequences a chunk needs travel to its worker
        sub = pairs[a:b]
        return {int(k): mapped[int(k)] for k in np.unique(sub)}, sub, gap_open, gap_extend, matrix

    def map_chunks(spans):
        if not spans:
            return iter(())
        par = joblib.Parallel(n_jobs=n_jobs, return_as="generator")
        return par(joblib.delayed(_align_chunk)(*chunk_args(a, b)) for a, b in spans)

    with joblib.parallel_config(backend=backend) if backend else contextlib.nullcontext():
        chunks = run_sharded(
            len(pairs),
            chunk_size,
            lambda a, b: _align_chunk(*chunk_args(a, b)),
            info=info,
            cache_dir=out_dir,
            desc="align pairs",
            unit="pair",
            progress=progress,
            map_shards=map_chunks,
            on_shard_written=on_chunk,
            shards=shards,
        )
    cols = {
        k: np.concatenate([c[k] for c in chunks]) if chunks else np.zeros(0, np.int64)
        for k in ("score", "matches", "length")
    }
    span = shard_span(shards, -(-len(pairs) // chunk_size))
    rows = pairs[span.start * chunk_size : min(len(pairs), span.stop * chunk_size)]
    df = pd.DataFrame({"i": rows[:, 0], "j": rows[:, 1], **cols})
    df["identity"] = df["matches"] / df["length"]
    return df


def embedding_pair_stats(E, pairs, batch: int = 50_000) -> pd.DataFrame:
    r"""Cosine similarity and squared Euclidean distance of embedding pairs, float64.

    .. math:: \cos(x, y) = \frac{x\cdot y}{\lVert x\rVert \lVert y\rVert}, \qquad
              d^2(x, y) = \lVert x - y\rVert^2.

    Parameters
    ----------
    E : array_like of shape (n_proteins, n_features)
    pairs : array_like of int, shape (n_pairs, 2)

    Returns
    -------
    pandas.DataFrame with columns ``cosine`` and ``sq_euclidean``.
    """
    E = check_array(E, name="E", min_samples=2, min_features=1)
    pairs = np.asarray(pairs, dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError("pairs must have shape (n_pairs, 2)")
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(E)):
        raise ValueError(f"pair indices must lie in [0, {len(E)})")
    U = unit_rows(E, name="E")
    cos, d2 = np.empty(len(pairs)), np.empty(len(pairs))
    for s in range(0, len(pairs), batch):
        i, j = pairs[s : s + batch, 0], pairs[s : s + batch, 1]
        cos[s : s + batch] = np.einsum("ij,ij->i", U[i], U[j])
        diff = E[i] - E[j]
        d2[s : s + batch] = np.einsum("ij,ij->i", diff, diff)
    return pd.DataFrame({"cosine": cos, "sq_euclidean": d2})


def pair_correlations(
    df: pd.DataFrame, columns=("cosine", "sq_euclidean", "score", "identity"), method: str = "pearson"
) -> pd.DataFrame:
    """Correlation matrix (Pearson or Spearman) of the pair measures, as in the paper's ProtBERT matrix."""
    if method not in ("pearson", "spearman"):
        raise ValueError("method must be 'pearson' or 'spearman'")
    missing = [c for c in columns if c not in df]
    if missing:
        raise ValueError(f"columns {missing} not in the pair table")
    sub = df[list(columns)].astype(np.float64)
    if len(sub) < 3:
        raise ValueError("need at least 3 pairs for a correlation")
    if (sub.std() == 0).any():
        raise ValueError("a pair measure is constant: correlation undefined")
    return sub.corr(method=method)


# ------------------------------------------------------------------------------ the chapter's pair view
#: correlations of the composition baselines recorded by the chapter: (measure, measure) -> short name
_COMPOSITION_CORRELATIONS = {
    ("cosine", "sq_euclidean"): "cos_sqeuclid",
    ("cosine", "identity"): "cos_identity",
    ("cosine", "score"): "cos_score",
    ("sq_euclidean", "identity"): "sqeuclid_identity",
}


def score_identity_records(aln: pd.DataFrame) -> dict:
    """Pearson and Spearman correlation of the alignment score with identity over all pairs."""
    return {
        "corr_score_identity": float(aln[["score", "identity"]].corr().iloc[0, 1]),
        "spearman_score_identity": float(aln[["score", "identity"]].corr("spearman").iloc[0, 1]),
    }


def pair_embeddings(pair_seqs: Sequence[str], vectors: dict, user_models=()) -> dict:
    """The representations of the pair proteins: amino-acid and dipeptide composition, and the rows of the
    global table of the paper's models and the reader's (the pair proteins are its first rows)."""
    out = composition_baselines(pair_seqs, 2)
    for name in (*PAPER_GLOBAL_MODELS, *user_models):
        if name in vectors:
            out[name] = vectors[name][: len(pair_seqs)]
    return out


def pair_tables(embeddings: dict, pairs, aln: pd.DataFrame) -> dict:
    """Per representation, one row per pair: its cosine and squared Euclidean distance
    (:func:`embedding_pair_stats`) beside the alignment score and identity."""
    return {
        name: pd.concat([embedding_pair_stats(E, pairs), aln[["score", "identity"]]], axis=1)
        for name, E in embeddings.items()
    }


def correlation_table(tables: dict) -> pd.DataFrame:
    """Pearson and Spearman correlations of the pair measures of every representation (the paper's ProtBERT
    matrix, :data:`HAKIM2025_CORRELATIONS`), one row per representation and method."""
    rows = []
    for name, df in tables.items():
        for method in ("pearson", "spearman"):
            C = pair_correlations(df, method=method)
            rows.append(
                {"embedding": name, "method": method, **{f"{a}–{b}": C.loc[a, b] for (a, b) in HAKIM2025_CORRELATIONS}}
            )
    return pd.DataFrame(rows)


def with_paper_correlations(corr: pd.DataFrame) -> pd.DataFrame:
    """``corr`` below the paper's ProtBERT row (Pearson, [S])."""
    reported = {
        "embedding": "ProtBERT (paper, [S])",
        "method": "pearson",
        **{f"{a}–{b}": v for (a, b), v in HAKIM2025_CORRELATIONS.items()},
    }
    return pd.concat([pd.DataFrame([reported]), corr])


def _pearson(df: pd.DataFrame, a: str, b: str) -> float:
    return float(df[[a, b]].corr().iloc[0, 1])


def pair_correlation_records(tables: dict, user_models, tiny: bool) -> dict:
    """Pearson correlations recorded by the chapter: four of each composition baseline; the embedding ones of
    the reader's models; and ProtBERT's (``prot_bert_corr_...``, or ``standin_prot_bert_corr_...`` for the
    tiny stand-in), compared with the paper's matrix."""
    out = {}
    for (a, b), short in _COMPOSITION_CORRELATIONS.items():
        out[f"aa_composition_corr_{short}"] = _pearson(tables["aa_composition"], a, b)
        out[f"2mer_composition_corr_{short}"] = _pearson(tables["2mer_composition"], a, b)
    for a, b in HAKIM2025_CORRELATIONS:
        if {a, b} == {"score", "identity"}:
            continue
        for name in user_models:
            out[f"{name}_corr_{a}_{b}"] = _pearson(tables[name], a, b)
        if "prot_bert" in tables and tiny:
            out[f"standin_prot_bert_corr_{a}_{b}"] = _pearson(tables["prot_bert"], a, b)
        elif "prot_bert" in tables:
            out[f"prot_bert_corr_{a}_{b}"] = _pearson(tables["prot_bert"], a, b)
    return out


def shown_representations(local_name: str, tables: dict) -> list[str]:
    """The representations of the distance-against-alignment figure: the local model and the two composition
    baselines, those that have a pair table."""
    return [n for n in (local_name, "aa_composition", "2mer_composition") if n in tables]


def identity_regimes(tables: dict, names, threshold: float = 0.3) -> pd.DataFrame:
    """Mean and standard deviation of the cosine and the squared distance below and above an alignment
    identity of ``threshold`` (the classical twilight zone), per representation (regimes of < 3 pairs left
    out)."""
    rows = []
    for name in names:
        df = tables[name]
        low, high = df.identity < threshold, df.identity >= threshold
        for regime, m in ((f"identity < {threshold}", low), (f"identity ≥ {threshold}", high)):
            if m.sum() >= 3:
                rows.append(
                    {
                        "embedding": name,
                        "regime": regime,
                        "pairs": int(m.sum()),
                        "cosine mean": df.cosine[m].mean(),
                        "cosine sd": df.cosine[m].std(),
                        "sq. Euclidean mean": df.sq_euclidean[m].mean(),
                        "sq. Euclidean sd": df.sq_euclidean[m].std(),
                    }
                )
    return pd.DataFrame(rows)
