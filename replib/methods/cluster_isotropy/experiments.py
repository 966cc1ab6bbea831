"""The chapter's experiments (:cite:`rajaee2021cluster`) assembled from a :class:`~replib.config.ChapterConfig`:
the transform's identities, the hyperparameter search, the isotropy tables, STS, the seed deck's ablations
and classification, each returning what the chapter shows and records."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ...data import load_semcor
from ...metrics import partition_isotropy
from ...models import model_slug, resolve_model
from ...training.loop import torch_threads
from .classification import compare_classification, pair_token_features
from .setup import (
    DECK_VARIANTS,
    METHODS,
    STS_DATASETS,
    embed_pairs,
    load_classification,
    load_sts_pairs,
    make_transform,
)
from .sts import layer_isotropy, run_sts, token_pool, tune_hyperparameters, zero_mean_isotropy
from .transform import ClusterIsotropy, all_but_the_top, transform_residuals
from .verbs import GROUPS, select_polysemous_verbs, tense_meaning_distances, verb_occurrences, verb_vectors

#: STS data sets -> their names in record keys (``sts12``..., ``sick``, ``stsb``)
DATASET_KEYS = {d: d.lower().removesuffix("-r").replace("-", "") for d in STS_DATASETS}
#: the seed deck's variants -> their names in record keys (``pretrained``, ``mean``, ``mean_pca``, ``kmeans_mean``...)
VARIANT_KEYS = {v: v.lower().replace("-", "").replace("+", "_") for v in ("Pre-trained", *DECK_VARIANTS)}


def blas_threads(experiment):
    """``experiment(cfg, ...)`` with the BLAS of numpy and scipy limited to ``cfg.threads`` threads (None or
    absent: no limit; torch's own threads are left alone). The transforms are many small products and 384 x 384
    eigendecompositions, on which a second OpenBLAS thread costs several times the CPU of one: one clustered
    transform, its I(W) and a grid point on the STS-B dev pool (42,709 tokens) took 4.8 CPU s with one thread
    and 18.4 with two on the shared 2-core build machine, with I(W) and the grid's Spearman identical to the last
    bit and the transformed rows within 3e-14. Rounding that small can still tip a k-means near-tie: in the
    offline run's seed 0, STS12's cluster-based Spearman moved by 0.002 points and the global ones by 2e-5."""

    @functools.wraps(experiment)
    def run(cfg, *args, **kwargs):
        with threadpool_limits(getattr(cfg, "threads", None), user_api="blas"):
            return experiment(cfg, *args, **kwargs)

    return run


def chapter_seeds(cfg) -> list[int]:
    """The seeds of the stochastic methods: ``cfg.seeds`` consecutive seeds from the chapter's seed."""
    return [cfg.seed + i for i in range(cfg.seeds)]


def short_names(cfg) -> dict:
    """Model spec -> its name in record keys (``minilm``, ``bert``..., or a folder's slug)."""
    return {str(m): m.slug for m in cfg.models}


class ChapterModels:
    """The chapter's models, each loaded once on first use (:func:`replib.models.resolve_model`, its forward
    passes in ``precision``: the configuration's :attr:`~replib.config.ChapterConfig.precision`), with the token
    matrices of the STS-B development pairs (the tuning set) by each."""

    def __init__(self, seed: int, dev: pd.DataFrame, cache_dir=None, precision: str | None = None):
        self.seed, self.dev, self.cache_dir, self.precision = seed, dev, cache_dir, precision
        self._models, self._dev_tokens = {}, {}

    def __call__(self, name: str):
        if name not in self._models:
            self._models[name] = resolve_model(name, seed=self.seed, precision=self.precision)
        return self._models[name]

    def dev_tokens(self, name: str):
        """Both sides' token matrices of the development pairs by model ``name`` (cached)."""
        if name not in self._dev_tokens:
            self._dev_tokens[name] = embed_pairs(self(name), self.dev, cache_dir=self.cache_dir)
        return self._dev_tokens[name]


# ------------------------------------------------------------------------------------- the transform
def transform_checks(pool, n_clusters: int, n_pc: int, seed: int, *, threads: int | None = None):
    """The transform on a token pool: fitted twice with one seed, and checked against its identities and a
    direct numpy all-but-the-top; residuals relative to the largest coordinate. ``threads``: BLAS threads
    (as :func:`blas_threads`; None: no limit).

    Returns
    -------
    transformer (fitted), its output, and the records ``transform_cluster_mean_max``,
    ``transform_orthogonality_max``, ``global_vs_numpy_max_diff``, ``determinism_max_diff``
    """
    with threadpool_limits(threads, user_api="blas"):
        scale = np.abs(pool).max()
        t = ClusterIsotropy(n_clusters, n_pc, random_state=seed)
        out = t.fit_transform(pool)
        mean_residual, orthogonality_residual = transform_residuals(t, out)  # single-member clusters remove nothing
        Xc = pool - pool.mean(0)
        U = np.linalg.svd(Xc, full_matrices=False)[2][:n_pc]
        again = ClusterIsotropy(n_clusters, n_pc, random_state=seed).fit_transform(pool)
        records = {
            "transform_cluster_mean_max": mean_residual / scale,
            "transform_orthogonality_max": orthogonality_residual / scale,
            "global_vs_numpy_max_diff": np.abs(all_but_the_top(pool, n_pc) - (Xc - Xc @ U.T @ U)).max() / scale,
            "determinism_max_diff": float(np.abs(again - out).max()),
        }
    return t, out, records


def plane_views(views: dict, n_points: int, seed: int) -> tuple[np.ndarray, dict]:
    """A seeded sample of ``n_points`` rows and, for each named matrix of ``views``, those rows projected on
    their own first two principal components (after centring)."""
    n = len(next(iter(views.values())))
    idx = np.random.default_rng(seed).choice(n, size=min(n_points, n), replace=False)
    out = {}
    for title, Z in views.items():
        Zc = Z[idx] - Z[idx].mean(0)
        out[title] = Zc @ np.linalg.svd(Zc, full_matrices=False)[2][:2].T
    return idx, out


# ------------------------------------------------------------------------------------- hyperparameters
@blas_threads
def choose_hyperparameters(cfg, models: ChapterModels, seeds) -> tuple[dict, dict]:
    """Every model's ``n_clusters``, ``n_pc`` and ``global_pc``: the best mean dev Spearman on the grid for the
    models of ``cfg.tune_models`` (``n_clusters = 1``, the global method, tuned separately), the paper's
    for the others.

    Returns
    -------
    hparams : model -> dict, grids : model -> DataFrame (mean Spearman, n_clusters x n_pc)
    """
    hparams, grids = {}, {}
    for name in cfg.model_specs:
        if name not in cfg.tune_models:
            hparams[name] = dict(cfg.hparams[name])
            continue
        grid = tune_hyperparameters(
            *models.dev_tokens(name),
            models.dev["score"],
            ks=(1,) + tuple(cfg.grid_k),
            pcs=cfg.grid_pc,
            seeds=seeds[: cfg.tune_seeds],
            cache_dir=models.cache_dir,
        )
        mean = grid.groupby(["n_clusters", "n_pc"])["spearman"].mean()
        best_c = mean.drop(1, level="n_clusters").idxmax()
        best_g = mean.loc[1].idxmax()
        hparams[name] = {"n_clusters": int(best_c[0]), "n_pc": int(best_c[1]), "global_pc": int(best_g)}
        grids[name] = mean.unstack()
    return hparams, grids


# ------------------------------------------------------------------------------------ Tables 5 and 1
def layer_sentences(dev: pd.DataFrame, sample: int | None, seed: int) -> list[str]:
    """The distinct development sentences, or a seeded sample of ``sample`` of them (sorted)."""
    sents = sorted(set(dev["sentence1"]) | set(dev["sentence2"]))
    if sample:
        sents = sorted(np.random.default_rng(seed).choice(sents, size=min(sample, len(sents)), replace=False).tolist())
    return sents


@blas_threads
def isotropy_tables(cfg, models: ChapterModels, seeds, cache_dir=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 5 (log10 I(W) of every layer, 0 = embeddings) and Table 1 (the last layer after k-means with k
    clusters and per-cluster zero-mean only; k = 0 is the raw pool) of every model on STS-B dev.

    Returns
    -------
    layers : columns model, layer, log10 I(W); table1 : columns model, k, seed, iw_log10
    """
    layer_rows, t1_rows = [], []
    sents = layer_sentences(models.dev, cfg.layer_sample, cfg.seed)
    for name in cfg.model_specs:
        for layer, lg in enumerate(layer_isotropy(models(name), sents, cache_dir=cache_dir)):
            layer_rows.append({"model": name, "layer": layer, "log10 I(W)": lg})
        tok = models.dev_tokens(name)
        pool, _ = token_pool(tok[0] + tok[1])
        t1_rows += [{"model": name, **r} for r in zero_mean_isotropy(pool, cfg.table1_ks, seeds, cache_dir)]
    return pd.DataFrame(layer_rows), pd.DataFrame(t1_rows)


def isotropy_records(layers: pd.DataFrame, table1: pd.DataFrame, cfg) -> dict:
    """I(W) per layer (``layer_<model>_<layer>``), Table 1's mean I(W) per model and k
    (``table1_<model>_k<k>``), the largest k, and the change of log10 I(W) from one to that many clusters,
    for the first model and for every model."""
    short = short_names(cfg)
    out = {
        f"layer_{short[name]}_{layer}": 10.0 ** float(lg)
        for name, layer, lg in zip(layers["model"], layers["layer"], layers["log10 I(W)"])
    }
    mean = table1.groupby(["model", "k"])["iw_log10"].mean().unstack()
    for name in cfg.model_specs:
        for k in mean.columns:
            values = table1[(table1.model == name) & (table1.k == k)]["iw_log10"]
            out[f"table1_{short[name]}_k{k}"] = float(np.mean(10.0**values))
    kmax = max(cfg.table1_ks)
    out["table1_kmax"] = kmax
    first = cfg.model_specs[0]
    out["table1_iw_kmax_minus_k1_log10"] = mean.loc[first, kmax] - mean.loc[first, 1]
    for name in cfg.model_specs:
        out[f"table1_{short[name]}_kmax_minus_k1_log10"] = mean.loc[name, kmax] - mean.loc[name, 1]
    return out


def table1_means(table1: pd.DataFrame) -> pd.DataFrame:
    """Table 1 as shown: mean log10 I(W) per model (rows) and k (columns; 0 = ``raw``)."""
    return table1.groupby(["model", "k"])["iw_log10"].mean().unstack().rename(columns={0: "raw"})


# ------------------------------------------------------------------------------------------- STS
@blas_threads
def sts_experiment(cfg, models: ChapterModels, hparams: dict, seeds, cache_dir=None) -> pd.DataFrame:
    """Every method (:data:`METHODS`) on every STS data set of ``cfg.datasets`` with every model: one row per
    model, data set, method and seed (Spearman and Pearson x 100, I(W) of the processed pool)."""
    rows = []
    for name in cfg.model_specs:
        for ds in cfg.datasets:
            df = sts_pairs(cfg, ds)
            tok = embed_pairs(models(name), df, cache_dir=cache_dir)
            for r in run_sts(
                *tok, df["score"], methods=METHODS, hparams=hparams[name], seeds=seeds, cache_dir=cache_dir
            ):
                rows.append({"model": name, "dataset": ds, **r})
    return pd.DataFrame(rows)


def sts_summary(sts: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds of Spearman, and mean I(W), per model, method and data set."""
    return sts.groupby(["model", "method", "dataset"]).agg(
        spearman=("spearman", "mean"), sd=("spearman", "std"), iw=("iw", "mean"), iw_log10=("iw_log10", "mean")
    )


def sts_records(summary: pd.DataFrame, cfg) -> dict:
    """Spearman and I(W) per model, method and data set (``sts_minilm_cluster_sts12``, ``iw_...``), the gains
    of the cluster-based and global methods over the baseline in Spearman (in I(W):
    :func:`~.spreads.iw_gain_records`), and the spread over seeds."""
    short = short_names(cfg)
    out = {}
    for (name, method, ds), r in summary.iterrows():
        out[f"sts_{short[name]}_{method}_{DATASET_KEYS[ds]}"] = r["spearman"]
        out[f"iw_{short[name]}_{method}_{DATASET_KEYS[ds]}"] = r["iw"]
    L, S = summary["iw_log10"].unstack("method"), summary["spearman"].unstack("method")
    out["iw_cluster_minus_global_log10_min"] = (L["cluster"] - L["global"]).min()
    out["sts_cluster_minus_baseline_mean"] = (S["cluster"] - S["baseline"]).mean()
    out["sts_global_minus_baseline_mean"] = (S["global"] - S["baseline"]).mean()
    out["sts_cluster_sd_max"] = float(summary.xs("cluster", level="method")["sd"].max())
    for name in cfg.model_specs:
        for method in ("cluster", "global"):
            out[f"sts_delta_{short[name]}_{method}"] = (S.loc[name][method] - S.loc[name]["baseline"]).mean()
    return out


# ------------------------------------------------------------------------------------ Table 4 (SemCor)
#: Table 4's two representations: the last layer as it is, and after the global method ("RemovedPCs")
SEMCOR_VARIANTS = ("base", "removed_pcs")


@blas_threads
def semcor_experiment(cfg, models: ChapterModels, hparams: dict, cache_dir=None) -> pd.DataFrame:
    """Table 4: verb tense against meaning on SemCor for every model, on the last layer (``base``) and after
    the global method fitted on the verb vectors (``removed_pcs``: mean and the model's ``global_pc`` top
    directions removed), with I(W) of the verb vectors; nothing (an empty frame) unless ``cfg.semcor``.

    Returns
    -------
    DataFrame
        One row per model and variant: ``st_sm``, ``st_dm``, ``dt_sm`` and their ``_spread``
        (:func:`~.verbs.tense_meaning_distances`), ``isotropy``, ``isotropy_log10``, ``n_verbs``,
        ``n_anchors``, ``n_occurrences``.
    """
    if not cfg.semcor:
        return pd.DataFrame()
    sentences = load_semcor()
    occ = select_polysemous_verbs(verb_occurrences(sentences), min_count=cfg.semcor_min_count)
    rows = []
    for name in cfg.model_specs:
        X, kept = verb_vectors(models(name), sentences, occ, cache_dir=cache_dir)
        rows += semcor_rows(name, X, occ[kept], hparams[name]["global_pc"])
    return pd.DataFrame(rows)


def semcor_rows(name: str, X, occ: pd.DataFrame, global_pc: int) -> list[dict]:
    """Table 4's two rows of one model from its verb vectors: ``X`` (n_occurrences, n_features), one row per
    row of ``occ`` (columns ``lemma``, ``sense``, ``tense``), on the last layer as it is (``base``) and after
    the global method with ``global_pc`` directions removed (``removed_pcs``); the columns of
    :func:`semcor_experiment`."""
    rows = []
    for variant in SEMCOR_VARIANTS:
        Y = X if variant == "base" else all_but_the_top(X, global_pc)
        iw = partition_isotropy(Y)
        d = tense_meaning_distances(Y, occ["lemma"], occ["sense"], occ["tense"])
        iso = {"isotropy": iw.value, "isotropy_log10": iw.log10, "n_occurrences": len(occ)}
        rows.append({"model": name, "variant": variant, **d, **iso})
    return rows


def semcor_records(table: pd.DataFrame, cfg) -> dict:
    """Table 4's cells (``semcor_gpt2_base_st_sm``, ..., ``semcor_bert_removed_pcs_isotropy``), the spread of
    each distance (``..._spread``) and, over the models, the largest DT-SM minus ST-DM after the global method
    (``semcor_removed_pcs_dt_sm_minus_st_dm_max``: the paper finds meaning ahead of tense there, < 0)."""
    if table.empty:
        return {}
    short = short_names(cfg)
    out = {}
    for _, r in table.iterrows():
        key = f"semcor_{short[r['model']]}_{r['variant']}"
        for g in GROUPS:
            out[f"{key}_{g}"], out[f"{key}_{g}_spread"] = r[g], r[f"{g}_spread"]
        out[f"{key}_isotropy"] = r["isotropy"]
    after = table[table["variant"] == "removed_pcs"]
    out["semcor_removed_pcs_dt_sm_minus_st_dm_max"] = float((after["dt_sm"] - after["st_dm"]).max())
    return out


# ------------------------------------------------------------------------------------------- deck
@blas_threads
def deck_experiment(cfg, models: ChapterModels, hparams: dict, seeds, cache_dir=None, sts=None) -> pd.DataFrame:
    """The seed deck's variants (:data:`DECK_VARIANTS`) and the baseline (``Pre-trained``) on STS15 and STS-B
    with ``cfg.deck_model``, ``cfg.deck_seeds`` seeds.

    ``sts``: the rows of :func:`sts_experiment` (or None). The deck's ``Pre-trained``, ``Mean+PCA`` and
    ``K-means+Mean+PCA`` are the STS experiment's baseline, global and cluster-based methods (the same
    transforms with the same hyperparameters and seeds on the same pools), so their rows are taken from
    ``sts`` where it holds them for the deck's model, data set and seeds, and only the other variants run.
    """
    rows, deck_seeds = [], list(seeds[: cfg.deck_seeds])
    methods = ["baseline"] + list(DECK_VARIANTS)
    for ds in ("STS15", "STS-B"):
        done = _deck_rows_from_sts(sts, cfg.deck_model, ds, deck_seeds)
        todo = [m for m in methods if m not in done]
        if todo:
            df = sts_pairs(cfg, ds)
            tok = embed_pairs(models(cfg.deck_model), df, cache_dir=cache_dir)
            hp = hparams[cfg.deck_model]
            for r in run_sts(*tok, df["score"], methods=todo, hparams=hp, seeds=deck_seeds, cache_dir=cache_dir):
                done.setdefault(r["method"], []).append(r)
        rows += [{"dataset": ds, **r} for m in methods for r in done[m]]  # the order of one run_sts call
    return pd.DataFrame(rows).replace({"method": {"baseline": "Pre-trained"}})


#: deck variant -> the STS experiment's method that is the same computation (:func:`deck_experiment`)
DECK_FROM_STS = {"baseline": "baseline", "Mean+PCA": "global", "K-means+Mean+PCA": "cluster"}


def _deck_rows_from_sts(sts, model: str, dataset: str, seeds: list) -> dict:
    """Deck variant -> its rows as :func:`~.sts.run_sts` returns them, from the STS experiment's rows of
    ``model`` on ``dataset`` (a deterministic method's one row; the cluster-based method's row of every seed
    of ``seeds``, in that order); a variant is left out where ``sts`` does not hold all of its rows."""
    if sts is None or sts.empty:
        return {}
    here = sts[(sts["model"] == model) & (sts["dataset"] == dataset)]
    out = {}
    for variant, method in DECK_FROM_STS.items():
        mine = here[here["method"] == method]
        if method == "cluster":
            picked = [mine[mine["seed"] == s] for s in seeds]
            if any(len(p) != 1 for p in picked):
                continue
            found = [(s, p.iloc[0]) for s, p in zip(seeds, picked)]
        elif len(mine) == 1:
            found = [(None, mine.iloc[0])]
        else:
            continue
        values = ("spearman", "pearson", "iw", "iw_log10")  # and n_tokens: the values run_sts returns
        out[variant] = [
            {"method": variant, "seed": s, **{k: float(r[k]) for k in values}, "n_tokens": int(r["n_tokens"])}
            for s, r in found
        ]
    return out


def deck_records(deck: pd.DataFrame, cfg) -> dict:
    """Pearson and Spearman of every variant and data set (``deck_<model>_<variant>_<data set>_<metric>``) and
    the I(W) gain of per-cluster over global PC removal."""
    short = model_slug(cfg.deck_model)
    out = {}
    for (method, ds), r in deck.groupby(["method", "dataset"])[["pearson", "spearman"]].mean().iterrows():
        for metric in ("pearson", "spearman"):
            out[f"deck_{short}_{VARIANT_KEYS[method]}_{DATASET_KEYS[ds]}_{metric}"] = r[metric]
    iw = deck.groupby("method")["iw_log10"].mean()
    out["deck_kmeans_pca_minus_mean_pca_iw_log10"] = iw["K-means+Mean+PCA"] - iw["Mean+PCA"]
    return out


def deck_table(deck: pd.DataFrame) -> pd.DataFrame:
    """Pearson, Spearman and log10 I(W) per variant (rows, the deck's order) and data set."""
    tab = deck.groupby(["method", "dataset"])[["pearson", "spearman", "iw_log10"]].mean().unstack("dataset")
    return tab.loc[list(VARIANT_KEYS)]


# ------------------------------------------------------------------------------------ classification
@blas_threads
def classification_experiment(cfg, models: ChapterModels, hparams: dict, cache_dir=None) -> tuple[pd.DataFrame, dict]:
    """Table 3: every task of ``cfg.clf_tasks`` with ``cfg.clf_model``, one fresh classifier per method, trained
    with ``cfg.threads`` torch threads (batches of 32 through a 24,576 x 100 layer: one thread gave the same
    weights to the last bit for a third of the CPU time of two on the shared 2-core machine).

    Returns
    -------
    table : columns task, method, score (no I(W) of the features: no record or figure uses it)
    details : ``fresh`` (per task, whether every condition started from the same fresh weights), ``n_train``
        (training examples of the last task) and ``sst2_majority`` (the majority class on SST-2, x 100)
    """
    lm, hp = models(cfg.clf_model), hparams[cfg.clf_model]
    rows, details = [], {"fresh": [], "sst2_majority": None}
    for task in cfg.clf_tasks:
        a, b, y, splits = load_classification(task, cfg.clf_sizes, seed=sample_seed(cfg))
        feats = pair_token_features(lm, a, b, max_length=cfg.clf_max_length, cache_dir=cache_dir)
        transforms = {m: make_transform(m, **hp, random_state=cfg.seed) for m in METHODS}
        with torch_threads(getattr(cfg, "threads", None)):  # the MLP's small products: as the BLAS, one thread
            metrics, fresh = compare_classification(
                feats, y, splits, task, transforms, epochs=cfg.clf_epochs, lr=cfg.clf_lr, seed=cfg.seed
            )
        details["fresh"].append(fresh)
        for m, v in metrics.items():
            rows.append({"task": task, "method": m, "score": v})
        if task == "SST-2":
            details["sst2_majority"] = 100 * max(np.mean(y[splits["eval"]]), 1 - np.mean(y[splits["eval"]]))
    details["n_train"] = len(splits["train"])
    return pd.DataFrame(rows), details


def sample_seed(cfg) -> int:
    """The seed of the drawn STS pairs (``max_pairs``, ``dev_pairs``) and classification examples (``clf_sizes``,
    :func:`~.setup.load_classification`): the profile's ``sample_seed`` (the same texts for every seed of the
    chapter, so a second seed reads their vectors from the cache), or the chapter's seed where that is None."""
    return cfg.seed if cfg.sample_seed is None else cfg.sample_seed


def sts_pairs(cfg, name: str) -> pd.DataFrame:
    """The pairs of the STS set ``name`` the configuration evaluates (:func:`~.setup.load_sts_pairs`): at most
    ``max_pairs`` of a test set, or ``dev_pairs`` of ``"STS-B-dev"`` (the tuning set), drawn with
    :func:`sample_seed`."""
    cap = cfg.dev_pairs if name == "STS-B-dev" else cfg.max_pairs
    return load_sts_pairs(name, stsb_split=cfg.stsb_split, max_pairs=cap, seed=sample_seed(cfg))


def classification_records(clf: pd.DataFrame, details: dict, cfg) -> dict:
    """``clf_<model>_<method>_<task>`` (``clf_minilm_cluster_sst2``...), the SST-2 baseline above the majority
    class, whether every condition started from the same fresh weights, and the training examples per task."""
    short = model_slug(cfg.clf_model)
    out = {f"clf_{short}_{r.method}_{r.task.lower().replace('-', '')}": r.score for r in clf.itertuples()}
    if details["sst2_majority"] is not None:
        baseline = clf[(clf.task == "SST-2") & (clf.method == "baseline")]["score"].iloc[0]
        out["clf_sst2_baseline_minus_majority"] = baseline - details["sst2_majority"]
    out["clf_fresh_init"] = all(details["fresh"])
    out["clf_n_train"] = details["n_train"]
    return out
