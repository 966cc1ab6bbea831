"""The paper-scale rehearsal (issue 26, items 3 and 4): the cost-exponent fit and extrapolation, the T4
estimate, the row schema of book/rehearsal.csv and the driver's resumability."""

from __future__ import annotations

import csv
import json
import math

import pytest

from bookkit import rehearsal as R
from replib.config import chapter_parts, chapters, find_part
from replib.rehearsal import core, rehearsal_of, summarize
from replib.rehearsal.core import Cost, fit_exponent, four_times, scaled_cost, stats_items


def test_fit_exponent_recovers_a_power_law():
    sizes = [10, 40, 160, 640]
    a, b = fit_exponent(sizes, [0.3 * n**1.7 for n in sizes])
    assert b == pytest.approx(1.7, rel=1e-12)
    assert a == pytest.approx(0.3, rel=1e-10)


def test_fit_exponent_needs_two_sizes():
    with pytest.raises(ValueError, match="two different sizes"):
        fit_exponent([5, 5], [1.0, 2.0])


def test_scaled_cost_extrapolates_with_the_fitted_exponent(monkeypatch):
    # deterministic "CPU seconds": 2 n^1.5 at each size; the run's results are returned in order
    monkeypatch.setattr(core, "timed", lambda fn, n: (fn(n), 2.0 * n**1.5, 1.0))
    cost, outs = scaled_cost("step", lambda n: n * 10, [16, 4], 1024)
    assert outs == [40, 160]
    assert cost.sizes == [4, 16]
    assert cost.exponent == pytest.approx(1.5, rel=1e-12)
    assert cost.cpu_full == pytest.approx(2.0 * 1024**1.5, rel=1e-10)
    assert cost.measured_fraction == pytest.approx(16 / 1024)


def test_scaled_cost_in_units_and_at_full_size(monkeypatch):
    monkeypatch.setattr(core, "timed", lambda fn, n: (None, 0.5 * (3 * n), 1.0))
    cost, _ = scaled_cost("tokens", lambda n: None, [1, 4], 3 * 100, units=lambda n: 3 * n)
    assert cost.sizes == [3, 12] and cost.full == 300
    assert cost.exponent == pytest.approx(1.0) and cost.cpu_full == pytest.approx(150.0)
    full, _ = scaled_cost("all", lambda n: None, [25, 100], 100)
    assert full.cpu_full == 0.5 * 300 and full.measured_fraction == 1.0 and full.exponent == 1.0


def test_four_times_and_stats_items():
    lengths = [5, 1, 1, 1, 1, 10, 2, 2]
    cum = [sum(lengths[:n]) for n in range(len(lengths) + 1)]
    n2 = four_times(lambda n: cum[n], 1, len(lengths))
    assert cum[n2] >= 4 * cum[1] and cum[n2 - 1] < 4 * cum[1]
    assert stats_items(1000, 1e6, 1e12) == 1000  # fits: every item
    assert stats_items(1000, 1e10, 1e12) == 100  # the first that fit
    assert stats_items(1000, 1e11, 1e12) == 100  # at least a tenth: extrapolated at most 10x
    assert stats_items(5, 1e13, 1e12) == 1  # at least one
    assert stats_items(1000, 1e6, 1e12, cap=10) == 10


def test_t4_seconds_per_precision():
    fp16 = Cost("forward", [1], [1.0], [1.0], 10, on_gpu=True, flops_full=65e12 * 0.25)
    fp32 = Cost("training", [1], [1.0], [1.0], 10, on_gpu=True, flops_full=8.1e12 * 0.5, precision="fp32")
    cpu = Cost("alignments", [1], [1.0], [1.0], 10, cpu_full=42.0)
    assert fp16.t4_seconds == pytest.approx(1.0) and fp32.t4_seconds == pytest.approx(1.0)
    assert cpu.t4_seconds == 42.0
    assert Cost.from_dict(fp32.as_dict()) == fp32


def _cost(cpu_full, sizes, full, on_gpu=False, flops=None):
    c = Cost("x", sizes, [1.0] * len(sizes), [1.0] * len(sizes), full, on_gpu=on_gpu)
    c.cpu_full, c.flops_full = cpu_full, flops
    return c


def test_summarize_weights_the_fraction_by_the_work_here():
    forward = _cost(900.0, [1, 4], 400, on_gpu=True, flops=65e12 * 0.25 * 1800)  # 1 % ran, half a T4-hour
    stats = _cost(100.0, [100], 100)  # all of it ran
    out = summarize({"costs": [forward, stats]})
    assert out["fraction_of_paper"] == pytest.approx((900 * 4 / 400 + 100 * 1.0) / 1000)
    assert out["t4_hours_estimate"] == pytest.approx(0.5 + 100 / 3600)
    assert out["cpu_seconds_here"] == 3.0


def test_every_chapter_declares_a_rehearsal_that_resolves():
    assert all(callable(rehearsal_of(c)) for c in chapters())


def test_a_chapter_is_rehearsed_whole_its_parts_in_turn(tmp_path, monkeypatch):
    import replib.rehearsal as rh

    seen = []

    def fake(part, ctx):  # each part sees what the ones before left in the chapter's folder
        seen.append((part.name, sorted(p.name for p in tmp_path.iterdir())))
        (tmp_path / part.name).write_text("done")
        gpu = _cost(10.0, [4], 400, on_gpu=True, flops=65e12 * 0.25 * 360)  # 0.1 T4-hour, counted exactly
        gpu.flops_exact = True
        return {"model": f"m-{part.name}", "costs": [gpu, _cost(36.0, [20], 100)], "records": {}, "notes": []}

    monkeypatch.setattr(rh, "rehearsal_of", lambda chapter: fake)
    out = rh.rehearse_part(CHAPTER, rh.ALL, rh.Context(tmp_path))
    assert [name for name, _ in seen] == NAMES and seen[-1][1] == sorted(NAMES[:-1])
    assert out["part"] == "all" and out["parts"] == NAMES and len(out["costs"]) == 2 * len(NAMES)
    assert out["t4_hours_estimate"] == pytest.approx(len(NAMES) * (0.1 + 0.01))
    assert out["l4_hours_estimate"] == pytest.approx(len(NAMES) * (0.1 * 65 / 121 + 0.01))
    assert out["extrapolation"] == 5  # the CPU step's 20 of 100 items; the counted FLOPs are not extrapolated
    assert out["model"] == "; ".join(f"m-{n}" for n in NAMES)


# ------------------------------------------------------------------------------------------ the driver
CHAPTER = "training_dynamics"  # its runs' step ranges (protein-1, ..., text-2) and rest
NAMES = [p.name for p in chapter_parts(CHAPTER, "paper")]


def _fake_runner(calls, fail=()):
    def runner(chapter, part, workdir, **kw):
        calls.append(part)
        ok = part not in fail
        return {"chapter": chapter, "part": part, "model": f"m,{part}", "data": "d", "fraction_of_paper": "0.5",
                "seconds": 1.0, "peak_rss_gb": 0.1, "cache_gb": 0.0, "status": "ok" if ok else "failed",
                "t4_hours_estimate": "0.25" if ok else "", "l4_hours_estimate": "0.1" if ok else ""}  # fmt: skip

    return runner


def test_rows_have_the_schema(tmp_path):
    out = tmp_path / "rehearsal.csv"
    R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner([]))
    with open(out, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    assert header == [
        "chapter", "part", "model", "data", "fraction_of_paper", "extrapolation", "seconds", "peak_rss_gb",
        "cache_gb", "status", "t4_hours_estimate", "l4_hours_estimate",
    ]  # fmt: skip
    assert [r[1] for r in rows] == ["all"]  # the chapter as a whole, one session
    assert rows[0][2] == "m,all"  # a comma in a field is quoted, not a new column
    assert all(len(r) == len(header) for r in rows)


def test_a_rehearsal_resumes_keeping_ok_rows(tmp_path):
    out, calls = tmp_path / "rehearsal.csv", []
    R.rehearse([CHAPTER, "isoscore"], out, tmp_path, runner=_fake_runner(calls, fail={"all"}))
    assert calls == ["all", "all"]
    calls.clear()
    R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner(calls))
    assert calls == ["all"]  # the row that was not ok
    calls.clear()
    rows = R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner(calls))
    assert calls == [] and [r["status"] for r in rows if r["chapter"] == CHAPTER] == ["ok"]
    R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner(calls), part="rest", force=True)
    assert calls == ["rest"]  # one part (the full-scale work's), its row beside the chapter's
    assert [r["part"] for r in R.read_rows(out) if r["chapter"] == CHAPTER] == ["all", "rest"]
    with pytest.raises(ValueError, match="no part 'nope'"):
        R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner(calls), part="nope")


def test_refresh_recomputes_the_estimates_from_stored_results(tmp_path):
    out = tmp_path / "r.csv"
    R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner([]))
    forward = _cost(900.0, [1, 4], 400, on_gpu=True, flops=65e12 * 0.25 * 3600)
    res = {"model": "m", "data": "d", "costs": [forward.as_dict()]}
    (tmp_path / CHAPTER / "results").mkdir(parents=True)
    (tmp_path / CHAPTER / "results" / "all.json").write_text(json.dumps(res))
    rows = R.refresh(out, tmp_path)
    row = next(r for r in rows if r["part"] == "all")
    assert row["t4_hours_estimate"] == "1" and row["fraction_of_paper"] == "0.01" and row["seconds"] == "1.0"
    assert row["l4_hours_estimate"] == f"{65 / 121:.3g}" and row["extrapolation"] == "100"
    rows = R.refresh(out, tmp_path, [CHAPTER, "isoscore"])  # a chapter never rehearsed: missing
    assert [(r["chapter"], r["part"], r["status"]) for r in rows] == [("isoscore", "all", "missing"),
                                                                      (CHAPTER, "all", "ok")]  # fmt: skip


def test_rows_of_parts_a_chapter_no_longer_has_are_dropped(tmp_path):
    out = tmp_path / "r.csv"
    stale = {"chapter": CHAPTER, "part": "text-9", "status": "ok", "seconds": "9"}  # e.g. a range since re-cut
    other = {"chapter": "elsewhere", "part": "x", "status": "ok", "seconds": "9"}  # a chapter not rehearsed here
    R.write_rows(out, [stale, other])
    rows = R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner([]))
    assert [(r["chapter"], r["part"]) for r in rows] == [(CHAPTER, "all"), ("elsewhere", "x")]
    assert [(r["chapter"], r["part"]) for r in R.read_rows(out)] == [(CHAPTER, "all"), ("elsewhere", "x")]


def test_rehearsing_one_chapter_keeps_the_table_in_the_books_order(tmp_path):
    out = tmp_path / "r.csv"
    first = {"chapter": "isoscore", "part": "all", "status": "ok", "seconds": "9"}  # the book's first chapter
    R.write_rows(out, [first])
    R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner([]))  # the book's last chapter, rehearsed alone
    assert [(r["chapter"], r["part"]) for r in R.read_rows(out)] == [("isoscore", "all"), (CHAPTER, "all")]


def test_an_ok_row_of_a_part_cut_into_other_ranges_is_rehearsed_again(tmp_path):
    out, calls = tmp_path / "r.csv", []
    for name in NAMES:
        R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner(calls), part=name)
    results = tmp_path / CHAPTER / "results"
    results.mkdir(parents=True)
    stored = {name: {} for name in NAMES}  # a result that does not say
    stored[NAMES[0]] = {"shards": [0, 2]}  # measured as range 1 of 2
    now = [[name, list(values)] for name, values in find_part(CHAPTER, "paper", NAMES[-2]).select]
    stored[NAMES[-2]] = {"shards": None, "select": now}  # measured as the part is now
    for name, res in stored.items():
        (results / f"{name}.json").write_text(json.dumps(res))
    calls.clear()
    for name in NAMES:
        R.rehearse([CHAPTER], out, tmp_path, runner=_fake_runner(calls), part=name)
    assert calls == [NAMES[0]]


def test_read_rows_rejects_other_columns(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("chapter,part\nisoscore,bert\n")
    with pytest.raises(ValueError, match="expected"):
        R.read_rows(bad)


def test_run_part_measures_a_real_part_in_a_child(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    row = R.run_part("classifiers", "rest", tmp_path / "work")
    assert row["status"] == "ok", (tmp_path / "work" / "classifiers" / "logs" / "rest.log").read_text()
    assert set(row) == set(R.COLUMNS)
    assert 0 < row["peak_rss_gb"] < 12 and row["seconds"] > 0
    assert float(row["fraction_of_paper"]) == 1.0  # its one step runs at the paper's size
    assert math.isfinite(float(row["t4_hours_estimate"]))


def test_run_part_reports_a_failing_part(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    row = R.run_part("cluster_isotropy", "rest", tmp_path / "work")  # needs a model part's basis first
    assert row["status"] == "failed"
    assert "rehearse the part" in (tmp_path / "work" / "cluster_isotropy" / "logs" / "rest.log").read_text()
