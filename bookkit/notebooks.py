"""Chapters are MyST Markdown notebooks (jupytext ``md:myst``): one text file per chapter, the only source.

This module turns a chapter's source into the runnable ``.ipynb`` that papermill executes and Colab opens:
the text is read with jupytext and the Colab bootstrap cell, which lives here and nowhere else, is
inserted after the title (tagged ``remove-cell``, so the rendered book never shows it). It also prepares
an executed notebook for the book: papermill's injected-parameters cell is removed from the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import jupytext
import nbformat

from replib._io import read_csv
from replib._optional import optional_import, require

from .project import chapter_source, repository

#: what ``{glue:text}`` renders, exactly (the book extra; a Colab or GPU machine runs chapters without it)
_glue = optional_import("myst_nb.core.variables")

BOOTSTRAP_TAG = "replib-bootstrap"
FINISH_TAG = "replib-colab-report"
#: a ``{glue:text}`key:spec``` role in a chapter's prose
GLUE_TEXT = re.compile(r"\{glue(?::text)?\}`([^`]+)`")
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


#: the rehearsal of the paper profile (``python -m replib rehearsal``): one row per part of every chapter
REHEARSAL_CSV = "book/rehearsal.csv"


def chapter_cost(rows: list[dict], chapter: str) -> dict | None:
    """What the chapter's ``paper`` profile costs by the rehearsal (the rows of ``book/rehearsal.csv``): its ``all`` row
    when it has one, else the sum of its parts' T4-hours and caches and their largest memory; None without
    rows. Keys ``t4_hours``, ``peak_rss_gb``, ``cache_gb``, ``parts`` and, when the rehearsal has it,
    ``l4_hours``."""
    rows = [r for r in rows if r.get("chapter") == chapter]
    whole = [r for r in rows if r.get("part") == "all"]
    rows = whole or rows
    if not rows:
        return None

    def total(key, how=sum):
        vals = [float(r[key]) for r in rows if (r.get(key) or "").strip()]
        return how(vals) if vals else None

    cost = {
        "t4_hours": total("t4_hours_estimate"),
        "peak_rss_gb": total("peak_rss_gb", max),
        "cache_gb": total("cache_gb"),  # every part's cache stays on the disk
        "parts": 0 if whole else len(rows),
    }
    if any("l4_hours_estimate" in r for r in rows):
        cost["l4_hours"] = total("l4_hours_estimate")
    return cost


def read_chapter(path: Path):
    """The chapter's notebook (``nbformat`` node, no outputs) from its MyST Markdown source."""
    nb = jupytext.read(str(path), fmt="md:myst")
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("jupytext", None)
    return nb


def colab_bootstrap(repo_url: str, ref: str, chapter: str = "", cost: dict | None = None, cells: int = 0) -> str:
    """The Colab bootstrap cell: on Colab, fetch the book at ``ref``, install ``replib`` and start the chapter's
    session (:func:`bookkit.run.colab.start`: Drive mounted for the caches and results, progress with the time
    left); elsewhere nothing. Its first lines say what the chapter costs (``cost``: :func:`chapter_cost`).

    Idempotent and retry-safe: a clone left by an earlier run is reused (a folder an interrupted clone
    left without ``.git`` is removed and cloned again), ``ref`` is checked out every time, and ``pip
    install`` runs until ``replib`` can be imported (an interrupted install is retried: the book's folder
    is put on ``sys.path`` only after the install succeeded, so ``find_spec`` cannot find it earlier).
    """
    name = urlparse(repo_url).path.rstrip("/").split("/")[-1] or "book"
    where = f"/content/{name}"
    t4 = (cost or {}).get("t4_hours")
    return f'''# Colab bootstrap (inserted by replib when this notebook was built; does nothing outside Colab).
{cost_comment(cost)}
# Choose a GPU runtime, then Runtime > Run all. This cell fetches the book at the commit this notebook was built
# from, installs replib (keeping Colab's torch) and mounts Google Drive: the caches and the report are kept in
# MyDrive/replib, so after a disconnect, Run all again resumes where the chapter stopped. The last cell checks
# the chapter's claims and writes its report for the book (python -m replib report merge).
import importlib.util, os, shutil, subprocess, sys
BOOK_REPO, BOOK_REF, BOOK_DIR, DRIVE_DIR = "{repo_url}", "{ref}", "{where}", "/content/drive"
if "google.colab" in sys.modules:
    if os.path.isdir(BOOK_DIR) and not os.path.isdir(os.path.join(BOOK_DIR, ".git")):
        shutil.rmtree(BOOK_DIR)  # what an interrupted clone left
    if not os.path.isdir(os.path.join(BOOK_DIR, ".git")):
        subprocess.run(["git", "clone", "--filter=blob:none", BOOK_REPO, BOOK_DIR], check=True)
    subprocess.run(["git", "-C", BOOK_DIR, "fetch", "-q", "origin", BOOK_REF], check=False)
    subprocess.run(["git", "-C", BOOK_DIR, "checkout", "-q", BOOK_REF], check=True)
    if importlib.util.find_spec("replib") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", BOOK_DIR + "[colab]"], check=True)
    sys.path.insert(0, BOOK_DIR)
    os.chdir(os.path.join(BOOK_DIR, "notebooks"))
    from bookkit.run.colab import start

    start({chapter!r}, book_dir=BOOK_DIR, cells={cells}, t4_hours={t4!r}, drive=DRIVE_DIR)'''


def cost_comment(cost: dict | None) -> str:
    """The bootstrap's line on what the chapter costs in the ``paper`` profile (rehearsed, not timed on a T4)."""
    if not cost or cost.get("t4_hours") is None:
        return "# What it costs: not rehearsed yet (see the book's rehearsal page)."
    l4 = f", about {cost['l4_hours']:.2g} hours on an L4" if cost.get("l4_hours") is not None else ""
    mem = f"; {cost['peak_rss_gb']:.1f} GB of RAM" if cost.get("peak_rss_gb") is not None else ""
    disk = f", {cost['cache_gb']:.1f} GB on Drive" if cost.get("cache_gb") is not None else ""
    parts = (
        f"\n# In {cost['parts']} parts of one session each: set part = NAME in the parameters cell"
        if cost.get("parts", 0) > 1
        else ""
    )
    return (
        f"# What it costs (paper profile, rehearsed at paper scale): about {cost['t4_hours']:.2g} hours on a Colab "
        f"T4{l4}{mem}{disk}.{parts}"
    )


def runnable_notebook(root: Path, chapter: str, ref: str | None = None):
    """The chapter as a runnable notebook: its source with the Colab bootstrap after the title and the Colab
    report cell at the end.

    Parameters
    ----------
    root : project root
    chapter : chapter name (``notebooks/<chapter>.md``)
    ref : git commit (or branch) the Colab bootstrap checks out; default: ``_config.yml``'s branch
    """
    repo = repository(root)
    nb = read_chapter(chapter_source(root, chapter))
    cells = sum(c.cell_type == "code" for c in nb.cells) + 1  # the bootstrap's and the chapter's: progress ends there
    cost = chapter_cost(read_csv(Path(root) / REHEARSAL_CSV), chapter)
    cell = nbformat.v4.new_code_cell(colab_bootstrap(repo["url"], ref or repo["branch"], chapter, cost, cells))
    cell.metadata["tags"] = ["remove-cell", BOOTSTRAP_TAG]
    at = next((i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), 0)
    nb.cells.insert(at, cell)
    # the last cell: on Colab, check the claims and write the report (bookkit.run.colab.finish); elsewhere nothing
    end = nbformat.v4.new_code_cell(f"""# Colab: check this chapter's claims and write its report to Drive (does nothing outside Colab).
import sys
if "google.colab" in sys.modules:
    from bookkit.run.colab import finish

    finish({chapter!r}, profile, **{{k: globals().get(k) for k in ("seed", "models", "part")}})""")
    end.metadata["tags"] = ["remove-cell", FINISH_TAG]
    nb.cells.append(end)
    nbformat.validate(nb)
    return nb


def write_runnable(root: Path, chapter: str, dst: Path, ref: str | None = None) -> Path:
    """Write :func:`runnable_notebook` to ``dst`` (``.ipynb``)."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(runnable_notebook(root, chapter, ref), str(dst))
    return dst


def for_the_page(nb):
    """An executed notebook made ready for the book: papermill's injected-parameters cell is removed
    from the page (tag ``remove-cell``); everything else is shown as executed."""
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    return nb


def glue_role(role: str) -> tuple[str, str]:
    """``(key, format spec)`` of a glue role's content (``"iso:.3f"`` -> ``("iso", ".3f")``; no spec: ``"s"``)."""
    parts = role.rsplit(":", 1)
    return (parts[0], parts[1]) if len(parts) == 2 and not parts[0].endswith(":") else (role, "s")


def glued_values(nb) -> dict[str, str]:
    """The plain text of every value an executed notebook glued (``replib.record``), by key."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            meta = o.get("metadata", {}).get("scrapbook")
            if meta and "name" in meta:
                tp = o.get("data", {}).get(meta.get("mime_prefix", "") + "text/plain")
                if tp is not None:
                    out[meta["name"]] = "".join(tp) if isinstance(tp, list) else tp
    return out


def colab_prose(nb, glued: dict[str, str], run: str):
    """The runnable notebook for Colab, which shows MyST roles as raw text: every ``{glue:text}`` role in the
    prose becomes the value ``run`` glued (formatted as the book renders it), or ``key`` in code type when
    that run has none; a note after the title says whose numbers the prose holds (the cells compute the
    reader's own)."""

    def value(m: re.Match) -> str:
        key, spec = glue_role(m.group(1))
        if key not in glued:
            return f"`{key}`"
        return require(_glue, "myst-nb", "the Colab notebooks' prose", pip="replib[book]").format_plain_text(
            glued[key], spec
        )

    n = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source, k = GLUE_TEXT.subn(value, cell.source)
            n += k
    if n:
        note = nbformat.v4.new_markdown_cell(
            f"*The numbers in this notebook's text are those of {run}; running the cells computes yours.*"
        )
        at = next((i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), 0)
        nb.cells.insert(at, note)
    return nb
