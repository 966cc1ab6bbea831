"""The training chapter (``training_dynamics``): its configuration (the runs' sizes of
:mod:`replib.training.config`, no models of the reader's) and its steps: train (or read) both runs, measure
every checkpoint and layer, and the numbers the chapter records
:cite:`lin2023esm2,gao2019representation,timkey2021rogue`. Parts (:mod:`replib.parts`): each run's training in
consecutive step ranges where one session would not hold it (:func:`parts`), and ``rest``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

from .._io import atomic_path
from ..chapter import Chapter
from ..metrics import avg_pairwise_cosine, cosine_contributions, isoscore, s_inter, s_intra
from ..models import load_trained
from ..parts import Budget, Part, rest_part
from ..profiles import PROFILES
from ..sampling import bootstrap_spread
from ..schema import closed_object
from ..training import (
    code_version,
    config_for,
    end_layers,
    frequency_projection,
    load_checkpoint_model,
    measure_run,
    summarize_run,
    train_seeds,
    trained_models,
    training_quality,
)
from ..training.config import RUN_SHAPE
from ..training.measure import MEASURE_THREADS
from ..training.quality import FLATTENING  # noqa: F401 (the chapter states the criterion: td.FLATTENING)
from ..training.ranges import n_ranges, resume_step, step_ranges, train_until

TASKS = ("protein", "text")

_RUN = {
    "type": "object",
    "required": list(RUN_SHAPE),
    "properties": {key: {"type": "integer", "minimum": 1} for key in RUN_SHAPE if key != "lr"}
    | {"lr": {"type": "number", "exclusiveMinimum": 0}, "threads": {"type": ["integer", "null"], "minimum": 1}},
}
SCHEMA = closed_object(
    {
        "models": {"type": "array", "maxItems": 0, "description": "the chapter trains its own models"},
        "protein": _RUN | {"required": [*_RUN["required"], "subset"]},
        "text": _RUN | {"required": [*_RUN["required"], "corpus", "train_split", "eval_split", "vocab"]},
        "measure": closed_object(
            {k: {"type": "integer", "minimum": 1} for k in ("n_tokens", "lid_k", "max_per_type", "n_rogue")}
        ),
    }
)
#: the training table of :mod:`replib.training.config`, one row per profile, with no models to choose
TABLE = {profile: {"models": [], **config_for(profile)} for profile in PROFILES}
#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("measure", "views")
#: T4-hours of each run at the paper's size, (training, measuring its checkpoints), from the rehearsal
#: (book/rehearsal.csv); the smaller profiles' runs take minutes
_T4_HOURS = {"paper": {"protein": (5.05, 0.10), "text": (4.60, 0.18)}}
#: the updates of each run those T4-hours were measured at: a run's training hours scale with its updates
_MEASURED_STEPS = 50_000
_SMALL = (0.05, 0.01)
#: T4-hours a range aims at: a Colab session's 3 less a margin for the estimate's spread (as the protein
#: chapter's shard ranges)
SESSION_T4_HOURS = 2.5


def parts(profile: str, params: dict) -> list:
    """Each run's updates in as few consecutive step ranges as keep a part within :data:`SESSION_T4_HOURS`
    (:func:`replib.training.ranges.step_ranges` at the declared ``_T4_HOURS``): ``protein`` when one range
    holds it, else ``protein-1``, ``protein-2``..., each training from the resume state the one before left
    (selections ``tasks`` and ``until``); the last range also measures the run and owns its records. Then
    ``rest``."""
    hours = {task: _hours(profile, params, task) for task in TASKS}
    total = sum(sum(h) for h in hours.values()) + 0.05  # + rest
    runs = []
    for task in TASKS:
        train, measure = hours[task]
        ranges = task_ranges(profile, params, task)
        n = len(ranges)
        for k, (first, last) in enumerate(ranges):
            final = k == n - 1
            share = train * (last - first + 1) / params[task]["steps"] + (measure if final else 0.0)
            runs.append(
                Part(
                    name=task if n == 1 else f"{task}-{k + 1}",
                    chapter=CHAPTER.name,
                    fraction=round(share / total, 4),
                    budget=Budget(t4_hours=round(share, 2), peak_rss_gb=10.0, cache_gb=4.0),
                    models=(),
                    steps=("measure",) if final else (),  # a range before the last only trains
                    select=(("tasks", (task,)), ("until", (last,))),
                    records=(f"{task}_*",) if final else (),
                    needs=(f"{task}-{k}",) if k else (),
                )
            )
    return [*runs, rest_part(CHAPTER.name, runs, Budget(t4_hours=0.5, peak_rss_gb=10.0, cache_gb=4.0))]


def _hours(profile: str, params: dict, task: str) -> tuple[float, float]:
    """Declared T4-hours of ``task``'s run, (training, measuring): :data:`_T4_HOURS` with the training scaled
    to the run's updates."""
    if profile not in _T4_HOURS:
        return _SMALL
    train, measure = _T4_HOURS[profile][task]
    return train * params[task]["steps"] / _MEASURED_STEPS, measure


def task_ranges(profile: str, params: dict, task: str) -> list[tuple[int, int]]:
    """The ``(first, last)`` updates of each range ``task``'s run is cut into in ``profile`` (one range when a
    session holds the run): the ranges of :func:`parts`, for whoever needs a range's first update."""
    train, measure = _hours(profile, params, task)
    n = n_ranges(train, SESSION_T4_HOURS - measure)
    return step_ranges(params[task]["steps"], params[task]["save_every"], n)


# ------------------------------------------------------------------------------------------ training
def range_end(cfg, task: str) -> int:
    """The last update of ``task``'s run that this part trains: its step range's end (the part's ``until``
    selection), or the run's last update."""
    chosen = dict(cfg.part.select).get("until") if cfg.part is not None else None
    return int(chosen[0]) if chosen else int(cfg[task]["steps"])


def train_runs(cfg) -> dict:
    """Both runs (a part's: ``cfg.selected("tasks", TASKS)``) at the profile's sizes and the chapter's seed,
    trained up to the part's :func:`range_end` (:func:`replib.training.ranges.train_until`; the whole run:
    :func:`replib.training.trained_model`, read from the training cache or trained now); task ->
    :class:`~replib.training.TrainRun` (partial, without ``final/``, for a range before the last)."""
    tasks, sizes = cfg.selected("tasks", TASKS), config_for(cfg.profile)  # the dicts the run folders are keyed by
    until = {task: range_end(cfg, task) for task in tasks}
    whole = [task for task in tasks if until[task] == sizes[task]["steps"]]
    out = trained_models(whole, cfg.profile, cfg.seed)  # side by side when both train now (replib.training.parallel)
    return {task: out[task] if task in out else train_until(task, sizes[task], cfg.seed, until[task]) for task in tasks}


def prepare(profile: str, seeds, *, progress: bool = True) -> list[tuple[str, int]]:
    """Before a run executes several seeds of this chapter (the chapter's ``prepare``): train every seed's two
    runs not yet in the cache, side by side and longest first (:func:`replib.training.train_seeds`), so that the
    seeds' notebooks read them from the cache. Where the runs cannot train side by side (one core; the
    ``paper`` profile, whose runs share one GPU) it trains nothing and each notebook trains its own, as alone.

    Returns
    -------
    list of (task, seed)
        The runs trained here.
    """
    return train_seeds(TASKS, profile, seeds, progress=progress, serial=False)


def progress_table(runs: dict) -> pd.DataFrame:
    """How far each run is: updates done (its latest resume state), of how many, and whether ``final/`` is
    exported."""
    rows = {
        task: {"updates_done": max(resume_step(run.dir), 0), "of": run.cfg["steps"],
               "final": (run.final_dir / "sha256.json").exists()}
        for task, run in runs.items()
    }  # fmt: skip
    return pd.DataFrame(rows).T


def model_records(runs: dict) -> dict:
    """Each final model, loaded back through the model layer (sha256-verified): ``<task>_weights_sha256`` and
    ``<task>_n_parameters``."""
    out = {}
    for task, run in runs.items():
        lm = load_trained(run.final_dir, name=f"book-{task}-lm")
        out[f"{task}_weights_sha256"] = run.sha256()["model.safetensors"]
        out[f"{task}_n_parameters"] = int(sum(p.numel() for p in lm.model.parameters()))
    return out


def quality_table(runs: dict) -> pd.DataFrame:
    """How far each run trained (:func:`replib.training.training_quality`), one row per model: the final
    validation perplexity beside the unigram baseline's on the same tokens, their ratio, and the flattening
    criterion (``FLATTENING``): the relative fall of the validation loss over the last quarter of training, the
    final validation loss above the run's minimum, and the train-validation gap at the end."""
    rows = {task: {"val_ppl_final": run.log()[-1]["val_ppl"], **training_quality(run)} for task, run in runs.items()}
    return pd.DataFrame(rows).T


def quality_records(table: pd.DataFrame) -> dict:
    """The recorded numbers of :func:`quality_table`: ``<task>_unigram_ppl``, ``<task>_ppl_vs_unigram``,
    ``<task>_val_loss_rel_drop_last_quarter``, ``<task>_val_loss_over_min``, ``<task>_train_val_gap``,
    ``<task>_flattened`` and ``<task>_n_val_tokens``."""
    floats = ("unigram_ppl", "ppl_vs_unigram", "val_loss_rel_drop_last_quarter", "val_loss_over_min", "train_val_gap")
    casts = dict.fromkeys(floats, float) | {"flattened": bool, "n_val_tokens": int}
    return {f"{task}_{k}": cast(row[k]) for task, row in table.iterrows() for k, cast in casts.items()}


def training_log(runs: dict) -> pd.DataFrame:
    """The training logs of both runs (validation loss and perplexity per evaluation step), column ``model``."""
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
    head = {"protein": lambda k: f"protein_{k}", "text": lambda k: f"text_{k}"}  # the claims' prefixes, spelled out
    return {head[task](k): v for task, summary in summaries.items() for k, v in summary.items()}


#: bootstrap resamples of the evaluation windows (text) or sequences (protein) behind a flag's margin
MARGIN_BOOT = 200


def _flag_margins(mcfg: dict, seed: int) -> dict:
    """The statistic of each flag's margin on rows ``[X at step 0 | X at the end | type]`` of the last layer
    (positive where the flag holds), as :func:`replib.training.measure_layer` measures each side."""

    def on_rows(stat):  # stat(X0, X1, types) of the rows' three parts
        def margin(Z):
            d = (Z.shape[1] - 1) // 2
            return stat(Z[:, :d], Z[:, d:-1], Z[:, -1].astype(np.int64))

        return margin

    return {
        "avg_cos_rise": on_rows(lambda X0, X1, t: avg_pairwise_cosine(X1) - avg_pairwise_cosine(X0)),
        "isoscore_fall": on_rows(lambda X0, X1, t: isoscore(X0) - isoscore(X1)),
        "sintra_minus_sinter_final": on_rows(
            lambda X0, X1, t: s_intra(X1, t, mcfg["max_per_type"], seed=seed) - s_inter(X1, t, seed=seed)
        ),
    }


def depth_spearman(n_blocks: int):
    """``stat(Z)``: the Spearman correlation of block index (1..``n_blocks``) with the average cosine of each
    block, on rows ``Z = [block 1 | block 2 | ...]`` of the same tokens (``depth_spearman_final`` of
    :func:`replib.training.summarize_run` on the final checkpoint's blocks)."""
    return lambda Z: _depth_order([avg_pairwise_cosine(B) for B in np.split(np.asarray(Z), n_blocks, axis=1)])


def _depth_order(cos) -> float:
    """The Spearman correlation of block index (1..len(cos)) with the blocks' average cosines ``cos``."""
    return float(spearmanr(np.arange(1, len(cos) + 1), cos)[0])


#: the depth ordering of training draws (``data/training_draws.csv``, :func:`measure_draws`): one
#: row per (profile, task, seed), so that the spread of ``<task>_depth_spearman_final`` covers the training draw
DRAWS_FILE = Path(__file__).resolve().parents[2] / "data" / "training_draws.csv"
#: the training draws a measured between-draw spread needs (9 degrees of freedom)
MIN_DRAWS = 10


def config_digest(profile: str, task: str) -> str:
    """The first 12 hex digits of the sha256 of a run's configuration, the measurement settings
    (:func:`replib.training.config_for`) and the source of the training code (:func:`code_version`): the rows of
    :data:`DRAWS_FILE` that describe this profile's runs as the code trains them now."""
    cfg = config_for(profile)
    parts = {"run": cfg[task], "measure": cfg["measure"], "code": code_version()["source"]}
    blob = json.dumps(parts, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def block_order(run, mcfg: dict) -> dict:
    """The average cosine of each block at the end of a measured run and their Spearman correlation with depth
    (:func:`depth_spearman` of the blocks :func:`replib.training.measure_run` kept)."""
    with threadpool_limits(MEASURE_THREADS):
        cos = [avg_pairwise_cosine(B) for B in end_layers(run, mcfg)["final_blocks"]]
    return {"depth_spearman_final": _depth_order(cos), "block_avg_cos": " ".join(f"{c:.4f}" for c in cos)}


def measure_draws(profile: str, seeds, *, progress: bool = True) -> pd.DataFrame:
    """Train (or read from the cache) both runs of every seed in ``seeds``, measure them as the chapter does, and
    tabulate the depth ordering at the end of each (:func:`block_order`): the rows of :data:`DRAWS_FILE`.

    A seed draws the initial weights and the order of the training batches; the evaluation tokens are the
    same for every seed, so the rows differ by the training draw alone.
    """
    seeds = [int(s) for s in seeds]
    train_seeds(TASKS, profile, seeds, progress=progress)
    mcfg = config_for(profile)["measure"]
    rows = []
    for seed in seeds:
        for task, run in trained_models(TASKS, profile, seed, progress=progress).items():
            measure_run(run, mcfg, progress=progress)
            rows.append(
                {"profile": profile, "task": task, "config": config_digest(profile, task), "seed": seed}
                | block_order(run, mcfg)
            )
    return pd.DataFrame(rows)


def write_draws(profile: str, seeds, path: Path | None = None) -> pd.DataFrame:
    """:func:`measure_draws` of ``seeds`` merged into :data:`DRAWS_FILE` (a measured row replaces the row of the
    same profile, task, configuration and seed), written atomically; e.g.
    ``write_draws("offline", range(10))`` after the offline configuration changed."""
    path = Path(path or DRAWS_FILE)
    new = measure_draws(profile, seeds)
    old = pd.read_csv(path, dtype={"config": str}) if path.exists() else new.iloc[:0]
    table = pd.concat([old, new]).drop_duplicates(["profile", "task", "config", "seed"], keep="last")
    with atomic_path(path) as tmp:
        table.sort_values(["profile", "task", "config", "seed"]).to_csv(tmp, index=False)
    return table


def training_draws(profile: str, tasks=TASKS, path: Path | None = None) -> pd.DataFrame:
    """The rows of :data:`DRAWS_FILE` measured at this profile's current configuration of each of ``tasks``
    (none where the configuration changed since: a stale draw never stands for the current one)."""
    path = Path(path or DRAWS_FILE)
    if not path.exists():
        return pd.DataFrame(columns=["profile", "task", "config", "seed", "depth_spearman_final", "block_avg_cos"])
    table = pd.read_csv(path, dtype={"config": str})
    current = {task: config_digest(profile, task) for task in tasks}
    keep = (table.profile == profile) & (table.task.map(current) == table.config)
    return table[keep].reset_index(drop=True)


def draw_records(profile: str, path: Path | None = None) -> dict:
    """Between training draws, per task: ``<task>_depth_spearman_draws_n`` (draws measured at this profile's
    configuration) and ``_draws_sd`` (their standard deviation, ddof 1; NaN below :data:`MIN_DRAWS` draws)."""
    out, table = {}, training_draws(profile, path=path)
    for task in TASKS:
        rho = table.loc[table.task == task, "depth_spearman_final"].to_numpy(float)
        out[f"{task}_depth_spearman_draws_n"] = len(rho)
        out[f"{task}_depth_spearman_draws_sd"] = float(np.std(rho, ddof=1)) if len(rho) >= MIN_DRAWS else float("nan")
    return out


def margin_records(runs: dict, cfg, n_boot: int = MARGIN_BOOT) -> dict:
    """The margins of the flags that compare the last layer at step 0 with the end, and their standard
    errors: ``<task>_avg_cos_rise`` (average cosine at the end minus at step 0: ``avg_cos_rises``),
    ``<task>_isoscore_fall`` (IsoScore at step 0 minus at the end: ``isoscore_falls``),
    ``<task>_sintra_minus_sinter_final`` (``sintra_gt_sinter_final``), each with ``_spread``: the bootstrap
    over the evaluation windows (text) or sequences (protein) of the two checkpoints' last layers that
    :func:`replib.training.measure_run` kept, a window's two representations resampled together
    (:func:`replib.sampling.bootstrap_spread`, ``n_boot`` resamples). Also ``<task>_depth_spearman_final_spread``:
    the same bootstrap of :func:`depth_spearman` over every block at the end, added in quadrature to the
    standard deviation between training draws (:func:`draw_records`) where at least :data:`MIN_DRAWS` draws were
    measured at the profile's configuration (``<task>_depth_spearman_draws_n`` says how many)."""
    mcfg = dict(cfg["measure"])
    draws = draw_records(cfg.profile)
    out = dict(draws)
    for task, run in runs.items():
        ends = end_layers(run, mcfg)
        Z = np.column_stack([ends["first"], ends["final"], ends["types"]])
        blocks = ends["final_blocks"]
        boot = functools.partial(bootstrap_spread, groups=ends["groups"], n_boot=n_boot, seed=run.seed)
        with threadpool_limits(MEASURE_THREADS):  # small matrices: one BLAS thread (replib.training.measure)
            for name, stat in _flag_margins(mcfg, run.seed).items():
                out[f"{task}_{name}"] = float(stat(Z))
                out[f"{task}_{name}_spread"] = boot(stat, Z)
            between = draws[f"{task}_depth_spearman_draws_sd"]
            depth = boot(depth_spearman(len(blocks)), np.concatenate(list(blocks), axis=1))
            out[f"{task}_depth_spearman_final_spread"] = float(np.hypot(depth, between if np.isfinite(between) else 0))
    return out


def rogue_contributions(run, cfg, n_tokens: int = 300) -> tuple[np.ndarray, float]:
    """Per-dimension contributions to the average cosine of the last layer at the final step (on the first
    ``n_tokens`` evaluation tokens that :func:`replib.training.measure_run` measured with ``cfg["measure"]``),
    and how far their sum is from the average cosine (Timkey & van Schijndel's decomposition is exact)."""
    X = end_layers(run, dict(cfg["measure"]))["final"][:n_tokens]
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


#: a chapter of this book's own (no paper), training its own models; the protein chapter reads its protein LM
CHAPTER = Chapter(
    "training_dynamics",
    (),
    TABLE,
    SCHEMA,
    STEPS,
    parts,
    prepare=prepare,
    readers=("protein_isotropy",),
    # the paper-scale runs' sizes (replib.training.config): each run's updates, with its warm-up, resume saves
    # and validation sequences in proportion; the batch, sequence length and the checkpoints' measurements stay
    # (an update's work). The current Swiss-Prot release and WikiText-2's train split are not in the mirror: the
    # 5,000-sequence sample and the test text past the held-out validation windows stand in
    rehearsal={
        "scale": tuple(f"{run}.{k}" for run in TASKS for k in ("steps", "warmup", "save_every", "n_val")),
        "set": {"protein.subset": "5k", "text.train_split": "test"},
        "sizes": config_for,  # replib.training reads the runs' sizes by profile: the kernel serves them scaled
    },
    takes_models=False,
)
