"""The benchmark command compares like with like: every step's result equals its reference tool's within
the stated tolerance (speed itself is reported by `python -m replib bench`, never asserted here)."""

import pytest

from bookkit import bench


@pytest.mark.parametrize("step", ["isoscore", "cosine", "silhouette", "lid", "alignment", "kmeans", "kmeans2"])
def test_quick_bench_results_equal_the_reference(step):
    rows = bench.run(quick=True, repeat=1, steps=[step], progress=lambda *_: None)
    assert len(rows) == 1, f"{step} was skipped"
    row = rows[0]
    assert row.equal, f"{row.step}: max |diff| {row.max_abs_diff} > {row.tolerance}"
    assert row.replib_s > 0 and row.reference_s > 0


def test_bench_table_says_which_machine():
    row = bench.BenchRow("x", "1", 1.0, "ref", 2.0, 2.0, 0.0, 0.0)
    md = bench.markdown([row])
    assert "CPU cores" in md and "| x | 1 | 1.000 | ref | 2.000 | 2.00 |" in md


def test_power_law_fit_and_estimate_table():
    from bookkit import scaling

    sizes = [10, 100, 1000, 10_000]
    a, b = scaling.fit_power_law(sizes, [2e-3 * n**1.5 for n in sizes])
    assert b == pytest.approx(1.5, abs=1e-9) and a == pytest.approx(2e-3, rel=1e-9)
    row = scaling.Scaling("step", "ch", "items", sizes, [a * n**b for n in sizes], b, a, 1e6, "the paper", 10.0, "why")
    assert row.predict(1e6) == pytest.approx(2e-3 * 1e9)
    md = scaling.markdown([row], "a machine")
    assert "| ch | step | 10–10,000 items | 1.50 |" in md and "estimates, not measurements" in md
    assert "23.1 days" in md and "2.3 days" in md  # 2e6 s on the CPU, ÷ 10 on the GPU
