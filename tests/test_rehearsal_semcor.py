"""The cluster chapter's ``semcor`` part rehearsed (issue 26): the SemCor-shaped stand-in (real sentences,
synthetic verbs labelled as such, the paper's selection rule keeping verbs, deterministic for a seed) and the
part's rehearsal wired through the chapter's verb route and Table 4's statistics (tiny models, small sizes)."""

from __future__ import annotations

import numpy as np
import pytest

from replib.data.semcor import SemcorSentence
from replib.methods import cluster_isotropy as ci
from replib.methods.cluster_isotropy.verbs import PAST_TAGS, PRESENT_TAGS
from replib.models import resolve_model
from replib.rehearsal import Context, rehearse_part
from replib.rehearsal import semcor as RS
from replib.rehearsal.standins import (
    SEMCOR_SENTENCES,
    SEMCOR_STANDIN_DOC,
    corpus_sentences,
    semcor_standin,
)

LINES = [
    " = Heading = ",
    " The lobster is a species of crustacean . It lives in the sea and eats small fish .",
    " Fishermen catch it with pots ! Why do they sell it in markets ?",
    " A short one .",
]


def test_corpus_sentences_split_at_sentence_ends_and_skip_headings():
    out = corpus_sentences(LINES)
    assert out[0] == ("The", "lobster", "is", "a", "species", "of", "crustacean", ".")
    assert ("Fishermen", "catch", "it", "with", "pots", "!") in out
    assert all("=" not in s for s in out)
    assert ("A", "short", "one", ".") in out and ("A", "short", "one", ".") not in corpus_sentences(LINES, 4)


def test_the_standin_has_the_shape_and_labels_of_semcor_sentences():
    s = semcor_standin(500, seed=3, lines=LINES)
    assert len(s) == 500 and SEMCOR_SENTENCES == 37_176
    assert all(isinstance(x, SemcorSentence) and x.doc == SEMCOR_STANDIN_DOC for x in s)
    for x in s:
        assert len(x.verbs) == 3 and len({v.index for v in x.verbs}) == 3
        assert all(x.tokens[v.index].isalpha() and v.lemma.startswith("standin-verb-") for v in x.verbs)
        assert all(v.tag in PAST_TAGS | PRESENT_TAGS and int(v.sense) >= 1 for v in x.verbs)
    source = corpus_sentences(LINES, 3)
    assert [x.tokens for x in s[: 2 * len(source)]] == source * 2  # the corpus' sentences, in order, repeated


def test_the_standin_is_deterministic_for_a_seed():
    a, b, c = (semcor_standin(200, seed=k, lines=LINES) for k in (1, 1, 2))
    assert a == b and a != c


def test_the_papers_rule_keeps_verbs_with_a_zipf_head():
    s = semcor_standin(4000, seed=0, lines=LINES)
    occ = ci.verb_occurrences(s)
    kept = ci.select_polysemous_verbs(occ, min_count=10)
    sizes = kept.groupby("lemma").size()
    assert 5 <= len(sizes) < occ["lemma"].nunique()  # the rule keeps verbs and drops the Zipf tail
    assert sizes.idxmax() == "standin-verb-0001" and sizes.max() > 0.15 * len(occ)  # the heavy head ("be")
    assert (kept.groupby(["lemma", "sense"]).size() >= 10).all()
    assert (kept.groupby("lemma")["sense"].nunique() >= 2).all()


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        semcor_standin(0, lines=LINES)
    with pytest.raises(ValueError, match="no sentence"):
        semcor_standin(10, verbs_per_sentence=20, lines=LINES)


def test_the_part_runs_the_verb_route_and_the_statistics(tmp_path, monkeypatch):
    small = semcor_standin(600, seed=0, lines=LINES)
    monkeypatch.setattr(RS, "semcor_standin", lambda seed: small)
    monkeypatch.setattr(RS, "fullsize_model", lambda spec, seed: resolve_model("tiny-gpt2"))
    out = rehearse_part("cluster_isotropy", "semcor", Context(tmp_path, scale=0.2, max_items=400))
    assert out["data"] == RS.STANDIN_LABEL and out["records"] == {}
    forward, stats = out["costs"][0], out["costs"][1]
    assert len(out["costs"]) == 6 and forward["on_gpu"] and forward["flops_full"] > 0
    kept = ci.select_polysemous_verbs(ci.verb_occurrences(small))
    n_occ, n_sentences = len(kept), kept["sentence"].nunique()  # the route embeds the sentences of kept verbs
    assert forward["sizes"][1] == 4 * forward["sizes"][0] and forward["full"] == n_sentences
    assert not stats["on_gpu"] and stats["sizes"] == [400] and stats["exponent"] == 2.0
    assert stats["full"] == n_occ and np.isclose(stats["cpu_full"], stats["cpu"][0] * (n_occ / 400) ** 2)
    assert out["t4_hours_estimate"] > 0
