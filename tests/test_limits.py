"""A chapter's time limit scales with the forward work of a reader's model (bookkit.run.runner.model_limit_scale)."""

from __future__ import annotations

import pytest
import transformers as tr

from bookkit.run.runner import model_limit_scale
from replib.models import forward_flops_per_token


@pytest.fixture
def bert_base(tmp_path):
    folder = tmp_path / "bert-base"  # a config alone: the limit needs the shape, not the weights
    tr.BertConfig(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072
    ).save_pretrained(folder)
    return str(folder)


def test_forward_flops_per_token_counts_the_blocks_weights_twice(bert_base, tmp_path):
    # BERT-base: 12 blocks x (4 x 768^2 attention + 2 x 768 x 3072 feed-forward) weights = 84,934,656; x2
    assert forward_flops_per_token(bert_base) == 2 * 84_934_656
    # all-MiniLM-L6-v2 (registry: 6 blocks of width 384, feed-forward 4 x 384 = 1536)
    assert forward_flops_per_token("all-MiniLM-L6-v2") == 2 * 6 * (4 * 384**2 + 2 * 384 * 1536)
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("the 0.1 0.2\n")
    assert forward_flops_per_token(str(vectors)) == 0.0  # word vectors: no forward pass


def test_a_readers_wider_model_gets_a_proportionally_longer_limit(bert_base, tmp_path):
    # twice MiniLM's width and depth: 2 x 2^2 = 8 times the work per token
    assert model_limit_scale("isoscore", "offline", [bert_base]) == pytest.approx(8.0)
    assert model_limit_scale("isoscore", "offline", None) == 1.0  # the profile's own models
    assert model_limit_scale("isoscore", "offline", ["tiny-bert"]) == 1.0  # smaller: never shorter
    assert model_limit_scale("isoscore", "offline", [str(tmp_path / "nowhere")]) == 1.0  # the chapter says why
