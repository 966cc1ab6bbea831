"""The history page (bookkit.book.history) from a folder of nightly reports laid out as the ``reports`` branch keeps
them: ``<date>-<profile>.json``, paper parts ``<date>-paper--<chapter>--<part>.json``, drift files beside."""

from __future__ import annotations

import json

from bookkit.book import history

#: the papers' tables the verdicts are drawn against (bookkit.claims.verdicts): the claims refer to P:<key>
TABLES = {"P": {"a": 1.0, "c": 1.0}}


def _claim(key, status, paper=1.0, seeds=None):
    c = {"chapter": "alpha", "key": key, "claim": key, "paper_value": paper, "value": 1.0, "status": status}
    c["check"] = "tolerance abs=0.01"  # compares the paper's number at its word (bookkit.claims.verdicts)
    c["ref"] = f"P:{key}"
    if seeds:
        c["seed_statuses"] = seeds
    return c


def _report(profile, claims, chapter="alpha", started="2026-03-01T01:00:00"):
    for c in claims:
        c["chapter"] = chapter
    return {
        "profile": profile,
        "started": started,
        "finished": started,
        "environment": {},
        "chapters": [{"chapter": chapter, "title": f"{chapter.title()} (A 2020)", "status": "ok"}],
        "claims": claims,
    }


def _write(folder, name, doc):
    (folder / name).write_text(json.dumps(doc) if not isinstance(doc, str) else doc)


def _nightly_folder(tmp_path):
    """Three nights of the offline profile (seed 0 beside the night's seed) and the smoke profile; on the second
    night one claim's status depends on the seed; on the third the verdict changes; two paper parts land."""
    d = tmp_path / "reports"
    d.mkdir()
    _write(d, "2026-03-01-smoke.json", _report("smoke", [_claim("a", "reproduced")]))
    _write(
        d,
        "2026-03-01-offline.json",
        _report(
            "offline",
            [
                _claim("a", "reproduced", seeds={"0": "reproduced", "9556": "reproduced"}),
                _claim("c", "reproduced", seeds={"0": "reproduced", "9556": "reproduced"}),
            ],
        ),
    )
    flip = {"0": "reproduced", "9557": "failed"}
    night2 = [
        _claim("a", "inconclusive", seeds=flip),
        _claim("c", "reproduced", seeds={"0": "reproduced", "9557": "reproduced"}),
    ]
    _write(d, "2026-03-02-offline.json", _report("offline", night2))
    _write(d, "2026-03-02-offline.drift.json", "[]")  # not a report: ignored
    _write(d, "2026-03-02-atlas-offline.json", json.dumps({"profile": "offline", "models": []}))  # ignored
    _write(
        d,
        "2026-03-03-offline.json",
        _report(
            "offline",
            [
                _claim("a", "failed", seeds={"0": "failed", "9558": "failed"}),
                _claim("c", "failed", seeds={"0": "failed", "9558": "failed"}),
            ],
        ),
    )
    _write(d, "2026-03-03-paper--alpha--p1.json", _report("paper", [_claim("a", "reproduced")]))
    _write(d, "2026-03-03-paper--beta--p1.json", _report("paper", [_claim("b", "unverified")], chapter="beta"))
    _write(d, "2026-03-03-smoke.json", "{ not json")
    return d


def test_nights_are_read_per_profile_and_paper_parts_merged(tmp_path):
    nights, unreadable = history.load_nights(_nightly_folder(tmp_path))
    assert [(n.date, n.profile) for n in nights] == [
        ("2026-03-01", "smoke"),
        ("2026-03-01", "offline"),
        ("2026-03-02", "offline"),
        ("2026-03-03", "offline"),
        ("2026-03-03", "paper"),
    ]
    paper = nights[-1].report
    assert {c["chapter"] for c in paper["chapters"]} == {"alpha", "beta"}  # the night's two parts, merged
    assert unreadable == ["2026-03-03-smoke.json"]


def test_a_verdict_that_changes_with_the_seed_or_between_nights_shows(tmp_path):
    nights, unreadable = history.load_nights(_nightly_folder(tmp_path))
    md = history.history_markdown(nights, TABLES, {"alpha": "../notebooks/alpha"}, unreadable)
    alpha = md.split("## Alpha (A 2020)")[1].split("## ")[0]
    rows = [line for line in alpha.splitlines() if line.startswith("| 2026")]
    assert [r.split(" | ")[0] for r in rows] == [
        "| 2026-03-03<br>`paper`",
        "| 2026-03-03<br>`offline`",
        "| 2026-03-02<br>`offline`",
        "| 2026-03-01<br>`offline`",
        "| 2026-03-01<br>`smoke`",
    ]  # newest first
    assert "`a` (seed 0: reproduced, seed 9557: failed)" in rows[2]  # the verdict that changed with the seed
    assert "🟡 partially reproduced" in rows[2] and "🔁 (was partially reproduced)" in rows[1]  # then it changed
    assert "no (seeds 0, 9558)" in rows[1] and "one seed" in rows[4]
    strip = next(line for line in alpha.splitlines() if line.startswith("- `offline`"))
    assert strip == "- `offline`, 2026-03-01 → 2026-03-03: ✅ 03-01 · 🟡🎲 03-02 · ❌ 03-03"
    assert "{doc}`Alpha (A 2020) <../notebooks/alpha>`" in alpha
    assert "`2026-03-03-smoke.json`" in md  # the unreadable report is named, not silently dropped


def test_no_reports_and_a_build_outside_the_nightly(tmp_path):
    nights, unreadable = history.load_nights(tmp_path / "absent")
    assert nights == [] and unreadable == []
    assert "No nightly report" in history.history_markdown(nights, TABLES)
    own = history.nights_of_runs([_report("smoke", [_claim("a", "reproduced")])])
    assert [(n.date, n.profile) for n in own] == [("2026-03-01", "smoke")]
    assert "✅ reproduced" in history.history_markdown(own, TABLES)
