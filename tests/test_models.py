"""Registry, packaged offline models, tiny models."""

import re

import numpy as np
import pytest
import torch

from replib.models import ESM_VOCAB, PROTBERT_VOCAB, REGISTRY, get_spec, load_glove, load_model, minilm_dir, tiny_model

HEX40 = re.compile(r"^[0-9a-f]{40}$")


def test_registry_entries_complete_and_honestly_pinned():
    need = {
        "prot_bert",
        "prot_bert_bfd",
        "prot_xlnet",
        "proteinbert",
        "esm2_t6_8M",
        "esm2_t12_35M",
        "esm2_t30_150M",
        "esm2_t33_650M",
        "bert-base-uncased",
        "distilbert-base-uncased",
        "openai-gpt",
        "gpt2",
        "roberta-base",
        "all-MiniLM-L6-v2",
        "all-mpnet-base-v2",
        "all-distilroberta-v1",
    }
    assert need <= set(REGISTRY)
    for s in REGISTRY.values():
        assert s.family in {
            "bert",
            "xlnet",
            "gpt2",
            "openai-gpt",
            "roberta",
            "distilbert",
            "esm",
            "sbert",
            "proteinbert",
        }
        assert s.hidden_size > 0 and s.n_layers > 0 and s.licence
        if s.pinned:
            assert HEX40.match(s.revision) or (s.family == "proteinbert" and len(s.revision) == 64)
        else:
            assert s.revision == "main" and "TODO pin" in s.notes
    assert get_spec("Rostlab/prot_bert").name == "prot_bert"
    assert REGISTRY["proteinbert"].extra["size"] == 191800918
    with pytest.raises(ValueError, match="unknown model"):
        get_spec("nope")


def test_packaged_minilm_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (minilm_dir() / "model.safetensors").exists()  # sha256 checked inside
    m = load_model("all-MiniLM-L6-v2", device="cpu")
    assert not m.model.training and m.spec.hidden_size == m.model.config.hidden_size == 384
    assert m.model.config.num_hidden_layers == m.spec.n_layers == 6


def test_glove():
    words, X = load_glove()
    assert X.shape == (400_000, 50) and X.dtype == np.float32 and len(words) == 400_000
    assert words[0] == "the" and len(set(words)) == 400_000
    np.testing.assert_allclose(X[0, :3], [0.418, 0.24968, -0.41242], atol=1e-6)  # GloVe 6B 50d "the"


def test_tiny_protbert_uses_real_vocab_case_sensitive():
    m = tiny_model("protbert")
    assert m.tokenizer.convert_tokens_to_ids(PROTBERT_VOCAB) == list(range(30))
    assert m.tokenizer.tokenize("A E T C Z A O") == list("AETCZAO")
    assert m.tokenizer.tokenize("AETC") == ["[UNK]"]  # no spaces: one unknown word
    assert m.tokenizer.tokenize("a e") == ["[UNK]", "[UNK]"]  # do_lower_case=False


def test_tiny_xlnet_left_padding_and_trailing_specials():
    tok = tiny_model("protxlnet").tokenizer
    enc = tok(["M K <unk>", "A"], padding=True)
    assert tok.padding_side == "left"
    assert tok.convert_ids_to_tokens(enc["input_ids"][0]) == ["▁M", "▁K", "<unk>", "<sep>", "<cls>"]
    assert enc["attention_mask"][1] == [0, 0, 1, 1, 1]


def test_tiny_esm_vocab():
    tok = tiny_model("esm").tokenizer
    assert tok.convert_tokens_to_ids(ESM_VOCAB) == list(range(33))
    assert tok("MKX")["input_ids"] == [0, 20, 15, 24, 2]


@pytest.mark.parametrize("family", ["protbert", "protxlnet", "esm", "bert", "gpt2"])
def test_tiny_models_deterministic(family):
    a, b, c = tiny_model(family, seed=3), tiny_model(family, seed=3), tiny_model(family, seed=4)
    pa, pb, pc = (next(iter(x.model.parameters())) for x in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    assert not a.model.training
