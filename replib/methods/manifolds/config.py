"""The manifolds chapter's parameters per profile (read through :func:`replib.config.chapter_config`).

``smoke``: two tiny random models (BERT and GPT-2 architectures) on the first lines of PTB test;
``offline``: all-MiniLM-L6-v2 on PTB test and the first part of WikiText-2 test, GloVe-50d;
``paper``: BERT, DistilBERT, GPT, GPT-2 on the PTB and WikiText-2 *train* splits (Cai et al.).

A reader's ``models`` replace the profile's. The paper's models keep their display names (``BERT``...: their
Table 3 values stay bound to them); any other model is shown under its slug, with its first, middle and last
layers as Swiss-roll views (:func:`derive`).

Parts (:mod:`replib.parts`): one per model and corpus (its token stream and every layer's analysis, both
cached), cut into layer ranges where one part would not fit a Colab session (:func:`layer_ranges`), and
``rest`` (the statistics over every model, GloVe, the checks and the views).
"""

from __future__ import annotations

import numpy as np

from ...chapter import Chapter
from ...data import get_file
from ...models import ModelRef, model_n_layers
from ...parts import COLAB_T4, Budget, Part, rest_part
from ...schema import closed_object

#: Models of the paper (HF ids through :mod:`replib.models`) and their number of Transformer blocks.
PAPER_MODELS = {
    "BERT": ("bert-base-uncased", 12),
    "D-BERT": ("distilbert-base-uncased", 6),
    "GPT": ("openai-gpt", 12),
    "GPT2": ("gpt2", 12),
}
#: every model with a display name of its own: spec -> (display name, number of blocks)
KNOWN_MODELS = {
    spec: (display, n)
    for display, (spec, n) in {
        **PAPER_MODELS,
        "MiniLM": ("all-MiniLM-L6-v2", 6),
        "tiny-BERT": ("tiny-bert", 2),
        "tiny-GPT2": ("tiny-gpt2", 2),
    }.items()
}

_INT_OR_NULL = {"type": ["integer", "null"], "minimum": 1}
SCHEMA = closed_object(
    {
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "corpora": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "array",
                "prefixItems": [{"enum": ["ptb", "wikitext2"]}, {"enum": ["train", "valid", "test"]}, _INT_OR_NULL],
                "items": False,
                "description": "corpus key -> (corpus, split, first lines or None for all)",
            },
        },
        "window": {"type": "integer", "minimum": 8, "description": "tokens per window of the token stream"},
        "ks": {"type": "array", "items": {"type": "integer", "minimum": 2}, "minItems": 1},
        "threshold": {"type": "number", "description": "best silhouette below which a layer is one cluster"},
        "max_per_type": {"type": "integer", "minimum": 2, "description": "instances per type of S_intra"},
        "lid_k": {"type": "integer", "minimum": 2, "description": "neighbours of the LID estimate"},
        "sil_sample": _INT_OR_NULL,
        "n_init": {"type": "integer", "minimum": 1, "description": "k-means restarts"},
        "kmeans_fit": _INT_OR_NULL,
        "lid_queries": _INT_OR_NULL,
        "glove_queries": _INT_OR_NULL,
        "pca_points": _INT_OR_NULL,
        "swiss_layers": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        },
        "glove_max_words": _INT_OR_NULL,
        "layers_per_pass": _INT_OR_NULL,
        "lid_check_points": {"type": "integer", "minimum": 10},
        "threads": _INT_OR_NULL,
        "layer_jobs": _INT_OR_NULL,
        "stream": {
            "type": "boolean",
            "description": "one pass over every layer: IsoScore and the average cosine over every token from "
            "accumulators (the token stream is not kept)",
        },
        "analysis_sample": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "tokens of a corpus drawn with the seed for the clusters, LID and S_inter/S_intra of every "
            "layer (IsoScore and the average cosine stay over every token); None: every token",
        },
    }
)

_BASE = dict(
    window=512,
    ks=list(range(2, 16)),
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
    threads=1,  # BLAS/OpenMP threads per layer: 1 on a small shared machine, None = no limit
    layer_jobs=None,  # processes over layers (analyse_layers): None = one per core when threads == 1
    stream=False,
    analysis_sample=None,
)
TABLE = {
    "smoke": dict(
        _BASE,
        models=["tiny-bert", "tiny-gpt2"],
        corpora={"ptb": ["ptb", "test", 250]},
        window=128,
        ks=list(range(2, 6)),
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
    ),
    "offline": dict(
        _BASE,
        models=["all-MiniLM-L6-v2"],
        corpora={"ptb": ["ptb", "test", None], "wikitext2": ["wikitext2", "test", 1400]},
        sil_sample=3000,
        n_init=1,
        kmeans_fit=5000,
        lid_queries=1000,
        glove_queries=2000,
        pca_points=8000,
        swiss_layers={"MiniLM": [1, 2, 5]},
        analysis_sample=50_000,
    ),
    "paper": dict(
        _BASE,
        models=[spec for spec, _ in PAPER_MODELS.values()],
        corpora={"ptb": ["ptb", "train", None], "wikitext2": ["wikitext2", "train", None]},
        kmeans_fit=200_000,
        # LID queries sized by the precision rule (replib.precision; each size, spread and reason in
        # book/sampling_plan.csv)
        lid_queries=71_000,
        glove_queries=2000,
        layers_per_pass=2,
        # every token streamed (IsoScore, average cosine); clusters, LID, S_inter/S_intra on 200,000 tokens drawn
        # with the seed (the paper's k-means already fits 200,000 points); the samples live on disk, a layer at a time
        stream=True,
        analysis_sample=200_000,
        lid_check_points=5000,
        threads=None,
    ),
}


def derive(params: dict, models: tuple, *, default: list, given: bool) -> dict:
    """``named_models``: display name -> (spec, number of blocks) of every model; the paper's models and the
    profiles' own keep their names, any other is shown under its slug, with its first, middle and last layers
    added to ``swiss_layers``."""
    named, swiss = {}, dict(params["swiss_layers"])
    for ref in models:
        display, n = KNOWN_MODELS.get(str(ref), (ref.slug, None))
        n = n or model_n_layers(ref)
        named[display] = [str(ref), n]
        swiss.setdefault(display, sorted({min(1, n - 1), n // 2, n - 1}))
    return {**params, "named_models": named, "swiss_layers": swiss}


#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("layers", "views")
#: T4-hours of one layer's analysis on the 200,000-token sample, whatever the corpus: the costliest layer of the
#: rehearsal's 28 model parts (book/rehearsal.csv: 0.27 to 0.86 a layer, ``gpt-ptb-4``)
_HOURS_PER_LAYER = 0.86
#: T4-hours of a 12-block model's token stream over each corpus's train split (book/rehearsal.csv); a model with
#: fewer blocks takes its share
_STREAM_HOURS = {"ptb": 0.26, "wikitext2": 0.38}


def layer_ranges(n_blocks: int, per_layer: float, stream: float, limit: float = COLAB_T4.t4_hours) -> list:
    """The layer ranges of one model and corpus: as few equal consecutive ranges as keep each within ``limit``
    T4-hours, at ``per_layer`` hours a layer, the first range also computing the token stream (``stream``
    hours; the later ones resume it). Every layer alone when even that does not fit."""
    for n in range(1, n_blocks + 1):
        ranges = [list(map(int, r)) for r in np.array_split(np.arange(n_blocks), n)]
        if len(ranges[0]) * per_layer + stream <= limit + 1e-9:
            return ranges
    return [[k] for k in range(n_blocks)]


def parts(profile: str, params: dict) -> list:
    """One part per model and corpus, cut into layer ranges (``bert-ptb-1``, ``bert-ptb-2``...) where one
    would not fit a Colab session (the later ranges resume the first's token stream), and ``rest`` (see the
    module docstring)."""
    cells = []
    for spec in params["models"]:
        blocks = KNOWN_MODELS.get(spec, (None, 12))[1]
        for corpus in params["corpora"]:
            stream = _STREAM_HOURS.get(corpus, 0.38) * blocks / 12
            ranges = layer_ranges(blocks, _HOURS_PER_LAYER, stream)
            cells += [(spec, corpus, i, len(ranges), r, len(r) * _HOURS_PER_LAYER + (stream if i == 0 else 0.0))
                      for i, r in enumerate(ranges)]  # fmt: skip
    total = sum(c[-1] for c in cells) + 0.5  # + rest
    out = [_part(spec, corpus, i, n, layers, hours, total, params) for spec, corpus, i, n, layers, hours in cells]
    return [*out, rest_part(CHAPTER.name, out, Budget(t4_hours=1.0, peak_rss_gb=12.0, cache_gb=10.0))]


def _part(spec: str, corpus: str, i: int, n: int, layers: list, hours: float, total: float, params: dict) -> Part:
    base = f"{ModelRef.parse(spec).slug}-{corpus}"
    name = base if n == 1 else f"{base}-{i + 1}"
    select = (("corpora", (corpus,)),) if n == 1 else (("corpora", (corpus,)), ("layers", tuple(layers)))
    return Part(
        name=name,
        chapter=CHAPTER.name,
        fraction=hours / total,
        budget=Budget(t4_hours=round(min(hours, COLAB_T4.t4_hours), 2), peak_rss_gb=12.0, cache_gb=10.0),
        models=(spec,),
        steps=("layers",),
        select=select,
        records=(),
        needs=() if i == 0 else (f"{base}-1",),
    )


CHAPTER = Chapter(
    "manifolds",
    ("cai2021isotropy",),
    TABLE,
    SCHEMA,
    STEPS,
    parts,
    derive,
    rehearsal={
        "scale": ("kmeans_fit", "lid_queries", "glove_queries", "analysis_sample", "corpora"),
        # the train splits are not in the mirror: the test splits stand in for them, at the train splits' line
        # counts (the registry's), up to their own 3,761 and 4,358 lines (a fraction of 0.089 and 0.119)
        "set": {"corpora": {"ptb": ["ptb", "test", None], "wikitext2": ["wikitext2", "test", None]}},
        "whole": {
            "corpora.ptb": lambda p: get_file("ptb", "mikolov/ptb.train.txt").lines,
            "corpora.wikitext2": lambda p: get_file("wikitext2", "train.txt").lines,
        },
    },
)
