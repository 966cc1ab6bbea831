"""Contextual token embeddings scored layer by layer (the IsoScore paper's §5.2 and its per-layer results)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ... import synthetic
from ..._io import cache_root, hash_inputs, memo
from ...data import load_lm_corpus
from ...embeddings import embed_token_stream, model_identity, token_windows
from ...metrics import isoscore
from ...models import resolve_model
from ..layerwise import layer_isotropy
from ..streaming import StreamedLayers, sample_rows, stream_windows
from .config import PAPER_LMS
from .properties import package_isoscore


@dataclass
class ContextualLayers:
    """Every layer of every model on WikiText-2.

    Attributes
    ----------
    per_layer : pandas.DataFrame
        :func:`replib.methods.layerwise.layer_isotropy` of every model, stacked (column ``model``).
    streams : dict
        model spec -> its :class:`~replib.embeddings.TokenStream`, or with ``cfg.stream`` its
        :class:`~replib.methods.streaming.StreamedLayers` (every token folded into per-layer accumulators; the
        first model keeps a seeded sample of ``cfg.package_sample`` tokens per layer for the package check).
    """

    per_layer: pd.DataFrame
    streams: dict

    @property
    def first(self) -> str:
        """The first model's spec (the one the chapter's prose describes)."""
        return next(iter(self.streams))


def contextual_layers(cfg, cache_dir=None) -> ContextualLayers:
    """Embed the first ``cfg.n_lines`` lines of WikiText-2 (split ``cfg.split``) with every model of ``cfg``
    (each line tokenised, the stream cut into ``cfg.window``-token windows, every layer kept; layer 0 is the
    output of the first block) and score every layer. Embeddings are cached in ``cache_dir`` (default the
    project's ``embeddings`` cache), and so is each model's per-layer table (:func:`replib._io.memo`: a second seed
    reads it back)."""
    lines = load_lm_corpus("wikitext2", cfg.split)[: cfg.n_lines]
    cache_dir = cache_root("embeddings") if cache_dir is None else cache_dir
    tables, streams = [], {}
    for i, ref in enumerate(cfg.models):
        name = str(ref)
        lm = resolve_model(name, seed=cfg.seed, precision=getattr(cfg, "precision", None))
        if cfg.get("stream"):
            windows = token_windows(lm.tokenizer, lines, cfg.window)
            keep = sample_rows(windows.size, cfg.package_sample, cfg.seed) if i == 0 else None
            streams[name] = stream_windows(lm, windows, keep, Path(cache_dir) / "streams")
            tables.append(streams[name].table(name).drop(columns="mean_norm"))
            continue
        streams[name] = embed_token_stream(lm, lines, window=cfg.window, cache_dir=cache_dir)
        # the table depends on the vectors alone, not on the seed: computed once and kept beside the stream
        info = dict(model_identity(lm), fn="layer_isotropy", model=name, lines=hash_inputs(lines), window=cfg.window)
        tables.append(memo(Path(cache_dir) / "layer_isotropy", info, layer_isotropy, streams[name].layers, model=name))
    return ContextualLayers(pd.concat(tables, ignore_index=True), streams)


def contextual_records(ctx: ContextualLayers, seed: int) -> dict:
    """The first model, its token count, the most isotropic layer over all models, an isotropic Gaussian of
    the first model's size, and the largest difference from the authors' package on the first model's
    layers."""
    first, per_layer = ctx.first, ctx.per_layer
    stream = ctx.streams[first]
    # streamed (paper): the token count and width from the accumulators, the package on the kept sample
    mats = stream.kept if isinstance(stream, StreamedLayers) else stream.layers
    m, n = (int(v) for v in per_layer.loc[per_layer.model == first, ["n_tokens", "n_features"]].iloc[0])
    return {
        "contextual_model": first,
        "contextual_n_tokens": m,
        "contextual_isoscore_max": per_layer["isoscore"].max(),
        "contextual_gaussian_isoscore": isoscore(synthetic.isotropic_gaussian(m, n, seed=seed)),
        "contextual_package_max_abs_diff": max(abs(isoscore(X) - package_isoscore(X)) for X in mats.values()),
    }


def paper_layer_records(ctx: ContextualLayers, cfg) -> dict:
    """Every layer of each of the paper's four models that ran, e.g. ``paper_bert_layer11``, compared with the
    authors' released values; empty unless the profile records them (``cfg.paper_layer_keys``). A model's
    keys depend on that model only, so a part that runs one model records its own (:mod:`replib.parts`)."""
    if not cfg.paper_layer_keys:
        return {}
    values = ctx.per_layer.set_index(["model", "layer"])["isoscore"]
    return {f"paper_{PAPER_LMS[m]}_layer{int(layer)}": v for (m, layer), v in values.items() if m in PAPER_LMS}
