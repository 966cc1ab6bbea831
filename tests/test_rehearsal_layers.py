"""The manifolds layer analysis' cost model at paper size (replib/rehearsal/layers.py): LID's neighbour search
counted as float32 GPU work, the CPU work measured with the size parameters scaled in proportion."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest

from replib.config import chapter_config
from replib.methods.manifolds.setup import SHARD_WINDOWS
from replib.metrics import lid as lid_module
from replib.rehearsal import core
from replib.rehearsal import layers as L
from replib.rehearsal import text as T
from replib.rehearsal.core import T4_FP32_EFFICIENCY, T4_FP32_TFLOPS, fit_exponent


def test_lid_search_is_a_float32_gpu_step_counted_in_flops():
    cfg = chapter_config("manifolds", "paper").replace(lid_queries=50_000)  # the arithmetic at a fixed size
    # the paper profile: 50,000 queries against the 200,000-token sample, 768 wide, cosine and Euclidean
    assert L.lid_search_flops(200_000, 50_000, 768) == 2 * 2 * 50_000 * 200_000 * 768
    cost = L.lid_search_cost(cfg, 200_000, 768, n_layers=12)
    assert cost.on_gpu and cost.precision == "fp32"
    assert cost.flops_full == pytest.approx(12 * 2 * 2 * 5e4 * 2e5 * 768)
    # 3.69e14 FLOPs at half of the T4's 8.1 TFLOP/s: about 91 seconds for the 12 layers
    assert cost.t4_seconds == pytest.approx(3.6864e14 / (T4_FP32_TFLOPS * 1e12 * T4_FP32_EFFICIENCY))
    assert 85 < cost.t4_seconds < 95
    # a search of at most GPU_SEARCH_MIN_PAIRS pairs stays on the CPU (lid_mle's backend="auto")
    few = lid_module.GPU_SEARCH_MIN_PAIRS // 200_000
    assert L.lid_search_cost(cfg.replace(lid_queries=few), 200_000, 768, 12) is None
    assert L.lid_search_cost(cfg.replace(lid_queries=few + 1), 200_000, 768, 12) is not None


def test_scaled_config_keeps_the_paper_regime():
    cfg = chapter_config("manifolds", "paper").replace(lid_queries=50_000)
    small = L.scaled_config(cfg, 50_000, 200_000)
    assert small["kmeans_fit"] == 50_000 and small["sil_sample"] == 5_000
    assert small["lid_queries"] == 12_500 and small["max_per_type"] == 250
    assert small["ks"] == cfg["ks"] and small["n_init"] == cfg["n_init"] and small.seed == cfg.seed
    assert L.scaled_config(cfg.replace(sil_sample=None), 1000, 200_000)["sil_sample"] is None  # all points
    assert L.scaled_config(cfg, 10, 200_000)["sil_sample"] == 2  # never below 2
    with pytest.raises(ValueError, match="n <= full"):
        L.scaled_config(cfg, 300_000, 200_000)


def test_analysis_costs_take_the_search_out_of_the_cpu_step(monkeypatch):
    cfg = chapter_config("manifolds", "smoke").replace(analysis_sample=4000, lid_queries=1000, kmeans_fit=None,
                                                       ks=[2, 3], n_init=1, sil_sample=400, max_per_type=50)  # fmt: skip
    rng = np.random.default_rng(0)
    X = rng.standard_normal((800, 16)).astype(np.float32)
    tokens = np.array([f"t{i % 37}" for i in range(800)])
    only_cpu = L.analysis_costs(X, tokens, cfg, 3, 200)  # 4000 x 1000 pairs: the search stays on the CPU
    assert len(only_cpu) == 1 and not only_cpu[0].on_gpu
    monkeypatch.setattr(lid_module, "GPU_SEARCH_MIN_PAIRS", 10)
    search = lid_module._knn_distances

    def slow_search(*args, **kwargs):  # a search that takes at least 0.05 CPU seconds (the clock ticks at 0.01)
        t0 = time.process_time()
        while time.process_time() - t0 < 0.05:
            pass
        return search(*args, **kwargs)

    monkeypatch.setattr(lid_module, "_knn_distances", slow_search)
    originals = (lid_module._knn_distances, lid_module._refine)
    step, gpu = L.analysis_costs(X, tokens, cfg, 3, 200)
    assert (lid_module._knn_distances, lid_module._refine) == originals  # the clock is taken off again
    assert gpu.on_gpu and gpu.flops_full == L.lid_search_flops(4000, 1000, 16) * 3
    # the search's CPU seconds here, measured at both sizes (two metrics: two searches a size)
    assert all(s >= 0.09 - 1e-9 for s in gpu.cpu), gpu.cpu  # 0.01-second ticks summed in floating point
    assert step.sizes == [200, 800] and step.full == 4000 * 3
    a, b = fit_exponent(step.sizes, step.cpu)
    assert step.exponent == pytest.approx(b) and step.cpu_full == pytest.approx(a * 4000.0**b * 3)


def test_the_escalation_rule_triggers_above_ninety_percent_of_a_session():
    assert L.ESCALATE_SHARE == 0.9 and L.THIRD_SIZE == 16
    assert L.escalates(2.71) and L.escalates(5.46)  # over 2.7 of the session's 3 T4-hours
    assert not L.escalates(2.7) and not L.escalates(0.81)
    assert L.escalates(1.0, limit=1.0, share=0.5) and not L.escalates(0.4, limit=1.0, share=0.5)
    with pytest.raises(ValueError, match="share"):
        L.escalates(1.0, share=0.0)


def test_the_fit_uses_the_two_largest_sizes():
    # t = n at the small sizes, then t = 0.01 n^1.5 between the two largest: the fit must ignore the first
    sizes, seconds = [2500, 10_000, 40_000], [2500.0, 10_000.0, 0.01 * 40_000**1.5]
    b, at_full = L.fit_largest(sizes, seconds, 200_000)
    b_two = np.log(seconds[2] / seconds[1]) / np.log(4)
    assert b == pytest.approx(b_two) and b != pytest.approx(1.0, abs=0.05)
    assert at_full == pytest.approx(seconds[2] * 5.0**b_two)  # 5x from the largest, not 20x from the second
    # the order of the points does not matter; two points: through both
    assert L.fit_largest(sizes[::-1], seconds[::-1], 200_000) == pytest.approx((b, at_full))
    assert L.fit_largest([10, 40], [1.0, 4.0], 80)[1] == pytest.approx(8.0)
    with pytest.raises(ValueError, match="two sizes"):
        L.fit_largest([10], [1.0], 80)


def test_a_third_size_keeps_every_point_and_refits_on_the_two_largest():
    cfg = chapter_config("manifolds", "smoke").replace(analysis_sample=4000, lid_queries=1000, kmeans_fit=None,
                                                       ks=[2, 3], n_init=1, sil_sample=400, max_per_type=50)  # fmt: skip
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1600, 16)).astype(np.float32)
    tokens = np.array([f"t{i % 37}" for i in range(1600)])
    costs = L.analysis_costs(X[:400], tokens[:400], cfg, 3, 100)
    first = list(costs[0].cpu)
    costs = L.add_analysis_size(costs, X, tokens, cfg, 1600, "more rows")
    step = costs[0]
    assert step.sizes == [100, 400, 1600] and step.cpu[:2] == first and len(step.wall) == 3
    b, one = L.fit_largest(step.sizes[1:], step.cpu[1:], 4000)
    assert step.exponent == pytest.approx(b) and step.cpu_full == pytest.approx(one * 3)
    assert "more rows" in step.notes[-1] and "400 and 1,600" in step.notes[-1]
    with pytest.raises(ValueError, match="new size"):
        L.add_analysis_size(costs, X, tokens, cfg, 400)
    with pytest.raises(ValueError, match="rows"):
        L.add_analysis_size(costs, X[:800], tokens[:800], cfg, 3200)


class _Tokenizer:
    def convert_ids_to_tokens(self, ids):
        return [f"t{i % 37}" for i in ids]


def _stream_like(windows, basis, seed, n_windows, layer):
    """What the part's stream spools for its first ``n_windows`` windows (every token, SHARD_WINDOWS a shard)."""
    compute = core.feeder(basis, seed, rows_per_item=windows.shape[1])
    step = SHARD_WINDOWS
    X = np.concatenate([compute(a, min(a + step, n_windows))[layer] for a in range(0, n_windows, step)])
    ids = windows[:n_windows].ravel()
    return SimpleNamespace(layers={layer: X}, tokens=_Tokenizer().convert_ids_to_tokens(ids.tolist()), token_ids=ids)


def test_rows_beyond_the_sample_continue_the_stream_with_its_feeder():
    rng = np.random.default_rng(1)
    windows = np.arange(60 * 8).reshape(60, 8)  # 60 windows of 8 tokens
    basis = {0: rng.standard_normal((50, 6)).astype(np.float32), 1: rng.standard_normal((50, 6)).astype(np.float32)}
    lm = SimpleNamespace(tokenizer=_Tokenizer())
    sample = _stream_like(windows, basis, 3, 20, 1)  # 160 tokens spooled
    X, tokens, source = T._standin_rows(lm, windows, basis, sample, 1, 300, 8, 3)
    assert X.shape == (300, 6) and len(tokens) == 300 and "160 spooled tokens" in source
    assert np.array_equal(X[:160], sample.layers[1])  # the sample itself first
    rest = core.feeder(basis, 3, rows_per_item=8)
    expect = np.concatenate([rest(20, 36)[1], rest(36, 38)[1]])[:140]  # then windows 20-37, shards seeded anew
    assert np.array_equal(X[160:], expect)
    assert list(tokens) == _Tokenizer().convert_ids_to_tokens(windows.ravel()[:300].tolist())
    with pytest.raises(ValueError, match="windows"):
        T._standin_rows(lm, windows, basis, sample, 1, 61 * 8, 8, 3)
    shifted = SimpleNamespace(layers=sample.layers, tokens=sample.tokens, token_ids=sample.token_ids + 1)
    with pytest.raises(ValueError, match="first whole windows"):
        T._standin_rows(lm, windows, basis, shifted, 1, 300, 8, 3)


def test_a_part_near_the_budget_is_measured_at_a_third_size(monkeypatch):
    cfg = chapter_config("manifolds", "smoke").replace(analysis_sample=4000, lid_queries=1000, kmeans_fit=None,
                                                       ks=[2, 3], n_init=1, sil_sample=400, max_per_type=50)  # fmt: skip
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1600, 16)).astype(np.float32)
    tokens = [f"t{i % 37}" for i in range(1600)]
    sample = SimpleNamespace(layers={4: X[:400]}, tokens=tokens[:400])
    ctx = SimpleNamespace(scale=100 / T.ANALYSIS_FIRST)
    asked = []

    def rows(n):
        asked.append(n)
        return X[:n], np.asarray(tokens[:n]), "test rows"

    below = T._layer_analysis(sample, cfg, [2, 3, 4], ctx, 0.0, rows)  # seconds of CPU: far below 2.7 T4-hours
    assert below[0].sizes == [100, 400] and asked == []
    above = T._layer_analysis(sample, cfg, [2, 3, 4], ctx, 2.7, rows)  # 2.7 before the analysis: above
    assert above[0].sizes == [100, 400, 1600] and asked == [1600]
    assert "test rows" in above[0].notes[-2] and "escalated" in above[0].notes[-1]
