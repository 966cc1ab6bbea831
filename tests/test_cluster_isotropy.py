"""Cluster-based isotropy enhancement (Rajaee & Pilehvar 2021): transform identities, edge cases, STS protocol."""

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.linalg
from scipy import stats

import replib.methods.cluster_isotropy as ci
from replib.config import chapter_config
from replib.methods.cluster_isotropy import (
    ClusterIsotropy,
    EmptyClusterWarning,
    SmallClusterWarning,
    all_but_the_top,
    compare_classification,
    make_transform,
    mean_pool,
    remove_cluster_directions,
    token_pool,
    tune_hyperparameters,
)
from replib.metrics import partition_isotropy


def _blobs(n=600, d=20, k=4, seed=0):
    """Anisotropic blobs: k well-separated centres, each with its own dominant directions and a common offset."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=8.0, size=(k, d))
    X = []
    for c in range(k):
        A = rng.normal(size=(d, d)) * np.linspace(3.0, 0.1, d)
        X.append(centres[c] + rng.normal(size=(n // k, d)) @ A.T)
    return np.concatenate(X) + 30.0


def cluster_bases(X, labels, n_clusters, n_directions=None):
    """Each cluster's mean, its top ``n_directions`` directions and its member count."""
    from replib.methods.cluster_isotropy.transform import _fit_groups

    _, _, bounds, means, bases = _fit_groups(X, labels, n_clusters, n_directions)
    return means, bases, np.diff(bounds)


def _numpy_abtt(X, D):
    """Straightforward all-but-the-top: centre, SVD, subtract the top-D projections."""
    Xc = X - X.mean(0)
    U = np.linalg.svd(Xc, full_matrices=False)[2][:D]
    return Xc - Xc @ U.T @ U


@pytest.mark.parametrize("clusterer", ["scipy", "sklearn", "gmm"])
def test_clusters_are_zero_mean_and_directions_removed(clusterer):
    X = _blobs()
    t = ClusterIsotropy(4, 3, clusterer=clusterer, random_state=1)
    Y = t.fit_transform(X)
    for c in np.flatnonzero(t.n_members_):
        members = Y[t.labels_ == c]
        assert np.abs(members.mean(0)).max() < 1e-10
        V = t.components_[c]
        assert V.shape == (3, X.shape[1])
        np.testing.assert_allclose(V @ V.T, np.eye(3), atol=1e-10)  # orthonormal
        assert np.abs(members @ V.T).max() < 1e-9  # output orthogonal to them
        # the removed directions are the cluster's top principal axes (compare with sklearn PCA)
        from sklearn.decomposition import PCA

        P = PCA(n_components=3).fit(X[t.labels_ == c]).components_
        np.testing.assert_allclose(np.abs(P @ V.T), np.eye(3), atol=1e-6)


def test_variance_left_is_the_tail_of_each_cluster():
    X = _blobs(seed=3)
    t = ClusterIsotropy(4, 5, random_state=0)
    Y = t.fit_transform(X)
    for c in np.flatnonzero(t.n_members_):
        Z = X[t.labels_ == c] - X[t.labels_ == c].mean(0)
        ev = np.sort(np.linalg.eigvalsh(Z.T @ Z))[::-1]
        W = Y[t.labels_ == c]
        np.testing.assert_allclose((W**2).sum(), ev[5:].sum(), rtol=1e-9)


def test_global_equals_numpy_all_but_the_top_and_one_cluster():
    X = _blobs(seed=2)
    for D in (0, 1, 7):
        np.testing.assert_allclose(all_but_the_top(X, D), _numpy_abtt(X, D), atol=1e-9)
        np.testing.assert_allclose(ClusterIsotropy(1, D).fit_transform(X), _numpy_abtt(X, D), atol=1e-9)
    g = make_transform("global", n_clusters=5, n_pc=2, global_pc=7)
    assert (g.n_clusters, g.n_pc) == (1, 7)
    assert make_transform("baseline", n_clusters=5, n_pc=2, global_pc=7) is None


def test_deterministic_under_a_seed():
    X = _blobs(seed=4)
    a = ClusterIsotropy(6, 3, random_state=7).fit_transform(X)
    b = ClusterIsotropy(6, 3, random_state=7).fit_transform(X)
    assert np.array_equal(a, b)
    labels = [ClusterIsotropy(6, 3, random_state=s).fit(X).labels_ for s in range(4)]
    assert any(not np.array_equal(labels[0], l) for l in labels[1:]), "the seed should matter"


def test_small_cluster_removes_members_minus_one(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 10))
    labels = np.zeros(100, dtype=np.int64)
    labels[:3] = 1  # a 3-member cluster; n_pc = 5
    monkeypatch.setattr(ci.transform, "cluster_labels", lambda X, k, **kw: (labels, None))
    t = ClusterIsotropy(2, 5)
    with pytest.warns(SmallClusterWarning):
        Y = t.fit_transform(X)
    assert t.n_removed_.tolist() == [5, 2]
    assert t.small_clusters_.tolist() == [1]
    np.testing.assert_allclose(Y[:3], 0.0, atol=1e-12)  # 3 centred points span 2 directions: all removed


def test_empty_cluster_is_dropped(monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 8))
    labels = np.repeat([0, 2], 30)  # cluster 1 is empty
    monkeypatch.setattr(ci.transform, "cluster_labels", lambda X, k, **kw: (labels, None))
    t = ClusterIsotropy(3, 2)
    with pytest.warns(EmptyClusterWarning):
        Y = t.fit_transform(X)
    assert t.empty_clusters_.tolist() == [1] and t.n_removed_[1] == 0
    assert np.isfinite(Y).all()
    assert set(t.predict(rng.normal(size=(50, 8)))) <= {0, 2}
    assert np.isfinite(t.transform(rng.normal(size=(5, 8)))).all()


def test_helpers_handle_empty_and_singleton_clusters():
    X = np.arange(20.0).reshape(5, 4) ** 1.5
    labels = np.array([0, 0, 0, 2, 0])  # cluster 1 empty, cluster 2 a singleton
    means, bases, counts = cluster_bases(X, labels, 3)
    assert counts.tolist() == [4, 0, 1] and bases[1] is None and bases[2].shape == (4, 0)
    out, n_removed = remove_cluster_directions(X, labels, means, bases, 2)
    assert n_removed.tolist() == [2, 0, 0]
    np.testing.assert_allclose(out[3], 0.0)


def _masked_reference(X, labels, k, n_pc):
    """The transform cluster by cluster through boolean masks (no grouping): means, the top ``n_pc``
    eigenvectors of each scatter matrix (thin SVD below d members), projections subtracted."""
    d = X.shape[1]
    out = X - 0.0
    for c in range(k):
        rows = labels == c
        if not rows.any():
            continue
        Z = X[rows] - X[rows].mean(axis=0)
        r = min(rows.sum() - 1, d, n_pc)
        if r == 0:
            out[rows] = Z
            continue
        if rows.sum() < d:
            V = np.linalg.svd(Z, full_matrices=False)[2][:r].T
        else:
            V = scipy.linalg.eigh(Z.T @ Z, subset_by_index=[d - r, d - 1], driver="evr")[1][:, ::-1]
        out[rows] = Z - (Z @ V) @ V.T
    return out


@pytest.mark.parametrize("n,d,k,n_pc", [(900, 12, 7, 3), (400, 30, 25, 5), (50, 6, 12, 2), (300, 5, 1, 2)])
def test_grouped_rows_give_the_per_cluster_arithmetic(n, d, k, n_pc):
    """Grouping rows by a stable sort of the labels is the same arithmetic, on the same rows in the same order,
    as selecting each cluster by a mask: equal to the last bit, with empty and single-member clusters."""
    rng = np.random.default_rng(n + k)
    X = rng.normal(size=(n, d)) * np.linspace(4, 0.5, d) + 3.0
    labels = rng.integers(0, k, size=n)
    labels[labels == k - 1] = 0  # an empty cluster
    if k > 2:
        labels[np.flatnonzero(labels == 1)[1:]] = 0  # a single-member cluster
    ref = _masked_reference(X, labels, k, n_pc)
    means, bases, counts = cluster_bases(X, labels, k, n_directions=n_pc)
    out, n_removed = remove_cluster_directions(X, labels, means, bases, n_pc)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(counts, np.bincount(labels, minlength=k))
    assert n_removed.tolist() == [min(n_pc, max(int(m) - 1, 0)) for m in counts]
    # fit_transform reuses the grouped, centred rows of the fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallClusterWarning)
        warnings.simplefilter("ignore", EmptyClusterWarning)
        lab = ClusterIsotropy(k, n_pc, random_state=0).fit(X).labels_  # k-means labels: compare on those
        ft = ClusterIsotropy(k, n_pc, random_state=0).fit_transform(X)
    np.testing.assert_array_equal(ft, _masked_reference(X, lab, k, n_pc))
    # float32 rows are processed in float64, as before
    out32, _ = remove_cluster_directions(X.astype(np.float32), labels, means, bases, n_pc)
    assert out32.dtype == np.float64
    np.testing.assert_array_equal(
        out32, remove_cluster_directions(X.astype(np.float32).astype(np.float64), labels, means, bases, n_pc)[0]
    )


def test_labels_outside_the_clusters_are_refused():
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        cluster_bases(X, np.array([0, 1, 2, 0]), 2)
    with pytest.raises(ValueError, match="one label per row"):
        cluster_bases(X, np.array([0, 1, 0]), 2)


@pytest.mark.parametrize("n,d,k,seed", [(3000, 384, 27, 0), (2000, 8, 10, 1), (500, 50, 5, 2), (60, 3, 20, 3)])
def test_lloyd_points_is_kmeans2(n, d, k, seed):
    """The authors' clusterer: scipy's kmeans2(minit="points") from the same generator state gives the same
    partition and centroids, including when clusters empty out (k = 20 on 60 duplicated points)."""
    import warnings

    from scipy.cluster.vq import kmeans2

    from replib.methods.cluster_isotropy import lloyd_points

    g = np.random.default_rng(seed)
    X = g.normal(size=(n, d)) + 3 * g.normal(size=(6, d))[g.integers(0, 6, n)]
    if n == 60:
        X = np.repeat(X[:12], 5, axis=0)  # duplicates: equal initial centroids leave clusters empty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_c, ref_l = kmeans2(X, k, iter=10, minit="points", missing="warn", rng=np.random.default_rng(seed))
    C, labels = lloyd_points(X, k, n_iter=10, rng=np.random.default_rng(seed))
    np.testing.assert_array_equal(labels, ref_l)
    np.testing.assert_allclose(C, ref_c, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="n_iter"):
        lloyd_points(X, k, n_iter=0)
    with pytest.raises(ValueError, match="n_clusters"):
        lloyd_points(X, n + 1)


def test_cluster_means_fallback_is_the_kmeans2_update():
    """The sparse fallback (used if scipy drops its private update step) gives kmeans2's update: the same
    means and the same empty clusters."""
    from replib.methods.cluster_isotropy.transform import _cluster_means, _cluster_means_sparse

    g = np.random.default_rng(5)
    X = g.normal(size=(500, 9))
    labels = g.choice([0, 1, 3, 6], size=500)  # clusters 2, 4, 5 empty
    m1, h1 = _cluster_means(X, labels, 7)
    m2, h2 = _cluster_means_sparse(X, labels, 7)
    np.testing.assert_array_equal(h1, h2)
    assert h1.tolist() == [True, True, False, True, False, False, True]
    np.testing.assert_allclose(m1, m2, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(m1[3], X[labels == 3].mean(axis=0), rtol=1e-13)


def test_partial_bases_give_the_full_bases_projections():
    """The top-n directions from the partial eigendecomposition span what the full one's first n span
    (directions are defined up to sign: compare projectors), for clusters above and below n_features."""
    g = np.random.default_rng(3)
    X = np.concatenate([g.normal(size=(400, 12)) * np.linspace(3, 0.1, 12), g.normal(size=(7, 12)) + 5])
    labels = np.array([0] * 400 + [1] * 7)
    _, full, _ = cluster_bases(X, labels, 2)
    means, part, _ = cluster_bases(X, labels, 2, n_directions=4)
    assert [b.shape[1] for b in full] == [12, 6] and [b.shape[1] for b in part] == [4, 4]
    for F, P in zip(full, part):
        np.testing.assert_allclose(P @ P.T, F[:, :4] @ F[:, :4].T, atol=1e-10)
    out_full, _ = remove_cluster_directions(X, labels, means, full, 4)
    out_part, _ = remove_cluster_directions(X, labels, means, part, 4)
    np.testing.assert_allclose(out_part, out_full, atol=1e-10)


def test_kmeans_can_leave_a_cluster_empty_without_crashing():
    # duplicated points make kmeans2 ('points' init) pick the same centre twice for many seeds
    X = np.concatenate([np.zeros((40, 3)), np.eye(3) * 10]) + 1.0
    empties = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallClusterWarning)
        warnings.simplefilter("ignore", EmptyClusterWarning)
        for s in range(10):
            t = ClusterIsotropy(3, 1, random_state=s)
            Y = t.fit_transform(X)
            assert np.isfinite(Y).all()
            empties += t.empty_clusters_.size
    assert empties > 0


def test_bad_parameters():
    X = _blobs()
    with pytest.raises(ValueError, match="n_pc"):
        ClusterIsotropy(2, X.shape[1]).fit(X)
    with pytest.raises(ValueError, match="clusterer"):
        ClusterIsotropy(2, 1, clusterer="dbscan").fit(X)
    with pytest.raises(ValueError, match="n_clusters"):
        ClusterIsotropy(0, 1).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        ClusterIsotropy(2, 1).fit(np.full((10, 3), np.nan))
    with pytest.raises(ValueError, match="not fitted"):
        ClusterIsotropy(2, 1).transform(X)
    with pytest.raises(ValueError, match="method"):
        make_transform("whitening", n_clusters=2, n_pc=1, global_pc=1)


def test_transform_of_training_rows_matches_fit_transform_for_converged_kmeans():
    X = _blobs(seed=5)
    t = ClusterIsotropy(4, 2, clusterer="sklearn", random_state=0)
    Y = t.fit_transform(X)
    np.testing.assert_allclose(t.transform(X), Y, atol=1e-9)


# ----------------------------------------------------------------------------------------- STS protocol
def _toy_sts(seed=0, n_pairs=40, d=6):
    rng = np.random.default_rng(seed)
    t1 = [rng.normal(size=(rng.integers(2, 6), d)) + 3 for _ in range(n_pairs)]
    t2 = [rng.normal(size=(rng.integers(2, 6), d)) + 3 for _ in range(n_pairs)]
    gold = rng.uniform(0, 5, size=n_pairs)
    return t1, t2, gold


def test_mean_pool_and_token_pool():
    t1, t2, _ = _toy_sts()
    pool, lengths = token_pool(t1)
    np.testing.assert_allclose(mean_pool(pool, lengths), np.stack([b.mean(0) for b in t1]))
    # the sparse indicator sums each sentence's rows one after the other, in order: equal to the last bit
    in_order = []
    for b in t1:
        acc = b[0].copy()
        for row in b[1:]:
            acc += row
        in_order.append(acc / len(b))
    np.testing.assert_array_equal(mean_pool(pool, lengths), np.array(in_order))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    np.testing.assert_allclose(
        mean_pool(pool, lengths), np.add.reduceat(pool, starts, axis=0) / lengths[:, None], rtol=1e-14
    )
    pool32, _ = token_pool([b.astype(np.float32) for b in t1])
    assert pool32.dtype == np.float64 and np.array_equal(pool32, np.concatenate(t1).astype(np.float32).astype(float))
    for bad in ([3] * (len(lengths) + 1), np.r_[lengths[:-1], 0, lengths[-1]]):
        with pytest.raises(ValueError, match="lengths must be positive"):
            mean_pool(pool, bad)
    with pytest.raises(ValueError, match="no tokens"):
        token_pool([np.zeros((0, 3)), np.ones((2, 3))])


def evaluate_sts(tokens1, tokens2, gold, transform=None):
    """The paper's STS protocol (App. B.1) on the two sides' token matrices, written out from the package's steps:
    one pool of every token, the transform fit on it and applied to it, sentence vector = mean of its processed
    tokens, Spearman and Pearson x 100 of the two sides' cosines with the gold scores, I(W) of the processed pool."""
    pool, lengths = token_pool(list(tokens1) + list(tokens2))
    pool = pool if transform is None else transform.fit_transform(pool)
    means = mean_pool(pool, lengths)
    sp, pe = ci.sts_correlations(means[: len(tokens1)], means[len(tokens1) :], gold)
    iw = partition_isotropy(pool)
    return SimpleNamespace(spearman=sp, pearson=pe, isotropy_log10=iw.log10, n_tokens=len(pool))


def test_evaluate_sts_baseline_by_hand():
    t1, t2, gold = _toy_sts()
    r = evaluate_sts(t1, t2, gold)
    a = np.stack([b.mean(0) for b in t1])
    b = np.stack([x.mean(0) for x in t2])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert r.spearman == pytest.approx(100 * stats.spearmanr(cos, gold)[0])
    assert r.pearson == pytest.approx(100 * stats.pearsonr(cos, gold)[0])
    assert r.n_tokens == sum(map(len, t1 + t2))


def test_evaluate_sts_fits_the_transform_on_the_pool_of_both_sides():
    t1, t2, gold = _toy_sts(seed=1)
    r = evaluate_sts(t1, t2, gold, ClusterIsotropy(1, 2))
    pool = _numpy_abtt(np.concatenate(t1 + t2), 2)
    n1 = sum(map(len, t1))
    A, B, off = [], [], 0
    for blk in t1:
        A.append(pool[off : off + len(blk)].mean(0))
        off += len(blk)
    for blk in t2:
        B.append(pool[off : off + len(blk)].mean(0))
        off += len(blk)
    A, B = np.array(A), np.array(B)
    cos = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
    assert off == len(pool) and n1 < off
    assert r.spearman == pytest.approx(100 * stats.spearmanr(cos, gold)[0])


def test_toy_sts_where_a_common_direction_hides_the_signal():
    """A dominant direction with large variance drowns the cosine; removing it recovers the ranking."""
    rng = np.random.default_rng(0)
    n, d = 200, 8
    gold = rng.uniform(0, 5, n)
    base = rng.normal(size=(n, d - 1))
    t1, t2 = [], []
    for i in range(n):
        other = rng.normal(size=d - 1)
        mix = gold[i] / 5
        v2 = mix * base[i] + (1 - mix) * other
        big = np.zeros(d)
        big[0] = 50.0
        t1.append(np.vstack([np.r_[0.0, base[i]] + big + rng.normal(size=d) * [100, *[0.01] * (d - 1)]] * 2))
        t2.append(np.vstack([np.r_[0.0, v2] + big + rng.normal(size=d) * [100, *[0.01] * (d - 1)]] * 2))
    raw = evaluate_sts(t1, t2, gold)
    fixed = evaluate_sts(t1, t2, gold, ClusterIsotropy(1, 1))
    assert fixed.spearman > 80 > raw.spearman
    assert fixed.isotropy_log10 > raw.isotropy_log10


def test_tuning_grid_matches_evaluate_sts():
    t1, t2, gold = _toy_sts(seed=2)
    grid = tune_hyperparameters(t1, t2, gold, ks=(1, 3), pcs=(0, 2), seeds=(5,), progress=False)
    assert len(grid) == 4
    g = grid.set_index(["n_clusters", "n_pc"])["spearman"]
    assert g[(1, 2)] == pytest.approx(evaluate_sts(t1, t2, gold, ClusterIsotropy(1, 2)).spearman)
    assert g[(3, 2)] == pytest.approx(evaluate_sts(t1, t2, gold, ClusterIsotropy(3, 2, random_state=5)).spearman)


def test_tuning_grid_fits_the_global_method_once_for_every_seed(monkeypatch):
    t1, t2, gold = _toy_sts(seed=3)
    calls = []
    grid_scores = ci.sts._grid_scores
    monkeypatch.setattr(ci.sts, "_grid_scores", lambda *a, **kw: calls.append(a[4]) or grid_scores(*a, **kw))
    grid = tune_hyperparameters(t1, t2, gold, ks=(1, 3), pcs=(0, 2), seeds=(5, 6, 7), progress=False)
    assert calls == [1, 3, 3, 3]  # k = 1 is one partition whatever the seed
    assert len(grid) == 12 and sorted(grid["seed"].unique()) == [5, 6, 7]
    one = grid[grid.n_clusters == 1].pivot(index="n_pc", columns="seed", values="spearman")
    assert (one.nunique(axis=1) == 1).all()
    for s in (5, 6, 7):  # every seed's rows are those of a grid run with that seed alone
        alone = tune_hyperparameters(t1, t2, gold, ks=(1, 3), pcs=(0, 2), seeds=(s,), progress=False)
        pd.testing.assert_frame_equal(grid[grid.seed == s].reset_index(drop=True), alone, check_exact=True)


def _deck_setup(monkeypatch):
    """A two-data-set toy for the deck: cfg, the STS pairs and token matrices by data set, and a spy on run_sts."""
    from types import SimpleNamespace

    exp = ci.experiments
    data = {ds: _toy_sts(seed=i, n_pairs=60) for i, ds in enumerate(("STS12", "STS15", "STS-B"))}
    cfg = SimpleNamespace(
        model_specs=["m"],
        datasets=list(data),
        deck_model="m",
        deck_seeds=2,
        stsb_split="test",
        max_pairs=None,
        seed=0,
        sample_seed=None,
    )
    monkeypatch.setattr(exp, "load_sts_pairs", lambda ds, **kw: pd.DataFrame({"score": data[ds][2], "ds": ds}))
    monkeypatch.setattr(exp, "embed_pairs", lambda model, df, **kw: data[df["ds"].iloc[0]][:2])
    ran = []
    run_sts = exp.run_sts
    monkeypatch.setattr(
        exp, "run_sts", lambda *a, methods, **kw: ran.append(list(methods)) or run_sts(*a, methods=methods, **kw)
    )
    return cfg, ran


def test_deck_takes_its_sts_equivalent_rows_from_the_sts_experiment(monkeypatch):
    cfg, ran = _deck_setup(monkeypatch)
    hparams, seeds = {"m": {"n_clusters": 3, "n_pc": 2, "global_pc": 2}}, [0, 1, 2]
    sts = ci.sts_experiment(cfg, lambda name: name, hparams, seeds)
    ran.clear()
    alone = ci.deck_experiment(cfg, lambda name: name, hparams, seeds)
    assert ran == [["baseline", *ci.DECK_VARIANTS]] * 2
    ran.clear()
    reused = ci.deck_experiment(cfg, lambda name: name, hparams, seeds, sts=sts)
    assert ran == [["Mean", "K-means+Mean", "GMM+Mean+PCA"]] * 2  # the other three are the STS rows
    pd.testing.assert_frame_equal(reused, alone, check_exact=True)  # the same rows, values and order
    # without the deck's data set in the STS rows (or without STS rows), every variant runs
    ran.clear()
    partial = ci.deck_experiment(cfg, lambda name: name, hparams, seeds, sts=sts[sts.dataset != "STS-B"])
    assert ran == [["Mean", "K-means+Mean", "GMM+Mean+PCA"], ["baseline", *ci.DECK_VARIANTS]]
    pd.testing.assert_frame_equal(partial, alone, check_exact=True)


class _Ref(str):
    slug = "m"


def test_the_smallest_iw_gain_is_averaged_over_more_runs_of_the_clustering(monkeypatch):
    """The STS step runs the cluster-based method a few times; the smallest gain of I(W), whose value a run's
    k-means initialisation moves, is estimated over IW_GAIN_DRAWS runs in the data set where it is smallest."""
    from types import SimpleNamespace

    data = {ds: _toy_sts(seed=i, n_pairs=60) for i, ds in enumerate(("STS12", "STS-B"))}
    cfg = SimpleNamespace(models=[_Ref("m")], model_specs=["m"], datasets=list(data), stsb_split="test",
                          max_pairs=None, sample_seed=None, seed=3, threads=1)  # fmt: skip
    # both modules read the pairs through experiments.sts_pairs
    monkeypatch.setattr(
        ci.experiments, "load_sts_pairs", lambda ds, **kw: pd.DataFrame({"score": data[ds][2], "ds": ds})
    )
    for module in (ci.experiments, ci.spreads):
        monkeypatch.setattr(module, "embed_pairs", lambda model, df, **kw: data[df["ds"].iloc[0]][:2])
    hparams = {"m": {"n_clusters": 3, "n_pc": 2, "global_pc": 2}}
    sts = ci.sts_experiment(cfg, lambda name: name, hparams, [3, 4])
    L = sts.groupby(["dataset", "method"])["iw_log10"].mean().unstack()
    worst = (L["cluster"] - L["baseline"]).idxmin()
    out = ci.iw_gain_records(cfg, sts, lambda name: name, hparams, draws=12)
    # an independent path: every run of the method on that data set, seeds 3 to 14
    t1, t2, gold = data[worst]
    runs = []
    for s in range(3, 15):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallClusterWarning)
            r = evaluate_sts(t1, t2, gold, make_transform("cluster", **hparams["m"], random_state=s))
        runs.append(r.isotropy_log10 - evaluate_sts(t1, t2, gold).isotropy_log10)
    assert np.std(runs) > 0  # the initialisation moves the gain
    assert out["iw_gain_m_cluster_log10"] == pytest.approx(np.mean(runs), abs=1e-12)
    assert out["iw_gain_m_cluster_log10_spread"] == pytest.approx(np.std(runs, ddof=1) / np.sqrt(12), abs=1e-12)
    assert out["iw_gain_cluster_log10_min"] == out["iw_gain_m_cluster_log10"]
    assert out["iw_gain_cluster_log10_min_spread"] == out["iw_gain_m_cluster_log10_spread"]
    assert ci.IW_GAIN_DRAWS >= 10


# ----------------------------------------------------------------------------------------- classification
def test_fresh_classifier_per_condition():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(90, 4, 5)).astype(np.float32)
    labels = (feats[:, 0, 0] > 0).astype(int)
    splits = {"train": np.arange(50), "val": np.arange(50, 70), "eval": np.arange(70, 90)}
    tr = {"baseline": None, "global": ClusterIsotropy(1, 1)}
    assert compare_classification(feats, labels, splits, "SST-2", tr, epochs=3, lr=1e-2)[1]
    cola, _ = compare_classification(feats, labels, splits, "CoLA", {"baseline": None}, epochs=2, lr=1e-2)
    assert -100 <= cola["baseline"] <= 100


def test_config_profiles():
    for p in ("smoke", "offline", "paper"):
        c = chapter_config("cluster_isotropy", p)
        assert c.seeds >= 2 and c.datasets and c.deck_model in c.model_specs and c.clf_model in c.model_specs
    paper = chapter_config("cluster_isotropy", "paper")
    assert paper.hparams["bert-base-uncased"] == {"n_clusters": 27, "n_pc": 12, "global_pc": 15}
    assert paper.hparams["gpt2"] == {"n_clusters": 10, "n_pc": 30, "global_pc": 30}
    assert paper.hparams["roberta-base"] == {"n_clusters": 27, "n_pc": 12, "global_pc": 25}
    assert paper.tune_models == () and paper.deck_seeds == paper.seeds == 5
    offline = chapter_config("cluster_isotropy", "offline")
    assert min(offline.grid_k) == 5 and max(offline.grid_pc) == 30 and offline.deck_seeds == 1
    # the offline examples are the same for every seed (their features cached once); the paper's full splits
    # keep the validation split of the chapter's seed
    for p, drawn in (("offline", [0, 0]), ("paper", [0, 1])):
        assert [ci.sample_seed(chapter_config("cluster_isotropy", p, seed=s)) for s in (0, 1)] == drawn
    assert chapter_config("cluster_isotropy", "smoke").tune_models == ("tiny-bert", "tiny-gpt2")


def test_a_readers_models_run_everything_and_keep_the_papers_hyperparameters(tmp_path):
    mine = tmp_path / "my-encoder"
    mine.mkdir()
    (mine / "config.json").write_text('{"model_type": "bert"}')
    c = chapter_config("cluster_isotropy", "paper", models=[str(mine), "bert-base-uncased"])
    assert c.model_specs == [str(mine), "bert-base-uncased"] and c.deck_model == c.clf_model == str(mine)
    assert c.tune_models == (str(mine),)  # the paper's model keeps the paper's hyperparameters
    short = ci.short_names(c)
    assert short["bert-base-uncased"] == "bert" and short[str(mine)] == c.models[0].slug
    assert short[str(mine)].startswith("my_encoder_")  # a folder's name and a hash of its path
    assert ci.chapter_seeds(chapter_config("cluster_isotropy", "smoke", seed=4)) == [4, 5]


def test_single_member_cluster_residuals_do_not_crash():
    """A far outlier forms a cluster of one (k-means++ seeds it): it has no removed direction, and the
    chapter's transform checks (issue 14: ``zero-size array to reduction operation maximum``) must still run."""
    X = _blobs(n=300, d=10, k=2, seed=5)
    X = np.vstack([X, np.full((1, X.shape[1]), 1e4)])
    t = ClusterIsotropy(3, 4, clusterer="sklearn", random_state=0)
    with pytest.warns(SmallClusterWarning):
        out = t.fit_transform(X)
    single = np.flatnonzero(t.n_members_ == 1)
    assert single.size == 1 and t.components_[single[0]].shape == (0, X.shape[1])
    with pytest.raises(ValueError, match="zero-size"):  # the chapter's former expression
        max(np.abs(out[t.labels_ == c] @ t.components_[c].T).max() for c in np.flatnonzero(t.n_members_))
    mean_max, orth_max = ci.transform_residuals(t, out)
    assert mean_max < 1e-9 and orth_max < 1e-9
    # the identities are really checked: corrupting the output along a removed direction is caught
    big = int(np.argmax(t.n_members_))
    bad = out.copy()
    bad[t.labels_ == big] += 0.5 * t.components_[big][0]
    assert ci.transform_residuals(t, bad)[1] > 0.1
    with pytest.raises(ValueError, match="rows"):
        ci.transform_residuals(t, out[:-1])


def test_pair_token_features_cache_is_reused_and_equal(tmp_path, monkeypatch):
    """Classification features go through the shard cache: a second call reads them (the model is not run)
    and returns the same array; another max_length or other texts are a different key."""
    from replib.methods.cluster_isotropy import pair_token_features
    from replib.models import tiny_model

    lm = tiny_model("bert")
    a = ["a man plays", "the cat sat on the mat", "hi", "rain again today", "yes"]
    b = ["a man is playing", "a cat", "hello", "sun", "no"]
    direct = pair_token_features(lm, a, b, max_length=12, batch_size=2, progress=False)
    first = pair_token_features(lm, a, b, max_length=12, batch_size=2, cache_dir=tmp_path, shard_size=2, progress=False)
    np.testing.assert_array_equal(first, direct)
    assert first.shape == (5, 12, lm.spec.hidden_size)

    def boom(*args, **kwargs):
        raise AssertionError("the model ran although the features are cached")

    monkeypatch.setattr(lm.model, "forward", boom)  # the parameters stay readable (the cache key's dtype)
    again = pair_token_features(lm, a, b, max_length=12, batch_size=2, cache_dir=tmp_path, shard_size=2, progress=False)
    np.testing.assert_array_equal(again, first)
    with pytest.raises(AssertionError, match="the model ran"):
        pair_token_features(
            lm, a, b[::-1], max_length=12, batch_size=2, cache_dir=tmp_path, shard_size=2, progress=False
        )
    with pytest.raises(ValueError, match="5 first texts but 4 second"):
        pair_token_features(lm, a, b[:4], max_length=12)


def test_run_sts_on_one_stacked_pool_equals_evaluate_sts_per_method():
    """run_sts stacks the pool once for every method and seed: each row equals evaluate_sts of that method, and
    no transform alters the pool the next method sees."""
    t1, t2, gold = _toy_sts(seed=4)
    pool_before, _ = token_pool(t1 + t2)
    hp = {"n_clusters": 3, "n_pc": 2, "global_pc": 1}
    rows = ci.run_sts(t1, t2, gold, methods=("baseline", "global", "cluster"), hparams=hp, seeds=(0, 1))
    assert [(r["method"], r["seed"]) for r in rows] == [
        ("baseline", None),
        ("global", None),
        ("cluster", 0),
        ("cluster", 1),
    ]
    for r in rows:
        tr = make_transform(r["method"], **hp, random_state=r["seed"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallClusterWarning)
            ref = evaluate_sts(t1, t2, gold, tr)
        assert (r["spearman"], r["pearson"], r["iw_log10"]) == (ref.spearman, ref.pearson, ref.isotropy_log10)
    X = pool_before.copy()
    ClusterIsotropy(3, 2, random_state=0).fit_transform(X)
    np.testing.assert_array_equal(X, pool_before)


def test_seeded_results_kept_in_the_cache_are_the_computed_ones_and_a_next_seed_computes_only_its_new_seed(
    tmp_path, monkeypatch
):
    """With a cache_dir, run_sts, the tuning grid and Table 1 give the rows they give without one, and a run from
    the next seed (seeds 1, 2 after 0, 1) computes only seed 2 and nothing deterministic again."""
    t1, t2, gold = _toy_sts(seed=4)
    hp = {"n_clusters": 3, "n_pc": 2, "global_pc": 1}
    kw = dict(methods=("baseline", "global", "cluster"), hparams=hp)
    plain = ci.run_sts(t1, t2, gold, seeds=(0, 1), **kw)
    assert ci.run_sts(t1, t2, gold, seeds=(0, 1), cache_dir=tmp_path, **kw) == plain
    ran = []
    sts_row = ci.sts._sts_row
    monkeypatch.setattr(ci.sts, "_sts_row", lambda *a: ran.append((a[4], a[6])) or sts_row(*a))
    again = ci.run_sts(t1, t2, gold, seeds=(1, 2), cache_dir=tmp_path, **kw)
    assert ran == [("cluster", 2)]
    assert again[:3] == [r for r in plain if r["seed"] in (None, 1)]
    assert again == ci.run_sts(t1, t2, gold, seeds=(1, 2), **kw)
    assert ci.run_sts(t1, t2, gold[::-1].copy(), seeds=(1,), cache_dir=tmp_path, **kw) != again[:3]  # other gold

    grid = tune_hyperparameters(t1, t2, gold, ks=(1, 3), pcs=(0, 2), seeds=(5, 6), progress=False)
    cached = tune_hyperparameters(t1, t2, gold, ks=(1, 3), pcs=(0, 2), seeds=(5, 6), progress=False, cache_dir=tmp_path)
    pd.testing.assert_frame_equal(cached, grid, check_exact=True)
    pool, _ = token_pool(t1 + t2)
    table1 = ci.zero_mean_isotropy(pool, (1, 3), (0, 1))
    assert ci.zero_mean_isotropy(pool, (1, 3), (0, 1), cache_dir=tmp_path) == table1
    fits = []
    monkeypatch.setattr(
        ci.sts, "ClusterIsotropy", lambda *a, **k: fits.append(k["random_state"]) or ClusterIsotropy(*a, **k)
    )
    assert ci.zero_mean_isotropy(pool, (1, 3), (1, 2), cache_dir=tmp_path)[:3] == table1[:2] + table1[3:4]
    assert fits == [2]


# ------------------------------------------------------------------------------ the chapter's steps
def test_transform_checks_and_plane_views():
    pool = _blobs(seed=2)
    t, out, rec = ci.transform_checks(pool, 3, 2, seed=0)
    assert out.shape == pool.shape and t.labels_.shape == (len(pool),)
    assert rec["transform_cluster_mean_max"] < 1e-10 and rec["transform_orthogonality_max"] < 1e-10
    assert rec["global_vs_numpy_max_diff"] < 1e-10 and rec["determinism_max_diff"] == 0.0
    idx, planes = ci.plane_views({"before": pool, "after": out}, n_points=50, seed=0)
    assert len(idx) == 50 and all(P.shape == (50, 2) for P in planes.values())


def test_record_helpers_from_result_tables():
    cfg = chapter_config("cluster_isotropy", "smoke")
    layers = pd.DataFrame({"model": ["tiny-bert", "tiny-bert"], "layer": [0, 1], "log10 I(W)": [-2.0, -1.0]})
    table1 = pd.DataFrame(
        [
            {"model": m, "k": k, "seed": s, "iw_log10": -1.0 / (k + 1) - s}
            for m in ("tiny-bert", "tiny-gpt2")
            for k in (0, 1, 3, 6)
            for s in (0, 1)
        ]
    )
    rec = ci.isotropy_records(layers, table1, cfg)
    assert rec["layer_tinybert_1"] == pytest.approx(0.1) and rec["table1_kmax"] == 6
    assert rec["table1_tinygpt2_k3"] == pytest.approx(np.mean([10 ** (-0.25), 10 ** (-1.25)]))
    assert rec["table1_iw_kmax_minus_k1_log10"] == pytest.approx(-1 / 7 + 1 / 2)
    sts = pd.DataFrame(
        [
            {
                "model": m,
                "dataset": ds,
                "method": meth,
                "seed": s,
                "spearman": 50.0 + i + s,
                "pearson": 0.0,
                "iw": 0.1 * (i + 1),
                "iw_log10": np.log10(0.1 * (i + 1)),
            }
            for m in ("tiny-bert", "tiny-gpt2")
            for ds in ("STS12", "STS-B")
            for i, meth in enumerate(ci.METHODS)
            for s in (0, 1)
        ]
    )
    s = ci.sts_records(ci.sts_summary(sts), cfg)
    assert s["sts_tinygpt2_cluster_stsb"] == 52.5 and s["sts_cluster_minus_baseline_mean"] == pytest.approx(2.0)
    assert not any(k.startswith("iw_gain") for k in s)  # iw_gain_records, over more runs
    clf = pd.DataFrame({"task": ["SST-2"] * 3, "method": list(ci.METHODS), "score": [70.0, 60.0, 65.0]})
    c = ci.classification_records(clf, {"fresh": [True], "n_train": 120, "sst2_majority": 55.0}, cfg)
    assert c == {
        "clf_tinybert_baseline_sst2": 70.0,
        "clf_tinybert_global_sst2": 60.0,
        "clf_tinybert_cluster_sst2": 65.0,
        "clf_sst2_baseline_minus_majority": 15.0,
        "clf_fresh_init": True,
        "clf_n_train": 120,
    }
    dev = pd.DataFrame({"sentence1": ["a", "b", "c"], "sentence2": ["b", "d", "e"], "score": [1, 2, 3]})
    assert ci.layer_sentences(dev, None, 0) == ["a", "b", "c", "d", "e"]
    assert len(ci.layer_sentences(dev, 3, 0)) == 3
