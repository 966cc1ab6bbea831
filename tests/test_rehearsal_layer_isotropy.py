"""Issue 26, item 5: ``layer_isotropy`` of the cluster chapter takes every hidden state from one forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from replib.embeddings import embed_sentence_layers, embed_sentences
from replib.methods.cluster_isotropy import layer_isotropy
from replib.metrics import partition_isotropy
from replib.models import tiny_model

TEXTS = [
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog.",
    "Isotropy of embedding spaces.",
    "Two dogs run on the beach while a child watches them from the dunes.",
    "Hello world.",
    "Protein sequences and sentences are embedded the same way, one at a time.",
] * 4


class _CountingForward:
    """Wraps a model's forward and counts the calls."""

    def __init__(self, lm):
        self.lm, self.calls, self._forward = lm, 0, lm.model.forward

        def forward(*args, **kwargs):
            self.calls += 1
            return self._forward(*args, **kwargs)

        lm.model.forward = forward


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_one_forward_pass_per_batch_gives_every_hidden_state(family):
    lm = tiny_model(family)
    single = _CountingForward(lm)
    embed_sentences(lm, TEXTS, layer=-1, progress=False)
    per_pass = single.calls
    single.calls = 0
    layer_isotropy(lm, TEXTS, progress=False)
    assert per_pass >= 1
    assert single.calls == per_pass  # before: (n_layers + 1) * per_pass


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_layers_equal_a_pass_per_layer(family):
    lm = tiny_model(family)
    layers = embed_sentence_layers(lm, TEXTS, progress=False)
    assert sorted(layers) == list(range(lm.spec.n_layers + 1))
    for layer, emb in layers.items():
        ref = embed_sentences(lm, TEXTS, layer=layer, progress=False)
        assert len(ref.tokens) == len(emb.tokens)
        for a, b in zip(ref.tokens, emb.tokens):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ref.means, emb.means)
        for a, b in zip(ref.token_ids, emb.token_ids):
            np.testing.assert_array_equal(a, b)
    expected = [
        partition_isotropy(np.concatenate(embed_sentences(lm, TEXTS, layer=layer, progress=False).tokens)).log10
        for layer in range(lm.spec.n_layers + 1)
    ]
    assert layer_isotropy(lm, TEXTS, progress=False) == expected


def test_layers_are_cached_and_resumed(tmp_path):
    lm = tiny_model("bert")
    first = embed_sentence_layers(lm, TEXTS, layers=(0, -1), cache_dir=tmp_path, shard_size=5, progress=False)
    counter = _CountingForward(lm)
    again = embed_sentence_layers(lm, TEXTS, layers=(0, -1), cache_dir=tmp_path, shard_size=5, progress=False)
    assert counter.calls == 0  # every shard read back
    for layer in (0, -1):
        np.testing.assert_array_equal(np.concatenate(first[layer].tokens), np.concatenate(again[layer].tokens))


def test_bad_layer_is_refused():
    with pytest.raises(ValueError, match="out of range"):
        embed_sentence_layers(tiny_model("bert"), TEXTS, layers=(7,), progress=False)
