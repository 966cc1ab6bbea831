"""TODO(replace with replib.models / replib.embeddings once merged): minimal tiny protein models.

A private stand-in so the protein chapter runs before the shared model layer lands. It builds tiny
random-weight models with the real architecture classes and vocabularies of ProtBert
(:class:`transformers.BertModel`, the 30-token ProtBert vocabulary, ``[UZOB] -> X``) and ESM-2
(:class:`transformers.EsmModel`, the 33-token ESM vocabulary), and mean-pools their residue rows
(special tokens and pads dropped, lengths from the attention mask), as ``replib.embeddings`` does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

PROTBERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "L", "A", "G", "V", "E", "S", "I", "K",
                  "R", "D", "T", "P", "N", "Q", "F", "Y", "M", "H", "C", "W", "X", "U", "B", "Z", "O"]
ESM_VOCAB = ["<cls>", "<pad>", "<eos>", "<unk>", "L", "A", "G", "V", "S", "E", "R", "T", "I", "D", "P", "K",
             "Q", "N", "F", "Y", "M", "H", "W", "C", "X", "B", "U", "Z", "O", ".", "-", "<null_1>", "<mask>"]
_TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


@dataclass
class _Spec:
    recipe: str
    hidden_size: int
    n_layers: int
    extra: dict = field(default_factory=dict)


@dataclass
class TinyModel:
    name: str
    model: object
    spec: _Spec
    device: str = "cpu"
    source: str = ""


@dataclass
class Embeddings:
    pooled: dict
    lengths: np.ndarray
    index: np.ndarray
    truncated: np.ndarray
    residues: dict | None = None


def tiny_model(family: str, seed: int = 0) -> TinyModel:
    import torch
    import transformers as tr

    torch.manual_seed(seed)
    if family == "protbert":
        cfg = tr.BertConfig(vocab_size=len(PROTBERT_VOCAB), max_position_embeddings=1026, **_TINY)
        model = tr.BertModel(cfg, add_pooling_layer=False)
    elif family == "esm":
        cfg = tr.EsmConfig(vocab_size=len(ESM_VOCAB), pad_token_id=1, mask_token_id=32,
                           max_position_embeddings=1026, position_embedding_type="rotary",
                           token_dropout=True, emb_layer_norm_before=False, **_TINY)
        model = tr.EsmModel(cfg, add_pooling_layer=False)
    else:
        raise NotImplementedError(f"tiny {family!r} needs replib.models (not merged yet)")
    return TinyModel(f"tiny-{family}", model.eval(), _Spec(family, _TINY["hidden_size"], _TINY["num_hidden_layers"]),
                     source=f"random:seed={seed}")


def _encode(seq: str, recipe: str) -> list[int]:
    if recipe == "protbert":
        v = {t: k for k, t in enumerate(PROTBERT_VOCAB)}
        return [2] + [v.get(c, 1) for c in re.sub(r"[UZOB]", "X", seq)] + [3]
    v = {t: k for k, t in enumerate(ESM_VOCAB)}
    return [0] + [v.get(c, 3) for c in seq] + [2]


def embed_proteins(lm, seqs, layers=(-1,), max_length=1022, cache_dir=None, return_residues=False,
                   progress=False, batch_size=16, **_):
    import torch

    recipe = lm.spec.recipe
    pad = 0 if recipe == "protbert" else 1
    seqs = [re.sub(r"\s+", "", s).upper()[:max_length] for s in seqs]
    d = lm.spec.hidden_size
    pooled = {l: np.zeros((len(seqs), d), np.float32) for l in layers}
    res = {l: [None] * len(seqs) for l in layers} if return_residues else None
    order = np.argsort([len(s) for s in seqs], kind="stable")
    for b in range(0, len(seqs), batch_size):
        batch = order[b:b + batch_size]
        enc = [_encode(seqs[i], recipe) for i in batch]
        P = max(len(e) for e in enc)
        ids = torch.full((len(enc), P), pad, dtype=torch.long)
        mask = torch.zeros((len(enc), P), dtype=torch.long)
        for r, e in enumerate(enc):
            ids[r, :len(e)] = torch.as_tensor(e)
            mask[r, :len(e)] = 1
        with torch.inference_mode():
            hs = lm.model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        for r, i in enumerate(batch):
            n = len(enc[r])
            for l in layers:
                x = hs[l][r, 1:n - 1].float().numpy()
                pooled[l][i] = x.astype(np.float64).mean(0)
                if return_residues:
                    res[l][i] = x
    lengths = np.array([len(s) for s in seqs], np.int64)
    return Embeddings(pooled, lengths, np.arange(len(seqs)), np.zeros(len(seqs), bool), res)
