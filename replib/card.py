"""The isotropy card of any model: per-layer geometry on a standard sample, beside the papers' values.

``python -m replib card MODEL [--data ...]`` loads ``MODEL`` with :func:`replib.models.resolve_model` (a
registry key, a folder, a Hugging Face id), embeds a standard sample (WikiText-2 test lines as a token
stream, as the IsoScore and manifolds chapters; Swiss-Prot sequences, residue by residue, for protein
models), and computes for every layer, with the library's own metrics:

* IsoScore :cite:`rudman2022isoscore` and IsoScore* :cite:`rudman2024stable` (a subsample of as many
  rows as dimensions, shrunk towards the full sample's covariance with weight ``zeta``);
* effective dimensions ι(n−1)+1 and the exact average cosine over all pairs;
* I(W) :cite:`mu2018allbutthetop` in log10 (:func:`replib.metrics.partition_isotropy`);
* LID, maximum likelihood (Levina–Bickel) and Cai et al.'s variant :cite:`cai2021isotropy`, cosine
  distance (:func:`replib.metrics.lid.lid_mle`);
* inter- and intra-type cosine S_inter / S_intra :cite:`cai2021isotropy` (types = token strings, or amino
  acids);
* rogue dimensions: the dimensions with the largest share of the average cosine
  (:func:`replib.metrics.cosine_contributions`).

Layers are numbered as ``hidden_states`` and as the training and protein chapters number them: layer 0 is
the embedding output, layer ``l`` the output of block ``l`` (``l = 1 .. n_layers``). Text models are read
as a token stream (Cai et al.'s windows, :func:`replib.embeddings.embed_token_stream`), which holds the
blocks' outputs only, so their cards start at layer 1 (the IsoScore and manifolds chapters' "code layer"
``c`` is card layer ``c + 1``); protein models' cards include layer 0. The papers' per-layer values are
placed on the same axis (Rudman et al.'s released layer ``c`` is the output of block ``c + 1``). In the
HTML, layers take the book's layer colour map and the papers' models its palette
(:mod:`replib.plotting`).

Each layer's row is written to ``card.json`` (atomically) as soon as it is computed: a killed run resumes
at the next layer; embeddings go through the resumable shard cache. ``card.html`` shows the rows as
plotly figures beside the values the papers report for their models (read from the papers' tables and
:data:`replib.methods.manifolds.PAPER_LID_TABLE3`).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from tqdm.auto import tqdm

from ._io import cache_root, write_json_atomic
from .data import load_lm_corpus, load_swissprot
from .embeddings import embed_proteins, embed_token_stream
from .methods.manifolds import PAPER_LID_TABLE3
from .metrics import (
    avg_pairwise_cosine,
    cosine_contributions,
    effective_dimensions,
    isoscore,
    partition_isotropy,
    s_inter,
    s_intra,
)
from .metrics.isoscore import isoscore_star
from .metrics.lid import lid_mle_variants
from .models import resolve_model
from .models.registry import PROTEIN_RECIPES
from .papers import project_tables
from .plotting import layer_colors, model_colors

#: 2: layers numbered as hidden_states (0 = embedding output); version 1 numbered the blocks from 0
CARD_VERSION = 2


@dataclass(frozen=True)
class CardConfig:
    """Sample sizes of a card (all seeded).

    Attributes
    ----------
    n_lines : int
        WikiText-2 test lines (text models).
    window : int
        Token-stream window (text models); fitted to the model: a model with fewer positions reads windows of
        as many tokens as it has positions (:func:`max_positions`).
    n_proteins : int
        Swiss-Prot 5k sequences (protein models), truncated to ``max_length`` residues.
    max_rows : int
        Rows per layer kept for the metrics (a seeded subsample of the tokens / residues).
    lid_k, lid_queries : int
        Neighbours and query points of the LID estimates.
    zeta : float
        IsoScore* shrinkage weight towards the full sample's covariance.
    n_rogue : int
        Rogue dimensions listed per layer.
    """

    n_lines: int = 400
    window: int = 256
    n_proteins: int = 100
    max_length: int = 510
    max_rows: int = 5000
    lid_k: int = 100
    lid_queries: int = 1000
    zeta: float = 0.5
    n_rogue: int = 3
    seed: int = 0


# ----------------------------------------------------------------------------------------- samples
def max_positions(lm) -> int | None:
    """The most tokens one forward of ``lm`` takes, or None when neither its configuration nor its tokenizer
    says: the smaller of the position table (``n_positions`` / ``max_position_embeddings``, less the padding
    offset of RoBERTa-style positions) and the tokenizer's ``model_max_length`` (when it is a real limit)."""
    conf = getattr(lm.model, "config", None)
    limits = []
    for name in ("n_positions", "max_position_embeddings"):
        n = getattr(conf, name, None)
        if isinstance(n, int) and n > 0:
            roberta = "roberta" in str(getattr(conf, "model_type", ""))  # positions start after the padding index
            limits.append(n - (getattr(conf, "pad_token_id", 0) or 0) - 1 if roberta else n)
    n = getattr(lm.tokenizer, "model_max_length", None)
    if isinstance(n, int) and 0 < n < 1_000_000:  # transformers' "no limit" is a huge integer
        limits.append(n)
    return min(limits) if limits else None


def text_sample(n_lines: int) -> list[str]:
    """The first ``n_lines`` non-empty lines of WikiText-2 test (:func:`replib.data.load_lm_corpus`)."""
    return [ln for ln in load_lm_corpus("wikitext2", "test") if ln.strip()][:n_lines]


def model_layers(lm, cfg: CardConfig, data=None, cache_dir=None, progress: bool = True):
    """Per-layer row matrices and row types of a model on the card's sample.

    Returns
    -------
    layers : dict layer -> ndarray (n_rows, d) float32
        Layer ``l`` = ``hidden_states[l]``: 0 = embedding output (protein models only), ``l`` = output of
        block ``l``.
    types : ndarray of str (n_rows,)
        Token strings (text) or amino acids (protein).
    sample : dict
        What was embedded (data set, sizes).
    """
    if lm.spec.recipe in PROTEIN_RECIPES:
        if lm.spec.recipe == "proteinbert":
            raise ValueError("ProteinBERT has no per-layer residue stream in replib; its card is not supported")
        seqs = (
            list(data) if data is not None else load_swissprot("5k")["sequence"].astype(str).tolist()[: cfg.n_proteins]
        )
        idx = tuple(range(0, lm.spec.n_layers + 1))
        emb = embed_proteins(
            lm,
            seqs,
            layers=idx,
            max_length=cfg.max_length,
            return_residues=True,
            cache_dir=cache_dir,
            progress=progress,
        )
        layers = {i: np.concatenate(emb.residues[i]) for i in idx}
        types = np.array([a for k, L in zip(emb.index, emb.lengths) for a in seqs[k].upper()[:L]])
        sample = {"data": "Swiss-Prot 5k" if data is None else "user sequences", "n_sequences": len(emb.index)}
    else:
        lines = list(data) if data is not None else text_sample(cfg.n_lines)
        window = min(cfg.window, max_positions(lm) or cfg.window)
        ts = embed_token_stream(lm, lines, window=window, cache_dir=cache_dir, progress=progress)
        layers = {code + 1: X for code, X in ts.layers.items()}  # code layer c = hidden_states[c + 1]
        types = np.asarray(ts.tokens)
        sample = {
            "data": "WikiText-2 test" if data is None else "user lines",
            "n_lines": len(lines),
            "window": window,
        }
    n = len(types)
    keep = (
        np.sort(np.random.default_rng(cfg.seed).choice(n, cfg.max_rows, replace=False))
        if n > cfg.max_rows
        else np.arange(n)
    )
    sample.update(n_rows_total=int(n), n_rows=int(len(keep)))
    return {k: np.asarray(v)[keep] for k, v in layers.items()}, types[keep], sample


# ----------------------------------------------------------------------------------------- metrics
def layer_card(X, types, cfg: CardConfig) -> dict:
    """Every card metric of one layer's rows ``X`` (n_rows, d) with their types.

    Returns
    -------
    dict
        isoscore, isoscore_star, effective_dims, avg_cosine, iw_log10, lid_mle, lid_cai, s_inter, s_intra,
        rogue_dims (indices), rogue_share (their share of the average cosine), n_rows, n_features.
    """
    rows = X  # as given: IsoScore keeps float32 rows on its float32 path, as the chapters score them
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    rng = np.random.default_rng(cfg.seed)
    C0 = np.cov(X, rowvar=False, ddof=1)
    small = X[rng.choice(n, min(n, d), replace=False)]
    k = min(cfg.lid_k, n - 2)
    q = min(cfg.lid_queries, n)
    lid = lid_mle_variants(X, k, "cosine", ("levina_bickel", "cai"), n_queries=q, seed=cfg.seed)  # one search
    lb, cai = lid["levina_bickel"], lid["cai"]
    contrib = cosine_contributions(X)
    total = float(contrib.sum())
    rogue = np.argsort(-contrib)[: cfg.n_rogue]
    types = np.asarray(types)
    return {
        "n_rows": int(n),
        "n_features": int(d),
        "isoscore": isoscore(rows),
        "isoscore_star": isoscore_star(small, C0, cfg.zeta),
        "effective_dims": effective_dimensions(rows),
        "avg_cosine": avg_pairwise_cosine(X),
        "iw_log10": float(partition_isotropy(X).log10),
        "lid_mle": float(lb.mean),
        "lid_cai": float(cai.mean),
        "lid_k": int(k),
        "s_inter": float(s_inter(X, types, cfg.seed)),
        "s_intra": float(s_intra(X, types, 1000, cfg.seed)),
        "rogue_dims": [int(i) for i in rogue],
        "rogue_share": float(contrib[rogue].sum() / total) if total != 0 else float("nan"),
    }


# ----------------------------------------------------------------------------------------- paper values
def paper_values() -> list[dict]:
    """The papers' reported per-model values the card is placed beside, read from the papers' tables
    (:mod:`replib.papers`, ``data/papers/<paper>.csv``).

    IsoScore per layer (Rudman et al. 2022, rows ``layers/<model>/<layer>``), log10 I(W) of the STS-B token
    pools (Rajaee & Pilehvar 2021, Table 1 baseline rows ``T1/<model>/k0``), the protein models' IsoScore and
    effective dimensions (Hakim et al. 2025, rows ``global/<model>/<stat>``), and Cai et al.'s Table 3 cosine
    LID (:data:`replib.methods.manifolds.PAPER_LID_TABLE3`, read from the same tables). Without the tables (an
    installed package away from its project) nothing is returned.

    Returns
    -------
    list of dict with keys model, metric, layer (the card's numbering: Rudman et al.'s released layer ``c``,
    the output of block ``c + 1``, is layer ``c + 1``; None = last layer / mean over layers), value, source
    """
    cai = "Cai et al. 2021, Table 3 (mean over layers, cosine)"
    out = [dict(model=m, metric="lid_cai", layer=None, value=v, source=cai) for m, v in PAPER_LID_TABLE3.items()]
    tables = project_tables()
    selections = [  # (paper, id pattern, metric); the pattern's groups are the model and the layer or statistic
        ("rudman2022", r"layers/(\w+)/(\d+)$", "isoscore"),
        ("rajaee2021", r"T1/(\w+)/k0$", "iw_log10"),
        ("hakim2025", r"global/(\w+)/(isoscore|eff_dims|avg_cosine)$", None),
    ]
    for paper, pattern, metric in selections:
        for n in tables.get(paper, {}).values():
            m = re.match(pattern, n.id)
            if m is None:
                continue
            layer = int(m.group(2)) + 1 if metric == "isoscore" else None  # the authors' layer c: block c + 1's output
            value = float(np.log10(n.value)) if metric == "iw_log10" else n.value
            metric_name = metric or {"eff_dims": "effective_dims"}.get(m.group(2), m.group(2))
            out.append(dict(model=m.group(1), metric=metric_name, layer=layer, value=value, source=n.cited()))
    return out


# ----------------------------------------------------------------------------------------- the card
def compute_card(
    model,
    out_dir,
    *,
    data=None,
    cfg: CardConfig | None = None,
    cache_dir=None,
    device=None,
    progress: bool = True,
) -> dict:
    """Compute (or resume) the isotropy card of ``model`` and write ``card.json`` and ``card.html``.

    Parameters
    ----------
    model : str, path-like, ModelRef or LoadedModel
        Anything :func:`replib.models.resolve_model` accepts (a Hub revision is part of the spec, ``org/name@rev``).
    out_dir : path-like
    data : sequence of str, optional
        Text lines (text models) or amino-acid sequences (protein models) instead of the standard sample.
    cfg : CardConfig
    cache_dir : path-like, optional
        Embedding shard cache (default ``$REPLIB_CACHE_DIR/embeddings``).
    device : str, optional
        Default: CUDA when available.

    Returns
    -------
    dict
        The card (also in ``out_dir/card.json``).
    """
    cfg = cfg or CardConfig()
    out_dir = Path(out_dir)
    # no folder before the first layer is written (write_json_atomic makes it): a refused model or missing data
    # leaves nothing behind
    lm = resolve_model(model, device=device, seed=cfg.seed)
    identity = {
        "name": lm.name,
        "source": lm.source,
        "recipe": lm.spec.recipe,
        "revision": lm.spec.revision,
        "weights_sha256": lm.weights_sha256,
        "n_layers": lm.spec.n_layers,
        "hidden_size": lm.spec.hidden_size,
        # the content the layers depend on (weights, config.json, tokenizer files, Hub commit), as JSON has it
        "content": json.loads(json.dumps(getattr(lm, "identity", None) or {}, sort_keys=True, default=str)),
    }
    data_hash = None if data is None else hashlib.sha256("\n".join(map(str, data)).encode()).hexdigest()
    settings = dict(asdict(cfg), data_sha256=data_hash)
    path = out_dir / "card.json"
    card = None
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("model") == identity and old.get("settings") == settings and old.get("version") == CARD_VERSION:
            card = old  # resume: the finished layers are kept
    if card is None:
        card = {"version": CARD_VERSION, "model": identity, "settings": settings, "layers": {}}
    n_layers = lm.spec.n_layers + (lm.spec.recipe in PROTEIN_RECIPES)  # protein cards include layer 0
    if "sample" in card and len(card["layers"]) == n_layers:  # resumed and complete: nothing to embed
        layers = {}
    else:
        layers, types, sample = model_layers(lm, cfg, data, cache_dir or cache_root("embeddings"), progress)
        card["sample"] = sample
    for layer in tqdm(sorted(layers), desc=f"card {lm.name}", disable=not progress):
        if str(layer) in card["layers"]:
            continue
        card["layers"][str(layer)] = layer_card(layers[layer], types, cfg)
        write_json_atomic(path, card)
    card["paper_values"] = paper_values()
    write_json_atomic(path, card)
    (out_dir / "card.html").write_text(card_html(card))
    return card


METRIC_LABELS = {
    "isoscore": "IsoScore",
    "isoscore_star": "IsoScore*",
    "effective_dims": "effective dimensions",
    "avg_cosine": "average cosine (exact)",
    "iw_log10": "log10 I(W)",
    "lid_mle": "LID (MLE, cosine)",
    "lid_cai": "LID (Cai et al., cosine)",
    "s_inter": "S_inter (inter-type cosine)",
    "s_intra": "S_intra (intra-type cosine)",
    "rogue_share": "share of avg cosine in rogue dims",
}


def card_html(card: dict) -> str:
    """A self-contained HTML page: the model's provenance, one plotly figure per metric (the model's layers,
    the papers' values as labelled markers), and the table of every layer."""
    rows = pd.DataFrame([dict(layer=int(k), **v) for k, v in card["layers"].items()]).sort_values("layer")
    ident = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in {**card["model"], **card.get("sample", {})}.items()
    )
    table = rows.drop(columns=["rogue_dims"]).to_html(index=False, float_format=lambda v: f"{v:.4g}")
    rogue = "".join(
        f"<li>layer {r.layer}: dims {r.rogue_dims} carry {r.rogue_share:.1%} of the average cosine</li>"
        for r in rows.itertuples()
    )
    notes = (
        "Layer 0 is the embedding output and layer <em>l</em> the output of block <em>l</em>, as in the "
        "training and protein chapters (text models are read as a token stream of the blocks' outputs, so "
        "their cards start at layer 1). Layers are coloured by the book's layer colour map. Diamonds are "
        "values the papers report for <em>their</em> models (hover for the source), placed on the same layer "
        "axis; a paper value without a layer is drawn at the last layer (I(W), protein statistics) or is a "
        "mean over layers (LID, Table 3). Samples differ from the papers' (see the sample above): the "
        "comparison places the model, it does not reproduce anything."
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Isotropy card</title>"
        "<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse} "
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>"
        f"<h1>Isotropy card: {html.escape(card['model']['name'])}</h1><table>{ident}</table><p>{notes}</p>"
        + card_figure(card, rows).to_html(full_html=False, include_plotlyjs=True)
        + f"<h2>Rogue dimensions</h2><ul>{rogue}</ul><h2>Every layer</h2>{table}</body></html>"
    )


def card_figure(card: dict, rows: pd.DataFrame) -> go.Figure:
    """One subplot per metric: the model's layers (markers in the book's layer colours, see
    :func:`replib.plotting.layer_colors`) and the papers' values (diamonds, one palette colour per model)."""
    metrics = list(METRIC_LABELS)
    n_rows = (len(metrics) + 1) // 2
    fig = make_subplots(rows=n_rows, cols=2, subplot_titles=[METRIC_LABELS[m] for m in metrics], vertical_spacing=0.06)
    paper = pd.DataFrame(card.get("paper_values") or [], columns=["model", "metric", "layer", "value", "source"])
    shades = layer_colors(rows["layer"], card["model"].get("n_layers") or None)
    models = model_colors(paper["model"])
    last = int(rows["layer"].max())
    for i, m in enumerate(metrics):
        at = {"row": i // 2 + 1, "col": i % 2 + 1}
        fig.add_trace(
            go.Scatter(
                x=rows["layer"],
                y=rows[m],
                mode="lines+markers",
                name=card["model"]["name"],
                showlegend=i == 0,
                line={"color": "lightgrey"},
                marker={"color": [shades[int(layer)] for layer in rows["layer"]], "size": 9},
            ),
            **at,
        )
        for p in paper[paper.metric == m].itertuples():
            fig.add_trace(
                go.Scatter(
                    x=[last if p.layer is None or pd.isna(p.layer) else int(p.layer)],
                    y=[p.value],
                    mode="markers+text",
                    text=[p.model],
                    textposition="top center",
                    marker={"symbol": "diamond", "size": 9, "color": models[p.model]},
                    name=f"{p.model} (paper)",
                    hovertext=p.source,
                    showlegend=False,
                ),
                **at,
            )
    fig.update_xaxes(title_text="layer (0 = embedding output)", dtick=1)
    fig.update_layout(
        height=320 * n_rows, width=1100, title=f"Isotropy card: {card['model']['name']} (papers' models as diamonds)"
    )
    return fig
