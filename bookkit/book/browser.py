"""Check the rendered book in a real browser (headless Chromium driven by Selenium).

The built HTML (``build/book/_build/html``) is served on loopback and every page named in ``_toc.yml``
is loaded in Debian's ``chromium``, in a 1280 px wide window (:data:`VIEWPORT_WIDTH`). A page passes when

- the browser console shows no error and the server answered no request with an error (a missing local
  asset is an error);
- no request leaves the machine (MathJax and plotly.js are served with the book); DNS for every host but
  loopback is disabled, so nothing external is fetched in any case;
- no table of the text column is wider than the column unless a box scrolls it sideways, and no table cell
  breaks its one word or number over lines, folded content included (:data:`bookkit.book.browser_js.LAYOUT`);
- the front page loads at most :data:`FRONT_PAGE_BYTES` (:func:`page_bytes`);
- every figure says what it shows: a figure's PNG carries the verdict of
  :func:`replib.plotting.legend_problems` (stamped when the notebook showed it, or by
  :func:`replib.plotting.save_figure`), which must be ``ok``; a plotly figure shows a legend or draws one trace
  under a title (:func:`_legend_problems`);
- on a chapter page: every code cell that calls a plotting API shows a figure (a loaded ``img`` or a
  ``div.plotly-graph-div`` with an ``svg`` inside), every plotly figure of the executed notebook is
  drawn, every ``{glue:text}`` role of the source notebook shows the value the executed notebook
  recorded, formatted as MyST-NB formats it, in order, and the Colab button opens
  ``<colab_url>/github/<org>/<repo>/blob/<branch>/notebooks/<chapter>.ipynb`` of ``_config.yml``; every
  figure has alt text and a caption (:func:`_figure_text_problems`); under the title, the "What ran here"
  line names the report's models and the "paper vs ours" figure shows (:func:`_header_problems`);
- everywhere: no literal ``{glue`` text and no docutils error box (``system-message``);
- on the front page: each paper's verdict and its claims counted per status, as in the report;
- on each paper's validation page (``book/validation/<chapter>``): every key of its claims file is listed.

``check_book`` returns a list of problems (empty: the book is fine) so that tests can assert both that
the real book passes and that a broken copy fails. A screenshot of each page is saved.
"""

from __future__ import annotations

import base64
import functools
import gzip
import http.server
import json
import re
import shutil
import socketserver
import tempfile
import threading
import time
import unicodedata
from pathlib import Path
from urllib.parse import unquote

from replib._optional import optional_import, require
from replib.plotting import LEGEND_KEY, png_text

from ..project import find_root
from . import browser_js
from .book import COLAB_BRANCH
from .expectations import Page, book_pages, colab_url
from .pages import BADGES, NOISE, csv_name

# selenium is optional (require() says so when the browser check runs without it)
webdriver = optional_import("selenium.webdriver")
chrome_service = optional_import("selenium.webdriver.chrome.service")

#: the width of the browser window: the book is measured at 1280 px (no table wider than the text column)
VIEWPORT_WIDTH = 1280
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    f"--window-size={VIEWPORT_WIDTH},2000",
    # no DNS for anything but loopback: an external URL can never be fetched by the test
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)

#: the most the front page may load: the document and every resource it fetches, as a server that compresses
#: them with gzip (GitHub Pages) sends them
FRONT_PAGE_BYTES = 2_000_000
#: what a reader should never see where a value belongs: a missing value printed raw (NaN, None, pandas' <NA>)
#: and a float printed to all its digits (13 or more after the point). "None" followed by a word is English.
UNREADABLE = re.compile(r"(?<![\w.<])(?:NaN|nan|<NA>|None(?!\s+[A-Za-z]))(?![\w.>])|\d\.\d{13,}")


def chromium_paths() -> tuple[str | None, str | None]:
    """(chromium, chromedriver) executables, or None where missing."""
    return (
        shutil.which("chromium") or shutil.which("chromium-browser"),
        shutil.which("chromedriver") or ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None),
    )


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def log_request(self, code="-", size="-"):
        self.server.requests.append((self.path, int(code) if isinstance(code, int) else 0))


class BookServer(socketserver.ThreadingTCPServer):
    """Serve a folder on ``127.0.0.1`` (random port) in a thread; records every (path, status)."""

    daemon_threads = True

    def __init__(self, root: Path):
        self.root, self.requests = Path(root), []
        super().__init__(("127.0.0.1", 0), functools.partial(_Handler, directory=str(self.root)))
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


def make_driver():
    """Headless Chromium through /usr/bin/chromedriver with a fresh profile and console + network logs."""
    wd = require(webdriver, "selenium", "the browser check of the book")
    browser, driver = chromium_paths()
    opts = wd.ChromeOptions()
    opts.binary_location = browser
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    # a profile of our own, removed when the driver quits (a profile is ~280 MB: left behind, they fill /tmp)
    own = tempfile.TemporaryDirectory(prefix="replib-chromium-", ignore_cleanup_errors=True)
    opts.add_argument(f"--user-data-dir={own.name}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        drv = wd.Chrome(service=chrome_service.Service(executable_path=driver), options=opts)
    except BaseException:
        own.cleanup()
        raise
    quit_browser = drv.quit

    def quit_and_remove_profile():
        try:
            quit_browser()
        finally:
            own.cleanup()

    drv.quit = quit_and_remove_profile
    drv.replib_profile_dir = Path(own.name)
    return drv


# ---------------------------------------------------------------- what the book should contain
#: TeX delimiters that MathJax replaces when it runs; left in the prose they mean formulas did not render
RAW_TEX = re.compile(r"\\\(|\\\[|\$\$")


def _network_requests(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        try:
            msg = json.loads(entry["message"])["message"]
        except (KeyError, ValueError):
            continue
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def _load(driver, server: BookServer, page: Page, settle: float) -> dict:
    """Load ``page`` (dropping the logs of earlier pages), wait for it and for MathJax, return its state."""
    driver.get_log("browser"), driver.get_log("performance")  # drop entries of earlier pages
    driver.get(server.url + page.html)
    deadline = time.monotonic() + 10
    while driver.execute_script("return document.readyState") != "complete" and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(settle)
    try:  # let MathJax finish typesetting (it loads asynchronously)
        driver.set_script_timeout(20)
        driver.execute_async_script(browser_js.MATHJAX_DONE)
    except Exception:  # no MathJax on the page, or it did not settle: the raw-TeX check below says which
        pass
    return driver.execute_script(browser_js.STATE)


def _traffic_problems(driver, server: BookServer, where: str, n_requests: int) -> list[str]:
    """Console errors, requests leaving the machine, and requests the server failed."""
    problems = []
    for e in driver.get_log("browser"):
        if e.get("level") != "SEVERE":
            continue
        m = re.search(r"(https?://\S+)", e.get("message", ""))
        if m and m.group(1) == server.url + "favicon.ico":
            continue  # the browser asks for /favicon.ico by itself; the book declares none (not a page error)
        problems.append(f"{where}: console error: {e['message'][:300]}")
    for url in _network_requests(driver):
        # chrome:// and data: URLs are the browser's own; only http(s)/ws(s) leave the machine
        if url.startswith(("http:", "https:", "ws:", "wss:")) and not url.startswith(server.url):
            problems.append(f"{where}: external request not on the allow-list: {url}")
    for path, code in server.requests[n_requests:]:
        if code >= 400 and path != "/favicon.ico":
            problems.append(f"{where}: server answered {code} for {path}")
    return problems


def _content_problems(page: Page, state: dict) -> list[str]:
    """Unrendered roles, docutils errors, raw TeX, stderr and progress-bar noise, the front page's counts,
    images and plots not drawn."""
    where = page.html
    problems = []
    if "{glue" in state["text"]:
        problems.append(f"{where}: literal '{{glue' in the page (a glue role was not rendered)")
    if state["sysmsg"]:
        problems.append(f"{where}: {state['sysmsg']} docutils error/problematic node(s) on the page")
    raw = RAW_TEX.findall(state["prose"])
    if raw:
        i = RAW_TEX.search(state["prose"]).start()
        problems.append(
            f"{where}: {len(raw)} raw TeX delimiter(s) in the page text (formulas not rendered), "
            f"e.g. {state['prose'][max(0, i - 40) : i + 60]!r}"
        )
    if state["math"] and not state["mjx"]:
        problems.append(f"{where}: {state['math']} formula(s) on the page, none typeset by MathJax")
    if state["stderr"]:
        problems.append(f"{where}: {state['stderr']} stderr output(s) shown (warnings or progress bars)")
    for j, text in enumerate(state["outputs"]):
        m = NOISE.search(text)
        if m:
            problems.append(f"{where}: output #{j + 1} shows progress-bar/warning noise: {m.group(0)[:80]!r}")
    if state["viewport"] != VIEWPORT_WIDTH:
        problems.append(f"{where}: measured in a {state['viewport']} px window, not {VIEWPORT_WIDTH} px")
    if page.summary is not None:
        problems += _check_summary(page, state)
    problems += unreadable_values(where, [state["prose"], *state["outputs"]])
    problems += [f"{where}: image not loaded: {img['src']}" for img in state["images"] if not img["ok"]]
    for i, drawn in enumerate(state["plotly"]):
        if not drawn:
            problems.append(f"{where}: plotly figure #{i + 1} has no svg (not drawn)")
    return problems


def unreadable_values(where: str, texts: list[str]) -> list[str]:
    """Each text (the page's prose, its cells' outputs) showing a raw missing value or a 17-digit float, once per
    kind of value, with its context."""
    problems, seen = [], set()
    for text in texts:
        for m in UNREADABLE.finditer(text):
            kind = "a long float" if m.group(0)[0].isdigit() else m.group(0)
            if kind not in seen:
                seen.add(kind)
                context = " ".join(text[max(0, m.start() - 50) : m.end() + 30].split())
                problems.append(f"{where}: shows {kind} where a value belongs: {context!r}")
    return problems


def check_page(
    driver,
    server: BookServer,
    page: Page,
    *,
    root: Path | None = None,
    screenshot_dir: Path | None = None,
    settle: float = 0.5,
) -> list[str]:
    """Load one page and return its problems (empty list: the page is fine)."""
    root = Path(root or find_root())
    where = page.html
    if not (server.root / page.html).exists():
        return [f"{where}: not built (page of _toc.yml missing from the HTML)"]
    n_requests = len(server.requests)
    state = _load(driver, server, page, settle)
    problems = _traffic_problems(driver, server, where, n_requests)
    problems += _content_problems(page, state)
    problems += _legend_problems(page, state, server.root)
    if page.summary is not None:  # the front page: what a reader's first visit downloads
        raw, sent = page_bytes(driver, server)
        if sent > FRONT_PAGE_BYTES:
            problems.append(
                f"{where}: the front page loads {sent / 1e6:.1f} MB (gzip; {raw / 1e6:.1f} MB as files), "
                f"over {FRONT_PAGE_BYTES / 1e6:.0f} MB"
            )
    if page.chapter:  # the staged _config.yml (its branch may be the Colab ref), else the project's
        staged = Path(server.root).parents[1] / "_config.yml" if len(Path(server.root).parents) > 1 else None
        problems += _check_chapter(page, state, root, staged if staged and staged.exists() else None)
    if page.claim_keys is not None:  # a paper's validation page lists every claim of its chapter
        missing = [
            k for k in page.claim_keys if not re.search(r"(?<![\w.-])" + re.escape(k) + r"(?![\w.-])", state["text"])
        ]
        if missing:
            problems.append(f"{where}: claims of {page.source.rsplit('/', 1)[-1]} not listed: {missing}")
    if screenshot_dir is not None:
        screenshot_dir.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(screenshot_dir / (page.html.replace("/", "__").replace(".html", "") + ".png")))
    problems += _overflow_problems(driver, where)  # after the screenshot: it unfolds folded content meanwhile
    return problems


def _label(badge: str) -> str:
    """A badge's text label, without its mark (the page draws the mark as an icon, never as text)."""
    return badge.split(" ", 1)[-1]


def _words(text: str) -> str:
    """``text`` as a reader sees it: without the marks the page draws as icons (symbols and their variation
    selectors), whitespace collapsed, apostrophes as Sphinx's smart quotes print them."""
    text = "".join(c for c in text if unicodedata.category(c) != "So" and c != "\ufe0f")
    return " ".join(text.replace("\u2019", "'").split())


def _check_summary(page: Page, state: dict) -> list[str]:
    """The front page's table: one row per chapter with a verdict and the report's counts per status (its
    apostrophes as Sphinx's smart quotes print them)."""
    rows = {r[0]: r for r in state["tables"]["replib-summary"] if r}
    problems = []
    for title, counts in page.summary.items():
        got = rows.get(title)
        if got is None or _words(got[-1]) != _words(counts) or not any(_label(v) in got[1] for v in BADGES.values()):
            problems.append(
                f"{page.html}: front page should show a verdict and count {counts!r} for {title!r}; page shows {got}"
            )
    return problems


def _overflow_problems(driver, where: str) -> list[str]:
    """Every table of the text column wider than the column with no box that scrolls it sideways, and every
    table cell whose one word or number is broken over lines."""
    layout = driver.execute_script(browser_js.LAYOUT)
    wide = [
        f"{where}: table #{t['index']} ({t['head']!r}) is {t['width']} px wide in a {t['column']} px text column"
        for t in layout["wide"]
    ]
    return wide + [
        f"{where}: table #{c['table']} splits {c['text']!r} over {c['lines']} lines" for c in layout["split"]
    ]


def page_bytes(driver, server: BookServer) -> tuple[int, int]:
    """The bytes the page open in ``driver`` loaded (the document and every resource it fetched): as files,
    and compressed with gzip as a web server that compresses them (GitHub Pages) sends them."""
    raw = sent = 0
    for f in driver.execute_script(browser_js.PAGE_FILES):
        raw += int(f["size"])
        local = server.root / unquote(f["url"][len(server.url) :].split("?")[0].split("#")[0])
        if f["url"].startswith(server.url) and local.is_file():
            sent += len(gzip.compress(local.read_bytes(), compresslevel=6))
        else:
            sent += int(f["size"])
    return raw, sent


def _legend_verdict(html_root: Path, page_html: str, src: str) -> str | None:
    """The legend verdict a figure's PNG carries (None: none, or not a PNG served with the book)."""
    if src.startswith("data:image/png;base64,"):
        data = base64.b64decode(src.split(",", 1)[1])
    else:
        path = (Path(html_root) / page_html).parent / unquote(src.split("?")[0].split("#")[0])
        if not path.is_file():
            return None
        data = path.read_bytes()
    try:
        return png_text(data).get(LEGEND_KEY)
    except ValueError:
        return None


def _legend_problems(page: Page, state: dict, html_root: Path) -> list[str]:
    """Every figure says what it shows: a PNG carries the verdict of :func:`replib.plotting.legend_problems`
    (stamped when the notebook showed it, or by :func:`replib.plotting.save_figure`), which must be ``ok``; a
    plotly figure shows a legend, or draws a single trace under a title."""
    where, problems = page.html, []
    for src in dict.fromkeys(s for s in state["figures"] if s):
        verdict = _legend_verdict(html_root, page.html, src)
        if verdict is None:
            problems.append(f"{where}: figure {src} carries no legend verdict (not drawn through replib.plotting)")
        elif not verdict.startswith("ok"):
            problems.append(f"{where}: figure {src} has no legend: {verdict}")
    for i, p in enumerate(state["plotlegend"]):
        if not (p["legend"] or (p["traces"] == 1 and p["title"])):
            problems.append(
                f"{where}: plotly figure #{i + 1} has no legend ({p['traces']} traces, title {p['title']!r})"
            )
    return problems


def _figure_text_problems(where: str, cells: list[dict]) -> list[str]:
    """Every figure of a chapter has a caption and alt text: an output image needs a non-empty ``alt`` that is
    not its file name (docutils falls back to the URI) inside a ``<figure>`` with a ``<figcaption>``; a plotly
    figure needs an accessible name (``aria-label``) and a caption (``replib.plotting.show_plotly``)."""
    problems = []
    for idx, c in enumerate(cells):
        for i in c["imgs"]:
            src = i.get("src") or ""
            alt = i.get("alt", "")
            if not alt or alt == src or alt == src.rsplit("/", 1)[-1] or alt.lower().endswith((".png", ".svg", ".jpg")):
                problems.append(f"{where}: code cell #{idx + 1}: figure {src} has no alt text")
            if not i.get("caption"):
                problems.append(f"{where}: code cell #{idx + 1}: figure {src} has no caption")
        for j, m in enumerate(c.get("plotmeta", [])):
            if not m["label"]:
                problems.append(f"{where}: code cell #{idx + 1}: plotly figure #{j + 1} has no accessible name")
            if not m["caption"]:
                problems.append(f"{where}: code cell #{idx + 1}: plotly figure #{j + 1} has no caption")
    return problems


def _header_problems(page: Page, state: dict) -> list[str]:
    """Under a chapter's title: the line naming the run's models, and the "paper vs ours" figure."""
    where, problems = page.html, []
    if page.ran_models is not None:
        if not state["ran"]:
            problems.append(f"{where}: no 'What ran here' line under the title")
        else:
            missing = [m for m in page.ran_models if m not in state["ran"][0]]
            if missing:
                problems.append(f"{where}: the 'What ran here' line does not name the models {missing}")
    shown = any("paper-vs-ours" in (i["src"] or "") and i["ok"] for i in state["images"])
    if page.paper_vs_ours and not shown:
        problems.append(f"{where}: no 'paper vs ours' figure (the chapter has claims with a paper value)")
    return problems


def _check_chapter(page: Page, state: dict, root: Path, config: Path | None = None) -> list[str]:
    where, problems = page.html, []
    cells = state["cells"]
    for idx in page.figure_cells:
        if idx >= len(cells):
            problems.append(f"{where}: code cell #{idx + 1} (plotting) is missing from the page")
            continue
        c = cells[idx]
        if not (any(i["ok"] for i in c["imgs"]) or any(c["plots"])):
            problems.append(f"{where}: code cell #{idx + 1} calls a plotting API but shows no figure")
    problems += _figure_text_problems(where, cells)
    problems += _header_problems(page, state)
    if len(state["plotly"]) < page.n_plotly:
        problems.append(
            f"{where}: {page.n_plotly} plotly figure(s) in the executed notebook, {len(state['plotly'])} on the page"
        )
    for j, (role, text) in enumerate(page.glue):
        got = state["pasted"][j] if j < len(state["pasted"]) else None
        if got != text:
            problems.append(f"{where}: glued {{glue:text}}`{role}` should read {text!r}, page shows {got!r}")
    if len(state["pasted"]) != len(page.glue):
        problems.append(f"{where}: {len(page.glue)} glued values in the source, {len(state['pasted'])} on the page")
    for role, text in page.glue:
        if text not in state["text"]:
            problems.append(f"{where}: glued value {text!r} ({role}) not in the page text")
    if page.claim_badges is not None:
        rows = state["tables"]["replib-reproduces"]
        got = [r[-1] if r else "" for r in rows]
        want = [_label(b) for b in page.claim_badges]  # the page draws each badge's mark as an icon
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
            problems.append(
                f"{where}: the 'what this chapter reproduces' table should list "
                f"{len(page.claim_badges)} claims with the report's statuses; page shows {len(got)} rows"
                + (f", row {first + 1} {got[first]!r} instead of {want[first]!r}" if first is not None else "")
            )
        if not any(h.endswith(csv_name(page.chapter)) for h in state["links"]):
            problems.append(f"{where}: no link to the chapter's numbers as CSV ({csv_name(page.chapter)})")
    if config:  # the staged configuration the book was built with
        want = colab_url(Path(config), page.chapter)
    else:  # a copy of the HTML alone: a book built without a tag opens the Colab branch (book.staged_config)
        want = colab_url(root / "_config.yml", page.chapter, branch=COLAB_BRANCH)
    colab = [h for h in state["links"] if "colab.research.google.com" in h]
    if want not in colab:
        problems.append(f"{where}: Colab button should open {want}; page links: {colab or 'none'}")
    return problems


def check_book(
    html_dir: Path,
    *,
    root: Path | None = None,
    pages: list[Page] | None = None,
    screenshot_dir: Path | None = None,
    driver=None,
) -> list[str]:
    """Serve ``html_dir``, load every page of ``_toc.yml`` (or ``pages``) and return all problems."""
    root = Path(root or find_root())
    pages = pages if pages is not None else book_pages(root)
    own = driver is None
    driver = driver or make_driver()
    problems = []
    try:
        with BookServer(html_dir) as server:
            for page in pages:
                problems += check_page(driver, server, page, root=root, screenshot_dir=screenshot_dir)
    finally:
        if own:
            driver.quit()
    return problems
