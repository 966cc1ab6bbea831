"""The rehearsal's cost model: attention counted on the CPU kernel, padding of the batches the chapter forms."""

from __future__ import annotations

import pytest
import torch
import transformers as tr

from replib.rehearsal import card_hours, count_flops, forward_flops, length_flops

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


def _logged(model) -> dict:
    c = model.config
    return {"model": type(model).__name__, "config_class": type(c).__name__, "config": c.to_dict(), "index": 0}


def test_forward_flops_of_logged_batches_equal_the_model_on_those_padded_batches():
    model = _bert("sdpa")
    batches = [{"config": 0, "batch": 4, "length": 41, "training": False, "cpu": 0.5},
               {"config": 0, "batch": 2, "length": 77, "training": False, "cpu": 0.25}]  # fmt: skip
    got = forward_flops({0: _logged(model)}, batches)
    want = count_flops(_forward, model, 4, 41) + count_flops(_forward, model, 2, 77)
    assert got["fp16"] == pytest.approx(want, rel=1e-9) and got["fp32"] == 0 and got["cpu"] == 0.75


def test_a_training_batch_counts_its_backward_pass_in_fp32():
    model = _bert("sdpa").train()
    ids = torch.ones(3, 40, dtype=torch.long)

    def step():
        next(iter(model(input_ids=ids).values())).float().sum().backward()

    got = forward_flops({0: _logged(model)}, [{"config": 0, "batch": 3, "length": 40, "training": True, "cpu": 0}])
    assert got["fp32"] == pytest.approx(count_flops(step), rel=1e-9) and got["fp16"] == 0


def test_card_hours_per_precision_and_card():
    assert card_hours({"fp16": 65e12 * 0.25 * 3600, "fp32": 0.0}, 0.0, "t4") == pytest.approx(1.0)
    assert card_hours({"fp16": 65e12 * 0.25 * 3600, "fp32": 0.0}, 0.0, "l4") == pytest.approx(65 / 121)
    assert card_hours({"fp16": 0.0, "fp32": 8.1e12 * 0.5 * 3600}, 1800.0, "t4") == pytest.approx(1.5)
