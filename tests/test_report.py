"""Runner reports: merge, drift between nights, the validation dashboard and the `report` command."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bookkit import cli
from bookkit.book import report
from bookkit.book.book import paper_validation_markdown, validation_markdown

ROOT = Path(__file__).resolve().parents[1]


def _claim(chapter, key, status, value, paper=None, detail="d", deviation=None, profile="smoke"):
    return {
        "chapter": chapter,
        "key": key,
        "claim": f"claim {key}",
        "profile": profile,
        "paper_value": paper,
        "source": f"Paper, Table 1 [P] ({key})",
        "value": value,
        "check": "lt 1",
        "status": status,
        "detail": detail,
        "deviation": deviation,
    }


def _report(profile="smoke", started="2026-01-01T00:00:00+00:00", chapters=None, claims=None, device="cpu"):
    chapters = chapters or [
        {
            "chapter": "alpha",
            "title": "Alpha (A 2020)",
            "status": "ok",
            "error": None,
            "seconds": 1.0,
            "notebook": "notebooks/alpha.ipynb",
        },
        {
            "chapter": "beta",
            "title": "Beta (B 2021)",
            "status": "ok",
            "error": None,
            "seconds": 2.0,
            "notebook": "notebooks/beta.ipynb",
        },
    ]
    claims = (
        claims
        if claims is not None
        else [
            _claim("alpha", "a_repro", "reproduced", 0.216, paper=0.216, profile=profile),
            _claim("alpha", "a_prop", "consistent", 0.5, profile=profile),
            _claim("beta", "b_dev", "deviates", 3.0, paper=2.0, deviation="we use all pairs", profile=profile),
            _claim(
                "beta",
                "b_unv",
                "unverified",
                None,
                paper=0.9,
                detail="needs pretrained BERT weights and a GPU",
                profile=profile,
            ),
            _claim("beta", "b_fail", "failed", None, detail="value not recorded", profile=profile),
        ]
    )
    rep = {
        "profile": profile,
        "started": started,
        "finished": started,
        "chapters": chapters,
        "claims": claims,
        "environment": {
            "python": "3.11",
            "platform": "Linux",
            "device": device,
            "git_commit": "abcdef123456",
            "packages": {"numpy": "2.0", "torch": "2.13"},
            "models": {"bert-base-uncased": "86b5e0934494bd15c9632b12f734a8a67f723594"},
        },
    }
    rep["summary"] = report.summarize(rep)
    return rep


def test_summarize_counts():
    s = report.summarize(_report())
    assert (s["reproduced"], s["consistent"], s["deviates"], s["unverified"], s["failed"]) == (1, 1, 1, 1, 1)
    assert s["sanity"] == 0 and s["inconclusive"] == 0 and "passed" not in s


def test_merge_latest_chapter_wins_and_profiles_stay_apart():
    old = _report(started="2026-01-01T00:00:00+00:00")
    new = _report(
        started="2026-01-02T00:00:00+00:00",
        chapters=[{"chapter": "beta", "title": "Beta", "status": "ok", "error": None, "seconds": 3.0, "notebook": "x"}],
        claims=[_claim("beta", "b_fail", "consistent", 0.1)],
    )
    paper = _report(profile="paper", device="NVIDIA A100")
    merged = report.merge([new, paper, old])
    assert [m["profile"] for m in merged] == ["smoke", "paper"]
    smoke = merged[0]
    keys = {c["key"]: c["status"] for c in smoke["claims"]}
    assert keys == {"a_repro": "reproduced", "a_prop": "consistent", "b_fail": "consistent"}  # beta from `new`
    assert smoke["summary"]["failed"] == 0 and len(smoke["merged_from"]) == 2


def test_relative_change():
    assert report.relative_change(2.0, 3.0) == pytest.approx(0.5)
    assert report.relative_change(-2.0, -3.0) == pytest.approx(-0.5)
    assert report.relative_change(0.0, 1.0) == math.inf
    assert report.relative_change(True, False) is None and report.relative_change("a", "b") is None


def test_drift_reports_status_and_value_changes_only():
    old = _report()
    new = copy.deepcopy(old)
    for c in new["claims"]:
        if c["key"] == "a_prop":
            c["value"] = 0.55  # value drift 10 %
        if c["key"] == "b_fail":
            c["status"], c["value"] = "consistent", 1.0  # fixed
        if c["key"] == "a_repro":
            c["value"] = 0.216 * (1 + 1e-12)  # below rtol: not drift
    new["claims"].append(_claim("alpha", "a_new", "consistent", 1.0))
    rows = {r["key"]: r for r in report.drift([old], [new])}
    assert set(rows) == {"a_prop", "b_fail", "a_new"}
    assert rows["a_prop"]["change"] == "value" and rows["a_prop"]["relative_change"] == pytest.approx(0.1)
    assert rows["b_fail"]["change"] == "status" and rows["b_fail"]["new_status"] == "consistent"
    assert rows["a_new"]["change"] == "added"
    table = report.format_drift(list(rows.values()))
    assert "+10.00%" in table and "failed → consistent" in table
    assert report.drift([old], [copy.deepcopy(old)]) == []
    assert report.format_drift([]).startswith("No claim changed")


def test_dashboard_lists_everything():
    smoke, paper = _report(), _report(profile="paper", device="NVIDIA A100")
    paper["claims"][3] = _claim("beta", "b_unv", "reproduced", 0.91, paper=0.9, profile="paper")
    md = report.dashboard_markdown([smoke, paper], chapter_links={"alpha": "../notebooks/alpha.ipynb"})
    for key in ("a_repro", "a_prop", "b_dev", "b_unv", "b_fail"):
        assert f"`{key}`" in md
    assert (
        "## At a glance" in md
        and "| chapter | profile | run | claims |" in md
        and "[alpha](../notebooks/alpha.ipynb)" in md
    )
    assert "[Alpha (A 2020)](../notebooks/alpha.ipynb)" in md and "Beta (B 2021)" in md
    assert "Profile `smoke`" in md and "Profile `paper`" in md
    assert "needs pretrained BERT weights and a GPU" in md and "we use all pairs" in md
    assert "NVIDIA A100" in md and "torch 2.13" in md and "bert-base-uncased" in md and "86b5e0934494" in md
    assert "Table 1 [P]" in md
    # the row of beta in smoke: its claims counted per status in one cell (the table fits the text column)
    row = next(line for line in md.splitlines() if line.startswith("| beta |") and "`smoke`" in line)
    assert row.split("|")[4] == " 1 deviates · 1 failed · 1 unverified ", row


def test_dashboard_shows_a_chapter_that_did_not_run():
    rep = _report()
    rep["chapters"][1].update(status="timeout", error="exceeded the chapter limit of 600 s")
    md = report.dashboard_markdown([rep])
    assert "| chapter | run | claims |" in md  # one profile: no profile column
    assert "❌ timeout" in md and "exceeded the chapter limit" in md and "```{warning}" in md


def test_a_report_of_the_first_seed_alone_says_so_on_the_page():
    rep = _report()
    assert "Provisional" not in report.dashboard_markdown([rep])
    rep["provisional"] = {"seeds_done": [0], "seeds": [0, 1]}
    md = report.dashboard_markdown([rep])
    assert "Provisional (profile `smoke`): these verdicts rest on seed 0 alone; the run goes on with seeds 0 1" in md


def test_validation_markdown_from_the_runner_report(smoke_book):
    """The overview links each paper's page; each paper's page lists every claim of its chapter."""
    rep = json.loads(smoke_book.report.read_text())
    md = validation_markdown([rep])
    assert "**IsoScore" in md and "../notebooks/isoscore.ipynb" in md and "<validation/isoscore>" in md
    for ch in {c["chapter"] for c in rep["claims"]}:
        page = paper_validation_markdown(ch, [rep])
        for c in rep["claims"]:
            if c["chapter"] == ch:
                assert f"`{c['key']}`" in page
    assert validation_markdown([]).count("No runner report") == 1


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "replib", "report", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


@pytest.mark.slow  # a fresh Python process (imports the stack)
def test_cli_merge_drift_dashboard(tmp_path):
    old, new, paper = _report(), _report(started="2026-01-02T00:00:00+00:00"), _report(profile="paper")
    new["claims"][1]["value"] = 0.25  # a_prop halves
    for name, rep in (("old", old), ("new", new), ("paper", paper)):
        (tmp_path / f"{name}.json").write_text(json.dumps(rep))
    p = _cli("merge", str(tmp_path / "new.json"), str(tmp_path / "paper.json"), "-o", str(tmp_path / "m.json"))
    assert p.returncode == 0, p.stderr
    merged = json.loads((tmp_path / "m.json").read_text())
    assert merged["kind"] == report.BUNDLE_KIND and len(report.load(tmp_path / "m.json")) == 2
    p = _cli("drift", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert p.returncode == 0 and "`a_prop`" in p.stdout and "-50.00%" in p.stdout, p.stdout + p.stderr
    new["claims"][0]["status"] = "failed"
    (tmp_path / "new.json").write_text(json.dumps(new))
    p = _cli("drift", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--fail-on-status-change")
    assert p.returncode == 1 and "reproduced → failed" in p.stdout
    p = _cli("dashboard", str(tmp_path / "m.json"))
    assert p.returncode == 0 and "Profile `paper`" in p.stdout
    (tmp_path / "bad.json").write_text("{}")
    p = _cli("drift", str(tmp_path / "bad.json"), str(tmp_path / "new.json"))
    assert p.returncode == 2 and "not a runner report" in p.stderr


def _invocations() -> list[tuple[str, str]]:
    """Every ``python -m replib ...`` command line of the CI workflows and the scripts, with its shell variables
    given example values (``${NAME:-default}`` its default)."""
    out = []
    for f in sorted([*(ROOT / ".github" / "workflows").glob("*.yml"), *(ROOT / "scripts").glob("*.sh")]):
        for m in re.finditer(r"-m (?:replib|bookkit) ([^\n|>&;`]+)", f.read_text()):
            line = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", m.group(1))
            line = line.replace('"$@"', "").replace('"$SEED"', "1").replace('"$CHAPTER"', "isoscore")
            out.append((f.name, re.sub(r'"?\$\{?\w+\}?"?', "x", line).strip()))
    return out


@pytest.mark.parametrize("where,line", _invocations())
def test_every_command_ci_calls_exists(where, line):
    """The command line accepts every command the workflows and scripts call (parsed, not run)."""
    args = cli.build_parser().parse_args(shlex.split(line))
    assert args.cmd in cli.COMMANDS, (where, line)


def test_ci_calls_commands_at_all():
    assert {line.split()[0] for _, line in _invocations()} >= {"run", "all"}


def test_the_validation_page_opens_with_a_verdict_per_paper():
    rot = {**_claim("isoscore", "rotation_isoscore_0", "reproduced", 0.2204, paper=0.216, profile="offline")}
    rot["ref"] = "rudman2022:rotation/0/isoscore"
    xf = {**_claim("isoscore", "contextual_isoscore_layer5", "expected_failure", 0.22, paper=0.18, profile="offline")}
    xf.update(ref="rudman2022:s5.2/contextual_max", deviation="MiniLM's last layer is trained for sentences")
    chapters = [{"chapter": "isoscore", "title": "IsoScore (Rudman et al. 2022)", "status": "ok", "seconds": 1.0}]
    md = validation_markdown([_report("offline", chapters=chapters, claims=[rot, xf])], ROOT)
    assert md.index("## A verdict per paper") < md.index("## At a glance")
    row = next(line for line in md.splitlines() if line.startswith("- **IsoScore (Rudman et al. 2022)** (`isoscore`)"))
    # the rotation table is a worked example and the layer bound a finding: none of the paper's results compared
    assert "⏸ not checked here" in row and "0 of 85 numbers compared" in row
    assert "other checks: 1 holds, 1 does not" in row and "MiniLM's last layer" in row
    assert "**expected failure**" in md and "🔶 expected failure" in md
