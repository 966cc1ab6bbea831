"""The chapters' streamed paper paths equal their in-memory paths on data that fit both ways (issue 26, item 1):
the same configuration with ``stream`` on and off, every recorded statistic to 1e-9 relative."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from replib.config import chapter_config
from replib.data import load_swissprot
from replib.methods import protein_isotropy as P
from replib.parts import COLAB_T4, Part

pytestmark = pytest.mark.slow

STATS = ["n_samples", "n_features", "isoscore", "eff_dims", "eff_dims_ceil", "eff_dims_round", "avg_cosine"]


@pytest.fixture(scope="module")
def protein_runs(tmp_path_factory):
    cfg = chapter_config("protein_isotropy", "smoke").replace(n_global=120, n_pair_proteins=25)
    sp = load_swissprot(cfg.subset)
    _, seqs = P.global_sample(sp.sequence.tolist(), cfg.n_global, cfg.seed)
    base = P.composition_baselines(seqs, cfg.kmer_max)
    memory = P.embed_models(cfg, seqs, progress=False)
    streamed = P.embed_models(cfg.replace(stream=True), seqs, cache_dir=tmp_path_factory.mktemp("s"), progress=False)
    return seqs, base, memory, streamed


def test_protein_global_table_streamed_equals_in_memory(protein_runs):
    seqs, base, memory, streamed = protein_runs
    # the reference in float64 (the in-memory path scores float32 vectors by a float32 scatter, ~1e-8 off)
    exact = {name: E.astype(np.float64) for name, E in memory.vectors.items()}
    a = P.global_table(exact, memory.models, base).set_index("embedding")
    b = P.global_table(streamed.vectors, streamed.models, base, stats=streamed.stats).set_index("embedding")
    assert set(streamed.stats) == set(memory.vectors) and len(streamed.stats) == 5
    assert (b.loc[list(streamed.stats), "n_samples"] == len(seqs)).all()  # every protein, not the kept rows
    pd.testing.assert_frame_equal(a[STATS], b[STATS], rtol=1e-9, atol=0, check_dtype=False)


def test_protein_streamed_keeps_the_pair_proteins_and_every_esm_layer(protein_runs):
    seqs, _, memory, streamed = protein_runs
    for name, rows in streamed.vectors.items():
        assert rows.shape[0] == 25
        np.testing.assert_allclose(rows, memory.vectors[name][:25], rtol=0, atol=0)
    for name, (_lm, emb) in memory.models.items():
        if name in memory.esm_layers:
            exact = [P.global_isotropy(emb.pooled[k].astype(np.float64))["isoscore"] for k in sorted(emb.pooled)]
            np.testing.assert_allclose(streamed.esm_layers[name], exact, rtol=1e-9, atol=0)
            np.testing.assert_allclose(streamed.esm_layers[name], memory.esm_layers[name], rtol=1e-7)
    a, b = P.esm_layer_curves(memory.models), P.esm_layer_curves(streamed.models)
    np.testing.assert_allclose(a["isoscore"], b["isoscore"], rtol=1e-7)


def test_local_samples_are_disjoint_and_sized():
    seqs = [f"M{'A' * k}" for k in range(1, 21)]
    first, second = P.local_samples(seqs, 8, 2)
    assert first == seqs[:8] and second == seqs[8:16]
    with pytest.raises(ValueError, match="need more"):
        P.local_samples(seqs, 11, 2)


def test_isoscore_contextual_streamed_equals_in_memory(tmp_path):
    from replib.methods import isoscore as iso
    from replib.methods.layerwise import layer_isotropy

    cfg = chapter_config("isoscore", "smoke").replace(n_lines=60)
    memory = iso.contextual_layers(cfg, cache_dir=tmp_path / "m")
    streamed = iso.contextual_layers(cfg.replace(stream=True, package_sample=10**9), cache_dir=tmp_path / "s")
    # the reference in float64: the in-memory path scores float32 vectors by a float32 scatter (about 1e-8 from
    # the float64 value, replib.metrics.isoscore); the accumulators are float64
    exact = pd.concat(
        [
            layer_isotropy({k: v.astype(np.float64) for k, v in ts.layers.items()}, model=m)
            for m, ts in memory.streams.items()
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(exact, streamed.per_layer, rtol=1e-9, atol=0, check_dtype=False)
    pd.testing.assert_frame_equal(memory.per_layer, streamed.per_layer, rtol=1e-7, check_dtype=False)
    a, b = iso.contextual_records(memory, 0), iso.contextual_records(streamed, 0)
    assert a.keys() == b.keys()
    assert b["contextual_isoscore_max"] == pytest.approx(exact["isoscore"].max(), rel=1e-9)
    for key in (
        "contextual_model",
        "contextual_n_tokens",
        "contextual_gaussian_isoscore",
        "contextual_package_max_abs_diff",
    ):
        assert b[key] == a[key]  # the same tokens: every one kept when the sample is larger than the stream
    # a sample: the package check on the kept tokens only, the statistics still over every token
    sampled = iso.contextual_layers(cfg.replace(stream=True, package_sample=50), cache_dir=tmp_path / "s")
    assert len(sampled.streams[sampled.first].kept[0]) == 50
    pd.testing.assert_frame_equal(sampled.per_layer, streamed.per_layer)


def test_manifolds_streamed_equals_in_memory(tmp_path):
    from replib.methods import manifolds as mf
    from replib.metrics import avg_pairwise_cosine, isoscore

    cfg = chapter_config("manifolds", "smoke").replace(corpora={"ptb": ["ptb", "test", 120]})
    corpora = mf.load_corpora(cfg)
    memory = mf.analyse_models(cfg, corpora, cache_dir=tmp_path / "m")
    streamed = mf.analyse_models(cfg.replace(stream=True, analysis_sample=None), corpora, cache_dir=tmp_path / "s")
    a, b = memory.results, streamed.results
    same = [c for c in a.columns if c != "isoscore"]
    pd.testing.assert_frame_equal(a[same], b[same])  # every token kept: the same analysis, bit for bit
    for (model, corpus, layer), r in b.set_index(["model", "corpus", "layer"]).iterrows():
        X = memory.streams[(model, corpus)].layers[layer].astype(np.float64)
        assert r["isoscore"] == pytest.approx(isoscore(X), rel=1e-9)
        assert r["avg_cosine"] == pytest.approx(avg_pairwise_cosine(X), rel=1e-9)
        assert r["n_tokens_stream"] == len(X)
    # a sample: the streamed statistics unchanged, the analysis on the sampled tokens (spooled, memory-mapped)
    sampled = mf.analyse_models(cfg.replace(stream=True, analysis_sample=500), corpora, cache_dir=tmp_path / "s")
    assert (sampled.results["n_tokens"] == 500).all()
    np.testing.assert_array_equal(sampled.results["isoscore"], b["isoscore"])
    stream = next(iter(sampled.streams.values()))
    assert isinstance(stream.layers[0], np.memmap) and len(stream.tokens) == 500
    # a part's layer range: only its layers analysed, each as in the whole run, from the same (resumed) stream
    ranged = dataclasses.replace(cfg.replace(stream=True, analysis_sample=500), part=Part(
        "tiny-ranged-2", "manifolds", 0.5, COLAB_T4, steps=("layers",), select=(("layers", (1,)),)))  # fmt: skip
    one = mf.analyse_models(ranged, corpora, cache_dir=tmp_path / "s").results
    assert sorted(set(one["layer"])) == [1]
    whole = sampled.results[sampled.results["layer"] == 1].reset_index(drop=True)
    pd.testing.assert_frame_equal(one.reset_index(drop=True), whole)
