r"""Verb tense against verb meaning (Table 4 of :cite:`rajaee2021cluster`): do the occurrences of a polysemous
verb sit closer to the occurrences with the same tense or to those with the same meaning?

On SemCor (:func:`replib.data.load_semcor`) the verbs with at least two WordNet senses that each occur at
least ten times are kept (the paper's rule, :func:`select_polysemous_verbs`). For an occurrence :math:`a` of
verb :math:`v`, with :math:`x_a` its vector, the mean Euclidean distance to the other occurrences of
:math:`v` in a group :math:`G`,

.. math::

    d_G(a) = \frac{1}{|G(a)|} \sum_{b \in G(a)} \lVert x_a - x_b \rVert_2 ,

is taken over three groups: same tense and same sense (ST-SM), same tense and a different sense (ST-DM),
a different tense and the same sense (DT-SM). The paper reports each mean "for a sampled occurrence"; we
take its expectation, every occurrence of :math:`v` that has all three groups being the anchor in turn:
:math:`D_G = \frac{1}{V}\sum_v \frac{1}{n_v}\sum_{a} d_G(a)` over the :math:`V` verbs and their
:math:`n_v` anchors (each verb counts once), and report as its spread the standard deviation a single
sampled anchor per verb has around it, :math:`\frac{1}{V}\sqrt{\sum_v \mathrm{Var}_a\, d_G(a)}` (our reading;
the paper is silent on both).

Tense is read from the Penn Treebank tag (our reading; the paper does not say): past = ``VBD`` (past tense)
and ``VBN`` (past participle), present = ``VB``, ``VBG``, ``VBP``, ``VBZ`` (every other verb form). A word's
vector is the mean of its subword pieces' rows at the last layer, from the chapter's token route
(:func:`replib.embeddings.embed_sentences`, each sentence encoded alone, special tokens dropped).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..._validation import check_array
from ...embeddings import embed_sentences

__all__ = [
    "PAST_TAGS",
    "PRESENT_TAGS",
    "verb_tense",
    "verb_occurrences",
    "select_polysemous_verbs",
    "pairwise_distances",
    "anchor_distances",
    "tense_meaning_distances",
    "word_pieces",
    "verb_vectors",
]

PAST_TAGS = frozenset({"VBD", "VBN"})
PRESENT_TAGS = frozenset({"VB", "VBG", "VBP", "VBZ"})
GROUPS = ("st_sm", "st_dm", "dt_sm")
_BLOCK = 1024  # anchors per block of the distance matrix (1024 x n float64)


def verb_tense(tag: str) -> str:
    """``"past"`` for ``VBD``/``VBN``, ``"present"`` for ``VB``/``VBG``/``VBP``/``VBZ`` (our reading of tense).

    Raises
    ------
    ValueError
        ``tag`` is not a Penn Treebank verb tag.
    """
    if tag in PAST_TAGS:
        return "past"
    if tag in PRESENT_TAGS:
        return "present"
    raise ValueError(f"{tag!r} is not a Penn Treebank verb tag ({sorted(PAST_TAGS | PRESENT_TAGS)})")


def verb_occurrences(sentences) -> pd.DataFrame:
    """Every sense-tagged verb of ``sentences`` (:class:`replib.data.semcor.SemcorSentence`): columns
    ``sentence`` (position in ``sentences``), ``index`` (token), ``lemma``, ``sense``, ``tag``, ``tense``."""
    rows = [(i, v.index, v.lemma, v.sense, v.tag, verb_tense(v.tag)) for i, s in enumerate(sentences) for v in s.verbs]
    return pd.DataFrame(rows, columns=["sentence", "index", "lemma", "sense", "tag", "tense"])


def select_polysemous_verbs(occ: pd.DataFrame, min_count: int = 10, min_senses: int = 2) -> pd.DataFrame:
    """The occurrences of the verbs with at least ``min_senses`` senses that each occur at least ``min_count``
    times (the paper: 2 senses, 10 occurrences), restricted to those senses; rows in their original order.

    Raises
    ------
    ValueError
        ``min_count`` or ``min_senses`` below 1, or ``occ`` lacks the ``lemma``/``sense`` columns.
    """
    if min_count < 1 or min_senses < 1:
        raise ValueError(f"min_count and min_senses must be at least 1; got {min_count}, {min_senses}")
    if not {"lemma", "sense"} <= set(occ.columns):
        raise ValueError(f"occ needs the columns lemma and sense; has {list(occ.columns)}")
    counts = occ.groupby(["lemma", "sense"]).size()
    frequent = counts[counts >= min_count].reset_index()[["lemma", "sense"]]
    n_senses = frequent.groupby("lemma").size()
    frequent = frequent[frequent["lemma"].isin(n_senses[n_senses >= min_senses].index)]
    keep = pd.MultiIndex.from_frame(occ[["lemma", "sense"]]).isin(pd.MultiIndex.from_frame(frequent))
    return occ[keep].reset_index(drop=True)


def pairwise_distances(A, B) -> np.ndarray:
    r"""Euclidean distances :math:`\lVert a_i - b_j \rVert_2` of the rows of ``A`` and ``B`` in float64, from
    :math:`\lVert a\rVert^2 + \lVert b\rVert^2 - 2 a^\top b` (one matrix product; clipped at 0)."""
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return np.sqrt(np.maximum(sq, 0.0))


def anchor_distances(X, senses, tenses) -> pd.DataFrame:
    """For each occurrence of one verb (rows of ``X``), the mean distance :math:`d_G` to the other occurrences
    of each group: ``st_sm``, ``st_dm``, ``dt_sm`` (NaN where the group is empty).

    Parameters
    ----------
    X : array (n_occurrences, n_features)
    senses, tenses : sequences of length n_occurrences
    """
    X = np.asarray(X)  # validated by the caller (tense_meaning_distances)
    s, t = pd.factorize(np.asarray(senses))[0], pd.factorize(np.asarray(tenses))[0]
    out = {g: np.full(len(X), np.nan) for g in GROUPS}
    for a in range(0, len(X), _BLOCK):
        D = pairwise_distances(X[a : a + _BLOCK], X)
        rows = np.arange(a, min(a + _BLOCK, len(X)))
        same_s, same_t = s[rows, None] == s[None, :], t[rows, None] == t[None, :]
        other = np.ones_like(same_s)
        other[np.arange(len(rows)), rows] = False  # an anchor is not its own neighbour
        for g, mask in (("st_sm", same_t & same_s & other), ("st_dm", same_t & ~same_s), ("dt_sm", ~same_t & same_s)):
            n = mask.sum(1)
            out[g][rows] = np.divide((D * mask).sum(1), n, out=np.full(len(rows), np.nan), where=n > 0)
    return pd.DataFrame(out)


def tense_meaning_distances(X, lemmas, senses, tenses) -> dict:
    r"""Table 4's three mean distances :math:`D_G` (see the module docstring) over the verbs of ``lemmas``.

    Only the anchors that have all three groups count; a verb without such an anchor is skipped.

    Parameters
    ----------
    X : array (n_occurrences, n_features)
        One vector per verb occurrence.
    lemmas, senses, tenses : sequences of length n_occurrences

    Returns
    -------
    dict
        ``st_sm``, ``st_dm``, ``dt_sm`` (the means over verbs of the mean over anchors), each with
        ``<group>_spread`` (the standard deviation of a one-anchor-per-verb estimate), ``n_verbs`` (verbs with
        an anchor) and ``n_anchors``.

    Raises
    ------
    ValueError
        Lengths that differ, or no verb with an anchor that has all three groups.
    """
    X = check_array(X, name="X", min_samples=2, metric="tense_meaning_distances")
    lemmas, senses, tenses = (np.asarray(v) for v in (lemmas, senses, tenses))
    if not len(lemmas) == len(senses) == len(tenses) == len(X):
        raise ValueError(f"X has {len(X)} rows but {len(lemmas)} lemmas, {len(senses)} senses, {len(tenses)} tenses")
    means, variances, n_anchors = [], [], 0
    for lemma in pd.unique(lemmas):
        rows = np.flatnonzero(lemmas == lemma)
        d = anchor_distances(X[rows], senses[rows], tenses[rows]).dropna()
        if len(d):
            means.append(d.mean().to_numpy())
            variances.append(d.var(ddof=0).to_numpy())
            n_anchors += len(d)
    if not means:
        raise ValueError("no verb has an occurrence with all three groups (same/different tense and sense)")
    mean, spread = np.mean(means, axis=0), np.sqrt(np.sum(variances, axis=0)) / len(means)
    out = {g: float(m) for g, m in zip(GROUPS, mean)}
    out.update({f"{g}_spread": float(sp) for g, sp in zip(GROUPS, spread)})
    return dict(out, n_verbs=len(means), n_anchors=n_anchors)


def word_pieces(tokenizer, words) -> list[list[int]]:
    """The subword ids of each word of a sentence, as the tokenizer splits the words joined by single spaces
    (each word after the first is encoded with its leading space: GPT-2's and RoBERTa's byte-level BPE mark
    it, WordPiece ignores it). Their concatenation is checked against the sentence's ids by
    :func:`verb_vectors`."""
    words = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return [list(ids) for ids in tokenizer(words, add_special_tokens=False)["input_ids"]] if words else []


def verb_vectors(model, sentences, occ: pd.DataFrame, *, cache_dir=None, progress: bool = True):
    """One vector per verb occurrence of ``occ``: the mean of its word's subword rows at the last layer.

    The sentences holding an occurrence are embedded by :func:`replib.embeddings.embed_sentences` (the
    chapter's token route: each sentence alone, special tokens dropped; cached in ``cache_dir``). A sentence
    whose pieces, taken word by word (:func:`word_pieces`), are not the ids the model read (truncated at 512
    tokens, or split differently in context) gives no vector, nor does a word without pieces.

    Returns
    -------
    X : ndarray (n_kept, hidden_size) float64
    kept : ndarray of bool (len(occ),)
        Which occurrences have a vector (the rows of ``X`` in their order).
    """
    used = sorted(set(occ["sentence"]))
    texts = [sentences[i].text for i in used]
    emb = embed_sentences(model, texts, layer=-1, drop_special=True, cache_dir=cache_dir, progress=progress)
    spans = {}
    for i, rows, ids in zip(used, emb.tokens, emb.token_ids):
        pieces = word_pieces(model.tokenizer, sentences[i].tokens)
        if [t for p in pieces for t in p] == [int(t) for t in ids]:
            spans[i] = (np.concatenate([[0], np.cumsum([len(p) for p in pieces])]), rows)
    X, kept = [], np.zeros(len(occ), bool)
    for k, (i, j) in enumerate(zip(occ["sentence"], occ["index"])):
        if i in spans and spans[i][0][j + 1] > spans[i][0][j]:
            offsets, rows = spans[i]
            X.append(np.asarray(rows[offsets[j] : offsets[j + 1]], np.float64).mean(0))
            kept[k] = True
    if not X:
        raise ValueError("no verb occurrence could be located in the model's token rows")
    return np.stack(X), kept
