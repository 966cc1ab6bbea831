"""The benchmark command compares like with like: every step's result equals its reference tool's within
the stated tolerance (speed itself is reported by `python -m replib bench`, never asserted here)."""

import pytest

from replib.tooling import bench


@pytest.mark.parametrize("step", ["isoscore", "cosine", "silhouette", "lid", "alignment"])
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
