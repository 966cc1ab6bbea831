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
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bookkit.book import history
from bookkit.project import git_commit

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "nightly.yml"
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


def _workflows() -> dict[str, dict]:
    return {f.name: yaml.safe_load(f.read_text()) for f in sorted(WORKFLOWS.glob("*.yml"))}


def _jobs():
    """(workflow file, job id, job) of every job of every workflow."""
    return [(name, jid, job) for name, wf in _workflows().items() for jid, job in wf["jobs"].items()]


def _workflow_uploads() -> dict[str, list[str]]:
    out = {}
    for _, _, job in _jobs():
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
    """The workspace after the smoke and offline jobs, and the artifacts folder of the site job."""
    ws = tmp_path / "ws"
    _runner_output(ws, "smoke", _report("smoke", 0.2204))
    _runner_output(ws, "offline", _report("offline", 0.5, status="failed"))
    (ws / "build" / "screenshots").mkdir(parents=True)
    (ws / "build" / "screenshots" / "index.png").write_bytes(b"png")
    return ws, tmp_path / "artifacts"


def test_workflow_uploads_and_calls_the_publish_script():
    uploads = _workflow_uploads()
    assert {"run-smoke", "run-offline", "atlas-offline", "run-paper", "atlas-paper"} <= set(uploads)
    text = "\n".join(f.read_text() for f in WORKFLOWS.glob("*.yml"))
    steps = ("layout", "drift", "book", "colab", "reports", "failures", "seed", "fork-config")
    for step in steps + ("collect-paper", "prune-site", "push-files", "push-tag", "prefetch"):
        assert re.search(rf"scripts/nightly.py {step}\b", text), step
    # the book's history page is built from the reports branch, tonight's reports included (drift runs first)
    assert "scripts/nightly.py book build/runs --history reports-branch/reports" in text
    assert text.index("scripts/nightly.py drift") < text.index("scripts/nightly.py book")
    # every action pinned to a commit; the one local reusable workflow in GitHub's self-repository form
    for line in text.splitlines():
        if "uses:" in line and "$/.github/workflows/" not in line:
            ref = line.split("uses:")[1].split("#")[0].strip().split("@")[1]
            assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), line


def test_publish_finds_every_report_in_the_workflows_artifact_layout(night, tmp_path):
    ws, artifacts = night
    uploads = _workflow_uploads()
    for name in ("run-smoke", "run-offline", "screenshots-smoke"):
        if name in uploads:
            upload_download(ws, name, uploads[name], artifacts)
    pub = tmp_path / "publish"
    pub.mkdir()
    r = _nightly("layout", str(artifacts), "build/runs", cwd=pub)
    assert r.returncode == 0, r.stderr
    for p in ("smoke", "offline"):
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
    assert {"2026-01-02-smoke.json", "2026-01-02-offline.json", "2026-01-02-smoke.drift.md"} <= {
        f.name for f in reports.iterdir()
    }
    drift_rows = json.loads((reports / "2026-01-02-smoke.drift.json").read_text())
    assert [(d["key"], d["change"]) for d in drift_rows] == [("a_iso", "value")]
    s = summary.read_text()
    assert "2026-01-01-smoke.json → 2026-01-02" in s and "offline: first night" in s
    # the history page reads the nights the drift step stored (the folder the book step gets as --history)
    nights, unreadable = history.load_nights(reports)
    assert [(n.date, n.profile) for n in nights] == [
        ("2026-01-01", "smoke"),
        ("2026-01-02", "smoke"),
        ("2026-01-02", "offline"),
    ] and unreadable == []

    # the book shows the offline run, which completed (a failed claim is not a failed chapter); its Colab buttons
    # open the runnable notebooks of the same commit (tag)
    r = _nightly("colab", "build/runs", "colab-tree", cwd=pub)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "colab-0123456789ab"
    assert sorted(p.name for p in (pub / "colab-tree" / "notebooks").iterdir()) == ["alpha.ipynb", "beta.ipynb"]

    html = pub / "build" / "book" / "_build" / "html"
    r = _nightly("reports", "build/runs", str(reports), str(html), cwd=pub)
    assert r.returncode == 0, r.stderr
    latest = json.loads((html / "reports" / "latest.json").read_text())
    assert sorted(rep["profile"] for rep in latest["reports"]) == ["offline", "smoke"]
    dash = (html / "reports" / "validation.md").read_text()
    assert "smoke" in dash and "offline" in dash
    assert (html / "reports" / "2026-01-01-smoke.json").exists()

    r = _nightly("failures", "build/runs", "--run-url", "https://example.org/run/1", cwd=pub)
    assert "a_iso" in r.stdout and "### offline" in r.stdout and "### smoke" not in r.stdout
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
    assert not (tmp_path / "runs" / "offline").exists()  # a night without the offline run


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


# ------------------------------------------------------------------ the workflows' security and structure
def _runs(job) -> str:
    return "\n".join(str(step.get("run", "")) for step in job.get("steps", []))


def _installs(job) -> bool:
    return bool(re.search(r"setup\.sh|pip install|lowest\.sh|\.venv/bin", _runs(job)))


def test_no_job_installs_while_holding_a_write_token():
    for wf, jid, job in _jobs():
        perms = job.get("permissions", {}) if "uses" not in job else {}
        writes = {k for k, v in perms.items() if v == "write"}
        if writes:
            assert not _installs(job), f"{wf}:{jid} holds {writes} and installs code"
            assert "container" not in job, f"{wf}:{jid}: a write job runs on the bare runner (nothing installed)"
    for wf, data in _workflows().items():
        assert data.get("permissions") == {}, f"{wf}: no permission by default, each job asks for its own"


def test_every_checkout_drops_its_credentials_and_hf_token_is_on_one_step():
    for wf, jid, job in _jobs():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, f"{wf}:{jid}"
        assert "HF_TOKEN" not in json.dumps(job.get("env", {})), f"{wf}:{jid}: HF_TOKEN in a job's environment"
    for wf, data in _workflows().items():
        assert "HF_TOKEN" not in json.dumps(data.get("env", {})), wf
    steps = [
        (wf, s)
        for wf, _, job in _jobs()
        for s in job.get("steps", [])
        if "secrets.HF_TOKEN" in json.dumps(s.get("env", {}))
    ]
    assert len(steps) == 1 and "prefetch" in steps[0][1]["run"], steps  # the weights download, nothing else


def test_links_follow_the_repository_and_jobs_fit_hosted_runners():
    text = "\n".join(f.read_text() for f in WORKFLOWS.glob("*.yml"))
    owner = re.search(r"github\.com/([\w-]+)/", (ROOT / "_config.yml").read_text()).group(1)
    assert owner not in text  # no hard-coded owner: github.repository / github.server_url
    for wf, jid, job in _jobs():
        if "uses" in job:
            continue
        t = job.get("timeout-minutes")
        assert t is not None, f"{wf}:{jid} has no timeout"
        if str(job.get("runs-on", "")).startswith("ubuntu"):
            assert int(t) <= 360, f"{wf}:{jid}: {t} min is over a hosted runner's 6 hours"
        if job.get("container"):
            assert "@sha256:" in str(job["container"]), f"{wf}:{jid}: container not pinned by digest"
        if jid in ("smoke", "offline", "site", "build"):
            assert any("fork-config" in str(s.get("run", "")) for s in job["steps"]), f"{wf}:{jid}"


def test_the_paper_profile_runs_in_one_gpu_job_offline_after_its_downloads_and_is_published():
    jobs = _workflows()["nightly.yml"]["jobs"]
    paper = jobs["paper"]
    assert paper["if"] == "vars.GPU_RUNNER_LABEL != ''" and paper["runs-on"] == "${{ vars.GPU_RUNNER_LABEL }}"
    assert int(paper["timeout-minutes"]) <= 360  # the six chapters in one job, at most 6 hours
    runs = [str(step.get("run", "")) for step in paper["steps"]]
    at = {key: next(i for i, r in enumerate(runs) if key in r) for key in ("replib.data prefetch", "--parts")}
    at["run"] = runs.index(".venv/bin/python -m replib run --profile paper")  # every chapter, not a part
    assert at["replib.data prefetch"] < at["run"] and at["--parts"] < at["run"]
    assert "REPLIB_DATA_OFFLINE=1" in runs[at["replib.data prefetch"]] and "HF_HUB_OFFLINE=1" in runs[at["--parts"]]
    assert not (WORKFLOWS / "paper-part.yml").exists() and "paper-parts" not in jobs
    # the site waits for it and merges its report with the others (reports: replib report merge)
    assert "paper" in jobs["site"]["needs"] and "paper" in jobs["notify"]["needs"]
    site = _runs(jobs["site"])
    assert site.index("nightly.py drift") < site.index("nightly.py collect-paper") < site.index("nightly.py reports")


def test_the_paper_models_from_the_part_list_and_the_last_stored_paper_run_on_a_night_without_one(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import nightly_tasks
    finally:
        sys.path.remove(str(SCRIPT.parent))
    parts = [{"chapter": "a", "part": "p", "models": ["m2", "m1"]}, {"chapter": "b", "part": "q", "models": ["m1"]}]
    assert nightly_tasks.paper_models(parts + [{"chapter": "c", "part": "r"}]) == ["m1", "m2"]
    with pytest.raises(ValueError, match="JSON list"):
        nightly_tasks.paper_models({"include": parts})
    reports = tmp_path / "reports"
    reports.mkdir()
    for day, value in (("2026-01-01", 0.1), ("2026-01-02", 0.2)):
        (reports / f"{day}-paper.json").write_text(json.dumps(_report("paper", value)))
        (reports / f"{day}-paper.drift.json").write_text("[]")
    (reports / "2026-01-01-atlas-paper.json").write_text(json.dumps({"profile": "paper", "models": []}))
    r = _nightly("collect-paper", str(reports), "runs", "atlas", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    shown = json.loads((tmp_path / "runs" / "paper" / "report.json").read_text())
    assert {c["value"] for c in shown["claims"] if c["key"] == "a_iso"} == {0.2}  # the latest night's
    assert (tmp_path / "atlas" / "paper" / "atlas.json").exists()
    _runner_output(tmp_path / "tonight", "paper", _report("paper", 0.3))
    r = _nightly("collect-paper", str(reports), "tonight/build/runs", "atlas", cwd=tmp_path)
    assert r.returncode == 0 and "tonight's run" in r.stdout
    tonight = json.loads((tmp_path / "tonight" / "build" / "runs" / "paper" / "report.json").read_text())
    assert {c["value"] for c in tonight["claims"] if c["key"] == "a_iso"} == {0.3}


def test_a_failed_offline_chapter_fails_the_book_instead_of_publishing_the_smoke_run(tmp_path):
    _runner_output(tmp_path, "smoke", _report("smoke", 0.2))
    r = _nightly("colab", "build/runs", "tree", cwd=tmp_path)
    assert r.returncode == 2 and "no readable offline report" in r.stderr
    rep = _report("offline", 0.2)
    rep["summary"]["chapter_failures"] = 1
    _runner_output(tmp_path, "offline", rep)
    for cmd in (("book", "build/runs"), ("colab", "build/runs", "tree")):
        r = _nightly(*cmd, cwd=tmp_path)
        assert r.returncode == 2 and "1 chapter(s) of the offline run failed" in r.stderr, cmd


def test_keepalive_re_enables_the_schedule_and_readme_shows_its_status():
    keep = _workflows()["keepalive.yml"]
    assert keep[True]["schedule"]  # PyYAML reads the key `on` as True
    job = keep["jobs"]["enable"]
    assert job["permissions"] == {"actions": "write"}
    assert "actions/workflows/$wf/enable" in _runs(job) and "nightly.yml" in _runs(job)
    readme = (ROOT / "README.md").read_text()
    assert "actions/workflows/nightly.yml/badge.svg" in readme


# ------------------------------------------------------------------ planning and paper parts
def test_the_site_is_pruned_and_bounded(tmp_path):
    html = tmp_path / "html"
    (html / "reports").mkdir(parents=True)
    (html / "index.html").write_text("x" * 1000)
    (html / "reports" / "2025-01-01-offline.json").write_text("x" * 500_000)  # old: pruned from the site
    (html / "reports" / "2026-01-01-offline.json").write_text("x" * 1000)
    r = _nightly(
        "prune-site", str(html), "--limit-mb", "0.1", "--keep-days", "90", "--date", "2026-01-02", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert not (html / "reports" / "2025-01-01-offline.json").exists()
    assert (html / "reports" / "2026-01-01-offline.json").exists()
    (html / "big.js").write_text("x" * 200_000)
    r = _nightly("prune-site", str(html), "--limit-mb", "0.1", "--date", "2026-01-02", cwd=tmp_path)
    assert r.returncode == 2 and "over its 0.1 MB limit" in r.stderr and "big.js" in r.stderr


def test_fork_config_and_the_nightly_seed(tmp_path):
    cfg = tmp_path / "_config.yml"
    shutil.copy2(ROOT / "_config.yml", cfg)
    r = _nightly("fork-config", str(cfg), "--repository", "someone/fork-of-book", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "https://github.com/someone/fork-of-book"
    new = yaml.safe_load(cfg.read_text())
    assert new["repository"]["url"] == "https://github.com/someone/fork-of-book"
    assert new["repository"]["branch"] == yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
    assert cfg.read_text().count("\n") == (ROOT / "_config.yml").read_text().count("\n")  # comments kept
    r = _nightly("fork-config", str(cfg), "--repository", "not a repo", cwd=tmp_path)
    assert r.returncode == 2
    seeds = [int(_nightly("seed", "--date", d, cwd=tmp_path).stdout) for d in ("2026-01-01", "2026-01-02")]
    assert seeds[0] > 0 and seeds[1] == seeds[0] + 1  # a new seed every night, never seed 0


# ------------------------------------------------------------------ deploy: git pushes without a stored token
@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_push_files_and_tag_to_a_remote(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    for night in ("2026-01-01", "2026-01-02"):
        src = tmp_path / night
        src.mkdir()
        (src / f"{night}-offline.json").write_text("{}")
        r = _nightly(
            "push-files", str(src), "--remote", str(remote), "--branch", "reports", "--message", night, cwd=tmp_path
        )
        assert r.returncode == 0 and "files pushed: 1" in r.stdout, r.stderr
    r = _nightly(
        "push-files", "2026-01-02", "--remote", str(remote), "--branch", "reports", "--message", "again", cwd=tmp_path
    )
    assert "files pushed: 0" in r.stdout  # nothing new: no empty commit
    tree = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "reports"], cwd=remote, capture_output=True, text=True
    )
    assert tree.stdout.split() == ["reports/2026-01-01-offline.json", "reports/2026-01-02-offline.json"]
    log = subprocess.run(["git", "log", "--format=%s", "reports"], cwd=remote, capture_output=True, text=True)
    assert log.stdout.split() == ["2026-01-02", "2026-01-01"]
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "a.ipynb").write_text("{}")
    args = ("push-tag", "nb", "--remote", str(remote), "--tag", "colab-0123456789ab", "--message", "nb")
    assert "tag created: True" in _nightly(*args, cwd=tmp_path).stdout
    assert "tag created: False" in _nightly(*args, cwd=tmp_path).stdout  # an existing tag is never moved
    assert not list(tmp_path.rglob("*.git/config")) or "extraheader" not in (remote / "config").read_text()


def _deploy_step(name: str) -> dict:
    return next(s for s in _workflows()["nightly.yml"]["jobs"]["deploy"]["steps"] if s.get("name") == name)


def test_a_built_books_colab_buttons_open_notebooks_the_nightly_publishes(night, tmp_path):
    """The Colab URL a book built from this project shows (bookkit.book.book.staged_config, the URL the browser test
    finds on every chapter page) names a branch and path that the nightly's publish steps create: the runnable
    notebooks laid out by `nightly.py colab`, pushed by the deploy job's step to the `colab` branch."""
    from bookkit.book.book import COLAB_BRANCH, staged_config
    from bookkit.book.expectations import colab_url

    ws, artifacts = night
    upload_download(ws, "run-offline", _workflow_uploads()["run-offline"], artifacts)
    pub = tmp_path / "publish"
    pub.mkdir()
    assert _nightly("layout", str(artifacts), "build/runs", cwd=pub).returncode == 0
    assert _nightly("colab", "build/runs", "colab-tree", cwd=pub).returncode == 0
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    step = _deploy_step("Push the runnable notebooks to the colab branch")
    args = step["run"].split("scripts/nightly.py ", 1)[1].replace('"$TAG"', "colab-0123456789ab").split()
    args = [a.strip('"') for a in args]
    r = _nightly(*args[: args.index("--message") + 1], "nightly", "--remote", str(remote), cwd=pub)
    assert r.returncode == 0, r.stderr
    assert "--branch" in args and args[args.index("--branch") + 1] == COLAB_BRANCH

    config = tmp_path / "_config.yml"
    config.write_text(staged_config(ROOT))
    for chapter in ("alpha", "beta"):
        url = colab_url(config, chapter)
        branch, path = re.search(r"/blob/([^/]+)/(.+)$", url).groups()
        assert branch == COLAB_BRANCH
        shown = subprocess.run(["git", "show", f"{branch}:{path}"], cwd=remote, capture_output=True, text=True)
        assert shown.returncode == 0, f"{url}: {path} is not on {branch}"
        assert shown.stdout == (pub / "colab-tree" / path).read_text()
    # the published book opens the tag of its own commit instead
    config.write_text(staged_config(ROOT, "colab-0123456789ab"))
    assert "/blob/colab-0123456789ab/notebooks/alpha.ipynb" in colab_url(config, "alpha")
