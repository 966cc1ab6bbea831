"""Cai et al. 2021 chapter: S_inter/S_intra against brute force, LID variants against each other and
scikit-dimension, duplicates, cluster choice (seed determinism, 0.1 threshold), token kinds."""

import numpy as np
import pandas as pd
import pytest
from sklearn.cluster import KMeans

from replib.config import chapter_config
from replib.methods import manifolds as mf
from replib.metrics.lid import cai_over_levina_bickel, lid_mle, lid_mle_variants
from replib.metrics.types import _per_type_cosines


def _brute_mean_offdiag_cos(V):
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    C = U @ U.T
    n = len(V)
    return (C.sum() - np.trace(C)) / (n * (n - 1))


@pytest.fixture
def typed_cloud():
    rng = np.random.default_rng(3)
    n, d = 600, 16
    types = rng.choice([f"t{i}" for i in range(40)], size=n, p=np.r_[0.3, np.full(39, 0.7 / 39)])
    X = rng.normal(size=(n, d)) + 2.0 * rng.normal(size=d)
    return X, types


# ------------------------------------------------------------------------------- S_inter / S_intra
def test_s_inter_equals_brute_force_one_instance_per_type(typed_cloud):
    X, types = typed_cloud
    got = mf.s_inter(X, types, seed=5)
    # reproduce the draw: one instance per type, first in the seeded permutation
    order = np.random.default_rng(5).permutation(len(types))
    codes, _ = mf.type_codes(types)
    _, first = np.unique(codes[order], return_index=True)
    pick = order[first]
    assert len(pick) == len(set(types))
    assert got == pytest.approx(_brute_mean_offdiag_cos(X[pick]), abs=1e-12)


def test_s_inter_and_s_intra_of_integer_codes_equal_those_of_the_strings(typed_cloud):
    """A layer's analysis groups by the types' integer codes (coded once): the same draws, the same values,
    on the whole cloud and on any subset of its rows (a cluster)."""
    X, types = typed_cloud
    strings = np.array([f"tok{t}" for t in types])
    codes, _ = mf.type_codes(strings)
    for rows in (np.arange(len(X)), np.flatnonzero(np.arange(len(X)) % 3 != 0)):
        for seed in (0, 7):
            assert mf.s_inter(X[rows], codes[rows], seed) == mf.s_inter(X[rows], strings[rows], seed)
            assert mf.s_intra(X[rows], codes[rows], 5, seed) == mf.s_intra(X[rows], strings[rows], 5, seed)


def test_s_inter_picks_one_instance_of_every_type(typed_cloud):
    X, types = typed_cloud
    # every type's instances identical -> S_inter independent of the draw and equal to brute force over types
    uniq = np.unique(types)
    proto = {t: np.random.default_rng(i).normal(size=X.shape[1]) for i, t in enumerate(uniq)}
    Y = np.array([proto[t] for t in types])
    ref = _brute_mean_offdiag_cos(np.array([proto[t] for t in uniq]))
    assert mf.s_inter(Y, types, seed=0) == pytest.approx(ref, abs=1e-12)
    assert mf.s_inter(Y, types, seed=9) == pytest.approx(ref, abs=1e-12)


def test_s_intra_equals_brute_force_mean_over_types(typed_cloud):
    X, types = typed_cloud
    got = mf.s_intra(X, types, max_per_type=10_000)  # no subsampling: deterministic
    vals = [_brute_mean_offdiag_cos(X[types == t]) for t in np.unique(types) if (types == t).sum() >= 2]
    assert got == pytest.approx(np.mean(vals), abs=1e-12)


def test_s_intra_caps_instances_per_type(typed_cloud):
    X, types = typed_cloud
    codes, _ = mf.type_codes(types)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos, tcodes = _per_type_cosines(U, codes, 7, np.random.default_rng(0))
    big = np.bincount(codes).argmax()
    assert np.bincount(codes)[big] > 7
    # the capped type's value is the brute-force mean of *some* 7 of its instances: check the bound
    members = np.flatnonzero(codes == big)
    full = _brute_mean_offdiag_cos(X[members])
    assert abs(cos[tcodes == big][0] - full) < 0.5
    # reproduce exactly: the first 7 of the seeded permutation restricted to that type
    order = np.random.default_rng(0).permutation(len(codes))
    chosen = [i for i in order if codes[i] == big][:7]
    assert cos[tcodes == big][0] == pytest.approx(_brute_mean_offdiag_cos(X[chosen]), abs=1e-12)


def test_s_intra_skips_singletons_and_centering_matters(typed_cloud):
    X, types = typed_cloud
    t2 = types.copy()
    t2[0] = "singleton"
    vals = [_brute_mean_offdiag_cos(X[t2 == t]) for t in np.unique(t2) if (t2 == t).sum() >= 2]
    assert mf.s_intra(X, t2, max_per_type=10_000) == pytest.approx(np.mean(vals), abs=1e-12)
    # a shared offset makes everything similar; centring removes it
    assert mf.s_inter(X, types) > 0.5
    assert abs(mf.s_inter(X, types, center=True)) < 0.2


def test_s_inter_rejects_bad_input():
    with pytest.raises(ValueError):
        mf.s_inter(np.ones((5, 3)), ["a"] * 4)
    with pytest.raises(ValueError):
        mf.s_intra(np.ones((5, 3)), list("abcde"), max_per_type=1)


# ------------------------------------------------------------------------------------------ clusters
def _blobs(seed=0, sep=12.0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(4, 10)) * sep
    X = np.vstack([c + rng.normal(size=(150, 10)) for c in centers])
    return X, np.repeat(np.arange(4), 150)


def test_choose_clusters_finds_separated_blobs_and_is_deterministic():
    X, truth = _blobs()
    a = mf.choose_clusters(X, ks=range(2, 7), sil_sample=300, n_init=1, seed=1)
    b = mf.choose_clusters(X, ks=range(2, 7), sil_sample=300, n_init=1, seed=1)
    assert a.k == 4
    assert a.silhouettes == b.silhouettes
    assert np.array_equal(a.labels, b.labels)
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(truth, a.labels) > 0.99


def test_choose_clusters_threshold_gives_one_cluster_on_a_gaussian():
    X = np.random.default_rng(0).normal(size=(500, 20))
    c = mf.choose_clusters(X, ks=range(2, 5), n_init=1, seed=0)
    assert c.best_silhouette < 0.1
    assert c.k == 1 and set(np.unique(c.labels)) == {0}
    # the same data pass when the threshold is below the best silhouette
    c2 = mf.choose_clusters(X, ks=range(2, 5), n_init=1, seed=0, threshold=c.best_silhouette - 1e-9)
    assert c2.k == c.best_k > 1


def test_choose_clusters_subsample_fit_assigns_every_row():
    X, _ = _blobs(2)
    c = mf.choose_clusters(X, ks=[2, 3, 4, 5], n_fit=200, sil_sample=None, n_init=2, seed=0)
    assert len(c.labels) == len(X) and c.k == 4
    with pytest.raises(ValueError):
        mf.choose_clusters(X, ks=[1, 2])


def test_cluster_centered_isotropy_per_cluster_values_and_deflation():
    X, truth = _blobs(sep=20.0)
    X = X + 50.0  # shared offset: raw cosines near 1
    types = np.array([f"w{i % 30}" for i in range(len(X))])
    out = mf.cluster_centered_isotropy(X, types, truth, seed=0)
    assert out["k"] == 4
    for row in out["per_cluster"]:
        m = truth == row["cluster"]
        Xc = X[m] - X[m].mean(axis=0)
        assert row["s_inter"] == pytest.approx(mf.s_inter(Xc, types[m], seed=0), abs=1e-12)
        assert row["s_intra"] == pytest.approx(mf.s_intra(Xc, types[m], seed=0), abs=1e-12)
        assert not row["deflated"]
    assert abs(out["s_inter"]) < 0.1 < mf.s_inter(X, types)
    assert out["isoscore_mean"] > 0.8  # isotropic blobs
    # a cluster smaller than the dimension is flagged and left out of isoscore_mean
    lab = truth.copy()
    lab[:5] = 9
    out2 = mf.cluster_centered_isotropy(X, types, lab, seed=0)
    small = [r for r in out2["per_cluster"] if r["cluster"] == 9][0]
    assert small["deflated"] and out2["n_deflated"] == 1
    assert small["isoscore"] < 0.6 and out2["isoscore_mean"] > 0.8


# ----------------------------------------------------------------------------------------------- LID
@pytest.fixture(scope="module")
def manifold5():
    rng = np.random.default_rng(0)
    return rng.normal(size=(1500, 5)) @ rng.normal(size=(5, 40))


@pytest.mark.parametrize("k", [10, 100])
def test_levina_bickel_matches_scikit_dimension(manifold5, k):
    skdim = pytest.importorskip("skdim")
    ours = lid_mle(manifold5, k=k, variant="levina_bickel", backend="sklearn")  # skdim's neighbour search
    theirs = skdim.id.MLE().fit(manifold5, n_neighbors=k).dimension_pw_
    assert np.max(np.abs(ours.pointwise - theirs)) < 1e-10
    assert ours.mean == pytest.approx(np.mean(theirs), abs=1e-10)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_cai_variant_is_exact_multiple_of_levina_bickel(manifold5, metric):
    cai = lid_mle(manifold5, k=100, metric=metric, variant="cai")
    lb = lid_mle(manifold5, k=100, metric=metric, variant="levina_bickel")
    assert cai_over_levina_bickel(100) == pytest.approx(100 / 198)
    assert np.max(np.abs(cai.pointwise / lb.pointwise - 100 / 198)) < 1e-12
    assert 4.0 < lb.mean < 6.0 if metric == "euclidean" else 3.0 < lb.mean < 6.0


def test_cai_formula_against_faiss_style_brute_force(manifold5):
    X = manifold5[:400]
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)  # squared L2, as FAISS IndexFlatL2
    D = np.sort(D2, axis=1)[:, 1:21]  # drop self, 20 neighbours
    ref = -1.0 / np.mean(np.log(D / D[:, -1:]), axis=1)
    ours = lid_mle(X, k=20, variant="cai")
    assert np.max(np.abs(ours.pointwise - ref)) < 1e-9
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    Dc = np.sort(1.0 - U @ U.T, axis=1)[:, 1:21]  # 1 - cos, as IndexFlatIP on unit vectors
    Dc = np.where(Dc <= 0, 1e-8, Dc)
    refc = -1.0 / np.mean(np.log(Dc / Dc[:, -1:]), axis=1)
    assert np.max(np.abs(lid_mle(X, k=20, metric="cosine", variant="cai").pointwise - refc)) < 1e-6


def test_lid_duplicates_reported_and_dropped(manifold5):
    skdim = pytest.importorskip("skdim")
    X = np.vstack([manifold5[:300], manifold5[:100]])
    kept = lid_mle(X, k=30, variant="levina_bickel")
    assert kept.n_duplicates == 100 and kept.n_zero_distance == 200
    assert np.sum(kept.pointwise == 0) == 200
    theirs = skdim.id.MLE().fit(X, n_neighbors=30).dimension_pw_
    dup = np.r_[np.arange(100), np.arange(300, 400)]
    rest = np.arange(100, 300)
    assert np.max(np.abs(kept.pointwise[rest] - theirs[rest])) < 1e-10
    # skdim sees the copies at a round-off distance (0 or tiny): LID 0 or an arbitrary small number
    assert np.max(theirs[dup]) < 0.5 * np.median(theirs[rest])
    dropped = lid_mle(X, k=30, variant="levina_bickel", duplicates="drop")
    assert dropped.n_index == 300 and dropped.n_zero_distance == 0
    ref = lid_mle(manifold5[:300], k=30, variant="levina_bickel")
    assert np.allclose(dropped.pointwise, ref.pointwise, atol=1e-12)
    cai = lid_mle(X, k=30, variant="cai")
    # the authors' 1e-8 clamp of the zero distance pulls their estimate far down at duplicated points
    assert np.max(cai.pointwise[:100]) < 0.6 * np.median(cai.pointwise[100:300])


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_lid_variants_from_one_search_equal_each_variant_alone(manifold5, metric):
    X = np.vstack([manifold5[:300], manifold5[:20]])  # with duplicates: the clamp and the zero distances too
    both = lid_mle_variants(X, 30, metric, ("cai", "levina_bickel"), n_queries=150, seed=4)
    assert list(both) == ["cai", "levina_bickel"]
    for variant, r in both.items():
        alone = lid_mle(X, 30, metric, variant, n_queries=150, seed=4)
        np.testing.assert_array_equal(r.pointwise, alone.pointwise)
        np.testing.assert_array_equal(r.query_index, alone.query_index)
        assert {k: v for k, v in vars(r).items() if k not in ("pointwise", "query_index")} == {
            k: v for k, v in vars(alone).items() if k not in ("pointwise", "query_index")
        }
    with pytest.raises(ValueError, match="variant must be one of"):
        lid_mle_variants(X, 30, metric, ("cai", "mle"))


def test_lid_torch_backend_matches_sklearn(manifold5):
    pytest.importorskip("torch")
    a = lid_mle(manifold5[:800], k=50, n_queries=300, backend="sklearn")
    b = lid_mle(manifold5[:800], k=50, n_queries=300, backend="torch", device="cpu")
    assert np.max(np.abs(a.pointwise - b.pointwise)) < 1e-9


def test_lid_query_subsample_and_errors(manifold5):
    full = lid_mle(manifold5, k=20)
    sub = lid_mle(manifold5, k=20, n_queries=200, seed=3)
    assert len(sub.pointwise) == 200
    assert np.allclose(sub.pointwise, full.pointwise[sub.query_index], atol=1e-12)
    assert np.array_equal(sub.query_index, lid_mle(manifold5, k=20, n_queries=200, seed=3).query_index)
    for bad in [
        dict(metric="manhattan"),
        dict(variant="x"),
        dict(k=1),
        dict(duplicates="jitter"),
        dict(backend="annoy"),
    ]:
        with pytest.raises(ValueError):
            lid_mle(manifold5, **bad)
    with pytest.raises(ValueError):
        lid_mle(manifold5[:10], k=20)


@pytest.mark.parametrize("variant,metric", [("cai", "euclidean"), ("levina_bickel", "euclidean"), ("cai", "cosine")])
def test_lid_backends_agree(manifold5, variant, metric):
    """FAISS (float32 candidates, float64 distances) gives scikit-learn's exact float64 result."""
    pytest.importorskip("faiss")
    X = np.vstack([manifold5, manifold5[:7]])  # with exact duplicates
    ref = lid_mle(X, k=20, variant=variant, metric=metric, backend="sklearn")
    got = lid_mle(X, k=20, variant=variant, metric=metric, backend="faiss")
    np.testing.assert_allclose(got.pointwise, ref.pointwise, rtol=1e-9, atol=1e-9)
    assert got.n_zero_distance == ref.n_zero_distance


def test_lid_with_faiss_and_n_jobs_leaves_the_process_thread_count_alone(manifold5):
    """FAISS sets OpenMP's thread count for the whole process (torch shares it): a search on one thread must
    not leave torch on one thread (CI found it: a training run then resumed differently in another process)."""
    faiss = pytest.importorskip("faiss")
    torch = pytest.importorskip("torch")
    before = (faiss.omp_get_max_threads(), torch.get_num_threads())
    lid_mle(manifold5, k=20, backend="faiss", n_jobs=1 if before[0] > 1 else 2)
    assert (faiss.omp_get_max_threads(), torch.get_num_threads()) == before


# --------------------------------------------------------------------------------------- token kinds
@pytest.mark.parametrize(
    "tok,kind",
    [
        ("[CLS]", "special"),
        ("<unk>", "special"),
        ("<|endoftext|>", "special"),
        (",", "punctuation"),
        ("Ġ.", "punctuation"),
        ("@-@", "punctuation"),
        ("1990", "number"),
        ("Ġ1,000", "number"),
        ("3.5", "number"),
        ("the", "word"),
        ("##ing", "word"),
        ("Ġthe", "word"),
        ("the</w>", "word"),
    ],
)
def test_token_kind(tok, kind):
    assert mf.token_kind(tok) == kind


def test_type_frequencies_and_pca_view():
    toks = ["a", "b", "a", "c", "a"]
    assert list(mf.type_frequencies(toks)) == [3, 1, 3, 1, 3]
    X = np.random.default_rng(0).normal(size=(300, 6)) * [10, 5, 1, 1, 1, 1]
    v = mf.pca_view(X, 2, n_points=50)
    assert v["coords"].shape == (50, 2) and v["explained"][0] > v["explained"][1]


def test_config_profiles():
    for p in ("smoke", "offline", "paper"):
        cfg = chapter_config("manifolds", p)
        assert cfg.threshold == 0.1 and cfg.max_per_type == 1000
        assert set(cfg.named_models) <= set(cfg.swiss_layers)  # every model has its Swiss-roll views
    paper = chapter_config("manifolds", "paper")
    assert paper.lid_k == 100 and paper.ks == tuple(range(2, 16))
    assert dict(paper.named_models) == {name: (spec, n) for name, (spec, n) in mf.PAPER_MODELS.items()}
    with pytest.raises(ValueError):
        chapter_config("manifolds", "huge")


def test_a_readers_models_are_named_by_their_slug_and_get_swiss_roll_views(tmp_path):
    folder = tmp_path / "my_encoder"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert", "num_hidden_layers": 6}')
    cfg = chapter_config("manifolds", "smoke", models=[str(folder), "gpt2"])
    mine = cfg.models[0].slug
    assert dict(cfg.named_models) == {mine: (str(folder), 6), "GPT2": ("gpt2", 12)}  # paper names stay
    assert cfg.swiss_layers[mine] == (1, 3, 5) and cfg.swiss_layers["GPT2"] == (1, 6, 11)
    assert chapter_config("manifolds", "paper", models=["gpt2"]).swiss_layers["GPT2"] == (2, 6)  # the paper's
    assert mf.layer_passes(5, None) == [[0, 1, 2, 3, 4]] and mf.layer_passes(5, 2) == [[0, 1], [2, 3], [4]]


def test_refine_is_the_exact_distance_whatever_the_threads_and_blocks():
    """The candidate refinement equals a direct float64 computation, for any block size (including a last,
    partial block) and any number of threads: each block writes only its own rows."""
    from replib.metrics.lid import _refine

    rng = np.random.default_rng(11)
    index, queries = rng.normal(size=(300, 24)), rng.normal(size=(101, 24))
    cand = np.stack([rng.choice(300, size=12, replace=False) for _ in range(101)])
    direct = np.linalg.norm(index[cand] - queries[:, None, :], axis=2)
    want_idx = np.take_along_axis(cand, np.argsort(direct, axis=1, kind="stable")[:, :5], 1)
    want = np.sort(direct, axis=1)[:, :5]
    for block in (1, 7, 32, 500):
        for n_jobs in (1, 2, 3):
            d, i = _refine(index, queries, cand, 5, block=block, n_jobs=n_jobs)
            np.testing.assert_array_equal(i, want_idx)
            np.testing.assert_allclose(d, want, rtol=1e-15, atol=0)


def test_unique_rows_hash_grouping_is_exact_even_on_a_collision():
    """Duplicate detection by row hash equals the exact sort of the rows' bytes, and two different rows
    built to share the hash are still told apart (the byte check sends them to the exact path)."""
    from replib.metrics.lid import _unique_rows

    def exact(X):
        v = np.ascontiguousarray(X).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
        _, first, inverse = np.unique(v, return_index=True, return_inverse=True)
        return np.sort(first), first[inverse.ravel()]

    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 16))
    X[[10, 20, 30]] = X[3]
    X[40] = -0.0 * X[40]  # signed zeros are other bytes: a distinct row, as for the exact sort
    for A in (X, X.astype(np.float32)):
        first, first_of = _unique_rows(A)
        want_first, want_of = exact(A)
        np.testing.assert_array_equal(np.sort(first), want_first)
        np.testing.assert_array_equal(first_of, want_of)
    mult = np.random.default_rng(0x5EED).integers(1, 2**63, size=16, dtype=np.uint64) | np.uint64(1)
    W = X.copy().view(np.uint64)
    W[1] = W[0]
    with np.errstate(over="ignore"):  # (w0 + m1) m0 + (w1 - m0) m1 = w0 m0 + w1 m1 (mod 2**64)
        W[1, 0] += mult[1]
        W[1, 1] -= mult[0]
    assert np.einsum("ij,j->i", W[:2], mult).tolist()[0] == np.einsum("ij,j->i", W[:2], mult).tolist()[1]
    assert (W[0] != W[1]).any()  # same hash, other bytes
    Y = W.view(np.float64)
    first, first_of = _unique_rows(Y)
    want_first, want_of = exact(Y)
    np.testing.assert_array_equal(np.sort(first), want_first)
    np.testing.assert_array_equal(first_of, want_of)
    assert first_of[1] == 1


def test_layers_in_worker_processes_give_the_serial_results():
    """analyse_layers in two loky workers returns, layer by layer, exactly what the serial loop returns."""
    rng = np.random.default_rng(7)
    types = rng.choice([f"w{i}" for i in range(30)], size=400)
    layers = {i: (rng.normal(size=(400, 12)) + rng.normal(size=12) * (i + 1)).astype(np.float32) for i in range(3)}
    cfg = chapter_config("manifolds", "smoke").replace(
        ks=(2, 3), sil_sample=200, kmeans_fit=None, lid_k=10, lid_queries=100
    )
    serial = mf.analyse_layers(layers, types, cfg, seed=3, n_jobs=1, progress=False)
    parallel = mf.analyse_layers(layers, types, cfg, seed=3, n_jobs=2, progress=False)
    assert len(serial) == len(parallel) == 3
    for a, b in zip(serial, parallel):
        np.testing.assert_array_equal(a.pop("labels"), b.pop("labels"))
        assert a == b
    assert mf.layer_jobs({"threads": 1}, 1) == 1 and mf.layer_jobs({"threads": None}, 12) == 1
    assert mf.layer_jobs({"threads": 1, "layer_jobs": 4}, 3) == 3
    with pytest.raises(ValueError, match="layer_jobs must be >= 1"):
        mf.layer_jobs({"layer_jobs": 0}, 3)


# ------------------------------------------------------------------------ an unbalanced clustering
def _isolated_pair(n=600, d=8, seed=0):
    """A Gaussian ball and two far, isolated vectors: k-means with k = 2 puts the pair in a cluster of its own,
    which a random silhouette sample of 50 rows misses most of the time."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:2] += 50.0
    return X


@pytest.mark.probe(
    "a silhouette sample of an unbalanced clustering that holds one label; an exception in a joblib worker",
    "`choose_clusters` goes on; the failed chapter's one-line error names the exception",
)
def test_choose_clusters_survives_a_silhouette_sample_with_one_cluster():
    """Issue 28 item 16: scikit-learn's sampled silhouette raised "Number of labels is 1" when its random sample
    of an unbalanced clustering held one cluster (the manifolds chapter died this way with seeds other than
    0 and 1)."""
    from sklearn.metrics import silhouette_score

    X = _isolated_pair()
    labels = (np.arange(len(X)) < 2).astype(int)
    crashing = []
    for seed in range(6):
        try:
            silhouette_score(X, labels, sample_size=50, random_state=seed)
        except ValueError as e:
            assert "Number of labels is 1" in str(e)
            crashing.append(seed)
    assert crashing, "the fixture must reproduce the crash of the sampled silhouette"
    for seed in crashing:
        choice = mf.choose_clusters(X, ks=(2, 3), sil_sample=50, n_init=2, seed=seed)
        assert np.isfinite(choice.silhouettes[2]) and np.isfinite(choice.best_silhouette)
        again = mf.choose_clusters(X, ks=(2, 3), sil_sample=50, n_init=2, seed=seed)
        np.testing.assert_array_equal(again.labels, choice.labels)  # still a seeded function of the data


def test_choose_clusters_silhouettes_are_sklearns_sampled_ones_from_one_distance_matrix():
    """Every k scores the same sampled rows: their distance matrix is computed once, and each silhouette is still
    scikit-learn's sampled silhouette of that k's clustering."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(c, 1.0, size=(150, 6)) for c in (0.0, 5.0, 10.0)])
    choice = mf.choose_clusters(X, ks=(2, 3, 4), sil_sample=200, n_init=2, seed=1)
    for k in (2, 3, 4):
        labels = KMeans(n_clusters=k, n_init=2, random_state=1).fit(X).labels_
        ref = silhouette_score(X, labels, sample_size=200, random_state=1)
        assert choice.silhouettes[k] == pytest.approx(ref, abs=1e-12)
    assert choice.k == 3


def test_silhouette_rows_are_sklearns_draw_unless_it_holds_one_cluster():
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5))
    labels = rng.integers(0, 4, 400)
    for seed in range(3):  # a balanced clustering: exactly scikit-learn's sampled value
        rows = mf.silhouette_rows(labels, 100, seed)
        assert len(rows) == 100 == len(set(rows.tolist()))
        assert silhouette_score(X[rows], labels[rows]) == silhouette_score(
            X, labels, sample_size=100, random_state=seed
        )
    assert mf.silhouette_rows(labels, None, 0) is None and mf.silhouette_rows(labels, 400, 0) is None
    lonely = (np.arange(400) == 7).astype(int)  # one row of cluster 1
    for seed in range(5):
        rows = mf.silhouette_rows(lonely, 20, seed)
        assert len(rows) == 20 == len(set(rows.tolist())) and 7 in rows and set(lonely[rows]) == {0, 1}
        order = np.random.RandomState(seed).permutation(400)
        assert list(rows[:-1]) == list(order[:19])  # the draw, its last row swapped for the other cluster's


def _two_clusters(rng, n_types: int, noise: np.ndarray):
    """Two clusters of types around opposite centres, every type ``n_inst`` instances around its own offset;
    ``noise`` (one scale per type) sets how tightly a type's instances sit together."""
    n_inst, d = 6, 16
    types = np.repeat(np.arange(n_types), n_inst)
    labels = types % 2
    centres = np.where(labels[:, None] == 0, 3.0, -3.0) * np.eye(d)[0]
    offsets = rng.normal(size=(n_types, d))[types]
    X = centres + offsets + noise[types, None] * rng.normal(size=(len(types), d))
    return X, types.astype(str), labels


def test_the_type_cosines_of_the_intra_drop_are_those_of_s_intra(rng):
    # an independent path: s_intra on the raw rows and cluster_centered_isotropy on the clusters; max_per_type
    # 4 < 6 instances, so the draw of instances must be the same too
    X, tokens, labels = _two_clusters(rng, 40, np.full(40, 0.5))
    codes, _ = mf.type_codes(tokens)
    raw, inside = mf.intra_type_cosines(X, codes, labels, max_per_type=4, seed=3)
    assert raw[0].mean() == pytest.approx(mf.s_intra(X, tokens, 4, 3), abs=1e-12)
    cc = mf.cluster_centered_isotropy(X, tokens, labels, 4, 3)
    assert np.mean([cos.mean() for cos, _ in inside]) == pytest.approx(cc["s_intra"], abs=1e-12)


def test_every_ks_silhouette_shares_one_distance_matrix_and_the_backends_agree(monkeypatch):
    """Below the silhouette's sample size scikit-learn computed the distances again for each k (a GPU
    rehearsal of the chapter spent its time there): now once, with the same silhouettes; the exact torch
    silhouette (the backend on a GPU) gives them too."""
    from sklearn.metrics import silhouette_score

    import replib.methods.manifolds.clusters as C

    X, _ = _blobs(sep=2.0)
    calls = []
    real = C.pairwise_distances
    monkeypatch.setattr(C, "pairwise_distances", lambda *a, **k: calls.append(1) or real(*a, **k))
    a = mf.choose_clusters(X, ks=range(2, 7), sil_sample=None, n_init=1, seed=1, backend="sklearn")
    assert len(calls) == 1
    for k, v in a.silhouettes.items():
        labels = KMeans(n_clusters=k, n_init=1, random_state=1).fit(X).labels_
        assert v == pytest.approx(silhouette_score(X, labels), abs=1e-12)
    b = mf.choose_clusters(X, ks=range(2, 7), sil_sample=None, n_init=1, seed=1, backend="torch")
    assert b.k == a.k == 4 and b.silhouettes[4] == pytest.approx(a.silhouettes[4], abs=1e-10)  # the same partition
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(a.labels, b.labels) == 1.0
    with pytest.raises(ValueError, match="backend"):
        mf.choose_clusters(X, ks=[2], backend="faiss")


def test_kmeans_torch_reaches_scikit_learns_inertia():
    """The GPU path's k-means (run here on the CPU) against scikit-learn's on overlapping clusters, where
    restarts matter: the best of ten restarts within 0.5 % of scikit-learn's inertia; the same seed gives the
    same centres; an empty start cluster is re-seeded."""
    from sklearn.metrics import pairwise_distances_argmin as nearest_centers

    from replib.methods.manifolds.clusters import kmeans_torch

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 20)) + rng.normal(size=(6, 20))[rng.integers(0, 6, 3000)] * 1.5
    for k in (2, 6, 11):
        C = kmeans_torch(X, k, n_init=10, seed=0, device="cpu")
        inertia = float(((X - C[nearest_centers(X, C)]) ** 2).sum())
        assert inertia <= 1.005 * KMeans(n_clusters=k, n_init=10, random_state=0).fit(X).inertia_
        assert np.array_equal(C, kmeans_torch(X, k, n_init=10, seed=0, device="cpu"))
        assert len(np.unique(nearest_centers(X, C))) == k
    Y = np.vstack([np.zeros((50, 3)), np.ones((50, 3)) * 10, [[5.0, 5.0, 5.0]]])  # duplicates: empty starts
    assert len(np.unique(nearest_centers(Y, kmeans_torch(Y, 3, n_init=3, seed=1, device="cpu")))) == 3


def test_an_analysis_sample_keeps_the_seeds_rows_and_the_exact_isoscore_and_cosine_of_every_token():
    """``analysis_sample`` analyses the rows ``sample_rows`` draws with the seed, the same rows in every layer,
    while IsoScore and the average cosine stay over every token (as the streamed paper path reports them)."""
    from replib.methods.manifolds.setup import _exact_columns, _sampled, _Stream
    from replib.methods.streaming import sample_rows
    from replib.metrics import avg_pairwise_cosine, isoscore

    rng = np.random.default_rng(0)
    layers = {0: rng.normal(size=(300, 8)).astype(np.float32), 1: rng.normal(size=(300, 8)).astype(np.float32) + 1}
    stream = _Stream(layers, [f"t{i % 40}" for i in range(300)], np.arange(300) % 40)
    cfg = chapter_config("manifolds", "offline", seed=3)
    sample, exact = _sampled(stream, cfg.replace(analysis_sample=120))
    keep = sample_rows(300, 120, 3)
    assert len(keep) == 120 and sample.tokens == [stream.tokens[i] for i in keep]
    for layer in (0, 1):
        np.testing.assert_array_equal(sample.layers[layer], layers[layer][keep])
        assert exact[layer]["isoscore"] == isoscore(layers[layer]) != isoscore(sample.layers[layer])
        assert exact[layer]["avg_cosine"] == avg_pairwise_cosine(layers[layer])
    row = _exact_columns({"isoscore": 0.5}, exact[1])
    assert row["isoscore_sample"] == 0.5 and row["n_tokens_stream"] == 300
    # every token (no sample, or a sample as large as the corpus): the stream itself, no exact columns
    assert _sampled(stream, cfg.replace(analysis_sample=300)) == (stream, None)


def test_the_layers_of_a_bf16_forward_are_not_read_back_from_the_float32_cache(tmp_path, monkeypatch):
    from replib.profiles import PRECISION_ENV

    monkeypatch.delenv(PRECISION_ENV, raising=False)
    cfg = chapter_config("manifolds", "smoke").replace(corpora={"ptb": ["ptb", "test", 60]})
    corpora = mf.load_corpora(cfg)
    fp32 = mf.analyse_models(cfg, corpora, cache_dir=tmp_path).results
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    assert cfg.precision == "bf16"
    bf16 = mf.analyse_models(cfg, corpora, cache_dir=tmp_path).results
    assert (fp32["isoscore"] != bf16["isoscore"]).any()  # recomputed from the bf16 tokens, not the float32 rows
    monkeypatch.setenv(PRECISION_ENV, "fp32")
    pd.testing.assert_frame_equal(mf.analyse_models(cfg, corpora, cache_dir=tmp_path).results, fp32)
