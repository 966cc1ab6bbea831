"""Isotropy of every checkpoint and layer of a training run, and of its input embedding matrix."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from .._io import atomic_path
from ..metrics import (
    avg_pairwise_cosine,
    effective_dimensions,
    isoscore,
    isoscore_star,
    partition_isotropy,
    rogue_dimensions,
    s_inter,
    s_intra,
)
from ..metrics.lid import lid_mle
from ..models.base import default_device
from .data import protein_batch, text_batch
from .loop import TrainRun, load_checkpoint_model, prepare_data
from .quality import FLATTENING, flattening, residue_counts

#: IsoScore* settings: a small sample (``n_star`` points) shrunk towards the covariance of all points
ISOSCORE_STAR = {"n_star": 64, "zeta": 0.25}
#: BLAS threads of the measurements: their matrices (about a thousand tokens by a few hundred features) are
#: too small for a second thread to pay, and with the other core busy a pool of two spins at its barriers
#: (measured on 2 busy cores: IsoScore of 1,000 x 128 points, 0.9 ms of CPU on one thread, 38 ms on two)
MEASURE_THREADS = 1


def eval_inputs(run: TrainRun, n_tokens: int, data: dict | None = None) -> dict:
    """Fixed evaluation inputs of a run: held-out protein sequences (unmasked) or windows of the
    evaluation text, enough for ``n_tokens`` non-special token positions.

    Returns ``input_ids``, ``attention_mask`` (int64 arrays) and ``positions`` (bool, the token
    positions to keep: residues, not ``<cls>``/``<eos>``/padding), at most ``n_tokens`` True.
    """
    data = data if data is not None else prepare_data(run.task, run.cfg, run.seed, run.dir)
    L = run.cfg["seq_len"]
    if run.task == "protein":
        val = data["val_seqs"]
        n_seq = min(len(val), int(np.ceil(n_tokens / (L - 2))) + 1)
        b = protein_batch(val, 0, run.seed, 0, L, stream=2, indices=range(n_seq))
        ids = b["clean_ids"]
        keep = b["attention_mask"].astype(bool) & (ids > 3)  # ids 0..3: <cls>, <pad>, <eos>, <unk>
    else:
        stream = data["eval_stream"]
        n_win = min(int(np.ceil(n_tokens / L)), len(stream) // L)
        b = text_batch(stream, 0, run.seed, 0, L, starts=np.arange(n_win) * L)
        ids = b["input_ids"]
        keep = np.ones_like(ids, dtype=bool)
    flat = np.flatnonzero(keep.ravel())[:n_tokens]
    positions = np.zeros(keep.size, dtype=bool)
    positions[flat] = True
    return {"input_ids": ids, "attention_mask": b["attention_mask"], "positions": positions.reshape(keep.shape)}


def hidden_states(model, inputs: dict) -> list[np.ndarray]:
    """Per-layer token representations (layer 0 = embedding output) at ``inputs["positions"]``, float64; the
    forward pass runs where the model is (a GPU in the paper profile), the measures on the CPU."""
    dev = next(model.parameters()).device
    with torch.no_grad():
        out = model(
            input_ids=torch.from_numpy(inputs["input_ids"]).to(dev),
            attention_mask=torch.from_numpy(inputs["attention_mask"]).to(dev),
            output_hidden_states=True,
        )
    pos = torch.from_numpy(inputs["positions"]).to(dev)
    return [h[pos].double().cpu().numpy() for h in out.hidden_states]


def measure_layer(X, types, mcfg: dict, seed: int = 0) -> dict:
    """Every isotropy measure of one point cloud (rows = token representations, ``types`` = token ids).

    IsoScore and effective dimensions :cite:`rudman2022isoscore`; IsoScore* :cite:`rudman2024stable` of a
    64-point sample shrunk (ζ = 0.25) towards the covariance of all points; the exact average cosine
    :cite:`ethayarajh2019contextual`; I(W) in log10 :cite:`mu2018allbutthetop`; mean LID (Cai's MLE,
    euclidean) and the inter-/intra-type cosines :cite:`cai2021isotropy`; the rogue dimensions' share of
    the average cosine :cite:`timkey2021rogue`.
    """
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(seed)
    sub = X[rng.choice(len(X), size=min(ISOSCORE_STAR["n_star"], len(X)), replace=False)]
    rogue = rogue_dimensions(X, k=mcfg["n_rogue"])
    top1 = rogue_dimensions(X, k=1)
    k = min(mcfg["lid_k"], len(X) - 2)
    return {
        "isoscore": isoscore(X),
        "isoscore_star": isoscore_star(sub, np.cov(X, rowvar=False), ISOSCORE_STAR["zeta"]),
        "eff_dims": effective_dimensions(X),
        "eff_dims_frac": effective_dimensions(X) / X.shape[1],
        "avg_cos": avg_pairwise_cosine(X),
        "log10_IW": partition_isotropy(X).log10,
        "lid": lid_mle(X, k=k, metric="euclidean", seed=seed).mean,
        "s_inter": s_inter(X, types, seed=seed),
        "s_intra": s_intra(X, types, mcfg["max_per_type"], seed=seed),
        "rogue_share": rogue.share,
        "rogue_top1_share": top1.share,
        "rogue_top_dim": int(top1.dims[0]),
        "norm_mean": float(np.linalg.norm(X, axis=1).mean()),
    }


def embedding_frequency_stats(W, counts) -> dict:
    """Isotropy of an input embedding matrix and the imprint of token frequency on it.

    Over the token ids seen in the training data: IsoScore, average cosine and I(W) (log10) of the rows; the
    Spearman correlation of log frequency with (a) the projection on the top principal direction of the centred
    rows and (b) the row norm (:func:`frequency_projection`); and the rare–frequent gap: the distance between the
    mean embedding of the rarer and of the more frequent half of the tokens, divided by the mean row norm — the
    "representation degeneration" account :cite:`gao2019representation` predicts that rare tokens are pushed
    together, away from frequent ones, by the softmax gradient.
    """
    W, n_seen = np.asarray(W, dtype=np.float64), int((np.asarray(counts) >= 1).sum())
    if n_seen < 4:
        raise ValueError(f"only {n_seen} token ids occur >= 1 times; need at least 4")
    f = frequency_projection(W, counts)
    E, logf, norm = W[f.token_id.to_numpy()], f.log_freq.to_numpy(), f.norm.to_numpy()
    rare = logf <= np.median(logf)
    gap = np.linalg.norm(E[rare].mean(axis=0) - E[~rare].mean(axis=0)) / norm.mean()
    return {
        "emb_isoscore": isoscore(E),
        "emb_avg_cos": avg_pairwise_cosine(E),
        "emb_log10_IW": partition_isotropy(E).log10,
        "freq_pc1_spearman": float(abs(spearmanr(logf, f.pc1.to_numpy())[0])),  # the sign of pc1 is immaterial
        "freq_norm_spearman": float(spearmanr(logf, norm)[0]),
        "rare_frequent_gap": float(gap),
        "n_tokens_seen": n_seen,
    }


def _measure_files(run: TrainRun, mcfg: dict) -> tuple[Path, Path, Path]:
    """A run's measurement files, keyed by the settings and the source of this module."""
    source = Path(__file__).read_text(encoding="utf-8")
    key = hashlib.sha256(json.dumps({"measure": mcfg, "code": source}, sort_keys=True).encode()).hexdigest()[:10]
    return tuple(run.dir / f"measure-{key}-{what}" for what in ("layers.csv", "embedding.csv", "ends.npz"))


def measure_run(run: TrainRun, mcfg: dict, *, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Measure every checkpoint of a finished run; results cached beside the run (``measure-<key>-*``, keyed
    by ``mcfg`` and this module's source), with the last layer's representations at the first and the final
    checkpoint (:func:`end_layers`).

    Returns
    -------
    layers : DataFrame
        One row per (step, layer) with :func:`measure_layer`'s columns.
    embeddings : DataFrame
        One row per step with :func:`embedding_frequency_stats`' columns, validation loss and perplexity.
    """
    f_layers, f_emb, f_ends = _measure_files(run, mcfg)
    if f_layers.exists() and f_emb.exists() and f_ends.exists():
        return pd.read_csv(f_layers), pd.read_csv(f_emb)
    data = prepare_data(run.task, run.cfg, run.seed, run.dir)
    inputs = eval_inputs(run, mcfg["n_tokens"], data)
    types = inputs["input_ids"][inputs["positions"]]
    counts = data["counts"] if "counts" in data else residue_counts(data["train"], data["vocab_size"])
    log = {r["step"]: r for r in run.log()}
    rows, erows = [], []
    with threadpool_limits(MEASURE_THREADS):
        for step in tqdm(run.steps, desc=f"measure {run.task}", disable=not progress):
            model = load_checkpoint_model(run, step)
            states = hidden_states(model.to(default_device()), inputs)
            for layer, X in enumerate(states):
                rows.append({"step": step, "layer": layer, **measure_layer(X, types, mcfg, seed=run.seed)})
            if step == run.steps[0]:
                first = X  # the last layer
            if step == run.steps[-1]:
                final_blocks = np.stack(states[1:])  # every block's output at the end (the depth ordering)
            W = model.get_input_embeddings().weight.detach().double().cpu().numpy()
            erows.append(
                {
                    "step": step,
                    "val_loss": log[step]["val_loss"],
                    "val_ppl": log[step]["val_ppl"],
                    **embedding_frequency_stats(W, counts),
                }
            )
    layers, emb = pd.DataFrame(rows), pd.DataFrame(erows)
    with atomic_path(f_ends) as tmp, tmp.open("wb") as fh:
        groups = np.nonzero(inputs["positions"])[0]  # the window (text) or sequence (protein) of each token
        # final_blocks' last block is the last layer at the final checkpoint
        np.savez(fh, first=first, final_blocks=final_blocks, types=types, groups=groups)
    for df, f in ((layers, f_layers), (emb, f_emb)):
        with atomic_path(f) as tmp:
            df.to_csv(tmp, index=False)
    return layers, emb


def end_layers(run: TrainRun, mcfg: dict) -> dict:
    """The last layer's representations of :func:`measure_run`'s evaluation tokens at the first and the final
    checkpoint, and every block's at the final one, as it measured them (read from its cache; measured now when
    absent).

    Returns
    -------
    dict
        ``first``, ``final`` (arrays (n_tokens, hidden), float64), ``final_blocks`` (array (n_blocks, n_tokens,
        hidden): layers 1..L at the final checkpoint), ``types`` (the token ids) and ``groups`` (the evaluation
        window, text, or held-out sequence, protein, of each token).
    """
    f_ends = _measure_files(run, mcfg)[2]
    if not f_ends.exists():
        measure_run(run, mcfg, progress=False)
    with np.load(f_ends, allow_pickle=False) as z:
        out = {k: z[k] for k in ("first", "final_blocks", "types", "groups")}
    return {**out, "final": out["final_blocks"][-1]}


def frequency_projection(W, counts) -> pd.DataFrame:
    """Per seen token id: log frequency, projection on the top principal direction (sign fixed so that it
    correlates positively with log frequency) and row norm — the data of the frequency plot."""
    W, counts = np.asarray(W, dtype=np.float64), np.asarray(counts)
    seen = np.flatnonzero(counts >= 1)
    E = W[seen] - W[seen].mean(axis=0)
    proj = E @ np.linalg.svd(E, full_matrices=False)[2][0]
    logf = np.log(counts[seen].astype(np.float64))
    if spearmanr(logf, proj)[0] < 0:
        proj = -proj
    return pd.DataFrame({"token_id": seen, "log_freq": logf, "pc1": proj, "norm": np.linalg.norm(W[seen], axis=1)})


def summarize_run(layers: pd.DataFrame, emb: pd.DataFrame) -> dict:
    """The chapter's claimed quantities of one run, from :func:`measure_run`'s tables.

    ``last`` is the last layer; ``final`` the last checkpoint. ``half_rise_step_frac``: the first
    checkpoint step at which the last layer's average cosine has made half of its step-0→final change,
    over the total number of steps ("how early does anisotropy appear"). ``depth_spearman_final``: Spearman
    correlation of layer index (1..L, the embedding output excluded) with the average cosine at the final
    checkpoint ("grows with depth").
    """
    last, first_step, final_step = layers.layer.max(), layers.step.min(), layers.step.max()
    L = layers[layers.layer == last].set_index("step").sort_index()
    c0, c1 = L.avg_cos.loc[first_step], L.avg_cos.loc[final_step]
    half = c0 + 0.5 * (c1 - c0)
    reached = L.index[(L.avg_cos - half) * np.sign(c1 - c0) >= 0]
    fin = layers[(layers.step == final_step) & (layers.layer >= 1)]
    e = emb.set_index("step").sort_index()
    return {
        "step0_avg_cos_last": float(c0),
        "final_avg_cos_last": float(c1),
        "avg_cos_rises": bool(c1 > c0),
        "step0_isoscore_last": float(L.isoscore.loc[first_step]),
        "final_isoscore_last": float(L.isoscore.loc[final_step]),
        "isoscore_falls": bool(L.isoscore.loc[final_step] < L.isoscore.loc[first_step]),
        "half_rise_step_frac": float(reached[0] / final_step) if len(reached) else float("nan"),
        "depth_spearman_final": float(spearmanr(fin.layer, fin.avg_cos)[0]),
        "rogue_share_final_last": float(L.rogue_share.loc[final_step]),
        "rogue_share_step0_last": float(L.rogue_share.loc[first_step]),
        "sintra_gt_sinter_final": bool(L.s_intra.loc[final_step] > L.s_inter.loc[final_step]),
        "val_loss_step0": float(e.val_loss.loc[first_step]),
        "val_loss_final": float(e.val_loss.loc[final_step]),
        "val_loss_drops": bool(e.val_loss.loc[final_step] < e.val_loss.loc[first_step]),
        "val_ppl_final": float(e.val_ppl.loc[final_step]),
        "freq_pc1_spearman_step0": float(e.freq_pc1_spearman.loc[first_step]),
        "freq_pc1_spearman_final": float(e.freq_pc1_spearman.loc[final_step]),
        "rare_gap_ratio": float(e.rare_frequent_gap.loc[final_step] / e.rare_frequent_gap.loc[first_step]),
        "emb_isoscore_step0": float(e.emb_isoscore.loc[first_step]),
        "emb_isoscore_final": float(e.emb_isoscore.loc[final_step]),
    }


def training_quality(run: TrainRun) -> dict:
    """How far a finished run trained: its final validation perplexity beside the unigram baseline, and the
    flattening of its validation curve (:mod:`replib.training.quality`).

    Returns
    -------
    dict
        ``unigram_ppl`` (the baseline's perplexity on the same validation tokens), ``ppl_vs_unigram`` (final
        validation perplexity / unigram perplexity, i.e. ``exp`` of the loss difference),
        ``val_loss_rel_drop_last_quarter`` (:func:`~replib.training.quality.relative_drop`),
        ``val_loss_over_min`` (the final validation loss above the run's minimum, relative:
        :func:`~replib.training.quality.over_minimum`), ``train_val_gap`` (the validation loss above the loss on
        fixed training windows at the end, relative: :func:`~replib.training.quality.generalisation_gap`),
        ``flattened`` (all three below their bounds in ``FLATTENING``) and ``n_val_tokens`` (validation tokens
        scored).
    """
    log, unigram = run.log(), run.training()["unigram"]
    flat = flattening(log, FLATTENING)
    return {
        "unigram_ppl": float(unigram["val_ppl"]),
        "ppl_vs_unigram": float(log[-1]["val_ppl"] / unigram["val_ppl"]),
        "val_loss_rel_drop_last_quarter": flat["rel_drop"],
        "val_loss_over_min": flat["over_min"],
        "train_val_gap": flat["gap"],
        "flattened": flat["flattened"],
        "n_val_tokens": int(unigram["n_tokens"]),
    }
