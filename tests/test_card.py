"""The isotropy card (issue 14): its numbers are the chapters' functions on the same model and data; it
resumes at the next unfinished layer; a folder copy of the packaged MiniLM gets the registry key's card; its
layers are numbered and coloured as the chapters' (issue 28, item 15)."""

import json
import shutil

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest

from replib.card import CardConfig, card_figure, compute_card, layer_card, paper_values, text_sample
from replib.embeddings import embed_proteins, embed_token_stream
from replib.methods import manifolds as mf
from replib.methods.layerwise import layer_isotropy
from replib.metrics import avg_pairwise_cosine, cosine_contributions, isoscore, partition_isotropy
from replib.models import minilm_dir, tiny_model
from replib.plotting import LAYER_CMAP, layer_colors

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
    assert sorted(int(k) for k in card["layers"]) == [c + 1 for c in sorted(ts.layers)]  # card layer = code + 1
    for layer, X in ts.layers.items():
        row = card["layers"][str(layer + 1)]
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
    card["layers"]["1"]["isoscore"] = -1.0  # a finished layer is not recomputed ...
    del card["layers"]["2"]  # ... an unfinished one is
    (out / "card.json").write_text(json.dumps(card))
    again = compute_card("tiny-bert", out, data=LINES, cfg=CFG, progress=False)
    assert again["layers"]["1"]["isoscore"] == -1.0 and again["layers"]["2"]["isoscore"] > 0
    other = compute_card("tiny-bert", out, data=LINES[:9], cfg=CFG, progress=False)  # other data: fresh card
    assert other["layers"]["1"]["isoscore"] > 0


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


# ----------------------------------------------------------------- one layer numbering, one colour map
@pytest.mark.probe(
    "the card's layers",
    "numbered as `hidden_states` (0 = embedding output) and coloured with the book's one layer map",
)
def test_text_card_layer_l_is_hidden_states_l(tmp_path):
    """Card layer ``l`` of a text model is ``hidden_states[l]`` of the model (layer 0 = embedding output, as
    in the training chapter's :func:`replib.training.measure.hidden_states`), computed here by the model."""
    torch = pytest.importorskip("torch")
    card = compute_card("tiny-bert", tmp_path / "card", data=LINES, cfg=CFG, progress=False)
    lm = tiny_model("bert", seed=0)
    ts = embed_token_stream(lm, LINES, window=CFG.window, progress=False)
    windows = torch.from_numpy(np.asarray(ts.token_ids).reshape(-1, CFG.window))
    with torch.no_grad():
        hs = lm.model(input_ids=windows, output_hidden_states=True).hidden_states
    assert sorted(int(k) for k in card["layers"]) == list(range(1, len(hs)))  # no embedding output in a stream
    for k, row in card["layers"].items():
        X = hs[int(k)].reshape(-1, hs[int(k)].shape[-1]).numpy()
        assert row["isoscore"] == pytest.approx(isoscore(X), rel=1e-5)


def test_protein_card_starts_at_the_embedding_output_like_the_protein_chapter(tmp_path):
    seqs = [
        "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVG",
        "ACDEFGHIKLMNPQRSTVWY" * 2,
        "MVLSPADKTNVKAAWGKVGAHAGEYGAEALERMF",
    ]
    cfg = CardConfig(max_rows=10_000, lid_k=10, lid_queries=50, n_rogue=2)
    card = compute_card("tiny-esm", tmp_path / "card", data=seqs, cfg=cfg, progress=False)
    lm = tiny_model("esm", seed=0)
    assert sorted(int(k) for k in card["layers"]) == list(range(lm.spec.n_layers + 1))
    for k, row in card["layers"].items():  # the protein chapter's layers index hidden_states too
        emb = embed_proteins(lm, seqs, layers=(int(k),), return_residues=True, progress=False)
        assert row["isoscore"] == pytest.approx(isoscore(np.concatenate(emb.residues[int(k)])), rel=1e-9)


def test_papers_per_layer_values_are_placed_on_the_cards_axis():
    """Rudman et al.'s released BERT layer 0 (0.1402, the output of the first block) is card layer 1."""
    bert = [p for p in paper_values() if p["metric"] == "isoscore" and p["model"] == "bert" and p["layer"] is not None]
    if not bert:
        pytest.skip("the papers' tables are not in this checkout")
    assert min(p["layer"] for p in bert) == 1
    assert [p["value"] for p in bert if p["layer"] == 1] == [0.1402]


def test_card_colours_its_layers_with_the_books_layer_map():
    rows = [{"layer": layer, "isoscore": 0.1 * layer} for layer in range(1, 5)]
    card = {"model": {"name": "m", "n_layers": 4}, "layers": {}, "paper_values": []}
    fig = card_figure(card, pd.DataFrame([{m: r.get(m, 0.0) for m in _METRICS} | r for r in rows]))
    assert list(fig.data[0].marker.color) == [layer_colors(range(5), 4)[layer] for layer in range(1, 5)]
    cmap = mpl.colormaps[LAYER_CMAP]  # the chapters' palette="viridis" over layers 0 .. n_layers
    assert layer_colors([0, 4], 4) == {0: mpl.colors.to_hex(cmap(0.0)), 4: mpl.colors.to_hex(cmap(1.0))}
    with pytest.raises(ValueError, match="start at 0"):
        layer_colors([-1])


_METRICS = ("isoscore", "isoscore_star", "effective_dims", "avg_cosine", "iw_log10", "lid_mle", "lid_cai")
_METRICS += ("s_inter", "s_intra", "rogue_share")
