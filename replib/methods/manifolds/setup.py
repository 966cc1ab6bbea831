"""Cai et al.'s set-up: the paper's models, the sizes of each profile, the token streams and GloVe."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Models of the paper (HF ids through :mod:`replib.models`) and their number of Transformer blocks.
PAPER_MODELS = {
    "BERT": ("bert-base-uncased", 12),
    "D-BERT": ("distilbert-base-uncased", 6),
    "GPT": ("openai-gpt", 12),
    "GPT2": ("gpt2", 12),
}
#: Table 3 of Cai et al. 2021, average LID with cosine distance [S: authors' slides, seed 002].
PAPER_LID_TABLE3 = {
    "BERT": 5.6,
    "D-BERT": 7.3,
    "GPT": 6.8,
    "GPT2": 7.0,
    "ELMo": 9.1,
    "GloVe": 18.0,
    "GloVe-2M": 26.1,
    "GNEWS": 21.1,
}


def config_for(profile: str, models=None) -> dict:
    """Sizes for one profile (the notebook and the tests read the same dict).

    ``smoke``: two tiny random models (BERT and GPT-2 architectures) on the first lines of PTB test;
    ``offline``: all-MiniLM-L6-v2 on PTB test and the first part of WikiText-2 test, GloVe-50d;
    ``paper``: BERT, DistilBERT, GPT, GPT-2 on the PTB and WikiText-2 *train* splits (Cai et al.).

    ``models`` (a spec or list of specs, :func:`replib.models.resolve_model`) replaces the profile's
    models. The paper's models keep their display names (``BERT``...: their Table 3 values stay bound to
    them); any other model is shown under :func:`replib.models.model_slug`, with its first, middle and last
    layers as Swiss-roll views.
    """
    cfg = _profile_config(profile)
    if models is None:
        return cfg
    from ...models.resolve import model_n_layers, model_slug, select_models

    known = {
        spec: (display, n)
        for display, (spec, n) in {
            **PAPER_MODELS,
            "MiniLM": ("all-MiniLM-L6-v2", 6),
            "tiny-BERT": ("tiny-bert", 2),
            "tiny-GPT2": ("tiny-gpt2", 2),
        }.items()
    }
    chosen, swiss = {}, dict(cfg["swiss_layers"])
    for spec in select_models(models, []):
        display, n = known.get(spec, (model_slug(spec), None))
        n = n or model_n_layers(spec)
        chosen[display] = (spec, n)
        swiss.setdefault(display, sorted({min(1, n - 1), n // 2, n - 1}))
    cfg.update(models=chosen, swiss_layers=swiss)
    return cfg


def _profile_config(profile: str) -> dict:
    base = dict(
        window=512,
        ks=tuple(range(2, 16)),
        threshold=0.1,
        max_per_type=1000,
        lid_k=100,
        sil_sample=20_000,
        n_init=10,
        kmeans_fit=None,
        lid_queries=None,
        glove_queries=None,
        pca_points=20_000,
        swiss_layers={"GPT": [2], "GPT2": [2, 6], "BERT": [6], "D-BERT": [1]},
        glove_max_words=None,
        layers_per_pass=None,
        lid_check_points=3000,
        threads=1,
        layer_jobs=None,  # processes over layers (analyse_layers): None = one per core when threads == 1
    )
    if profile == "smoke":
        return dict(
            base,
            models={"tiny-BERT": ("tiny-bert", 2), "tiny-GPT2": ("tiny-gpt2", 2)},
            corpora={"ptb": ("ptb", "test", 250)},
            window=128,
            ks=tuple(range(2, 6)),
            sil_sample=1500,
            n_init=2,
            kmeans_fit=3000,
            lid_k=20,
            lid_queries=400,
            glove_queries=400,
            glove_max_words=50_000,
            pca_points=2000,
            lid_check_points=1000,
            swiss_layers={"tiny-GPT2": [1], "tiny-BERT": [1]},
            layer_jobs=1,  # four tiny layers: starting worker processes would cost more than they save
        )
    if profile == "offline":
        return dict(
            base,
            models={"MiniLM": ("all-MiniLM-L6-v2", 6)},
            corpora={"ptb": ("ptb", "test", None), "wikitext2": ("wikitext2", "test", 1400)},
            sil_sample=3000,
            n_init=1,
            kmeans_fit=5000,
            lid_queries=1000,
            glove_queries=2000,
            pca_points=8000,
            swiss_layers={"MiniLM": [1, 2, 5]},
        )
    if profile == "paper":
        return dict(
            base,
            models=dict(PAPER_MODELS),
            corpora={"ptb": ("ptb", "train", None), "wikitext2": ("wikitext2", "train", None)},
            kmeans_fit=200_000,
            lid_queries=50_000,
            glove_queries=50_000,
            layers_per_pass=2,
            lid_check_points=5000,
            threads=None,
        )
    raise ValueError(f"unknown profile {profile!r}")


# --------------------------------------------------------------------------------------------- types


# ------------------------------------------------------------------------------ models and embeddings
@dataclass
class _Stream:
    layers: dict
    tokens: list
    token_ids: np.ndarray


def load_stream_model(name: str, seed: int = 0):
    """A model for :func:`embed_corpus`: any spec :func:`replib.models.resolve_model` accepts
    (``tiny-bert``/``tiny-gpt2`` random smoke models, a registry key, a local folder, a Hub id)."""
    from ...models import resolve_model

    return resolve_model(name, seed=seed)


def embed_corpus(model, lines, window: int = 512, layers=None, cache_dir=None, progress: bool = True) -> _Stream:
    """Cai et al.'s token stream: lines encoded one by one (special tokens as ``encode`` adds them),
    concatenated, cut into non-overlapping ``window``-token windows (short tail dropped), every layer's
    hidden states (code layer 0 = output of the first block) per token, through
    :func:`replib.embeddings.embed_token_stream`.

    Returns an object with ``layers`` (dict layer -> (n_tokens, d) float32), ``tokens`` (type strings)
    and ``token_ids``.
    """
    from ...embeddings import embed_token_stream

    ts = embed_token_stream(model, list(lines), window=window, layers=layers, cache_dir=cache_dir, progress=progress)
    return _Stream(ts.layers, list(ts.tokens), np.asarray(ts.token_ids))


def static_glove(max_words: int | None = None):
    """GloVe 6B 50-d (words, float32 matrix) through :func:`replib.models.load_glove`."""
    from ...models import load_glove

    words, vecs = load_glove()
    if max_words is not None:
        words, vecs = words[:max_words], vecs[:max_words]
    return words, vecs
