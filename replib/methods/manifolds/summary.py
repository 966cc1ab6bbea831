"""The chapter's claimed numbers and tables, read from the per-layer results of
:func:`~replib.methods.manifolds.analyse_models` (one row per model, corpus and layer) :cite:`cai2021isotropy`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .setup import PAPER_LID_TABLE3


def anisotropy_records(results: pd.DataFrame) -> dict:
    """Smallest raw S_inter and S_intra, largest per-cluster S_inter, and the smallest and mean drop of S_inter
    (raw minus per-cluster centred) and the smallest drop of S_intra over every layer."""
    drop_inter = results["s_inter"] - results["s_inter_cluster"]
    return {
        "s_inter_min": results["s_inter"].min(),
        "s_intra_min": results["s_intra"].min(),
        "s_inter_cluster_max": results["s_inter_cluster"].max(),
        "s_inter_drop_min": drop_inter.min(),
        "s_inter_drop_mean": drop_inter.mean(),
        "s_intra_drop_min": (results["s_intra"] - results["s_intra_cluster"]).min(),
    }


def cosine_long(results: pd.DataFrame) -> pd.DataFrame:
    """S_inter and S_intra, raw and per-cluster centred, in long form for plotting: columns model, corpus,
    layer, quantity, cosine, measure (``S_inter``/``S_intra``) and space (``raw``/``per-cluster centred``)."""
    long = results.melt(
        id_vars=["model", "corpus", "layer"],
        value_vars=["s_inter", "s_inter_cluster", "s_intra", "s_intra_cluster"],
        var_name="quantity",
        value_name="cosine",
    )
    measure = long["quantity"].str.extract(r"(s_inter|s_intra)")[0]
    long["measure"] = measure.map({"s_inter": "S_inter", "s_intra": "S_intra"})
    long["space"] = np.where(long["quantity"].str.endswith("_cluster"), "per-cluster centred", "raw")
    return long


def smallest_drop(results: pd.DataFrame, extras: dict) -> tuple[pd.Series, pd.DataFrame]:
    """The layer where per-cluster centring lowers S_inter least (its results row) and its clusters."""
    drop = results["s_inter"] - results["s_inter_cluster"]
    worst = results.loc[drop.idxmin()]
    clusters = pd.DataFrame(extras[(worst["model"], worst["corpus"], int(worst["layer"]))]["per_cluster"])
    return worst, clusters


def silhouette_table(extras: dict) -> pd.DataFrame:
    """The sampled silhouette of every candidate k of every layer: columns model, corpus, layer, k, silhouette."""
    return pd.DataFrame(
        [
            {"model": a, "corpus": b, "layer": c, "k": k, "silhouette": v}
            for (a, b, c), e in extras.items()
            for k, v in e["silhouettes"].items()
        ]
    )


def cluster_view_records(results: pd.DataFrame) -> dict:
    """Clusters left out of the IsoScore mean (fewer vectors than dimensions), the largest within-cluster
    IsoScore, and for GPT-2 (when it ran) its largest within-cluster I(W) and IsoScore."""
    out = {
        "n_deflated_clusters": int(results["n_deflated"].sum()),
        "isoscore_cluster_max": results["isoscore_cluster"].max(),
    }
    gpt2 = results[results["model"] == "GPT2"]
    if len(gpt2):
        out["partition_cluster_gpt2_max"] = gpt2["partition_cluster"].max()
        out["isoscore_cluster_gpt2_max"] = gpt2["isoscore_cluster"].max()
    return out


def lid_records(results: pd.DataFrame, glove_lid: float) -> dict:
    """The authors' LID (cosine) of static GloVe, the largest contextual value over all layers, and the mean
    over layers of each of the paper's models (``lid_cosine_bert``..., compared with Table 3)."""
    out = {"lid_static_glove": glove_lid, "lid_contextual_max": results["lid_cosine"].max()}
    for name, value in results.groupby("model")["lid_cosine"].mean().items():
        if name in PAPER_LID_TABLE3:
            out[f"lid_cosine_{name.replace('-', '').lower()}"] = value
    return out


def lid_table(results: pd.DataFrame, glove_lid: float) -> pd.DataFrame:
    """Mean LID (cosine and Euclidean) per model and corpus, GloVe's row, and Table 3's values beside them."""
    tab = results.groupby(["model", "corpus"])[["lid_cosine", "lid_euclidean"]].mean().reset_index()
    tab.loc[len(tab)] = ["GloVe-6B-50d", "-", glove_lid, np.nan]
    tab["paper (Table 3, cosine)"] = tab["model"].map({**PAPER_LID_TABLE3, "GloVe-6B-50d": np.nan})
    return tab
