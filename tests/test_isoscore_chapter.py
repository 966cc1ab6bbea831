"""The IsoScore chapter's steps (replib.methods.isoscore): each against a closed form, an invariance or the
authors' package, and the record keys of the paper profile."""

import numpy as np
import pandas as pd
import pytest

from replib.config import chapter_config
from replib.methods import isoscore as iso


def test_rotation_test_is_invariant_and_matches_the_population_value():
    base, versions, population = iso.rotation_versions(4000, seed=1)
    assert list(versions) == ["0", "120", "240", "pca"] and len(base) == 4000
    table = iso.rotation_table(versions, population)
    rec = iso.rotation_records(base, table, seed=1)
    assert rec["rotation_isoscore_spread"] < 1e-9 and rec["rotation_cosine_spread"] < 1e-9  # rotations
    # (PR - 1) / (n - 1) with eigenvalues 1.8 and 0.2: PR = 2^2 / (1.8^2 + 0.2^2)
    assert rec["rotation_isoscore_population"] == pytest.approx(4 / 3.28 - 1, abs=1e-12)
    assert rec["rotation_isoscore_0"] == pytest.approx(rec["rotation_isoscore_population"], abs=0.02)
    assert rec["rotation_partition_eigenvector_expected"] == pytest.approx(np.exp(-0.8), abs=1e-12)
    # the authors' loop over the rows of eig expects the eigenvector value where rows are eigenvectors (0°, PCA)
    assert rec["rotation_partition_rows_expected_0"] == pytest.approx(rec["rotation_partition_rows_expected_pca"])
    assert rec["rotation_partition_rows_expected_120"] > rec["rotation_partition_rows_expected_0"] + 0.1
    assert 0 <= rec["rotation_cosine_1000_pairs_p05"] <= rec["rotation_cosine_1000_pairs_p95"] <= 1


def test_orientation_fraction_and_deflation():
    X = np.random.default_rng(0).normal(size=(300, 40))
    o = iso.orientation_check(X)
    assert o["orientation_warns"] is True and o["orientation_correct"] != o["orientation_transposed"]
    fraction = iso.fraction_of_dimensions(sweep=4, seed=0)
    assert set(fraction.n) == {25, 512} and len(fraction[fraction.n == 25]) == 25
    assert (fraction["IsoScore"] - fraction["(k-1)/(n-1)"]).abs().max() < 1e-10
    deflation = iso.deflation(seed=0, n=20, sizes=(5, 19, 20, 400))
    assert (deflation["warned"] == (deflation["m"] < 20)).all()
    assert (deflation["IsoScore"] - deflation["m/(n+m)"]).abs().max() < 0.2


def test_invariances_streaming_and_the_authors_package():
    rng = np.random.default_rng(5)
    rec = iso.mean_and_scale_records(rng)
    assert rec["meanshift_isoscore_diff"] < 1e-9 and rec["scale_isoscore_diff"] < 1e-9
    assert rec["meanshift_cosine_before"] < 0.1 < 0.99 < rec["meanshift_cosine_after"]
    assert rec["scalar_cov_isoscore_min"] == pytest.approx(1.0, abs=1e-12)
    assert iso.streaming_difference(rng, n_batches=7) < 1e-9
    agreement = iso.package_agreement(iso.agreement_clouds(rng))
    assert len(agreement) == 4 and agreement["|diff|"].max() < 1e-6


def test_the_skewered_meatball_falls_as_points_move_onto_the_skewer():
    meatball = iso.skewered_meatball(sweep=4, seed=0)
    assert meatball["share on skewer"].tolist() == pytest.approx([0.0, 0.95 / 3, 2 * 0.95 / 3, 0.95])
    assert (np.diff(meatball["IsoScore"]) < 0).all() and meatball["IsoScore"].iloc[0] > 0.9


def _fake_layers(models):
    rows = [{"model": m, "layer": layer, "isoscore": 0.1 * layer, "n_tokens": 10} for m in models for layer in (0, 1)]
    streams = {m: None for m in models}
    return iso.ContextualLayers(pd.DataFrame(rows), streams)


def test_paper_layer_keys_only_for_the_paper_models_that_ran_in_the_paper_profile():
    paper = chapter_config("isoscore", "paper")
    four = _fake_layers(paper.model_specs)
    rec = iso.paper_layer_records(four, paper)
    assert set(rec) == {f"paper_{s}_layer{i}" for s in ("bert", "distilbert", "gpt", "gpt2") for i in (0, 1)}
    assert rec["paper_gpt_layer1"] == 0.1
    # a part that runs some of the four (replib.parts) records theirs, the same values as the whole run
    three = iso.paper_layer_records(_fake_layers(paper.model_specs[:3]), paper)
    assert set(three) == {k for k in rec if not k.startswith("paper_gpt2_")} and three["paper_gpt_layer1"] == 0.1
    assert iso.paper_layer_records(_fake_layers(["all-MiniLM-L6-v2"]), paper) == {}  # not one of the paper's
    assert iso.paper_layer_records(four, chapter_config("isoscore", "offline")) == {}  # not the paper profile


@pytest.mark.slow
def test_the_per_layer_table_is_computed_once_for_every_seed(tmp_path, monkeypatch):
    """The per-layer table depends on the vectors alone: a second seed over the same model (the packaged model
    does not depend on the seed) reads it back; a model with other weights (a tiny model's other seed) computes
    its own."""
    from replib.methods.isoscore import contextual

    calls = []
    real = contextual.layer_isotropy
    monkeypatch.setattr(contextual, "layer_isotropy", lambda layers, model: calls.append(model) or real(layers, model))
    cfg = chapter_config("isoscore", "smoke").replace(n_lines=40)
    first = iso.contextual_layers(cfg, cache_dir=tmp_path)
    again = iso.contextual_layers(cfg, cache_dir=tmp_path)
    assert len(calls) == 1
    pd.testing.assert_frame_equal(again.per_layer, first.per_layer)
    seed1 = chapter_config("isoscore", "smoke", seed=1).replace(n_lines=40)  # tiny-bert: other weights
    other = iso.contextual_layers(seed1, cache_dir=tmp_path)
    assert len(calls) == 2 and not other.per_layer["isoscore"].equals(first.per_layer["isoscore"])
