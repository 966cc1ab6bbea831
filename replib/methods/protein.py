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

All arrays of points are ``(n_samples, n_features)``; metrics are computed in float64.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from .._validation import check_array
from ..metrics import CovarianceAccumulator, avg_pairwise_cosine, isoscore
from ..metrics.cosine import unit_rows

__all__ = [
    "AMINO_ACIDS", "HAKIM2025_REPORTED", "HAKIM2025_CORRELATIONS", "config_for",
    "effective_dimensions_from_isoscore", "round_effective_dimensions", "rounding_rule_matches",
    "global_isotropy", "map_residues_for_alignment", "alignment_stats", "alignment_stats_biopython",
    "alignment_stats_kernel", "aligned_strings", "rescore_alignment",
    "all_pairs", "sample_proteins", "pair_count_for_proteins", "proteins_for_pair_count",
    "alignment_pair_stats", "embedding_pair_stats", "pair_correlations", "composition_embeddings",
    "ResidueIsotropy", "residue_rows", "protein_models", "load_protein_model", "embed_global", "accumulate_residues",
]

#: The 20 standard amino acids (one-letter codes, alphabetical).
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"

#: Reported global results of Hakim et al. 2025 (table of IsoScores; seed 000 [S], table number unknown).
HAKIM2025_REPORTED = {
    "prot_bert": {"label": "ProtBERT", "n": 1024, "isoscore": 0.001658, "eff_dims": 3},
    "prot_bert_bfd": {"label": "ProtBERT-BFD", "n": 1024, "isoscore": 0.003968, "eff_dims": 6},
    "prot_xlnet": {"label": "ProtXLNet", "n": 1024, "isoscore": 0.001502, "eff_dims": 3},
    "proteinbert": {"label": "ProteinBERT", "n": 512, "isoscore": 0.231228, "eff_dims": 120},
}

#: Reported Pearson correlations for ProtBERT (seed 000 [S]; upper triangle only).
HAKIM2025_CORRELATIONS = {
    ("cosine", "sq_euclidean"): 0.791, ("cosine", "score"): 0.014, ("cosine", "identity"): -0.011,
    ("sq_euclidean", "score"): -0.103, ("sq_euclidean", "identity"): -0.146, ("score", "identity"): 0.847,
}


# ------------------------------------------------------------------------------------ configuration
def config_for(profile: str) -> dict:
    """Sizes and settings of the chapter per profile (read by the notebook and the tests).

    ``paper``: current Swiss-Prot, the four models of the paper and four ESM-2 sizes, 3,578 proteins
    for the pair analysis (C(3578, 2) = 6,399,253 ≈ the paper's 6.4×10⁶ pairs). ``offline``: the
    real Swiss-Prot 2014 samples, tiny same-architecture random models (sequences cut at 256
    residues), 800 proteins (319,600 pairs). ``smoke``: a few hundred sequences and pairs. The pair
    proteins are the first ``n_pair_proteins`` of the random global sample, so their embeddings are
    rows of the global table.
    """
    common = dict(gap_open=10, gap_extend=1, matrix="pam250", min_ratio=5, seed=0)
    cfgs = {
        "smoke": dict(subset="5k", n_global=200, n_pair_proteins=40, n_biopython=100, n_local=200,
                      max_length=128, chunk_size=200, n_jobs=2, kmer_max=2, tiny=True, esm_models=["tiny-esm"]),
        "offline": dict(subset="20k", n_global=1500, n_pair_proteins=800, n_biopython=300, n_local=400,
                        max_length=256, chunk_size=20000, n_jobs=2, kmer_max=2, tiny=True,
                        esm_models=["tiny-esm"]),
        "paper": dict(subset="current", n_global=None, n_pair_proteins=3578, n_biopython=2000, n_local=5000,
                      max_length=1022, chunk_size=50000, n_jobs=-1, kmer_max=2, tiny=False,
                      esm_models=["esm2_t6_8M", "esm2_t12_35M", "esm2_t30_150M", "esm2_t33_650M"]),
    }
    if profile not in cfgs:
        raise ValueError(f"unknown profile {profile!r}; expected one of {sorted(cfgs)}")
    return {**common, **cfgs[profile]}


# ------------------------------------------------------------------------------ effective dimensions
def effective_dimensions_from_isoscore(iota, n_features):
    r"""Effective dimensions :math:`k = \iota (n - 1) + 1` :cite:`rudman2022isoscore`.

    Parameters
    ----------
    iota : float or array_like
        IsoScore(s) in [0, 1].
    n_features : int or array_like
        Ambient dimension n (≥ 2).

    Returns
    -------
    float or ndarray
        A real number in [1, n]; equal to the participation ratio of the covariance.
    """
    iota = np.asarray(iota, dtype=np.float64)
    n = np.asarray(n_features, dtype=np.float64)
    if np.any(iota < 0) or np.any(iota > 1) or not np.all(np.isfinite(iota)):
        raise ValueError("IsoScore must lie in [0, 1]")
    if np.any(n < 2):
        raise ValueError("n_features must be at least 2")
    k = iota * (n - 1.0) + 1.0
    return float(k) if k.ndim == 0 else k


def round_effective_dimensions(k, rule: str = "ceil"):
    """Integer effective dimensions under a rounding ``rule`` (``ceil``, ``round`` or ``floor``).

    Hakim et al. :cite:`hakim2025protein` report integers; ``ceil`` is the rule that reproduces all
    four of them from the reported IsoScores (see :func:`rounding_rule_matches`). ``round`` is
    round-half-to-even, as Python's ``round``.
    """
    fns = {"ceil": np.ceil, "round": np.rint, "floor": np.floor}
    if rule not in fns:
        raise ValueError(f"rule must be one of {sorted(fns)}; got {rule!r}")
    out = fns[rule](np.asarray(k, dtype=np.float64)).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def rounding_rule_matches(reported: dict | None = None, rule: str = "ceil") -> int:
    """How many reported integers equal ``rule(ι(n−1)+1)`` of the reported IsoScores ι.

    Parameters
    ----------
    reported : dict, optional
        ``{model: {"n": int, "isoscore": float, "eff_dims": int}}``; default
        :data:`HAKIM2025_REPORTED`.
    rule : {"ceil", "round", "floor"}
    """
    reported = HAKIM2025_REPORTED if reported is None else reported
    hits = 0
    for v in reported.values():
        k = effective_dimensions_from_isoscore(v["isoscore"], v["n"])
        hits += int(round_effective_dimensions(k, rule) == int(v["eff_dims"]))
    return hits


def global_isotropy(E) -> dict:
    r"""IsoScore, effective dimensions (real, ceil, round) and average pairwise cosine of embeddings.

    Parameters
    ----------
    E : array_like of shape (n_proteins, n_features)
        One (e.g. mean-pooled) vector per protein.

    Returns
    -------
    dict
        ``n_samples``, ``n_features``, ``isoscore`` ι, ``eff_dims`` = ι(n−1)+1, ``eff_dims_ceil``,
        ``eff_dims_round`` and ``avg_cosine`` (exact over all pairs) :cite:`rudman2022isoscore`.
    """
    E = check_array(E, name="E", min_samples=2, min_features=2, warn_fewer_samples=True)
    iota = isoscore(E)
    k = effective_dimensions_from_isoscore(iota, E.shape[1])
    return {"n_samples": E.shape[0], "n_features": E.shape[1], "isoscore": iota, "eff_dims": k,
            "eff_dims_ceil": round_effective_dimensions(k, "ceil"),
            "eff_dims_round": round_effective_dimensions(k, "round"), "avg_cosine": avg_pairwise_cosine(E)}


# ------------------------------------------------------------------------------------------ alignment
_PAM250_ALPHABET = frozenset("ARNDCQEGHILKMFPSTWYVBZX")


def map_residues_for_alignment(seq: str, seq_id: str | None = None) -> str:
    """Validate a protein sequence and map the letters PAM250 lacks: U→C, O→K.

    Selenocysteine (U) is aligned as cysteine and pyrrolysine (O) as lysine, explicitly, because
    Biopython rejects both and parasail would silently score them as ``*``. B, Z and X are kept
    (PAM250 has rows for them). Lower case, gaps, ``*`` and any other character raise.

    Raises
    ------
    ValueError
        Empty sequence or letters outside ``ACDEFGHIKLMNPQRSTVWY`` + ``XUZOB``; the message names the
        sequence, the letters and their positions.
    """
    from replib.data import validate_residues

    return validate_residues(seq, policy="align", seq_id=seq_id)


def _parasail_matrix(matrix: str):
    import parasail

    if not hasattr(parasail, matrix):
        raise ValueError(f"parasail has no substitution matrix {matrix!r}")
    return getattr(parasail, matrix)


def alignment_stats(a: str, b: str, gap_open: int = 10, gap_extend: int = 1, matrix: str = "pam250") -> dict:
    r"""Global (Needleman–Wunsch) alignment score, matches, length and identity with parasail.

    ``parasail.nw_trace_striped_16(a, b, gap_open, gap_extend, parasail.pam250)`` :cite:`daily2016parasail`
    (the 32-bit kernel on 16-bit saturation: very long or very similar pairs); matches and length are
    counted on the traceback. A gap of length L costs ``gap_open + (L − 1)·gap_extend``. Identity is

    .. math:: \text{identity} = \frac{\#\text{identical columns}}{\#\text{alignment columns (gaps included)}},

    the "fraction of identical residues in the optimal alignment" of :cite:`hakim2025protein`. Co-optimal
    alignments can differ in identity; the score is unique.

    Why not ``nw_stats_striped_16``: its ``length`` is not the length of an alignment. On random pairs
    it is often *shorter than the longer sequence* (impossible for a global alignment; about a quarter
    of random pairs of 20–200 residues, parasail 1.3.4), which biases identity upwards. See
    :func:`alignment_stats_kernel` and the chapter.

    Parameters
    ----------
    a, b : str
        Sequences already mapped with :func:`map_residues_for_alignment`.
    gap_open, gap_extend : int
        Positive penalties (the paper does not state them; 10 and 1 here).
    matrix : str
        A parasail matrix name (default ``"pam250"``, Dayhoff et al. :cite:`dayhoff1978pam`).

    Returns
    -------
    dict with ``score``, ``matches``, ``length``, ``identity``.
    """
    import parasail

    if not a or not b:
        raise ValueError("cannot align an empty sequence")
    m = _parasail_matrix(matrix)
    r = parasail.nw_trace_striped_16(a, b, gap_open, gap_extend, m)
    if r.saturated:
        r = parasail.nw_trace_striped_32(a, b, gap_open, gap_extend, m)
    tb = r.traceback
    q = np.frombuffer(tb.query.encode("ascii"), dtype=np.uint8)
    t = np.frombuffer(tb.ref.encode("ascii"), dtype=np.uint8)
    matches = int(((q == t) & (q != ord("-"))).sum())
    return {"score": int(r.score), "matches": matches, "length": int(len(q)), "identity": matches / len(q)}


def alignment_stats_kernel(a: str, b: str, gap_open: int = 10, gap_extend: int = 1, matrix: str = "pam250") -> dict:
    """What ``parasail.nw_stats_striped_16`` reports (score, matches, length, identity), for comparison only.

    Its score is the optimal score; its ``length`` can be shorter than the longer sequence, so
    ``matches / length`` is not an identity. Kept to document the defect (the chapter measures it).
    """
    import parasail

    m = _parasail_matrix(matrix)
    r = parasail.nw_stats_striped_16(a, b, gap_open, gap_extend, m)
    if r.saturated:
        r = parasail.nw_stats_striped_32(a, b, gap_open, gap_extend, m)
    return {"score": int(r.score), "matches": int(r.matches), "length": int(r.length),
            "identity": r.matches / r.length}


def _biopython_aligner(gap_open: int, gap_extend: int, matrix: str):
    from Bio import Align
    from Bio.Align import substitution_matrices

    al = Align.PairwiseAligner()
    al.mode = "global"
    al.substitution_matrix = substitution_matrices.load(matrix.upper())
    # every gap score set explicitly (Biopython defaults have changed across versions)
    al.open_gap_score = -float(gap_open)
    al.extend_gap_score = -float(gap_extend)
    for where in ("internal", "end"):  # end gaps penalised like internal ones (global NW, as parasail)
        for kind in ("insertion", "deletion"):
            setattr(al, f"open_{where}_{kind}_score", -float(gap_open))
            setattr(al, f"extend_{where}_{kind}_score", -float(gap_extend))
    return al


def alignment_stats_biopython(a: str, b: str, gap_open: int = 10, gap_extend: int = 1,
                              matrix: str = "pam250") -> dict:
    """The same statistics as :func:`alignment_stats` with Biopython's ``PairwiseAligner`` :cite:`cock2009biopython`.

    An independent implementation used as a cross-check: the score must be identical; identity may
    differ by ~0.02 because co-optimal alignments are broken differently (the first alignment of
    Biopython's lazy iterator is used; never ``len()`` of it, which can be astronomically large).
    End gaps are penalised like internal gaps (parasail's NW convention).
    """
    if not a or not b:
        raise ValueError("cannot align an empty sequence")
    al = _biopython_aligner(gap_open, gap_extend, matrix)
    aln = al.align(a, b)[0]
    counts = aln.counts()
    length = int(aln.shape[1])
    return {"score": int(round(aln.score)), "matches": int(counts.identities), "length": length,
            "identity": counts.identities / length}


def aligned_strings(a: str, b: str, tool: str = "parasail", gap_open: int = 10, gap_extend: int = 1,
                    matrix: str = "pam250") -> tuple[str, str]:
    """The two gapped rows of one optimal global alignment (``tool`` = ``"parasail"`` traceback or ``"biopython"``)."""
    if tool == "parasail":
        import parasail

        r = parasail.nw_trace_striped_16(a, b, gap_open, gap_extend, _parasail_matrix(matrix))
        if r.saturated:
            r = parasail.nw_trace_striped_32(a, b, gap_open, gap_extend, _parasail_matrix(matrix))
        tb = r.traceback
        return tb.query, tb.ref
    if tool == "biopython":
        aln = _biopython_aligner(gap_open, gap_extend, matrix).align(a, b)[0]
        return aln[0], aln[1]
    raise ValueError("tool must be 'parasail' or 'biopython'")


def rescore_alignment(top: str, bottom: str, gap_open: int = 10, gap_extend: int = 1, matrix: str = "pam250") -> dict:
    """Score, matches, length and identity of a given gapped alignment, computed from scratch.

    Substitutions from Biopython's copy of the matrix; a run of gaps in one row costs
    ``gap_open + (L − 1)·gap_extend`` (a gap in the other row right after it opens a new gap). Used to
    show that two alignments with different identity are both optimal (co-optimal).
    """
    from Bio.Align import substitution_matrices

    if len(top) != len(bottom) or not top:
        raise ValueError("aligned rows must be non-empty and of equal length")
    M = substitution_matrices.load(matrix.upper())
    score, matches, gap = 0.0, 0, None
    for x, y in zip(top, bottom):
        if x == "-" and y == "-":
            raise ValueError("a column with two gaps is not an alignment column")
        if x == "-" or y == "-":
            kind = "top" if x == "-" else "bottom"
            score -= gap_extend if gap == kind else gap_open
            gap = kind
        else:
            score += M[x][y]
            matches += x == y
            gap = None
    return {"score": int(round(score)), "matches": matches, "length": len(top), "identity": matches / len(top)}


# ---------------------------------------------------------------------------------------------- pairs
def all_pairs(n: int) -> np.ndarray:
    """All unordered pairs ``(i, j)``, ``i < j`` of ``n`` items, shape (n(n−1)/2, 2), row-major order."""
    if n < 2:
        raise ValueError("need at least 2 items to form a pair")
    i, j = np.triu_indices(n, k=1)
    return np.stack([i, j], axis=1).astype(np.int64)


def pair_count_for_proteins(n: int) -> int:
    """C(n, 2): unordered pairs of n proteins."""
    return n * (n - 1) // 2


def proteins_for_pair_count(n_pairs: float) -> int:
    """Smallest n with C(n, 2) ≥ ``n_pairs``.

    6.4×10⁶ → 3,579 (and C(3578, 2) = 6,399,253 ≈ 6.4×10⁶); the paper's "1 % of ~570k proteins" would
    be 5,700 proteins and 1.6×10⁷ pairs.
    """
    n = int(math.ceil((1 + math.sqrt(1 + 8 * float(n_pairs))) / 2))
    while pair_count_for_proteins(n - 1) >= n_pairs:
        n -= 1
    return n


def sample_proteins(n_total: int, n: int, seed: int = 0) -> np.ndarray:
    """Indices of ``n`` proteins drawn uniformly without replacement (sorted), reproducible by ``seed``."""
    if not 2 <= n <= n_total:
        raise ValueError(f"cannot sample {n} of {n_total} proteins")
    return np.sort(np.random.default_rng(seed).choice(n_total, size=n, replace=False))


def _hash_job(seqs: Sequence[str], pairs: np.ndarray, params: dict) -> str:
    h = hashlib.sha256()
    for s in seqs:
        b = s.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    h.update(np.ascontiguousarray(pairs, dtype=np.int64).tobytes())
    h.update(json.dumps(params, sort_keys=True).encode())
    return h.hexdigest()[:24]


def _atomic_savez(path: Path, **arrays) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _align_chunk(seqs: dict, pairs: np.ndarray, gap_open: int, gap_extend: int, matrix: str) -> dict:
    out = np.zeros((len(pairs), 3), dtype=np.int64)
    for r, (i, j) in enumerate(pairs):
        s = alignment_stats(seqs[int(i)], seqs[int(j)], gap_open, gap_extend, matrix)
        out[r] = (s["score"], s["matches"], s["length"])
    return {"score": out[:, 0], "matches": out[:, 1], "length": out[:, 2]}


#: Test hook: called as ``_CHUNK_HOOK(chunk_index)`` after a chunk file is written (simulates a kill).
_CHUNK_HOOK: Callable[[int], None] | None = None


def alignment_pair_stats(seqs: Sequence[str], pairs, *, out_dir=None, chunk_size: int = 20000, n_jobs: int = 1,
                         gap_open: int = 10, gap_extend: int = 1, matrix: str = "pam250",
                         backend: str | None = None, progress: bool = True, seq_ids=None) -> pd.DataFrame:
    """Alignment score, matches, length and identity for many pairs: chunked, parallel, resumable.

    Pairs are cut into chunks of ``chunk_size``; chunks run in parallel through :mod:`joblib`
    (``n_jobs`` processes, the ``loky`` backend by default). With ``out_dir`` each finished chunk is
    written atomically (temporary file + ``os.replace``) to ``out_dir/<job key>/chunk-<c>.npz``; a
    rerun of the same job (same sequences, pairs and parameters → same key) loads finished chunks,
    computes only the missing ones and returns identical results. Killing the process loses at most
    the chunks in flight.

    More than one machine: joblib dispatches to a Dask or Ray cluster unchanged, e.g.
    ``from dask.distributed import Client; client = Client("scheduler:8786")`` and then
    ``backend="dask"``, or ``from ray.util.joblib import register_ray; register_ray()`` and
    ``backend="ray"``; ``out_dir`` must then be a shared file system for resumption.

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
        Parallel and progress settings (``tqdm.auto``); ``n_jobs=-1`` uses every core.
    gap_open, gap_extend, matrix
        Passed to :func:`alignment_stats`.
    seq_ids : sequence of str, optional
        Names for error messages.

    Returns
    -------
    pandas.DataFrame
        Columns ``i``, ``j``, ``score``, ``matches``, ``length``, ``identity`` (one row per pair, input order).
    """
    import joblib
    from tqdm.auto import tqdm

    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError(f"pairs must be an integer array of shape (n_pairs, 2); got {pairs.shape} {pairs.dtype}")
    pairs = pairs.astype(np.int64)
    if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(seqs)):
        raise ValueError(f"pair indices must lie in [0, {len(seqs)})")
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    used = np.unique(pairs) if len(pairs) else np.zeros(0, np.int64)
    ids = seq_ids if seq_ids is not None else [str(k) for k in range(len(seqs))]
    mapped = {int(k): map_residues_for_alignment(seqs[int(k)], seq_id=ids[int(k)]) for k in used}
    params = {"gap_open": gap_open, "gap_extend": gap_extend, "matrix": matrix, "chunk_size": chunk_size,
              "engine": "parasail.nw_trace_striped_16 traceback (32-bit on saturation)"}
    n_chunks = -(-len(pairs) // chunk_size)
    folder = None
    if out_dir is not None:
        key = _hash_job([mapped[int(k)] for k in used], pairs, params)
        folder = Path(out_dir) / key
        folder.mkdir(parents=True, exist_ok=True)
        manifest = folder / "manifest.json"
        if not manifest.exists():
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".manifest.", suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                json.dump({"key": key, "n_pairs": int(len(pairs)), "n_chunks": n_chunks, **params}, fh, indent=1)
            os.replace(tmp, manifest)

    def chunk_path(c):
        return folder / f"chunk-{c:06d}.npz" if folder is not None else None

    results: dict[int, dict] = {}
    todo = []
    for c in range(n_chunks):
        p = chunk_path(c)
        if p is not None and p.exists():
            with np.load(p) as z:
                results[c] = {k: z[k] for k in z.files}
        else:
            todo.append(c)

    def job(c):
        sub = pairs[c * chunk_size:(c + 1) * chunk_size]
        need = {int(k): mapped[int(k)] for k in np.unique(sub)}
        return joblib.delayed(_align_chunk)(need, sub, gap_open, gap_extend, matrix)

    bar = tqdm(total=len(pairs), desc="align pairs", unit="pair", disable=not progress, leave=False,
               initial=sum(len(r["score"]) for r in results.values()))
    if todo:
        ctx = joblib.parallel_config(backend=backend) if backend else _nullcontext()
        with ctx:
            par = joblib.Parallel(n_jobs=n_jobs, return_as="generator")
            for c, res in zip(todo, par(job(c) for c in todo)):
                p = chunk_path(c)
                if p is not None:
                    _atomic_savez(p, **res)
                    if _CHUNK_HOOK is not None:
                        _CHUNK_HOOK(c)
                results[c] = res
                bar.update(len(res["score"]))
    bar.close()
    cols = {k: np.concatenate([results[c][k] for c in range(n_chunks)]) if n_chunks else np.zeros(0, np.int64)
            for k in ("score", "matches", "length")}
    df = pd.DataFrame({"i": pairs[:, 0], "j": pairs[:, 1], **cols})
    df["identity"] = df["matches"] / df["length"]
    return df


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


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
    cos = np.empty(len(pairs))
    d2 = np.empty(len(pairs))
    for s in range(0, len(pairs), batch):
        i, j = pairs[s:s + batch, 0], pairs[s:s + batch, 1]
        cos[s:s + batch] = np.einsum("ij,ij->i", U[i], U[j])
        diff = E[i] - E[j]
        d2[s:s + batch] = np.einsum("ij,ij->i", diff, diff)
    return pd.DataFrame({"cosine": cos, "sq_euclidean": d2})


def pair_correlations(df: pd.DataFrame, columns=("cosine", "sq_euclidean", "score", "identity"),
                      method: str = "pearson") -> pd.DataFrame:
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


# ----------------------------------------------------------------------------------------- composition
def composition_embeddings(seqs: Iterable[str], k: int = 1, alphabet: str = AMINO_ACIDS) -> np.ndarray:
    r"""k-mer composition vectors: the frequency of each of the 20^k k-mers of standard residues.

    .. math:: c_w(s) = \frac{\#\{\text{positions of } w \text{ in } s\}}
                            {\#\{\text{k-mers of } s \text{ over the alphabet}\}},

    k = 1 gives the 20-d amino-acid composition, k = 2 the 400-d dipeptide composition. k-mers that
    contain a letter outside ``alphabet`` (X, U, B, Z, O) are skipped, so each row sums to 1.
    A baseline no paper gives: it has no learned parameters and knows nothing of homology.

    Parameters
    ----------
    seqs : iterable of str
    k : int, 1 ≤ k ≤ 3
    alphabet : str

    Returns
    -------
    ndarray of shape (n_seqs, len(alphabet)**k), float64

    Raises
    ------
    ValueError
        A sequence with no k-mer over the alphabet, or k out of range.
    """
    if not 1 <= int(k) <= 3:
        raise ValueError("k must be 1, 2 or 3")
    k = int(k)
    a = len(alphabet)
    lut = np.full(256, -1, dtype=np.int64)
    for idx, ch in enumerate(alphabet):
        lut[ord(ch)] = idx
    seqs = list(seqs)
    out = np.zeros((len(seqs), a ** k))
    for r, s in enumerate(seqs):
        if not isinstance(s, str):
            raise ValueError(f"sequence {r} is not a string")
        codes = lut[np.frombuffer(s.encode("ascii", "replace"), dtype=np.uint8)]
        if len(codes) < k:
            raise ValueError(f"sequence {r} is shorter than k = {k}")
        win = np.lib.stride_tricks.sliding_window_view(codes, k)
        ok = (win >= 0).all(axis=1)
        if not ok.any():
            raise ValueError(f"sequence {r} has no {k}-mer over the alphabet {alphabet}")
        code = (win[ok] * (a ** np.arange(k - 1, -1, -1))).sum(axis=1)
        out[r] = np.bincount(code, minlength=a ** k) / ok.sum()
    return out


def kmer_labels(k: int, alphabet: str = AMINO_ACIDS) -> list[str]:
    """Column names of :func:`composition_embeddings` (``"A"``…, ``"AA"``, ``"AC"``…)."""
    return ["".join(p) for p in product(alphabet, repeat=k)]


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

    def update(self, seq: str, R) -> "ResidueIsotropy":
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

    def merge(self, other: "ResidueIsotropy") -> "ResidueIsotropy":
        for ch, a in other.acc.items():
            self.acc.setdefault(ch, CovarianceAccumulator(self.n_features)).merge(a)
        return self

    def table(self, letters: str = AMINO_ACIDS) -> pd.DataFrame:
        """One row per amino acid: count m, IsoScore, effective dimensions (real, ceil), ``enough``."""
        rows = []
        for ch in letters:
            a = self.acc.get(ch)
            m = 0 if a is None else a.count
            row = {"residue": ch, "count": m, "isoscore": np.nan, "eff_dims": np.nan, "eff_dims_ceil": np.nan,
                   "enough": m >= self.min_ratio * self.n_features}
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


# ------------------------------------------------------------------------------ language-model glue
#: Paper models -> tiny same-architecture stand-ins (``tiny_model`` family, seed) for smoke/offline.
_TINY_STANDINS = {"prot_bert": ("protbert", 0), "prot_bert_bfd": ("protbert", 1), "prot_xlnet": ("protxlnet", 0),
                  "proteinbert": ("proteinbert", 0), "tiny-esm": ("esm", 0)}


def protein_models(profile: str) -> list[str]:
    """The global-table models of a profile (paper: the four of Hakim et al. and ESM-2 sizes)."""
    cfg = config_for(profile)
    return ["prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert"] + list(cfg["esm_models"])


def load_protein_model(name: str, profile: str, seed: int = 0):
    """Load a registry model (``paper``) or its tiny random same-architecture stand-in (``smoke``/``offline``).

    Uses :func:`replib.models.load_model` / :func:`replib.models.tiny_model`.
    """
    from replib.models import load_model, tiny_model

    cfg = config_for(profile)

    if cfg["tiny"]:
        family, s = _TINY_STANDINS.get(name, (None, 0))
        if family is None:
            raise ValueError(f"no tiny stand-in for {name!r}; known: {sorted(_TINY_STANDINS)}")
        return tiny_model(family, seed=seed + s)
    return load_model(name)


def _embed_fn():
    from replib.embeddings import embed_proteins

    return embed_proteins


def embed_global(lm, seqs: Sequence[str], layers=(-1,), max_length: int = 1022, cache_dir=None,
                 progress: bool = True):
    """Mean-pooled protein embeddings through :func:`replib.embeddings.embed_proteins` (the model's recipe).

    Returns the :class:`~replib.embeddings.ProteinEmbeddings`; ``.pooled[layer]`` is (n, d) and for
    ProteinBERT ``.pooled["global"]`` is its 512-d global output.
    """
    embed_proteins = _embed_fn()
    return embed_proteins(lm, list(seqs), layers=layers, max_length=max_length, cache_dir=cache_dir,
                          progress=progress)


def residue_rows(lm, seqs: Sequence[str], layer=-1, max_length: int = 1022) -> dict:
    """In-memory per-amino-acid residue matrices (letter -> (m, d) float64), for small cross-checks only."""
    embed_proteins = _embed_fn()
    seqs = [s.upper() for s in seqs]
    out = embed_proteins(lm, seqs, layers=(layer,), max_length=max_length, return_residues=True, progress=False)
    key = "local" if lm.spec.recipe == "proteinbert" else layer
    groups: dict = {}
    for r, idx in enumerate(out.index):
        R = np.asarray(out.residues[key][r], dtype=np.float64)
        letters = np.array(list(seqs[int(idx)][:R.shape[0]]))
        for ch in np.unique(letters):
            groups.setdefault(str(ch), []).append(R[letters == ch])
    return {ch: np.vstack(v) for ch, v in groups.items()}


def accumulate_residues(lm, seqs: Sequence[str], layer=-1, max_length: int = 1022, chunk: int = 64,
                        min_ratio: float = 5.0, progress: bool = True) -> ResidueIsotropy:
    """Per-amino-acid streaming covariances of one layer's per-residue embeddings.

    Sequences are embedded ``chunk`` at a time (``return_residues=True``) and each chunk's residue
    matrices are folded into the accumulators and dropped, so memory is O(20·d² + chunk·L·d).
    Residues are labelled by the sequence as the model saw it (truncated to ``max_length``).
    """
    from tqdm.auto import tqdm

    embed_proteins = _embed_fn()
    seqs = [s.upper() for s in seqs]
    acc = None
    for s in tqdm(range(0, len(seqs), chunk), desc=f"residues {lm.name}", disable=not progress, leave=False):
        part = seqs[s:s + chunk]
        out = embed_proteins(lm, part, layers=(layer,), max_length=max_length, return_residues=True,
                             progress=False)
        key = "local" if lm.spec.recipe == "proteinbert" else layer
        mats = out.residues[key]
        if acc is None:
            acc = ResidueIsotropy(mats[0].shape[1], min_ratio)
        for r, idx in enumerate(out.index):
            R = mats[r]
            acc.update(part[int(idx)][:R.shape[0]], R)
    if acc is None:
        raise ValueError("no sequences to embed")
    return acc
