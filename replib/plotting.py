"""Plot helpers shared by the chapters and the isotropy card (seaborn for static figures, plotly for
interactive ones), and the book's one colour convention.

Colours: models (and other categories) take the seaborn ``PALETTE`` in order; layers take the sequential
colour map ``LAYER_CMAP`` over ``0 .. n_layers``, layer 0 being the embedding output (``hidden_states[0]``)
and layer ``l`` the output of block ``l``. :func:`layer_colors` and :func:`model_colors` give the same
colours to matplotlib (seaborn ``palette=``) and to plotly.
"""

from __future__ import annotations

from html import escape

import matplotlib as mpl
import seaborn as sns
from IPython.display import HTML, display

#: the one seaborn context/style/palette of the book's figures
CONTEXT, STYLE, PALETTE = "notebook", "whitegrid", "colorblind"
#: the colour map of layers, in the chapters (``hue="layer", palette=LAYER_CMAP``) and the card
LAYER_CMAP = "viridis"
#: figures have an opaque white face, so their dark text stays readable on the book's dark theme too
#: (the book's CSS, ``book/_static/replib.css``, frames them as light cards in dark mode)
RC = {"figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white"}

__all__ = ["CONTEXT", "STYLE", "PALETTE", "LAYER_CMAP", "RC", "setup", "layer_colors", "model_colors", "show_plotly"]


def setup(context: str = CONTEXT) -> None:
    """The book's figure style: seaborn ``CONTEXT``/``STYLE``/``PALETTE`` with an opaque white face.

    Every chapter calls it once at the top; it is the only place the style is set.
    """
    sns.set_theme(context=context, style=STYLE, palette=PALETTE, rc=RC)


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


def show_plotly(fig, height: int | None = None, caption: str | None = None, alt: str | None = None):
    """Display a plotly figure as self-contained HTML that renders in the book without internet.

    The figure's HTML does not embed plotly.js (several MB); the book serves one local copy
    (``_static/plotly.min.js``, added at build time), and Jupyter/Colab load it from the notebook
    output's ``require``-free script tag on first use.

    With ``caption`` the figure is wrapped in ``<figure>`` with that ``<figcaption>``; ``alt`` (default: the
    caption, else the figure's title) is the figure's accessible name (``role="img"``, ``aria-label``), the
    equivalent of an image's alt text for screen readers.
    """
    if height:
        fig.update_layout(height=height)
    html = fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
    loader = (
        "<script>if (typeof Plotly === 'undefined') {var s=document.createElement('script');"
        "s.src='https://cdn.plot.ly/plotly-2.35.2.min.js';document.head.appendChild(s);}</script>"
    )
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else None
    label = alt or caption or title
    if label:
        html = f'<div role="img" aria-label="{escape(label, quote=True)}">{html}</div>'
    if caption:
        html = f'<figure class="replib-plotly">{html}<figcaption>{escape(caption)}</figcaption></figure>'
    display(HTML(loader + html))
