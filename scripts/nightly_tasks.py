"""The nightly's planning, paper-part and deploy steps (called through ``scripts/nightly.py``; standard library
only, except ``prefetch``, which loads models with ``replib``).

- :func:`night_seed`: the seed of tonight's second offline run (seed 0 always runs beside it);
- :func:`fork_config`: ``_config.yml``'s repository URL set to the repository the workflow runs in (a fork
  publishes a book whose buttons and Colab notebooks point at the fork);
- :func:`part_matrix`: the paper jobs' matrix from ``python -m replib run --profile paper --list-parts --json``;
- :func:`store_part` / :func:`collect_paper`: a paper part's report (or the paper atlas) stored on the
  ``reports`` branch as it lands, and the latest of every part gathered for the site;
- :func:`prune_site`: the published site bounded in size;
- :func:`push_files` / :func:`push_tag`: commit files to a branch (retrying on a concurrent push) or push an
  immutable tag, with the token given to git for that command only (never written to disk).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from datetime import date as Date
from pathlib import Path

#: chapter and part names become artifact names, file names and command arguments
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: GitHub-hosted runners stop a job after 6 hours; a part's limit must leave room for install and upload
HOSTED_LIMIT_MINUTES = 330
ATLAS_PART = {"chapter": "atlas", "part": "paper", "timeout_minutes": 120, "models": []}
EPOCH = Date(2000, 1, 1)


def night_seed(day: str) -> int:
    """Tonight's extra seed: the number of days from 2000-01-01 to ``day`` (YYYY-MM-DD), so every night has
    a new seed (never 0, which runs beside it) and a report says which night it belongs to."""
    return (Date.fromisoformat(day) - EPOCH).days


def fork_config(config: Path, repository: str, server: str = "https://github.com") -> str:
    """Point ``repository.url`` of ``config`` (``_config.yml``) at ``<server>/<repository>``; the file's
    other lines (comments included) are kept. Returns the URL."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+", repository):
        raise ValueError(f"not an owner/name repository: {repository!r}")
    url = f"{server.rstrip('/')}/{repository}"
    text = Path(config).read_text()
    pattern = re.compile(r"^(repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:[ \t]*)(\S+)", re.M)
    if not pattern.search(text):
        raise ValueError(f"{config}: no repository.url to set")
    Path(config).write_text(pattern.sub(lambda m: m.group(1) + url, text, count=1))
    return url


def part_matrix(parts: list, limit_minutes: int = HOSTED_LIMIT_MINUTES, atlas: bool = True) -> dict:
    """The paper matrix: ``{"include": [{"chapter", "part", "timeout_minutes", "models"}, ...]}``.

    Every part must name a safe chapter and part and a whole number of minutes within ``limit_minutes``
    (a part that needs longer must be split, or run on a self-hosted runner with a larger limit); ``models``
    (optional) are the models the part loads, downloaded by the one step that sees ``HF_TOKEN``.
    """
    if not isinstance(parts, list) or not parts:
        raise ValueError("the part list must be a non-empty JSON list of {chapter, part, timeout_minutes}")
    out, seen, problems = [], set(), []
    for i, p in enumerate(parts):
        if not isinstance(p, dict):
            problems.append(f"item {i}: not an object")
            continue
        ch, part, minutes = p.get("chapter"), p.get("part"), p.get("timeout_minutes")
        if not all(isinstance(x, str) and SAFE_NAME.match(x) for x in (ch, part)):
            problems.append(f"item {i}: chapter and part must match {SAFE_NAME.pattern}: {ch!r}, {part!r}")
            continue
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
            problems.append(f"{ch}/{part}: timeout_minutes must be a positive whole number, got {minutes!r}")
        elif minutes > limit_minutes:
            problems.append(f"{ch}/{part}: {minutes} min exceeds the {limit_minutes}-minute limit: split the part")
        if (ch, part) in seen:
            problems.append(f"{ch}/{part}: listed twice")
        seen.add((ch, part))
        models = p.get("models") or []
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            problems.append(f"{ch}/{part}: models must be a list of model names")
        out.append({"chapter": ch, "part": part, "timeout_minutes": minutes, "models": models})
    if problems:
        raise ValueError("invalid paper part list:\n  " + "\n  ".join(problems))
    if atlas:
        out.append(dict(ATLAS_PART, timeout_minutes=min(ATLAS_PART["timeout_minutes"], limit_minutes)))
    return {"include": out}


def part_file(chapter: str, part: str, day: str) -> str:
    """The name of a paper part's report on the ``reports`` branch (the paper atlas: ``<day>-atlas-paper.json``)."""
    return f"{day}-atlas-paper.json" if chapter == "atlas" else f"{day}-paper--{chapter}--{part}.json"


def store_part(artifact: Path, dest: Path, chapter: str, part: str, day: str) -> Path:
    """Copy the report (``report.json``, or ``atlas.json`` for the atlas part) found in a paper part's
    downloaded artifact to ``dest/<part_file>``; raises FileNotFoundError when there is none."""
    want = "atlas.json" if chapter == "atlas" else "report.json"
    found = sorted(Path(artifact).rglob(want), key=lambda p: len(p.parts))
    if not found:
        raise FileNotFoundError(f"no {want} in {artifact}: the part {chapter}/{part} wrote no report")
    Path(dest).mkdir(parents=True, exist_ok=True)
    out = Path(dest) / part_file(chapter, part, day)
    shutil.copy2(found[0], out)
    return out


def latest_parts(reports: Path) -> tuple[list[Path], Path | None]:
    """The latest stored report of every paper part, and the latest paper atlas (None when none)."""
    latest: dict[str, Path] = {}
    for f in sorted(Path(reports).glob("*-paper--*--*.json")):  # sorted: dates ascending, the last wins
        latest[f.name.split("-paper--", 1)[1]] = f
    atlases = sorted(Path(reports).glob("*-atlas-paper.json"))
    return [latest[k] for k in sorted(latest)], (atlases[-1] if atlases else None)


def prune_site(html: Path, limit_mb: float, keep_days: int, today: str) -> int:
    """Bound the site: dated reports (``reports/<YYYY-MM-DD>-*``) older than ``keep_days`` are removed from
    the site (the ``reports`` branch keeps them all); then the site must be at most ``limit_mb`` MB.

    Returns the site's size in bytes; raises ValueError naming the largest files when it is too large.
    """
    html = Path(html)
    cutoff = Date.fromisoformat(today).toordinal() - keep_days
    for f in (html / "reports").glob("*"):
        m = re.match(r"(\d{4}-\d{2}-\d{2})-", f.name)
        if f.is_file() and m and Date.fromisoformat(m.group(1)).toordinal() < cutoff:
            f.unlink()
    files = [f for f in html.rglob("*") if f.is_file()]
    total = sum(f.stat().st_size for f in files)
    if total > limit_mb * 1e6:
        big = sorted(files, key=lambda f: -f.stat().st_size)[:10]
        listing = "\n  ".join(f"{f.stat().st_size / 1e6:8.1f} MB  {f.relative_to(html)}" for f in big)
        raise ValueError(f"the site is {total / 1e6:.1f} MB, over its {limit_mb:g} MB limit; largest:\n  {listing}")
    return total


# ----------------------------------------------------------------------------------------- git
def _git_env(token: str | None, server: str) -> dict:
    """The environment of a git command that authenticates to ``server`` with ``token``: an
    ``http.<server>/.extraheader`` given through GIT_CONFIG_* variables, so it is never written to disk."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0=f"http.{server.rstrip('/')}/.extraheader",
            GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}",
        )
    return env


def _git(args: list[str], cwd: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True, text=True)


IDENTITY = ["-c", "user.name=replib nightly", "-c", "user.email=nightly@users.noreply.github.com"]


def push_files(src: Path, remote: str, branch: str, subdir: str, message: str, *, token=None, server="", tries=5):
    """Commit the files of ``src`` into ``subdir/`` of ``branch`` on ``remote`` and push (the branch is
    created as an orphan when absent). A push rejected because another job pushed first (the paper parts
    publish concurrently) is retried on the new tip: files are only added, so it never conflicts.

    Returns the number of files committed (0: nothing new).
    """
    files = sorted(f for f in Path(src).rglob("*") if f.is_file())
    env = _git_env(token, server or remote)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        _git(["init", "-q"], repo, env)
        _git(["remote", "add", "origin", remote], repo, env)
        for attempt in range(tries):
            fetched = _git(["fetch", "-q", "--depth=1", "origin", branch], repo, env, check=False).returncode == 0
            _git(
                ["checkout", "-q", "-f", "-B", branch, "FETCH_HEAD"]
                if fetched
                else ["checkout", "-q", "--orphan", branch],
                repo,
                env,
            )
            for f in files:
                dest = repo / subdir / f.relative_to(src)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)
            _git(["add", "-A", subdir], repo, env)
            if _git(["diff", "--cached", "--quiet"], repo, env, check=False).returncode == 0:
                return 0
            _git([*IDENTITY, "commit", "-q", "-m", message], repo, env)
            if _git(["push", "-q", "origin", f"HEAD:refs/heads/{branch}"], repo, env, check=False).returncode == 0:
                return len(files)
            print(f"push to {branch} rejected (attempt {attempt + 1}/{tries}): retrying on the new tip")
    raise RuntimeError(f"could not push to {branch} after {tries} attempts")


def push_tag(src: Path, remote: str, tag: str, message: str, *, token=None, server="") -> bool:
    """Push ``src`` as the only commit of the new tag ``tag`` (an orphan commit); an existing tag is never
    moved. Returns True when the tag was created."""
    env = _git_env(token, server or remote)
    if (
        _git(
            ["ls-remote", "--exit-code", "--tags", remote, f"refs/tags/{tag}"], Path.cwd(), env, check=False
        ).returncode
        == 0
    ):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        shutil.copytree(src, repo, dirs_exist_ok=True)
        _git(["init", "-q"], repo, env)
        _git(["checkout", "-q", "--orphan", "colab-notebooks"], repo, env)
        _git(["add", "-A"], repo, env)
        _git([*IDENTITY, "commit", "-q", "-m", message], repo, env)
        _git(["tag", tag], repo, env)
        _git(["push", "-q", remote, f"refs/tags/{tag}"], repo, env)
    return True


def prefetch(models: list[str]) -> None:
    """Download (into the Hugging Face cache) every model a paper part loads, so that the part itself runs
    with ``HF_HUB_OFFLINE=1`` and only this step sees ``HF_TOKEN``."""
    from replib.models import resolve_model

    for name in models:
        lm = resolve_model(name, device="cpu")
        print(f"prefetched {name}: {lm.source}")
        del lm


def read_json(path: Path):
    return json.loads(Path(path).read_text())
