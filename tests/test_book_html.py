"""What the book's HTML is made of, without a browser: the one table renderer of the chapters' data frames
(readable headers, numbers at their precision, — for a missing value, no index column), the status marks
drawn as SVG icons instead of emoji, and plotly.js only on the pages that hold a plotly figure."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from replib import plotting, tables

ROOT = Path(__file__).resolve().parents[1]


def _extension():
    spec = importlib.util.spec_from_file_location("replib_html_fixes", ROOT / "book" / "_ext" / "replib_html_fixes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cells(html: str) -> list[list[str]]:
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]


def test_a_data_frame_reads_as_a_table():
    df = pd.DataFrame(
        {
            "s_inter_centered": [0.25736912345678901, np.nan],
            "k": [15, 107008],
            "time_s": [12.3456, None],
            "model": ["bert", None],
            "peak_mb": [1.0e5 + 0.4, 3.0],
        }
    )
    html = tables.table_html(df)
    head, first, second = _cells(html)
    assert head == ["s inter centered", "k", "time (s)", "model", "peak (MB)"]
    assert first == ["0.2574", "15", "12.35", "bert", "100000"]
    assert second == ["—", "107008", "—", "—", "3"]
    assert "NaN" not in html and "None" not in html and "nan" not in html
    assert html.startswith('<div class="replib-table">')  # the box that scrolls a wide table sideways


def test_the_index_is_shown_only_when_it_says_something():
    plain = tables.table_html(pd.DataFrame({"a": [1, 2]}))
    assert _cells(plain)[0] == ["a"]
    named = tables.table_html(pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="model_name")))
    assert _cells(named)[0] == ["model name", "a"] and _cells(named)[1] == ["x", "1"]
    multi = tables.table_html(
        pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("iso", "mean"), ("iso", "sd")]))
    )
    assert _cells(multi)[0] == ["iso mean", "iso sd"]


@pytest.mark.parametrize(
    "value, text",
    [
        (0.25736912345678901, "0.2574"),
        (107008.0, "107008"),
        (107008.37, "107008"),
        (np.float32(0.1), "0.1"),
        (np.int64(15), "15"),
        (2.5e-7, "2.5e-07"),
        (float("inf"), "∞"),
        (float("nan"), "—"),
        (None, "—"),
        (True, "yes"),
        ([0.123456, None], "[0.1235, —]"),
    ],
)
def test_cells_at_their_precision(value, text):
    assert tables.format_cell(value) == text


def test_setup_draws_every_data_frame_with_the_renderer():
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert tables.register(shell)
        data, _ = shell.display_formatter.format(pd.DataFrame({"val_loss": [np.nan]}))
        assert '<th scope="col">val loss</th>' in data["text/html"] and "—" in data["text/html"]
    finally:
        shell.display_formatter.formatters["text/html"].pop(pd.DataFrame, None)
        InteractiveShell.clear_instance()
    assert IPython


def test_status_marks_become_svg_icons_with_a_name():
    ext = _extension()
    body = (
        '<p>✅ reproduced, ⚠️ deviates</p><div title="❌ keep">❌ failed</div>'
        "<script>var s = '✅';</script><style>/* 🔧 */</style>"
    )
    out = ext.icons_html(body)
    assert "✅ reproduced" not in out and "⚠" not in out.split("<script>")[0]
    assert (
        '<span class="replib-icon replib-icon-pass" role="img" aria-label="passed" title="passed"></span> reproduced'
        in out
    )
    assert "replib-icon-warn" in out and "replib-icon-fail" in out
    assert 'title="❌ keep"' in out and "var s = '✅';" in out and "/* 🔧 */" in out  # tags, scripts, styles untouched
    css = (ROOT / "book" / "_static" / "replib.css").read_text()
    for name, _ in ext.ICONS.values():
        assert f'.replib-icon-{name} {{ background-image: url("data:image/svg+xml,' in css


def test_every_mark_the_kit_writes_is_drawn_as_an_icon():
    """A status's or a verdict's mark without an icon shows as an emoji, an empty box where no emoji font is."""
    from bookkit.claims.status import STATUS_BADGE
    from bookkit.claims.verdicts import CELL_MARK, VERDICT_BADGE

    ext = _extension()
    for label in [*STATUS_BADGE.values(), *CELL_MARK.values(), *VERDICT_BADGE.values()]:
        mark = label.split(" ", 1)[0]
        assert mark in ext.ICONS, label


def test_plotly_js_only_on_pages_with_a_plotly_figure():
    ext = _extension()
    added = []

    class App:
        def add_js_file(self, name, **attrs):
            added.append((name, attrs))

    ext._plotly_where_needed(App(), "intro", "page.html", {"body": "<p>no figure</p>"}, None)
    assert added == []
    ext._plotly_where_needed(App(), "ch", "page.html", {"body": '<div class="plotly-graph-div"></div>'}, None)
    assert added == [("plotly.min.js", {"defer": "defer"})]
    assert "plotly" not in (ROOT / "_config.yml").read_text().split("html_js_files")[-1].split("\n")[0]


def test_show_plotly_draws_after_the_deferred_script(monkeypatch):
    import plotly.graph_objects as go

    shown = []
    monkeypatch.setattr(plotting, "display", lambda obj: shown.append(obj.data))
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0], name="</script><b>x"))
    plotting.show_plotly(fig, height=300)
    html = shown[-1]
    assert 'class="plotly-graph-div" style="height:300px; width:100%;"' in html
    assert "DOMContentLoaded" in html and html.count("</script>") == 1  # the trace's name cannot end the script
    plotting.show_plotly(fig, height=300)
    assert shown[-1] == html  # the same figure gives the same output (the div's id is its content's hash)


def test_a_table_shown_before_a_plot_does_not_take_the_plots_caption():
    from docutils import nodes
    from docutils.utils import new_document

    ext = _extension()

    def output(*mime_types):
        figure = nodes.figure()
        bundle = nodes.container(nb_element="mime_bundle")
        bundle += [nodes.container(mime_type=m) for m in mime_types]
        figure += [bundle, nodes.caption(text="the plot's caption")]
        return figure

    doc = new_document("chapter")
    cell = nodes.container(nb_element="cell_code")
    cell += [output("text/html", "text/plain"), output("image/png", "text/plain")]
    doc += cell
    ext.one_caption_per_figure(None, doc)
    assert [type(n).__name__ for n in cell.children] == ["container", "figure"]
    assert len(list(doc.findall(nodes.caption))) == 1
    assert list(doc.findall(nodes.figure))[0].children[0].children[0]["mime_type"] == "image/png"


def test_mathjax_only_on_pages_with_math():
    """Sphinx adds MathJax to a page whose toctree holds a page with math (the front page holds them all)."""
    ext = _extension()

    class JS(str):
        def __new__(cls, name, **attributes):
            js = super().__new__(cls, name)
            js.filename, js.attributes = name, attributes
            return js

    class App:
        class config:
            mathjax_path = "mathjax/tex-svg-full.js"

        class env:
            @staticmethod
            def get_domain(name):
                return type("D", (), {"data": {"has_equations": {"chapter": True}}})

    def scripts(page, body):
        ctx = {
            "body": body,
            "script_files": [
                JS("_static/doctools.js"),
                JS("", body="window.MathJax = {}"),
                JS("_static/mathjax/tex-svg-full.js", defer="defer"),
            ],
        }
        ext._mathjax_where_needed(App, page, "page.html", ctx, None)
        return [str(j) or j.attributes["body"] for j in ctx["script_files"]]

    assert scripts("intro", "<p>no formula</p>") == ["_static/doctools.js"]
    assert len(scripts("chapter", "<p>no formula in the body</p>")) == 3  # the page's own equations
    assert len(scripts("other", '<span class="math notranslate">x</span>')) == 3  # math in a notebook output


def test_claim_values_read_as_the_tables_numbers():
    """The validation pages' values: no 'nan', no exponent for an integer-sized float, 4 significant digits."""
    from bookkit.claims.status import format_value

    assert [format_value(v) for v in (float("nan"), 107008.37, 0.25736912345678901, None)] == [
        "—",
        "107008",
        "0.2574",
        "—",
    ]


FAKE_FA = (
    'var a={bars:[448,512,[],"f0c9","M0 96z"],"magnifying-glass":[512,512,[128269,"search"],"f002","M416 208z"]};'
    'x("fas",a);var b={github:[496,512,[],"f09b","M165 397z"],rocket:[512,512,[],"f135","M1 1z"]};x("fab",b);'
)


def test_fontawesome_subset_keeps_the_icons_the_pages_name():
    """The theme's 1.5 MB icon script becomes one that holds the icons some page names, in their pack."""
    ext = _extension()
    assert ext.fontawesome_icons(FAKE_FA) == {
        "fas:bars": [448, 512, "M0 96z"],
        "fas:magnifying-glass": [512, 512, "M416 208z"],
        "fab:github": [496, 512, "M165 397z"],
        "fab:rocket": [512, 512, "M1 1z"],
    }
    pages = ['<i class="fa-solid fa-bars"></i>', '<a><i class="fa-brands fa-github fa-lg"></i></a>']
    sub = ext.fontawesome_subset(FAKE_FA, pages)
    assert '"fas:bars":[448,512,"M0 96z"]' in sub and '"fab:github"' in sub
    assert "magnifying-glass" not in sub and "rocket" not in sub and "CC BY 4.0" in sub


def test_fontawesome_subset_of_the_themes_script_is_small():
    script = next(Path(__import__("pydata_sphinx_theme").__file__).parent.rglob("static/scripts/fontawesome.js"), None)
    if script is None:
        pytest.skip("pydata-sphinx-theme ships no fontawesome.js")
    ext = _extension()
    text = script.read_text(encoding="utf-8")
    icons = ext.fontawesome_icons(text)
    assert {"fas:magnifying-glass", "fas:bars", "fas:circle-half-stroke", "fab:github", "far:file"} <= set(icons)
    pages = ['<i class="theme-switch fa-solid fa-sun fa-lg"></i><i class="fa-solid fa-magnifying-glass"></i>']
    sub = ext.fontawesome_subset(text, pages)
    assert len(sub) < 10_000 < len(text) / 100 and '"fas:sun"' in sub and '"fas:magnifying-glass"' in sub


@pytest.mark.parametrize(
    "text, kind",
    [
        ("unverified (None)", "None"),
        ("| 0.25 | NaN |", "NaN"),
        ("value nan here", "nan"),
        ("count <NA>", "<NA>"),
        ("r = 0.25736912345678901", "a long float"),
    ],
)
def test_a_raw_missing_value_or_a_long_float_is_a_problem(text, kind):
    from bookkit.book.browser import unreadable_values

    problems = unreadable_values("p.html", [text, text])
    assert len(problems) == 1 and f"shows {kind} where a value belongs" in problems[0]


def test_words_and_short_numbers_are_not_unreadable():
    from bookkit.book.browser import unreadable_values

    ok = "None of the claims failed; NaNs are dropped; 0.2574 and 107008 and 3.14159265358; Nanjing; nano"
    assert unreadable_values("p.html", [ok]) == []
