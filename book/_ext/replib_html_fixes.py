"""Sphinx extension for the book: drop script tags that an extension registered twice.

sphinx-thebe 0.3.1 adds its inline configuration (``const THEBE_JS_URL = ...``) from an
``env-before-read-docs`` handler; with Sphinx 7.4 it ends up twice on every page and the second
``const`` is a SyntaxError in the browser console. The two copies differ only in ``filename`` (None/""),
so Sphinx does not see them as equal; this handler keeps the first of each (filename, attributes).
"""


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
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
