"""replib.sampling_validation: a case's row (coverage of the full value) and the resumable table, on synthetic
data (the real cases embed real data: ``python -m replib.sampling_validation``)."""

from __future__ import annotations

import numpy as np

from replib import sampling_validation as sv
from replib._io import read_csv, write_csv_atomic


def _case(rng, n_sample=100, band=0.0, name="mean"):
    x = rng.normal(size=(5000,))
    return sv.Case("c", name, "m", "d", "row", n_sample, lambda: (x, None), lambda a: float(np.mean(a)), band)


def test_a_case_row_covers_an_unbiased_mean(rng):
    row = sv.run_case(_case(rng), trials=40, progress=False)
    assert set(row) == set(sv.COLUMNS)
    assert row["n_full"] == 5000 and row["trials"] == 40
    assert float(row["covered_2s"]) >= 0.85 and float(row["covered"]) == float(row["covered_2s"])  # band 0
    assert 0.07 < float(row["spread"]) < 0.13  # 1/sqrt(100)


def test_a_biased_statistic_is_not_covered(rng):
    x = rng.normal(size=(5000,))
    # the sample maximum grows with the sample: a sample of 100 never reaches the maximum of 5,000; the
    # half-sample bias estimate widens the error but the validation still finds it below the 95 % bar
    case = sv.Case("c", "max", "m", "d", "row", 100, lambda: (x, None), lambda a: float(np.max(a)), 0.0)
    assert float(sv.run_case(case, trials=20, progress=False)["covered"]) < 0.95


def test_the_band_widens_the_cover(rng):
    wide = sv.run_case(_case(rng, band=1.0), trials=20, progress=False)
    assert float(wide["covered"]) == 1.0


def test_small_full_sets_are_noted(rng):
    row = sv.run_case(_case(rng, n_sample=1000), trials=2, progress=False)
    assert "full only 5.0x the sample" in row["note"]


def test_rows_round_trip_and_figure(tmp_path, rng):
    rows = [sv.run_case(_case(rng, name=f"s{i}"), trials=3, progress=False) for i in range(2)]
    path = tmp_path / "s.csv"
    write_csv_atomic(path, rows, sv.COLUMNS)
    back = read_csv(path)
    assert [r["statistic"] for r in back] == ["s0", "s1"] and back[0]["n_full"] == "5000"
    sv.coverage_figure(back, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000
    from replib.plotting import LEGEND_KEY, png_text

    assert png_text((tmp_path / "s.png").read_bytes())[LEGEND_KEY] == "ok: legend"  # the book's browser test reads it


def test_every_case_has_a_band_from_the_papers():
    cases = sv.cases()
    assert len({c.key for c in cases}) == len(cases)
    papers_band = [c for c in cases if c.chapter in ("isoscore", "protein_isotropy", "cluster_isotropy")]
    # a statistic the papers print no value of has no printed band: its band is the error alone, and it says so
    assert all(c.band > 0 or "print no" in c.note for c in papers_band)
    assert any(c.band > 0 for c in papers_band)
