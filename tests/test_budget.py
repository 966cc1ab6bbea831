"""The main job's time budget (bookkit.run.budget) and the runner's line against it."""

from __future__ import annotations

from pathlib import Path

from bookkit.run.budget import BUDGET_LANES, against, allowed, load_budget
from bookkit.run.runner import _Plan, _print_budget, chapter_names

ROOT = Path(__file__).resolve().parents[1]


def test_the_budget_names_every_chapter_and_meets_the_main_jobs_targets():
    budget = load_budget(ROOT)
    chapters = chapter_names(ROOT)
    assert set(budget) == {*chapters, "setup", "book"}
    # the six chapters with two seeds within 13 minutes together on two lanes, setup and book within 2 (cold,
    # 2 cores)
    assert BUDGET_LANES == 2
    assert sum(allowed(budget, c, 2) for c in chapters) <= 13 * 60 * BUDGET_LANES
    assert budget["setup"][0] + budget["book"][0] <= 2 * 60


def test_a_time_is_printed_against_its_budget(tmp_path):
    (tmp_path / "book" / "measurements").mkdir(parents=True)
    (tmp_path / "book" / "measurements" / "budget.csv").write_text(
        "chapter,first_seed_s,next_seed_s\na,100,20\nb,50,\n"
    )
    budget = load_budget(tmp_path)
    assert allowed(budget, "a", 2) == 120 and allowed(budget, "b", 3) == 50 and allowed(budget, "c", 1) is None
    assert against(90, 120) == "90 s of 120 s"
    assert against(150, 120) == "150 s, over its 120 s budget by 30 s"
    assert against(150, None) == "150 s"
    lines = []
    plan = _Plan("offline", tmp_path, tmp_path, False, 1.0, None, False, lines.append, [0, 1], False)
    _print_budget(plan, [{"chapter": "a", "seconds": 130.0}])
    _print_budget(plan, [{"chapter": "a", "seconds": 130.0}, {"chapter": "b", "seconds": 60.0}], total=True)
    assert lines == [
        "[budget] a, 2 seeds: 130 s, over its 120 s budget by 10 s",
        "[budget] chapters, 2 seeds: 190 s, over its 170 s budget by 20 s (2 lanes: 1 min 35 s of 1 min 25 s)",
    ]
    plan.profile = "smoke"  # the budget is the offline profile's
    _print_budget(plan, [{"chapter": "a", "seconds": 130.0}])
    assert len(lines) == 2


def test_the_run_time_table_is_written_from_a_report(tmp_path):
    import csv
    import json

    from bookkit.run.run_times import COLUMNS, main

    report = {
        "profile": "offline",
        "started": "2026-11-28T10:00:00+00:00",
        "finished": "2026-11-28T10:05:30+00:00",
        "seeds": [0, 1],
        "environment": {"device": "cpu"},
        "chapters": [
            {"chapter": "a", "prepare_seconds": 40.4, "seeds": {"1": {"seconds": 20.2}, "0": {"seconds": 30.0}}},
            {"chapter": "b", "seeds": {"0": {"seconds": 9.6}}},
            # reused: its seconds are those of the run that executed it, not this run's
            {"chapter": "c", "seeds": {"0": {"seconds": 99.0, "reused": "2026-11-27T09:00:00+00:00"}}},
        ],
    }
    path, table = tmp_path / "report.json", tmp_path / "run_times.csv"
    path.write_text(json.dumps(report))
    table.write_text(
        ",".join(COLUMNS) + "\nold,offline,cold,0,1,2026-01-01,m,the main job\nkept,offline,warm,0,2,d,m,x\n"
    )
    main([str(path), "--cache", "cold", "--what", "the main job", "--wall", "400.4", "--table", str(table)])
    rows = list(csv.DictReader(table.open()))
    got = {(r["chapter"], r["seeds"]): r["seconds"] for r in rows}
    # the first seed carries the chapter's preparation; the runner's span from its report; the command's wall
    assert got == {("kept", "0"): "2", ("a", "0"): "70", ("a", "1"): "20", ("b", "0"): "10",
                   ("runner", "0 1"): "330", ("all", "0 1"): "400"}  # fmt: skip
    assert {r["date"] for r in rows if r["chapter"] != "kept"} == {"2026-11-28"}
    assert all("CPU cores" in r["machine"] for r in rows if r["chapter"] != "kept")
