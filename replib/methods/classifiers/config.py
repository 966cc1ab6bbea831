"""The classifiers chapter's parameters per profile (read through :func:`replib.config.chapter_config`).

``main`` and ``glue`` are the training and evaluation sizes of Sec. 3 and of App. A (the fields of
:class:`~replib.methods.classifiers.TrainConfig`):

* ``paper``: the paper's protocol, metrics after every update (and at step 0), 5 seeds; GLUE 250 updates
  with metrics on a random sample of ``metric_sample`` items (the paper's N is not legible; 10,000 chosen);
  all eight GLUE tasks from the Hub with the three SBERT models; the word-level setups on the NLPL
  word2vec model 222 when ``REPLIB_W2V_222`` names it (``word2vec_setups``).
* ``offline``: the same training; metrics every 25th update for seed 0 and every 250th for seed 1 (the
  correlations use seed 0's 41 points), the silhouette on the same 4,000 items at every evaluation (of
  10,662 and 9,842; every item at the last step, ``silhouette_sample_err``); GLUE one seed, every 10th
  update, samples of 2,000, on the five tasks of the mirror, 500 items each; a checkpoint every 250th update
  (a run resumes from the last one).
* ``smoke``: tens of updates, every 5th, a few hundred items.

``models`` are the SBERT models of the GLUE appendix; the first also runs setups (i) and (ii).

Parts (:mod:`replib.parts`): ``setups`` (Sec. 1's random-data checks and the sentence- and word-level setups
with the first model), one GLUE part per model (``glue-<model>``: every GLUE task with it) and ``rest``.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ...chapter import Chapter
from ...data import load_polarity, load_snli
from ...models import ModelRef
from ...parts import Budget, Part, model_parts, rest_part
from ...schema import closed_object
from .setups import _glue_frame
from .training import TrainConfig

_TRAIN = closed_object(
    {
        "n_updates": {"type": "integer", "minimum": 1},
        "eval_every": {"type": "integer", "minimum": 1},
        "seeds": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
        "metric_sample": {"type": ["integer", "null"], "minimum": 2},
        "lr": {"type": "number", "exclusiveMinimum": 0},
        "checkpoint_every": {"type": "integer", "minimum": 1},
        "other_seeds_eval_every": {"type": ["integer", "null"], "minimum": 1},
        "silhouette_sample": {"type": ["integer", "null"], "minimum": 2},
    }
)
_GLUE_TASKS = ["cola", "mnli", "mrpc", "qnli", "qqp", "rte", "sst2", "wnli"]

SCHEMA = closed_object(
    {
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "main": _TRAIN,
        "glue": _TRAIN,
        "n_polarity": {"type": ["integer", "null"], "minimum": 10, "description": "polarity items (None: all)"},
        "n_snli": {"type": ["integer", "null"], "minimum": 10, "description": "SNLI pairs (None: all)"},
        "glue_tasks": {"type": "array", "items": {"enum": _GLUE_TASKS}, "minItems": 1},
        "glue_items": {"type": ["integer", "null"], "minimum": 10, "description": "items per GLUE task"},
        "glue_source": {"enum": ["mirror", "canonical"]},
        "identity_n": {"type": "integer", "minimum": 10, "description": "points of the random clouds of Sec. 1"},
        "n_supersense": {"type": "integer", "minimum": 10, "description": "words of setup (iv)"},
        "n_pos": {"type": "integer", "minimum": 10, "description": "words of the POS stand-in for setup (iii)"},
        "n_standin": {"type": "integer", "minimum": 10, "description": "words of the multi-label stand-in"},
        "word2vec_setups": {"type": "boolean", "description": "setups (iii)/(iv) on model 222 when available"},
    }
)


def _train(n_updates, eval_every, seeds, metric_sample, **kw) -> dict:
    """The fields of a :class:`~.training.TrainConfig` (lr: Adam's default 1e-3; a checkpoint every 50 updates)."""
    return asdict(TrainConfig(n_updates, eval_every, list(seeds), metric_sample, **kw))


_SBERT = ["all-MiniLM-L6-v2"]
# fmt: off
TABLE = {
    "smoke": dict(
        models=_SBERT, n_polarity=200, n_snli=150, glue_tasks=["rte", "wnli"], glue_items=100, glue_source="mirror",
        identity_n=200, n_supersense=300, n_pos=1000, n_standin=600, word2vec_setups=False,
        main=_train(40, 5, (0, 1), None, checkpoint_every=10, other_seeds_eval_every=20),
        glue=_train(40, 5, (0,), 200, checkpoint_every=10)),
    "offline": dict(
        models=_SBERT, n_polarity=None, n_snli=None, glue_tasks=["cola", "sst2", "mrpc", "rte", "wnli"],
        glue_items=500, glue_source="mirror", identity_n=400, n_supersense=2275, n_pos=11462, n_standin=2000,
        word2vec_setups=False,
        main=_train(1000, 25, (0, 1), None, checkpoint_every=250, other_seeds_eval_every=250, silhouette_sample=4000),
        glue=_train(250, 10, (0,), 2_000, checkpoint_every=250)),
    "paper": dict(
        models=["all-MiniLM-L6-v2", "all-mpnet-base-v2", "all-distilroberta-v1"], n_polarity=None, n_snli=None,
        glue_tasks=_GLUE_TASKS, glue_items=None, glue_source="canonical", identity_n=400, n_supersense=2275,
        n_pos=11462, n_standin=2000, word2vec_setups=True,
        main=_train(1000, 1, (0, 1, 2, 3, 4), None),
        glue=_train(250, 1, (0, 1, 2, 3, 4), 10_000)),
}
# fmt: on


def derive(params: dict, models: tuple, *, default: list, given: bool) -> dict:
    """``sbert_model``: the model of setups (i)-(ii), the first of ``models``; ``sbert_label``: its name in the
    records, the registry name for the profile's own model and the slug for a reader's model."""
    first = models[0]
    return {**params, "sbert_model": str(first), "sbert_label": first.slug if given else str(first)}


#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("theory", "sentence", "words", "glue", "table")


def parts(profile: str, params: dict) -> list:
    """``setups``, ``glue-<model>`` per model and ``rest`` (see the module docstring). Declared budgets (paper
    profile): SBERT vectors of the polarity, SNLI and GLUE items are computed once (minutes on a T4); the
    linear classifiers train 1,000 (250 on GLUE) updates for 5 seeds with the metrics after every update."""
    first = params["models"][0]
    setups = Part(
        name="setups",
        chapter=CHAPTER.name,
        fraction=0.4,
        budget=Budget(t4_hours=2.0, peak_rss_gb=10.0, cache_gb=3.0),
        models=(first,),
        steps=("theory", "sentence", "words"),
    )
    glue = model_parts(
        CHAPTER.name,
        params["models"],
        {m: f"glue-{ModelRef.parse(m).slug}" for m in params["models"]},
        fraction={"*": 0.5 / len(params["models"])},
        budget={"*": Budget(t4_hours=1.5, peak_rss_gb=10.0, cache_gb=4.0)},
        steps=("glue",),
        records=lambda label: (),
    )
    out = [setups, *glue]
    return [*out, rest_part(CHAPTER.name, out, Budget(t4_hours=0.5, peak_rss_gb=12.0, cache_gb=8.0))]


CHAPTER = Chapter(
    "classifiers",
    ("mickus2024isotropy",),
    TABLE,
    SCHEMA,
    STEPS,
    parts,
    derive,
    rehearsal={
        "scale": ("n_polarity", "n_snli", "glue_items", "n_supersense", "n_pos"),
        # ten words per label of WordNet's 26 noun supersenses at least: a silhouette needs fewer labels than items
        "least": {"n_supersense": 260},
        # the mirror holds five of the eight GLUE tasks (not MNLI, QQP, QNLI: 90 % of the paper's 944,000
        # items): the rehearsal embeds those five, and its estimate is of them
        "set": {"glue_source": "mirror", "glue_tasks": ["cola", "sst2", "mrpc", "rte", "wnli"]},
        # the whole data sets' counts; GLUE's items per task: the mean over the tasks served, so that the
        # tasks' capped total is the fraction of their whole
        "whole": {
            "n_polarity": lambda p: len(load_polarity()),
            "n_snli": lambda p: len(load_snli("dev")),
            "glue_items": lambda p: float(np.mean([len(_glue_frame(t, p["glue_source"])[0]) for t in p["glue_tasks"]])),
        },
    },
)
