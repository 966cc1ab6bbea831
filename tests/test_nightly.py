"""The nightly workflow's publish logic (scripts/nightly.py) on artifacts laid out exactly as
actions/upload-artifact@v4 and actions/download-artifact@v4 lay them out, and the runner's git commit in a
container-like ownership setup.

upload-artifact@v4 (src/shared/search.ts): a single directory path roots the artifact at that directory; a
single file at its folder; several paths at their least common ancestor. download-artifact@v4 with a
``pattern`` and no ``merge-multiple`` unpacks each artifact into ``<path>/<artifact name>/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bookkit.project import git_commit

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
SCRIPT = ROOT / "scripts" / "nightly.py"


# ------------------------------------------------------------------ upload/download-artifact@v4
def _upload_root(search_paths: list[Path]) -> Path:
    if len(search_paths) == 1:
        p = search_paths[0]
        return p if p.is_dir() else p.parent
    parts = [p.parts for p in search_paths]
    common = []
    for level in zip(*parts):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return Path(*common)


def upload_download(workspace: Path, name: str, paths: list[str], artifacts: Path) -> list[str]:
    """Upload ``paths`` (relative to ``workspace``) as artifact ``name`` and download it into
    ``artifacts/<name>/``; returns the files' names inside the artifact."""
    search = [workspace / p.rstrip("/") for p in paths]
    root = _upload_root(search)
    files = []
    for p in search:
        if p.is_dir():
            files += [f for f in p.rglob("*") if f.is_file()]
        elif p.is_file():
            files.append(p)
        # a missing path is skipped (if-no-files-found: warn)
    names = []
    for f in files:
        rel = f.relative_to(root)
        dest = artifacts / name / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest)
        names.append(str(rel))
    return sorted(names)


def _workflow_uploads() -> dict[str, list[str]]:
    wf = yaml.safe_load(WORKFLOW.read_text())
    out = {}
    for job in wf["jobs"].values():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/upload-artifact@"):
                w = step["with"]
                out[w["name"]] = [line.strip() for line in str(w["path"]).splitlines() if line.strip()]
    return out


# ------------------------------------------------------------------ a fake night
def _claim(chapter, key, status, value, paper=None, profile="smoke"):
    return {
        "chapter": chapter,
        "key": key,
        "claim": f"claim {key}",
        "profile": profile,
        "paper_value": paper,
        "source": "Paper, Table 1",
        "value": value,
        "check": "lt 1",
        "status": status,
        "detail": f"detail of {key}",
        "deviation": None,
    }


def _report(profile, value, status="reproduced", started="2026-01-02T02:17:00+00:00"):
    claims = [
        _claim("alpha", "a_iso", status, value, paper=0.216, profile=profile),
        _claim("beta", "b_prop", "consistent", 0.5, profile=profile),
    ]
    counts = {
        s: sum(c["status"] == s for c in claims)
        for s in ("reproduced", "consistent", "deviates", "failed", "unverified")
    }
    return {
        "profile": profile,
        "started": started,
        "finished": started,
        "environment": {
            "git_commit": "0123456789abcdef0123456789abcdef01234567",
            "device": "cpu",
            "python": "3.11",
            "platform": "Linux",
            "packages": {},
        },
        "chapters": [
            {
                "chapter": c,
                "title": c.title(),
                "status": "ok",
                "error": None,
                "seconds": 1.0,
                "notebook": f"notebooks/{c}.ipynb",
                "models": [],
            }
            for c in ("alpha", "beta")
        ],
        "claims": claims,
        "summary": {
            **counts,
            "passed": counts["reproduced"] + counts["consistent"] + counts["deviates"],
            "failed": counts["failed"],
            "skipped": counts["unverified"],
            "chapter_failures": 0,
        },
    }


def _runner_output(workspace: Path, profile: str, rep: dict):
    out = workspace / "build" / "runs" / profile
    (out / "notebooks").mkdir(parents=True)
    (out / "report.json").write_text(json.dumps(rep))
    for ch in ("alpha", "beta"):
        (out / "notebooks" / f"{ch}.ipynb").write_text("{}")
        (out / "notebooks" / f"{ch}.log").write_text("log")
    (out / "sources").mkdir()
    for ch in ("alpha", "beta"):
        (out / "sources" / f"{ch}.ipynb").write_text("{}")  # the runnable notebooks the runner built
    (out / "models").mkdir()
    (out / "models" / "alpha.jsonl").write_text("")


def _nightly(*args, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture
def night(tmp_path):
    """The workspace after the smoke and paper jobs, and the artifacts folder of the publish job."""
    ws = tmp_path / "ws"
    _runner_output(ws, "smoke", _report("smoke", 0.2204))
    _runner_output(ws, "paper", _report("paper", 0.5, status="failed"))
    (ws / "build" / "screenshots").mkdir(parents=True)
    (ws / "build" / "screenshots" / "index.png").write_bytes(b"png")
    return ws, tmp_path / "artifacts"


def test_workflow_uploads_and_calls_the_publish_script():
    uploads = _workflow_uploads()
    assert {"run-smoke", "run-paper"} <= set(uploads)
    text = WORKFLOW.read_text()
    for step in ("layout", "drift", "book", "colab", "reports", "failures"):
        assert f"scripts/nightly.py {step} " in text, step
    # every action pinned to a commit
    for line in text.splitlines():
        if "uses:" in line:
            ref = line.split("uses:")[1].split("#")[0].strip().split("@")[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), line


def test_publish_finds_every_report_in_the_workflows_artifact_layout(night, tmp_path):
    ws, artifacts = night
    uploads = _workflow_uploads()
    for name in ("run-smoke", "run-paper", "screenshots-smoke"):
        if name in uploads:
            upload_download(ws, name, uploads[name], artifacts)
    pub = tmp_path / "publish"
    pub.mkdir()
    r = _nightly("layout", str(artifacts), "build/runs", cwd=pub)
    assert r.returncode == 0, r.stderr
    for p in ("smoke", "paper"):
        rep = json.loads((pub / "build" / "runs" / p / "report.json").read_text())
        assert rep["profile"] == p
        assert (pub / "build" / "runs" / p / "notebooks" / "alpha.ipynb").exists()

    # an earlier night on the reports branch: drift is computed against it
    reports = pub / "reports-branch" / "reports"
    reports.mkdir(parents=True)
    (reports / "2026-01-01-smoke.json").write_text(
        json.dumps(_report("smoke", 0.3, started="2026-01-01T02:17:00+00:00"))
    )
    summary = pub / "summary.md"
    r = _nightly("drift", "build/runs", str(reports), "--date", "2026-01-02", "--summary", str(summary), cwd=pub)
    assert r.returncode == 0, r.stderr
    assert {"2026-01-02-smoke.json", "2026-01-02-paper.json", "2026-01-02-smoke.drift.md"} <= {
        f.name for f in reports.iterdir()
    }
    drift_rows = json.loads((reports / "2026-01-02-smoke.drift.json").read_text())
    assert [(d["key"], d["change"]) for d in drift_rows] == [("a_iso", "value")]
    s = summary.read_text()
    assert "2026-01-01-smoke.json → 2026-01-02" in s and "paper: first night" in s

    r = _nightly("profile", "build/runs", cwd=pub)
    assert r.stdout.strip() == "paper"  # the paper run completed (a failed claim is not a failed chapter)

    # the Colab buttons of the published book open the runnable notebooks of the same commit (tag)
    r = _nightly("colab", "build/runs", "colab-tree", cwd=pub)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "colab-0123456789ab"
    assert sorted(p.name for p in (pub / "colab-tree" / "notebooks").iterdir()) == ["alpha.ipynb", "beta.ipynb"]

    html = pub / "build" / "book" / "_build" / "html"
    r = _nightly("reports", "build/runs", str(reports), str(html), cwd=pub)
    assert r.returncode == 0, r.stderr
    latest = json.loads((html / "reports" / "latest.json").read_text())
    assert sorted(rep["profile"] for rep in latest["reports"]) == ["paper", "smoke"]
    dash = (html / "reports" / "validation.md").read_text()
    assert "smoke" in dash and "paper" in dash
    assert (html / "reports" / "2026-01-01-smoke.json").exists()

    r = _nightly("failures", "build/runs", "--run-url", "https://example.org/run/1", cwd=pub)
    assert "a_iso" in r.stdout and "### paper" in r.stdout and "### smoke" not in r.stdout
    assert "https://example.org/run/1" in r.stdout


def test_layout_of_a_multi_path_upload_rooted_at_the_common_ancestor(night, tmp_path):
    """The old smoke upload (report, notebooks and screenshots in one artifact) unpacks as
    ``run-smoke/runs/smoke/report.json``; the layout step still finds it."""
    ws, artifacts = night
    names = upload_download(
        ws,
        "run-smoke",
        ["build/runs/smoke/report.json", "build/runs/smoke/notebooks/", "build/screenshots/"],
        artifacts,
    )
    assert "runs/smoke/report.json" in names and "screenshots/index.png" in names
    r = _nightly("layout", str(artifacts), str(tmp_path / "runs"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "runs" / "smoke" / "notebooks" / "beta.ipynb").exists()
    assert not (tmp_path / "runs" / "paper").exists()  # a night without the paper job


def test_layout_without_any_report_is_a_clear_error(tmp_path):
    (tmp_path / "artifacts" / "run-smoke").mkdir(parents=True)
    r = _nightly("layout", str(tmp_path / "artifacts"), str(tmp_path / "runs"), cwd=tmp_path)
    assert r.returncode == 2 and "no report.json" in r.stderr


def test_a_good_night_has_no_failure_body(tmp_path):
    _runner_output(tmp_path, "smoke", _report("smoke", 0.2204))
    r = _nightly("failures", str(tmp_path / "build" / "runs"), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == ""


# ------------------------------------------------------------------ git commit in a container
def _repo(tmp_path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True, env=env)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    return repo, sha


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_commit_in_a_workspace_owned_by_another_user(tmp_path, monkeypatch):
    repo, sha = _repo(tmp_path)
    # git >= 2.39 treats the repository as owned by someone else (the CI container's situation)
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    plain = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    if plain.returncode == 0:
        pytest.skip("this git does not simulate dubious ownership (GIT_TEST_ASSUME_DIFFERENT_OWNER)")
    assert "dubious ownership" in plain.stderr
    assert git_commit(repo) == sha


def test_git_commit_falls_back_to_github_sha(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_SHA", "f" * 40)
    assert git_commit(tmp_path) == "f" * 40  # not a clone
    monkeypatch.delenv("GITHUB_SHA")
    assert git_commit(tmp_path) is None
