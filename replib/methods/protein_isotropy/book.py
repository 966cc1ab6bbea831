"""This book's own protein language model (an ESM-2-style masked LM trained from scratch on Swiss-Prot by
:mod:`replib.training`) measured as the paper's models are :cite:`hakim2025protein`. Not a model of the
paper."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...embeddings import embed_proteins
from ...models import load_trained
from ...training import trained_model
from .isotropy import HAKIM2025_REPORTED, global_isotropy
from .pairs import correlation_table, embedding_pair_stats
from .residues import accumulate_residues


def load_book_model(profile: str, seed: int = 0):
    """This book's own ESM-2-style masked protein LM, trained from scratch on Swiss-Prot by
    :func:`replib.training.trained_model` at ``profile``'s sizes (read from the training cache, or trained
    now: the ``training_dynamics`` chapter and this chapter share the one artefact), loaded through
    :func:`replib.models.load_trained` (sha256-verified). Not a model of the paper.

    Returns
    -------
    (LoadedModel, TrainRun)
    """
    run = trained_model("protein", profile, seed)
    return load_trained(run.final_dir, name="book-esm-trained"), run


def book_model_analysis(
    lm,
    seqs_global: Sequence[str],
    n_pair: int,
    pairs,
    aln,
    *,
    max_length: int,
    n_local: int,
    min_ratio: float,
    cache_dir=None,
    progress: bool = True,
) -> dict:
    """The protein chapter's measurements for one model, as for the paper's models.

    Global isotropy of the mean-pooled last layer (:func:`global_isotropy`) and per layer; per-residue
    isotropy over the first ``n_local`` proteins (:func:`accumulate_residues`); the embedding-distance vs
    alignment correlations (Pearson and Spearman) on the pairs of the first ``n_pair`` proteins.

    Returns
    -------
    dict with ``global`` (dict), ``layer_isoscores`` (list), ``local`` (DataFrame),
    ``local_mean_eff_dims`` (float), ``pair_table`` (DataFrame of pair measures), ``corr`` (DataFrame).
    """
    layers = tuple(range(lm.spec.n_layers + 1))
    emb = embed_proteins(lm, seqs_global, layers=layers, max_length=max_length, cache_dir=cache_dir, progress=progress)
    E = emb.pooled[layers[-1]]
    acc = accumulate_residues(
        lm, list(seqs_global[:n_local]), layer=-1, max_length=max_length, min_ratio=min_ratio, progress=progress
    )
    df = pd.concat([embedding_pair_stats(E[:n_pair], pairs), aln[["score", "identity"]]], axis=1)
    corr = correlation_table({"book": df}).drop(columns="embedding")
    return {
        "global": global_isotropy(E),
        "layer_isoscores": [global_isotropy(emb.pooled[layer])["isoscore"] for layer in layers],
        "local": acc.table(),
        "local_mean_eff_dims": acc.mean_effective_dimensions(),
        "pair_table": df,
        "corr": corr,
    }


def book_records(book: dict, run) -> dict:
    """The trained model's claimed numbers (``book_esm_...``): its weights' sha256, global isotropy, the
    fraction of its width used, IsoScore per layer, the local mean and the Pearson correlations of its pair
    measures."""
    g = book["global"]
    out = {"book_esm_weights_sha256": run.sha256()["model.safetensors"]}
    out.update({f"book_esm_{stat}": g[stat] for stat in ("isoscore", "eff_dims", "eff_dims_ceil", "avg_cosine")})
    out["book_esm_eff_dims_frac"] = g["eff_dims"] / g["n_features"]
    out["book_esm_layer_isoscores"] = book["layer_isoscores"]
    out["book_esm_local_mean_eff_dims"] = book["local_mean_eff_dims"]
    pearson = book["corr"].set_index("method").loc["pearson"]
    for col, value in pearson.items():
        a, b = col.split("–")
        out[f"book_esm_corr_{a}_{b}"] = float(value)
    return out


def book_side_table(glob: pd.DataFrame, book: dict) -> pd.DataFrame:
    """Width, IsoScore, effective dimensions and average cosine of the composition baselines, the trained
    model and the paper's reported models, side by side."""
    cols = ["n_features", "isoscore", "eff_dims", "avg_cosine"]
    side = glob.set_index("embedding").loc[["aa_composition", "2mer_composition"], cols]
    side.loc["book ESM (trained here)"] = [book["global"][k] for k in cols]
    for name, v in HAKIM2025_REPORTED.items():
        side.loc[f"{name} (paper, [S])"] = [v["n"], v["isoscore"], v["eff_dims"], np.nan]
    return side
