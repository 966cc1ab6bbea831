"""Texts or protein sequences in, per-token and pooled vectors out, with each model's exact recipe.

Three entry points:

- :func:`embed_proteins` (Hakim et al. 2025 via ProtTrans / ESM-2 / ProteinBERT recipes),
- :func:`embed_sentences` (Rajaee & Pilehvar 2021; SBERT mean pooling),
- :func:`embed_token_stream` (Cai et al. 2021, ``gen_embeds.py``).

All of them encode each item alone (so the result never depends on the batch), then batch by length
(sorted, padded by hand on the side the recipe needs, attention mask from the true lengths), run
under ``torch.inference_mode`` and -- on CUDA only -- autocast (fp16/bf16), and return float32 numpy
arrays (metrics downstream cast to float64). Work is cut into shards cached on disk when
``cache_dir`` is given (see :func:`replib._io.run_sharded`).

Layer indices for proteins and sentences index ``hidden_states`` (``0`` = embedding output,
``-1`` = last block). For the token stream they follow Cai's code: layer ``0`` = the output of the
first block (``hidden_states[1:]``).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

import numpy as np

from .._io import hash_inputs, run_sharded

PROTEIN_RECIPES = ("protbert", "protxlnet", "esm", "proteinbert")
TEXT_RECIPES = ("text", "sbert")


# ----------------------------------------------------------------------------------------- results
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


@dataclass
class SentenceEmbeddings:
    """Output of :func:`embed_sentences`.

    Attributes
    ----------
    tokens : list of ndarray (n_tokens_i, d) float32
        Token rows per sentence (special tokens dropped when ``drop_special``).
    means : ndarray (n_texts, d) float32
        Mean of each sentence's kept rows.
    token_ids : list of ndarray int
    """

    tokens: list
    means: np.ndarray
    token_ids: list = field(default_factory=list)


@dataclass
class TokenStream:
    """Output of :func:`embed_token_stream` (Cai et al.'s per-token dump).

    Attributes
    ----------
    layers : dict int -> ndarray (n_tokens, d) float32
        Code layer ``l`` = ``hidden_states[l + 1]``.
    token_ids, window, position : ndarray (n_tokens,) int
    tokens : list of str
        Token strings (the "types").
    """

    layers: dict
    token_ids: np.ndarray
    tokens: list
    window: np.ndarray
    position: np.ndarray


# ----------------------------------------------------------------------------------------- helpers
def _autocast(device: str, amp: bool):
    import torch

    if amp and str(device).startswith("cuda"):
        dt = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dt)
    return contextlib.nullcontext()


def _pad_id(tok) -> int:
    pid = getattr(tok, "pad_token_id", None)
    return int(pid) if pid is not None else 0


def _batches(lengths, batch_tokens: int, max_batch: int = 256):
    """Index batches in increasing-length order with ``len(batch) * max_len <= batch_tokens``."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batch, cur = [], 0
    for i in order:
        L = int(lengths[i])
        if batch and (max(cur, L) * (len(batch) + 1) > batch_tokens or len(batch) >= max_batch):
            yield batch
            batch, cur = [], 0
        batch.append(int(i))
        cur = max(cur, L)
    if batch:
        yield batch


def _pad(seqs, pad_id: int, left: bool):
    import torch

    P = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), P), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), P), dtype=torch.long)
    for r, s in enumerate(seqs):
        if left:
            ids[r, P - len(s) :] = torch.as_tensor(s)
            mask[r, P - len(s) :] = 1
        else:
            ids[r, : len(s)] = torch.as_tensor(s)
            mask[r, : len(s)] = 1
    return ids, mask


def _hidden_states(lm, ids, mask, amp: bool):
    """All hidden states (tuple, index 0 = embeddings) as float32 CPU tensors."""
    import torch

    dev = lm.device
    with torch.inference_mode(), _autocast(dev, amp):
        kw = {
            "input_ids": ids.to(dev),
            "attention_mask": None if mask is None else mask.to(dev),
            "output_hidden_states": True,
        }
        out = lm.model(**kw)
    return [h.float().cpu() for h in out.hidden_states]


def _check_layers(layers, n_states: int):
    layers = tuple(int(l) for l in (layers if isinstance(layers, (list, tuple)) else (layers,)))
    for l in layers:
        if not -n_states <= l < n_states:
            raise ValueError(f"layer {l} out of range for {n_states} hidden states")
    return layers


def _model_info(lm, amp: bool) -> dict:
    """What of the model shapes its outputs (part of every cache key): identity and weights (the weights' sha256
    for local files, not their folder or name), the device type and the precision (autocast runs on CUDA only)."""
    device = str(getattr(lm, "device", "cpu")).split(":")[0]
    if getattr(lm, "weights_sha256", None):
        ident = {"weights_sha256": lm.weights_sha256, "recipe": lm.spec.recipe}
    else:
        ident = {"model": lm.name, "revision": lm.spec.revision, "recipe": lm.spec.recipe, "source": lm.source}
    return {**ident, "device": device, "autocast": bool(amp) and device == "cuda"}


# ----------------------------------------------------------------------------------------- proteins
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
    pooling: str = "mean",
    max_length: int = 1022,
    batch_tokens: int = 16384,
    cache_dir=None,
    *,
    too_long: str = "truncate",
    return_residues: bool = False,
    shard_size: int = 256,
    amp: bool = True,
    progress: bool = True,
) -> ProteinEmbeddings:
    """Per-residue and mean-pooled protein embeddings with the model's own recipe.

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
    pooling : {"mean"}
        Mean over residue rows; special tokens (``[CLS]``/``[SEP]``, ``<sep><cls>``,
        ``<cls>``/``<eos>``, ProteinBERT ``<START>``/``<END>``) and pads are dropped, with lengths from
        the attention mask.
    max_length : int
        Maximum residues per sequence (1022 = ESM-2's 1024 positions minus 2 specials). Longer
        sequences are truncated to their first ``max_length`` residues (``too_long="truncate"``) or
        dropped (``"drop"``). ProteinBERT always pads to the recipe's fixed ``seq_len`` (512; 64 for
        the tiny model) because its global output depends on the padded length, and ``max_length`` is
        capped at ``seq_len - 2``.
    batch_tokens : int
        Upper bound on ``batch_size * padded_length``.
    cache_dir : path-like, optional
        Shard cache folder (resumable).
    return_residues : bool
        Also return per-residue matrices.

    Returns
    -------
    ProteinEmbeddings
    """
    recipe = model.spec.recipe
    if recipe not in PROTEIN_RECIPES:
        raise ValueError(f"model {model.name} has recipe {recipe!r}, not a protein recipe {PROTEIN_RECIPES}")
    if pooling != "mean":
        raise ValueError("pooling must be 'mean'")
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
    info = dict(
        _model_info(model, amp),
        fn="embed_proteins",
        layers=list(layers) if recipe != "proteinbert" else ["global", "local_mean"],
        max_length=max_length,
        too_long=too_long,
        batch_tokens=batch_tokens,
        return_residues=return_residues,
        inputs=hash_inputs(kept),
        n=len(kept),
    )

    def compute(a, b):
        if recipe == "proteinbert":
            return _proteinbert_shard(model, kept[a:b], batch_tokens, return_residues)
        return _hf_protein_shard(model, kept[a:b], layers, batch_tokens, return_residues, amp)

    shards = run_sharded(
        len(kept), shard_size, compute, info=info, cache_dir=cache_dir, desc=f"embed {model.name}", progress=progress
    )
    return _assemble_proteins(shards, keep, trunc, return_residues)


def _hf_protein_shard(lm, seqs, layers, batch_tokens, return_residues, amp):
    recipe = lm.spec.recipe
    enc = [_encode_protein(lm, s) for s in seqs]
    left = recipe == "protxlnet"
    n_states = lm.spec.n_layers + 1
    layers = _check_layers(layers, n_states)
    d = lm.spec.hidden_size
    pooled = {l: np.zeros((len(seqs), d), np.float32) for l in layers}
    lengths = np.zeros(len(seqs), np.int64)
    rows = {l: [None] * len(seqs) for l in layers}
    for batch in _batches([len(e) for e in enc], batch_tokens):
        ids, mask = _pad([enc[i] for i in batch], _pad_id(lm.tokenizer), left)
        hs = _hidden_states(lm, ids, mask, amp)
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


def _proteinbert_shard(lm, seqs, batch_tokens, return_residues):
    import torch

    from replib.models.proteinbert import tokenize

    seq_len = lm.spec.extra.get("seq_len", 512)
    n = len(seqs)
    g = np.zeros((n, lm.spec.hidden_size), np.float32)
    loc = np.zeros((n, lm.spec.extra.get("local_dim", 128)), np.float32)
    lengths = np.array([len(s) for s in seqs], np.int64)
    rows = [None] * n
    bs = max(1, batch_tokens // seq_len)
    for batch in _batches(lengths, bs * seq_len):
        ids = torch.from_numpy(tokenize([seqs[i] for i in batch], seq_len))
        with torch.inference_mode():
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


def _assemble_proteins(shards, keep, trunc, return_residues):
    lengths = np.concatenate([s["lengths"] for s in shards]) if shards else np.zeros(0, np.int64)
    keys = [k[len("pooled_") :] for k in (shards[0] if shards else {}) if k.startswith("pooled_")]
    conv = lambda k: int(k) if k.lstrip("-").isdigit() else k
    pooled = {conv(k): np.concatenate([s[f"pooled_{k}"] for s in shards]) for k in keys}
    residues = None
    if return_residues and shards:
        residues = {}
        offs = np.concatenate([[0], np.cumsum(lengths)])
        for k in [k[4:] for k in shards[0] if k.startswith("res_")]:
            flat = np.concatenate([s[f"res_{k}"] for s in shards])
            residues[conv(k)] = [flat[offs[i] : offs[i + 1]] for i in range(len(lengths))]
    return ProteinEmbeddings(pooled, lengths, np.asarray(keep, np.int64), trunc, residues)


# ----------------------------------------------------------------------------------------- sentences
def _special_span(tok, text: str, max_length: int):
    """Token ids of ``text`` with special tokens, and the slice of its non-special rows.

    The tokenizer's specials are a prefix and/or suffix (``[CLS] x [SEP]``, ``<s> x </s>``, none for
    GPT-2); the slice is found by matching the ids encoded without specials. ``[UNK]`` stays a token.
    """
    full = list(tok(text, add_special_tokens=True, truncation=True, max_length=max_length)["input_ids"])
    bare = list(tok(text, add_special_tokens=False)["input_ids"])
    n_sp = tok.num_special_tokens_to_add(pair=False)
    m = len(full) - n_sp
    for p in range(n_sp + 1):
        if full[p : p + m] == bare[:m]:
            return full, slice(p, p + m)
    raise ValueError(f"could not locate the special tokens of {text!r}")


def embed_sentences(
    model,
    texts,
    layer: int = -1,
    drop_special: bool = True,
    *,
    max_length: int | None = None,
    batch_tokens: int = 8192,
    cache_dir=None,
    shard_size: int = 2048,
    amp: bool = True,
    progress: bool = True,
) -> SentenceEmbeddings:
    """Token matrices and mean-pooled vectors, each sentence encoded alone (Rajaee & Pilehvar; SBERT).

    Parameters
    ----------
    model : LoadedModel
        A text model (recipe ``text`` or ``sbert``).
    texts : sequence of str
    layer : int
        Index into ``hidden_states`` (-1 = last block).
    drop_special : bool
        Drop the rows the tokenizer adds (``[CLS]``/``[SEP]``, ``<s>``/``</s>``; GPT-2 adds none) before
        the mean, as Rajaee & Pilehvar. ``False`` keeps them: the mean is then the attention-mask weighted
        mean pooling of sentence-transformers (all-MiniLM-L6-v2's pooling, before its Normalize module).
    max_length : int, optional
        Token limit including specials (default: ``tokenizer.model_max_length`` capped at 512).

    Returns
    -------
    SentenceEmbeddings
    """
    tok = model.tokenizer
    if model.spec.recipe not in TEXT_RECIPES:
        raise ValueError(f"model {model.name} has recipe {model.spec.recipe!r}, not a text recipe")
    texts = [str(t) for t in texts]
    max_length = int(max_length or min(getattr(tok, "model_max_length", 512) or 512, 512))
    n_states = model.spec.n_layers + 1
    (layer,) = _check_layers(layer, n_states)
    info = dict(
        _model_info(model, amp),
        fn="embed_sentences",
        layer=layer,
        drop_special=drop_special,
        max_length=max_length,
        batch_tokens=batch_tokens,
        inputs=hash_inputs(texts),
        n=len(texts),
    )

    def compute(a, b):
        enc = [_special_span(tok, t, max_length) for t in texts[a:b]]
        rows, means, ids_out = [None] * len(enc), np.zeros((len(enc), model.spec.hidden_size), np.float32), []
        for batch in _batches([len(e[0]) for e in enc], batch_tokens):
            ids, mask = _pad([enc[i][0] for i in batch], _pad_id(tok), left=False)
            hs = _hidden_states(model, ids, mask, amp)[layer]
            for r, i in enumerate(batch):
                full, sl = enc[i]
                keep = sl if drop_special else slice(0, len(full))
                x = hs[r, keep].numpy()
                rows[i] = x
                means[i] = x.astype(np.float64).mean(0) if len(x) else np.nan
        ids_out = [np.asarray(e[0][(e[1] if drop_special else slice(None))], np.int64) for e in enc]
        lens = np.array([len(x) for x in rows], np.int64)
        return {
            "tokens": np.concatenate(rows).astype(np.float32)
            if rows
            else np.zeros((0, model.spec.hidden_size), np.float32),
            "means": means,
            "lengths": lens,
            "ids": np.concatenate(ids_out) if ids_out else np.zeros(0, np.int64),
        }

    shards = run_sharded(
        len(texts), shard_size, compute, info=info, cache_dir=cache_dir, desc=f"embed {model.name}", progress=progress
    )
    tokens, ids = [], []
    for s in shards:
        offs = np.concatenate([[0], np.cumsum(s["lengths"])])
        tokens += [s["tokens"][offs[i] : offs[i + 1]] for i in range(len(s["lengths"]))]
        ids += [s["ids"][offs[i] : offs[i + 1]] for i in range(len(s["lengths"]))]
    means = (
        np.concatenate([s["means"] for s in shards]) if shards else np.zeros((0, model.spec.hidden_size), np.float32)
    )
    return SentenceEmbeddings(tokens, means, ids)


# ----------------------------------------------------------------------------------------- token stream
def token_stream_ids(tokenizer, lines, add_special_tokens: bool = True) -> list:
    """Cai's stream: every raw line through ``tokenizer.encode`` (blank lines too), concatenated.

    With ``add_special_tokens=True`` (faithful: modern ``encode``'s default), BERT-family streams hold
    ``[CLS] ... [SEP]`` around every line; GPT/GPT-2 add nothing either way.
    """
    ids = []
    for line in lines:
        ids.extend(tokenizer.encode(line.rstrip("\n"), add_special_tokens=add_special_tokens))
    return ids


def embed_token_stream(
    model,
    lines,
    window: int = 512,
    layers=None,
    *,
    add_special_tokens: bool = True,
    batch_windows: int = 4,
    cache_dir=None,
    shard_size: int = 16,
    amp: bool = True,
    progress: bool = True,
) -> TokenStream:
    """Cai et al.'s per-token embeddings: consecutive non-overlapping windows, no attention mask.

    Parameters
    ----------
    model : LoadedModel
    lines : iterable of str
        Raw corpus lines (e.g. WikiText/PTB files read line by line).
    window : int
        Window length in tokens (512 as Cai's ``bptt_len``); the short tail is dropped.
    layers : iterable of int, optional
        Code layers (``0`` = first block output = ``hidden_states[1]``); default all.
    add_special_tokens : bool
        Passed to ``tokenizer.encode`` per line (True = faithful to the authors' run).

    Returns
    -------
    TokenStream
    """
    import torch

    if window < 1:
        raise ValueError("window must be >= 1")
    tok = model.tokenizer
    ids = token_stream_ids(tok, list(lines), add_special_tokens)
    n_win = len(ids) // window
    if n_win == 0:
        raise ValueError(f"stream has {len(ids)} tokens < one window of {window}")
    n_layers = model.spec.n_layers
    layers = tuple(range(n_layers)) if layers is None else tuple(int(l) for l in layers)
    for l in layers:
        if not 0 <= l < n_layers:
            raise ValueError(f"code layer {l} out of range 0..{n_layers - 1}")
    arr = np.asarray(ids[: n_win * window], np.int64).reshape(n_win, window)
    info = dict(
        _model_info(model, amp),
        fn="embed_token_stream",
        window=window,
        layers=list(layers),
        add_special_tokens=add_special_tokens,
        batch_windows=batch_windows,
        inputs=hash_inputs(map(str, arr.ravel())),
        n=n_win,
    )

    def compute(a, b):
        out = {l: [] for l in layers}
        for s in range(a, b, batch_windows):
            x = torch.from_numpy(arr[s : min(b, s + batch_windows)])
            hs = _hidden_states(model, x, None, amp)
            for l in layers:
                out[l].append(hs[l + 1].reshape(-1, hs[l + 1].shape[-1]).numpy())
        return {f"layer_{l}": np.concatenate(v).astype(np.float32) for l, v in out.items()}

    shards = run_sharded(
        n_win, shard_size, compute, info=info, cache_dir=cache_dir, desc=f"stream {model.name}", progress=progress
    )
    mats = {l: np.concatenate([s[f"layer_{l}"] for s in shards]) for l in layers}
    flat = arr.ravel()
    return TokenStream(
        mats,
        flat,
        tok.convert_ids_to_tokens(flat.tolist()),
        np.repeat(np.arange(n_win), window),
        np.tile(np.arange(window), n_win),
    )
