"""Cai et al.'s set-up: the paper's models, the corpora and the token streams of every model and layer."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..._io import hash_inputs, memo
from ...data import load_lm_corpus
from ...embeddings import embed_token_stream, token_windows
from ...metrics import avg_pairwise_cosine, isoscore
from ...models import content_identity, resolve_model
from ...papers import project_table
from ..streaming import sample_rows, stream_windows
from .analysis import analyse_layers

#: the parameters a layer's analysis depends on (threads and processes only change where it runs)
_ANALYSIS_KEYS = ("ks", "threshold", "max_per_type", "lid_k", "sil_sample", "n_init", "kmeans_fit", "lid_queries")

#: Table 3 of Cai et al. 2021, average LID with cosine distance [S: authors' slides, seed 002]: the rows
#: ``T3/<model>`` of ``data/papers/cai2021.csv`` by the paper's model names (``BERT``, ``D-BERT``, ... ``GNEWS``;
#: empty without the tables)
PAPER_LID_TABLE3 = {n.row.split(": ", 1)[-1].split(" (")[0]: n.value for n in project_table("cai2021").values()}


#: a token stream: ``layers`` (layer -> (n_tokens, d)), ``tokens`` (type strings) and ``token_ids``
_Stream = namedtuple("_Stream", "layers tokens token_ids")


# ------------------------------------------------------------------------------ the chapter's run
def load_corpora(cfg) -> dict:
    """Every corpus of ``cfg.corpora`` (key -> (corpus, split, first lines or None)) as a list of lines."""
    corpora = {}
    for key, (name, split, n_lines) in cfg["corpora"].items():
        lines = load_lm_corpus(name, split)
        corpora[key] = lines[:n_lines] if n_lines else lines
        print(f"{key} {split}: {len(corpora[key]):,} of {len(lines):,} lines")
    return corpora


def layer_passes(n_layers: int, layers_per_pass: int | None) -> list[list[int]]:
    """The layers embedded together: all in one pass, or ``layers_per_pass`` at a time (memory, paper scale)."""
    step = layers_per_pass or n_layers
    return [list(range(a, min(n_layers, a + step))) for a in range(0, n_layers, step)]


@dataclass
class LayerRun:
    """Every layer of every model on every corpus.

    Attributes
    ----------
    results : pandas.DataFrame
        One row per (model, corpus, layer): the scalars of :func:`~.analysis.analyse_layer`.
    extras : dict
        (model, corpus, layer) -> ``silhouettes``, ``per_cluster`` and ``labels`` of that layer.
    streams : dict
        (model, corpus) -> its token stream (with several passes per model, the first pass's layers).
    """

    results: pd.DataFrame
    extras: dict
    streams: dict


def _analysed_layers(stream, layers, cfg, cache_dir, what: dict) -> list:
    """:func:`~.analysis.analyse_layers` of ``layers`` of ``stream``, kept in ``cache_dir/layers``
    (:func:`replib._io.memo` under a key of the model's content, the lines, the layers and every analysis
    parameter): a part of the chapter analyses one model and corpus, and ``rest`` reads every result back
    instead of redoing it."""
    info = {**what, "layers": list(layers), "seed": cfg.seed, **{k: cfg[k] for k in _ANALYSIS_KEYS}}
    folder = None if cache_dir is None else Path(cache_dir) / "layers"
    mats = {layer: stream.layers[layer] for layer in layers}
    return memo(folder, info, analyse_layers, mats, stream.tokens, cfg, seed=cfg.seed)


def stream_corpus(model, lines, cfg, state_dir=None) -> tuple[_Stream, dict]:
    """The streamed paper path of one model and corpus (``cfg.stream``): every code layer's tokens folded into
    accumulators in one pass (:func:`replib.methods.streaming.stream_windows`), and a seeded sample of
    ``cfg.analysis_sample`` tokens kept for the rest of the analysis (spooled to ``state_dir`` and memory-mapped
    when one is given).

    Returns
    -------
    sample : the sampled tokens as a stream (``layers``: layer -> (n_sample, d), ``tokens``, ``token_ids``)
    exact : layer -> :meth:`~replib.metrics.LayerAccumulator.summary` over every token
    """
    windows = token_windows(model.tokenizer, list(lines), cfg["window"])
    ids = windows.ravel()
    keep = sample_rows(ids.size, cfg["analysis_sample"], cfg.seed)
    st = stream_windows(model, windows, keep, state_dir, spool=state_dir is not None)
    sample = _Stream(st.kept, list(model.tokenizer.convert_ids_to_tokens(ids[keep].tolist())), ids[keep])
    return sample, {layer: acc.summary() for layer, acc in st.stats.items()}


def _sampled(stream: _Stream, cfg) -> tuple[_Stream, dict | None]:
    """The ``analysis_sample`` tokens of a kept token stream (drawn with the seed, as :func:`stream_corpus`
    draws them) and, per layer, IsoScore and the average cosine over every token (:func:`_exact_columns`);
    the stream itself and None without a sample or when it holds every token."""
    n = len(stream.tokens)
    keep = sample_rows(n, cfg["analysis_sample"], cfg.seed)
    if len(keep) == n:
        return stream, None
    exact = {
        layer: {"isoscore": isoscore(X), "avg_cosine": avg_pairwise_cosine(X), "n_samples": n}
        for layer, X in stream.layers.items()
    }
    layers = {layer: X[keep] for layer, X in stream.layers.items()}
    return _Stream(layers, [stream.tokens[i] for i in keep], stream.token_ids[keep]), exact


def _exact_columns(r: dict, exact: dict) -> dict:
    """A streamed layer's row: IsoScore and the average cosine over every token (the analysis' own IsoScore,
    on the sample, kept as ``isoscore_sample``) and the number of tokens streamed."""
    return dict(
        r,
        isoscore_sample=r["isoscore"],
        isoscore=exact["isoscore"],
        avg_cosine=exact["avg_cosine"],
        n_tokens_stream=exact["n_samples"],
    )


def analyse_models(cfg, corpora: dict, cache_dir=None, embed_dir=None) -> LayerRun:
    """Embed every corpus with every model of ``cfg.named_models`` and analyse every layer.

    Cai et al.'s token stream (:func:`replib.embeddings.embed_token_stream`: lines encoded one by one,
    concatenated, cut into ``cfg.window``-token windows, code layer 0 = output of the first block) is cached in
    ``embed_dir``, default ``cache_dir`` (the chapter passes the project's embeddings cache, whose shards of
    WikiText-2's first windows the IsoScore chapter's stream shares); every layer is analysed by
    :func:`~.analysis.analyse_layers` (layers in parallel processes on a small machine, results cached in
    ``cache_dir/layers``), ``cfg.layers_per_pass`` layers at a time; a
    part's selection ``layers`` (:meth:`~replib.config.ChapterConfig.selected`) narrows the layers analysed
    (streamed: the token stream still covers every layer, so a model's later layer ranges resume it)."""
    rows, extras, streams = [], {}, {}

    def record(mname, ckey, layers, results, exact):
        for layer, r in zip(layers, results):
            extras[(mname, ckey, layer)] = {k: r.pop(k) for k in ("silhouettes", "per_cluster", "labels")}
            r = r if exact is None else _exact_columns(r, exact[layer])
            rows.append(dict(model=mname, corpus=ckey, layer=layer, **r))
            print(
                f"{mname:8s} {ckey:9s} layer {layer:2d}: S_inter {r['s_inter']:.3f} -> {r['s_inter_cluster']:.3f}"
                f"  S_intra {r['s_intra']:.3f} -> {r['s_intra_cluster']:.3f}  k={r['k']}  LID(cos) {r['lid_cosine']:.2f}"
            )

    for mname, (model_id, n_layers) in cfg["named_models"].items():
        model = resolve_model(model_id, seed=cfg.seed, precision=getattr(cfg, "precision", None))
        for ckey, lines in corpora.items():
            what = {"model": content_identity(model_id), "lines": hash_inputs(lines), "window": cfg["window"]}
            if model.precision != "fp32":  # the layers' analyses of another forward (float32 keys as they were)
                what["precision"] = model.precision
            what = what if cfg["analysis_sample"] is None else dict(what, sample=cfg["analysis_sample"])
            if cfg.get("stream"):
                state_dir = None if cache_dir is None else Path(cache_dir) / "streams"
                sample, exact = stream_corpus(model, lines, cfg, state_dir)
                layers = cfg.selected("layers", range(n_layers))  # a part's layer range (the stream: every layer)
                record(mname, ckey, layers, _analysed_layers(sample, layers, cfg, cache_dir, what), exact)
                streams[(mname, ckey)] = sample
                continue
            for layers in layer_passes(n_layers, cfg["layers_per_pass"]):
                layers = cfg.selected("layers", layers)
                if not layers:
                    continue
                ts = embed_token_stream(
                    model, list(lines), cfg["window"], layers=layers, cache_dir=embed_dir or cache_dir
                )
                stream = _Stream(ts.layers, list(ts.tokens), np.asarray(ts.token_ids))
                stream, exact = _sampled(stream, cfg)
                record(mname, ckey, layers, _analysed_layers(stream, layers, cfg, cache_dir, what), exact)
                if (mname, ckey) not in streams or cfg["layers_per_pass"] is None:
                    streams[(mname, ckey)] = stream  # with several passes only the first is kept in memory
                del stream
    return LayerRun(pd.DataFrame(rows), extras, streams)
