"""Composition baselines that no paper gives: amino-acid and k-mer composition vectors."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .isotropy import AMINO_ACIDS


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
    k, a = int(k), len(alphabet)
    lut = np.full(256, -1, dtype=np.int64)
    lut[np.frombuffer(alphabet.encode("ascii"), dtype=np.uint8)] = np.arange(a)
    seqs = list(seqs)
    out = np.zeros((len(seqs), a**k))
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
        out[r] = np.bincount(code, minlength=a**k) / ok.sum()
    return out


def composition_baselines(seqs, kmer_max: int) -> dict:
    """Amino-acid composition (``aa_composition``, 20-d) and k-mer compositions for k = 2..``kmer_max``
    (``2mer_composition``, 400-d, ...): representations without parameters."""
    return {
        "aa_composition" if k == 1 else f"{k}mer_composition": composition_embeddings(seqs, k=k)
        for k in range(1, kmer_max + 1)
    }
