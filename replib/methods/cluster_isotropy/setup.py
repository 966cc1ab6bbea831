"""Set-up of the chapter: the methods, and the data and models (STS pairs, token matrices, GLUE classification
tasks) read through :mod:`replib.data`. The hyperparameters of the paper and the sizes per profile are in
:mod:`.config`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import load_glue, load_sick, load_sts, load_stsb
from ...embeddings import embed_sentences
from .transform import ClusterIsotropy

#: the STS data sets of Table 2 (the paper's order)
STS_DATASETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "SICK-R", "STS-B")

# ----------------------------------------------------------------------------------------- methods
METHODS = ("baseline", "global", "cluster")
#: Seed deck (Rajaei & Sheikhi 2020) variants: (n_clusters or None = the cluster setting, n_pc setting, clusterer)
DECK_VARIANTS = {
    "Mean": ("one", "none", "scipy"),
    "Mean+PCA": ("one", "global", "scipy"),
    "K-means+Mean": ("k", "none", "scipy"),
    "GMM+Mean+PCA": ("k", "cluster", "gmm"),
    "K-means+Mean+PCA": ("k", "cluster", "scipy"),
}


def make_transform(method: str, *, n_clusters: int, n_pc: int, global_pc: int, random_state=None):
    """The transform of a method: ``None`` for the baseline, else a :class:`ClusterIsotropy`.

    ``method`` is one of :data:`METHODS` (``baseline``, ``global``, ``cluster``) or a seed-deck variant
    name in :data:`DECK_VARIANTS` (``Mean`` = global zero-mean, ``Mean+PCA`` = global, ``K-means+Mean``,
    ``GMM+Mean+PCA``, ``K-means+Mean+PCA`` = cluster).
    """
    if method == "baseline":
        return None
    if method == "global":
        return ClusterIsotropy(1, global_pc, random_state=random_state)
    if method == "cluster":
        return ClusterIsotropy(n_clusters, n_pc, random_state=random_state)
    if method in DECK_VARIANTS:
        kk, pp, cl = DECK_VARIANTS[method]
        k = 1 if kk == "one" else n_clusters
        pc = {"none": 0, "global": global_pc, "cluster": n_pc}[pp]
        return ClusterIsotropy(k, pc, clusterer=cl, random_state=random_state)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS + tuple(DECK_VARIANTS)}")


# ----------------------------------------------------------------------------------------- pipeline
def load_sts_pairs(name: str, *, stsb_split: str = "test", max_pairs: int | None = None, seed: int = 0):
    """Pairs and gold scores of one STS data set through :mod:`replib.data`.

    ``name`` is one of :data:`STS_DATASETS` (``STS12``..``STS16`` = the whole test sets of each year with
    gold scores, ``SICK-R`` = SICK test relatedness, ``STS-B`` = the ``stsb_split`` split) or
    ``"STS-B-dev"``. ``max_pairs`` takes a seeded random sample. Returns a DataFrame with
    ``sentence1, sentence2, score``.
    """
    if name.startswith("STS1"):
        df = load_sts(name)
    elif name == "SICK-R":
        df = load_sick("test")
    elif name == "STS-B":
        df = load_stsb(stsb_split)
    elif name == "STS-B-dev":
        df = load_stsb("dev")
    else:
        raise ValueError(f"unknown STS data set {name!r}; expected one of {STS_DATASETS + ('STS-B-dev',)}")
    df = df[["sentence1", "sentence2", "score"]]
    if max_pairs is not None and len(df) > max_pairs:
        df = df.sample(n=max_pairs, random_state=seed).sort_index()
    return df.reset_index(drop=True)


def embed_pairs(model, df, *, layer: int = -1, cache_dir=None, progress: bool = True):
    """Token matrices of both sides of every pair, each sentence encoded alone, special tokens dropped.

    Unique sentences are embedded once (:func:`replib.embeddings.embed_sentences`, cached in
    ``cache_dir``) and mapped back to every occurrence, so the pool holds one row block per sentence
    occurrence, as in the authors' notebook.
    """
    texts = sorted(set(df["sentence1"]) | set(df["sentence2"]))
    emb = embed_sentences(model, texts, layer=layer, drop_special=True, cache_dir=cache_dir, progress=progress)
    where = {t: i for i, t in enumerate(texts)}
    return [emb.tokens[where[s]] for s in df["sentence1"]], [emb.tokens[where[s]] for s in df["sentence2"]]


def load_classification(task: str, sizes=None, seed: int = 0):
    """Texts, labels and split indices of a Table-3 task available through :mod:`replib.data`.

    ``sizes=(n_train, n_val, n_eval)`` draws seeded samples (the offline demonstration); ``None`` uses
    the full splits: train (minus a 10 % validation split for checkpoint selection) and the evaluation
    split (GLUE dev for SST-2, CoLA and RTE, MRPC test). WiC and BoolQ are not in :mod:`replib.data`.

    Returns
    -------
    texts_a, texts_b (or None), labels (int array), splits (dict of index arrays)
    """
    if task not in ("SST-2", "CoLA", "RTE", "MRPC"):
        raise ValueError(f"task {task!r} is not available offline (WiC and BoolQ are not in replib.data)")
    eval_split = "test" if task == "MRPC" else "dev"
    tr, ev = load_glue(task, "train"), load_glue(task, eval_split)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(tr))
    if sizes is None:
        n_val = len(tr) // 10
        tr_idx, val_idx, ev_idx = perm[n_val:], perm[:n_val], np.arange(len(ev))
    else:
        n_tr, n_val, n_ev = sizes
        if n_tr + n_val > len(tr):
            raise ValueError(f"{task} train has {len(tr)} rows < {n_tr + n_val}")
        tr_idx, val_idx = perm[:n_tr], perm[n_tr : n_tr + n_val]
        ev_idx = rng.permutation(len(ev))[: min(n_ev, len(ev))]
    parts = [tr.iloc[tr_idx], tr.iloc[val_idx], ev.iloc[ev_idx]]
    df = pd.concat(parts, ignore_index=True)
    n1, n2 = len(tr_idx), len(tr_idx) + len(val_idx)
    splits = {"train": np.arange(n1), "val": np.arange(n1, n2), "eval": np.arange(n2, len(df))}
    if task == "RTE":
        labels = (df["label"] == "entailment").astype(int).to_numpy()
    else:
        labels = df["label"].astype(int).to_numpy()
    if "sentence" in df:
        return df["sentence"].tolist(), None, labels, splits
    return df["sentence1"].tolist(), df["sentence2"].tolist(), labels, splits
