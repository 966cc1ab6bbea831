"""The rendered book in a real browser (headless Debian Chromium through Selenium and chromedriver).

Every page of ``_toc.yml`` must load without console errors, 404s or unexpected external requests;
every chapter must show its figures, its glued numbers and a correct Colab button; the validation page
must list every claim. The same checker must *fail* on copies of the built HTML that are broken on
purpose (a figure removed, a console error injected, a glued number replaced, ...).
Install the browser with ``apt-get install -y chromium chromium-driver`` (Debian; scripts/test.sh does it as root).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from pathlib import Path

import pytest

from bookkit.book import browser
from bookkit.book.expectations import claim_keys

ROOT = Path(__file__).resolve().parents[1]


def _unavailable_reason() -> str | None:
    """Why the browser check cannot run here, or None when it can."""
    chromium, chromedriver = browser.chromium_paths()
    if not chromium or not chromedriver:
        return (
            "Chromium is not installed; install it with "
            "`apt-get install -y chromium chromium-driver` (Debian; .ci/run does this)"
        )
    if browser.webdriver is None or browser.chrome_service is None:
        return "the Python package selenium is not installed (pip install selenium)"
    return None


REASON = _unavailable_reason()
if REASON and os.environ.get("REPLIB_REQUIRE_BROWSER"):  # CI installs Chromium: a missing browser is a failure
    raise RuntimeError(f"REPLIB_REQUIRE_BROWSER is set but the browser test cannot run: {REASON}")
_skip = pytest.mark.skipif(REASON is not None, reason=str(REASON))


def needs_browser(fn):
    """Browser tests: skipped without Chromium; slow (each loads pages in a fresh headless browser)."""
    return pytest.mark.slow(_skip(fn))


@pytest.fixture(scope="module")
def driver():
    if REASON:
        pytest.skip(REASON)
    d = browser.make_driver()
    yield d
    d.quit()


def test_toc_pages_cover_every_chapter():
    """Every chapter with a claims file is a page of _toc.yml, and so is its own validation page, which must
    list every key of its claims file (no browser needed)."""
    pages = browser.book_pages(ROOT)
    keys = claim_keys(ROOT / "notebooks")
    chapters = {p.chapter for p in pages if p.chapter}
    assert chapters == set(keys), chapters
    assert any(p.source == "book/validation" for p in pages)
    split = {p.source.rsplit("/", 1)[-1]: p.claim_keys for p in pages if p.source.startswith("book/validation/")}
    assert split == keys
    assert any(p.source == "book/history" for p in pages)


def test_colab_url_from_config():
    url = browser.colab_url(ROOT / "_config.yml", "isoscore")
    assert re.fullmatch(
        r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/[\w./-]+/"
        r"notebooks/isoscore\.ipynb",
        url,
    ), url


@needs_browser
def test_every_page_of_the_book(smoke_book, driver):
    shots = ROOT / "build" / "screenshots"
    if shots.exists():
        shutil.rmtree(shots)
    pages = browser.book_pages(ROOT, smoke_book.executed)
    problems = browser.check_book(smoke_book.html, root=ROOT, pages=pages, screenshot_dir=shots, driver=driver)
    assert not problems, "the rendered book has problems:\n" + "\n".join(problems)
    assert len(list(shots.glob("*.png"))) == len(pages)
    for p in pages:
        if p.chapter:
            assert p.glue, f"chapter {p.chapter} glues no number into its prose"


@needs_browser
@pytest.mark.probe(
    "the temporary files of a run or a test: a browser's profile (~280 MB), the tiny models' folder,"
    " pytest's temporary folders",
    "removed when the driver quits, when the process that made the folder exits (not a forked "
    'child), kept only for failed tests (`tmp_path_retention_policy = "failed"`): CI shares its disk'
    " with /tmp, and the leaked profiles once filled it",
)
def test_the_browser_profile_is_removed_on_quit():
    """Each driver writes a ~280 MB profile; left in /tmp by every run, they once filled CI's disk."""
    d = browser.make_driver()
    profile = d.replib_profile_dir
    d.get("about:blank")
    assert profile.is_dir() and any(profile.iterdir())
    d.quit()
    assert not profile.exists()


# ------------------------------------------------------------------ the checker must catch breakage
@pytest.fixture
def broken(smoke_book, tmp_path):
    """A writable copy of the built HTML, and a helper to check one page of it."""
    html = tmp_path / "html"
    shutil.copytree(smoke_book.html, html)
    pages = {p.html: p for p in browser.book_pages(ROOT, smoke_book.executed)}

    def check(page_html: str, drv) -> list[str]:
        with browser.BookServer(html) as server:
            return browser.check_page(drv, server, pages[page_html], root=ROOT)

    chapter = next(p for p in pages.values() if p.chapter and p.figure_cells and p.glue)
    return html, check, chapter


def _edit(path: Path, old_pattern: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    edited, n = re.subn(old_pattern, new, text, count=count, flags=re.S)
    assert n, f"pattern {old_pattern!r} not in {path}"
    path.write_text(edited)


@needs_browser
def test_unbroken_copy_passes(broken, driver):
    html, check, chapter = broken
    assert check(chapter.html, driver) == []


@needs_browser
def test_detects_removed_figure(broken, driver):
    html, check, chapter = broken
    # every image: the first one on a chapter page is now the "paper vs ours" figure under the title
    _edit(html / chapter.html, r'<img[^>]*src="\.\./_images/[^"]+"[^>]*>', "", count=0)
    problems = check(chapter.html, driver)
    assert any("shows no figure" in p for p in problems), problems
    assert any("no 'paper vs ours' figure" in p for p in problems), problems


@needs_browser
def test_detects_missing_image_file(broken, driver):
    html, check, chapter = broken
    src = re.search(r'src="\.\./(_images/[^"]+)"', (html / chapter.html).read_text()).group(1)
    (html / src).unlink()
    problems = check(chapter.html, driver)
    assert any("404" in p for p in problems) and any("image not loaded" in p for p in problems), problems


@needs_browser
def test_detects_console_error(broken, driver):
    html, check, _ = broken
    _edit(html / "book" / "intro.html", r"</body>", '<script>console.error("injected failure")</script></body>')
    problems = check("book/intro.html", driver)
    assert any("console error" in p and "injected failure" in p for p in problems), problems


@needs_browser
def test_detects_uncaught_exception_and_missing_asset(broken, driver):
    html, check, _ = broken
    _edit(
        html / "book" / "running.html",
        r"</body>",
        '<script>undefined_function_xyz()</script><script src="../_static/not-there.js"></script></body>',
    )
    problems = check("book/running.html", driver)
    assert any("undefined_function_xyz" in p for p in problems), problems
    assert any("404" in p and "not-there.js" in p for p in problems), problems


@needs_browser
def test_detects_external_request(broken, driver):
    html, check, _ = broken
    _edit(html / "book" / "intro.html", r"</head>", '<script src="https://cdn.example.org/lib.js"></script></head>')
    problems = check("book/intro.html", driver)
    assert any("external request" in p and "cdn.example.org" in p for p in problems), problems


@needs_browser
def test_detects_replaced_glued_number(broken, driver):
    html, check, chapter = broken
    _edit(html / chapter.html, r'(<span class="pasted-text">)([^<]*)(</span>)', r"\g<1>12345.678\g<3>")
    problems = check(chapter.html, driver)
    assert any("glued" in p and "12345.678" in p for p in problems), problems


@needs_browser
def test_detects_unrendered_glue_role(broken, driver):
    html, check, chapter = broken
    _edit(html / chapter.html, r'<span class="pasted-text">[^<]*</span>', "{glue:text}`some_key:.3f`")
    problems = check(chapter.html, driver)
    assert any("literal '{glue'" in p for p in problems), problems


@needs_browser
def test_detects_wrong_colab_link(broken, driver):
    html, check, chapter = broken
    _edit(
        html / chapter.html, r"(colab\.research\.google\.com/github/[^\"]*?/blob/)[^/]+/", r"\1wrong-branch/", count=0
    )
    problems = check(chapter.html, driver)
    assert any("Colab button" in p for p in problems), problems


@needs_browser
def test_detects_claim_missing_from_validation_page(broken, driver):
    html, check, _ = broken
    chapter, keys = next(iter(claim_keys(ROOT / "notebooks").items()))
    page = f"book/validation/{chapter}.html"
    _edit(html / page, re.escape(keys[0]) + r"(?![\w.-])", "REMOVED", count=0)
    problems = check(page, driver)
    assert any("not listed" in p and keys[0] in p for p in problems), problems


@needs_browser
def test_detects_a_table_wider_than_the_text_column(broken, driver):
    html, check, chapter = broken
    wide = "<table><tr>" + "".join(f"<th>column_{i}_" + "x" * 30 + "</th>" for i in range(12)) + "</tr></table>"
    style = "<style>table.forced td, table.forced th { overflow-wrap: normal !important; }</style>"
    _edit(
        html / "book" / "running.html",
        r"(<article[^>]*>)",
        r"\1" + style + wide.replace("<table>", '<table class="forced">'),
    )
    problems = check("book/running.html", driver)
    assert any("px wide in a" in p and "column_0_" in p for p in problems), problems
    # a wide table folded in a dropdown is unfolded to be measured
    _edit(
        html / chapter.html,
        r"(<article[^>]*>)",
        r"\1<details><summary>more</summary>"
        + style
        + wide.replace("<table>", '<table class="forced">')
        + "</details>",
    )
    problems = check(chapter.html, driver)
    assert any("px wide in a" in p and "column_0_" in p for p in problems), problems


@needs_browser
def test_detects_a_figure_without_a_legend(broken, driver):
    """A figure whose PNG says it has no legend, and one that carries no verdict at all, are both reported."""
    from replib.plotting import LEGEND_KEY, png_text

    html, check, chapter = broken
    page = (html / chapter.html).read_text()
    srcs = re.findall(r'<img[^>]*src="\.\./(_images/[^"]+\.png)"', page)
    stamped = [s for s in srcs if LEGEND_KEY in png_text((html / s).read_bytes())]
    assert stamped, "no figure of the chapter carries its legend verdict"
    data = (html / stamped[0]).read_bytes()
    verdict = png_text(data)[LEGEND_KEY].encode("latin-1")
    (html / stamped[0]).write_bytes(_retext(data, LEGEND_KEY.encode(), b"missing: axes 1: 2 series and no legend"))
    problems = check(chapter.html, driver)
    assert any("has no legend: missing: axes 1: 2 series" in p for p in problems), problems
    assert verdict.startswith(b"ok")
    (html / stamped[0]).write_bytes(_retext(data, LEGEND_KEY.encode(), None))
    problems = check(chapter.html, driver)
    assert any("carries no legend verdict" in p for p in problems), problems


def _retext(png: bytes, key: bytes, text: bytes | None) -> bytes:
    """``png`` with the tEXt chunk ``key`` replaced by ``text`` (None: removed)."""
    import struct
    import zlib

    out, i = [png[:8]], 8
    while i < len(png):
        n, kind = struct.unpack(">I4s", png[i : i + 8])
        chunk, body = png[i : i + 12 + n], png[i + 8 : i + 8 + n]
        i += 12 + n
        if kind == b"tEXt" and body.split(b"\0", 1)[0] == key:
            if text is None:
                continue
            body = key + b"\0" + text
            chunk = struct.pack(">I4s", len(body), kind) + body + struct.pack(">I", zlib.crc32(kind + body))
        out.append(chunk)
    return b"".join(out)


@needs_browser
def test_detects_a_plotly_figure_without_a_legend(tmp_path, driver):
    import plotly
    import plotly.graph_objects as go

    static = tmp_path / "_static"
    static.mkdir()
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static / "plotly.min.js")

    def page_with(fig) -> list[str]:
        body = fig.to_html(full_html=False, include_plotlyjs=False)
        (tmp_path / "plot.html").write_text(
            '<html><head><script src="_static/plotly.min.js"></script></head><body>'
            f'<div class="cell"><div class="cell_output">{body}</div></div></body></html>'
        )
        with browser.BookServer(tmp_path) as server:
            return browser.check_page(
                driver, server, browser.Page(source="plot", html="plot.html"), root=ROOT, settle=1.0
            )

    two = [go.Scatter(x=[0, 1], y=[1, 0], name="a"), go.Scatter(x=[0, 1], y=[0, 1], name="b")]
    assert page_with(go.Figure(two)) == []  # plotly shows a legend for two traces
    problems = page_with(go.Figure(two, layout={"showlegend": False}))
    assert any("plotly figure #1 has no legend (2 traces" in p for p in problems), problems
    assert page_with(go.Figure(two[:1], layout={"title": {"text": "one trace"}})) == []
    problems = page_with(go.Figure(two[:1]))
    assert any("plotly figure #1 has no legend (1 traces, title ''" in p for p in problems), problems


@needs_browser
def test_plotly_figure_must_be_drawn(tmp_path, driver):
    """A plotly output is drawn (svg inside div.plotly-graph-div) only when the local plotly.js loads."""
    import plotly
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Scatter3d(x=[0, 1, 2], y=[1, 0, 2], z=[2, 1, 0], mode="markers"), layout={"title": {"text": "3-D"}}
    )
    body = fig.to_html(full_html=False, include_plotlyjs=False)  # one trace under a title: its legend is fine
    static = tmp_path / "_static"
    static.mkdir()
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", static / "plotly.min.js")
    page_html = (
        '<html><head><script src="_static/plotly.min.js"></script></head><body>'
        f'<div class="cell"><div class="cell_output">{body}</div></div></body></html>'
    )
    (tmp_path / "plot.html").write_text(page_html)
    page = browser.Page(source="plot", html="plot.html")
    with browser.BookServer(tmp_path) as server:
        assert browser.check_page(driver, server, page, root=ROOT, settle=1.0) == []
    (static / "plotly.min.js").unlink()
    with browser.BookServer(tmp_path) as server:
        problems = browser.check_page(driver, server, page, root=ROOT, settle=1.0)
    assert any("plotly figure #1 has no svg" in p for p in problems), problems
    assert any("404" in p for p in problems), problems


# ------------------------------------------------------------------ formulas, noise, report tables (issue 17)
@needs_browser
def test_formulas_render_offline(broken, driver):
    """Every page with math is typeset by the MathJax served with the book; without it, raw TeX is caught."""
    html, check, _ = broken
    pages_with_math = [p for p in browser.book_pages(ROOT) if 'class="math' in (html / p.html).read_text()]
    assert pages_with_math, "no page of the book has a formula (the check below would test nothing)"
    page = pages_with_math[0].html
    assert not any("raw TeX" in p or "MathJax" in p for p in check(page, driver))
    (html / "_static" / "mathjax" / "tex-svg-full.js").write_text("/* MathJax removed */\n")
    problems = check(page, driver)
    assert any("raw TeX" in p for p in problems), problems


@needs_browser
def test_detects_progress_bar_noise(broken, driver):
    html, check, chapter = broken
    _edit(
        html / chapter.html,
        r'(<div class="cell_output docutils container">)',
        r'\1<div class="output stream highlight-myst-ansi notranslate"><div class="highlight"><pre>'
        r"embed: 100%|##########| 3/3 [00:01&lt;00:00, 2.10it/s]</pre></div></div>",
    )
    problems = check(chapter.html, driver)
    assert any("progress-bar/warning noise" in p for p in problems), problems


@needs_browser
def test_detects_stderr_output(broken, driver):
    html, check, chapter = broken
    _edit(
        html / chapter.html,
        r'(<div class="cell_output docutils container">)',
        r'\1<div class="output stderr highlight-myst-ansi notranslate"><div class="highlight"><pre>'
        r"something on stderr</pre></div></div>",
    )
    problems = check(chapter.html, driver)
    assert any("stderr output" in p for p in problems), problems


@needs_browser
def test_detects_wrong_reproduction_table(broken, driver):
    html, check, chapter = broken
    assert chapter.claim_badges, "the chapter pages expect the report's reproduction table"
    _edit(html / chapter.html, r"(<table[^>]*replib-reproduces.*?<tbody>\s*)<tr.*?</tr>", r"\1")
    problems = check(chapter.html, driver)
    assert any("what this chapter reproduces" in p for p in problems), problems


@needs_browser
def test_detects_wrong_front_page_counts_or_a_missing_verdict(broken, driver):
    html, check, _ = broken
    intro = html / "book" / "intro.html"
    original = intro.read_text()
    _edit(
        intro, r"(<table[^>]*replib-summary.*?<tbody>.*?</td>\s*<td[^>]*>.*?</td>\s*<td[^>]*>(?:<p>)?)\d+", r"\g<1>987"
    )
    problems = check("book/intro.html", driver)
    assert any("front page should show a verdict and count" in p for p in problems), problems
    intro.write_text(original)
    verdict = (
        r"(<table[^>]*replib-summary.*?<tbody>.*?</td>\s*<td[^>]*>(?:<p>)?(?:<span class=\"replib-icon[^>]*></span>)?)"
    )
    _edit(intro, verdict + r"[^<]+", r"\g<1>fine")  # the verdict's label replaced (its icon kept)
    problems = check("book/intro.html", driver)
    assert any("front page should show a verdict and count" in p for p in problems), problems


@needs_browser
def test_detects_a_chapter_header_without_its_models_or_figure(broken, smoke_book, driver):
    html, check, _ = broken
    pages = browser.book_pages(ROOT, smoke_book.executed)
    chapter = next(p for p in pages if p.chapter and p.ran_models and p.paper_vs_ours)
    page = html / chapter.html
    _edit(page, re.escape(chapter.ran_models[0]), "some-other-model", count=0)
    _edit(page, r'<img[^>]*src="[^"]*paper-vs-ours[^"]*"[^>]*>', "", count=0)  # every one (a figure per table)
    problems = check(chapter.html, driver)
    assert any("does not name the models" in p and chapter.ran_models[0] in p for p in problems), problems
    assert any("no 'paper vs ours' figure" in p for p in problems), problems


@needs_browser
def test_detects_figure_without_alt_text_or_caption(broken, driver):
    html, check, chapter = broken
    page = html / chapter.html
    _edit(page, r'(<img[^>]*?)\salt="[^"]*"', r"\1", count=0)  # every alt removed
    _edit(page, r"<figcaption>.*?</figcaption>", "", count=0)
    problems = check(chapter.html, driver)
    assert any("has no alt text" in p for p in problems), problems
    assert any("has no caption" in p for p in problems), problems


def test_figure_text_problems_rejects_file_names_as_alt_text():
    cells = [
        {"imgs": [{"src": "../_images/a.png", "ok": True, "alt": "a.png", "caption": True}], "plotmeta": []},
        {"imgs": [{"src": "../_images/b.png", "ok": True, "alt": "Bars of scores", "caption": True}], "plotmeta": []},
        {"imgs": [], "plotmeta": [{"label": "", "caption": False}]},
    ]
    problems = browser._figure_text_problems("x.html", cells)
    assert any("cell #1" in p and "alt" in p for p in problems)
    assert not any("cell #2" in p for p in problems)
    assert any("cell #3" in p and "accessible name" in p for p in problems)
    assert any("cell #3" in p and "caption" in p for p in problems)


def test_show_plotly_caption_and_accessible_name(monkeypatch):
    import plotly.graph_objects as go

    from replib import plotting

    shown = []
    monkeypatch.setattr(plotting, "display", lambda obj: shown.append(obj.data))
    fig = go.Figure(go.Scatter3d(x=[0, 1], y=[0, 1], z=[0, 1]), layout={"title": {"text": "t <3"}})
    plotting.show_plotly(fig, caption="A 3-D view & more", alt="rotatable cloud")
    html = shown[-1]
    assert '<div role="img" aria-label="rotatable cloud">' in html
    assert "<figcaption>A 3-D view &amp; more</figcaption>" in html and html.count("<figure") == 1
    plotting.show_plotly(fig)
    assert 'aria-label="t &lt;3"' in shown[-1] and "<figure" not in shown[-1]


# ------------------------------------------------------------------ tables, page weight, deferred plotly (issue 42)
def _page(tmp_path, body: str, head: str = "", name: str = "page.html") -> str:
    shutil.copy2(ROOT / "book" / "_static" / "replib.css", tmp_path / "replib.css")
    (tmp_path / name).write_text(
        f'<html><head><meta charset="utf-8"><link rel="stylesheet" href="replib.css">{head}</head>'
        f'<body><main><article class="bd-article" style="width: 420px">{body}</article></main></body></html>'
    )
    return name


@needs_browser
def test_numbers_stay_whole_and_a_wide_table_scrolls(tmp_path, driver):
    """A data frame wider than the column, drawn by the book's renderer with the book's CSS: no number is split
    over lines and the table scrolls in its own box; the CSS the book had before (overflow-wrap: anywhere on
    every cell) splits them, and the check says which."""
    import pandas as pd

    from replib.tables import table_html

    df = pd.DataFrame({f"s_inter_centered_{i}": [107008 + i, 0.25736912345678901 * i, None] for i in range(20)})
    name = _page(tmp_path, table_html(df))
    page = browser.Page(source="page", html=name)
    with browser.BookServer(tmp_path) as server:
        assert browser.check_page(driver, server, page, root=ROOT) == []
    old = (  # the rules the book's CSS had: tables fit the column by breaking their cells anywhere
        "<style>article.bd-article table { max-width: 100%; } article.bd-article table td, article.bd-article "
        "table th { overflow-wrap: anywhere; white-space: normal !important; }</style>"
    )
    name = _page(tmp_path, table_html(df).replace('class="replib-table"', ""), head=old)
    with browser.BookServer(tmp_path) as server:
        problems = browser.check_page(driver, server, page, root=ROOT)
    assert any("splits '107008'" in p for p in problems), problems


@needs_browser
def test_front_page_weight_is_measured(tmp_path, driver):
    """The front page's bytes (the document and every resource it loads, gzip-compressed as GitHub Pages sends
    them) are measured, and over 2 MB is a problem."""
    (tmp_path / "big.js").write_bytes(b"var x = '" + base64.b64encode(os.urandom(2_400_000)) + b"';\n")
    front = browser.Page(source="book/intro", html="page.html", summary={})
    _page(tmp_path, "<p>front</p>", head='<script src="big.js"></script>')
    with browser.BookServer(tmp_path) as server:
        problems = browser.check_page(driver, server, front, root=ROOT)
        assert any(
            re.search(r"the front page loads 2\.\d MB \(gzip; 3\.\d MB as files\), over 2 MB", p) for p in problems
        ), problems
    _page(tmp_path, "<p>front</p>")
    with browser.BookServer(tmp_path) as server:
        assert browser.check_page(driver, server, front, root=ROOT) == []
        raw, sent = browser.page_bytes(driver, server)
        assert 0 < sent < raw < 100_000


@needs_browser
def test_show_plotly_draws_after_a_deferred_plotly_js(tmp_path, driver, monkeypatch):
    """The book adds plotly.js with defer to the pages that need it: show_plotly's figure waits for it."""
    import plotly
    import plotly.graph_objects as go

    from replib import plotting

    shown = []
    monkeypatch.setattr(plotting, "display", lambda obj: shown.append(obj.data))
    two = [go.Scatter(x=[0, 1], y=[1, 0], name="a"), go.Scatter(x=[0, 1], y=[0, 1], name="b")]
    plotting.show_plotly(go.Figure(two), caption="two lines")
    (tmp_path / "_static").mkdir()
    shutil.copy2(
        Path(plotly.__file__).parent / "package_data" / "plotly.min.js", tmp_path / "_static" / "plotly.min.js"
    )
    name = _page(
        tmp_path,
        f'<div class="cell"><div class="cell_output">{shown[-1]}</div></div>',
        head='<script defer src="_static/plotly.min.js"></script>',
    )
    with browser.BookServer(tmp_path) as server:
        assert browser.check_page(driver, server, browser.Page(source="p", html=name), root=ROOT, settle=1.0) == []
