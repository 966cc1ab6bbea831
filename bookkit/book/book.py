"""Build the book from executed notebooks (Jupyter Book 1, execution off).

Each chapter's source is one MyST Markdown notebook (``notebooks/<chapter>.md``). The book is built
from a staging copy of the book tree in which every chapter is the notebook the runner executed and
checked (``notebooks/<chapter>.ipynb``, papermill's injected cell removed from the page), and the
validation page is generated from the runner's report, so the rendered book shows exactly the numbers
the checker validated.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from replib._io import read_csv
from replib._optional import optional_import
from replib.precision import PLAN_CSV

from ..claims.paper_tables import load_paper_tables, papers_markdown
from ..claims.verdicts import chapter_verdict_markdown, declared_refs, paper_verdicts, verdicts_markdown
from ..errors import BookBuildError
from ..notebooks import REHEARSAL_CSV, for_the_page
from ..project import chapter_source, find_root, toc_chapters, toc_files
from ..run.runner import discover_chapters
from ..yamlfile import load_yaml
from . import atlas, figures, history, mathjax, pages
from .report import chapter_claims_markdown, dashboard_markdown, merge

plotly = optional_import("plotly")  # its plotly.min.js is served with the book when it is installed

VALIDATION_PAGE = "book/validation.md"
#: the validation page split per paper: ``book/validation/<chapter>.md``, one per chapter (sections of
#: ``book/validation`` in ``_toc.yml``), written at staging (:func:`validation_pages`; no file needed before)
VALIDATION_DIR = "book/validation"
FRONT_PAGE = "book/intro.md"
#: the line of the front page replaced at staging by each paper's verdict (bookkit.book.pages)
FRONT_PAGE_MARKER = "<!-- replib:summary -->"
HISTORY_PAGE = "book/history.md"
#: the line of the history page replaced at staging by the verdicts night by night (bookkit.book.history)
HISTORY_MARKER = "<!-- replib:history -->"
RUNNING_PAGE = "book/running.md"
#: the running page's lines replaced by what each chapter costs on Colab (from the rehearsal) and by a link to
#: every page of the table of contents' "Measurements" part
COLAB_COSTS_MARKER = "<!-- replib:colab-costs -->"
MEASUREMENTS_MARKER = "<!-- replib:measurement-pages -->"
MEASUREMENTS_CAPTION = "Measurements"


def _paper_refs(root: Path) -> dict[tuple[str, str], str]:
    """(chapter, key) -> the paper number ``<paper>:<id>`` each claim of the claims files refers to."""
    return {(cc.chapter, c.key): c.ref for cc in discover_chapters(root) for c in cc.claims if c.ref}


def validation_markdown(
    reports: list[dict], root: Path | None = None, claim_links: dict[tuple[str, str], str] | None = None
) -> str:
    """The validation overview: each chapter's claims counted per status per profile, what is and is not
    reproduced, the environment (see :func:`bookkit.book.report.dashboard_markdown`), and a link to each paper's
    own page (:func:`paper_validation_markdown`) where its claims are listed."""
    root = Path(root or find_root())
    names = {c["chapter"] for r in reports for c in r.get("chapters", [])}
    links = {n: f"../notebooks/{n}.ipynb" for n in names if chapter_source(root, n).exists()}
    split = {n: f"validation/{n}" for n in validation_pages(root)}
    page = dashboard_markdown(reports, chapter_links=links, claim_links=claim_links, paper_pages=split)
    tables = load_paper_tables(root)
    declared = declared_refs(discover_chapters(root), tables) if tables else set()
    if tables and reports:  # a verdict per paper and profile, before the counts (bookkit.claims.verdicts)
        verdicts = verdicts_markdown([paper_verdicts(r, tables, declared) for r in merge(reports)])
        page = page.replace("## At a glance", verdicts + "\n## At a glance", 1)
    if tables and not split:  # a book without pages per paper: the papers' tables here (bookkit.claims.paper_tables)
        page += "\n" + papers_markdown(tables, reports[0] if reports else None, _paper_refs(root), declared)
    return page


def validation_pages(root: Path) -> list[str]:
    """The chapters whose validation page ``_toc.yml`` lists (``book/validation/<chapter>``), in its order."""
    listed = set(toc_files(Path(root) / "_toc.yml"))
    return [n for n in toc_chapters(root) if f"{VALIDATION_DIR}/{n}" in listed]


def paper_validation_markdown(
    chapter: str, reports: list[dict], root: Path | None = None, claim_links: dict | None = None
) -> str:
    """One paper's validation page: its verdict per profile (:func:`bookkit.book.pages.chapter_verdicts`), every
    claim of its chapter, and the paper's tables with, in every cell, the paper's value, ours and the status
    (:mod:`bookkit.claims.paper_tables`)."""
    root = Path(root or find_root())
    reports = merge(reports) if reports else []
    ran = [r for r in reports if any(c["chapter"] == chapter for c in r["chapters"])]
    title = next((c.get("title") for r in ran for c in r["chapters"] if c["chapter"] == chapter), None) or chapter
    out = [f"# {title}: every claim", ""]
    if not ran:
        return "\n".join([*out, "```{note}", "No runner report of this chapter was found.", "```", ""])
    out += [f"The chapter: {{doc}}`{title} <../../notebooks/{chapter}>`. Verdict per profile:", ""]
    all_tables = load_paper_tables(root)
    declared = declared_refs(discover_chapters(root), all_tables)
    for rep in ran:
        v = pages.chapter_verdicts(rep, all_tables, declared)[chapter]
        out.append(f"- {pages.run_label(rep)}: **{pages.BADGES[v['verdict']]}**: {v['reason']}")
    out += ["", "## Every claim", ""]
    out += chapter_claims_markdown(chapter, ran, "", claim_links or {})
    refs = _paper_refs(root)
    papers = sorted({ref.split(":")[0] for (ch, _), ref in refs.items() if ch == chapter})
    tables = {p: t for p, t in all_tables.items() if p in papers}
    out += ["", *plan_markdown(chapter, root / "book" / "sampling_plan.csv")]
    if tables:
        out += ["", papers_markdown(tables, ran[-1], refs, declared)]
    return "\n".join(out)


def plan_markdown(chapter: str, plan_csv: Path = PLAN_CSV) -> list[str]:
    """Markdown lines for a chapter's validation page: its rows of the paper profile's chosen sample sizes
    (``book/sampling_plan.csv``, :mod:`replib.precision`) as a table, each group of claims with its size, the
    stand-in's spread and the reason (nothing when it has none)."""
    rows = [r for r in read_csv(plan_csv) if r["chapter"] == chapter]
    if not rows:
        return []
    out = [
        "## Sample sizes of the paper profile",
        "",
        "Chosen by the precision rule ({doc}`../sampling`): the smallest size whose spread is a quarter of the "
        "check's band, the spread measured on a stand-in (a proxy: the papers' models are not run here).",
        "",
        "| claims | parameter | size | paper's data | spread at the size | stand-in | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r['claims']}` | `{r['parameter']}` | {_count(r['n'])} {r['unit']} | {_count(r['paper_n'])} | "
            f"{r['spread'] or '-'} | {r['standin'] or '-'} | {r['reason']} |"
        )
    return [*out, ""]


def _count(n: str) -> str:
    """A size as the table shows it: ``8,900``; a word (``all``: the whole data set) as it is; empty as "—"."""
    return f"{int(n):,}" if n.isdigit() else (n or "—")


def load_reports(profiles: list[str], runs_dir: Path) -> list[dict]:
    files = [Path(runs_dir) / p / "report.json" for p in profiles]
    return [json.loads(f.read_text()) for f in files if f.exists()]


#: the branch the nightly keeps the latest runnable notebooks on (``notebooks/<chapter>.ipynb``, built from the
#: MyST chapters): the Colab buttons of a book built without ``colab_ref`` open these
COLAB_BRANCH = "colab"


def staged_config(root: Path, colab_ref: str | None = None) -> str:
    """The staged ``_config.yml``: ``repository.branch`` is where the Colab buttons open
    ``notebooks/<chapter>.ipynb``: ``colab_ref`` (the ``colab-<commit>`` tag the nightly publishes with the book
    of that commit) or else :data:`COLAB_BRANCH`. On the project's own branch the chapters are MyST text only."""
    cfg = load_yaml(Path(root) / "_config.yml", what="book configuration").data
    cfg.setdefault("repository", {})["branch"] = colab_ref or COLAB_BRANCH
    return yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True)


def stage(
    profile: str,
    stage_dir: Path | None = None,
    runs_dir: Path | None = None,
    report_profiles: list[str] | None = None,
    root: Path | None = None,
    colab_ref: str | None = None,
    history_dir: Path | None = None,
) -> Path:
    """Copy the book tree into ``stage_dir`` with executed notebooks and the pages generated from the report.

    Each chapter is the executed notebook with stderr and progress-bar/warning outputs removed; after its
    title, the run, models and data that produced it, the "what this chapter reproduces" table and the
    "paper vs ours" figure (:mod:`bookkit.book.figures`); its numbers as ``<chapter>.numbers.csv`` and a target
    before each cell that recorded a claim. The front page's ``<!-- replib:summary -->`` line becomes each
    paper's verdict; the validation page is split per paper (``book/validation/<chapter>.md``); the history
    page's ``<!-- replib:history -->`` line becomes the verdicts night by night from the reports in
    ``history_dir`` (the nightly's ``reports`` folder; default: this build's reports); MathJax is copied to
    ``_static`` (``mathjax_path``). A page's ``<!-- replib:table PATH -->`` line becomes the table of that data
    file (:func:`~bookkit.book.pages.fill_tables`); the running page gets the chapters' Colab costs from the rehearsal
    and links to the measurement pages. The Colab buttons open the runnable notebooks the nightly publishes
    (:func:`staged_config`).
    """
    root = Path(root or find_root())
    runs_dir = Path(runs_dir or root / "build" / "runs")
    stage_dir = Path(stage_dir or root / "build" / "book")
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    stage_dir.mkdir(parents=True)
    shutil.copy2(root / "_toc.yml", stage_dir / "_toc.yml")
    shutil.copytree(root / "book", stage_dir / "book")
    for page in (stage_dir / "book").rglob("*.md"):  # measurements: tables of their data files
        text = page.read_text()
        if pages.TABLE_MARKER.search(text):
            page.write_text(pages.fill_tables(text, root))
    (stage_dir / "_config.yml").write_text(staged_config(root, colab_ref))
    (stage_dir / "notebooks").mkdir()
    executed = runs_dir / profile / "notebooks"
    own = next(iter(load_reports([profile], runs_dir)), None)
    claims = own["claims"] if own else []
    missing = []
    targets: dict[tuple[str, str], str] = {}
    claim_files = {cc.chapter: cc for cc in discover_chapters(root)}
    tables = load_paper_tables(root)
    declared = declared_refs(claim_files.values(), tables)
    verdicts = {v["chapter"]: v for v in paper_verdicts(own, tables, declared)} if own else {}
    rehearsal = read_csv(root / REHEARSAL_CSV)
    for chapter in toc_chapters(root):
        ran = executed / f"{chapter}.ipynb"
        if not ran.exists():
            missing.append(ran.name)
            continue
        nb = for_the_page(nbformat.read(str(ran), as_version=4))
        pages.strip_noise(nb)
        mine = [c for c in claims if c["chapter"] == chapter]
        found = pages.claim_target(nb, chapter, [c["key"] for c in mine])
        targets.update({(chapter, k): t for k, t in found.items()})
        checks = {c.key: c.checks.get(profile) for c in claim_files[chapter].claims} if chapter in claim_files else {}
        entry = next((c for c in own["chapters"] if c["chapter"] == chapter), None) if own else None
        figure = figures.stage_paper_vs_ours(stage_dir / "notebooks", chapter, mine, checks, profile, tables)
        top = [
            pages.what_ran_markdown(entry, own) if own else "",
            pages.colab_budget_markdown(chapter, rehearsal),
            chapter_verdict_markdown(verdicts[chapter]).strip() if chapter in verdicts else "",
            pages.reproduces_markdown(chapter, mine, profile),
        ]
        pages.add_reproduces_cell(nb, "\n\n".join([t for t in top if t] + ([figure] if figure else [])))
        (stage_dir / "notebooks" / pages.csv_name(chapter)).write_text(pages.claims_csv(mine))
        nbformat.write(nb, str(stage_dir / "notebooks" / ran.name))
    if missing:
        raise FileNotFoundError(
            f"no executed notebook for {missing} in {executed}: run `python -m replib run --profile {profile}` first"
        )
    # plotly.js served locally (the book must render without internet)
    static = stage_dir / "book" / "_static"
    static.mkdir(exist_ok=True)
    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js" if plotly is not None else None
    if js is not None and js.exists():
        shutil.copy2(js, static / "plotly.min.js")
    else:
        (static / "plotly.min.js").write_text("/* plotly not installed at build time */\n")
    mathjax_js = static / mathjax.STATIC_PATH  # formulas render without internet (mathjax_path in _config.yml)
    mathjax_js.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(mathjax.fetch(), mathjax_js)
    reports = load_reports(report_profiles or [profile], runs_dir)
    (stage_dir / VALIDATION_PAGE).write_text(validation_markdown(reports, root, claim_links=targets))
    (stage_dir / VALIDATION_DIR).mkdir(exist_ok=True)
    for chapter in validation_pages(root):
        page = stage_dir / VALIDATION_DIR / f"{chapter}.md"
        page.write_text(paper_validation_markdown(chapter, reports, root, claim_links=targets))
    atlas.stage_page(stage_dir, runs_dir.parent / "atlas")  # the isotropy atlas (bookkit.book.atlas), when computed
    links = {n: f"../notebooks/{n}" for n in toc_chapters(root)}
    _fill(stage_dir / FRONT_PAGE, FRONT_PAGE_MARKER, pages.front_page_markdown(reports, links, tables, declared))
    _fill(stage_dir / RUNNING_PAGE, COLAB_COSTS_MARKER, pages.colab_costs_markdown(rehearsal, toc_chapters(root)))
    _fill(stage_dir / RUNNING_PAGE, MEASUREMENTS_MARKER, measurement_links(root))
    nights, unreadable = history.load_nights(history_dir) if history_dir else (history.nights_of_runs(reports), [])
    _fill(stage_dir / HISTORY_PAGE, HISTORY_MARKER, history.history_markdown(nights, tables, links, unreadable))
    return stage_dir


def measurement_links(root: Path) -> str:
    """A Markdown list linking every page of the ``_toc.yml`` part captioned :data:`MEASUREMENTS_CAPTION`, by its
    title (links relative to ``book/``)."""
    toc = load_yaml(Path(root) / "_toc.yml", what="table of contents").data
    part = next((p for p in toc.get("parts") or [] if p.get("caption") == MEASUREMENTS_CAPTION), {})
    lines = []
    for entry in part.get("chapters") or []:
        page = Path(root) / f"{entry['file']}.md"
        text = page.read_text() if page.exists() else ""  # a page written at staging: named by its file
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), Path(entry["file"]).name)
        lines.append(f"- [{title}](../{entry['file']}.md)")
    return "\n".join(lines)


def _fill(page: Path, marker: str, body: str) -> None:
    """Replace ``marker`` in a staged page by ``body`` (a page the book does not have is left alone)."""
    if page.exists():
        page.write_text(page.read_text().replace(marker, body))


def tree_digest(folder: Path) -> str:
    """sha256 over the relative paths and contents of every file under ``folder`` (the staged book)."""
    h = hashlib.sha256()
    folder = Path(folder)
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and "_build" not in p.relative_to(folder).parts):
        h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def build(
    profile: str,
    strict: bool = True,
    stage_dir: Path | None = None,
    runs_dir: Path | None = None,
    report_profiles: list[str] | None = None,
    root: Path | None = None,
    colab_ref: str | None = None,
    force: bool = False,
    history_dir: Path | None = None,
) -> Path:
    """Stage and build the HTML book; returns the folder holding ``index.html``.

    The book is staged beside ``stage_dir`` first; when the staged tree is byte-identical to the one the
    last successful build was made from (its digest is kept in ``stage_dir/.inputs-sha256``) and that
    build's HTML exists, nothing is rebuilt (``force`` rebuilds)."""
    root = Path(root or find_root())
    final = Path(stage_dir or root / "build" / "book")
    staging = final.with_name(final.name + ".staging")
    stage(profile, staging, runs_dir, report_profiles, root, colab_ref=colab_ref, history_dir=history_dir)
    digest = tree_digest(staging)
    stamp, html = final / ".inputs-sha256", final / "_build" / "html"
    if not force and stamp.exists() and stamp.read_text().strip() == digest and (html / "index.html").exists():
        shutil.rmtree(staging)
        print(f"book unchanged since its last build ({html}): not rebuilt")
        return html
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    exe = Path(sys.executable).parent / "jupyter-book"
    exe = str(exe) if exe.exists() else shutil.which("jupyter-book")
    if not exe:
        raise BookBuildError("jupyter-book is not installed: pip install 'jupyter-book<2' (or '.[book]')")
    cmd = [exe, "build", str(final), "--builder", "html", "--all"]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    proc = subprocess.run(cmd, cwd=final)
    if proc.returncode != 0:
        raise BookBuildError(
            f"jupyter-book build of {final} failed (exit {proc.returncode}): see its log above; "
            "`python -m replib book --no-strict` builds despite warnings"
        )
    stamp.write_text(digest + "\n")
    return html
