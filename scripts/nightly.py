#!/usr/bin/env python3
"""The nightly's publish logic, one step per subcommand, called by ``.github/workflows/nightly.yml``
and by ``tests/test_nightly.py`` (which lays out the artifacts exactly as upload/download-artifact@v4 do).

Steps, in the order the publish job runs them::

    python scripts/nightly.py layout   ARTIFACTS RUNS            # artifacts/run-<profile>/… -> RUNS/<profile>/
    python scripts/nightly.py drift    RUNS REPORTS [--date D] [--summary FILE]
    python scripts/nightly.py book     RUNS [--history REPORTS]  # the book, from that profile
    python scripts/nightly.py colab    RUNS DEST                 # runnable notebooks for tag colab-<commit>
    python scripts/nightly.py reports  RUNS REPORTS HTML_DIR     # reports/, latest.json, validation.md
    python scripts/nightly.py failures RUNS [-o FILE]            # failing claims as Markdown (the issue body)

``layout`` and ``failures`` use only the standard library (the notify job runs them with the runner's
``python3``, no install); ``drift`` and ``reports`` call ``python -m replib report …`` with the Python
that runs this script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import nightly_tasks as tasks  # beside this script (sys.path[0])

PROFILES = ("smoke", "offline", "paper")


def find_report(artifact_dir: Path, profile: str) -> Path | None:
    """The ``report.json`` of ``profile`` inside one downloaded artifact folder.

    upload-artifact@v4 roots an artifact at the least common ancestor of its paths, so the report can be
    at the artifact's top (``path: build/runs/smoke/``) or deeper (``runs/smoke/report.json`` when the
    paths were ``build/runs/smoke/…`` and ``build/screenshots/``). Prefer a report in a folder named after
    the profile, then the shallowest one.
    """
    found = sorted(artifact_dir.rglob("report.json"), key=lambda p: len(p.relative_to(artifact_dir).parts))
    if not found:
        return None
    named = [p for p in found if p.parent.name == profile or p.parent == artifact_dir]
    return (named or found)[0]


def layout(artifacts: Path, runs: Path) -> dict[str, Path]:
    """Copy each downloaded ``run-<profile>`` artifact's run folder to ``runs/<profile>``.

    Returns ``{profile: report path}``; raises ``FileNotFoundError`` when no artifact holds a report.
    """
    artifacts, runs = Path(artifacts), Path(runs)
    out = {}
    for profile in PROFILES:
        art = artifacts / f"run-{profile}"
        if not art.is_dir():
            continue
        rep = find_report(art, profile)
        if rep is None:
            print(f"run-{profile}: artifact holds no report.json (the run failed before writing it)")
            continue
        dest = runs / profile
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(rep.parent, dest)
        out[profile] = dest / "report.json"
        print(f"run-{profile}: {rep.relative_to(artifacts)} -> {out[profile]}")
    if not out:
        listing = sorted(str(p.relative_to(artifacts)) for p in artifacts.rglob("*") if p.is_file())[:40]
        raise FileNotFoundError(f"no report.json in any run-<profile> artifact under {artifacts}; found {listing}")
    return out


def run_reports(runs: Path) -> list[Path]:
    return [rep for p in PROFILES if (rep := Path(runs) / p / "report.json").exists()]


def _replib(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "replib", "report", *args], check=True, text=True, stdout=subprocess.PIPE
    )


def drift(runs: Path, reports_dir: Path, date: str, summary: Path | None = None, new: Path | None = None) -> list[Path]:
    """Store each profile's report as ``<date>-<profile>.json`` in ``reports_dir`` and write the drift
    against the latest earlier night as ``<date>-<profile>.drift.md`` / ``.drift.json``; ``new``: a folder
    that also receives every file written (what the deploy job commits to the ``reports`` branch)."""
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    lines = ["## Drift against the previous night", ""]
    written = []
    for rep in run_reports(runs):
        profile = rep.parent.name
        earlier = sorted(p for p in reports_dir.glob(f"*-{profile}.json") if not p.name.startswith(f"{date}-"))
        written.append(reports_dir / f"{date}-{profile}.json")
        shutil.copy2(rep, written[-1])
        if not earlier:
            lines.append(f"### {profile}: first night, nothing to compare\n")
            continue
        md, js = reports_dir / f"{date}-{profile}.drift.md", reports_dir / f"{date}-{profile}.drift.json"
        text = _replib("drift", str(earlier[-1]), str(rep), "--json", str(js)).stdout
        lines.append(f"### {profile}: {earlier[-1].name} → {date}\n\n{text}\n")
        md.write_text(lines[-1])
        written += [md, js]
    if summary:
        with open(summary, "a") as fh:
            fh.write("\n".join(lines) + "\n")
    if new:
        Path(new).mkdir(parents=True, exist_ok=True)
        for f in written:
            shutil.copy2(f, Path(new) / f.name)
    return written


def book_profile(runs: Path) -> str:
    """The book shows the offline run (the real packaged models on the real data). An offline run with a failed
    chapter, or none at all, is an error: the night fails instead of publishing another profile's book."""
    offline = Path(runs) / "offline" / "report.json"
    try:
        failed = json.loads(offline.read_text())["summary"]["chapter_failures"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"no readable offline report at {offline} ({exc.__class__.__name__}): no book") from None
    if failed:
        raise ValueError(f"{failed} chapter(s) of the offline run failed ({offline}): no book is published")
    return "offline"


def publish_reports(runs: Path, reports_dir: Path, html: Path) -> Path:
    """Copy the nights' reports into the built site, merge this night's into ``reports/latest.json`` and
    write the dashboard of every profile that ran as ``reports/validation.md``."""
    out = Path(html) / "reports"
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(Path(reports_dir).glob("*")):
        if f.is_file():
            shutil.copy2(f, out / f.name)
    reps = [str(p) for p in run_reports(runs)]
    if not reps:
        raise FileNotFoundError(f"no report.json under {runs}")
    _replib("merge", *reps, "-o", str(out / "latest.json"))
    _replib("dashboard", *reps, "-o", str(out / "validation.md"))
    return out / "latest.json"


def colab_ref(runs: Path) -> str | None:
    """The tag holding the runnable notebooks the published book's Colab buttons open: ``colab-<commit>``
    (12 hex digits) of the run the book shows, or None when that run has no commit."""
    rep = Path(runs) / book_profile(runs) / "report.json"
    sha = (json.loads(rep.read_text()).get("environment") or {}).get("git_commit") if rep.exists() else None
    return f"colab-{sha[:12]}" if sha else None


def colab_tree(runs: Path, dest: Path) -> str | None:
    """Lay out the runnable notebooks of the run the book shows (``runs/<profile>/sources/*.ipynb``, each
    with the Colab bootstrap pinned to that run's commit) as ``dest/notebooks/`` for the ``colab-<commit>``
    tag; returns the tag (None when there is nothing to publish)."""
    tag, profile = colab_ref(runs), book_profile(runs)
    nbs = sorted((Path(runs) / profile / "sources").glob("*.ipynb"))
    if tag is None or not nbs:
        return None
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "notebooks").mkdir(parents=True)
    import nbformat

    from bookkit import notebooks

    commit = tag[len("colab-") :]
    run = f"the book's `{profile}` run of commit {commit}"
    for nb in nbs:  # Colab shows MyST roles raw: the prose gets the values that run glued
        executed = Path(runs) / profile / "notebooks" / nb.name
        try:
            glued = notebooks.glued_values(nbformat.read(str(executed), as_version=4)) if executed.exists() else {}
            prose = notebooks.colab_prose(nbformat.read(str(nb), as_version=4), glued, run)
        except (OSError, ValueError, nbformat.ValidationError) as exc:  # published as it is, with why
            print(f"colab: {nb.name} copied as it is ({exc.__class__.__name__}: {str(exc)[:200]})", file=sys.stderr)
            shutil.copy2(nb, dest / "notebooks" / nb.name)
            continue
        nbformat.write(prose, str(dest / "notebooks" / nb.name))
    (dest / "README.md").write_text(
        f"Runnable notebooks of commit {commit} for the book's Colab buttons, built by the nightly "
        "from notebooks/<chapter>.md (the Colab bootstrap cell checks out that commit). Not a source: edit the "
        ".md chapters on main.\n"
    )
    return tag


def build_book(runs: Path, history: Path | None = None) -> Path:
    """Build the book (not strict: the dashboard shows failures) from :func:`book_profile`'s run, with
    the validation dashboard of every profile that ran and the history page from the nights' reports in
    ``history`` (the ``reports`` branch's folder, tonight's included by ``drift``); returns the HTML folder."""
    from bookkit.book import book

    profiles = [r.parent.name for r in run_reports(runs)]
    profile = book_profile(runs)
    html = book.build(
        profile,
        strict=False,
        runs_dir=Path(runs).resolve(),
        report_profiles=profiles,
        colab_ref=colab_ref(runs),
        history_dir=Path(history).resolve() if history else None,
    )
    print("book built from", profile, "with the reports of", profiles, "->", html)
    return html


def failures_markdown(runs: Path, run_url: str | None = None) -> str:
    """The failing claims and chapters of every report under ``runs``, as Markdown (empty when none)."""
    lines = []
    for rep_path in run_reports(runs):
        rep = json.loads(rep_path.read_text())
        profile = rep.get("profile", rep_path.parent.name)
        commit = (rep.get("environment") or {}).get("git_commit") or "?"
        bad_ch = [c for c in rep.get("chapters", []) if c.get("status") != "ok"]
        bad = [c for c in rep.get("claims", []) if c.get("status") == "failed"]
        if not bad_ch and not bad:
            continue
        lines += [f"### {profile} (commit {commit[:12]})", ""]
        for c in bad_ch:
            lines.append(f"- chapter `{c['chapter']}` {c['status']}: {str(c.get('error'))[:300]}")
        if bad:
            lines += ["", "| chapter | claim | value | paper | why |", "|---|---|---|---|---|"]
            for c in bad:
                cells = [c.get("chapter"), c.get("key"), c.get("value"), c.get("paper_value"), c.get("detail")]
                lines.append(
                    "| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ")[:200] for x in cells) + " |"
                )
        lines.append("")
    if not lines:
        return ""
    head = [f"The nightly of {datetime.now(timezone.utc):%Y-%m-%d} failed."]
    if run_url:
        head.append(f"Run: {run_url}")
    return "\n".join(head + [""] + lines)


def collect_paper(reports: Path, runs: Path, atlas_dir: Path) -> Path | None:
    """On a night without a paper run (no GPU runner): the latest stored paper report and atlas, from the
    ``reports`` branch, as ``runs/paper/report.json`` and ``atlas_dir/paper/atlas.json``, so the dashboard still
    shows the paper profile. Tonight's run, when there is one, is left as it is. Returns the report used."""
    if (Path(runs) / "paper" / "report.json").exists():
        print("paper: tonight's run")
        return None
    found = [sorted(Path(reports).glob(pattern)) for pattern in ("*-paper.json", "*-atlas-paper.json")]
    found[0] = [f for f in found[0] if not f.name.endswith("-atlas-paper.json")]
    report, atlas = (f[-1] if f else None for f in found)  # the latest stored paper report and paper atlas
    for src, dest in (
        (report, Path(runs) / "paper" / "report.json"),
        (atlas, Path(atlas_dir) / "paper" / "atlas.json"),
    ):
        if src is not None and not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
    print(f"paper: {report.name if report else 'none stored'}" + (f", atlas {atlas.name}" if atlas else ""))
    return report


SERVER = os.environ.get("GITHUB_SERVER_URL", "https://github.com")


#: subcommand: (its positional arguments, all paths; what it does). A result that is a string is printed (the
#: workflow reads it).
COMMANDS = {
    "layout": (("artifacts", "runs"), lambda a: layout(a.artifacts, a.runs)),
    "drift": (("runs", "reports"), lambda a: drift(a.runs, a.reports, a.date, a.summary, a.new)),
    "book": (("runs",), lambda a: build_book(a.runs, a.history)),
    "colab": (("runs", "dest"), lambda a: colab_tree(a.runs, a.dest) or ""),
    "reports": (("runs", "reports", "html"), lambda a: str(publish_reports(a.runs, a.reports, a.html))),
    "failures": (
        ("runs",),
        lambda a: (a.output.write_text if a.output else str)(failures_markdown(a.runs, a.run_url)),
    ),
    "seed": ((), lambda a: str(tasks.night_seed(a.date))),
    "fork-config": (("config",), lambda a: tasks.fork_config(a.config, a.repository, a.server)),
    "collect-paper": (("reports", "runs", "atlas_dir"), lambda a: collect_paper(a.reports, a.runs, a.atlas_dir)),
    "prune-site": (
        ("html",),
        lambda a: f"site: {tasks.prune_site(a.html, a.limit_mb, a.keep_days, a.date) / 1e6:.1f} MB",
    ),
    "push-files": (
        ("src",),
        lambda a: f"files pushed: {tasks.push_files(a.src, a.remote, a.branch, a.subdir, a.message)}",
    ),
    "push-tag": (("src",), lambda a: f"tag created: {tasks.push_tag(a.src, a.remote, a.tag, a.message)}"),
}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="scripts/nightly.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, (args, run) in COMMANDS.items():
        p = sub.add_parser(name)
        p.set_defaults(run=run)
        for arg in args:
            p.add_argument(arg, type=Path)
        p.add_argument("--date", default=f"{datetime.now(timezone.utc):%Y-%m-%d}")
    sub.choices["drift"].add_argument("--summary", type=Path, default=os.environ.get("GITHUB_STEP_SUMMARY") or None)
    sub.choices["drift"].add_argument("--new", type=Path, help="also copy every file written here")
    sub.choices["book"].add_argument("--history", type=Path, help="the nights' reports (the history page)")
    sub.choices["failures"].add_argument("-o", "--output", type=Path)
    sub.choices["failures"].add_argument("--run-url")
    sub.choices["fork-config"].add_argument("--repository", required=True, help="owner/name (github.repository)")
    sub.choices["fork-config"].add_argument("--server", default="https://github.com")
    sub.choices["prune-site"].add_argument("--limit-mb", type=float, required=True)
    sub.choices["prune-site"].add_argument("--keep-days", type=int, default=90)
    for name in ("push-files", "push-tag"):
        p = sub.choices[name]
        p.add_argument(
            "--remote",
            default=f"{SERVER}/{os.environ.get('GITHUB_REPOSITORY', '')}.git",
            help="default: the workflow's repository",
        )
        p.add_argument("--message", required=True)
    sub.choices["push-files"].add_argument("--branch", required=True)
    sub.choices["push-files"].add_argument("--subdir", default="reports")
    sub.choices["push-tag"].add_argument("--tag", required=True)
    p = sub.add_parser("prefetch")
    p.add_argument("models", nargs="*")
    p.add_argument("--parts", type=Path, help="also every model of this part list (--list-parts --json)")
    p.set_defaults(
        run=lambda a: tasks.prefetch(
            sorted({*a.models, *(tasks.paper_models(json.loads(a.parts.read_text())) if a.parts else [])})
        )
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        out = a.run(a)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if isinstance(out, str):
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
