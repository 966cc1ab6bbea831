"""Token kinds and the 3-D PCA view of the Swiss-roll figures."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA

from ..._validation import check_array
from ...metrics.types import type_frequencies
from ..streaming import sample_rows

# ---------------------------------------------------------------------------------------- token kinds
TOKEN_KINDS = ("special", "punctuation", "number", "word")
_SPECIAL = re.compile(r"^(\[[A-Z]+\]|<\|?[a-z_]+\|?>|<unk>|<eos>|<pad>)$")
_NUMBER = re.compile(r"^[+-]?(\d+([.,:/]\d+)*|\d*[.,]\d+)(st|nd|rd|th|s)?$")


def token_kind(token: str) -> str:
    """Kind of one token string: ``special``, ``punctuation``, ``number`` or ``word``.

    Sub-word markers are removed first: WordPiece ``##``, GPT-2's leading ``Ġ`` (space) and ``Ċ``
    (newline), GPT's trailing ``</w>``. ``special``: ``[CLS]``-style and ``<...>`` tokens (PTB's
    ``<unk>``); ``punctuation``: no letter or digit; ``number``: digits with separators (``1,000``,
    ``3.5``, ``1990s``); ``word``: everything else (any letter).
    """
    t = str(token)
    if _SPECIAL.match(t):
        return "special"
    t = t.removeprefix("##").removesuffix("</w>").lstrip("ĠĊ▁")
    if not t:
        return "punctuation"  # a bare space/newline marker
    if _NUMBER.match(t) or t.isdigit():
        return "number"
    if not any(ch.isalnum() for ch in t):
        return "punctuation"
    if any(ch.isalpha() for ch in t):
        return "word"
    return "number"


# ------------------------------------------------------------------------------------------------ PCA
def pca_view(X, n_components: int = 3, n_points: int | None = None, seed: int = 0) -> dict:
    """Project onto the first principal components, as in the authors' ``--draw 2d/3d``.

    PCA is fitted on all rows (scikit-learn, float64); ``n_points`` rows are drawn (seeded) to plot.

    Returns
    -------
    dict
        ``coords`` (n_points, n_components), ``index`` (rows of X), ``explained`` (ratio per component),
        ``explained_total``.
    """
    X = check_array(X, min_samples=max(2, n_components))
    pca = PCA(n_components=n_components, random_state=seed).fit(X)
    idx = sample_rows(len(X), n_points, seed)
    return {
        "coords": pca.transform(X[idx]),
        "index": idx,
        "explained": pca.explained_variance_ratio_,
        "explained_total": float(pca.explained_variance_ratio_.sum()),
    }


def swiss_roll_views(streams: dict, corpus: str, swiss_layers, n_points: int | None, seed: int) -> list[tuple]:
    """The 3-D PCA views (:func:`pca_view`) of the Swiss-roll layers of every model (``swiss_layers``: model ->
    layers, those in memory) on one corpus, each with a frame of the plotted tokens: pc1..pc3,
    ``log10 frequency`` of the token's type in the stream, its ``kind`` and the ``token``.

    Returns
    -------
    list of (model, corpus, layer, view, frame)
    """
    views = []
    for (model, ckey), stream in streams.items():
        if ckey != corpus:
            continue
        tokens = np.asarray(stream.tokens)
        freq = type_frequencies(tokens)
        kinds = {t: token_kind(t) for t in set(tokens)}  # once per distinct string
        kind = np.array([kinds[t] for t in tokens], dtype=object)
        for layer in swiss_layers.get(model, []):
            if layer not in stream.layers:
                continue
            v = pca_view(stream.layers[layer], 3, n_points=n_points, seed=seed)
            df = pd.DataFrame(v["coords"], columns=["pc1", "pc2", "pc3"])
            df["log10 frequency"] = np.log10(freq[v["index"]])
            df["kind"] = kind[v["index"]]
            df["token"] = tokens[v["index"]]
            views.append((model, ckey, layer, v, df))
    return views
