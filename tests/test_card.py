"""The isotropy card (issue 14): its numbers are the chapters' functions on the same model and data; it
resumes at the next unfinished layer; a folder copy of the packaged MiniLM gets the registry key's card."""

import json
import shutil

import numpy as np
import pytest

from replib.card import CardConfig, compute_card, layer_card, text_sample
from replib.embeddings import embed_token_stream
from replib.methods import manifolds as mf
from replib.methods.layerwise import layer_isotropy
from replib.metrics import avg_pairwise_cosine, cosine_contributions, partition_isotropy
from replib.models import minilm_dir, tiny_model

LINES = text_sample(24)  # WikiText-2 test, the card's standard sample (no repeated windows: LID needs distinct rows)
CFG = CardConfig(window=32, max_rows=10_000, lid_k=10, lid_queries=200, n_rogue=2)


def test_cosine_contributions_sum_to_the_average_cosine(rng):
    X = rng.normal(size=(50, 7)) + np.array([3.0, 0, 0, 0, 0, 0, 1.0])
    c = cosine_contributions(X)
    assert c.shape == (7,) and abs(c.sum() - avg_pairwise_cosine(X)) < 1e-12
    assert np.argmax(c) == 0  # the offset dimension dominates the cosine


def test_card_equals_the_chapters_functions(tmp_path):
    card = compute_card("tiny-bert", tmp_path / "card", data=LINES, cfg=CFG, cache_dir=tmp_path / "emb", progress=False)
    lm = tiny_model("bert", seed=0)
    ts = embed_token_stream(lm, LINES, window=CFG.window, progress=False)
    table = layer_isotropy(ts.layers, model="tiny-bert").set_index("layer")  # the IsoScore chapter's table
    assert sorted(int(k) for k in card["layers"]) == sorted(ts.layers)
    for layer, X in ts.layers.items():
        row = card["layers"][str(layer)]
        assert row["n_rows"] == len(X)
        for m in ("isoscore", "effective_dims", "avg_cosine"):
            assert row[m] == pytest.approx(table.loc[layer, m], rel=1e-9, abs=1e-12)
        types = np.asarray(ts.tokens)
        X64 = X.astype(np.float64)
        assert row["s_inter"] == pytest.approx(mf.s_inter(X64, types, CFG.seed), rel=1e-9)  # the manifolds chapter
        assert row["s_intra"] == pytest.approx(mf.s_intra(X64, types, 1000, CFG.seed), rel=1e-9)
        assert row["iw_log10"] == pytest.approx(partition_isotropy(X64).log10, rel=1e-9)
        assert row["lid_cai"] == pytest.approx(row["lid_mle"] * CFG.lid_k / (2 * (CFG.lid_k - 1)), rel=1e-9)
    html = (tmp_path / "card" / "card.html").read_text()
    assert "Isotropy card: tiny-bert" in html and "plotly" in html.lower()
    assert any(p["metric"] == "lid_cai" and p["model"] == "BERT" for p in card["paper_values"])


def test_card_resumes_at_the_next_layer(tmp_path):
    out = tmp_path / "card"
    compute_card("tiny-bert", out, data=LINES, cfg=CFG, progress=False)
    card = json.loads((out / "card.json").read_text())
    card["layers"]["0"]["isoscore"] = -1.0  # a finished layer is not recomputed ...
    del card["layers"]["1"]  # ... an unfinished one is
    (out / "card.json").write_text(json.dumps(card))
    again = compute_card("tiny-bert", out, data=LINES, cfg=CFG, progress=False)
    assert again["layers"]["0"]["isoscore"] == -1.0 and again["layers"]["1"]["isoscore"] > 0
    other = compute_card("tiny-bert", out, data=LINES[:9], cfg=CFG, progress=False)  # other data: fresh card
    assert other["layers"]["0"]["isoscore"] > 0


def test_minilm_folder_card_equals_registry_card(tmp_path):
    folder = tmp_path / "plain-minilm"
    shutil.copytree(minilm_dir(), folder)
    cfg = CardConfig(window=32, max_rows=10_000, lid_k=10, lid_queries=100)
    a = compute_card(str(folder), tmp_path / "a", data=LINES[:6], cfg=cfg, progress=False)
    b = compute_card("all-MiniLM-L6-v2", tmp_path / "b", data=LINES[:6], cfg=cfg, progress=False)
    assert a["model"]["weights_sha256"] == b["model"]["weights_sha256"]
    assert a["layers"] == b["layers"] and len(a["layers"]) == 6


def test_layer_card_rejects_bad_input():
    with pytest.raises(ValueError):
        layer_card(np.zeros((5, 3)) * np.nan, np.array(list("abcde")), CFG)
