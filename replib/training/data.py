"""Training data: Swiss-Prot masked-LM batches (ESM recipe) and WikiText-2/PTB causal-LM windows.

Every batch is a pure function of ``(seed, step)`` (``numpy.random.default_rng([seed, step])``), so a run
resumed at step ``k`` draws exactly the batches an uninterrupted run would have drawn, without saving a
data-order state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2TokenizerFast

from .._io import atomic_path
from ..models.tiny import ESM_VOCAB

#: ESM-2 masking recipe :cite:`lin2023esm2` (after BERT): 15 % of residue positions are selected; of
#: those 80 % become ``<mask>``, 10 % a random residue token, 10 % stay unchanged.
ESM_RECIPE = {"mask_prob": 0.15, "replace_mask": 0.8, "replace_random": 0.1}
_ESM_ID = {t: i for i, t in enumerate(ESM_VOCAB)}
#: ids of the 20 standard residues (the random replacements)
STANDARD_IDS = np.array([_ESM_ID[a] for a in "LAGVSERTIDPKQNFYMHWC"], dtype=np.int64)


def _rng(seed: int, step: int, stream: int = 0) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(step), int(stream)])


def protein_split(seqs, n_val: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Split sequences into (train, validation) by a seeded permutation; ``n_val`` go to validation."""
    seqs = list(seqs)
    if not 0 < n_val < len(seqs):
        raise ValueError(f"n_val must be in (0, {len(seqs)}); got {n_val}")
    order = np.random.default_rng([int(seed), 7]).permutation(len(seqs))
    return [seqs[i] for i in order[n_val:]], [seqs[i] for i in order[:n_val]]


def encode_protein(seq: str) -> np.ndarray:
    """ESM-2 token ids of a residue string (unknown letters map to ``<unk>``), without specials."""
    unk = _ESM_ID["<unk>"]
    return np.array([_ESM_ID.get(a, unk) for a in seq.upper()], dtype=np.int64)


def mask_tokens(ids: np.ndarray, maskable: np.ndarray, rng: np.random.Generator, recipe: dict = ESM_RECIPE):
    """Apply the masked-LM corruption to a batch.

    Parameters
    ----------
    ids : ndarray (batch, length) of int
    maskable : ndarray (batch, length) of bool
        Positions that may be selected (residues; not ``<cls>``, ``<eos>``, padding).
    rng : numpy Generator

    Returns
    -------
    inputs, labels : ndarray (batch, length)
        ``labels`` is ``-100`` except at the selected positions, where it holds the original id.
    """
    ids = np.asarray(ids)
    selected = maskable & (rng.random(ids.shape) < recipe["mask_prob"])
    u = rng.random(ids.shape)
    to_mask = selected & (u < recipe["replace_mask"])
    to_rand = selected & (u >= recipe["replace_mask"]) & (u < recipe["replace_mask"] + recipe["replace_random"])
    inputs = ids.copy()
    inputs[to_mask] = _ESM_ID["<mask>"]
    inputs[to_rand] = STANDARD_IDS[rng.integers(0, len(STANDARD_IDS), size=int(to_rand.sum()))]
    labels = np.where(selected, ids, -100)
    return inputs, labels


def protein_batch(seqs, step: int, seed: int, batch: int, seq_len: int, *, stream: int = 0, indices=None) -> dict:
    """One masked-LM batch: ``batch`` sequences (drawn with replacement, or ``indices``), a random crop of
    ``seq_len - 2`` residues each, ``<cls> … <eos>`` and right padding, then :func:`mask_tokens`.

    Returns a dict of int64 arrays ``input_ids``, ``attention_mask``, ``labels`` and ``clean_ids``.
    """
    rng = _rng(seed, step, stream)
    idx = rng.integers(0, len(seqs), size=batch) if indices is None else np.asarray(indices)
    L = seq_len - 2
    ids = np.full((len(idx), seq_len), _ESM_ID["<pad>"], dtype=np.int64)
    for r, i in enumerate(idx):
        tok = encode_protein(seqs[i])
        start = int(rng.integers(0, len(tok) - L + 1)) if len(tok) > L else 0
        tok = tok[start : start + L]
        ids[r, 0], ids[r, 1 : len(tok) + 1], ids[r, len(tok) + 1] = _ESM_ID["<cls>"], tok, _ESM_ID["<eos>"]
    attn = (ids != _ESM_ID["<pad>"]).astype(np.int64)
    maskable = attn.astype(bool) & (ids != _ESM_ID["<cls>"]) & (ids != _ESM_ID["<eos>"])
    inputs, labels = mask_tokens(ids, maskable, rng)
    return {"input_ids": inputs, "attention_mask": attn, "labels": labels, "clean_ids": ids}


# ------------------------------------------------------------------------------------------------ text
def text_split(lines) -> str:
    """WikiText/PTB lines joined as one training text, one ``<|endoftext|>``-free newline per line."""
    return "\n".join(line.strip() for line in lines if line.strip())


def articles(lines) -> list[list[str]]:
    """WikiText lines grouped into articles: an article starts at each top-level heading ``= Title =`` (a
    section heading ``= = … = =`` stays inside its article); lines before the first heading form one group."""
    out: list[list[str]] = []
    for line in lines:
        s = line.strip()
        if not out or (s.startswith("= ") and s.endswith(" =") and not s.startswith("= =")):
            out.append([])
        out[-1].append(line)
    return out


def hold_out(lines, n_words: int) -> tuple[list[str], list[str]]:
    """Split WikiText lines into (held-out, rest) at an article boundary: the held-out part is the shortest
    run of leading :func:`articles` with at least ``n_words`` whitespace-separated words (a byte-level BPE
    token stream is at least as long as its text's words), the rest are the articles after them."""
    groups = articles(lines)
    words = np.cumsum([sum(len(line.split()) for line in g) for g in groups])
    k = int(np.searchsorted(words, n_words)) + 1
    if k >= len(groups):
        raise ValueError(f"the text has {int(words[-1])} words in {len(groups)} articles: cannot hold out {n_words}")
    return [line for g in groups[:k] for line in g], [line for g in groups[k:] for line in g]


def train_bpe_tokenizer(text: str, vocab_size: int, out_dir) -> object:
    """Train a byte-level BPE (the ``tokenizers`` library, GPT-2's scheme) on ``text``; save it as a GPT-2
    tokenizer folder (``vocab.json``, ``merges.txt``) and return the ``GPT2TokenizerFast``.

    Deterministic for a given text and vocabulary size; ``<|endoftext|>`` is the one special token.
    """
    out_dir = Path(out_dir)
    if not (out_dir / "vocab.json").exists() or not (out_dir / "merges.txt").exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        bpe = ByteLevelBPETokenizer()
        chunks = (text[i : i + 100_000] for i in range(0, len(text), 100_000))
        bpe.train_from_iterator(
            chunks, vocab_size=vocab_size, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False
        )
        with atomic_path(out_dir / "merges.txt") as tmp_m, atomic_path(out_dir / "vocab.json") as tmp_v:
            tmp_m.parent.joinpath(".bpe").mkdir(exist_ok=True)
            bpe.save_model(str(tmp_m.parent / ".bpe"))
            (tmp_m.parent / ".bpe" / "merges.txt").replace(tmp_m)
            (tmp_m.parent / ".bpe" / "vocab.json").replace(tmp_v)
    tok = GPT2TokenizerFast.from_pretrained(str(out_dir))
    tok.pad_token = tok.eos_token
    return tok


def encode_text(tok, text: str) -> np.ndarray:
    """Token ids of a whole text as one stream (lines joined by newlines)."""
    ids = []
    for i in range(0, len(text), 200_000):  # chunked: the fast tokenizer is linear, this bounds memory
        piece = text[i : i + 200_000]
        ids.extend(tok(piece, add_special_tokens=False)["input_ids"])
    return np.asarray(ids, dtype=np.int64)


def text_batch(
    stream: np.ndarray, step: int, seed: int, batch: int, seq_len: int, *, stream_id: int = 0, starts=None
) -> dict:
    """``batch`` windows of ``seq_len`` tokens at random offsets (or ``starts``) of the token stream;
    labels are the inputs (the model shifts them)."""
    if len(stream) <= seq_len:
        raise ValueError(f"token stream of {len(stream)} tokens is shorter than seq_len={seq_len}")
    if starts is None:
        starts = _rng(seed, step, stream_id).integers(0, len(stream) - seq_len, size=batch)
    ids = np.stack([stream[s : s + seq_len] for s in starts])
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "labels": ids.copy()}
