"""The precision rule validated on real data here (``book/sampling.csv``).

For each statistic of the five papers' main tables, on the real data and models this machine has
(all-MiniLM-L6-v2 and GloVe 6B 50d on the text sets, this book's own trained protein LM on Swiss-Prot, the
alignment pairs of its proteins), the value at a "full" size this machine affords is compared with samples
ten times smaller: each of ``trials`` samples (without replacement, independent) gives an estimate, whose
spread is the one the precision rule uses for that size, bootstrapped once at ``n_sample`` from the full set
(:func:`replib.sampling.coverage_trials`). A statistic that is not a mean of its units is biased at small
:math:`n` (the within-window pairs of an average cosine, the between-window covariance of an IsoScore: a
term of order :math:`1/n` that no spread shows); each sample's bias :math:`b` is estimated from the sample
alone (:func:`replib.sampling.half_sample_bias`), and its error is :math:`e = \\sqrt{s^2 + b^2}`. The
sample's band covers the full value when :math:`|\\hat v - v_\\text{full}| \\le t + Z e` (the check's band:
the printed precision :math:`t` of the paper's number of this statistic, in its scale, plus :math:`Z` = 2
errors). ``covered`` is the fraction of trials whose band covers; ``covered_2s`` the stricter
:math:`|\\hat v - v_\\text{full}| \\le Z s` (spread alone, bias left out).

Each (model, data set) is embedded once at the full size and cached (the project's embedding cache); the
trials resample the cached matrix. Rows are appended to the CSV as they finish; a rerun skips the rows
already there (``--force`` recomputes). Run with ``python -m replib.sampling_validation``.
"""

from __future__ import annotations

import argparse
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression

from . import sampling
from ._io import cache_root, read_csv, write_csv_atomic
from .data import load_lm_corpus, load_polarity, load_swissprot
from .embeddings import embed_proteins, embed_sentences, embed_token_stream
from .methods.cluster_isotropy.setup import load_sts_pairs
from .methods.protein_isotropy.alignment import alignment_stats
from .methods.protein_isotropy.residues import ResidueIsotropy
from .metrics import avg_pairwise_cosine, effective_dimensions, isoscore, partition_isotropy, s_inter, s_intra
from .metrics.lid import lid_mle
from .metrics.silhouette import silhouette_score
from .models import load_glove, load_trained, resolve_model
from .papers import printed_band, project_tables, select_rows
from .plotting import PALETTE, RC, STYLE, save_figure
from .training import config_for, run_dir

__all__ = ["COLUMNS", "Case", "cases", "run_case", "main"]

COLUMNS = (
    "chapter",
    "statistic",
    "model",
    "data",
    "unit",
    "n_full",
    "n_sample",
    "full_value",
    "sample_mean",
    "spread",
    "bias",
    "band",
    "covered",
    "covered_2s",
    "trials",
    "note",
)
DEFAULT_CSV = Path(__file__).resolve().parents[1] / "book" / "sampling.csv"
MINILM = "all-MiniLM-L6-v2"
#: GloVe's most frequent words in the LID index
GLOVE_WORDS = 20_000
#: lines of WikiText-2 test embedded (the IsoScore chapter's offline size, whose embeddings are cached)
WIKITEXT_LINES = 600


# ------------------------------------------------------------------------------------------------ data


class NotReady(RuntimeError):
    """A stand-in this run does not make (the book's trained protein LM before the training chapter ran)."""


def _embed_dir() -> Path:
    return cache_root("embeddings")


@cache
def _minilm():
    return resolve_model(MINILM)


@cache
def _wikitext_stream():
    lines = load_lm_corpus("wikitext2", "test")[:WIKITEXT_LINES]
    return embed_token_stream(_minilm(), lines, window=512, cache_dir=_embed_dir())


def wikitext_tokens(layer: int) -> tuple[np.ndarray, np.ndarray, list]:
    """all-MiniLM-L6-v2's token vectors of code layer ``layer`` over the first 600 lines of WikiText-2 test
    (87 windows of 512 tokens), as the IsoScore chapter's offline profile embeds them (the same cache entry,
    read once for every layer): (vectors, window of each token, token strings)."""
    ts = _wikitext_stream()
    return ts.layers[layer], ts.window, ts.tokens


@cache
def _sts(data: str):
    """(pairs with gold scores, their sorted unique sentences) of an STS set of the cluster-isotropy chapter
    (``SICK-R``, ``STS-B``, ``STS12`` ...), loaded as the chapter loads it."""
    df = load_sts_pairs(data)
    return df, sorted(set(df["sentence1"]) | set(df["sentence2"]))


@cache
def _texts(data: str) -> list[str]:
    """The sentences of ``data``: an STS set's unique sentences (as the chapter embeds them, so its cache
    entry serves), or ``polarity``'s sentences."""
    if data == "polarity":
        return list(load_polarity()["text"])
    return _sts(data)[1]


@cache
def sentence_vectors(model: str, data: str) -> np.ndarray:
    """One vector per sentence of ``data`` (:func:`_texts`): all-MiniLM-L6-v2's mean-pooled last layer (special
    tokens dropped, as Rajaee & Pilehvar), or the mean GloVe 6B 50d vector of its lower-cased word and
    punctuation tokens found in GloVe (a zero vector for a sentence with none)."""
    texts = _texts(data)
    if model == MINILM:
        return embed_sentences(_minilm(), texts, layer=-1, drop_special=True, cache_dir=_embed_dir()).means
    index, vectors = _glove()
    out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float64)
    for i, text in enumerate(texts):
        rows = [index[w] for w in re.findall(r"[\w']+|[^\w\s]", text.lower()) if w in index]
        if rows:
            out[i] = vectors[rows].mean(axis=0)
    return out


@cache
def _glove():
    words, vectors = load_glove()
    return {w: i for i, w in enumerate(words)}, vectors


@cache
def sts_pairs(model: str, data: str) -> np.ndarray:
    """(n_pairs, 2): each pair's cosine of its two sentence vectors and its gold score."""
    df, texts = _sts(data)
    where = {t: i for i, t in enumerate(texts)}
    X = sentence_vectors(model, data)
    a, b = X[[where[t] for t in df["sentence1"]]], X[[where[t] for t in df["sentence2"]]]
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return np.column_stack([cos, df["score"].to_numpy(dtype=float)])


# ------------------------------------------------------------------------------------------------ cases


@dataclass(frozen=True)
class Case:
    """One statistic on one (model, data set): ``load() -> (X, groups)`` and ``stat(rows) -> float``."""

    chapter: str
    statistic: str
    model: str
    data: str
    unit: str
    n_sample: int
    load: Callable[[], tuple]
    stat: Callable[[np.ndarray], float]
    band: float  # the printed precision t of the paper's numbers of this statistic, in its scale
    n_boot: int = 40
    bias: bool = True  # estimate each sample's finite-sample bias (False for a mean: unbiased)
    note: str = ""

    @property
    def key(self) -> tuple:
        return (self.chapter, self.statistic, self.model, self.data)


def _band(*refs: str) -> float:
    """The median printed band (:func:`replib.papers.printed_band`) of the papers' numbers matching ``refs``."""
    return float(np.median([printed_band(n) for n in select_rows(list(refs), project_tables())]))


def _log10(f: Callable[[np.ndarray], float]) -> Callable[[np.ndarray], float]:
    return lambda X: math.log10(f(X))


# ----------------------------------------------------------------------------------- the statistics


def _one_minus_abs_cosine(X) -> float:
    return 1 - abs(avg_pairwise_cosine(X))


@cache
def token_types(layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, type code of each token) of :func:`wikitext_tokens`."""
    X, _, tokens = wikitext_tokens(layer)
    _, codes = np.unique(np.asarray(tokens), return_inverse=True)
    return X, codes


def _s_inter(idx) -> float:
    X, types = token_types(5)
    return s_inter(X[idx], types[idx], seed=0)


def _s_intra(idx) -> float:
    X, types = token_types(5)
    return s_intra(X[idx], types[idx], max_per_type=200, seed=0)


@cache
def pointwise_lid(model: str) -> np.ndarray:
    """Cai et al.'s pointwise LID (cosine, k = 20) of query points against the whole neighbour index:
    MiniLM's layer-5 tokens of :func:`wikitext_tokens` (10,000 random queries) or GloVe's 20,000 most frequent
    words (every one a query)."""
    if model == MINILM:
        X = wikitext_tokens(5)[0]
        res = lid_mle(X, k=20, metric="cosine", n_queries=10_000, seed=0)
    else:
        X = _glove()[1][:GLOVE_WORDS]
        res = lid_mle(X, k=20, metric="cosine")
    lid = res.pointwise
    return lid[np.isfinite(lid)]


@cache
def polarity_task(model: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vectors, labels, correctness of a fixed classifier) of the polarity sentences: a logistic regression
    fitted on the even-numbered sentences, its correctness (0/1) on the odd ones, the units of an accuracy."""
    X = sentence_vectors(model, "polarity")
    y = load_polarity()["label"].to_numpy()
    clf = LogisticRegression(max_iter=2000).fit(X[::2], y[::2])
    return X, y, (clf.predict(X[1::2]) == y[1::2]).astype(float)


def _silhouette(model: str, idx) -> float:
    X, y, _ = polarity_task(model)
    return silhouette_score(X[idx], y[idx])


# ---------------------------------------------------------------------------------------- proteins


@cache
def _book_lm():
    """This book's own protein LM, as the training chapter's offline run left it."""
    final = run_dir("protein", config_for("offline")["protein"]) / "final"
    if not (final / "sha256.json").exists():  # trained by the training chapter's offline run, never here
        raise NotReady(f"the book's protein LM is not trained yet ({final.parent.name})")
    return load_trained(final, name="book-esm-trained")


@cache
def _protein_sequences(n: int = 1000) -> list[str]:
    """The first ``n`` proteins of a seeded sample of Swiss-Prot (2014, 20k subset), cut at 256 residues."""
    df = load_swissprot("20k")
    rows = np.random.default_rng(0).choice(len(df), size=n, replace=False)
    return [str(s)[:256] for s in df["sequence"].to_numpy()[rows]]


@cache
def protein_set(n: int = 1000):
    """This book's own protein LM on :func:`_protein_sequences`: (mean-pooled last layer, sequences)."""
    seqs = _protein_sequences(n)
    emb = embed_proteins(_book_lm(), seqs, max_length=256, cache_dir=_embed_dir())
    return np.asarray(next(iter(emb.pooled.values())), dtype=np.float64), seqs


@cache
def protein_residues(n: int = 1000) -> list[tuple[str, np.ndarray]]:
    """(sequence as the model saw it, its last layer's residue vectors) of each of :func:`_protein_sequences`,
    as the protein chapter's local analysis reads them (upper case, cut at 256 residues)."""
    seqs = [s.upper() for s in _protein_sequences(n)]
    out = embed_proteins(_book_lm(), seqs, layers=(-1,), max_length=256, return_residues=True, cache_dir=_embed_dir())
    rows = {int(i): np.asarray(out.residues[-1][r], dtype=np.float64) for r, i in enumerate(out.index)}
    return [(seqs[i][: len(rows[i])], rows[i]) for i in range(len(seqs))]


def _local_mean_eff_dims(idx) -> float:
    """Hakim et al.'s local mean: the effective dimensions of each amino acid's residue vectors (those with
    enough residues), averaged over amino acids, for the sampled proteins (:mod:`replib.methods.protein_isotropy`)."""
    proteins = protein_residues()
    acc = ResidueIsotropy(proteins[0][1].shape[1])
    for i in idx:
        acc.update(*proteins[int(i)])
    return acc.mean_effective_dimensions()


@cache
def protein_pairs(n: int = 200) -> dict:
    """Pair matrices over the first ``n`` proteins of :func:`protein_set`: cosine similarity and squared
    Euclidean distance of their vectors, global alignment score and identity (PAM250, gap 10/1, parasail)."""
    E, seqs = protein_set()
    E, seqs = E[:n], seqs[:n]
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    sq = (E * E).sum(1)
    out = {"cosine": U @ U.T, "sq_euclidean": sq[:, None] + sq[None, :] - 2 * E @ E.T}
    score, identity = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            a = alignment_stats(seqs[i], seqs[j])
            score[i, j] = score[j, i] = a["score"]
            identity[i, j] = identity[j, i] = a["identity"]
    out.update(score=score, identity=identity)
    return out


def _pair_pearson(a: str, b: str, idx) -> float:
    """Pearson r of two pair measures over the pairs of the sampled proteins (a protein drawn twice by the
    bootstrap is never paired with itself)."""
    M = protein_pairs()
    i, j = np.triu_indices(len(idx), 1)
    keep = idx[i] != idx[j]
    x, y = M[a][idx[i], idx[j]][keep], M[b][idx[i], idx[j]][keep]
    return float(np.corrcoef(x, y)[0, 1])


# -------------------------------------------------------------------------------------------- cases


def _tokens(layer: int, rows: bool = False):
    """``load()`` of the tokens of code layer ``layer``, grouped by window: their vectors, or with ``rows`` their
    row indices (a statistic that reads the tokens' types beside them)."""

    def load():
        X, window, _ = wikitext_tokens(layer)
        return (np.arange(len(X)) if rows else X), window

    return load


_TOKENS_NOTE = "tokens resampled by whole 512-token window"


def _spearman_x100(pairs) -> float:
    return 100 * float(spearmanr(pairs[:, 0], pairs[:, 1]).statistic)


def cases() -> list[Case]:
    """Every statistic's case, the cheapest first."""
    rud_iso, rud_cos = _band("rudman2022:layers/*"), _band("rudman2022:avgcos/*")
    hak_iso, hak_dims, hak_r = _band("hakim2025:global/*/isoscore"), 0.5, _band("hakim2025:corr/*")
    cai, raj_iw, raj_rho = _band("cai2021:T3/*"), _band("rajaee2021:T1/*"), _band("rajaee2021:T2/*")
    raj_acc = _band("rajaee2021:T3/*")
    wt = "WikiText-2 test (600 lines)"
    out = []
    for layer in range(6):  # Rudman et al.'s IsoScore per layer: every layer the cached stream holds
        at = f"{MINILM} layer {layer}"
        for stat, fn, band in (
            ("log10 IsoScore", _log10(isoscore), rud_iso),
            ("1 - |average cosine|", _one_minus_abs_cosine, rud_cos),
        ):
            out.append(Case("isoscore", stat, at, wt, "window", 8, _tokens(layer), fn, band, note=_TOKENS_NOTE))
    for model, spec, data, unit, n, index in (
        (f"{MINILM} layer 5", MINILM, wt, "query token", 1000, "44,544-token"),
        ("GloVe 6B 50d", "glove", "20,000 most frequent words", "query word", 2000, "20,000-word"),
    ):
        load = (lambda m: lambda: (pointwise_lid(m), None))(spec)
        note = f"queries against the fixed {index} index"  # a mean of its units: unbiased
        out.append(Case("manifolds", "LID mean (cosine, k = 20)", model, data, unit, n, load, np.mean, cai,
                        n_boot=200, bias=False, note=note))  # fmt: skip
    for stat, fn in (("S_inter", _s_inter), ("S_intra", _s_intra)):
        note = f"{_TOKENS_NOTE}; the papers print no {stat}: band 2 errors"
        out.append(Case("manifolds", stat, f"{MINILM} layer 5", wt, "window", 8, _tokens(5, True), fn, 0.0, note=note))
    #: STS set -> (sentences, pairs) per sample: a tenth of its unique sentences and of its pairs
    sts_sizes = {"SICK-R": (490, 490), "STS-B": (250, 137)}
    for model in ("GloVe 6B 50d", MINILM):  # MiniLM's STS sentences come from the chapter's cache entries
        for data, (n_sent, n_pairs) in sts_sizes.items():
            for stat, unit, n, get, fn, band, kw in (
                ("log10 I(W)", "sentence", n_sent, sentence_vectors, lambda X: partition_isotropy(X).log10, raj_iw, {}),
                ("Spearman x 100", "pair", n_pairs, sts_pairs, _spearman_x100, raj_rho, {"n_boot": 100}),
            ):
                load = (lambda g, m, d: lambda: (g(m, d), None))(get, model, data)
                out.append(Case("cluster_isotropy", stat, model, f"{data} test {unit}s", unit, n, load, fn, band, **kw))
        # the polarity task's (vectors, labels, accuracies of the odd half): a mean of its units is unbiased
        for chapter, stat, data, unit, n, get, fn, band, kw in (
            ("cluster_isotropy", "accuracy x 100", "sentence polarity (odd half)", "item", 533, lambda t: 100 * t[2],
             np.mean, raj_acc, dict(n_boot=200, bias=False, note="a logistic regression fitted on the even half")),
            ("classifiers", "log10 IsoScore", "sentence polarity", "sentence", 1066, lambda t: t[0], _log10(isoscore),
             0.0, dict(note="Mickus et al. print no IsoScore: band 2 errors")),
            ("classifiers", "silhouette", "sentence polarity", "sentence", 1066, lambda t: np.arange(len(t[1])),
             partial(_silhouette, model), 0.0, dict(n_boot=30, note="Mickus et al. print no silhouette: band 2 errors")),
        ):  # fmt: skip
            load = (lambda g, m: lambda: (g(polarity_task(m)), None))(get, model)
            out.append(Case(chapter, stat, model, data, unit, n, load, fn, band, **kw))
    book = "book protein LM (offline)"
    sp = "Swiss-Prot 2014 (1,000 proteins)"
    pairs = "Swiss-Prot 2014 (200 proteins, 19,900 pairs)"
    no_cosine = "Hakim et al. print no average cosine in their main tables: band 2 errors"
    vectors = lambda: (protein_set()[0], None)
    residues = lambda: (np.arange(len(protein_residues())), None)
    per_residue = "per-residue vectors, the proteins' residues pooled per amino acid; a protein is the unit"
    for stat, load, fn, band, note in (
        ("log10 IsoScore", vectors, _log10(isoscore), hak_iso, ""),
        ("effective dimensions", vectors, effective_dimensions, hak_dims, ""),
        ("1 - |average cosine|", vectors, _one_minus_abs_cosine, 0.0, no_cosine),
        ("local mean effective dimensions", residues, _local_mean_eff_dims, hak_dims, per_residue),
    ):
        out.append(Case("protein_isotropy", stat, book, sp, "protein", 100, load, fn, band, note=note))
    measures = ("cosine", "sq_euclidean", "score", "identity")
    proteins = lambda: (np.arange(200), None)  # row indices: the statistics read their pairs
    note = "pairs among the sampled proteins; a protein is the unit"
    for a, b in ((a, b) for i, a in enumerate(measures) for b in measures[i + 1 :]):  # the paper's six pairs
        stat = f"Pearson r ({a}, {b})"
        fn = partial(_pair_pearson, a, b)
        out.append(
            Case("protein_isotropy", stat, book, pairs, "protein", 20, proteins, fn, hak_r, n_boot=100, note=note)
        )
    # cheapest first (GloVe needs no network; the cached token vectors no embedding), this machine's embedding last
    return sorted(
        out, key=lambda c: 0 if "GloVe" in c.model else 1 if "layer" in c.model else 2 if "book" in c.model else 3
    )


# ---------------------------------------------------------------------------------------------- run


def run_case(case: Case, trials: int = 20, seed: int = 0, progress: bool = True) -> dict:
    """One row of ``book/sampling.csv``: ``trials`` samples of ``case.n_sample`` units against the full set."""
    X, groups = case.load()
    n_full = len(X) if groups is None else len(np.unique(groups))
    out = sampling.coverage_trials(
        case.stat,
        X,
        case.n_sample,
        trials=trials,
        groups=groups,
        n_boot=case.n_boot,
        bias=case.bias,
        seed=seed,
        progress=progress,
    )
    err = np.abs(out["estimates"] - out["full_value"])
    error = np.hypot(out["spreads"], out["biases"])  # each sample's root mean squared error
    note = case.note
    if n_full < 10 * case.n_sample:
        note = "; ".join(filter(None, [note, f"full only {n_full / case.n_sample:.1f}x the sample"]))
    return {
        **{k: getattr(case, k) for k in ("chapter", "statistic", "model", "data", "unit")},
        "n_full": n_full,
        "n_sample": case.n_sample,
        "full_value": f"{out['full_value']:.6g}",
        "sample_mean": f"{np.mean(out['estimates']):.6g}",
        "spread": f"{np.mean(out['spreads']):.4g}",
        "bias": f"{np.mean(out['biases']):.4g}",
        "band": f"{case.band:.4g}",
        "covered": f"{np.mean(err <= case.band + sampling.Z * error):.3f}",
        "covered_2s": f"{np.mean(err <= sampling.Z * out['spreads']):.3f}",
        "trials": trials,
        "note": note,
    }


def coverage_figure(rows: list[dict], path=None):
    """The table as a figure: per row, the samples' mean estimate minus the full value in units of the check's
    band (:math:`t + Z e`, :math:`e = \\sqrt{s^2 + b^2}`), with the band as its error bar (the full value lies
    inside when the bar crosses 0), and beside it the fraction of trials whose band covered the full value (the
    95 % line)."""
    matplotlib.use("Agg")
    sns.set_theme(style=STYLE, palette=PALETTE, rc=RC)
    labels = [f"{r['chapter']}: {r['statistic']}, {r['model']}, {r['data']}" for r in rows]
    half = np.array([float(r["band"]) + sampling.Z * math.hypot(float(r["spread"]), float(r["bias"])) for r in rows])
    z = np.array([float(r["sample_mean"]) - float(r["full_value"]) for r in rows]) / np.where(half > 0, half, 1)
    cov = np.array([float(r["covered"]) for r in rows])
    y = np.arange(len(rows))[::-1]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 0.45 * len(rows) + 2.4), sharey=True, width_ratios=(3, 2))
    ax.errorbar(z, y, xerr=1.0, fmt="o", capsize=3, label="mean estimate ± the check's band (t + 2 e)")
    ax.axvline(0, color="k", lw=1, label="the full set's value")
    ax.set(yticks=y, yticklabels=labels, xlabel="(sample estimate - full value) / band", xlim=(-2.5, 2.5))
    bx.barh(y, cov, color=sns.color_palette(PALETTE)[2], label="trials whose band covers the full value")
    bx.axvline(0.95, color="k", ls="--", lw=1, label="95 %")
    bx.set(xlim=(0, 1.02), xlabel="coverage over trials")
    handles = [h for a in (ax, bx) for h in a.get_legend_handles_labels()[0]]
    fig.legend(handles, [h.get_label() for h in handles], loc="lower center", ncol=2, fontsize="small")
    fig.suptitle("Samples against a set ten times larger (book/sampling.csv)")
    fig.tight_layout(rect=(0, 0.7 / (0.45 * len(rows) + 2.4), 1, 1))
    if path is not None:
        save_figure(fig, path, dpi=110)  # with its legend stamp, as the book's browser test reads it
        plt.close(fig)
    return fig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m replib.sampling_validation", description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", default=str(DEFAULT_CSV), help="the table to write (default book/sampling.csv)")
    p.add_argument("--only", default="", help="run the cases whose chapter or statistic contains this text")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--force", action="store_true", help="recompute rows already in the table")
    p.add_argument("--figure", action="store_true", help="only draw the figure (book/sampling.png) from the table")
    args = p.parse_args(argv)
    rows = read_csv(args.csv)
    figure = Path(args.csv).with_suffix(".png")
    if args.figure:
        coverage_figure(rows, figure)
        return 0
    for case in cases():
        key = case.key
        if args.only and args.only not in f"{case.chapter} {case.statistic} {case.model}":
            continue
        have = [r for r in rows if (r["chapter"], r["statistic"], r["model"], r["data"]) == key]
        if have and not args.force:
            continue
        t = time.time()
        try:
            row = run_case(case, trials=args.trials)
        except NotReady as e:
            print(f"{' / '.join(key)}: skipped, {e}", flush=True)
            continue
        rows = [r for r in rows if r not in have] + [row]
        write_csv_atomic(args.csv, rows, COLUMNS)
        print(
            f"{' / '.join(key)}: covered {row['covered']} ({row['covered_2s']} at 2 s), {time.time() - t:.0f} s",
            flush=True,
        )
    if rows:
        coverage_figure(rows, figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
