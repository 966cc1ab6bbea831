"""Cache identities from content: the classifiers chapter's SBERT vectors and the card's resume identity are
keyed by every file the outputs depend on, so changing any one of them (each in turn) never serves stale
results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from replib.methods import classifiers as ct
from replib.models import tiny_model

TEXTS = ["A man is playing a guitar.", "Isotropy of embedding spaces.", "The cat sat on the mat today."]


def _st_folder(folder: Path) -> Path:
    """A tiny sentence-transformers folder: a random BERT, mean pooling."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer, models

    lm = tiny_model("bert", seed=0)
    inner = folder.parent / f"{folder.name}-src"
    lm.model.save_pretrained(inner)
    lm.tokenizer.save_pretrained(inner)
    word = models.Transformer(str(inner), max_seq_length=32)
    pool = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[word, pool], device="cpu").save(str(folder))
    return folder


def _edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data, indent=2))


def _pooling_cls(folder: Path) -> None:
    _edit_json(
        folder / "1_Pooling" / "config.json",
        pooling_mode="cls",  # sentence-transformers 6
        pooling_mode_mean_tokens=False,  # and before
        pooling_mode_cls_token=True,
    )


def _hidden_act(folder: Path) -> None:
    _edit_json(folder / "config.json", hidden_act="relu")


def _max_seq_length(folder: Path) -> None:
    _edit_json(folder / "sentence_bert_config.json", max_seq_length=4)


def _normalize(folder: Path) -> None:
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "2_Normalize").mkdir()


def _tokenizer(folder: Path) -> None:
    _edit_json(folder / "tokenizer_config.json", do_lower_case=False)


@pytest.mark.slow
@pytest.mark.probe(
    "a sentence-transformers folder (the classifiers chapter) changed after its vectors were cached: pooling, "
    "`hidden_act`, `max_seq_length`, a new Normalize module, the tokenizer",
    "a new cache key (weights, `config.json`, tokenizer and every module file): recomputed, equal to a fresh "
    "cache's vectors, never the old ones",
)
@pytest.mark.parametrize("change", [_pooling_cls, _hidden_act, _max_seq_length, _normalize, _tokenizer])
def test_a_changed_sentence_transformers_folder_never_gets_its_old_vectors(tmp_path, monkeypatch, change):
    folder = _st_folder(tmp_path / "enc")
    monkeypatch.setattr(ct.sbert, "_SBERT_MODELS", {})
    before = ct.sbert_embeddings(TEXTS, str(folder), cache_dir=tmp_path / "cache", device="cpu", progress=False)
    change(folder)
    monkeypatch.setattr(ct.sbert, "_SBERT_MODELS", {})  # a new process: nothing loaded in memory
    after = ct.sbert_embeddings(TEXTS, str(folder), cache_dir=tmp_path / "cache", device="cpu", progress=False)
    monkeypatch.setattr(ct.sbert, "_SBERT_MODELS", {})
    fresh = ct.sbert_embeddings(TEXTS, str(folder), cache_dir=tmp_path / "fresh", device="cpu", progress=False)
    np.testing.assert_array_equal(after, fresh)
    assert not np.array_equal(before, after)


# ------------------------------------------------------------------------------------ the card's resume
def _card_folder(folder: Path) -> Path:
    lm = tiny_model("bert", seed=0)
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.slow
@pytest.mark.probe(
    "a model folder whose `config.json` or tokenizer changed after its card was begun (same weights)",
    "the card's resume identity covers the config and tokenizer hashes: a new card, not the old layers",
)
@pytest.mark.parametrize(
    ("name", "changes"), [("config.json", {"hidden_act": "relu"}), ("tokenizer_config.json", {"do_lower_case": False})]
)
def test_a_card_is_not_resumed_after_its_config_or_tokenizer_changed(tmp_path, name, changes):
    from replib.card import CardConfig, compute_card, text_sample

    folder = _card_folder(tmp_path / "enc")
    cfg = CardConfig(window=32, max_rows=10_000, lid_k=10, lid_queries=200, n_rogue=2)
    lines, out = text_sample(24), tmp_path / "card"
    compute_card(str(folder), out, data=lines, cfg=cfg, cache_dir=tmp_path / "emb", progress=False)
    card = json.loads((out / "card.json").read_text())
    card["layers"]["1"]["isoscore"] = -1.0  # stands for a layer of the old model
    (out / "card.json").write_text(json.dumps(card))
    _edit_json(folder / name, **changes)
    again = compute_card(str(folder), out, data=lines, cfg=cfg, cache_dir=tmp_path / "emb", progress=False)
    assert again["layers"]["1"]["isoscore"] > 0


@pytest.mark.probe(
    "a card refused for its model (a missing folder, a file that is not a model) or its data (no mirror)",
    "the refusal, and no output folder left behind",
)
def test_a_refused_card_leaves_no_folder(tmp_path, monkeypatch):
    from replib.card import compute_card
    from replib.models import ModelUnavailableError

    out = tmp_path / "card"
    with pytest.raises((ModelUnavailableError, OSError, ValueError)):
        compute_card(str(tmp_path / "no-such-model"), out, progress=False)
    assert not out.exists()
    monkeypatch.setenv("REPLIB_DATA_MIRROR", str(tmp_path / "empty-mirror"))
    monkeypatch.setenv("REPLIB_DATA_OFFLINE", "1")
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises((OSError, ValueError), match="REPLIB_DATA"):
        compute_card("tiny-bert", out, progress=False)
    assert not out.exists()
