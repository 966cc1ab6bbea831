"""The isotropy atlas: its numbers are the cards' (one function computes both), a model that cannot be
loaded is listed with the reason instead of silently left out, static vectors get a one-layer card of their
word types, and the book page shows a sortable table and a figure per metric."""

import json
import re

import numpy as np
import pytest

from bookkit.book import atlas as page
from replib.atlas import (
    AtlasEntry,
    atlas_entries,
    atlas_rows,
    compute_atlas,
    static_card,
    trained_folder,
    with_config,
)
from replib.card import CardConfig, compute_card, text_sample
from replib.metrics import avg_pairwise_cosine, effective_dimensions, isoscore
from replib.models import load_glove
from replib.models.fullsize import random_architecture

LINES = text_sample(12)
CFG = with_config(window=32, max_rows=2000, lid_k=10, lid_queries=100)
TINY = AtlasEntry("tiny-bert", "tiny BERT, random", "random", "tiny-bert", "a tiny model")
GLOVE = AtlasEntry("glove-6b-50d", "GloVe 6B 50d", "static", "glove")
MISSING = AtlasEntry("nowhere", "a model that is not here", "pretrained", "/no/such/model-folder")


@pytest.fixture(scope="module")
def atlas(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas") / "smoke"
    return compute_atlas(out, "smoke", cfg=CFG, entries=[TINY, GLOVE, MISSING], text=LINES, progress=False), out


def test_atlas_rows_are_the_models_cards(atlas, tmp_path):
    a, out = atlas
    card = compute_card("tiny-bert", tmp_path / "card", data=LINES, cfg=CFG, progress=False)
    tiny = next(m for m in a["models"] if m["key"] == "tiny-bert")
    assert tiny["status"] == "ok" and tiny["layers"] == card["layers"]
    saved = json.loads((out / "atlas.json").read_text())
    assert [m["key"] for m in saved["models"]] == ["tiny-bert", "glove-6b-50d", "nowhere"]
    rows = atlas_rows(a)
    # layers as the card numbers them (hidden_states indices: the tiny 2-block BERT has blocks 1 and 2)
    assert [(r["key"], r["layer"]) for r in rows] == [("tiny-bert", 1), ("tiny-bert", 2), ("glove-6b-50d", 0)]
    assert [r["layer"] for r in rows[:2]] == sorted(int(k) for k in card["layers"])
    assert rows[0]["isoscore"] == card["layers"]["1"]["isoscore"]


def test_an_unloadable_model_is_listed_with_the_reason(atlas):
    a, _ = atlas
    gone = next(m for m in a["models"] if m["key"] == "nowhere")
    assert gone["status"] == "unavailable" and "/no/such/model-folder" in gone["reason"]


def test_static_vectors_one_row_per_word_type(atlas):
    a, _ = atlas
    words, vectors = load_glove()
    index = {w: i for i, w in enumerate(words)}
    types = list(dict.fromkeys(w for line in LINES for w in line.lower().split() if w in index))
    X = vectors[[index[w] for w in types]]
    glove = next(m for m in a["models"] if m["key"] == "glove-6b-50d")["layers"]["0"]
    assert glove["n_rows"] == len(types) and glove["n_features"] == 50
    assert glove["isoscore"] == pytest.approx(isoscore(X), rel=1e-12)
    assert glove["effective_dims"] == pytest.approx(effective_dimensions(X), rel=1e-12)
    assert glove["avg_cosine"] == pytest.approx(avg_pairwise_cosine(np.asarray(X, np.float64)), rel=1e-12)
    assert np.isnan(glove["s_intra"])  # one vector per word: no intra-type pair
    with pytest.raises(ValueError, match="too few"):
        static_card(words, vectors, ["qwzx vvbnm"], CFG)


def test_trained_models_are_read_from_the_cache_never_trained(tmp_path):
    with pytest.raises(RuntimeError, match="training_dynamics"):
        trained_folder("text", "offline", root=tmp_path)
    a = compute_atlas(
        tmp_path / "a",
        "offline",
        cfg=CFG,
        entries=[AtlasEntry("trained-text", "LM", "trained", "trained:text")],
        text=LINES,
        progress=False,
    )
    assert a["models"][0]["status"] in ("ok", "unavailable")  # ok only where the training chapter has run


def test_random_full_size_architectures():
    bert = random_architecture("bert-base")
    assert (bert.spec.n_layers, bert.spec.hidden_size) == (12, 768)
    assert bert.model.config.vocab_size == bert.tokenizer.vocab_size == 30522
    gpt2 = random_architecture("gpt2")
    assert (gpt2.spec.n_layers, gpt2.spec.hidden_size, gpt2.spec.recipe) == (12, 768, "text")
    assert sum(p.numel() for p in gpt2.model.parameters()) > 80e6  # full size, not a tiny model
    with pytest.raises(ValueError, match="unknown architecture"):
        random_architecture("llama")


def test_entries_per_profile():
    offline = {e.spec for e in atlas_entries("offline")}
    assert {
        "all-MiniLM-L6-v2",
        "glove",
        "trained:text",
        "trained:protein",
        "random:bert-base",
        "random:gpt2",
    } <= offline
    paper = atlas_entries("paper")
    assert offline <= {e.spec for e in paper} and any(e.spec == "bert-base-uncased" for e in paper)
    assert len({e.key for e in paper}) == len(paper)
    with pytest.raises(ValueError):
        atlas_entries("huge")
    with pytest.raises(ValueError, match="kind"):
        compute_atlas("unused", entries=[AtlasEntry("x", "x", "alien", "x")], cfg=CardConfig())


def test_the_page_has_a_sortable_table_and_a_figure_per_metric(atlas, tmp_path):
    a, out = atlas
    stage = tmp_path / "stage"
    (stage / "book").mkdir(parents=True)
    (stage / "book" / "atlas.md").write_text("# The isotropy atlas\n\n<!-- replib:atlas -->\n")
    (tmp_path / "atlases" / "smoke").mkdir(parents=True)
    (tmp_path / "atlases" / "smoke" / "atlas.json").write_text((out / "atlas.json").read_text())
    md = page.stage_page(stage, tmp_path / "atlases").read_text()
    assert page.MARKER not in md and 'class="replib-sortable' in md and "aria-sort" in md
    body = re.findall(r"<tr><td.*?</tr>", md)
    assert len(body) == len(atlas_rows(a))
    first = re.findall(r'data-v="([^"]*)"', body[0])
    assert float(first[5]) == atlas_rows(a)[0]["isoscore"]  # the sort key is the full value
    for metric in ("isoscore", "effective_dims", "avg_cosine", "rogue_share"):
        assert (stage / "book" / "atlas" / f"smoke-{metric}.png").stat().st_size > 1000
        assert f":::{{figure}} atlas/smoke-{metric}.png" in md
    assert md.count(":alt:") == 4
    assert "a model that is not here" in md and "unavailable" in md
    (stage / "book" / "atlas.md").write_text("# The isotropy atlas\n\n<!-- replib:atlas -->\n")
    empty = page.stage_page(stage, tmp_path / "none").read_text()
    assert "python -m bookkit.book.atlas --profile offline" in empty


@pytest.fixture(scope="module")
def short_model(tmp_path_factory):
    """A GPT-2 folder with 128 positions, as the training chapter's text LM (the card's window is 256)."""
    import transformers as tr

    from replib.models import resolve_model

    tiny = resolve_model("tiny-gpt2")
    folder = tmp_path_factory.mktemp("gpt2-128")
    tr.GPT2Model(tr.GPT2Config(**dict(tiny.model.config.to_dict(), n_positions=128))).save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    return folder


def test_the_card_fits_its_window_to_a_model_with_fewer_positions(short_model, tmp_path, monkeypatch):
    import replib.card as C

    cfg = with_config(max_rows=500, lid_k=10, lid_queries=50)
    assert cfg.window > 128
    card = compute_card(short_model, tmp_path / "card", data=text_sample(40), cfg=cfg, progress=False)
    assert card["sample"]["window"] == 128 and sorted(card["layers"]) == ["1", "2"]
    # a complete card is resumed without embedding anything again (the main job's atlas costs little then)
    monkeypatch.setattr(C, "model_layers", lambda *a, **k: pytest.fail("a complete card embedded its sample again"))
    again = compute_card(short_model, tmp_path / "card", data=text_sample(40), cfg=cfg, progress=False)
    assert again["layers"] == card["layers"] and again["sample"] == card["sample"]


def test_the_atlas_goes_on_past_a_failing_model_and_names_it(short_model, tmp_path, monkeypatch, capsys):
    import replib.atlas as A

    real = A.model_card

    def flaky(entry, *args, **kw):
        if entry.key == "broken":
            raise IndexError("index out of range in self")
        return real(entry, *args, **kw)

    monkeypatch.setattr(A, "model_card", flaky)
    entries = [
        AtlasEntry("broken", "a model that crashes", "pretrained", "tiny-bert"),
        AtlasEntry("short", "128 positions", "pretrained", str(short_model)),
    ]
    cfg = with_config(max_rows=500, lid_k=10, lid_queries=50)
    a = compute_atlas(tmp_path / "a", "smoke", cfg=cfg, entries=entries, text=text_sample(40), progress=False)
    assert [(m["key"], m["status"]) for m in a["models"]] == [("broken", "failed"), ("short", "ok")]
    assert "IndexError" in a["models"][0]["reason"]
    kept = json.loads((tmp_path / "a" / "atlas.json").read_text())
    (tmp_path / "a" / "atlas.json").write_text(json.dumps(dict(kept, created="2000-01-01T00:00:00+00:00")))
    again = compute_atlas(tmp_path / "a", "smoke", cfg=cfg, entries=entries, text=text_sample(40), progress=False)
    assert again["created"] == "2000-01-01T00:00:00+00:00"  # the same atlas keeps its date: the book is not rebuilt
    monkeypatch.setattr(page, "compute_atlas", lambda *a, **k: compute_atlas(*a, **dict(k, entries=entries)))
    assert page.main(["--profile", "smoke", "-o", str(tmp_path / "b"), "--max-rows", "500", "--n-lines", "40"]) == 1
    assert "failed: ['broken']" in capsys.readouterr().out


def test_an_unchanged_atlas_with_an_undefined_metric_keeps_its_date(tmp_path, monkeypatch):
    """A static model's S_intra is NaN; the atlas computed again from the same cards is the same atlas (its date,
    and the book built from it, stay)."""
    import replib.atlas as A

    def card(entry, *a, **kw):  # a NaN computed anew each time, as a card's metrics are
        return {"model": {"name": "glove"}, "sample": {}, "layers": [{"layer": 0, "s_intra": np.float64("nan").item()}]}

    monkeypatch.setattr(A, "model_card", card)
    entries = [AtlasEntry("glove", "GloVe", "static", "glove")]
    compute_atlas(tmp_path, "smoke", entries=entries, progress=False)
    kept = json.loads((tmp_path / "atlas.json").read_text())
    (tmp_path / "atlas.json").write_text(json.dumps(dict(kept, created="2000-01-01T00:00:00+00:00")))
    again = compute_atlas(tmp_path, "smoke", entries=entries, progress=False)
    assert again["created"] == "2000-01-01T00:00:00+00:00"


def test_the_main_job_computes_the_atlas_where_the_book_reads_it(tmp_path, monkeypatch, capsys):
    calls = []

    def fake(out, profile, **kw):
        calls.append((out, profile))
        return {"models": [{"key": "a", "status": "ok"}, {"key": "b", "status": "failed", "reason": "IndexError: x"}]}

    monkeypatch.setattr(page, "compute_atlas", fake)
    assert page.for_book("offline", tmp_path) == ["b"]
    assert calls == [(tmp_path / "build" / "atlas" / "offline", "offline")]
    assert "b failed: IndexError: x" in capsys.readouterr().out
    assert page.for_book("paper", tmp_path) == [] and len(calls) == 1  # the paper atlas is a nightly part


def test_max_positions_from_the_config_and_the_tokenizer():
    from types import SimpleNamespace as NS

    from replib.card import max_positions

    def lm(tok_max=None, **conf):
        return NS(model=NS(config=NS(**conf)), tokenizer=NS(model_max_length=tok_max))

    assert max_positions(lm(model_type="gpt2", n_positions=128, tok_max=int(1e30))) == 128  # "no limit" ignored
    assert max_positions(lm(model_type="roberta", max_position_embeddings=514, pad_token_id=1)) == 512
    assert max_positions(lm(model_type="bert", max_position_embeddings=512, tok_max=256)) == 256
    assert max_positions(lm(model_type="x")) is None
