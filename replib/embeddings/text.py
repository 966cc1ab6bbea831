"""Sentences and token streams in, per-token and pooled vectors out (Rajaee & Pilehvar 2021; Cai et al.
2021, ``gen_embeds.py``). See :mod:`replib.embeddings`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from .._io import hash_inputs, progress_off, run_sharded
from ..models.registry import TEXT_RECIPES
from .batching import (
    _check_layers,
    _hidden_states,
    default_batch_tokens,
    forward_precision,
    length_batches,
    model_identity,
    pad_batch,
    pad_token_id,
)

__all__ = [
    "TEXT_RECIPES",
    "SentenceEmbeddings",
    "TokenStream",
    "embed_sentence_layers",
    "embed_sentences",
    "embed_token_stream",
    "token_stream_ids",
    "token_windows",
    "window_hidden_states",
]


# ----------------------------------------------------------------------------------------- results


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


def _special_spans(tok, texts: list, max_length: int) -> list:
    """For each text: its token ids with special tokens, and the slice of its non-special rows.

    The tokenizer's specials are a prefix and/or suffix (``[CLS] x [SEP]``, ``<s> x </s>``, none for
    GPT-2); the slice is found by matching the ids encoded without specials. ``[UNK]`` stays a token.
    Both encodings are made for the whole list in one call (a fast tokenizer encodes batches in parallel).
    """
    if not texts:
        return []
    fulls = tok(texts, add_special_tokens=True, truncation=True, max_length=max_length)["input_ids"]
    bares = tok(texts, add_special_tokens=False)["input_ids"]
    n_sp = tok.num_special_tokens_to_add(pair=False)
    out = []
    for text, full, bare in zip(texts, fulls, bares):
        full, bare = list(full), list(bare)
        m = len(full) - n_sp
        for p in range(n_sp + 1):
            if full[p : p + m] == bare[:m]:
                out.append((full, slice(p, p + m)))
                break
        else:
            raise ValueError(f"could not locate the special tokens of {text!r}")
    return out


def embed_sentences(
    model,
    texts,
    layer: int = -1,
    drop_special: bool = True,
    *,
    max_length: int | None = None,
    batch_tokens: int | None = None,
    cache_dir=None,
    shard_size: int = 2048,
    precision: str | None = None,
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
    batch_tokens : int, optional
        Padded tokens per batch (sentences sorted by length); default 2,048 on CPU, 8,192 on a GPU.
    precision : {"fp32", "bf16", "fp16"}, optional
        The forward's precision: float32, or autocast to bfloat16/float16 on the model's device (see
        :data:`replib.embeddings.batching.PRECISIONS`); default the model's own
        (:func:`~replib.embeddings.batching.forward_precision`). Part of the cache key.

    Returns
    -------
    SentenceEmbeddings
    """
    (layer,) = _check_layers(layer, model.spec.n_layers + 1)
    kw = dict(max_length=max_length, batch_tokens=batch_tokens, cache_dir=cache_dir, shard_size=shard_size)
    return embed_sentence_layers(model, texts, (layer,), drop_special, precision=precision, progress=progress, **kw)[
        layer
    ]


def embed_sentence_layers(
    model,
    texts,
    layers=None,
    drop_special: bool = True,
    *,
    max_length: int | None = None,
    batch_tokens: int | None = None,
    cache_dir=None,
    shard_size: int = 2048,
    precision: str | None = None,
    progress: bool = True,
) -> dict:
    """:func:`embed_sentences` at several hidden states from one forward pass per batch.

    Each layer's result equals ``embed_sentences(model, texts, layer=l, ...)`` bit for bit (the same batches
    through the same forward); the model runs once instead of once per layer.

    Parameters
    ----------
    layers : sequence of int, optional
        Indices into ``hidden_states`` (0 = embedding output, -1 = last block); default every hidden state.
    Others
        As :func:`embed_sentences`.

    Returns
    -------
    dict int -> SentenceEmbeddings
        Keyed by the layer indices as given.
    """
    tok = model.tokenizer
    if model.spec.recipe not in TEXT_RECIPES:
        raise ValueError(f"model {model.name} has recipe {model.spec.recipe!r}, not a text recipe")
    texts = [str(t) for t in texts]
    max_length = int(max_length or min(getattr(tok, "model_max_length", 512) or 512, 512))
    layers = range(model.spec.n_layers + 1) if layers is None else layers
    layers = _check_layers(list(layers), model.spec.n_layers + 1)
    if not layers or len(set(layers)) != len(layers):
        raise ValueError(f"layers must be distinct and at least one; got {list(layers)}")
    batch_tokens = int(batch_tokens or default_batch_tokens(getattr(model, "device", "cpu")))
    precision = forward_precision(model, precision)  # the model's own when not given
    info = dict(
        model_identity(model, precision),
        fn="embed_sentences",
        layers=list(layers),
        drop_special=drop_special,
        max_length=max_length,
        batch_tokens=batch_tokens,
        inputs=hash_inputs(texts),
        n=len(texts),
    )

    def compute(a, b):
        return _sentence_shard(model, texts[a:b], layers, drop_special, max_length, batch_tokens, precision)

    shards = run_sharded(
        len(texts), shard_size, compute, info=info, cache_dir=cache_dir, desc=f"embed {model.name}", progress=progress
    )
    return {l: _assemble_sentences(shards, l, model.spec.hidden_size) for l in layers}


def _sentence_shard(model, texts, layers, drop_special, max_length, batch_tokens, precision) -> dict:
    """Token rows and means per layer, lengths and ids of a shard of sentences (each encoded alone, batched by
    length; one forward per batch for every layer)."""
    tok = model.tokenizer
    enc = _special_spans(tok, texts, max_length)
    d = model.spec.hidden_size
    rows = {l: [None] * len(enc) for l in layers}
    means = {l: np.zeros((len(enc), d), np.float32) for l in layers}
    for batch in length_batches([len(e[0]) for e in enc], batch_tokens):
        ids, mask = pad_batch([enc[i][0] for i in batch], pad_token_id(tok), left=False)
        states = _hidden_states(model, ids, mask, precision)
        for l in layers:
            hs = states[l]
            for r, i in enumerate(batch):
                full, sl = enc[i]
                x = hs[r, sl if drop_special else slice(0, len(full))].numpy()
                rows[l][i] = x
                means[l][i] = np.mean(x, axis=0, dtype=np.float64) if len(x) else np.nan
    ids_out = [np.asarray(e[0][(e[1] if drop_special else slice(None))], np.int64) for e in enc]
    out = {
        "lengths": np.array([len(x) for x in rows[layers[0]]], np.int64),
        "ids": np.concatenate(ids_out) if ids_out else np.zeros(0, np.int64),
    }
    for l in layers:
        out[f"tokens_{l}"] = np.concatenate(rows[l]).astype(np.float32) if enc else np.zeros((0, d), np.float32)
        out[f"means_{l}"] = means[l]
    return out


def _assemble_sentences(shards, layer: int, hidden_size: int) -> SentenceEmbeddings:
    tokens, ids = [], []
    for s in shards:
        offs = np.concatenate([[0], np.cumsum(s["lengths"])])
        tokens += [s[f"tokens_{layer}"][offs[i] : offs[i + 1]] for i in range(len(s["lengths"]))]
        ids += [s["ids"][offs[i] : offs[i + 1]] for i in range(len(s["lengths"]))]
    means = np.concatenate([s[f"means_{layer}"] for s in shards]) if shards else np.zeros((0, hidden_size), np.float32)
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
    precision: str | None = None,
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
    precision : {"fp32", "bf16", "fp16"}, optional
        The forward's precision (default the model's own; see :func:`embed_sentences`).

    Returns
    -------
    TokenStream
    """
    tok = model.tokenizer
    arr = token_windows(tok, lines, window, add_special_tokens)
    n_win = len(arr)
    layers = _code_layers(model, layers)
    precision = forward_precision(model, precision)  # the model's own when not given
    info = dict(
        model_identity(model, precision),
        fn="embed_token_stream",
        window=window,
        layers=list(layers),
        add_special_tokens=add_special_tokens,
        batch_windows=batch_windows,
    )

    def compute(a, b):
        states = window_hidden_states(model, arr[a:b], layers, batch_windows=batch_windows, precision=precision)
        return {f"layer_{l}": v for l, v in states.items()}

    # each shard of windows is kept under the key of its own windows, not of the whole stream: a corpus's first
    # lines (the IsoScore chapter's) and the same corpus at more lines (the manifolds chapter's) share the
    # shards of their common windows; a shard's windows are batched as before, so its vectors are unchanged
    spans = [(a, min(n_win, a + shard_size)) for a in range(0, n_win, shard_size)]
    shards = [
        run_sharded(
            b - a, shard_size, lambda s, e, a=a: compute(a + s, a + e), cache_dir=cache_dir, progress=False,
            info=dict(info, inputs=hash_inputs(map(str, arr[a:b].ravel())), n=b - a),
        )[0]
        for a, b in tqdm(spans, desc=f"stream {model.name}", unit="shard", disable=progress_off(progress), leave=False)
    ]  # fmt: skip
    mats = {l: np.concatenate([s[f"layer_{l}"] for s in shards]) for l in layers}
    flat = arr.ravel()
    return TokenStream(
        mats,
        flat,
        tok.convert_ids_to_tokens(flat.tolist()),
        np.repeat(np.arange(n_win), window),
        np.tile(np.arange(window), n_win),
    )


def token_windows(tokenizer, lines, window: int = 512, add_special_tokens: bool = True) -> np.ndarray:
    """Cai et al.'s stream (:func:`token_stream_ids`) cut into consecutive ``window``-token windows, the short
    tail dropped: an ``(n_windows, window)`` int64 array."""
    if window < 1:
        raise ValueError("window must be >= 1")
    ids = token_stream_ids(tokenizer, list(lines), add_special_tokens)
    n_win = len(ids) // window
    if n_win == 0:
        raise ValueError(f"stream has {len(ids)} tokens < one window of {window}")
    return np.asarray(ids[: n_win * window], np.int64).reshape(n_win, window)


def _code_layers(model, layers) -> tuple:
    n_layers = model.spec.n_layers
    layers = tuple(range(n_layers)) if layers is None else tuple(int(l) for l in layers)
    for l in layers:
        if not 0 <= l < n_layers:
            raise ValueError(f"code layer {l} out of range 0..{n_layers - 1}")
    return layers


def window_hidden_states(model, windows, layers=None, *, batch_windows: int = 4, precision: str | None = None) -> dict:
    """Every token's vector at code layers ``layers`` (``0`` = first block output) of windows of token ids
    (:func:`token_windows`), ``batch_windows`` at a time, no attention mask (Cai et al.): code layer ->
    ``(n_windows * window, d)`` float32, tokens in stream order. :func:`embed_token_stream` computes its shards
    with it."""
    windows = np.asarray(windows, np.int64)
    layers = _code_layers(model, layers)
    out = {l: [] for l in layers}
    for s in range(0, len(windows), batch_windows):
        hs = _hidden_states(model, torch.from_numpy(windows[s : s + batch_windows]), None, precision)
        for l in layers:
            out[l].append(hs[l + 1].reshape(-1, hs[l + 1].shape[-1]).numpy())
    return {l: np.concatenate(v).astype(np.float32) for l, v in out.items()}
