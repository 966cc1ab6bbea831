"""Sphinx extension for the book: what the HTML of each page needs beyond what the theme gives.

- **Scripts registered twice are dropped.** sphinx-thebe 0.3.1 adds its inline configuration
  (``const THEBE_JS_URL = ...``) from an ``env-before-read-docs`` handler; with Sphinx 7.4 it ends up twice on
  every page and the second ``const`` is a SyntaxError in the browser console. The two copies differ only in
  ``filename`` (None/""), so Sphinx does not see them as equal; :func:`_dedupe_scripts` keeps the first of
  each (filename, attributes).
- **plotly.js only where a figure needs it, deferred** (:func:`_plotly_where_needed`): the 4.6 MB script is
  added to the pages that hold a plotly figure, with ``defer`` (the figures of
  :func:`replib.plotting.show_plotly` draw once it has run), never to the others.
- **MathJax only where there is math** (:func:`_mathjax_where_needed`): Sphinx adds MathJax (2.3 MB) to
  a page when the page *or any page of its toctree* has an equation, so the front page, whose toctree holds
  every chapter, loaded it without a formula of its own; it is dropped from pages without math.
- **One caption per figure** (:func:`one_caption_per_figure`): MyST-NB wraps *every* output of a cell with a
  ``mystnb: figure`` caption in a numbered figure, so a cell that shows a table and then a plot had its
  caption twice, on two figure numbers; the outputs without an image are taken out of their figure.
- **Status icons drawn in SVG, not emoji** (:func:`_icons`): the marks the book's Markdown writes (✅, ❌, ⏸,
  ...; :data:`ICONS`) become ``<span class="replib-icon ...">`` elements with an accessible name, drawn by
  ``book/_static/replib.css``, so that they show on a machine without an emoji font; the text label that
  follows each mark stays as it is.
"""

import re

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


def _mime_bundles(figure) -> list:
    return [c for c in figure.children if isinstance(c, nodes.container) and c.get("nb_element") == "mime_bundle"]


def one_caption_per_figure(app, doctree) -> None:
    """Unwrap every figure MyST-NB made of a cell's output that holds no image (a table, a text result): the
    cell's caption stays on its plot alone."""
    for figure in list(doctree.findall(nodes.figure)):
        bundles = _mime_bundles(figure)
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
    seen, kept = set(), []
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", str(js)) or "", tuple(sorted((getattr(js, "attributes", None) or {}).items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    context["script_files"] = kept


def setup(app):
    app.connect("doctree-read", one_caption_per_figure)
    app.connect("html-page-context", _plotly_where_needed, priority=500)
    app.connect("html-page-context", _mathjax_where_needed, priority=700)  # after Sphinx's install_mathjax (500)
    app.connect("html-page-context", _icons, priority=800)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
