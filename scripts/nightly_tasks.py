"""The nightly's planning, paper and deploy steps, called through ``scripts/nightly.py``: tonight's seed, a fork's
``_config.yml``, the paper profile's models (prefetched), the site's size bound, and git pushes
with the token given to git for that command only. Standard library only, except ``prefetch`` (``replib``)."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
from datetime import date as Date
from pathlib import Path

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
def _git(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run git with ``$GH_TOKEN`` (when set) as an ``http.<$GITHUB_SERVER_URL>/.extraheader`` given through
    GIT_CONFIG_* variables, so that it is never written to disk."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    if os.environ.get("GH_TOKEN"):
        basic = base64.b64encode(f"x-access-token:{os.environ['GH_TOKEN']}".encode()).decode()
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        env.update(
            GIT_CONFIG_COUNT="1",
            GIT_CONFIG_KEY_0=f"http.{server}/.extraheader",
            GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}",
        )
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True, text=True)


IDENTITY = ["-c", "user.name=replib nightly", "-c", "user.email=nightly@users.noreply.github.com"]


def push_files(src: Path, remote: str, branch: str, subdir: str, message: str, tries: int = 5) -> int:
    """Commit the files of ``src`` into ``subdir/`` of ``branch`` on ``remote`` and push (the branch is
    created as an orphan when absent). A push rejected because another job pushed first (the paper parts
    publish concurrently) is retried on the new tip: files are only added, so it never conflicts.

    Returns the number of files committed (0: nothing new).
    """
    files = sorted(f for f in Path(src).rglob("*") if f.is_file())
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        _git(["init", "-q"], repo)
        _git(["remote", "add", "origin", remote], repo)
        for attempt in range(tries):
            fetched = _git(["fetch", "-q", "--depth=1", "origin", branch], repo, check=False).returncode == 0
            checkout = ["-f", "-B", branch, "FETCH_HEAD"] if fetched else ["--orphan", branch]
            _git(["checkout", "-q", *checkout], repo)
            for f in files:
                dest = repo / subdir / f.relative_to(src)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)
            _git(["add", "-A", subdir], repo)
            if _git(["diff", "--cached", "--quiet"], repo, check=False).returncode == 0:
                return 0
            _git([*IDENTITY, "commit", "-q", "-m", message], repo)
            if _git(["push", "-q", "origin", f"HEAD:refs/heads/{branch}"], repo, check=False).returncode == 0:
                return len(files)
            print(f"push to {branch} rejected (attempt {attempt + 1}/{tries}): retrying on the new tip")
    raise RuntimeError(f"could not push to {branch} after {tries} attempts")


def push_tag(src: Path, remote: str, tag: str, message: str) -> bool:
    """Push ``src`` as the only commit of the new tag ``tag`` (an orphan commit); an existing tag is never
    moved. Returns True when the tag was created."""
    listed = _git(["ls-remote", "--exit-code", "--tags", remote, f"refs/tags/{tag}"], Path.cwd(), check=False)
    if listed.returncode == 0:  # an existing tag is never moved
        return False
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        shutil.copytree(src, repo, dirs_exist_ok=True)
        _git(["init", "-q"], repo)
        _git(["checkout", "-q", "--orphan", "colab-notebooks"], repo)
        _git(["add", "-A"], repo)
        _git([*IDENTITY, "commit", "-q", "-m", message], repo)
        _git(["tag", tag], repo)
        _git(["push", "-q", remote, f"refs/tags/{tag}"], repo)
    return True


def paper_models(parts: list) -> list[str]:
    """Every model the paper profile's parts load (``models`` of ``--list-parts --json``), once each."""
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise ValueError("the part list must be a JSON list of objects (python -m replib run --list-parts --json)")
    return sorted({m for p in parts for m in (p.get("models") or [])})


def prefetch(models: list[str]) -> None:
    """Download (into the Hugging Face cache) every model the paper job loads, so that it then runs with
    ``HF_HUB_OFFLINE=1`` and only this step sees ``HF_TOKEN``."""
    from replib.models import resolve_model

    for name in models:
        lm = resolve_model(name, device="cpu")
        print(f"prefetched {name}: {lm.source}")
        del lm
