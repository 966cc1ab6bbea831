"""The benchmark command compares like with like: every step's result equals its reference tool's within
the stated tolerance (speed itself is reported by `python -m replib bench`, never asserted here)."""

import pytest

from bookkit import bench_tables


@pytest.mark.slow  # runs every step twice and imports each reference tool
@pytest.mark.parametrize("step", ["isoscore", "cosine", "silhouette", "lid", "alignment", "kmeans", "kmeans2"])
def test_quick_bench_results_equal_the_reference(step):
    # imported here, not at the top: the reference tools (sentence-transformers, scikit-dimension) take tens of
    # seconds to import, which the quick loop (scripts/quick.sh, -m "not slow") must not pay at collection
    from bookkit import bench

    rows = bench.run(quick=True, repeat=1, steps=[step], progress=lambda *_: None)
    assert len(rows) == 1, f"{step} was skipped"
    row = rows[0]
    assert row.equal, f"{row.step}: max |diff| {row.max_abs_diff} > {row.tolerance}"
    assert row.replib_s > 0 and row.reference_s > 0


def test_bench_table_says_which_machine():
    row = bench_tables.BenchRow("x", "1", 1.0, "ref", 2.0, 2.0, 0.0, 0.0)
    md = bench_tables.markdown([row], commit="0123456789abcdef", repeat=3, threads=4)
    assert "CPU cores, torch 4 threads" in md and "| x | 1 | 1.000 | ref | 2.000 | 2.00 | 0 | yes |" in md
    assert "at commit `0123456789ab`, best of 3 runs per timing" in md
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
    assert "| ch | step | 10–10,000 items | 1.50 |" in md and "estimates, not measurements" in md
    assert "23.1 days" in md and "2.3 days" in md  # 2e6 s on the CPU, ÷ 10 on the GPU
