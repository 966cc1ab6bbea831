"""What each page of the built book must show, derived from the chapter sources, the executed notebooks,
the report and ``_config.yml`` (the expectations :mod:`bookkit.book.browser` checks in a real browser)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import nbformat
from myst_nb.core.variables import format_plain_text as format_glue_text  # exactly what {glue:text} renders

from replib._validation import finite_number

from ..claims.paper_tables import load_paper_tables
from ..claims.status import STATUS_BADGE as BADGE
from ..claims.verdicts import declared_refs
from ..notebooks import GLUE_TEXT, for_the_page, glue_role, glued_values, read_chapter
from ..project import chapter_source, find_root, toc_files
from ..run.runner import discover_chapters
from ..yamlfile import load_yaml
from .pages import chapter_verdicts, evidence_cell

#: a code cell calling one of these is expected to show a figure
PLOT_CALL = re.compile(r"\b(plt|sns|px|go)\.\w+\(|\.plot\(|\.plot\.\w+\(|show_plotly\(|\bplot_\w+\(")
#: cell tags that hide outputs (no figure expected) or opt out explicitly
NO_FIGURE_TAGS = {"remove-output", "remove-cell", "replib-no-figure"}


@dataclass
class Page:
    source: str  # toc entry, e.g. "book/intro" or "notebooks/isoscore"
    html: str  # path relative to the html root
    chapter: str | None = None  # chapter name for notebooks/<chapter>
    figure_cells: list[int] = field(default_factory=list)  # indexes among rendered code cells
    n_plotly: int = 0
    glue: list[tuple[str, str]] = field(default_factory=list)  # (key:spec, expected text) in prose order
    claim_badges: list[str] | None = None  # the statuses of the chapter's claims, in order (from the report)
    summary: dict[str, str] | None = None  # front page: chapter title -> its claims counted per status (report)
    ran_models: list[str] | None = None  # chapter: the models its header must name (the report's models)
    paper_vs_ours: bool = False  # chapter: the staged "paper vs ours" figure must show (a non-zero paper value)
    claim_keys: list[str] | None = None  # a paper's validation page: every key of its claims file


def chapter_expectations(name: str, source_nb: Path, executed_nb: Path | None) -> Page:
    """What the rendered page of chapter ``name`` must show, from its source and executed notebooks."""
    src = read_chapter(source_nb)
    page = Page(source=f"notebooks/{name}", html=f"notebooks/{name}.html", chapter=name)
    exists = executed_nb and Path(executed_nb).exists()  # as staged for the page (papermill's injected cell removed)
    ran = for_the_page(nbformat.read(str(executed_nb), as_version=4)) if exists else None
    glued = glued_values(ran) if ran is not None else {}
    for cell in src.cells:
        if cell.cell_type == "markdown":
            for role in GLUE_TEXT.findall(cell.source):
                key, spec = glue_role(role)
                tp = glued.get(key)
                page.glue.append((role, format_glue_text(tp, spec) if tp is not None else f"<{key} not recorded>"))
    # the page shows the executed notebook (papermill adds an injected-parameters cell): count its code cells
    rendered = 0
    for cell in (ran if ran is not None else src).cells:
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type != "code" or "remove-cell" in tags:
            continue
        if PLOT_CALL.search(cell.source) and not tags & NO_FIGURE_TAGS:
            page.figure_cells.append(rendered)
        rendered += 1
        if "remove-output" not in tags:
            for o in cell.get("outputs", []):
                if "plotly-graph-div" in str(o.get("data", {}).get("text/html", "")):
                    page.n_plotly += 1
    return page


def book_pages(root: Path | None = None, executed_dir: Path | None = None) -> list[Page]:
    """Every page of ``_toc.yml`` with the expectations of chapter pages (and, when the run's
    ``report.json`` is beside ``executed_dir``, of the reproduction tables and the front page's counts)."""
    root = Path(root or find_root())
    report_path = Path(executed_dir).parent / "report.json" if executed_dir else None
    report = json.loads(report_path.read_text()) if report_path and report_path.exists() else None
    keys = claim_keys(root / "notebooks")
    pages = []
    for f in toc_files(root / "_toc.yml"):
        m = re.fullmatch(r"notebooks/([A-Za-z0-9_\-]+)", f)
        if m and chapter_source(root, m.group(1)).exists():
            ex = Path(executed_dir) / f"{m.group(1)}.ipynb" if executed_dir else None
            page = chapter_expectations(m.group(1), chapter_source(root, m.group(1)), ex)
        else:
            page = Page(source=f, html=f"{f}.html")
        m = re.fullmatch(r"book/validation/([A-Za-z0-9_\-]+)", f)
        if m and m.group(1) in keys:
            page.claim_keys = keys[m.group(1)]
        pages.append(page)
        if report is None:
            continue
        # what the report sets: a chapter's reproduction table, header and figure; the front page's counts
        if page.chapter:
            mine = [c for c in report["claims"] if c["chapter"] == page.chapter]
            page.claim_badges = [BADGE[c["status"]] for c in mine]
            entry = next((c for c in report["chapters"] if c["chapter"] == page.chapter), {})
            page.ran_models = [str(m.get("name")) for m in entry.get("models") or []]
            drawable = [c["paper_value"] for c in mine if finite_number(c.get("paper_value"))]
            page.paper_vs_ours = any(v != 0 for v in drawable)  # a non-zero paper value: the figure can draw it
        elif f == "book/intro":
            tables = load_paper_tables(root)
            verdicts = chapter_verdicts(report, tables, declared_refs(discover_chapters(root), tables))
            page.summary = {
                ch.get("title") or ch["chapter"]: evidence_cell(report, verdicts[ch["chapter"]])
                for ch in report["chapters"]
            }
    return pages


def colab_url(config_path: Path, chapter: str, branch: str | None = None) -> str:
    """The Colab launch URL the book must show for ``chapter``, from ``_config.yml``."""
    cfg = load_yaml(config_path, what="book configuration").data
    repo = cfg["repository"]
    org_repo = urlparse(repo["url"]).path.strip("/")
    base = (cfg.get("launch_buttons", {}) or {}).get("colab_url", "https://colab.research.google.com").rstrip("/")
    book = (repo.get("path_to_book") or "").strip("/")
    path = "/".join(p for p in (book, "notebooks", f"{chapter}.ipynb") if p)
    return f"{base}/github/{org_repo}/blob/{branch or repo.get('branch', 'main')}/{path}"


def claim_keys(notebooks_dir: Path) -> dict[str, list[str]]:
    """chapter -> every claim key of its claims file."""
    out = {}
    for f in sorted(Path(notebooks_dir).glob("*.claims.yml")):
        doc = load_yaml(f, what="claims file").data or {}
        out[doc.get("chapter") or f.name.split(".")[0]] = [c["key"] for c in doc.get("claims") or []]
    return out
