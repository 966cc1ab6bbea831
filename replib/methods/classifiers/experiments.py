"""The chapter's experiments (Sec. 3 and App. A of :cite:`mickus2024isotropy`) assembled from a
:class:`~replib.config.ChapterConfig`: which set-ups run, with which training sizes, and the numbers each
one contributes to the chapter."""

from __future__ import annotations

import os
import time

import pandas as pd

from ...papers import project_table
from .setups import (
    glue_setup,
    load_word2vec_bin,
    multilabel_setup,
    polarity_setup,
    snli_setup,
    supersense_setup,
    wordnet_pos_setup,
)
from .training import TrainConfig, count_parameters, run_seeds, summarize_runs

#: the per-setup numbers the chapter records for the sentence-level setups (i) and (ii)
SENTENCE_KEYS = (
    "pearson",
    "spearman",
    "silhouette_gain",
    "isoscore_drop",
    "accuracy_end",
    "seed_std_max",
    "isoscore_start",
    "isoscore_end",
    "silhouette_start",
    "silhouette_end",
    "silhouette_sample_err",
)
#: ... and for the word-level setups on GloVe with WordNet labels
WORD_KEYS = (
    "n_words",
    "n_labels",
    "n_clusters",
    "pearson",
    "spearman",
    "silhouette_gain",
    "isoscore_drop",
    "isoscore_change",
    "isoscore_start",
    "accuracy_end",
)
_MICKUS = project_table("mickus2024")
#: the paper's items and parameters of setups (i) and (ii) (Table 1 [P]; rows ``T1/<setup>/n_items`` and
#: ``T1/<setup>/n_params`` of ``data/papers/mickus2024.csv``)
PAPER_TABLE1 = {
    k: tuple(int(_MICKUS[f"T1/{k}/{q}"].value) for q in ("n_items", "n_params")) for k in ("polarity", "snli")
}
_POS_TAGS = ["NOUN", "VERB", "ADJ", "ADV"]


def train_config(cfg, kind: str) -> TrainConfig:
    """The :class:`TrainConfig` of Sec. 3's sentence-level set-ups (``kind="main"``), of its word-level ones
    (``"words"``: the same, with the silhouette on every word, whose 50-d GloVe vectors make it cheap; a sample
    of 4,000 of the 11,462 words of the parts-of-speech stand-in moved it by 0.015) or of App. A (``"glue"``)."""
    if kind not in ("main", "words", "glue"):
        raise ValueError(f"kind must be 'main', 'words' or 'glue'; got {kind!r}")
    if kind == "words":
        return TrainConfig(**{**cfg["main"], "silhouette_sample": None})
    return TrainConfig(**cfg[kind])


def train_setups(setups: dict, config: TrainConfig, *, cache_dir=None, device=None, progress: bool = True):
    """:func:`run_seeds` and :func:`summarize_runs` of every set-up (name -> :class:`ClassifierSetup`).

    Returns
    -------
    runs : dict name -> DataFrame, summaries : dict name -> dict
    """
    runs, summaries = {}, {}
    for name, setup in setups.items():
        t0 = time.time()
        runs[name] = run_seeds(setup, config, cache_dir=cache_dir, device=device, progress=progress)
        summaries[name] = summarize_runs(runs[name])
        shown = ", ".join(f"{k} {v:.4g}" for k, v in summaries[name].items() if v == v)  # nan: not measured (one seed)
        print(f"{name}: {time.time() - t0:.0f} s; {shown}")
    return runs, summaries


# ----------------------------------------------------------------------------- sentence level (i), (ii)
def sentence_setups(cfg, cache_dir=None) -> dict:
    """Setups (i) polarity and (ii) SNLI with the configuration's SBERT model and sizes."""
    kw = dict(seed=cfg.seed, cache_dir=cache_dir)
    return {
        "polarity": polarity_setup(cfg.sbert_model, n_items=cfg.n_polarity, **kw),
        "snli": snli_setup(cfg.sbert_model, n_items=cfg.n_snli, **kw),
    }


def setup_table(setups: dict) -> pd.DataFrame:
    """Table 1: items, vectors, width, classes, bias and parameters of each set-up, beside the paper's."""
    table = pd.DataFrame(
        [
            dict(
                setup=k,
                items=s.n_items,
                vectors=s.embeddings.shape[0],
                dim=s.embeddings.shape[1],
                classes=s.n_outputs,
                bias=s.bias,
                parameters=count_parameters(s),
            )
            for k, s in setups.items()
        ]
    )
    table["paper items"] = [PAPER_TABLE1[k][0] for k in setups]
    table["paper parameters"] = [PAPER_TABLE1[k][1] for k in setups]
    return table


def sentence_records(summaries: dict) -> dict:
    """The sentence-level setups' numbers (:data:`SENTENCE_KEYS`): ``polarity_pearson``, ``snli_spearman``..."""
    out = {f"polarity_{key}": summaries["polarity"][key] for key in SENTENCE_KEYS}
    return out | {f"snli_{key}": summaries["snli"][key] for key in SENTENCE_KEYS}


def word_records(summaries: dict) -> dict:
    """The GloVe word-level setups' numbers (:data:`WORD_KEYS`): ``supersense_glove_pearson``,
    ``wordnet_pos_glove_isoscore_change``..."""
    out = {f"supersense_glove_{key}": summaries["supersense_glove"][key] for key in WORD_KEYS}
    return out | {f"wordnet_pos_glove_{key}": summaries["wordnet_pos_glove"][key] for key in WORD_KEYS}


def word2vec_records(summaries: dict, setups: dict) -> dict:
    """Pearson's r of the model-222 setups that ran (``pos_pearson``, ``supersense_pearson``)."""
    return {f"{name}_pearson": summaries[name]["pearson"] for name in setups}


# ------------------------------------------------------------------------------- word level (iii), (iv)
def multilabel_standin(rng, n_items: int):
    """The multi-label code path's stand-in: ``n_items`` random 300-d vectors at word2vec's scale (0.1 per
    coordinate, so that Adam's steps at lr 1e-3 are commensurate) with random sets of 1–2 of 4 POS-like
    labels, drawn from ``rng``."""
    vectors = rng.normal(scale=0.1, size=(n_items, 300))
    labels = [set(rng.choice(_POS_TAGS, size=rng.integers(1, 3), replace=False)) for _ in range(n_items)]
    return multilabel_setup(vectors, labels, name="multilabel-stand-in")


def standin_config(main: TrainConfig) -> TrainConfig:
    """The stand-in's training: the main number of updates, evaluated half as often, one seed."""
    return TrainConfig(main.n_updates, main.eval_every * 2, (0,), None)


def _word_label_file(path):
    words, labels = [], []
    for line in open(path, encoding="utf-8"):
        w, _, labs = line.rstrip("\n").partition("\t")
        if w and labs:
            words.append(w)
            labels.append(set(labs.split(",")))
    return words, labels


def word2vec_setups(cfg) -> dict:
    """Setups (iii) ``pos`` and (iv) ``supersense`` on the NLPL word2vec model 222 (``REPLIB_W2V_222``): the
    labels of ``REPLIB_CODWOE_POS`` / ``REPLIB_SUPERSENSES`` (``word<TAB>label,...`` files), (iv) from
    WordNet when no file is given. Empty unless the profile runs them (``cfg.word2vec_setups``) and the
    model file is named."""
    w2v = os.environ.get("REPLIB_W2V_222")
    if not cfg.word2vec_setups or not w2v:
        return {}
    out = {}
    for name, env in (("pos", "REPLIB_CODWOE_POS"), ("supersense", "REPLIB_SUPERSENSES")):
        if os.environ.get(env):
            words, labels = _word_label_file(os.environ[env])
            vocab, vecs = load_word2vec_bin(w2v, set(words))
            row = {w: i for i, w in enumerate(vocab)}
            keep = [i for i, w in enumerate(words) if w in row]
            out[name] = multilabel_setup(vecs[[row[words[i]] for i in keep]], [labels[i] for i in keep], name=name)
    if "supersense" not in out:  # default: WordNet noun supersenses through the data layer
        out["supersense"] = supersense_setup(cfg.n_supersense, vectors="word2vec", word2vec_path=w2v)
    return out


def word_setups(cfg) -> dict:
    """Setup (iv) on WordNet noun supersenses and the POS stand-in for (iii), both on GloVe 50-d."""
    return {
        "supersense_glove": supersense_setup(cfg.n_supersense),
        "wordnet_pos_glove": wordnet_pos_setup(cfg.n_pos),
    }


def word_summaries(setups: dict, summaries: dict) -> dict:
    """The summaries of the word-level set-ups with their sizes and the signed IsoScore change."""
    out = {}
    for name, s in setups.items():
        sm = summaries[name]
        sizes = dict(n_words=s.n_items, n_labels=s.n_outputs, n_clusters=s.n_clusters)
        out[name] = sm | sizes | {"isoscore_change": -sm["isoscore_drop"]}
    return out


def first_seed(runs: dict, labels: dict | None = None) -> pd.DataFrame:
    """The first seed's trajectory of every run, stacked, with a ``setup`` column (``labels`` renames)."""
    return pd.concat(
        [r[r.seed == r.seed.iloc[0]].assign(setup=(labels or {}).get(n, r.setup.iloc[0])) for n, r in runs.items()]
    )


# ------------------------------------------------------------------------------------------------ GLUE
def glue_experiment(cfg, config: TrainConfig, *, cache_dir=None, device=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """App. A: every GLUE task of ``cfg.glue_tasks`` with every model of ``cfg`` (``cfg.glue_items`` items,
    from ``cfg.glue_source``), trained with ``config``.

    Returns
    -------
    table : one row per model and task (items, vectors, parameters, correlations, gains)
    runs : the trajectories, stacked, with ``model`` and ``task`` columns
    """
    rows, runs = [], []
    for model in cfg.model_specs:
        for task in cfg.glue_tasks:
            kw = dict(source=cfg.glue_source, n_items=cfg.glue_items, seed=cfg.seed, cache_dir=cache_dir)
            s = glue_setup(task, model, progress=False, **kw)
            r = run_seeds(s, config, cache_dir=cache_dir, device=device, progress=False)
            sm = summarize_runs(r)
            runs.append(r.assign(model=model, task=task))
            rows.append(
                dict(
                    model=model,
                    task=task,
                    items=s.n_items,
                    vectors=s.embeddings.shape[0],
                    parameters=count_parameters(s),
                    **{k: sm[k] for k in ("pearson", "spearman", "silhouette_gain", "isoscore_drop")},
                )
            )
    return pd.DataFrame(rows), pd.concat(runs)


def reported_table(summary: dict, setups: dict, words: dict, glue: pd.DataFrame) -> pd.DataFrame:
    """The paper's reported numbers beside this run's, one row per setup and quantity."""
    missing = "not run (no model 222)"
    r = {k: _MICKUS[f"s3.2/{k}/pearson"].value for k in ("polarity", "snli", "pos", "supersense")}
    bound = f"< {_MICKUS['s3.2/spearman_bound'].value:g}"
    n_params, n_items = _MICKUS["T1/supersense/n_params"].value, _MICKUS["T1/codwoe_pos/n_items"].value
    rows = [
        ("(i) polarity", "Pearson r", r["polarity"], summary["polarity"]["pearson"], "Sec. 3.2 [S]"),
        ("(ii) SNLI", "Pearson r", r["snli"], summary["snli"]["pearson"], "Sec. 3.2 [S]"),
        ("(i) polarity", "Spearman ρ", bound, summary["polarity"]["spearman"], "Sec. 3.2 [S]"),
        ("(ii) SNLI", "Spearman ρ", bound, summary["snli"]["spearman"], "Sec. 3.2 [S]"),
        ("(iii) POS", "Pearson r", r["pos"], summary.get("pos", {}).get("pearson", missing), "Sec. 3.2 [S]"),
        ("(iv) supersenses", "Pearson r", r["supersense"], summary.get("supersense", {}).get("pearson", missing), "Sec. 3.2 [S]"),
        ("(iv) supersenses, GloVe-50d stand-in", "Pearson r", r["supersense"], summary["supersense_glove"]["pearson"], "Sec. 3.2 [S]"),
        ("(iv) supersenses, GloVe-50d stand-in", "parameters", int(n_params), count_parameters(words["supersense_glove"]), "Table 1 [P] (300-d)"),
        ("(iii) POS, WordNet + GloVe-50d stand-in", "Pearson r", r["pos"], summary["wordnet_pos_glove"]["pearson"], "Sec. 3.2 [S]"),
        ("(iii) POS, WordNet + GloVe-50d stand-in", "items", int(n_items), words["wordnet_pos_glove"].n_items, "Table 1 [P]"),
        ("(i) polarity", "parameters", PAPER_TABLE1["polarity"][1], count_parameters(setups["polarity"]), "Table 1 [P]"),
        ("(ii) SNLI", "parameters", PAPER_TABLE1["snli"][1], count_parameters(setups["snli"]), "Table 1 [P]"),
        ("GLUE", "max Pearson r", "stripped (Table 3)", glue.pearson.max(), "App. A"),
        ("all", "max std across seeds", "negligible (values stripped)",
         max(summary["polarity"]["seed_std_max"], summary["snli"]["seed_std_max"]), "Sec. 3.2 [P]"),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["setup", "quantity", "paper", "this run", "source"])
