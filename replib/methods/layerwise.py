"""Isotropy of every layer of a model: one table row per layer."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics import avg_pairwise_cosine, effective_dimensions, isoscore

__all__ = ["layer_isotropy"]


def layer_isotropy(layers: dict, model: str = "") -> pd.DataFrame:
    r"""IsoScore, effective dimensions ι(n−1)+1 and exact average cosine of each layer's vectors.

    Parameters
    ----------
    layers : dict
        layer index -> array of shape (n_tokens, n_features), e.g. ``TokenStream.layers`` from
        :func:`replib.embeddings.embed_token_stream` (code layer 0 = output of the first block,
        as in Cai et al. :cite:`cai2021isotropy` and the IsoScore authors' per-layer results
        :cite:`rudman2022isoscore`).
    model : str
        A label for the ``model`` column.

    Returns
    -------
    pandas.DataFrame
        Columns model, layer, n_tokens, n_features, isoscore, effective_dims, avg_cosine.
    """
    if not layers:
        raise ValueError("layers is empty: nothing to measure")
    rows = []
    for layer in sorted(layers):
        X = np.asarray(layers[layer])
        rows.append(
            {
                "model": model,
                "layer": int(layer),
                "n_tokens": X.shape[0],
                "n_features": X.shape[1],
                "isoscore": isoscore(X),
                "effective_dims": effective_dimensions(X),
                "avg_cosine": avg_pairwise_cosine(X),
            }
        )
    return pd.DataFrame(rows)
