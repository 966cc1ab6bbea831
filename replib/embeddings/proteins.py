"""Protein sequences in, per-residue and pooled vectors out (Hakim et al. 2025: ProtTrans, ESM-2 and
ProteinBERT recipes). See :mod:`replib.embeddings`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .._io import hash_inputs, run_sharded, shard_span
from ..distributed import dask_map, on_worker
from ..models.proteinbert import tokenize
from ..models.registry import PROTEIN_RECIPES
from .batching import (
    _autocast,
    _check_layers,
    _hidden_states,
    forward_precision,
    length_batches,
    model_identity,
    pad_batch,
    pad_token_id,
)

__all__ = ["PROTEIN_RECIPES", "ProteinEmbeddings", "embed_proteins", "protein_text", "residue_slice"]


@dataclass
class ProteinEmbeddings:
    """Output of :func:`embed_proteins`.

    Attributes
    ----------
    pooled : dict int -> ndarray (n_kept, d) float32
        Mean over residue rows, per requested layer (ProteinBERT: ``"global"`` and ``"local_mean"``).
    lengths : ndarray (n_kept,) int
        Number of residue rows (from the attention mask, after truncation).
    index : ndarray (n_kept,) int
        Position of each row in the input list (sequences dropped by ``too_long="drop"`` are absent).
    truncated : ndarray (n_kept,) bool
    residues : dict or None
        Per layer, a list of ``(length_i, d)`` arrays when ``return_residues=True``.
    """

    pooled: dict
    lengths: np.ndarray
    index: np.ndarray
    truncated: np.ndarray
    residues: dict | None = None


def protein_text(seq: str, recipe: str) -> str:
    """The string fed to the tokenizer for one protein under ``recipe``.

    ``protbert``: ``[UZOB] -> X``, upper case, residues separated by spaces.
    ``protxlnet``: ``[UZOBX] -> <unk>``, separated by spaces. ``esm``: upper case, no spaces.
    """
    s = re.sub(r"\s+", "", str(seq)).upper()
    if recipe == "protbert":
        return " ".join(re.sub(r"[UZOB]", "X", s))
    if recipe == "protxlnet":
        return " ".join("<unk>" if c in "UZOBX" else c for c in s)
    if recipe == "esm":
        return s
    raise ValueError(f"no protein text recipe {recipe!r}")


def residue_slice(recipe: str, n_tok: int, padded_len: int) -> slice:
    """Rows of the residues in a padded batch row, from the attention-mask length ``n_tok``.

    ProtBert/ESM (right padding): ``[1, n_tok - 1)`` drops ``[CLS]``/``<cls>`` and ``[SEP]``/``<eos>``.
    ProtXLNet (left padding, trailing ``<sep><cls>``): ``[P - n_tok, P - 2)``.
    """
    if recipe in ("protbert", "esm"):
        return slice(1, n_tok - 1)
    if recipe == "protxlnet":
        return slice(padded_len - n_tok, padded_len - 2)
    raise ValueError(f"no residue slice for recipe {recipe!r}")


def _encode_protein(lm, seq: str) -> list:
    return list(lm.tokenizer(protein_text(seq, lm.spec.recipe), add_special_tokens=True)["input_ids"])


def embed_proteins(
    model,
    seqs,
    layers=(-1,),
    max_length: int = 1022,
    batch_tokens: int = 16384,
    cache_dir=None,
    *,
    too_long: str = "truncate",
    return_residues: bool = False,
    shard_size: int = 256,
    precision: str | None = None,
    progress: bool = True,
    shards: tuple[int, int] | None = None,
    client=None,
    loader: Callable[[], object] | None = None,
) -> ProteinEmbeddings:
    """Per-residue and mean-pooled protein embeddings with the model's own recipe: the mean over residue rows,
    special tokens (``[CLS]``/``[SEP]``, ``<sep><cls>``, ``<cls>``/``<eos>``, ProteinBERT ``<START>``/``<END>``)
    and pads dropped, with lengths from the attention mask.

    Parameters
    ----------
    model : LoadedModel
        Recipe ``protbert``, ``protxlnet``, ``esm`` or ``proteinbert``.
    seqs : sequence of str
        Amino-acid strings (one letter per residue; case and whitespace ignored).
    layers : tuple of int
        Indices into ``hidden_states`` (0 = embedding output, -1 = last). Ignored for ProteinBERT,
        which returns its final global (512-d, key ``"global"``) and the mean of its final local
        track over residues (128-d, key ``"local_mean"``).
    max_length : int
        Maximum residues per sequence (1022 = ESM-2's 1024 positions minus 2 specials). Longer
        sequences are truncated to their first ``max_length`` residues (``too_long="truncate"``) or
        dropped (``"drop"``). ProteinBERT always pads to the recipe's fixed ``seq_len`` (512; 64 for
        the tiny model) because its global output depends on the padded length, and ``max_length`` is
        capped at ``seq_len - 2``.
    batch_tokens : int
        Upper bound on ``batch_size * padded_length``. The sequences are sorted by length over the whole input
        before they are cut into shards and batches (ProtBert, ProtXLNet, ESM; ProteinBERT pads to its fixed
        length anyway), so a batch holds sequences of nearly one length: on Swiss-Prot's lengths under 1 % of
        the tokens are padding (15 % when each shard of 256 was sorted alone). A sequence's vectors do not
        depend on its batch except by float32 rounding in the matrix products (differences of about one unit in
        the last place, 1e-7, measured on the tiny models).
    cache_dir : path-like, optional
        Shard cache folder (resumable).
    return_residues : bool
        Also return per-residue matrices.
    shards : (k, n), optional
        Only the k-th of n equal ranges of the shards (one part of a chapter, :mod:`replib.parts`): computed,
        cached, and returned for their sequences only.
    client, loader : optional
        A ``distributed.Client`` (:func:`replib.distributed.dask_client`) and a picklable function that loads
        ``model`` again on a worker (once per worker): the shards are computed on the cluster and cached here,
        the same arrays as the serial path.
    precision : {"fp32", "bf16", "fp16"}, optional
        The forward's precision: float32, or autocast to bfloat16/float16 on the model's device (see
        :data:`replib.embeddings.batching.PRECISIONS`); default the model's own
        (:func:`~replib.embeddings.batching.forward_precision`). Part of the cache key.

    Returns
    -------
    ProteinEmbeddings
    """
    recipe = model.spec.recipe
    if recipe not in PROTEIN_RECIPES:
        raise ValueError(f"model {model.name} has recipe {recipe!r}, not a protein recipe {PROTEIN_RECIPES}")
    if too_long not in ("truncate", "drop"):
        raise ValueError("too_long must be 'truncate' or 'drop'")
    if max_length < 1:
        raise ValueError("max_length must be >= 1")
    clean = [re.sub(r"\s+", "", str(s)).upper() for s in seqs]
    if any(len(s) == 0 for s in clean):
        raise ValueError("empty protein sequence")
    if recipe == "proteinbert":
        max_length = min(max_length, model.spec.extra.get("seq_len", 512) - 2)
    keep = [i for i, s in enumerate(clean) if too_long == "truncate" or len(s) <= max_length]
    kept = [clean[i][:max_length] for i in keep]
    trunc = np.array([len(clean[i]) > max_length for i in keep], dtype=bool)
    by_length = recipe != "proteinbert"
    order = np.argsort([len(s) for s in kept], kind="stable") if by_length else np.arange(len(kept))
    work = [kept[i] for i in order]
    precision = forward_precision(model, precision)  # the model's own when not given
    info = dict(
        model_identity(model, precision),
        fn="embed_proteins",
        layers=list(layers) if recipe != "proteinbert" else ["global", "local_mean"],
        max_length=max_length,
        too_long=too_long,
        batch_tokens=batch_tokens,
        return_residues=return_residues,
        inputs=hash_inputs(kept),
        n=len(kept),
        **({"order": "length"} if by_length else {}),  # shards are ranges of the length-sorted sequences
    )

    def compute(a, b):
        return _protein_shard(model, work[a:b], layers, batch_tokens, return_residues, precision)

    remote = None
    if client is not None:
        if loader is None:
            raise ValueError("embedding on a Dask cluster needs loader= (how a worker loads the model)")
        rest = (batch_tokens, return_residues, precision)
        remote = dask_map(client, on_worker, lambda a, b: (loader, _protein_shard, work[a:b], layers, *rest))
    out = run_sharded(
        len(kept), shard_size, compute, info=info, cache_dir=cache_dir, desc=f"embed {model.name}",
        progress=progress, map_shards=remote, shards=shards,
    )  # fmt: skip
    span = shard_span(shards, -(-len(kept) // shard_size))
    part = order[span.start * shard_size : min(len(kept), span.stop * shard_size)]  # kept items computed
    mine = np.sort(part)  # a part returns its sequences in input order, like the whole
    return _assemble_proteins(out, np.asarray(keep)[mine], trunc[mine], return_residues, np.argsort(np.argsort(part)))


def _protein_shard(lm, seqs, layers, batch_tokens, return_residues, precision) -> dict:
    """One shard's arrays with the model's recipe."""
    if lm.spec.recipe == "proteinbert":
        return _proteinbert_shard(lm, seqs, batch_tokens, return_residues, precision)
    return _hf_protein_shard(lm, seqs, layers, batch_tokens, return_residues, precision)


def _hf_protein_shard(lm, seqs, layers, batch_tokens, return_residues, precision):
    recipe = lm.spec.recipe
    enc = [_encode_protein(lm, s) for s in seqs]
    left = recipe == "protxlnet"
    n_states = lm.spec.n_layers + 1
    layers = _check_layers(layers, n_states)
    d = lm.spec.hidden_size
    pooled = {l: np.zeros((len(seqs), d), np.float32) for l in layers}
    lengths = np.zeros(len(seqs), np.int64)
    rows = {l: [None] * len(seqs) for l in layers}
    for batch in length_batches([len(e) for e in enc], batch_tokens):
        ids, mask = pad_batch([enc[i] for i in batch], pad_token_id(lm.tokenizer), left)
        hs = _hidden_states(lm, ids, mask, precision)
        P = ids.shape[1]
        n_tok = mask.sum(1).tolist()
        for r, i in enumerate(batch):
            sl = residue_slice(recipe, int(n_tok[r]), P)
            lengths[i] = sl.stop - sl.start
            for l in layers:
                x = hs[l][r, sl].numpy()
                pooled[l][i] = x.astype(np.float64).mean(0)
                if return_residues:
                    rows[l][i] = x
    out = {f"pooled_{l}": pooled[l] for l in layers}
    out["lengths"] = lengths
    if return_residues:
        for l in layers:
            out[f"res_{l}"] = np.concatenate(rows[l]).astype(np.float32)
    return out


def _proteinbert_shard(lm, seqs, batch_tokens, return_residues, precision):
    seq_len = lm.spec.extra.get("seq_len", 512)
    n = len(seqs)
    g = np.zeros((n, lm.spec.hidden_size), np.float32)
    loc = np.zeros((n, lm.spec.extra.get("local_dim", 128)), np.float32)
    lengths = np.array([len(s) for s in seqs], np.int64)
    rows = [None] * n
    bs = max(1, batch_tokens // seq_len)
    for batch in length_batches(lengths, bs * seq_len):
        ids = torch.from_numpy(tokenize([seqs[i] for i in batch], seq_len))
        with torch.inference_mode(), _autocast(lm.device, precision):
            out = lm.model(ids.to(lm.device))
        for r, i in enumerate(batch):
            g[i] = out["global"][r].float().cpu().numpy()
            x = out["local"][r, 1 : lengths[i] + 1].float().cpu().numpy()  # drop <START>, <END>, pads
            loc[i] = x.astype(np.float64).mean(0)
            rows[i] = x
    res = {"pooled_global": g, "pooled_local_mean": loc, "lengths": lengths}
    if return_residues:
        res["res_local"] = np.concatenate(rows).astype(np.float32)
    return res


def _unsort(x: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rows computed in ``order`` (row j is item ``order[j]``) back in the items' order."""
    out = np.empty_like(x)
    out[order] = x
    return out


def _assemble_proteins(shards, keep, trunc, return_residues, order):
    """The shards (ranges of the sequences in ``order``) as one :class:`ProteinEmbeddings` in input order."""
    lengths = np.concatenate([s["lengths"] for s in shards]) if shards else np.zeros(0, np.int64)
    keys = [k[len("pooled_") :] for k in (shards[0] if shards else {}) if k.startswith("pooled_")]
    conv = lambda k: int(k) if k.lstrip("-").isdigit() else k
    pooled = {conv(k): _unsort(np.concatenate([s[f"pooled_{k}"] for s in shards]), order) for k in keys}
    residues = None
    if return_residues and shards:
        residues = {}
        offs = np.concatenate([[0], np.cumsum(lengths)])
        for k in [k[4:] for k in shards[0] if k.startswith("res_")]:
            flat = np.concatenate([s[f"res_{k}"] for s in shards])
            rows = [None] * len(lengths)
            for j, i in enumerate(order):
                rows[i] = flat[offs[j] : offs[j + 1]]
            residues[conv(k)] = rows
    return ProteinEmbeddings(pooled, _unsort(lengths, order), np.asarray(keep, np.int64), trunc, residues)


# ----------------------------------------------------------------------------------------- sentences
