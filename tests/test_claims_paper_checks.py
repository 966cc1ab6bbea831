"""What the claims at the papers' word need from the science: the spread of each compared value, the layers
one by one, and the arithmetic of the papers' own tables (replib.methods.*.paper_checks / spread(s))."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from replib.methods import classifiers as ct
from replib.methods import cluster_isotropy as ci
from replib.methods import isoscore as iso
from replib.methods import manifolds as mf
from replib.methods import protein_isotropy as P
from replib.sampling import jackknife_spread


# ------------------------------------------------------------------ IsoScore (Rudman et al.)
def test_rotation_spreads_are_those_of_one_draw():
    out = iso.rotation_spread_records(2_000, seed=0, draws=20)
    assert set(out) == {"rotation_isoscore_0_spread"} | {
        f"rotation_partition_rows_expected_{k}_spread" for k in ("0", "120", "240", "pca")
    }
    assert all(0 < v < 0.1 for v in out.values())
    small = iso.rotation_spread_records(8_000, seed=0, draws=20)["rotation_isoscore_0_spread"]
    assert small < out["rotation_isoscore_0_spread"]  # four times the points: about half the spread
    with pytest.raises(ValueError, match="draws"):
        iso.rotation_spread_records(100, 0, draws=1)


def test_cosine_ranks_place_the_papers_values_among_the_estimates():
    draws = np.arange(100) / 100
    ranks = iso.cosine_rank_records(draws, {"0": 0.505, "120": -1.0, "pca": 1.1})
    assert ranks == {"rotation_cosine_rank_0": 0.51, "rotation_cosine_rank_120": 0.0, "rotation_cosine_rank_pca": 1.0}
    assert set(iso.cosine_rank_records(draws)) == {f"rotation_cosine_rank_{k}" for k in ("0", "120", "240", "pca")}
    with pytest.raises(ValueError, match="1-D"):
        iso.cosine_rank_records(np.ones((2, 2)))


def test_every_layer_of_the_first_model():
    table = pd.DataFrame({"model": ["a", "a", "b"], "layer": [0, 1, 0], "isoscore": [0.1, 0.2, 0.3]})
    assert iso.contextual_layer_records(table, "a") == {
        "contextual_isoscore_layer0": 0.1,
        "contextual_isoscore_layer1": 0.2,
    }
    with pytest.raises(ValueError, match="no layer"):
        iso.contextual_layer_records(table, "c")


def test_the_jackknife_spread_estimates_the_standard_error_of_a_mean():
    X = np.random.default_rng(0).normal(size=(40_000, 1))
    ses = [jackknife_spread(lambda A: float(A.mean()), X, seed=seed) for seed in range(40)]
    assert np.mean(ses) == pytest.approx(1 / math.sqrt(40_000), rel=0.1)
    # ten replicates (nine degrees of freedom): the spread itself varies by about 1/sqrt(2 * 9) = 24 %, where
    # four quarters (three degrees of freedom) varied by about 41 %
    assert np.std(ses, ddof=1) / np.mean(ses) < 0.35


def test_paper_layer_spreads_only_for_the_papers_four_models():
    rng = np.random.default_rng(0)
    streams = {
        m: SimpleNamespace(layers={0: rng.normal(size=(400, 8)), 1: rng.normal(size=(400, 8))}) for m in iso.PAPER_LMS
    }
    ctx = SimpleNamespace(streams=streams)
    assert iso.paper_layer_spread_records(ctx, SimpleNamespace(paper_layer_keys=False), 0) == {}
    out = iso.paper_layer_spread_records(ctx, SimpleNamespace(paper_layer_keys=True), 0)
    assert len(out) == 4 * 2 * 3 and 0 < out["paper_bert_layer1_spread"] < 0.2
    assert 0.9 < out["paper_gpt2_layer0_avgcos"] <= 1 and out["paper_gpt2_layer0_avgcos_spread"] > 0


# ------------------------------------------------------------------ protein (Hakim et al.)
def test_the_bootstrap_over_proteins_measures_a_correlations_spread():
    rng = np.random.default_rng(1)
    n = 120
    pairs = P.all_pairs(n)
    z = rng.normal(size=n)  # a protein effect shared by all its pairs
    x = z[pairs[:, 0]] + z[pairs[:, 1]] + rng.normal(size=len(pairs))
    y = x + rng.normal(size=len(pairs))
    aln = pd.DataFrame({"score": x, "identity": y})
    se = P.correlation_spread_records(aln, {}, pairs, n, tiny=True, seed=0)["corr_score_identity_spread"]
    r = np.corrcoef(x, y)[0, 1]
    assert (1 - r * r) / math.sqrt(len(pairs)) < se < 0.2  # dependent pairs: larger than the i.i.d. formula
    with pytest.raises(ValueError, match="at least 10 items"):
        P.pair_bootstrap_corr_se(P.all_pairs(5), np.arange(10.0), np.arange(10.0), n_items=5)
    with pytest.raises(ValueError, match="two different items"):
        P.pair_bootstrap_corr_se(np.array([[0, 0], [0, 1]]), np.ones(2), np.ones(2), n_items=20)


def test_the_pair_bootstrap_is_the_correlation_over_the_pairs_of_the_resampled_proteins():
    """Each replicate is the Pearson correlation over every pair of two different draws of a resample of
    the proteins (a protein drawn twice: each copy paired with every other draw), written out here."""
    rng = np.random.default_rng(5)
    n = 12
    pairs = P.all_pairs(n)
    x, y = rng.normal(size=len(pairs)), rng.normal(size=len(pairs))
    x[pairs[:, 0] == 3] += 8  # a protein of extreme leverage
    reps = P.pair_bootstrap_corr(pairs, x, y, n, n_boot=15, seed=4)
    W = P.item_multiplicities(n, 15, seed=4)
    where = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    for b in range(15):
        draws = np.repeat(np.arange(n), W[:, b].astype(int))
        ks = [where[min(p, q), max(p, q)] for a, p in enumerate(draws) for q in draws[a + 1 :] if p != q]
        assert reps[b] == pytest.approx(np.corrcoef(x[ks], y[ks])[0, 1], abs=1e-12)


def test_the_pair_bootstrap_covers_the_draw_of_the_proteins():
    """The spread from one sample of proteins matches the spread of the correlation over fresh samples of as
    many proteins from the population (what another seed would draw), the pairs sharing a protein property.
    (Like any spread from within one sample, it falls short where the population holds rare extremes that
    most samples lack: with lengths as skewed as lognormal(0, 0.6) the median ratio is about 0.65.)"""
    rng = np.random.default_rng(6)
    N, n = 3000, 120
    length = rng.lognormal(0, 0.3, size=N)  # a protein property shared by all its pairs

    def sample(items):
        p = P.all_pairs(len(items))
        a, b = length[items[p[:, 0]]], length[items[p[:, 1]]]
        x = -np.abs(a - b) + rng.normal(scale=0.3, size=len(p))
        return p, x, x + np.minimum(a, b) + rng.normal(scale=0.5, size=len(p))

    over_draws = np.std([np.corrcoef(*sample(rng.choice(N, n, replace=False))[1:])[0, 1] for _ in range(200)])
    ses = [P.pair_bootstrap_corr_se(*sample(rng.choice(N, n, replace=False)), n, seed=s) for s in range(12)]
    assert 0.75 < np.median(ses) / over_draws < 1.33


def test_correlation_spreads_of_protbert_need_its_real_weights():
    pairs = P.all_pairs(30)
    rng = np.random.default_rng(2)
    aln = pd.DataFrame({"score": rng.normal(size=len(pairs)), "identity": rng.normal(size=len(pairs))})
    table = aln.assign(cosine=rng.normal(size=len(pairs)), sq_euclidean=rng.normal(size=len(pairs)))
    real = P.correlation_spread_records(aln, {"prot_bert": table}, pairs, 30, tiny=False, seed=0)
    assert {"prot_bert_corr_cosine_sq_euclidean_spread", "prot_bert_corr_sq_euclidean_identity_spread"} <= set(real)
    assert set(P.correlation_spread_records(aln, {"prot_bert": table}, pairs, 30, tiny=True, seed=0)) == {
        "corr_score_identity_spread"
    }


def test_global_spreads_and_the_quoted_comparators():
    rng = np.random.default_rng(3)
    vectors = {m: rng.normal(size=(200, 16)) for m in P.PAPER_GLOBAL_MODELS}
    assert P.global_spread_records(vectors, tiny=True, seed=0) == {}
    out = P.global_spread_records(vectors, tiny=False, seed=0)
    assert out["prot_bert_eff_dims_ceil_spread"] == pytest.approx(15 * out["prot_bert_isoscore_spread"])
    comp = P.comparator_records()
    assert comp["comparator_bert_released"] == 0.1169 and comp["comparator_bert_released_truncated"] == 0.11
    assert comp["comparator_gpt_released_rounded"] == 0.18


# ------------------------------------------------------------------ manifolds (Cai et al.)
#: a small clustering configuration: k chosen among 2-5 (always clustered), one k-means start on 200 rows
_CLUSTERS = {"ks": [2, 3, 4, 5], "threshold": -1.0, "sil_sample": None, "n_init": 1, "kmeans_fit": 200,
             "max_per_type": 1000, "threads": 1}  # fmt: skip


def _typed_cloud(rng, separated: bool):
    """120 types of 3 instances each in 4-D: around two far apart centres (one clustering, whatever the draw),
    or one round cloud (k-means lands in a different partition at each draw)."""
    types = np.repeat(np.arange(120), 3)
    centre = 20.0 * (types % 2)[:, None] * np.eye(4)[0] if separated else 0.0
    X = 5.0 + centre + rng.normal(size=(120, 4))[types] + 0.5 * rng.normal(size=(360, 4))
    return X, types.astype(str)


def test_the_drop_spread_covers_the_draw_of_the_clustering(rng):
    X, tokens = _typed_cloud(rng, separated=False)
    out = mf.redrawn_drops(X, tokens, _CLUSTERS, seed=0, draws=10)
    # every draw is the chapter's own drop for that draw's clusters (an independent path)
    for r in (0, 9):
        with threadpool_limits(1):  # as redrawn_drops (threads: 1), so that k-means' arithmetic is the same
            labels = mf.layer_clusters(X, _CLUSTERS, 1 + r).labels
        cc = mf.cluster_centered_isotropy(X, tokens, labels, 1000, 1 + r)
        assert out["s_intra_drop"][r] == pytest.approx(mf.s_intra(X, tokens, 1000, 1 + r) - cc["s_intra"], abs=1e-12)
        assert out["s_inter_drop"][r] == pytest.approx(mf.s_inter(X, tokens, 1 + r) - cc["s_inter"], abs=1e-12)
    # no instance is drawn for S_intra (3 instances, up to 1,000 kept): with the clusters fixed its drop would
    # not move, but the clusters themselves are a draw, and the drop moves with them
    assert np.std(out["s_intra_drop"]) > 0.01
    with threadpool_limits(1):
        assert len({mf.layer_clusters(X, _CLUSTERS, s).k for s in range(1, 11)}) > 1
    # clusters that every draw finds: S_intra's drop is the same at every draw
    sep = mf.redrawn_drops(*_typed_cloud(rng, separated=True), _CLUSTERS, seed=0, draws=10)
    assert np.std(sep["s_intra_drop"]) < 1e-12 and np.std(sep["s_inter_drop"]) > 0  # one instance per type drawn
    with pytest.raises(ValueError, match="one entry per row"):
        mf.redrawn_drops(X, tokens[:5], _CLUSTERS)
    with pytest.raises(ValueError, match="draws"):
        mf.redrawn_drops(X, tokens, _CLUSTERS, draws=1)


def test_the_drop_spreads_are_taken_in_the_layer_of_the_smallest_drop(rng, tmp_path):
    stream = SimpleNamespace(layers=dict(enumerate([_typed_cloud(rng, s)[0] for s in (True, False)])),
                             tokens=_typed_cloud(rng, True)[1])  # fmt: skip
    results = pd.DataFrame(
        {
            "model": "M",
            "corpus": "c",
            "layer": [0, 1],
            "s_inter": [0.3, 0.3],
            "s_inter_cluster": [0.29, 0.1],  # smallest S_inter drop in layer 0
            "s_intra": [0.8, 0.8],
            "s_intra_cluster": [0.1, 0.79],  # smallest S_intra drop in layer 1
        }
    )
    out = mf.drop_min_spread_records(results, {("M", "c"): stream}, _CLUSTERS, seed=2, draws=4)
    for name, layer in (("s_inter", 0), ("s_intra", 1)):
        drops = mf.redrawn_drops(stream.layers[layer], stream.tokens, _CLUSTERS, seed=2, draws=4)[f"{name}_drop"]
        assert out[f"{name}_drop_min_spread"] == pytest.approx(np.std(drops, ddof=1), abs=1e-15)
    assert out["s_intra_drop_min_spread"] > 0.01
    kept = mf.drop_min_spread_records(results, {("M", "c"): stream}, _CLUSTERS, seed=2, draws=4, cache_dir=tmp_path)
    assert kept == out == mf.drop_min_spread_records(results, {("M", "c"): stream}, _CLUSTERS, 2, 4, cache_dir=tmp_path)
    assert len(list((tmp_path / "layers").iterdir())) == 2  # one set of draws per layer, read back the second time


def test_spread_records_of_the_lid():
    results = pd.DataFrame(
        {
            "model": ["BERT", "BERT", "M"],
            "lid_cosine": [4.0, 6.0, 9.0],
            "lid_cosine_se": [0.3, 0.4, 0.1],
        }
    )
    glove = SimpleNamespace(pointwise=np.array([10.0, 12.0, np.nan, 14.0]), mean=12.0)
    out = mf.spread_records(results, glove, mf.PAPER_LID_TABLE3)
    assert not {"s_inter_drop_min_spread", "s_intra_drop_min_spread"} & set(out)  # drop_min_spread_records
    assert out["lid_contextual_model_max"] == 9.0 and out["lid_contextual_model_max_spread"] == pytest.approx(0.1)
    assert out["lid_cosine_bert_spread"] == pytest.approx(0.5 / 2)
    assert out["lid_static_glove_standin_spread"] == pytest.approx(2 / math.sqrt(3))


def test_a_swiss_roll_is_two_dimensional():
    out = mf.swiss_roll_lid_records(n_points=8_000, n_queries=500, seed=0)
    assert out["lid_swiss_roll_levina_bickel"] == pytest.approx(2, abs=0.1)
    assert out["lid_swiss_roll_cai"] == pytest.approx(out["lid_swiss_roll_levina_bickel"] * 100 / 198, rel=0.05)


def test_table3_static_vectors_only_in_the_paper_profile_and_only_when_named(tmp_path):
    rng = np.random.default_rng(5)
    f = tmp_path / "glove.txt"
    f.write_text("\n".join(f"w{i} " + " ".join(f"{v:.5f}" for v in rng.normal(size=6)) for i in range(400)) + "\n")
    cfg = type("Cfg", (dict,), {"profile": "paper"})(lid_k=20, glove_queries=100)
    env = {"REPLIB_GLOVE_840B_300D": str(f)}
    out = mf.static_table3_records(cfg, 0, environ=env)
    assert (
        set(out) == {"lid_static_table3_glove_2m", "lid_static_table3_glove_2m_spread"}
        and out["lid_static_table3_glove_2m"] > 0
    )
    offline = type("Cfg", (dict,), {"profile": "offline"})(lid_k=20, glove_queries=100)
    assert mf.static_table3_records(offline, 0, environ=env) == {}


# ------------------------------------------------------------------ cluster isotropy (Rajaee & Pilehvar)
def test_the_spread_of_a_mean_against_the_papers_mean_of_five_runs():
    assert ci.difference_spread([1.0]) == 0.0 and ci.difference_spread([2.0, 2.0, 2.0]) == 0.0
    assert ci.difference_spread([1.0, 3.0]) == pytest.approx(math.sqrt(2) * math.sqrt(1 / 2 + 1 / 5))
    assert ci.difference_spread([1.0, 3.0, float("nan")], paper_runs=1) == pytest.approx(math.sqrt(2) * math.sqrt(1.5))


class _Spec(str):
    slug = "m"


def _cfg():
    return SimpleNamespace(models=[_Spec("spec")], model_specs=["spec"])


def test_sts_and_table1_spreads():
    rows = []
    for ds, base in (("STS12", 50.0), ("STS-B", 60.0)):
        for seed in (0, 1, 2):
            rows.append(
                dict(model="spec", dataset=ds, method="baseline", seed=seed, spearman=base, iw=1e-5, iw_log10=-5.0)
            )
            rows.append(
                dict(model="spec", dataset=ds, method="global", seed=seed, spearman=base + 1, iw=0.1, iw_log10=-1.0)
            )
            c = 0.2 + 0.1 * seed
            rows.append(
                dict(
                    model="spec",
                    dataset=ds,
                    method="cluster",
                    seed=seed,
                    spearman=base + 2 + seed,
                    iw=c,
                    iw_log10=np.log10(c),
                )
            )
    out = ci.sts_spread_records(pd.DataFrame(rows), _cfg())
    assert out["sts_m_baseline_sts12_spread"] == 0.0
    assert out["sts_m_cluster_stsb_spread"] == pytest.approx(1.0 * math.sqrt(1 / 3 + 1 / 5))
    assert out["iw_cluster_minus_global_log10_min_spread"] > 0 and out["sts_delta_m_global_spread"] == 0.0
    assert out["sts_cluster_minus_baseline_mean_spread"] == pytest.approx(math.sqrt(2 * (1 / 3)) / 2)
    t1 = pd.DataFrame(
        [dict(model="spec", k=0, seed=None, iw_log10=-4.0)]
        + [dict(model="spec", k=3, seed=s, iw_log10=v) for s, v in ((0, -1.0), (1, -1.2))]
    )
    spreads = ci.table1_spread_records(t1, _cfg())
    assert spreads["table1_m_k0_spread"] == 0.0 and spreads["table1_m_k3_spread"] > 0


def test_table3_average_arithmetic():
    out = ci.table3_average_records()
    assert out == {
        "table3_baseline_mean_of_tasks": pytest.approx(61.2333, abs=1e-4),
        "table3_global_mean_of_tasks": pytest.approx(62.15),
        "table3_cluster_mean_of_tasks": pytest.approx(63.25),
    }


# ------------------------------------------------------------------ classifiers (Mickus et al.)
def test_the_parameter_counts_of_tables_1_and_2():
    assert ct.implied_vectors(3_277_058, 384, 2) == 8532
    t1 = ct.table1_records()
    assert t1["t1_supersense_params_residual"] == 0 and t1["t1_supersense_items_implied"] == 2275
    assert t1["t1_codwoe_pos_vectors_minus_items"] == 14_466 - 11_462
    t2 = ct.table2_records()
    assert len(t2) == 4 * 8 and max(abs(t2[f"t2_{t}_params_mpnet_minus_minilm"]) for t in ct.GLUE_CLASSES) < 1e-9
    assert t2["t2_mrpc_vectors_per_item"] == pytest.approx(7054 / 3668)
