"""The cluster-isotropy chapter's parameters per profile (read through :func:`replib.config.chapter_config`).

``paper``: GPT-2, BERT-base, RoBERTa-base with the paper's hyperparameters (App. B.2), all data, 5 seeds.
``offline``: all-MiniLM-L6-v2 on the mirrored data, hyperparameters chosen on STS-B dev from a grid in
[5, 30]. ``smoke``: tiny random BERT/GPT-2 on a few hundred pairs.

``threads``: the BLAS threads of numpy and scipy in the experiments (:func:`.experiments.blas_threads`): 1 in
``offline`` and ``smoke``, whose transforms are thousands of small products and 384 x 384 eigendecompositions
(two OpenBLAS threads spend several times the CPU of one on them, and more on a loaded machine), and the torch
threads of the classification protocol's small MLP; no limit in ``paper``.

A reader's ``models`` replace the profile's; the first of them also runs the deck ablations and the
classification protocol, and a model without the paper's hyperparameters gets them chosen on STS-B dev
(``tune_models``, :func:`derive`).

Parts (:mod:`replib.parts`): one per model (I(W) per layer, Table 1 and the STS experiment), ``deck`` (the
seed deck's ablations with ``deck_model``), ``classify`` (the classification protocol with ``clf_model``),
``semcor`` (Table 4 on SemCor, every model; the paper profile only) and ``rest``.
"""

from __future__ import annotations

import numpy as np

from ...chapter import Chapter
from ...models import ModelRef
from ...parts import Budget, Part, model_parts, rest_part
from ...schema import closed_object
from .setup import STS_DATASETS, load_classification, load_sts_pairs

#: App. B.2 of the paper [P]: cluster-based (n_clusters, n_pc) and global n_pc, tuned on STS-B dev in [5, 30].
PAPER_HPARAMS = {
    "gpt2": {"n_clusters": 10, "n_pc": 30, "global_pc": 30},
    "bert-base-uncased": {"n_clusters": 27, "n_pc": 12, "global_pc": 15},
    "roberta-base": {"n_clusters": 27, "n_pc": 12, "global_pc": 25},
}
_CLF_TASKS = ["SST-2", "CoLA", "RTE", "MRPC"]

_INTS = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}
_HPARAMS = closed_object({k: {"type": "integer", "minimum": 1} for k in ("n_clusters", "n_pc", "global_pc")})
SCHEMA = closed_object(
    {
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "hparams": {"type": "object", "additionalProperties": _HPARAMS, "description": "model -> the paper's"},
        "tune": {"type": "boolean", "description": "choose every model's hyperparameters on STS-B dev"},
        "grid_k": _INTS,
        "grid_pc": _INTS,
        "tune_seeds": {"type": "integer", "minimum": 1},
        "datasets": {"type": "array", "items": {"enum": list(STS_DATASETS)}, "minItems": 1},
        "stsb_split": {"enum": ["train", "dev", "test"]},
        "max_pairs": {"type": ["integer", "null"], "minimum": 10, "description": "pairs per STS test set (None: all)"},
        "dev_pairs": {"type": ["integer", "null"], "minimum": 10, "description": "STS-B dev pairs (None: all)"},
        "seeds": {"type": "integer", "minimum": 1, "description": "runs of the cluster-based method"},
        "layer_sample": {"type": ["integer", "null"], "minimum": 10, "description": "sentences per layer"},
        "table1_ks": _INTS,
        "deck_model": {"type": "string"},
        "deck_seeds": {"type": "integer", "minimum": 1, "description": "seeds of the deck's ablations"},
        "clf_model": {"type": "string"},
        "clf_tasks": {"type": "array", "items": {"enum": _CLF_TASKS}, "minItems": 1},
        "clf_sizes": {
            "type": ["array", "null"],
            "items": {"type": "integer", "minimum": 1},
            "minItems": 3,
            "maxItems": 3,
        },
        "sample_seed": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "seed of the drawn STS pairs (max_pairs, dev_pairs) and classification examples (clf_sizes); "
            "None: the chapter's seed. A fixed one draws the same texts for every seed, so a second seed reads their "
            "vectors from the cache",
        },
        "clf_epochs": {"type": "integer", "minimum": 1},
        "clf_lr": {"type": "number", "exclusiveMinimum": 0},
        "clf_max_length": {"type": "integer", "minimum": 4},
        "demo_clusters": {"type": "integer", "minimum": 1, "description": "clusters of the transform's demo"},
        "demo_pc": {"type": "integer", "minimum": 0, "description": "directions removed in the demo"},
        "semcor": {"type": "boolean", "description": "Table 4: verb tense vs meaning on SemCor (downloaded)"},
        "semcor_min_count": {"type": "integer", "minimum": 1, "description": "occurrences of each kept sense"},
        "threads": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "numpy/scipy BLAS threads of the experiments, torch threads of the classifier (None: no limit)",
        },
    }
)

_GRID = list(range(5, 31, 5))
# fmt: off
TABLE = {
    "paper": dict(models=list(PAPER_HPARAMS), hparams=PAPER_HPARAMS, tune=False, grid_k=_GRID, grid_pc=_GRID,
                  tune_seeds=3, datasets=list(STS_DATASETS), stsb_split="test", max_pairs=None, dev_pairs=None,
                  seeds=5, layer_sample=None, table1_ks=[1, 3, 6, 9, 20], deck_model="bert-base-uncased", deck_seeds=5,
                  clf_model="bert-base-uncased", clf_tasks=["RTE", "CoLA", "SST-2", "MRPC"], clf_sizes=None,
                  sample_seed=None, clf_epochs=10, clf_lr=3e-5, clf_max_length=64, demo_clusters=27, demo_pc=12, semcor=True,
                  semcor_min_count=10, threads=None),
    "offline": dict(models=["all-MiniLM-L6-v2"], hparams={}, tune=True, grid_k=_GRID, grid_pc=_GRID, tune_seeds=3,
                    datasets=list(STS_DATASETS), stsb_split="test", max_pairs=1000, dev_pairs=None, seeds=5,
                    layer_sample=1000,
                    table1_ks=[1, 3, 6, 9, 20], deck_model="all-MiniLM-L6-v2", deck_seeds=1,
                    clf_model="all-MiniLM-L6-v2", clf_tasks=["SST-2"],
                    clf_sizes=[400, 100, 200], sample_seed=0, clf_epochs=10, clf_lr=3e-5, clf_max_length=64, demo_clusters=27,
                    demo_pc=12, semcor=False, semcor_min_count=10, threads=1),
    "smoke": dict(models=["tiny-bert", "tiny-gpt2"], hparams={}, tune=True, grid_k=[2, 4, 6], grid_pc=[2, 4, 6],
                  tune_seeds=1, datasets=["STS12", "STS-B"], stsb_split="test", max_pairs=150, dev_pairs=150, seeds=2,
                  layer_sample=150, table1_ks=[1, 3, 6], deck_model="tiny-bert", deck_seeds=1, clf_model="tiny-bert",
                  clf_tasks=["SST-2"], clf_sizes=[120, 40, 60], sample_seed=0, clf_epochs=3, clf_lr=1e-3, clf_max_length=16,
                  demo_clusters=6, demo_pc=4, semcor=False, semcor_min_count=10, threads=1),
}
# fmt: on


def derive(params: dict, models: tuple, *, default: list, given: bool) -> dict:
    """``tune_models``: the models whose hyperparameters are chosen on STS-B dev (every model where the
    profile tunes, else those without the paper's); with a reader's models, the first of them also runs the
    deck ablations and the classification protocol."""
    specs = [str(m) for m in models]
    out = dict(params, tune_models=[m for m in specs if params["tune"] or m not in params["hparams"]])
    if given:
        out.update(deck_model=specs[0], clf_model=specs[0])
    return out


#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("layers", "sts", "deck", "classify", "semcor")


def _model_records(label: str) -> list[str]:
    """One model's keys: I(W) per layer, Table 1, and its STS and I(W) per method and data set."""
    return [
        f"layer_{label}_*",
        f"table1_{label}_*",
        f"sts_{label}_*",
        f"iw_{label}_*",
        f"sts_delta_{label}_*",
        f"iw_gain_{label}_cluster_log10*",
    ]


def parts(profile: str, params: dict) -> list:
    """One part per model, ``deck``, ``classify`` and ``rest`` (see the module docstring). Declared budgets
    (paper profile): a model's STS experiment (7 data sets, 3 methods, 5 seeds) and its 13 layers of k-means
    are CPU minutes after seconds of embedding; the classification protocol fine-tunes BERT on SST-2, CoLA,
    RTE and MRPC for 10 epochs with each method (about 2 T4-hours)."""
    labels = {m: ModelRef.parse(m).slug for m in params["models"]}
    each = model_parts(
        CHAPTER.name,
        params["models"],
        labels,
        fraction={"*": 0.45 / len(params["models"])},
        budget={"*": Budget(t4_hours=1.0, peak_rss_gb=10.0, cache_gb=4.0)},
        steps=("layers", "sts"),
        records=_model_records,
    )
    deck = Part(
        name="deck",
        chapter=CHAPTER.name,
        fraction=0.1,
        budget=Budget(t4_hours=0.5, peak_rss_gb=8.0, cache_gb=2.0),
        models=(params["deck_model"],),
        steps=("deck",),
        records=("deck_*",),
    )
    classify = Part(
        name="classify",
        chapter=CHAPTER.name,
        fraction=0.4,
        budget=Budget(t4_hours=2.5, peak_rss_gb=10.0, cache_gb=4.0),
        models=(params["clf_model"],),
        steps=("classify",),
        records=("clf_*",),
    )
    out = [*each, deck, classify]
    if params["semcor"]:  # the paper profile only: SemCor is downloaded there (4.4 MB)
        out.append(
            Part(
                name="semcor",
                chapter=CHAPTER.name,
                fraction=0.02,
                budget=Budget(t4_hours=0.5, peak_rss_gb=8.0, cache_gb=4.0),
                models=tuple(params["models"]),
                steps=("semcor",),
                records=("semcor_*",),
            )
        )
    return [*out, rest_part(CHAPTER.name, out, Budget(t4_hours=1.0, peak_rss_gb=12.0, cache_gb=8.0))]


def _sts_pairs(params: dict) -> float:
    """The STS sets' mean count of pairs."""
    return float(np.mean([len(load_sts_pairs(d, stsb_split=params["stsb_split"])) for d in params["datasets"]]))


def _split_sizes(params: dict) -> list:
    """The classification tasks' mean sizes of their train, validation and evaluation splits."""
    sizes = [[len(v) for v in load_classification(t)[3].values()] for t in params["clf_tasks"]]
    return np.mean(sizes, axis=0).tolist()


CHAPTER = Chapter(
    "cluster_isotropy",
    ("rajaee2021cluster",),
    TABLE,
    SCHEMA,
    STEPS,
    parts,
    derive,
    rehearsal={
        "scale": ("max_pairs", "dev_pairs", "clf_sizes"),
        "set": {"semcor": False},  # SemCor (NLTK's archive) is not in the mirror
        # the whole data sets' counts, the mean over the data sets a size caps (so that their capped total is
        # the fraction of their whole): the STS test sets' pairs, STS-B dev's, the classification tasks' train,
        # validation and evaluation splits
        "whole": {
            "max_pairs": _sts_pairs,
            "dev_pairs": lambda p: len(load_sts_pairs("STS-B-dev")),
            "clf_sizes": _split_sizes,
        },
    },
)
