"""Sphinx extension for the book: what the HTML of each page needs beyond what the theme gives.

- **Scripts registered twice are dropped** (:func:`_dedupe_scripts`): sphinx-thebe 0.3.1 adds its inline
  ``const THEBE_JS_URL = ...`` twice under Sphinx 7.4 (the copies differ only in ``filename``, None/""), and the
  second ``const`` is a SyntaxError; the first of each (filename, attributes) is kept.
- **plotly.js (4.6 MB) only on the pages that hold a plotly figure, deferred** (:func:`_plotly_where_needed`; the
  figures of :func:`replib.plotting.show_plotly` draw once it has run).
- **MathJax (2.3 MB) only where there is math** (:func:`_mathjax_where_needed`): Sphinx adds it to a page whose
  toctree has an equation, so the front page loaded it without a formula of its own.
- **One caption per figure** (:func:`one_caption_per_figure`): MyST-NB wraps *every* output of a captioned cell
  in a numbered figure; the outputs without an image are taken out of theirs.
- **Status icons drawn in SVG, not emoji** (:func:`_icons`): the marks of :data:`ICONS` become
  ``<span class="replib-icon ...">`` elements with an accessible name, drawn by ``book/_static/replib.css``, so
  that they show without an emoji font.
- **The theme's icons without its 1.5 MB icon font script** (:func:`fontawesome_subset`): Font Awesome's script
  (about 1,600 icons) is replaced, once the pages are written, by one holding only the icons the pages name,
  drawn the same way (an inline ``<svg class="svg-inline--fa">`` in place of each ``<i>``).
"""

import json
import re
from pathlib import Path

from docutils import nodes

PLOTLY_JS = "plotly.min.js"
#: each mark of the book's Markdown: (CSS class, accessible name)
ICONS = {
    "✅": ("pass", "passed"),
    "❌": ("fail", "failed"),
    "⏸": ("pause", "not checked"),
    "🔧": ("sanity", "sanity check"),
    "⚠️": ("warn", "warning"),
    "⚠": ("warn", "warning"),
    "🔶": ("expected", "expected failure"),
    "🔷": ("not-held", "does not hold on this model"),
    "❔": ("unknown", "inconclusive"),
    "🧩": ("missing", "missing part"),
    "🟡": ("partial", "partially"),
    "🎲": ("seed", "changes with the seed"),
    "🔁": ("changed", "changed"),
    "🔬": ("own", "own experiment"),
}
_MARK = re.compile("|".join(sorted(map(re.escape, ICONS), key=len, reverse=True)))
#: the pieces of a page's HTML that are not text: tags, and whole scripts and styles
_NOT_TEXT = re.compile(r"(<script\b.*?</script>|<style\b.*?</style>|<[^>]*>)", re.S | re.I)


def _icon(match) -> str:
    css, name = ICONS[match.group(0)]
    return f'<span class="replib-icon replib-icon-{css}" role="img" aria-label="{name}" title="{name}"></span>'


def icons_html(body: str) -> str:
    """``body`` with every mark of :data:`ICONS` in its text (never in a tag, script or style) drawn as an icon."""
    pieces = _NOT_TEXT.split(body)
    return "".join(p if i % 2 else _MARK.sub(_icon, p) for i, p in enumerate(pieces))


def _icons(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = icons_html(context["body"])


def one_caption_per_figure(app, doctree) -> None:
    """Unwrap every figure MyST-NB made of a cell's output that holds no image (a table, a text result): the
    cell's caption stays on its plot alone."""
    for figure in list(doctree.findall(nodes.figure)):
        bundles = [
            c for c in figure.children if isinstance(c, nodes.container) and c.get("nb_element") == "mime_bundle"
        ]
        if bundles and not any(str(m.get("mime_type", "")).startswith("image/") for b in bundles for m in b.children):
            figure.replace_self(bundles)


def _plotly_where_needed(app, pagename, templatename, context, doctree):
    if "plotly-graph-div" in context.get("body", ""):
        app.add_js_file(PLOTLY_JS, defer="defer")


def _is_mathjax(js, mathjax_path: str) -> bool:
    name = str(getattr(js, "filename", js) or "")
    body = str((getattr(js, "attributes", None) or {}).get("body", ""))
    return (bool(mathjax_path) and name.endswith(mathjax_path)) or body.startswith("window.MathJax")


def _mathjax_where_needed(app, pagename, templatename, context, doctree):
    own = app.env.get_domain("math").data.get("has_equations", {}).get(pagename, False)
    if own or 'class="math' in context.get("body", ""):
        return
    path = str(app.config.mathjax_path or "")
    context["script_files"] = [js for js in context.get("script_files", []) if not _is_mathjax(js, path)]


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    kept = {}  # the first script of each (filename, attributes)
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", str(js)) or "", tuple(sorted((getattr(js, "attributes", None) or {}).items())))
        kept.setdefault(key, js)
    context["script_files"] = list(kept.values())


#: one icon of Font Awesome's script: ``name:[width,height,[aliases],"unicode","path"]`` (the name quoted or not)
_FA_ICON = re.compile(r'"?([a-z0-9-]+)"?:\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*",("[^"]*")\]')
#: where Font Awesome's script hands a table of icons to a pack: ``d("fas",t)``
_FA_PACK = re.compile(r'\b[a-zA-Z_$]{1,3}\("(fa[a-z]?)",[a-zA-Z_$]{1,3}\)')
_FA_CLASS = re.compile(r'class="([^"]*\bfa-[^"]*)"')
_FA_DRAW = """
(function () {
  var icons = %s;
  var packs = {"fa-brands": "fab", fab: "fab", "fa-regular": "far", far: "far"};
  function draw(root) {
    (root.querySelectorAll ? root : document).querySelectorAll("i[class*='fa-'], span[class*='fa-']").forEach(function (e) {
      var pack = "fas", name = null, cls = Array.from(e.classList);
      cls.forEach(function (c) { if (packs[c]) pack = packs[c]; });
      cls.forEach(function (c) { if (!name && icons[pack + ":" + c.slice(3)]) name = c.slice(3); });
      if (!name) return;
      var d = icons[pack + ":" + name], s = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      Array.from(e.attributes).forEach(function (a) { s.setAttribute(a.name, a.value); });
      s.setAttribute("class", "svg-inline--fa " + e.getAttribute("class"));
      s.setAttribute("viewBox", "0 0 " + d[0] + " " + d[1]);
      s.setAttribute("aria-hidden", "true");
      s.innerHTML = '<path fill="currentColor" d="' + d[2] + '"></path>';
      e.replaceWith(s);
    });
  }
  var css = document.createElement("style");
  css.textContent = ".svg-inline--fa{display:inline-block;height:1em;overflow:visible;vertical-align:-.125em}" +
    ".svg-inline--fa.fa-lg{font-size:1.25em;line-height:.05em;vertical-align:-.2em}";
  document.head.appendChild(css);
  draw(document);
  new MutationObserver(function (ms) { ms.forEach(function (m) { m.addedNodes.forEach(function (n) {
    if (n.nodeType === 1) draw(n.parentNode || n); }); }); }).observe(document.documentElement, {childList: true, subtree: true});
})();
"""


def fontawesome_icons(script: str) -> dict:
    """``{"fas:name": [width, height, path]}`` for every icon (and alias-free name) of Font Awesome's script."""
    packs = [(m.start(), m.group(1)) for m in _FA_PACK.finditer(script)]
    icons = {}
    for m in _FA_ICON.finditer(script):
        pack = next((p for at, p in packs if at > m.start()), None)
        if pack is not None:
            icons.setdefault(f"{pack}:{m.group(1)}", [int(m.group(2)), int(m.group(3)), json.loads(m.group(4))])
    return icons


def fontawesome_subset(script: str, pages: list[str]) -> str:
    """A script that draws, as Font Awesome's does, the icons of ``script`` named by a class of ``pages``'s HTML
    (every pack's icon of that name: a page may ask for a brand or a solid one)."""
    named = {
        c[3:] for html in pages for m in _FA_CLASS.finditer(html) for c in m.group(1).split() if c.startswith("fa-")
    }
    keep = {k: v for k, v in fontawesome_icons(script).items() if k.split(":", 1)[1] in named}
    header = "/* Font Awesome Free icons (CC BY 4.0, https://fontawesome.com/license/free): those the book uses */"
    return header + _FA_DRAW % json.dumps(keep, separators=(",", ":"), sort_keys=True)


def _fontawesome_subset(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    script = Path(app.outdir) / "_static" / "scripts" / "fontawesome.js"
    if not script.is_file() or script.stat().st_size < 100_000:  # absent, or already the subset
        return
    pages = [p.read_text(encoding="utf-8", errors="replace") for p in Path(app.outdir).rglob("*.html")]
    script.write_text(fontawesome_subset(script.read_text(encoding="utf-8"), pages), encoding="utf-8")


def setup(app):
    app.connect("doctree-read", one_caption_per_figure)
    app.connect("html-page-context", _plotly_where_needed, priority=500)
    app.connect("html-page-context", _mathjax_where_needed, priority=700)  # after Sphinx's install_mathjax (500)
    app.connect("html-page-context", _icons, priority=800)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("build-finished", _fontawesome_subset)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
