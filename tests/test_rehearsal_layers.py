"""The manifolds layer analysis' cost model at paper size (replib/rehearsal/layers.py): LID's neighbour search
counted as float32 GPU work, the CPU work measured with the size parameters scaled in proportion."""

from __future__ import annotations

import time

import numpy as np
import pytest

from replib.config import chapter_config
from replib.metrics import lid as lid_module
from replib.rehearsal import layers as L
from replib.rehearsal.core import T4_FP32_EFFICIENCY, T4_FP32_TFLOPS, fit_exponent


def test_lid_search_is_a_float32_gpu_step_counted_in_flops():
    cfg = chapter_config("manifolds", "paper")
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
    cfg = chapter_config("manifolds", "paper")
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
    assert all(s >= 0.09 for s in gpu.cpu), gpu.cpu
    assert step.sizes == [200, 800] and step.full == 4000 * 3
    a, b = fit_exponent(step.sizes, step.cpu)
    assert step.exponent == pytest.approx(b) and step.cpu_full == pytest.approx(a * 4000.0**b * 3)
