"""Generate notebooks/cluster_isotropy.ipynb and notebooks/cluster_isotropy.claims.yml.

Run from the repository root: ``python tools/notebooks/make_cluster_isotropy.py``. The notebook is written
without outputs; the claims file lists the paper's reported numbers (Rajaee & Pilehvar 2021, tables as
re-parsed in the project's reference dossier) and the property checks of each profile.
"""
from pathlib import Path

import nbformat
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[2]

BOOTSTRAP = '''# Colab bootstrap: on Google Colab this clones the book and installs replib (keeping Colab's own
# torch and transformers); anywhere else it does nothing.
import os, subprocess, sys
if "google.colab" in sys.modules and not os.path.isdir("/content/isotropy-replication-book"):
    subprocess.run(["git", "clone", "--depth", "1", "--branch", "main",
                    "https://github.com/replib-books/isotropy-replication-book",
                    "/content/isotropy-replication-book"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e",
                    "/content/isotropy-replication-book[colab]"], check=True)
if "google.colab" in sys.modules:
    sys.path.insert(0, "/content/isotropy-replication-book")
    os.chdir("/content/isotropy-replication-book/notebooks")'''

PARAMS = '''profile = None  # "smoke" | "offline" | "paper"; None = automatic ("paper" on Colab, else "offline")
seed = 0
cache_dir = None  # embedding cache (resumable); None = $REPLIB_CACHE_DIR/embeddings or ~/.cache/replib/embeddings'''


def write(path, cells):
    nb = new_notebook()
    out = []
    for kind, src, *tags in cells:
        c = new_markdown_cell(src.strip("\n")) if kind == "md" else new_code_cell(src.strip("\n"))
        if tags:
            c.metadata["tags"] = list(tags[0])
        out.append(c)
    nb.cells = out
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.validate(nb)
    nbformat.write(nb, str(path))


# ----------------------------------------------------------------------------------------- the paper's numbers [P]
SRC = "Rajaee & Pilehvar 2021 (ACL short), "
MODELS = {"gpt2": "GPT-2", "bert": "BERT-base", "roberta": "RoBERTa-base"}
DS = ["sts12", "sts13", "sts14", "sts15", "sts16", "sick", "stsb"]
TABLE2 = {  # Spearman x 100, average of 5 runs
    ("baseline", "gpt2"): [26.49, 30.25, 35.74, 41.25, 46.40, 45.05, 24.8],
    ("baseline", "bert"): [42.87, 59.21, 59.75, 62.85, 63.74, 58.69, 47.4],
    ("baseline", "roberta"): [33.09, 56.44, 46.76, 55.44, 60.88, 61.28, 56.0],
    ("global", "gpt2"): [51.42, 69.71, 55.91, 60.35, 62.12, 59.22, 55.7],
    ("global", "bert"): [54.62, 70.39, 60.34, 63.73, 69.37, 63.68, 65.5],
    ("global", "roberta"): [51.59, 73.57, 60.70, 66.72, 69.34, 65.82, 70.1],
    ("cluster", "gpt2"): [52.40, 72.71, 59.23, 62.19, 64.26, 59.51, 62.3],
    ("cluster", "bert"): [58.34, 75.65, 63.55, 64.37, 69.63, 63.75, 66.0],
    ("cluster", "roberta"): [54.87, 76.70, 64.18, 67.05, 69.28, 66.93, 71.4],
}
TABLE6 = {  # I(W)
    ("baseline", "gpt2"): [1.4e-178, 1.0e-170, 1.4e-172, 2.9e-177, 6.0e-174, 9.9e-140, 2.6e-105],
    ("baseline", "bert"): [3.1e-05, 1.9e-04, 2.6e-04, 3.7e-07, 2.8e-04, 4.2e-05, 1.1e-04],
    ("baseline", "roberta"): [3.1e-06, 3.1e-07, 3.8e-06, 3.8e-06, 3.5e-06, 3.7e-07, 2.9e-06],
    ("global", "gpt2"): [0.57, 0.40, 0.05, 0.12, 0.60, 0.57, 0.51],
    ("global", "bert"): [0.48, 0.41, 0.55, 0.72, 0.65, 0.63, 0.58],
    ("global", "roberta"): [0.67, 0.87, 0.87, 0.84, 0.85, 0.90, 0.88],
    ("cluster", "gpt2"): [0.71, 0.74, 0.47, 0.74, 0.74, 0.78, 0.70],
    ("cluster", "bert"): [0.68, 0.61, 0.77, 0.81, 0.75, 0.82, 0.73],
    ("cluster", "roberta"): [0.89, 0.91, 0.93, 0.92, 0.89, 0.94, 0.90],
}
TABLE1 = {  # I(W) after k-means + per-cluster zero-mean, STS-B dev; k=0 = baseline
    "gpt2": {0: 5.02e-174, 1: 2.49e-220, 3: 9.42e-66, 6: 1.40e-41, 9: 1.18e-41, 20: 4.06e-47},
    "bert": {0: 5.05e-05, 1: 0.010, 3: 0.040, 6: 0.125, 9: 0.131, 20: 0.262},
    "roberta": {0: 2.70e-06, 1: 0.015, 3: 0.290, 6: 0.453, 9: 0.545, 20: 0.603},
}
TABLE5 = {  # per-layer I(W), STS-B dev; layer 0 = embeddings
    "gpt2": [1.5e-02, 9.9e-24, 2.8e-23, 6.1e-26, 1.6e-27, 3.0e-30, 1.6e-32, 1.3e-37, 3.4e-45, 6.4e-55, 4.1e-32,
             1.8e-132, 5.0e-174],
    "bert": [4.6e-04, 9.9e-06, 6.3e-05, 8.8e-05, 9.2e-06, 4.8e-06, 3.9e-06, 1.1e-07, 1.0e-05, 2.5e-05, 6.9e-05,
             2.4e-07, 5.0e-05],
    "roberta": [9.1e-03, 2.7e-07, 8.7e-10, 4.2e-09, 5.4e-12, 2.4e-10, 3.1e-10, 1.3e-10, 1.4e-10, 1.3e-10, 6.7e-11,
                1.4e-10, 2.7e-06],
}
TABLE3 = {  # BERT; accuracy, CoLA Matthews
    "baseline": {"rte": 54.4, "cola": 38.0, "sst2": 80.1, "mrpc": 70.2, "wic": 60.0, "boolq": 64.7},
    "global": {"rte": 56.2, "cola": 38.8, "sst2": 80.2, "mrpc": 72.1, "wic": 60.7, "boolq": 64.9},
    "cluster": {"rte": 56.5, "cola": 40.7, "sst2": 82.5, "mrpc": 72.4, "wic": 61.0, "boolq": 66.4},
}
DECK = {  # seed 003 (Rajaei & Sheikhi, Aug 2020 slides), BERT-base: (Pearson, Spearman) on STS15 and STS-B [S]
    "Pre-trained": {"sts15": (56.7, 53.68), "stsb": (56.16, 54.09)},
    "Mean": {"sts15": (60.51, 56.81), "stsb": (60.08, 57.00)},
    "Mean+PCA": {"sts15": (55.81, 53.23), "stsb": (47.40, 46.67)},
    "K-means+Mean": {"sts15": (66.58, 62.38), "stsb": (68.43, 64.25)},
    "GMM+Mean+PCA": {"sts15": (69.18, 65.51), "stsb": (70.53, 67.32)},
    "K-means+Mean+PCA": {"sts15": (69.84, 66.33), "stsb": (70.75, 67.50)},
}
DECK_KEY = {"Pre-trained": "pretrained", "Mean": "mean", "Mean+PCA": "mean_pca", "K-means+Mean": "kmeans_mean",
            "GMM+Mean+PCA": "gmm_mean_pca", "K-means+Mean+PCA": "kmeans_mean_pca"}

NOGPU = "needs the pretrained GPT-2/BERT/RoBERTa weights (and a GPU for the full data); run profile 'paper'"


def paper_only(tol):
    return {"smoke": {"unverified": NOGPU}, "offline": {"unverified": NOGPU}, "paper": {"tolerance": tol}}


def iw_tol(v):
    return {"log10": 1.0} if v < 0.05 else {"abs": 0.15}


def prop(**by_profile):
    return {p: ({"property": v} if isinstance(v, dict) else {"unverified": v}) for p, v in by_profile.items()}


def xfail(check, reason):
    """A paper's threshold that is known not to hold in this profile: still checked, strict (CONTRIBUTING.md)."""
    return {"property": check, "expected_failure": reason}


def claims():
    cl = []
    add = cl.append
    # --- transform identities on the real token pool (every profile)
    for key, text, op in [
        ("transform_cluster_mean_max", "After the transform every cluster of the STS-B dev token pool is zero-mean "
                                       "(max |mean| over clusters and coordinates, relative to the pool's scale)", 1e-10),
        ("transform_orthogonality_max", "The output is orthogonal to every removed direction of its cluster "
                                        "(max |<x', u>| / max |x|)", 1e-10),
        ("global_vs_numpy_max_diff", "The global method (one cluster) equals a direct numpy all-but-the-top "
                                     "(centre, SVD, subtract top-D projections) on the real pool", 1e-8),
        ("determinism_max_diff", "Two fits with the same seed give identical output", 1e-300),
    ]:
        add({"key": key, "claim": text,
             "paper": {"value": None, "source": "definition (Rajaee & Pilehvar 2021 §3; Mu & Viswanath 2018)"},
             "checks": prop(smoke={"op": "lt", "value": op}, offline={"op": "lt", "value": op},
                            paper={"op": "lt", "value": op})})
    # --- generic property claims (all models of the profile)
    add({"key": "iw_gain_cluster_log10_min",
         "claim": "Cluster-based post-processing raises I(W) on every STS data set and model "
                  "(min over data sets of log10 I_cluster - log10 I_baseline)",
         "paper": {"value": 3.4, "source": SRC + "Table 6 [P]: smallest gain is BERT STS2016, 2.8e-4 -> 0.75 (3.4 orders) [I: arithmetic]"},
         "checks": prop(smoke={"op": "gt", "value": 0.0}, offline={"op": "gt", "value": 0.0},
                        paper={"op": "gt", "value": 2.0})})
    add({"key": "iw_cluster_minus_global_log10_min",
         "claim": "Cluster-based I(W) is at least the global method's on every STS data set and model "
                  "(min of log10 I_cluster - log10 I_global; a 0.05 tolerance in log10)",
         "paper": {"value": 0.0, "source": SRC + "Table 6 [P]: cluster > global in all 21 cells (closest: RoBERTa STS2016 0.89 vs 0.85)"},
         "checks": {**prop(smoke={"op": "gt", "value": -0.05}, paper={"op": "gt", "value": -0.05}),
                    "offline": xfail({"op": "gt", "value": -0.05},
                                     "on all-MiniLM-L6-v2 the paper's ordering holds on some data sets only: both "
                                     "methods bring MiniLM to the same order of I(W), and on some data sets the global "
                                     "method is ahead by a fraction of an order of magnitude")}})
    add({"key": "iw_gain_minilm_cluster_log10",
         "claim": "The cluster-based method raises I(W) by orders of magnitude on every data set (smallest gain of "
                  "log10 I_cluster - log10 I_baseline above 2, the paper-profile bound of iw_gain_cluster_log10_min)",
         "paper": {"value": 3.4, "source": SRC + "Table 6 [P]: smallest gain over GPT-2/BERT/RoBERTa [I: arithmetic]"},
         "checks": {**prop(smoke="tiny random models: covered by iw_gain_cluster_log10_min",
                           paper="the paper's models: iw_gain_cluster_log10_min checks the same bound"),
                    "offline": xfail({"op": "gt", "value": 2.0},
                                     "all-MiniLM-L6-v2's raw last layer already has I(W) between 10^-2 and 10^-0.3 "
                                     "depending on the data set (BERT: 10^-4 to 10^-7), so there are few orders of "
                                     "magnitude to gain; the direction of the effect is checked by "
                                     "iw_gain_cluster_log10_min, its size does not transfer")}})
    add({"key": "table1_iw_kmax_minus_k1_log10",
         "claim": "More clusters (then per-cluster zero-mean) give higher I(W) than one cluster (Table 1: k=20 vs k=1)",
         "paper": {"value": None, "source": SRC + "Table 1 [P]: BERT 0.010 -> 0.262, RoBERTa 0.015 -> 0.603, GPT-2 2.5e-220 -> 4.1e-47"},
         "checks": prop(smoke={"op": "gt", "value": 0.0},
                        offline="the paper's claim concerns GPT-2/BERT/RoBERTa; MiniLM: table1_minilm_kmax_minus_k1_log10",
                        paper={"op": "gt", "value": 0.0})})
    add({"key": "table1_minilm_kmax_minus_k1_log10",
         "claim": "Per-cluster zero-mean with k=20 raises I(W) by at least an order of magnitude over global zero-mean "
                  "(the paper: 1.4 orders for BERT, 1.6 for RoBERTa)",
         "paper": {"value": 1.42, "source": SRC + "Table 1 [P]: BERT 0.010 (k=1) -> 0.262 (k=20) [I: log10 ratio]"},
         "checks": {**prop(smoke="tiny random models: covered by table1_iw_kmax_minus_k1_log10",
                           paper="the paper's models: table1_iw_kmax_minus_k1_log10 and the Table 1 values"),
                    "offline": xfail({"op": "gt", "value": 1.0},
                                     "all-MiniLM-L6-v2's space is not made of anisotropic clusters around distant means "
                                     "as BERT's is: per-cluster means leave I(W) of the same order as the global mean "
                                     "(and it moves non-monotonically with k)")}})
    add({"key": "sts_cluster_minus_baseline_mean",
         "claim": "The cluster-based method raises STS Spearman x 100 on average over models and data sets",
         "paper": {"value": 16.7, "source": SRC + "Table 2 [P]: mean over models and data sets of cluster - baseline = +16.7 [I: arithmetic]"},
         "checks": prop(smoke="tiny random models: STS scores carry no meaning",
                        offline="the paper's claim concerns GPT-2/BERT/RoBERTa; MiniLM's effect is sts_delta_minilm_cluster",
                        paper={"op": "gt", "value": 5.0})})
    for method, txt in (("cluster", "cluster-based"), ("global", "global (all-but-the-top)")):
        add({"key": f"sts_delta_minilm_{method}",
             "claim": f"The {txt} method improves STS: mean change of Spearman x 100 over the seven data sets is "
                      "positive (the paper: large gains on all three of its models)",
             "paper": {"value": 16.7 if method == "cluster" else 14.5,
                       "source": SRC + "Table 2 [P]: mean gain over GPT-2/BERT/RoBERTa [I: arithmetic]"},
             "checks": {**prop(smoke="tiny random models: STS scores carry no meaning",
                               paper="the paper's models: sts_cluster_minus_baseline_mean and the Table 2 values"),
                        "offline": xfail({"op": "gt", "value": 0.0},
                                         "all-MiniLM-L6-v2 was trained contrastively on mean-pooled tokens for "
                                         "sentence similarity; its last layer is already far more isotropic than "
                                         "BERT's (I(W) ~ 0.1 vs 1e-5) and the STS-B dev grid search picks the "
                                         "smallest settings, so post-processing removes signal rather than a "
                                         "frequency/position bias: STS drops by a few points")}})
    add({"key": "clf_fresh_init", "claim": "Every classification condition trains a freshly initialised classifier "
                                           "(same seeded initial weights), not the baseline's trained one",
         "paper": {"value": None, "source": "authors' notebook reused the trained Keras MLP (upstream-methods §2.5 pitfall 6)"},
         "checks": prop(smoke={"op": "true"}, offline={"op": "true"}, paper={"op": "true"})})
    add({"key": "clf_sst2_baseline_minus_majority",
         "claim": "The MLP on flattened token features beats the majority class on SST-2 (the pipeline learns)",
         "paper": {"value": None, "source": SRC + "Table 3 [P]: SST-2 80.1 (BERT) vs ~50 majority"},
         "checks": prop(smoke="tiny random model and 120 training sentences: nothing to learn; code path only",
                        offline={"op": "gt", "value": 5.0}, paper={"op": "gt", "value": 20.0})})
    # --- paper numbers
    for (method, m), vals in TABLE2.items():
        for ds, v in zip(DS, vals):
            add({"key": f"sts_{m}_{method}_{ds}", "claim": f"{MODELS[m]} {method} STS Spearman x 100 on {ds}",
                 "paper": {"value": v, "source": SRC + "Table 2 [P]" + (" (STS-B split not stated; we use test)" if ds == "stsb" else "")},
                 "checks": paper_only({"abs": 2.0})})
    for (method, m), vals in TABLE6.items():
        for ds, v in zip(DS, vals):
            add({"key": f"iw_{m}_{method}_{ds}", "claim": f"{MODELS[m]} {method} I(W) of the processed token pool of {ds}",
                 "paper": {"value": v, "source": SRC + "Table 6 [P]"}, "checks": paper_only(iw_tol(v))})
    for m, row in TABLE1.items():
        for k, v in row.items():
            add({"key": f"table1_{m}_k{k}", "claim": f"{MODELS[m]} I(W) on STS-B dev " +
                 ("before processing" if k == 0 else f"after k-means (k={k}) and per-cluster zero-mean"),
                 "paper": {"value": v, "source": SRC + "Table 1 [P], average of 5 runs"}, "checks": paper_only(iw_tol(v))})
    for m, vals in TABLE5.items():
        for layer, v in enumerate(vals):
            note = " (extraction reads 4.1E-32, breaking the trend: verify against the PDF)" if (m, layer) == ("gpt2", 10) else ""
            add({"key": f"layer_{m}_{layer}", "claim": f"{MODELS[m]} I(W) of layer {layer} on STS-B dev",
                 "paper": {"value": v, "source": SRC + "Table 5 [P]" + note}, "checks": paper_only({"log10": 1.0})})
    for method, row in TABLE3.items():
        for task, v in row.items():
            if task in ("wic", "boolq"):
                chk = {p: {"unverified": "WiC and BoolQ (SuperGLUE) are not in replib.data's registry"} for p in
                       ("smoke", "offline", "paper")}
            else:
                chk = paper_only({"abs": 3.0})
            add({"key": f"clf_bert_{method}_{task}", "claim": f"BERT {method}: {task.upper()} "
                 + ("Matthews correlation x 100" if task == "cola" else "accuracy"),
                 "paper": {"value": v, "source": SRC + "Table 3 [P]"}, "checks": chk})
    add({"key": "notebook_bert_cluster_stsb_dev", "claim": "BERT cluster-based (27/12) Spearman x 100 on STS-B dev",
         "paper": {"value": 74.846, "source": "authors' notebook, saved cell output [P]"}, "checks": paper_only({"abs": 2.0})})
    for variant, row in DECK.items():
        for ds, (pe, sp) in row.items():
            for metric, v in (("pearson", pe), ("spearman", sp)):
                add({"key": f"deck_bert_{DECK_KEY[variant]}_{ds}_{metric}",
                     "claim": f"Seed deck: BERT {variant} {metric} x 100 on {ds}",
                     "paper": {"value": v, "source": "seed 003 slides (Rajaei & Sheikhi, Aug 2020) [S]: an earlier version of "
                                                    "the method, not the published paper"},
                     "checks": paper_only({"abs": 3.0})})
    return cl


def write_claims(path):
    doc = {"chapter": "cluster_isotropy",
           "title": "Cluster-based isotropy enhancement (Rajaee & Pilehvar 2021)",
           "timeout": {"smoke": 600, "offline": 3600, "paper": 21600},
           "claims": claims()}
    text = ("# Generated by tools/notebooks/make_cluster_isotropy.py: edit the generator, not this file.\n"
            "# Paper values: Rajaee & Pilehvar 2021 (ACL short) Tables 1-6 and App. B [P]; seed deck 003 [S].\n")
    Path(path).write_text(text + yaml.safe_dump(doc, sort_keys=False, width=120, allow_unicode=True))


# ----------------------------------------------------------------------------------------- notebook
CELLS = [
("md", r"""
# Cluster-based isotropy enhancement

*Reproducing* {cite}`rajaee2021cluster` *(with the global baseline of* {cite}`mu2018allbutthetop`*).*

Contextual token embeddings are anisotropic: they crowd into a narrow cone, and the cone is dominated by a
few directions that encode frequency and position rather than meaning. Mu & Viswanath's *all-but-the-top*
removes the mean and the top principal directions of the whole space. Rajaee & Pilehvar observe that the
space is made of **clusters** with their own dominant directions, and apply the same idea per cluster:
k-means, make each cluster zero-mean, remove each cluster's top principal directions. They report that
this makes the partition-function isotropy $I(W)$ of BERT, RoBERTa and GPT-2 approach 1 and raises STS
Spearman correlations by up to 30 points. This chapter implements the method as a reusable transform,
re-runs the paper's isotropy and STS experiments, the seed deck's ablations and the classification
protocol, and reports honestly what happens on the model that runs here (all-MiniLM-L6-v2, trained for
sentence similarity). Every number below was computed when this page was built and is checked by the
runner against the paper or a property (see the [validation page](../book/validation.md)).
"""),
("code", BOOTSTRAP),
("code", PARAMS, ["parameters"]),
("code", r"""
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from replib import record
from replib._io import cache_root
from replib.metrics import partition_isotropy
from replib.methods import cluster_isotropy as ci
from replib.plotting import setup
from replib.profiles import resolve_profile

profile = resolve_profile(profile)
setup()
cfg = ci.config_for(profile)
if cache_dir is None:
    cache_dir = cache_root("embeddings")
SHORT = {"gpt2": "gpt2", "bert-base-uncased": "bert", "roberta-base": "roberta", "all-MiniLM-L6-v2": "minilm",
         "tiny-bert": "tinybert", "tiny-gpt2": "tinygpt2"}
DSKEY = {"STS12": "sts12", "STS13": "sts13", "STS14": "sts14", "STS15": "sts15", "STS16": "sts16",
         "SICK-R": "sick", "STS-B": "stsb"}
SEEDS = [seed + i for i in range(cfg["seeds"])]
warnings.filterwarnings("ignore", category=ci.SmallClusterWarning)  # counted in n_removed_ where it matters
print("profile:", profile, "| models:", cfg["models"], "| data sets:", cfg["datasets"], "| seeds:", SEEDS)
"""),
("md", r"""
## The transform

For token vectors $x$ with k-means cluster $c$, mean $\mu_c$ and principal directions
$u_{c,1}, u_{c,2},\dots$ of the $n_c$ members (by decreasing variance),

$$x' = (x-\mu_c) - \sum_{j=1}^{m_c} \big((x-\mu_c)^\top u_{c,j}\big)\,u_{c,j},\qquad m_c=\min(n_{pc},\,n_c-1).$$

`ClusterIsotropy(n_clusters, n_pc)` is a scikit-learn style transformer. Its default clustering is the
authors' `scipy.cluster.vq.kmeans2(minit="points", iter=10)`, seeded (theirs was not: the paper averages
five runs); `clusterer="sklearn"` and `"gmm"` are alternatives. Empty clusters are dropped and clusters
with $n_{pc}$ or fewer members lose only $n_c-1$ directions, with a warning and the counts in
`n_removed_` (the authors' notebook crashed in both cases). With one cluster it is all-but-the-top.

The isotropy measure is the partition function ratio of Arora et al. as used by Mu & Viswanath,
$I(W)=\min_u F(u)/\max_u F(u)$ with $F(u)=\sum_i \exp(u^\top w_i)$ over the eigenvectors $u$ of $W^\top W$
(`replib.metrics.partition_isotropy`, float64, log space, the signs `numpy.linalg.eigh` returns). It spans
hundreds of orders of magnitude, so we compare in $\log_{10}$.

First, the identities on a real token pool (the first model's STS-B dev tokens): largest cluster mean
after the transform {glue:text}`transform_cluster_mean_max:.1e`, largest component along a removed
direction {glue:text}`transform_orthogonality_max:.1e` (both relative to the largest coordinate), and
the one-cluster transform against a direct numpy all-but-the-top, {glue:text}`global_vs_numpy_max_diff:.1e`.
"""),
("code", r"""
model_name = cfg["models"][0]
lm = ci.load_model_for(model_name, seed=seed)
dev = ci.load_sts_pairs("STS-B-dev", max_pairs=cfg["max_pairs"], seed=seed)
dev_tokens = ci.embed_pairs(lm, dev, cache_dir=cache_dir)
pool, lengths = ci.token_pool(dev_tokens[0] + dev_tokens[1])
scale = np.abs(pool).max()
k_demo, pc_demo = (6, 4) if profile == "smoke" else (27, 12)
t = ci.ClusterIsotropy(k_demo, pc_demo, random_state=seed)
out = t.fit_transform(pool)
record("transform_cluster_mean_max",
       max(np.abs(out[t.labels_ == c].mean(0)).max() for c in np.flatnonzero(t.n_members_)) / scale)
record("transform_orthogonality_max",
       max(np.abs(out[t.labels_ == c] @ t.components_[c].T).max() for c in np.flatnonzero(t.n_members_)) / scale)
Xc = pool - pool.mean(0)
U = np.linalg.svd(Xc, full_matrices=False)[2][:pc_demo]
record("global_vs_numpy_max_diff", np.abs(ci.all_but_the_top(pool, pc_demo) - (Xc - Xc @ U.T @ U)).max() / scale)
again = ci.ClusterIsotropy(k_demo, pc_demo, random_state=seed).fit_transform(pool)
record("determinism_max_diff", float(np.abs(again - out).max()))
print(f"{len(pool)} tokens x {pool.shape[1]} dims; cluster sizes {np.sort(t.n_members_)[::-1].tolist()}")
"""),
("md", r"""
A PCA view of the same tokens, coloured by cluster, before and after the transform: the raw space is a
few elongated clusters sharing dominant directions; afterwards every cluster is centred at the origin and
has lost its own top directions.
"""),
("code", r"""
rng = np.random.default_rng(seed)
idx = rng.choice(len(pool), size=min(3000, len(pool)), replace=False)
fig, axes = plt.subplots(1, 2, figsize=(12, 5))
for ax, (title, Z) in zip(axes, [("before", pool), ("after (cluster-based)", out)]):
    Zc = Z[idx] - Z[idx].mean(0)
    P = Zc @ np.linalg.svd(Zc, full_matrices=False)[2][:2].T
    ax.scatter(P[:, 0], P[:, 1], c=t.labels_[idx], cmap="tab20", s=4, alpha=0.6)
    ax.set_title(f"{model_name}, STS-B dev tokens: {title}")
    ax.set_xlabel("PC 1"); ax.set_ylabel("PC 2")
plt.tight_layout()
"""),
("md", r"""
## Hyperparameters

The paper chose the number of clusters and of removed PCs on STS-B dev from $[5, 30]$ (App. B.2) and
reports 27/12 (BERT, RoBERTa) and 10/30 (GPT-2), with 15/25/30 PCs for the global method. The
`paper` profile uses those values. For MiniLM (`offline`) we run the same search on a grid over
$[5,30]$ and keep the best dev Spearman; the grid is shown below. The chosen cluster-based setting is
{glue:text}`hparam_n_clusters` clusters and {glue:text}`hparam_n_pc` PCs, the global method
{glue:text}`hparam_global_pc` PCs.
"""),
("code", r"""
hparams, grids = {}, {}
for name in cfg["models"]:
    if cfg["tune"]:
        lm_t = lm if name == model_name else ci.load_model_for(name, seed=seed)
        tok = dev_tokens if name == model_name else ci.embed_pairs(lm_t, dev, cache_dir=cache_dir)
        grid = ci.tune_hyperparameters(*tok, dev["score"], ks=(1,) + tuple(cfg["grid_k"]), pcs=cfg["grid_pc"],
                                       seeds=SEEDS[:cfg["tune_seeds"]])
        mean = grid.groupby(["n_clusters", "n_pc"])["spearman"].mean()
        best_c = mean.drop(1, level="n_clusters").idxmax()
        best_g = mean.loc[1].idxmax()
        hparams[name] = {"n_clusters": int(best_c[0]), "n_pc": int(best_c[1]), "global_pc": int(best_g)}
        grids[name] = mean.unstack()
    else:
        hparams[name] = dict(cfg["hparams"][name])
record("hparam_n_clusters", hparams[model_name]["n_clusters"])
record("hparam_n_pc", hparams[model_name]["n_pc"])
record("hparam_global_pc", hparams[model_name]["global_pc"])
for name, g in grids.items():
    plt.figure(figsize=(6, 3.8))
    sns.heatmap(g, annot=True, fmt=".1f", cmap="viridis")
    plt.title(f"{name}: STS-B dev Spearman x 100 (row n_clusters=1: global)")
pd.DataFrame(hparams).T
"""),
("md", r"""
## Isotropy per layer and after clustering (Tables 5 and 1)

Table 5 of the paper gives $I(W)$ of every layer on STS-B dev; Table 1 the last layer after k-means with
$k$ clusters and per-cluster zero-mean only (no PCs removed), averaged over five runs. More clusters give a
more isotropic space: from one to {glue:text}`table1_kmax` clusters, $\log_{10} I(W)$ changes by
{glue:text}`table1_iw_kmax_minus_k1_log10:.2f` on our first model.
"""),
("code", r"""
layer_rows, t1_rows = [], []
for name in cfg["models"]:
    lm_m = lm if name == model_name else ci.load_model_for(name, seed=seed)
    sents = sorted(set(dev["sentence1"]) | set(dev["sentence2"]))
    if cfg["layer_sample"]:
        sents = sorted(np.random.default_rng(seed).choice(sents, size=min(cfg["layer_sample"], len(sents)),
                                                          replace=False).tolist())
    for layer, lg in enumerate(ci.layer_isotropy(lm_m, sents, cache_dir=cache_dir)):
        layer_rows.append({"model": name, "layer": layer, "log10 I(W)": lg})
        record(f"layer_{SHORT[name]}_{layer}", 10.0 ** lg)
    tok = dev_tokens if name == model_name else ci.embed_pairs(lm_m, dev, cache_dir=cache_dir)
    p, _ = ci.token_pool(tok[0] + tok[1])
    for r in ci.zero_mean_isotropy(p, cfg["table1_ks"], SEEDS):
        t1_rows.append({"model": name, **r})
layers = pd.DataFrame(layer_rows)
table1 = pd.DataFrame(t1_rows).groupby(["model", "k"])["iw_log10"].mean().unstack()
for name in cfg["models"]:
    for k in table1.columns:
        record(f"table1_{SHORT[name]}_k{k}", float(np.mean(10.0 ** pd.DataFrame(t1_rows).query(
            "model == @name and k == @k")["iw_log10"])))
kmax = max(cfg["table1_ks"])
record("table1_kmax", kmax)
record("table1_iw_kmax_minus_k1_log10", table1.loc[model_name, kmax] - table1.loc[model_name, 1])
for name in cfg["models"]:
    record(f"table1_{SHORT[name]}_kmax_minus_k1_log10", table1.loc[name, kmax] - table1.loc[name, 1])
ax = sns.lineplot(data=layers, x="layer", y="log10 I(W)", hue="model", marker="o")
ax.set_title("Isotropy per layer, STS-B dev tokens (0 = embeddings)")
table1.rename(columns={0: "raw"}).round(2)
"""),
("md", r"""
## STS (Table 2 and Table 6)

The protocol of App. B.1: last layer, each sentence encoded alone, special tokens dropped, the token pool
of each data set clustered on its own, sentence vector = mean of the processed token vectors, cosine,
Spearman $\times 100$. STS 2012-2016 are the whole test sets with gold scores, SICK-R its test set, and
STS-B its test split (the paper does not say which split; it tuned on dev). The cluster-based method runs
once per seed ({glue:text}`n_seeds` seeds); the baseline and the global method are deterministic.
"""),
("code", r"""
rows = []
for name in cfg["models"]:
    lm_m = lm if name == model_name else ci.load_model_for(name, seed=seed)
    for ds in cfg["datasets"]:
        df = ci.load_sts_pairs(ds, stsb_split=cfg["stsb_split"], max_pairs=cfg["max_pairs"], seed=seed)
        tok = ci.embed_pairs(lm_m, df, cache_dir=cache_dir)
        for r in ci.run_sts(*tok, df["score"], methods=ci.METHODS, hparams=hparams[name], seeds=SEEDS):
            rows.append({"model": name, "dataset": ds, **r})
    if name == "bert-base-uncased":  # the authors' notebook: BERT, STS-B dev, 27/12
        nb = ci.run_sts(*ci.embed_pairs(lm_m, dev, cache_dir=cache_dir), dev["score"], methods=["cluster"],
                        hparams=hparams[name], seeds=SEEDS)
        record("notebook_bert_cluster_stsb_dev", np.mean([r["spearman"] for r in nb]))
sts = pd.DataFrame(rows)
record("n_seeds", len(SEEDS))
summary = sts.groupby(["model", "method", "dataset"]).agg(spearman=("spearman", "mean"), sd=("spearman", "std"),
                                                          iw=("iw", "mean"), iw_log10=("iw_log10", "mean"))
for (name, method, ds), r in summary.iterrows():
    record(f"sts_{SHORT[name]}_{method}_{DSKEY[ds]}", r["spearman"])
    record(f"iw_{SHORT[name]}_{method}_{DSKEY[ds]}", r["iw"])
L = summary["iw_log10"].unstack("method")
S = summary["spearman"].unstack("method")
record("iw_gain_cluster_log10_min", (L["cluster"] - L["baseline"]).min())
record("iw_cluster_minus_global_log10_min", (L["cluster"] - L["global"]).min())
record("sts_cluster_minus_baseline_mean", (S["cluster"] - S["baseline"]).mean())
record("sts_global_minus_baseline_mean", (S["global"] - S["baseline"]).mean())
record("sts_cluster_sd_max", float(summary.xs("cluster", level="method")["sd"].max()))
for name in cfg["models"]:
    for method in ("cluster", "global"):
        record(f"sts_delta_{SHORT[name]}_{method}", (S.loc[name][method] - S.loc[name]["baseline"]).mean())
    record(f"iw_gain_{SHORT[name]}_cluster_log10", (L.loc[name]["cluster"] - L.loc[name]["baseline"]).min())
S.round(2)
"""),
("code", r"""
g = sns.catplot(data=sts, x="dataset", y="spearman", hue="method", col="model", kind="bar", errorbar="sd",
                height=3.6, aspect=1.6, col_wrap=min(3, len(cfg["models"])))
g.set_axis_labels("", "Spearman x 100"); g.fig.suptitle("STS: baseline, global and cluster-based", y=1.03)
plt.figure(figsize=(9, 3.6))
ax = sns.barplot(data=sts, x="dataset", y="iw_log10", hue="method", errorbar="sd")
ax.set_ylabel("log10 I(W)"); ax.set_title("Isotropy of the processed token pool per data set (Table 6)")
L.round(2)
"""),
("md", r"""
On our first model, the cluster-based method changes Spearman by {glue:text}`sts_cluster_minus_baseline_mean:.2f`
points on average over the data sets (the global method by {glue:text}`sts_global_minus_baseline_mean:.2f`),
while raising $\log_{10} I(W)$ by at least {glue:text}`iw_gain_cluster_log10_min:.2f`; cluster-based $I(W)$
minus global $I(W)$ in $\log_{10}$ is at least {glue:text}`iw_cluster_minus_global_log10_min:.3f`. The
largest standard deviation over seeds is {glue:text}`sts_cluster_sd_max:.2f` points. In the paper (BERT,
RoBERTa, GPT-2) the gains are large: +17 points on average, because their raw token spaces are extremely
anisotropic ($I(W)$ down to $10^{-178}$). all-MiniLM-L6-v2 was trained with a contrastive objective on mean
pooled tokens for exactly this task: its last layer is already far more isotropic than BERT's and its
cosine already ranks STS pairs well, so there is little to repair and removing directions deletes some
signal.
"""),
("md", r"""
## The seed deck's ablations

An earlier (2020) slide deck of the same authors' method compared variants on STS 2015 and STS-B with
Pearson and Spearman: global zero-mean ("Mean"), global zero-mean and PC removal ("Mean+PCA"), per-cluster
zero-mean ("K-means+Mean"), and per-cluster PC removal with a Gaussian mixture or k-means. We run the same
variants (our hyperparameters; the deck's are not stated).
"""),
("code", r"""
deck_rows = []
deck_model = cfg["deck_model"]
lm_d = lm if deck_model == model_name else ci.load_model_for(deck_model, seed=seed)
for ds in ("STS15", "STS-B"):
    df = ci.load_sts_pairs(ds, stsb_split=cfg["stsb_split"], max_pairs=cfg["max_pairs"], seed=seed)
    tok = ci.embed_pairs(lm_d, df, cache_dir=cache_dir)
    for r in ci.run_sts(*tok, df["score"], methods=["baseline"] + list(ci.DECK_VARIANTS),
                        hparams=hparams[deck_model], seeds=SEEDS[:1] if profile != "paper" else SEEDS):
        deck_rows.append({"dataset": ds, **r})
deck = pd.DataFrame(deck_rows).replace({"method": {"baseline": "Pre-trained"}})
deck_tab = deck.groupby(["method", "dataset"])[["pearson", "spearman", "iw_log10"]].mean().unstack("dataset")
VKEY = {"Pre-trained": "pretrained", "Mean": "mean", "Mean+PCA": "mean_pca", "K-means+Mean": "kmeans_mean",
        "GMM+Mean+PCA": "gmm_mean_pca", "K-means+Mean+PCA": "kmeans_mean_pca"}
for (method, ds), r in deck.groupby(["method", "dataset"])[["pearson", "spearman"]].mean().iterrows():
    for metric in ("pearson", "spearman"):
        record(f"deck_{SHORT[deck_model]}_{VKEY[method]}_{DSKEY[ds]}_{metric}", r[metric])
deck_iw = deck.groupby("method")["iw_log10"].mean()
record("deck_kmeans_pca_minus_mean_pca_iw_log10", deck_iw["K-means+Mean+PCA"] - deck_iw["Mean+PCA"])
deck_tab.loc[list(VKEY)].round(2)
"""),
("md", r"""
## Classification (Table 3)

The authors' classifier: the last-layer token matrix of each example (64 tokens, padding included) is
flattened and fed to Dense(100, ReLU) and a sigmoid output, trained with Adam (lr $3\cdot10^{-5}$), binary
cross-entropy, 10 epochs, batch 32, keeping the epoch with the best validation score. The post-processing
is fit on all token rows of all examples at once, as the authors did on train+dev. Their notebook kept
training the *same* classifier object for the post-processed features; here every condition starts from the
same freshly initialised weights (checked: {glue:text}`clf_fresh_init`). In `offline` this is a small
demonstration with MiniLM on {glue:text}`clf_n_train` training examples per task, not a reproduction; the
`paper` profile runs BERT on the full RTE, CoLA, SST-2 and MRPC data that `replib.data` holds (WiC and
BoolQ are not there). On SST-2 the baseline classifier is {glue:text}`clf_sst2_baseline_minus_majority:.1f`
points above the majority class.
"""),
("code", r"""
clf_rows = []
clf_model = cfg["clf_model"]
lm_c = lm if clf_model == model_name else ci.load_model_for(clf_model, seed=seed)
hp = hparams[clf_model]
fresh = []
for task in cfg["clf_tasks"]:
    a, b, y, splits = ci.load_classification(task, cfg["clf_sizes"], seed=seed)
    feats = ci.pair_token_features(lm_c, a, b, max_length=cfg["clf_max_length"])
    transforms = {m: ci.make_transform(m, **hp, random_state=seed) for m in ci.METHODS}
    res = ci.compare_classification(feats, y, splits, task, transforms, epochs=cfg["clf_epochs"], lr=cfg["clf_lr"],
                                    seed=seed)
    fresh.append(res.fresh_init)
    for m, v in res.metrics.items():
        clf_rows.append({"task": task, "method": m, "score": v, "log10 I(W)": res.isotropy_log10[m]})
        record(f"clf_{SHORT[clf_model]}_{m}_{task.lower().replace('-', '')}", v)
    if task == "SST-2":
        majority = 100 * max(np.mean(y[splits["eval"]]), 1 - np.mean(y[splits["eval"]]))
        record("clf_sst2_baseline_minus_majority", res.metrics["baseline"] - majority)
record("clf_fresh_init", all(fresh))
record("clf_n_train", len(splits["train"]))
clf = pd.DataFrame(clf_rows)
sns.catplot(data=clf, x="task", y="score", hue="method", kind="bar", height=3.5, aspect=1.8)
clf.pivot(index="method", columns="task", values="score").round(1)
"""),
("md", r"""
## Deviations from the paper

- **Model and scale.** Without the pretrained GPT-2/BERT/RoBERTa weights the paper's numbers cannot be
  computed here; the `paper` profile holds that code path (registry models, full data, the paper's
  hyperparameters, five seeds) and its claims are `unverified` in the other profiles. The `offline` profile
  runs all-MiniLM-L6-v2, a model fine-tuned for sentence similarity, so it tests whether the method's
  effects carry over, not the paper's values.
- **Isotropy sign convention.** $I(W)$ uses the eigenvector signs of `numpy.linalg.eigh`; the authors used
  `numpy.linalg.eig`, whose signs are arbitrary too. Values are compared in orders of magnitude where tiny.
- **Seeds.** The authors' k-means was unseeded; we seed it and average over seeds.
- **STS data.** STS 2012-2016 are SentEval's tokenised, lower-cased copies; STS-B's split in Table 2 is
  not stated (we use test). The offline hyperparameter grid is coarser than $[5,30]$ in steps of one.
- **Classification.** Fresh classifier per condition (bug fix); WiC and BoolQ are not available; the
  offline run is a small-sample demonstration with MiniLM (768-d in the paper, 384-d here), on re-splits of
  the GLUE data that the mirror holds.
- **all-MiniLM-L6-v2 offline: what carries over and what does not.** The transform's identities hold
  exactly and the cluster-based method raises $I(W)$ on every data set (smallest gain
  {glue:text}`iw_gain_cluster_log10_min:.2f` in $\log_{10}$), but not by orders of magnitude: MiniLM's raw
  last layer is already far from BERT's degenerate space. Cluster-based $I(W)$ is not always above the
  global method's ({glue:text}`iw_cluster_minus_global_log10_min:.2f` in $\log_{10}$ at worst), and STS gets
  worse, not better, on average over the seven data sets. These paper claims are kept in the claims file
  with the paper's thresholds and marked as *expected failures* offline: they are still checked, show as
  "deviates" with the reason on the validation page, and turn red if they ever hold, so this text has to
  be revisited.
- **Seed deck.** Its numbers come from an earlier version of the method with unstated settings; they are
  checked only in the `paper` profile, with a wider tolerance, and tagged [S].
"""),
]


if __name__ == "__main__":
    write(ROOT / "notebooks" / "cluster_isotropy.ipynb", CELLS)
    write_claims(ROOT / "notebooks" / "cluster_isotropy.claims.yml")
