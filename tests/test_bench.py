"""The benchmark command compares like with like: every step's result equals its reference tool's within
the stated tolerance (speed itself is reported by `python -m replib bench`, never asserted here)."""

import pytest

from bookkit.bench import bench_tables


@pytest.mark.slow  # runs every step twice and imports each reference tool
@pytest.mark.parametrize("step", ["isoscore", "cosine", "silhouette", "lid", "alignment", "kmeans", "kmeans2"])
def test_quick_bench_results_equal_the_reference(step):
    # imported here, not at the top: the reference tools (sentence-transformers, scikit-dimension) take tens of
    # seconds to import, which the quick loop (scripts/quick.sh, -m "not slow") must not pay at collection
    from bookkit.bench import bench

    rows = bench.run(quick=True, repeat=1, steps=[step], progress=lambda *_: None)
    assert len(rows) == 1, f"{step} was skipped"
    row = rows[0]
    assert row.equal, f"{row.step}: max |diff| {row.max_abs_diff} > {row.tolerance}"
    assert row.replib_s > 0 and row.reference_s > 0


def test_bench_table_says_which_machine():
    row = bench_tables.BenchRow("x", "1", 1.0, "ref", 2.0, 2.0, 0.0, 0.0)
    md = bench_tables.markdown([row], repeat=3, threads=4)
    assert "CPU cores, torch 4 threads" in md and "| x | 1 | 1.000 | ref | 2.000 | 2.00 | 0 | yes |" in md
    assert "UTC (load average" in md and ", best of 3 runs per timing" in md and "commit" not in md
    assert bench_tables.as_dicts([row])[0]["equal"] is True
    unequal = bench_tables.BenchRow("y", "1", 1.0, "ref", 1.0, 1.0, 1e-3, 1e-6)
    assert not unequal.equal and "| NO |" in bench_tables.markdown([unequal])


def test_power_law_fit_and_estimate_table():
    sizes = [10, 100, 1000, 10_000]
    a, b = bench_tables.fit_power_law(sizes, [2e-3 * n**1.5 for n in sizes])
    assert b == pytest.approx(1.5, abs=1e-9) and a == pytest.approx(2e-3, rel=1e-9)
    row = bench_tables.Scaling(
        "step", "ch", "items", sizes, [a * n**b for n in sizes], b, a, 1e6, "the paper", 10.0, "why"
    )
    assert row.predict(1e6) == pytest.approx(2e-3 * 1e9)
    md = bench_tables.scaling_markdown([row], "a machine")
    assert "| ch | **step** (dominant) | 10–10,000 items | 1.50 |" in md and "estimates, not measurements" in md
    assert "23.1 days" in md and "2.3 days" in md  # 2e6 s on the CPU, ÷ 10 on the GPU


def test_a_forward_pass_is_extrapolated_at_its_cost_per_item():
    # 1 item in 3 s, 3 items in 6 s (a fitted exponent of 0.63: batching helps a little); 1,000 items are 1,000 x
    # the larger measurement's 2 s per item, not the power law's 3 * 1000**0.63
    sizes, seconds = [1, 3], [3.0, 6.0]
    a, b = bench_tables.fit_power_law(sizes, seconds)
    row = bench_tables.Scaling("forward", "ch", "items", sizes, seconds, b, a, 1000, "n", 1.0, "w", linear=True)
    assert row.predict(1000) == pytest.approx(2000.0) and row.paper_seconds == pytest.approx(2000.0)
    assert bench_tables.Scaling("k", "ch", "items", sizes, seconds, b, a, 1000, "n", 1.0, "w").predict(
        1000
    ) == pytest.approx(a * 1000**b)
    assert f"| {b:.2f} (linear) |" in bench_tables.scaling_markdown([row], "m")
    from bookkit.bench import scaling  # the steps are built lazily: no model or data is loaded here

    work = dict.fromkeys(["protein_length", "sts_length", "clf_length", "isoscore_windows", "manifolds_windows",
                          "sts_sentences", "clf_sentences"], 10)  # fmt: skip
    assert all(st.linear for st in scaling._forward_steps(work))


def test_floor_column_and_dominant_step_tables():
    rows = [
        bench_tables.BenchRow("x", "1", 2.0, "ref", 4.0, 2.0, 0.0, 0.0, floor="one GEMM", floor_s=1.0),
        bench_tables.BenchRow("y", "1", 1.0, "ref", 1.0, 1.0, 0.0, 0.0),
    ]
    md = bench_tables.markdown(rows)
    assert "| floor | floor (s) | replib ÷ floor |" in md
    assert "| one GEMM | 1.000 | 2.00 |" in md and "| - | - | - |" in md
    assert bench_tables.as_dicts(rows)[1]["floor_s"] is None and bench_tables.as_dicts(rows)[0]["over_floor"] == 2.0
    sizes = [1, 10]
    small = bench_tables.Scaling("small", "ch", "items", sizes, [1, 10], 1.0, 1.0, 100, "n", 1.0, "w", calls=5)
    big = bench_tables.Scaling("big", "ch", "items", sizes, [1, 10], 1.0, 2.0, 100, "n", 1.0, "w", calls=3)
    assert small.paper_seconds == 500 and big.paper_seconds == 600  # calls multiply the extrapolation
    md = bench_tables.scaling_markdown([small, big], "m")
    assert "| ch | **big** (dominant) |" in md and "| ch | small |" in md and "100 items × 5: n" in md


def test_forward_flop_count_equals_torch_flop_counter():
    """The forward's matrix-product FLOP formula against torch's own count of every GEMM (eager attention,
    so that attention's two products are counted as bmm)."""
    import types

    import torch
    import transformers as tr
    from torch.utils.flop_counter import FlopCounterMode

    from bookkit.bench.bench_forward import encoder_gemm_flop

    cfg = tr.BertConfig(
        vocab_size=40,
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=80,
        attn_implementation="eager",
    )
    model = tr.BertModel(cfg, add_pooling_layer=False).eval()
    shapes = [(3, 17), (2, 29)]
    with FlopCounterMode(display=False) as counter, torch.inference_mode():
        for B, P in shapes:
            ids = torch.randint(5, 30, (B, P))
            model(input_ids=ids, attention_mask=torch.ones_like(ids))
    assert encoder_gemm_flop(types.SimpleNamespace(model=model), shapes) == counter.get_total_flops()


@pytest.mark.slow  # loads MiniLM and embeds 64 sentences and 8 proteins, twice each
def test_forward_rows_extractor_computes_what_the_bare_forward_computes():
    from bookkit.bench import bench_forward

    rows = bench_forward.forward_rows(quick=True, repeat=1, progress=lambda *_: None)
    assert [r.model for r in rows] == ["all-MiniLM-L6-v2", "tiny-protbert"]
    for r in rows:
        assert r.max_abs_diff < 1e-5, r  # same vectors: the same batches, the same pooling
        assert 0 < r.tokens <= r.padded_tokens and r.flop > 0 and r.replib_s > 0 and r.raw_s > 0
    assert "| replib ÷ bare |" in bench_tables.forward_markdown(rows)


@pytest.mark.slow  # imports the reference tools and FAISS
def test_quick_bench_times_the_floor_of_each_step():
    from bookkit.bench import bench

    rows = bench.run(quick=True, repeat=1, steps=["isoscore", "lid", "alignment", "kmeans"], floor=True, progress=print)
    assert [r.floor != "" and r.floor_s > 0 for r in rows] == [True] * 4
    assert all(r.equal for r in rows)


def test_padding_rows_on_swissprot_lengths():
    """The protein extractor's batches (sorted over the whole input, 16,384-token budget) pad at most 5 % of the
    tokens on Swiss-Prot's lengths (the issue's bound); sorting within shards of 256 padded about 15 %."""
    from bookkit.bench import bench_forward
    from replib.data import DataNotFoundError

    try:
        rows = bench_forward.padding_rows()
    except DataNotFoundError as exc:  # no data mirror here
        pytest.skip(str(exc))
    swiss = [r for r in rows if r.data.startswith("Swiss-Prot")]
    now = [r for r in swiss if "whole input" in r.batching]
    before = [r for r in swiss if "before" in r.batching]
    assert len(now) == 2 and all(r.padding_waste <= 0.05 for r in now)
    assert all(b.padding_waste > 0.10 for b in before)
