"""The training chapter (``training_dynamics``): its configuration and its steps.

The sizes of the two training runs are defined once, in :mod:`replib.training.config` (the training loop and
the protein chapter read the same table); this module adapts that table to :func:`replib.config.chapter_config`
(``TABLE``, ``SCHEMA``: the ``protein`` and ``text`` runs and the ``measure`` settings, no models of the
reader's) and holds the chapter's steps: train (or read) both runs, measure every checkpoint and layer, and
the numbers the chapter records :cite:`lin2023esm2,gao2019representation,timkey2021rogue`.

Parts (:mod:`replib.parts`): ``protein`` and ``text`` (one run each: trained or read, measured) and ``rest``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..metrics import avg_pairwise_cosine, cosine_contributions
from ..models import load_trained
from ..parts import Budget, Part, rest_part
from ..profiles import PROFILES
from ..training import (
    config_for,
    eval_inputs,
    frequency_projection,
    hidden_states,
    load_checkpoint_model,
    measure_run,
    summarize_run,
    trained_model,
)

TASKS = ("protein", "text")

_RUN = {
    "type": "object",
    "required": [
        "layers",
        "hidden",
        "heads",
        "ffn",
        "seq_len",
        "batch",
        "steps",
        "lr",
        "warmup",
        "n_val",
        "save_every",
    ],
    "properties": {
        key: {"type": "integer", "minimum": 1}
        for key in ("layers", "hidden", "heads", "ffn", "seq_len", "batch", "steps", "warmup", "n_val", "save_every")
    }
    | {"lr": {"type": "number", "exclusiveMinimum": 0}},
}
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["models", "protein", "text", "measure"],
    "properties": {
        "models": {"type": "array", "maxItems": 0, "description": "the chapter trains its own models"},
        "protein": _RUN | {"required": [*_RUN["required"], "subset"]},
        "text": _RUN | {"required": [*_RUN["required"], "corpus", "train_split", "eval_split", "vocab"]},
        "measure": {
            "type": "object",
            "additionalProperties": False,
            "required": ["n_tokens", "lid_k", "max_per_type", "n_rogue"],
            "properties": {
                k: {"type": "integer", "minimum": 1} for k in ("n_tokens", "lid_k", "max_per_type", "n_rogue")
            },
        },
    },
}
#: the training table of :mod:`replib.training.config`, one row per profile, with no models to choose
TABLE = {profile: {"models": [], **config_for(profile)} for profile in PROFILES}
#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("views",)


def parts(profile: str, params: dict) -> list:
    """``protein`` and ``text`` (one run each, selected with ``cfg.selected("tasks", TASKS)``) and ``rest``.
    Declared budgets (paper profile): each run trains from scratch, checkpointed (a killed part resumes)."""
    data = {"protein": ("swissprot",), "text": (params["text"]["corpus"],)}
    runs = [
        Part(
            name=task,
            chapter="training_dynamics",
            fraction=0.45,
            budget=Budget(t4_hours=2.75, peak_rss_gb=10.0, cache_gb=4.0),
            models=(),
            data=data[task],
            select=(("tasks", (task,)),),
            records=(f"{task}_*",),
            description=f"the {task} LM: trained (or read from the training cache) and measured",
        )
        for task in TASKS
    ]
    return [*runs, rest_part("training_dynamics", runs, Budget(t4_hours=0.5, peak_rss_gb=10.0, cache_gb=4.0))]


# ------------------------------------------------------------------------------------------ training
def train_runs(cfg) -> dict:
    """Both runs (a part's: ``cfg.selected("tasks", TASKS)``) at the profile's sizes and the chapter's seed
    (:func:`replib.training.trained_model`: read from the training cache, or trained now); task ->
    :class:`~replib.training.TrainRun`."""
    return {task: trained_model(task, cfg.profile, cfg.seed) for task in cfg.selected("tasks", TASKS)}


def model_records(runs: dict) -> dict:
    """Each final model, loaded back through the model layer (sha256-verified): ``<task>_weights_sha256`` and
    ``<task>_n_parameters``."""
    out = {}
    for task, run in runs.items():
        lm = load_trained(run.final_dir, name=f"book-{task}-lm")
        out[f"{task}_weights_sha256"] = run.sha256()["model.safetensors"]
        out[f"{task}_n_parameters"] = int(sum(p.numel() for p in lm.model.parameters()))
    return out


def training_log(runs: dict) -> pd.DataFrame:
    """The training logs of both runs (validation loss and perplexity per checkpoint), column ``model``."""
    return pd.concat([pd.DataFrame(r.log()).assign(model=t) for t, r in runs.items()])


# ------------------------------------------------------------------------------------------ measuring
def measure_runs(runs: dict, cfg) -> dict:
    """:func:`replib.training.measure_run` of every run with the profile's ``measure`` settings:
    task -> (layers, embeddings) tables."""
    return {task: measure_run(run, dict(cfg["measure"])) for task, run in runs.items()}


def stacked(tables: dict, which: int) -> pd.DataFrame:
    """The per-layer (``which=0``) or input-embedding (``which=1``) tables of every run, column ``model``."""
    return pd.concat([tables[t][which].assign(model=t) for t in tables])


def run_summaries(tables: dict) -> dict:
    """:func:`replib.training.summarize_run` of every run: task -> the chapter's claimed quantities."""
    return {t: summarize_run(*tables[t]) for t in tables}


def summary_records(summaries: dict) -> dict:
    """Every summarised quantity of each run: ``protein_<quantity>`` and ``text_<quantity>``
    (``text_final_avg_cos_last``...)."""
    return {f"{task}_{k}": v for task, summary in summaries.items() for k, v in summary.items()}


def rogue_contributions(run, n_tokens: int = 300) -> tuple[np.ndarray, float]:
    """Per-dimension contributions to the average cosine of the last layer at the final step (on
    ``n_tokens`` evaluation tokens), and how far their sum is from the average cosine (Timkey & van
    Schijndel's decomposition is exact)."""
    X = hidden_states(load_checkpoint_model(run, run.steps[-1]), eval_inputs(run, n_tokens))[-1]
    contributions = cosine_contributions(X)
    return contributions, abs(contributions.sum() - avg_pairwise_cosine(X))


def frequency_views(run) -> dict:
    """The input embeddings' projection on their top principal direction against log frequency in the training
    text (:func:`replib.training.frequency_projection`), at step 0 and at the final step."""
    counts = np.asarray(json.loads((run.final_dir / "training.json").read_text())["token_counts"])
    out = {}
    for step in (0, run.steps[-1]):
        W = load_checkpoint_model(run, step).get_input_embeddings().weight.detach().double().numpy()
        out[step] = frequency_projection(W, counts)
    return out
