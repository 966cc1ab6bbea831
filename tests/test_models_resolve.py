"""Any model, any chapter (issue 14): the resolver turns registry keys, folders, Hub ids and word-vector files
into loaded models with provenance and recipe; offline it fails before any network call."""

import json
import shutil
import socket

import numpy as np
import pytest

from replib.embeddings import embed_sentences
from replib.models import (
    ModelRef,
    ModelUnavailableError,
    infer_recipe,
    load_model,
    load_static_vectors,
    minilm_dir,
    model_slug,
    resolve_model,
    weights_sha256,
)
from replib.models.registry import MINILM_SAFETENSORS_SHA256

TEXTS = ["A man is playing a guitar.", "Isotropy of embedding spaces.", "The cat sat on the mat today."]


@pytest.fixture(scope="module")
def minilm_copy(tmp_path_factory):
    """The packaged MiniLM copied to a plain folder (no package, no registry name)."""
    dst = tmp_path_factory.mktemp("models") / "my-encoder"
    shutil.copytree(minilm_dir(), dst)
    return dst


def test_minilm_folder_equals_registry_key(minilm_copy, tmp_path):
    by_path = resolve_model(str(minilm_copy), device="cpu")
    by_key = resolve_model("all-MiniLM-L6-v2", device="cpu")
    assert by_path.name == "my-encoder" and by_path.spec.recipe == "sbert"  # from 1_Pooling/config.json
    assert by_path.weights_sha256 == by_key.weights_sha256 == MINILM_SAFETENSORS_SHA256
    assert (by_path.spec.hidden_size, by_path.spec.n_layers) == (384, 6)
    a = embed_sentences(by_path, TEXTS, progress=False)  # no cache: both computed from the weights
    b = embed_sentences(by_key, TEXTS, progress=False)
    np.testing.assert_array_equal(a.means, b.means)
    for x, y in zip(a.tokens, b.tokens):
        np.testing.assert_array_equal(x, y)
    # the embedding cache is keyed by the weights' sha256: a moved copy reuses it, the path is not in it
    cache = tmp_path / "emb"
    embed_sentences(by_path, TEXTS, progress=False, cache_dir=cache)
    manifests = [json.loads(p.read_text()) for p in cache.glob("*/manifest.json")]
    assert len(manifests) == 1 and str(minilm_copy) not in json.dumps(manifests[0])
    assert manifests[0]["info"]["weights_sha256"] == MINILM_SAFETENSORS_SHA256
    embed_sentences(by_key, TEXTS, progress=False, cache_dir=cache)
    assert len(list(cache.glob("*/manifest.json"))) == 1


def test_changed_weights_change_the_identity(minilm_copy, tmp_path):
    other = tmp_path / "edited"
    shutil.copytree(minilm_copy, other)
    with open(other / "model.safetensors", "ab") as f:  # trailing bytes: same tensors, different file
        f.write(b" ")
    assert weights_sha256(other) != weights_sha256(minilm_copy)


def test_transformers_layout_without_pooling_is_text(minilm_copy, tmp_path):
    plain = tmp_path / "plain-bert"
    plain.mkdir()
    for f in minilm_copy.iterdir():
        if f.is_file() and f.name not in ("modules.json", "sentence_bert_config.json"):
            shutil.copy(f, plain / f.name)
    ref = ModelRef.parse(str(plain))
    assert (ref.kind, ref.layout) == ("folder", "transformers")
    assert resolve_model(str(plain), device="cpu").spec.recipe == "text"
    assert resolve_model(str(plain), device="cpu", recipe="sbert").spec.recipe == "sbert"  # overridable


def test_recipe_inference_from_config():
    from transformers import BertConfig, EsmConfig, GPT2Config, XLNetConfig

    assert infer_recipe(BertConfig(vocab_size=30)) == "protbert"
    assert infer_recipe(BertConfig()) == "text"
    assert infer_recipe(EsmConfig(vocab_size=33)) == "esm"
    assert infer_recipe(XLNetConfig(vocab_size=37)) == "protxlnet"
    assert infer_recipe(GPT2Config()) == "text"
    assert infer_recipe(BertConfig(), pooling="mean") == "sbert"
    with pytest.raises(ModelUnavailableError, match="pooling"):
        infer_recipe(BertConfig(), pooling="cls")


def test_tiny_protein_model_by_path_gets_protein_recipe(tmp_path):
    from replib.embeddings import embed_proteins
    from replib.models import tiny_model

    tiny = tiny_model("esm", seed=0)
    folder = tmp_path / "my-esm"
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    lm = resolve_model(str(folder), device="cpu")
    assert lm.spec.recipe == "esm" and lm.weights_sha256 == weights_sha256(folder)
    a = embed_proteins(lm, ["MKTAYIAK", "GAVLIPW"], progress=False)
    b = embed_proteins(tiny, ["MKTAYIAK", "GAVLIPW"], progress=False)
    np.testing.assert_array_equal(a.pooled[-1], b.pooled[-1])


def test_uncached_hub_id_offline_fails_without_network(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls = []

    def no_network(*args, **kwargs):
        calls.append(args)
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(ModelUnavailableError, match="not in the local Hugging Face cache.*HF_HUB_OFFLINE"):
        resolve_model("someone/not-a-cached-model", cache_dir=tmp_path)
    with pytest.raises(ModelUnavailableError, match="--model /path/to/model"):
        load_model("bert-base-uncased", cache_dir=tmp_path)  # registry model, not cached: same fast failure
    assert calls == []


def test_bad_specs_get_clear_errors(tmp_path):
    with pytest.raises(ModelUnavailableError, match="no such file"):
        resolve_model(str(tmp_path / "missing" / "model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailableError, match="neither a transformers"):
        resolve_model(str(tmp_path / "empty"))
    with pytest.raises(ModelUnavailableError, match="neither a registry key"):
        ModelRef.parse("not a model!")


def test_slugs():
    assert model_slug("all-MiniLM-L6-v2") == "minilm" and model_slug("tiny-bert") == "tinybert"
    assert model_slug("/some/where/My-Encoder.v2") == "my_encoder_v2"
    # a Hub id keeps its organisation and revision: org/a@v1 and other/a@v2 are two models in one run
    assert model_slug("org/Some-Model") == "org_some_model" and model_slug("org/Some-Model@abc") == "org_some_model_abc"


@pytest.mark.parametrize("fmt", ["glove", "word2vec"])
def test_static_vectors_files(tmp_path, fmt):
    rng = np.random.default_rng(0)
    words = ["the", "cat", "sat"]
    V = rng.normal(size=(3, 4)).astype(np.float32)
    lines = [f"{w} " + " ".join(f"{x:.6f}" for x in v) for w, v in zip(words, V)]
    if fmt == "word2vec":
        lines.insert(0, "3 4")
    path = tmp_path / f"vec.{fmt}.txt"
    path.write_text("\n".join(lines) + "\n")
    assert ModelRef.parse(str(path)).layout == fmt
    w, M, sha = load_static_vectors(path)
    assert w == words and M.shape == (3, 4) and len(sha) == 64
    np.testing.assert_allclose(M, V, atol=1e-6)


def test_classifier_setups_and_cluster_loader_take_a_folder(minilm_copy, tmp_path):
    from replib.methods.classifiers import polarity_setup

    a = polarity_setup(str(minilm_copy), n_items=12, seed=0, cache_dir=tmp_path, progress=False)
    b = polarity_setup("all-MiniLM-L6-v2", n_items=12, seed=0, cache_dir=tmp_path / "other", progress=False)
    np.testing.assert_allclose(a.embeddings, b.embeddings, atol=1e-6)
    assert not any(str(minilm_copy) in p.name for p in (tmp_path / "sbert").iterdir())
    assert resolve_model(str(minilm_copy)).weights_sha256 == MINILM_SAFETENSORS_SHA256
    assert resolve_model("tiny-bert").name == "tiny-bert"


def test_chapter_configs_take_a_folder(minilm_copy):
    from replib.config import chapter_config
    from replib.methods import cluster_isotropy as ci
    from replib.methods import protein_isotropy as P
    from replib.models.resolve import model_n_layers

    assert model_n_layers(str(minilm_copy)) == 6 and model_n_layers("gpt2") == 12 and model_n_layers("tiny-bert") == 2
    cfg = chapter_config("manifolds", "smoke", models=[str(minilm_copy), "gpt2"])
    slug = model_slug(str(minilm_copy))  # the folder's name and a short hash of its path
    assert slug.startswith("my_encoder_") and len(slug) == len("my_encoder_") + 6
    assert dict(cfg.named_models) == {slug: (str(minilm_copy), 6), "GPT2": ("gpt2", 12)}  # paper names stay bound
    assert cfg.swiss_layers[slug] == (1, 3, 5) and cfg.swiss_layers["GPT2"] == (1, 6, 11)
    assert chapter_config("manifolds", "paper", models=["gpt2"]).swiss_layers["GPT2"] == (2, 6)  # the paper's views
    c = chapter_config("cluster_isotropy", "paper", models=[str(minilm_copy), "bert-base-uncased"])
    assert c.model_specs[0] == c.deck_model == c.clf_model == str(minilm_copy)
    assert c.tune_models == (str(minilm_copy),)  # the paper's model keeps the paper's hyperparameters
    assert chapter_config("cluster_isotropy", "smoke").tune_models == ("tiny-bert", "tiny-gpt2")
    p = chapter_config("protein_isotropy", "smoke", models=str(minilm_copy))
    assert p.model_specs == [str(minilm_copy)] and P.model_label(str(minilm_copy)) == slug
    with pytest.raises(ModelUnavailableError, match="no such file or folder"):
        chapter_config("protein_isotropy", "smoke", models="/x/my-esm")  # a missing folder fails when chosen
    assert ci.short_names(c)[str(minilm_copy)] == slug
    assert P.model_label("prot_bert") == "prot_bert"
