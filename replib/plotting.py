"""Plot helpers shared by the chapters and the isotropy card (seaborn for static figures, plotly for
interactive ones), and the book's one colour convention.

Colours: models (and other categories) take the seaborn ``PALETTE`` in order; layers take the sequential
colour map ``LAYER_CMAP`` over ``0 .. n_layers``, layer 0 being the embedding output (``hidden_states[0]``)
and layer ``l`` the output of block ``l``. :func:`layer_colors` and :func:`model_colors` give the same
colours to matplotlib (seaborn ``palette=``) and to plotly.

Legends: every figure of the book must say what it shows (:func:`legend_problems` states the rule). In a
notebook, :func:`setup` makes every matplotlib figure carry its verdict in its PNG (a ``tEXt`` chunk
:data:`LEGEND_KEY`, read back by :func:`png_text`), so the browser test of the built book can check the very
images a reader sees (``bookkit.book.browser``).

:func:`plot_paper_vs_ours`: the paper's value against ours per claim, with the tolerance band.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from html import escape

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from IPython import get_ipython
from IPython.display import HTML, display
from matplotlib.collections import PathCollection, PolyCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from PIL import Image

from . import tables
from ._validation import finite_number

#: the one seaborn context/style/palette of the book's figures
CONTEXT, STYLE, PALETTE = "notebook", "whitegrid", "colorblind"
#: the colour map of layers, in the chapters (``hue="layer", palette=LAYER_CMAP``) and the card
LAYER_CMAP = "viridis"
#: figures have an opaque white face, so their dark text stays readable on the book's dark theme too
#: (the book's CSS, ``book/_static/replib.css``, frames them as light cards in dark mode)
RC = {"figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white"}

#: the PNG ``tEXt`` keyword holding a figure's legend verdict (:func:`legend_stamp`)
LEGEND_KEY = "replib:legend"

__all__ = [
    "CONTEXT",
    "STYLE",
    "PALETTE",
    "LAYER_CMAP",
    "RC",
    "LEGEND_KEY",
    "setup",
    "layer_colors",
    "model_colors",
    "layer_curves",
    "show_plotly",
    "legend_problems",
    "legend_stamp",
    "stamp_legends",
    "png_text",
    "save_figure",
    "plot_paper_vs_ours",
    "plot_paper_vs_ours_by_group",
]


def setup(context: str = CONTEXT) -> None:
    """The book's figure style: seaborn ``CONTEXT``/``STYLE``/``PALETTE`` with an opaque white face.

    Every chapter calls it once at the top; it is the only place the style is set. In a notebook it also
    stamps every figure shown with its legend verdict (:func:`stamp_legends`) and draws every data frame
    shown with the book's table renderer (:func:`replib.tables.register`).
    """
    sns.set_theme(context=context, style=STYLE, palette=PALETTE, rc=RC)
    stamp_legends()
    tables.register(get_ipython())


def layer_colors(layers, n_layers: int | None = None) -> dict[int, str]:
    """Hex colour of each layer index on :data:`LAYER_CMAP`, spread over ``0 .. n_layers``.

    Parameters
    ----------
    layers : iterable of int
        Layer indices, 0 = embedding output.
    n_layers : int, optional
        The model's number of blocks (the last layer's index); default ``max(layers)``. Fixing it gives a
        layer the same colour in every figure of one model, whichever layers a figure shows.
    """
    layers = [int(layer) for layer in layers]
    if any(layer < 0 for layer in layers):
        raise ValueError(f"layer indices start at 0 (the embedding output); got {min(layers)}")
    top = max(layers, default=0) if n_layers is None else int(n_layers)
    cmap = mpl.colormaps[LAYER_CMAP]
    return {layer: mpl.colors.to_hex(cmap(layer / top if top else 0.0)) for layer in layers}


def model_colors(names) -> dict[str, str]:
    """Hex colour of each name, in order, from the book's :data:`PALETTE` (cycled past its 10 colours)."""
    names = list(dict.fromkeys(names))
    palette = sns.color_palette(PALETTE, n_colors=max(len(names), 1)).as_hex()
    return dict(zip(names, palette))


def layer_curves(long, metrics, *, x: str = "step + 1", row: str = "model", height: float = 2.4, aspect: float = 1.1):
    """A grid of line plots small enough to read in the book's text column: one column per metric of
    ``metrics`` (a few: a long list is split over several figures), one row per value of ``row``, the metric's
    value against ``x`` on a log axis, one line per layer in the book's layer colours (:data:`LAYER_CMAP`).

    Parameters
    ----------
    long : pandas.DataFrame
        Long format: columns ``metric``, ``value``, ``layer``, ``x`` and ``row``.
    metrics : sequence of str
        The metrics drawn, in this order.

    Returns
    -------
    seaborn.FacetGrid
    """
    metrics = list(metrics)
    g = sns.relplot(
        data=long[long["metric"].isin(metrics)],
        x=x,
        y="value",
        hue="layer",
        col="metric",
        col_order=metrics,
        row=row,
        kind="line",
        marker="o",
        facet_kws=dict(sharey=False),
        height=height,
        aspect=aspect,
        palette=LAYER_CMAP,
    )
    g.set(xscale="log")
    g.set_titles("{row_name}: {col_name}")
    return g


#: draws one figure of :func:`show_plotly` once plotly.js is there: at once when it is, after the page's
#: deferred ``_static/plotly.min.js`` while the book's page loads, else (Jupyter, Colab) from plotly's CDN
_PLOTLY_DRAW = """(function () {
  var id = %s, fig = %s;
  function draw() { Plotly.newPlot(id, fig.data, fig.layout, {displaylogo: false, responsive: true}); }
  if (window.Plotly) { draw(); return; }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { if (window.Plotly) draw(); });
    return;
  }
  var s = document.createElement("script");
  s.src = "https://cdn.plot.ly/plotly-2.35.2.min.js"; s.onload = draw; document.head.appendChild(s);
})();"""


def show_plotly(fig, height: int | None = None, caption: str | None = None, alt: str | None = None):
    """Display a plotly figure as HTML that renders in the book without internet.

    The figure's HTML does not embed plotly.js (several MB): the book serves one local copy
    (``_static/plotly.min.js``, added at build time) on the pages that hold a plotly figure, deferred, and the
    figure is drawn once it has run (:data:`_PLOTLY_DRAW`); Jupyter and Colab load it from plotly's CDN on
    first use.

    With ``caption`` the figure is wrapped in ``<figure>`` with that ``<figcaption>``; ``alt`` (default: the
    caption, else the figure's title) is the figure's accessible name (``role="img"``, ``aria-label``), the
    equivalent of an image's alt text for screen readers.
    """
    if height:
        fig.update_layout(height=height)
    spec = fig.to_json().replace("</", "<\\/")  # never ends the script early
    div_id = "replib-plotly-" + hashlib.sha256(spec.encode()).hexdigest()[:16]
    style = f"height:{int(fig.layout.height or 450)}px; width:100%;"
    html = (
        f'<div id="{div_id}" class="plotly-graph-div" style="{style}"></div>'
        f"<script>{_PLOTLY_DRAW % (json.dumps(div_id), spec)}</script>"
    )
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else None
    label = alt or caption or title
    if label:
        html = f'<div role="img" aria-label="{escape(label, quote=True)}">{html}</div>'
    if caption:
        html = f'<figure class="replib-plotly">{html}<figcaption>{escape(caption)}</figcaption></figure>'
    display(HTML(html))


# ------------------------------------------------------------------ legends
def _mapped(ax) -> list:
    """The colour-mapped artists of ``ax`` (images, meshes, hexbins): their colours encode a quantity."""
    polys = [c for c in ax.collections if type(c) is PolyCollection and c.get_array() is not None]
    return [*ax.images, *[c for c in ax.collections if isinstance(c, (QuadMesh, AxesImage))], *polys]


def _is_rule(line) -> bool:
    """An unlabelled straight segment parallel to an axis: an error bar or a reference rule, not a series."""
    if not line.get_label().startswith("_"):
        return False
    try:
        xy = line.get_xydata()
    except (TypeError, ValueError):
        return False
    return len(xy) <= 2 and (min(xy[:, 0]) == max(xy[:, 0]) or min(xy[:, 1]) == max(xy[:, 1]))


def _series(ax) -> int:
    """How many data series ``ax`` draws: its lines, scatter collections, bar/errorbar/stem containers and
    colour-mapped artists; the parts of a container, error bars and reference rules (:func:`_is_rule`) and
    fills (confidence bands) are not series of their own."""
    inside = {id(a) for c in ax.containers for a in mpl.cbook.flatten(c)}
    lines = [ln for ln in ax.lines if ln.get_visible() and id(ln) not in inside and not _is_rule(ln)]
    points = [c for c in ax.collections if isinstance(c, PathCollection) and c.get_visible() and id(c) not in inside]
    return len(ax.containers) + len(lines) + len(points) + len(_mapped(ax))


def _has_legend(fig) -> bool:
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    return any(lg is not None and lg.get_visible() and lg.get_texts() for lg in legends)


def _title(ax) -> str:
    sup = getattr(ax.figure, "_suptitle", None)
    own = " ".join(ax.get_title(loc) for loc in ("left", "center", "right")).strip()
    return own or (sup.get_text().strip() if sup is not None else "")


def _axis_label(ax, axis: str) -> str:
    """The label of ``ax``'s x or y axis: its own, a sharing neighbour's, or the figure's sup-label."""
    get = (lambda a: a.get_xlabel()) if axis == "x" else (lambda a: a.get_ylabel())
    shared = ax.get_shared_x_axes() if axis == "x" else ax.get_shared_y_axes()
    for a in [ax, *shared.get_siblings(ax)]:
        if get(a).strip():
            return get(a).strip()
    sup = getattr(ax.figure, f"_sup{axis}label", None)
    return sup.get_text().strip() if sup is not None else ""


def legend_problems(fig) -> list[str]:
    """What keeps a matplotlib figure from saying what it shows (empty: it does).

    The rule: a figure shows a legend with at least one entry (an axes' or the figure's), or every axes that
    draws data draws a single series and has a title (its own or the figure's) and both axes labelled (its
    own labels, a sharing neighbour's, or the figure's sup-labels). Series are lines, scatter collections,
    bar/errorbar/stem containers and colour-mapped artists; error bars, reference rules (unlabelled segments
    parallel to an axis) and fills are parts of a series. Whatever the legend, every colour-mapped artist
    (image, mesh, hexbin) needs the colour bar of its scale (its own, or that of an artist sharing its norm):
    the legend of a colour scale.
    """
    axes = [
        ax
        for ax in fig.axes
        if getattr(ax, "_colorbar", None) is None
        and ax.get_label() != "<colorbar>"  # not a colour bar
        and ax.get_visible()
        and (ax.lines or ax.collections or ax.containers or ax.images or ax.patches)  # draws data
    ]
    scales = [a.norm for ax in axes for a in _mapped(ax) if getattr(a, "colorbar", None) is not None]
    problems = [
        f"axes {i + 1}: a colour-mapped {type(a).__name__} without a colour bar"
        for i, ax in enumerate(axes)
        for a in _mapped(ax)
        if getattr(a, "colorbar", None) is None and not any(a.norm is n for n in scales)
    ]
    if _has_legend(fig):
        return problems
    for i, ax in enumerate(axes):
        n = _series(ax)
        if n > 1:
            problems.append(f"axes {i + 1}: {n} series and no legend")
            continue
        missing = [what for what, ok in (("a title", _title(ax)), ("an x label", _axis_label(ax, "x")),
                                         ("a y label", _axis_label(ax, "y"))) if not ok]  # fmt: skip
        if missing:
            problems.append(f"axes {i + 1}: no legend, and its single series lacks {', '.join(missing)}")
    return problems


def legend_stamp(fig) -> str:
    """The legend verdict of ``fig`` in one ASCII line: ``ok: ...`` or ``missing: <problems>``."""
    problems = legend_problems(fig)
    if problems:
        text = "missing: " + "; ".join(problems)
    elif _has_legend(fig):
        text = "ok: legend"
    else:
        text = "ok: single series with a title and labelled axes"
    return text.encode("ascii", "replace").decode()


_HOOKED: set[int] = set()
_STAMPING = "_replib_legend_stamp"


def _wrap_png_formatter(shell) -> None:
    """Wrap the notebook's PNG formatter of figures so that each PNG carries :func:`legend_stamp`."""
    png = shell.display_formatter.formatters.get("image/png")
    try:
        current = png.lookup_by_type(Figure)
    except (AttributeError, KeyError):
        return
    if getattr(current, _STAMPING, False):
        return

    def stamped(fig, _print=current):
        return _print(fig, metadata={LEGEND_KEY: legend_stamp(fig)})

    setattr(stamped, _STAMPING, True)
    png.for_type(Figure, stamped)


def stamp_legends(shell=None) -> bool:
    """In a notebook, make every matplotlib figure shown carry its legend verdict (:func:`legend_stamp`) as a
    PNG ``tEXt`` chunk :data:`LEGEND_KEY`; returns False outside IPython.

    The figure formatter is wrapped now and again after every cell (``post_execute``, registered before the
    inline backend's own flush when the backend starts later), so a backend activated after this call is
    stamped too.
    """
    shell = shell if shell is not None else get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    backend = mpl.get_backend()
    if "inline" in backend.lower():  # start the inline backend now (no figure is open yet): its formatter then
        plt.switch_backend(backend)  # exists to be wrapped, and a cell's first figure shown by plt.show() is stamped
    _wrap_png_formatter(shell)
    if id(shell) not in _HOOKED:
        shell.events.register("post_execute", lambda: _wrap_png_formatter(shell))
        _HOOKED.add(id(shell))
    return True


def save_figure(fig, path, **kwargs):
    """Save ``fig`` as a PNG file carrying its legend verdict (:func:`legend_stamp`, keyword
    :data:`LEGEND_KEY`), like the figures a notebook shows; returns the path."""
    if not str(path).lower().endswith(".png"):
        raise ValueError(f"save_figure writes PNG files; got {path}")
    fig.savefig(path, metadata={LEGEND_KEY: legend_stamp(fig)}, **kwargs)
    return path


def png_text(data: bytes) -> dict[str, str]:
    """The text chunks (``tEXt``, ``zTXt``, ``iTXt``) of a PNG file's bytes, keyword -> text (read by Pillow,
    matplotlib's own image library)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file (wrong signature)")
    with Image.open(io.BytesIO(data)) as image:
        return dict(image.text)


# ------------------------------------------------------------------ the paper's value against ours
#: the colour of each claim status in :func:`plot_paper_vs_ours` (indexes into the colorblind palette)
STATUS_COLOUR = {"reproduced": 2, "consistent": 0, "sanity": 9, "deviates": 1, "expected_failure": 5}
STATUS_COLOUR |= {"inconclusive": 4, "failed": 3, "unverified": 7}


def _ratio_band(row: dict) -> tuple[float, float] | None:
    """The accepted interval of ours divided by the paper's value (None without a tolerance)."""
    lo, hi, p = row.get("low"), row.get("high"), row["paper"]
    if not (finite_number(lo) and finite_number(hi)):
        return None
    a, b = sorted((lo / p, hi / p))
    return (a, b) if b > 0 else None


def _ratio(row: dict) -> float | None:
    return row["ours"] / row["paper"] if finite_number(row.get("ours")) else None


def _limits(rows: list[dict], bands=()) -> tuple[float, float]:
    positive = [x for x in map(_ratio, rows) if x is not None and x > 0]
    positive += [v for b in bands if b for v in b if v > 0] + [1.0]
    return min(positive) / 2, max(positive) * 2


def _status_dot(ax, x, y, status, left, drawn: set, size: float = 40) -> None:
    """One claim's dot at ratio ``x`` (◀ at the left edge when not positive), in its status's colour, labelled
    for the legend the first time its status is drawn."""
    colour = sns.color_palette(PALETTE, 10)[STATUS_COLOUR.get(status, 7)]
    label = None if status in drawn else status
    drawn.add(status)
    ax.scatter([x if x > 0 else left], [y], marker="o" if x > 0 else "<", s=size, color=colour, zorder=3, label=label)


def _ratio_axis(ax, left: float, right: float, labels: list[str], ylabel: str, title: str) -> None:
    """The figure's frame: one row per label (the first at the top), the ratio on a log axis from ``left`` to
    ``right`` with the paper's value at 1, and the legend beside the axes."""
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=10)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.axvline(1, color="k", ls="--", lw=1, label="the paper's value", zorder=2)
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    subs = (1.0, 2.0, 5.0) if math.log10(right / left) <= 3 else (1.0,)  # 0.2, 0.5, 1, 2, 5 over a few decades
    ax.xaxis.set_major_locator(mpl.ticker.LogLocator(subs=subs, numticks=8))
    ax.xaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(mpl.ticker.NullFormatter())
    ax.set_xlabel("ours ÷ paper (log scale; ◀: not positive)")
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def plot_paper_vs_ours(rows: list[dict], title: str = "The paper's values against ours", ax=None) -> Figure:
    """One row per claim: our value divided by the paper's (log scale, the paper at 1), coloured by status,
    over the band the claim's tolerance accepts.

    Parameters
    ----------
    rows : list of dict
        ``label``, ``paper`` (non-zero), ``ours`` (None: not computed), ``status`` and, for a tolerance check,
        ``low``/``high``: the interval of values the check accepts around the paper's value.
    title : str
    ax : matplotlib Axes, optional

    A ratio that is not positive (our value has the other sign, or is 0) is drawn at the left edge as ◀. The
    labels are 10 pt in a figure 6 inches wide, so that they read at the book's column width.
    """
    rows = [r for r in rows if finite_number(r.get("paper")) and r["paper"] != 0]
    fig = ax.figure if ax is not None else Figure(figsize=(6.0, 1.5 + 0.3 * max(len(rows), 1)))
    ax = ax if ax is not None else fig.add_subplot()
    bands = [_ratio_band(r) for r in rows]
    left, right = _limits(rows, bands)
    drawn = set()
    for y, (r, band) in enumerate(zip(rows, bands)):
        if band is not None:
            label = None if "band" in drawn else "accepted by the tolerance"
            ax.hlines(y, max(band[0], left), band[1], lw=9, color="0.85", label=label, zorder=1)
            drawn.add("band")
        x = _ratio(r)
        if x is None:
            ax.text(1, y, " not computed", va="center", fontsize=9, color="0.4")
            continue
        _status_dot(ax, x, y, r.get("status", "?"), left, drawn)
    _ratio_axis(ax, left, right, [_row_label(r) for r in rows], "claim (paper, ours)", title)
    return fig


def plot_paper_vs_ours_by_group(rows: list[dict], title: str = "The paper's values against ours") -> Figure:
    """One row per group of claims (``row["group"]``: the paper's table each number comes from), each claim a
    dot at our value divided by the paper's (log scale, the paper at 1) in its status's colour: a chapter with
    hundreds of claims in one figure whose labels read."""
    rows = [r for r in rows if finite_number(r.get("paper")) and r["paper"] != 0]
    groups = list(dict.fromkeys(str(r.get("group", "")) for r in rows))
    fig = Figure(figsize=(6.0, 1.5 + 0.45 * max(len(groups), 1)))
    ax = fig.add_subplot()
    left, right = _limits(rows)
    drawn: set = set()
    for y, g in enumerate(groups):
        mine = [r for r in rows if str(r.get("group", "")) == g]
        spread = np.linspace(-0.25, 0.25, len(mine)) if len(mine) > 1 else [0.0]
        for r, dy in zip(mine, spread):
            x = _ratio(r)
            if x is not None:
                _status_dot(ax, x, y + dy, r.get("status", "?"), left, drawn, size=18)
    counts = {g: sum(str(r.get("group", "")) == g for r in rows) for g in groups}
    labels = [f"{_short(g, 34)} ({counts[g]})" for g in groups]
    _ratio_axis(ax, left, right, labels, "the paper's table (claims)", title)
    return fig


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _row_label(row: dict) -> str:
    ours = f"{row['ours']:.3g}" if finite_number(row.get("ours")) else "—"
    return f"{_short(str(row.get('label', '')), 34)} ({row['paper']:.3g}, {ours})"
