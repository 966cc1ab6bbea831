"""Table 4 of Rajaee & Pilehvar 2021 (replib.methods.cluster_isotropy.verbs): the tense reading, the paper's
selection rule, the three mean distances on vectors with a planted tense and a planted sense direction, and the
word vectors from the chapter's token route (tiny models, synthetic sentences)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from replib.data.semcor import SemcorSentence, VerbToken
from replib.embeddings import embed_sentences
from replib.methods import cluster_isotropy as ci
from replib.methods.cluster_isotropy import experiments as E
from replib.models import ModelRef, resolve_model


def test_tense_is_read_from_the_penn_tag():
    assert {t: ci.verb_tense(t) for t in ("VBD", "VBN", "VB", "VBG", "VBP", "VBZ")} == {
        "VBD": "past",
        "VBN": "past",
        "VB": "present",
        "VBG": "present",
        "VBP": "present",
        "VBZ": "present",
    }
    with pytest.raises(ValueError, match="not a Penn Treebank verb tag"):
        ci.verb_tense("NN")


def _occ(counts: dict) -> pd.DataFrame:
    rows = [(lemma, sense) for (lemma, sense), n in counts.items() for _ in range(n)]
    return pd.DataFrame(rows, columns=["lemma", "sense"]).assign(tense="past")


def test_selection_keeps_verbs_with_two_senses_of_ten_occurrences_each():
    occ = _occ(
        {("run", "1"): 10, ("run", "2"): 10, ("have", "1"): 10, ("have", "2"): 9, ("say", "1"): 12}
        | {("say", "2"): 11, ("say", "3"): 3, ("go", "1"): 40}
    )
    kept = ci.select_polysemous_verbs(occ)
    assert kept.groupby(["lemma", "sense"]).size().to_dict() == {
        ("run", "1"): 10,
        ("run", "2"): 10,
        ("say", "1"): 12,
        ("say", "2"): 11,  # "say" sense 3 (3 occurrences) and "have" (one sense of 9) and "go" (one sense) go
    }
    assert len(ci.select_polysemous_verbs(occ, min_count=9)) == 10 + 10 + 10 + 9 + 12 + 11
    with pytest.raises(ValueError, match="at least 1"):
        ci.select_polysemous_verbs(occ, min_count=0)


def test_distances_agree_with_scipy_cdist(rng):
    A, B = rng.standard_normal((7, 5)) * 3 + 10, rng.standard_normal((4, 5))
    np.testing.assert_allclose(ci.pairwise_distances(A, B), cdist(A, B), rtol=1e-10, atol=1e-10)
    assert np.abs(np.diag(ci.pairwise_distances(A, A))).max() < 1e-6


def test_anchor_distances_are_the_group_means_of_cdist(rng):
    X = rng.standard_normal((6, 4))
    senses, tenses = ["a", "a", "b", "a", "b", "a"], ["p", "p", "p", "q", "q", "q"]
    D = cdist(X, X)
    got = ci.anchor_distances(X, senses, tenses)
    for i in range(6):
        same_s = np.array([s == senses[i] for s in senses])
        same_t = np.array([t == tenses[i] for t in tenses])
        other = np.arange(6) != i
        for g, mask in (("st_sm", same_t & same_s & other), ("st_dm", same_t & ~same_s), ("dt_sm", ~same_t & same_s)):
            want = D[i, mask].mean() if mask.any() else np.nan
            np.testing.assert_allclose(got[g][i], want, rtol=1e-10, equal_nan=True)


def _planted(rng, tense_scale: float, sense_scale: float, n_verbs=4, per_cell=12, dim=24):
    """Occurrences of polysemous verbs: a shared tense direction, a sense direction per verb, noise."""
    tense_dir = np.eye(dim)[0]
    X, lemmas, senses, tenses = [], [], [], []
    for v in range(n_verbs):
        base = rng.standard_normal(dim) * 0.5
        sense_dirs = {s: rng.standard_normal(dim) / np.sqrt(dim) for s in ("1", "2")}
        for s in ("1", "2"):
            for t, sign in (("past", 1.0), ("present", -1.0)):
                for _ in range(per_cell):
                    x = base + sign * tense_scale * tense_dir + sense_scale * sense_dirs[s]
                    X.append(x + 0.3 * rng.standard_normal(dim))
                    lemmas.append(f"v{v}"), senses.append(s), tenses.append(t)
    return np.array(X), lemmas, senses, tenses


def test_planted_tense_dominates_until_its_direction_is_removed(rng):
    X, lemmas, senses, tenses = _planted(rng, tense_scale=8.0, sense_scale=6.0)
    base = ci.tense_meaning_distances(X, lemmas, senses, tenses)
    # as constructed: tense moves a vector furthest, then sense, then noise only
    assert base["st_sm"] < base["st_dm"] < base["dt_sm"]
    assert base["n_verbs"] == 4 and base["n_anchors"] == len(X)
    # the global method removes the dominant (tense) direction: meaning now dominates, DT-SM below ST-DM (the
    # paper's reading of Table 4)
    after = ci.tense_meaning_distances(ci.all_but_the_top(X, 1), lemmas, senses, tenses)
    assert after["dt_sm"] < after["st_dm"] and after["st_sm"] < after["st_dm"]
    assert all(after[f"{g}_spread"] >= 0 for g in ("st_sm", "st_dm", "dt_sm"))


def test_spread_is_the_sd_of_one_sampled_anchor_per_verb(rng):
    X, lemmas, senses, tenses = _planted(rng, tense_scale=2.0, sense_scale=2.0, n_verbs=3, per_cell=3)
    out = ci.tense_meaning_distances(X, lemmas, senses, tenses)
    lemmas = np.array(lemmas)
    per_verb = [ci.anchor_distances(X[lemmas == v], np.array(senses)[lemmas == v], np.array(tenses)[lemmas == v])
                for v in ("v0", "v1", "v2")]  # fmt: skip
    # every (anchor of v0, anchor of v1, anchor of v2) draw: its mean over verbs, exactly enumerated
    draws = np.array(
        [[a, b, c] for a in per_verb[0]["st_dm"] for b in per_verb[1]["st_dm"] for c in per_verb[2]["st_dm"]]
    )
    np.testing.assert_allclose(out["st_dm"], draws.mean(1).mean(), rtol=1e-12)
    np.testing.assert_allclose(out["st_dm_spread"], draws.mean(1).std(), rtol=1e-12)


def test_groups_below_the_rule_are_refused_or_skipped(rng):
    X = rng.standard_normal((6, 4))
    # no occurrence has a different-tense same-sense neighbour: nothing to compare
    with pytest.raises(ValueError, match="all three groups"):
        ci.tense_meaning_distances(X, ["a"] * 6, ["1", "1", "1", "2", "2", "2"], ["p", "p", "p", "p", "p", "p"])
    # a verb without such an occurrence is skipped, the others count
    X2, lemmas, senses, tenses = _planted(rng, 2.0, 2.0, n_verbs=1, per_cell=2, dim=4)
    out = ci.tense_meaning_distances(
        np.vstack([X2, X]), lemmas + ["a"] * 6, senses + ["1", "1", "1", "2", "2", "2"], tenses + ["p"] * 6
    )
    assert out["n_verbs"] == 1 and out["n_anchors"] == len(X2)
    with pytest.raises(ValueError, match="rows but"):
        ci.tense_meaning_distances(X, ["a"] * 5, ["1"] * 6, ["p"] * 6)


# ---------------------------------------------------------------------------------------- word vectors
_WORDS = ["dog", "house", "quick", "brown", "lazy", "world", "tokens", "embedding", "spaces", "guitar"]


def _sentences(rng, n=24):
    """Synthetic sentences with one tagged verb each (``run``/``jump``, two senses, past and present)."""
    out = []
    for k in range(n):
        words = list(rng.choice(_WORDS, size=int(rng.integers(3, 8))))
        lemma = ("run", "jump")[k % 2]
        form = {("run", "VBD"): "ran", ("run", "VBZ"): "runs", ("jump", "VBD"): "jumped", ("jump", "VBZ"): "jumps"}
        tag = ("VBD", "VBZ")[(k // 2) % 2]
        j = int(rng.integers(0, len(words)))
        words.insert(j, form[lemma, tag])
        words.append(".")
        sense = str(1 + (k // 4) % 2)
        out.append(SemcorSentence("brown1/x", str(k), tuple(words), (VerbToken(j, lemma, sense, tag),)))
    return out


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_a_verb_vector_is_the_mean_of_its_pieces_rows(rng, family, tmp_path):
    model = resolve_model(f"tiny-{family}")
    sentences = _sentences(rng)
    occ = ci.verb_occurrences(sentences)
    X, kept = ci.verb_vectors(model, sentences, occ, cache_dir=tmp_path, progress=False)
    assert kept.all() and X.shape == (len(occ), model.spec.hidden_size)
    # independently: the pieces whose character offsets fall inside the verb's characters and the space before
    # it (a byte-level BPE may keep that space as a piece of its own, "Ġ", which belongs to the word after it)
    emb = embed_sentences(model, [s.text for s in sentences], layer=-1, progress=False)
    for k, s in enumerate(sentences):
        j = s.verbs[0].index
        start = len(" ".join(s.tokens[:j]))  # the space before the word (none for the first)
        end = start + (1 if j else 0) + len(s.tokens[j])
        enc = model.tokenizer(s.text, add_special_tokens=False, return_offsets_mapping=True)
        inside = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < end and b > start]
        np.testing.assert_allclose(X[k], emb.tokens[k][inside].mean(0), rtol=1e-6, atol=1e-6)


def test_the_chapter_step_records_table_4_only_where_the_profile_asks(rng, monkeypatch, tmp_path):
    sentences = _sentences(rng, n=48)
    monkeypatch.setattr(E, "load_semcor", lambda: sentences)
    model = resolve_model("tiny-bert")
    cfg = SimpleNamespace(
        semcor=True, semcor_min_count=5, model_specs=["tiny-bert"], models=[ModelRef.parse("tiny-bert")]
    )
    table = ci.semcor_experiment(cfg, lambda name: model, {"tiny-bert": {"global_pc": 2}}, cache_dir=tmp_path)
    assert list(table["variant"]) == ["base", "removed_pcs"] and (table["n_verbs"] == 2).all()
    rec = ci.semcor_records(table, cfg)
    slug = ModelRef.parse("tiny-bert").slug
    for variant in ("base", "removed_pcs"):
        for g in ("st_sm", "st_dm", "dt_sm"):
            assert np.isfinite(rec[f"semcor_{slug}_{variant}_{g}"]) and rec[f"semcor_{slug}_{variant}_{g}_spread"] >= 0
        assert 0 < rec[f"semcor_{slug}_{variant}_isotropy"] <= 1
    assert set(rec) == {k for k in rec if k.startswith("semcor_")} and "semcor_removed_pcs_dt_sm_minus_st_dm_max" in rec
    off = SimpleNamespace(semcor=False)
    assert ci.semcor_experiment(off, None, {}).empty and ci.semcor_records(pd.DataFrame(), off) == {}


def test_the_semcor_part_is_paper_only():
    from replib.config import chapter_parts

    paper = {p.name: p for p in chapter_parts("cluster_isotropy", "paper")}
    assert paper["semcor"].steps == ("semcor",) and paper["semcor"].records == ("semcor_*",)
    assert set(paper["semcor"].models) == {"gpt2", "bert-base-uncased", "roberta-base"}
    assert all(
        "semcor" not in {p.name for p in chapter_parts("cluster_isotropy", prof)} for prof in ("smoke", "offline")
    )
