"""The rehearsal's cost model: attention counted on the CPU kernel, padding of the batches the chapter forms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import transformers as tr

from replib.rehearsal.core import Cost, count_flops, length_flops, model_length_flops, padded_flops

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

D, HEADS, LAYERS = 64, 4, 2


def _bert(attn: str):
    cfg = tr.BertConfig(vocab_size=100, hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=4 * D, max_position_embeddings=512, attn_implementation=attn,
                        attention_probs_dropout_prob=0.0)  # fmt: skip
    torch.manual_seed(0)
    return tr.BertModel(cfg).eval()


def _forward(model, b: int, L: int):
    ids = torch.ones(b, L, dtype=torch.long)
    with torch.no_grad():
        model(input_ids=ids, attention_mask=torch.ones_like(ids))


@pytest.mark.parametrize("b,L", [(1, 32), (3, 50)])
def test_sdpa_attention_is_counted_as_the_analytic_formula(b, L):
    # QK^T and AV: two batched products of 2·b·h·L·L·d_head each, per layer: 4·b·L²·D
    analytic = LAYERS * 4 * b * L * L * D
    sdpa = count_flops(_forward, _bert("sdpa"), b, L)
    eager = count_flops(_forward, _bert("eager"), b, L)
    with torch.utils.flop_counter.FlopCounterMode(display=False) as plain:  # torch's own count: no CPU attention
        _forward(_bert("sdpa"), b, L)
    assert sdpa - plain.get_total_flops() == analytic
    assert sdpa == eager


def test_attention_backward_is_counted_in_training():
    model = _bert("sdpa").train()
    ids = torch.ones(2, 40, dtype=torch.long)

    def step():
        model(input_ids=ids).last_hidden_state.sum().backward()

    with torch.utils.flop_counter.FlopCounterMode(display=False) as plain:
        step()
    # per layer, forward 4·b·L²·D; backward 10·b·L²·D as torch counts the CUDA kernels: QKᵀ recomputed, then
    # dV = PᵀdO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀQ (2·b·L²·D each)
    assert count_flops(step) - plain.get_total_flops() == LAYERS * (4 + 10) * 2 * 40 * 40 * D


def test_length_flops_is_exact_for_a_transformer():
    model = _bert("sdpa")
    f = length_flops(lambda n: count_flops(_forward, model, 1, n), (16, 48, 96))
    assert f(77) == pytest.approx(count_flops(_forward, model, 1, 77), rel=1e-9)


def test_padded_flops_counts_the_padding_of_a_hand_computed_batch():
    # lengths 3, 9, 4, 8 in one shard, 20 padded tokens a batch: sorted 3, 4, 8, 9 -> [3, 4] padded to 4
    # (8 tokens), then 8: 3 x 8 = 24 > 20 -> [8, 9] padded to 9 (18 tokens); f(L) = L² for the check
    assert padded_flops(lambda L: L * L, [3, 9, 4, 8], 20) == 2 * 16 + 2 * 81
    # shards of two in the given order: [3, 9] -> 2 x 9 = 18 fits: one batch at 9; [4, 8]: one batch at 8
    assert padded_flops(lambda L: L * L, [3, 9, 4, 8], 20, shard_size=2) == 2 * 81 + 2 * 64
    # against the model itself: the padded batch's count equals the sum
    model = _bert("sdpa")
    f = length_flops(lambda n: count_flops(_forward, model, 1, n), (16, 48, 96))
    assert padded_flops(f, [30, 41, 41, 12], 200) == pytest.approx(
        count_flops(_forward, model, 4, 41), rel=1e-9
    )  # 4 x 41 = 164 <= 200: one batch of four padded to 41


def test_l4_and_extrapolation_of_a_cost():
    gpu = Cost("forward", [10], [1.0], [1.0], 100, flops_full=65e12 * 0.25 * 3600, on_gpu=True)
    assert gpu.t4_seconds == pytest.approx(3600)
    assert gpu.l4_seconds == pytest.approx(3600 * 65 / 121)
    assert gpu.extrapolation == 10
    gpu.flops_exact = True
    assert gpu.extrapolation == 1
    cpu = Cost("stats", [25, 100], [1.0, 4.0], [1.0, 4.0], 100, cpu_full=4.0)
    assert cpu.t4_seconds == cpu.l4_seconds == 4.0 and cpu.extrapolation == 1
    layers = Cost("a layer's analysis x 12 layers", [250, 1000], [1.0, 4.0], [1.0, 4.0], 12 * 5000, repeats=12)
    assert layers.extrapolation == 5  # per layer: 5,000 tokens of the 1,000 measured


def test_model_length_flops_on_the_meta_device_equals_the_model():
    model = _bert("sdpa")
    f = model_length_flops(SimpleNamespace(model=model))
    assert f(40) == pytest.approx(count_flops(_forward, model, 1, 40), rel=1e-9)


def test_the_protein_streams_forward_is_counted_over_its_slices_and_batches():
    from replib.models import tiny_model
    from replib.rehearsal.protein import PROTEIN_BATCH_TOKENS, PROTEIN_SLICE, _padded_forward

    lm = tiny_model("esm")
    seqs = ["MKV" * (5 + i % 40) for i in range(300)]  # 15-132 residues, in the chapter's (given) order
    lengths = [len(q) + 2 for q in seqs]  # the residues and two specials
    f = model_length_flops(lm)
    flops, exact = _padded_forward(lm, None, seqs, 300, 1022, 1.0, 1)
    assert exact and flops == pytest.approx(padded_flops(f, lengths, PROTEIN_BATCH_TOKENS, shard_size=PROTEIN_SLICE))
    assert flops > sum(f(n) for n in lengths)  # the padding counted
    half, exact = _padded_forward(lm, None, seqs, 600, 1022, 0.5, 1)  # twice the proteins here, a range of two
    assert not exact and half == pytest.approx(flops)


def test_sentence_flops_counts_the_gpu_batches_of_the_tokenized_texts():
    from replib.models import tiny_model
    from replib.rehearsal.core import SENTENCE_BATCH_TOKENS, SENTENCE_SHARD, sentence_flops

    lm = tiny_model("bert")
    texts = ["a short one", "a somewhat longer sentence than the first one is", "mid length here"] * 5
    lengths = [len(ids) for ids in lm.tokenizer(texts)["input_ids"]]
    want = padded_flops(model_length_flops(lm), lengths, SENTENCE_BATCH_TOKENS, shard_size=SENTENCE_SHARD)
    assert sentence_flops(lm, texts) == pytest.approx(want) and want > 0
