"""Plot helpers shared by the chapters (seaborn for static figures, plotly for interactive 3-D)."""

from __future__ import annotations

#: the one seaborn context/style/palette of the book's figures
CONTEXT, STYLE, PALETTE = "notebook", "whitegrid", "colorblind"
#: figures have an opaque white face, so their dark text stays readable on the book's dark theme too
#: (the book's CSS, ``book/_static/replib.css``, frames them as light cards in dark mode)
RC = {"figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white"}


def setup(context: str = CONTEXT) -> None:
    """The book's figure style: seaborn ``CONTEXT``/``STYLE``/``PALETTE`` with an opaque white face.

    Every chapter calls it once at the top; it is the only place the style is set.
    """
    import seaborn as sns

    sns.set_theme(context=context, style=STYLE, palette=PALETTE, rc=RC)


def show_plotly(fig, height: int | None = None, caption: str | None = None, alt: str | None = None):
    """Display a plotly figure as self-contained HTML that renders in the book without internet.

    The figure's HTML does not embed plotly.js (several MB); the book serves one local copy
    (``_static/plotly.min.js``, added at build time), and Jupyter/Colab load it from the notebook
    output's ``require``-free script tag on first use.

    With ``caption`` the figure is wrapped in ``<figure>`` with that ``<figcaption>``; ``alt`` (default: the
    caption, else the figure's title) is the figure's accessible name (``role="img"``, ``aria-label``), the
    equivalent of an image's alt text for screen readers.
    """
    from html import escape

    from IPython.display import HTML, display

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
