"""Full-size random-weight stand-ins (issue 26): the papers' architectures at their published sizes."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer

from replib.embeddings import embed_proteins, embed_sentences
from replib.models import minilm_dir, resolve_model
from replib.models.fullsize import (
    FULLSIZE,
    fullsize_config,
    fullsize_model,
    n_parameters,
    parameter_count,
    save_fullsize,
)
from replib.models.registry import REGISTRY

#: parameter counts the papers and model cards report (millions) and the widths of the registry
REPORTED_MILLIONS = {
    "prot_bert": 420,  # Elnaggar et al. 2021, Table 2
    "prot_bert_bfd": 420,
    "prot_xlnet": 409,
    "esm2_t6_8M": 8,  # Lin et al. 2023: the size is in the name
    "esm2_t12_35M": 35,
    "esm2_t30_150M": 150,
    "esm2_t33_650M": 650,
    "bert-base-uncased": 110,  # Devlin et al. 2019
    "distilbert-base-uncased": 66,  # Sanh et al. 2019
    "openai-gpt": 117,  # Radford et al. 2018 (model card)
    "gpt2": 124,  # the 124M GPT-2 (model card)
    "roberta-base": 125,  # Liu et al. 2019 (model card)
    "all-mpnet-base-v2": 110,  # MPNet-base (model card)
    "all-distilroberta-v1": 82,  # distilroberta-base (model card)
}


@pytest.mark.parametrize("name", sorted(REPORTED_MILLIONS))
def test_sizes_are_the_papers(name):
    # the reported counts are rounded (ESM-2's are its names) and some count output heads an encoder does not
    # have (a masked-LM head, ESM-2's contact head): within 10 %; the shapes are checked exactly below
    count = parameter_count(name)  # on the meta device: nothing allocated
    assert abs(count / 1e6 - REPORTED_MILLIONS[name]) / REPORTED_MILLIONS[name] < 0.10, count
    cfg = fullsize_config(name)
    spec = REGISTRY[name]
    layers = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", None) or cfg.n_layers
    width = getattr(cfg, "hidden_size", None) or getattr(cfg, "d_model", None) or cfg.dim
    assert (layers, width) == (spec.n_layers, spec.hidden_size)


#: (heads, feed-forward width, vocabulary) of the published configurations
SHAPES = {
    "prot_bert": (16, 4096, 30),
    "prot_xlnet": (16, 4096, 37),
    "esm2_t33_650M": (20, 5120, 33),
    "esm2_t6_8M": (20, 1280, 33),
    "bert-base-uncased": (12, 3072, 30522),
    "gpt2": (12, None, 50257),
    "roberta-base": (12, 3072, 50265),
    "all-mpnet-base-v2": (12, 3072, 30527),
    "all-MiniLM-L6-v2": (12, 1536, 30522),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_are_the_published_configurations(name):
    cfg = fullsize_config(name)
    heads = getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
    ffn = getattr(cfg, "intermediate_size", None) or getattr(cfg, "d_inner", None) or getattr(cfg, "n_inner", None)
    assert (heads, ffn, cfg.vocab_size) == SHAPES[name]


def test_every_paper_model_has_a_standin():
    assert set(REGISTRY) <= set(FULLSIZE)  # MiniLM too: a machine without its package rehearses its stand-in


def test_unknown_name_is_refused():
    with pytest.raises(ValueError, match="no full-size stand-in"):
        fullsize_model("llama")


def test_seeded_and_deterministic():
    a, b, c = (
        fullsize_model("esm2_t6_8M", seed=0),
        fullsize_model("esm2_t6_8M", seed=0),
        fullsize_model("esm2_t6_8M", 1),
    )
    assert a.identity["state_sha256"] == b.identity["state_sha256"] != c.identity["state_sha256"]
    seqs = ["MKTAYIAKQRQISFVKSHFSRQ", "GSHMLEDPVAGAAAA"]
    x = embed_proteins(a, seqs, layers=(0, -1), progress=False).pooled[-1]
    y = embed_proteins(b, seqs, layers=(0, -1), progress=False).pooled[-1]
    np.testing.assert_array_equal(x, y)
    assert x.shape == (2, 320)


def test_proteinbert_at_its_full_sequence_length():
    lm = fullsize_model("proteinbert")
    assert lm.spec.extra["seq_len"] == 512 and lm.tokenizer.seq_len == 512
    emb = embed_proteins(lm, ["MKTAYIAKQRQISFVKSHFSRQ"], progress=False)
    assert emb.pooled["global"].shape == (1, 512)


@pytest.mark.parametrize("name", ["gpt2", "roberta-base", "all-mpnet-base-v2"])
def test_tokenizer_ids_fit_the_embedding_matrix(name):
    arch = FULLSIZE[name]
    vocab = fullsize_config(name).vocab_size
    from replib.models.fullsize import _tokenizer

    tok = _tokenizer(arch, vocab)
    ids = tok("The quick brown fox jumps over the lazy dog, 1,000 times.")["input_ids"]
    assert len(tok) <= vocab and max(ids) < vocab
    assert 10 <= len(ids) <= 20  # words, not characters: a real BPE, not a toy one


def test_saved_sentence_encoder_loads_as_a_folder(tmp_path):
    out = save_fullsize("distilbert-base-uncased", tmp_path / "enc", sbert=True)
    assert (out / "modules.json").exists() and (out / "1_Pooling" / "config.json").exists()
    with pytest.raises(FileExistsError):
        save_fullsize("distilbert-base-uncased", out)
    lm = resolve_model(str(out))
    assert lm.spec.recipe == "sbert" and lm.spec.hidden_size == 768 and lm.spec.n_layers == 6
    mem = fullsize_model("distilbert-base-uncased")
    texts = ["A man is playing a guitar.", "Two dogs run on the beach."]
    a = embed_sentences(lm, texts, progress=False).means
    b = embed_sentences(mem, texts, progress=False).means
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)  # the same weights, saved and read back


def test_proteinbert_has_no_folder():
    with pytest.raises(ValueError, match="not a transformers model"):
        save_fullsize("proteinbert", "/nonexistent/x")


@pytest.mark.parametrize("name", ["esm2_t6_8M", "proteinbert"])
def test_parameter_count_without_weights_matches_the_built_model(name):
    lm = fullsize_model(name, seed=0)
    assert parameter_count(name) == n_parameters(lm.model)


def test_wordpiece_tokenizer_is_served_from_a_copy_of_the_cache(tmp_path, monkeypatch):
    """bert-base-uncased's WordPiece of the stand-ins, copied once from the packaged MiniLM into the tokenizer
    cache, tokenizes as the packaged one, and that cache serves it on a machine without the package."""
    from replib.models import fullsize as F

    packaged = AutoTokenizer.from_pretrained(str(minilm_dir(verify=False)))
    monkeypatch.setattr(F, "_tok_root", lambda: tmp_path / "tokenizers")
    text = "The quick brown fox jumps over the lazy dog, 1,000 times."
    names = ("bert-base-uncased", "all-MiniLM-L6-v2", "all-mpnet-base-v2")
    for copied in (False, True):
        if copied:  # the package gone: the cache's copy serves the tokenizers
            monkeypatch.setattr(F, "minilm_dir", lambda verify=True: (_ for _ in ()).throw(ValueError("no package")))
        bert, minilm, mpnet = (F._tokenizer(FULLSIZE[n], fullsize_config(n).vocab_size) for n in names)
        assert bert(text) == minilm(text) == packaged(text) and minilm.model_max_length == 512
        assert mpnet.tokenize(text) == packaged.tokenize(text)  # the same WordPiece, MPNet's specials around it
