"""The spread of the chapter's values that are compared with the paper's numbers or sit near its bounds
:cite:`rajaee2021cluster`.

The paper reports averages of five runs (App. B.2) and no spread. Our cluster-based method runs once per seed
(the baseline and the global method are deterministic), so a value's spread against the paper's is the
run-to-run sd over our seeds, scaled for the difference of two means, ours over ``n`` seeds and the paper's
over five runs: :math:`\\mathrm{sd}\\sqrt{1/n + 1/5}` (:func:`difference_spread`). The smallest gain of I(W) sits
near its bound on a model as isotropic as MiniLM, where a run's k-means initialisation moves it by about as much as
it is: :func:`iw_gain_records` estimates it over :data:`IW_GAIN_DRAWS` runs. A classification score is
an accuracy (or Matthews correlation) on a finite evaluation set: its binomial standard error. And
:func:`table3_average_records` checks the arithmetic of Table 3's Average column.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...models import model_slug
from ...papers import project_tables
from .experiments import DATASET_KEYS, blas_threads, sample_seed, short_names, sts_pairs
from .setup import embed_pairs, load_classification
from .sts import run_sts

#: runs the paper averages (App. B.2: "the reported results are the average of five runs")
PAPER_RUNS = 5
#: runs of the cluster-based method behind the smallest gain of I(W) (:func:`iw_gain_records`)
IW_GAIN_DRAWS = 20


def difference_spread(values, paper_runs: int = PAPER_RUNS) -> float:
    """The sd of (our mean over ``values``) - (the paper's mean over ``paper_runs`` runs), for the same
    run-to-run sd: sd(values) * sqrt(1/n + 1/paper_runs); 0 for a deterministic value (fewer than two
    values, or all equal)."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size < 2:
        return 0.0
    return float(np.std(v, ddof=1) * math.sqrt(1 / v.size + 1 / paper_runs))


def _mean_se(values) -> float:
    """The standard error of the mean of ``values`` (0 for fewer than two)."""
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0


def sts_spread_records(sts: pd.DataFrame, cfg) -> dict:
    """Spreads of the STS records (the per-seed rows of :func:`~.experiments.sts_experiment`):

    - ``sts_<m>_<method>_<ds>_spread`` and ``iw_<m>_<method>_<ds>_spread`` (:func:`difference_spread`);
    - ``iw_cluster_minus_global_log10_min_spread``: the standard error of log10 I(W) of the cluster-based
      method in the cell where the minimum is reached (the gain over the baseline: :func:`iw_gain_records`);
    - ``sts_cluster_minus_baseline_mean_spread`` and ``sts_delta_<m>_<method>_spread``: the standard error of
      the mean gain over data sets.
    """
    short = short_names(cfg)
    out = {}
    g = sts.groupby(["model", "method", "dataset"])
    for (name, method, ds), rows in g:
        key = f"{short[name]}_{method}_{DATASET_KEYS[ds]}"
        out[f"sts_{key}_spread"] = difference_spread(rows["spearman"])
        out[f"iw_{key}_spread"] = difference_spread(rows["iw"])
    L = g["iw_log10"].mean().unstack("method")
    se_log = g["iw_log10"].apply(_mean_se).unstack("method")
    out["iw_cluster_minus_global_log10_min_spread"] = float(se_log["cluster"][(L["cluster"] - L["global"]).idxmin()])
    se = g["spearman"].apply(_mean_se).unstack("method")
    for method in ("cluster", "global"):
        cells = np.sqrt(se[method] ** 2 + se["baseline"] ** 2)
        if method == "cluster":
            out["sts_cluster_minus_baseline_mean_spread"] = float(np.sqrt(np.sum(cells**2)) / len(cells))
        for name in cfg.model_specs:
            c = cells.loc[name]
            out[f"sts_delta_{short[name]}_{method}_spread"] = float(np.sqrt(np.sum(c**2)) / len(c))
    return out


@blas_threads
def iw_gain_records(cfg, sts: pd.DataFrame, models, hparams: dict, cache_dir=None, draws: int = IW_GAIN_DRAWS) -> dict:
    """The smallest gain of log10 I(W) of the cluster-based method over the baseline on the STS sets, per model
    (``iw_gain_<m>_cluster_log10``) and over every model (``iw_gain_cluster_log10_min``), each with its standard
    error (``..._spread``).

    The data set is the one where the STS step's mean gain (rows of :func:`~.experiments.sts_experiment`) is
    smallest; there the gain is averaged over ``draws`` runs of the method, seeds ``cfg.seed ...`` (the STS
    step's runs among them, read back from ``cache_dir`` by :func:`~.sts.run_sts`), each a k-means
    initialisation; the standard error is their sd over the square root of ``draws``.
    """
    short = short_names(cfg)
    L = sts.groupby(["model", "method", "dataset"])["iw_log10"].mean().unstack("method")
    gain = L["cluster"] - L["baseline"]
    out = {}
    for name in cfg.model_specs:
        ds = gain.loc[name].idxmin()
        df = sts_pairs(cfg, ds)
        seeds = range(cfg.seed, cfg.seed + draws)
        rows = run_sts(
            *embed_pairs(models(name), df, cache_dir=cache_dir),
            df["score"],
            methods=["baseline", "cluster"],
            hparams=hparams[name],
            seeds=seeds,
            cache_dir=cache_dir,
        )
        base = next(r["iw_log10"] for r in rows if r["method"] == "baseline")
        runs = [r["iw_log10"] - base for r in rows if r["method"] == "cluster"]
        out[f"iw_gain_{short[name]}_cluster_log10"] = float(np.mean(runs))
        out[f"iw_gain_{short[name]}_cluster_log10_spread"] = _mean_se(runs)
    worst = min(cfg.model_specs, key=lambda name: out[f"iw_gain_{short[name]}_cluster_log10"])
    out["iw_gain_cluster_log10_min"] = out[f"iw_gain_{short[worst]}_cluster_log10"]
    out["iw_gain_cluster_log10_min_spread"] = out[f"iw_gain_{short[worst]}_cluster_log10_spread"]
    return out


def table1_spread_records(table1: pd.DataFrame, cfg) -> dict:
    """``table1_<m>_k<k>_spread``: :func:`difference_spread` of I(W) over seeds for each model and k (Table 1,
    rows of :func:`~.sts.zero_mean_isotropy`; the raw pool and k = 1 are deterministic: 0)."""
    short = short_names(cfg)
    return {
        f"table1_{short[name]}_k{int(k)}_spread": difference_spread(10.0 ** rows["iw_log10"])
        for (name, k), rows in table1.groupby(["model", "k"])
    }


def notebook_records(models, hparams: dict, seeds) -> dict:
    """The authors' notebook (BERT, STS-B dev, their 27/12), when BERT runs (else empty): its cluster-based
    Spearman, our mean over ``seeds`` (``notebook_bert_cluster_stsb_dev``), and the spread of (our mean) - (their
    one run: ``kmeans2`` unseeded), ``notebook_bert_cluster_stsb_dev_spread`` = sd sqrt(1/n + 1)."""
    if "bert-base-uncased" not in hparams:
        return {}
    name = "bert-base-uncased"
    runs = run_sts(
        *models.dev_tokens(name), models.dev["score"], methods=["cluster"], hparams=hparams[name], seeds=seeds
    )
    spearman = [r["spearman"] for r in runs]
    return {
        "notebook_bert_cluster_stsb_dev": np.mean(spearman),
        "notebook_bert_cluster_stsb_dev_spread": difference_spread(spearman, paper_runs=1),
    }


def classification_spread_records(clf: pd.DataFrame, cfg) -> dict:
    """``clf_<model>_<method>_<task>_spread``: the standard error of each score (x 100) on its evaluation set,
    binomial for an accuracy, (1 - r^2)/sqrt(n - 1) for CoLA's Matthews correlation r."""
    short = model_slug(cfg.clf_model)
    n_eval = {
        t: len(load_classification(t, cfg.clf_sizes, seed=sample_seed(cfg))[3]["eval"]) for t in clf["task"].unique()
    }
    out = {}
    for r in clf.itertuples():
        n, x = n_eval[r.task], r.score / 100
        se = (1 - x * x) / math.sqrt(n - 1) if r.task == "CoLA" else math.sqrt(max(x * (1 - x), 0.0) / n)
        out[f"clf_{short}_{r.method}_{r.task.lower().replace('-', '')}_spread"] = 100 * se
    return out


def table3_average_records(tables: dict | None = None) -> dict:
    """Arithmetic on the paper's Table 3: the mean of each row's six task scores
    (``table3_<method>_mean_of_tasks``), beside the row's printed Average."""
    t3 = (tables or project_tables())["rajaee2021"]
    out = {}
    for method in ("baseline", "global", "cluster"):
        cells = [
            n.value for n in t3.values() if n.id.startswith(f"T3/bert/{method}/") and not n.id.endswith("/average")
        ]
        if len(cells) != 6:
            raise ValueError(f"Table 3 row {method!r} has {len(cells)} task cells, expected 6")
        out[f"table3_{method}_mean_of_tasks"] = float(np.mean(cells))
    return out
