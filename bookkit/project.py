"""The book's project root and what lives in it: chapters, the table of contents, the configuration.

A *project root* holds ``_toc.yml``, ``_config.yml``, ``notebooks/`` (one MyST Markdown notebook
``<chapter>.md`` and one ``<chapter>.claims.yml`` per chapter) and ``book/``. The tooling takes the root
as an argument; :func:`find_root` finds it for the command line.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from replib._io import confined

from .yamlfile import load_yaml

ROOT_ENV = "REPLIB_BOOK_ROOT"
CHAPTER_SUFFIX = ".md"  # a chapter's one source: a MyST Markdown notebook (jupytext md:myst)


def find_root(start: Path | str | None = None) -> Path:
    """The project root: ``start`` (or ``$REPLIB_BOOK_ROOT``, or the working directory) or a parent of it.

    Raises
    ------
    FileNotFoundError
        when no folder on the way up holds ``_toc.yml`` and ``notebooks/``.
    """
    start = Path(start or os.environ.get(ROOT_ENV) or Path.cwd()).resolve()
    for p in (start, *start.parents):
        if (p / "_toc.yml").is_file() and (p / "notebooks").is_dir():
            return p
    raise FileNotFoundError(
        f"no book project (a folder with _toc.yml and notebooks/) at or above {start}; "
        f"run from the repository or set {ROOT_ENV}"
    )


def toc_files(toc_path: Path) -> list[str]:
    """Every file of a Jupyter Book ``_toc.yml`` (root first), without suffix, in reading order."""
    toc_path = Path(toc_path)
    if not toc_path.exists():
        return []
    toc = load_yaml(toc_path, what="table of contents").data or {}
    out = [str(toc["root"])] if "root" in toc else []

    def walk(node):  # a dict's "file" first, then its other values and a list's items (a str holds no file)
        if isinstance(node, dict) and isinstance(node.get("file"), str):
            out.append(node["file"])
        for v in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
            walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [f[: -len(s)] if (s := next((x for x in (".md", ".ipynb") if f.endswith(x)), "")) else f for f in out]


def toc_chapters(root: Path) -> list[str]:
    """Chapter names (``notebooks/<name>``) in ``_toc.yml`` order."""
    return [f.split("/", 1)[1] for f in toc_files(Path(root) / "_toc.yml") if f.startswith("notebooks/")]


def chapter_source(root: Path, chapter: str) -> Path:
    """The one source file of ``chapter``: ``notebooks/<chapter>.md``."""
    return confined(Path(root) / "notebooks", f"{chapter}{CHAPTER_SUFFIX}", what="chapter")


def repository(root: Path) -> dict:
    """``_config.yml``'s ``repository`` section (``url``, ``branch``, ``path_to_book``)."""
    cfg = load_yaml(Path(root) / "_config.yml", what="book configuration").data or {}
    repo = dict(cfg.get("repository") or {})
    repo.setdefault("branch", "main")
    repo["url"] = str(repo.get("url", "")).rstrip("/")
    return repo


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (``$GITHUB_SHA`` when git cannot tell), or ``None``.

    ``safe.directory`` is set for this one call: in CI containers the checkout belongs to another user and
    git would otherwise refuse ("dubious ownership") and the report would lose its commit.
    """
    try:
        cmd = ["git", "-c", f"safe.directory={Path(root).resolve()}", "rev-parse", "HEAD"]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=10)
        sha = proc.stdout.strip()
        if proc.returncode == 0 and len(sha) == 40:
            return sha
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("GITHUB_SHA") or None
