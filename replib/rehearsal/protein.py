"""The protein chapter's parts rehearsed at Swiss-Prot size (Hakim et al.; issue 26).

* A model's part (``prot_bert``, ..., ``esm2_t33_650M-1``): the full-size random stand-in's forward passes
  through the chapter's own shard function at two sizes 4x apart (cost exponent fitted, extrapolated to the
  paper's 570,000 proteins, floating-point work counted), then the chapter's streamed statistics
  (:func:`replib.methods.protein_isotropy.stream_protein_model`) over all 486,000 proteins of the stand-in set, fed
  with vectors of the model's full width (its measured outputs, resampled). ProtBERT's part adds the
  per-residue analysis on its two samples of 5,000 proteins, fed the same way.
* ``align-k``: the real global alignments of pair range k of the 6.4 million pairs (3,578 proteins of the full
  set), through the chapter's pair engine: nothing stands in.
* ``rest``: the whole chapter from the other parts' results: the global table and the ESM-2 curves from the
  streams' states, the composition baselines over every protein, the alignment cross-check, and every pair
  table and correlation over the 6.4 million pairs.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from .._io import atomic_write, hash_array, write_json_atomic
from ..config import chapter_config, chapter_parts
from ..methods import protein_isotropy as P
from ..methods.protein_isotropy.config import stream_ranges
from ..methods.protein_isotropy.streamed import protein_layers, protein_shard_compute, stream_protein_model
from ..models.fullsize import fullsize_model, fullsize_spec
from .core import (
    MIN_MEASURED,
    Cost,
    count_flops,
    feeder,
    four_times,
    model_length_flops,
    padded_flops,
    scaled_cost,
    stats_items,
    timed,
)
from .standins import PAPER_SWISSPROT, swissprot_standin

__all__ = ["rehearse_protein"]

#: real alignments rehearsed of each pair range (the rest part's pair tables run on all ranges' together)
ALIGN_PAIRS = 20_000
#: proteins whose composition baselines are computed here (extrapolated linearly to every protein)
COMPOSITION_PROTEINS = 50_000
#: the stream's slices of proteins and the extractor's padded tokens per batch (its defaults)
PROTEIN_SLICE, PROTEIN_BATCH_TOKENS = 256, 16384
#: CPU seconds the smaller forward measurement aims at (the larger is 4x)
FORWARD_TARGET_CPU = 6.0


@lru_cache(maxsize=1)
def _proteins(seed: int, workdir: str):
    """The paper configuration and the stand-in set's proteins the chapter samples (its n_global, seeded order; the set kept
    in ``workdir`` as accession-tab-sequence lines: every part reads it in seconds)."""
    cfg = chapter_config("protein_isotropy", "paper", seed=seed)
    flat = Path(workdir) / "swissprot.tsv"
    if not flat.exists():
        sp = swissprot_standin()
        text = "".join(f"{a}\t{q}\n" for a, q in zip(sp.accession, sp.sequence))
        atomic_write(flat, lambda fh: fh.write(text), mode="w")
    rows = [line.split("\t") for line in flat.read_text().splitlines()]
    sp = pd.DataFrame(rows, columns=["accession", "sequence"])
    index, seqs = P.global_sample(sp.sequence.tolist(), cfg.n_global, seed)  # the chapter's sample
    return cfg, sp, index, seqs


def _first_size(n_params: int, scale: float) -> int:
    """Proteins of the smaller forward measurement: about FORWARD_TARGET_CPU seconds at ~360 residues and an
    assumed 30 GFLOP per CPU second (at least 1)."""
    per_protein = 2.0 * n_params * 360 / 30e9
    return max(1, int(round(FORWARD_TARGET_CPU / per_protein * scale)))


def _residues(seqs, max_length: int):
    """``units(n)``: the tokens of the first ``n`` proteins (residues up to ``max_length``, and two specials):
    the forward passes' work, which proteins of unequal length do not measure."""
    cum = np.concatenate([[0], np.cumsum([min(len(q), max_length) + 2 for q in seqs])])
    return lambda n: int(cum[min(int(n), len(seqs))])


def _padded_forward(lm, compute, seqs, n_paper: int, max_length: int, share: float, n1: int) -> tuple[float, bool]:
    """FLOPs of the stream's forward passes over ``n_paper`` proteins (``share`` of them for a shard range), and
    whether they were counted batch by batch: the chapter embeds slices of 256 proteins in its seeded order,
    each cut into length-sorted batches of 16,384 padded tokens (:func:`replib.embeddings.embed_proteins`), so
    the padding is that of those batches (:func:`~replib.rehearsal.core.padded_flops`). ProteinBERT (not a
    ``transformers`` model) is counted on its first ``n1`` proteins and scaled by tokens."""
    n = min(n_paper, len(seqs))
    if lm.spec.recipe == "proteinbert":
        units = _residues(seqs, max_length)
        return count_flops(compute, 0, n1) * units(n) * (n_paper / n) * share / units(n1), False
    lengths = [min(len(q), max_length) + 2 for q in seqs[:n]]
    flops = padded_flops(model_length_flops(lm), lengths, PROTEIN_BATCH_TOKENS, shard_size=PROTEIN_SLICE)
    return flops * (n_paper / n) * share, n == n_paper


def _basis_path(ctx, spec: str) -> Path:
    return Path(ctx.workdir) / "basis" / f"{spec}.npz"


def _stream(spec: str, seqs, cfg, ctx, basis: dict, shards=None):
    """The chapter's stream of one model's stand-in vectors (every protein, the model's full width)."""
    lm = SimpleNamespace(name=f"fullsize-{spec}", spec=fullsize_spec(spec))
    info = {"rehearsal": "feeder", "model": spec, "basis": {str(k): hash_array(v) for k, v in basis.items()}}
    per = 2.0 * len(protein_layers(lm)) * lm.spec.hidden_size**2  # a covariance update per layer and protein
    n = stats_items(len(seqs), per, ctx.stats_flops, ctx.max_items)
    return stream_protein_model(
        lm, seqs[:n], n_keep=cfg.n_pair_proteins, max_length=cfg.max_length, state_dir=Path(ctx.workdir) / "streams",
        ranges=stream_ranges(spec, "paper"), shards=shards, compute=feeder(basis, ctx.seed), info=info,
        progress=ctx.progress,
    )  # fmt: skip


def _model_part(part, ctx) -> dict:
    cfg, sp, index, seqs = _proteins(ctx.seed, str(ctx.workdir))
    spec = part.models[0]
    lm = fullsize_model(spec, seed=ctx.seed)
    layers = protein_layers(lm)
    compute = protein_shard_compute(lm, seqs, layers, cfg.max_length)
    share = 1.0 / part.shards[1] if part.shards else 1.0
    n_paper = cfg.n_global or PAPER_SWISSPROT
    paper_n = int(n_paper * share)
    units = _residues(seqs, cfg.max_length)
    paper_units = int(units(min(n_paper, len(seqs))) * n_paper / min(n_paper, len(seqs)) * share)
    n1 = _first_size(sum(p.numel() for p in lm.model.parameters()), ctx.scale)
    n2 = four_times(units, n1, len(seqs))
    forward, outs = scaled_cost(f"forward passes of {spec} (tokens)", lambda n: compute(0, n), [n1, n2], paper_units,
                                units=units, on_gpu=True)  # fmt: skip
    forward.flops_full, forward.flops_exact = _padded_forward(lm, compute, seqs, n_paper, cfg.max_length, share, n1)
    basis = {k: np.asarray(v) for k, v in outs[-1].items()}
    path = _basis_path(ctx, spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{str(k): v for k, v in basis.items()})  # the rest part feeds the same stream
    st, cpu, wall = timed(_stream, spec, seqs, cfg, ctx, basis, part.shards)
    n_here = st.n_rows
    stats = Cost(
        f"streamed statistics, {len(layers)} layer(s) x {lm.spec.hidden_size}", [n_here], [cpu], [wall], paper_n
    )
    stats.cpu_full = cpu * paper_n / max(n_here, 1)  # an accumulator's update per row: linear in the rows
    costs, records, notes = [forward, stats], {}, []
    if part.shards is None:
        key = layers[-1]
        row = P.accumulated_isotropy(st.stats[key])
        records.update({f"{spec}_{s}": row[s] for s in ("isoscore", "eff_dims", "eff_dims_ceil", "avg_cosine")})
        if lm.spec.recipe == "esm":
            records[f"esm_{spec}_layer_isoscores"] = [st.stats[k].summary()["isoscore"] for k in layers]
    if spec == "prot_bert" and "local" in (part.steps or ()):
        local_costs, local_records = _local(lm, seqs, cfg, ctx, basis[layers[-1]])
        costs += local_costs
        records.update(local_records)
    notes.append(f"{n_here:,} proteins streamed here of the profile's {n_paper:,} (the stand-in set's sample)")
    return {"model": f"fullsize {spec} (random weights)", "costs": costs, "records": records, "notes": notes}


def _local(lm, seqs, cfg, ctx, basis) -> tuple[list, dict]:
    """ProtBERT's per-residue analysis: the chapter's accumulation at two sizes (forward passes included), and
    both samples of ``cfg.n_local`` proteins folded into the per-amino-acid accumulators with full-width
    stand-in residue vectors."""
    samples = P.local_samples(seqs, cfg.n_local, cfg.local_samples)
    units = _residues(samples[0], cfg.max_length)
    full = int(sum(_residues(s, cfg.max_length)(len(s)) for s in samples))
    n1 = _first_size(sum(p.numel() for p in lm.model.parameters()), ctx.scale)
    n2 = four_times(units, n1, len(samples[0]))

    def run(n):
        return P.accumulate_residues(lm, samples[0][:n], max_length=cfg.max_length, min_ratio=0, progress=False)

    forward, _ = scaled_cost("per-residue forward passes and accumulation (tokens)", run, [n1, n2], full, units=units,
                             on_gpu=True)  # fmt: skip
    forward.flops_full = count_flops(run, n1) * full / units(n1)
    per = 2.0 * 360 * basis.shape[1] ** 2  # a residue's covariance update, ~360 residues a protein
    n_fold = stats_items(len(samples[0]), per, ctx.stats_flops / (2 * len(samples)), ctx.max_items)
    samples = [s[:n_fold] for s in samples]
    rng = np.random.default_rng(ctx.seed)

    def fold(sample):
        acc = P.ResidueIsotropy(basis.shape[1], cfg.min_ratio)
        for seq in sample:
            seq = seq.upper()[: cfg.max_length]
            R = basis[rng.integers(0, len(basis), len(seq))] + rng.standard_normal((len(seq), basis.shape[1])) * 0.05
            acc.update(seq, R)
        return acc

    accs, cpu, wall = timed(lambda: [fold(s) for s in samples])
    n_res = sum(a.count for acc in accs for a in acc.acc.values())
    stats = Cost(f"per-residue accumulators of {len(samples)} samples (stand-in vectors)", [n_res], [cpu], [wall],
                 max(full, n_res))  # fmt: skip
    stats.cpu_full = cpu * stats.full / max(n_res, 1)
    records = P.local_records(accs[0], lm.name, "prot_bert", False)
    records.update(P.sample_records(accs[0], accs[1:]))
    return [forward, stats], records


def _align_range(cfg, k: int, n_ranges: int, ctx) -> tuple[np.ndarray, int]:
    """Range ``k`` (0-based) of ``n_ranges`` equal ranges of the 6.4 million pairs of the pair proteins: its
    first :data:`ALIGN_PAIRS` pairs (``ctx.max_items``), and the range's size."""
    pairs = P.all_pairs(cfg.n_pair_proteins)
    lo, hi = k * len(pairs) // n_ranges, (k + 1) * len(pairs) // n_ranges
    n = max(ALIGN_PAIRS, math.ceil(MIN_MEASURED * (hi - lo))) if ctx.max_items is None else ctx.max_items
    return pairs[lo : lo + min(n, hi - lo)], hi - lo


def _aligned(pair_seqs, pairs, cfg, ctx) -> pd.DataFrame:
    return P.alignment_pair_stats(
        pair_seqs, pairs, out_dir=Path(ctx.workdir) / "alignments", chunk_size=cfg.chunk_size, n_jobs=1,
        progress=ctx.progress, **P.alignment_settings(cfg),
    )  # fmt: skip


def _align_part(part, ctx) -> dict:
    cfg, sp, index, seqs = _proteins(ctx.seed, str(ctx.workdir))
    pair_seqs = seqs[: cfg.n_pair_proteins]
    k, n_ranges = part.shards
    pairs, full = _align_range(cfg, k, n_ranges, ctx)
    aln, cpu, wall = timed(_aligned, pair_seqs, pairs, cfg, ctx)
    cost = Cost(f"global alignments (PAM250, gap 10/1), range {k + 1} of {n_ranges}", [len(aln)], [cpu], [wall], full)
    cost.cpu_full = cpu * full / max(len(aln), 1)  # every pair is one alignment: linear in the pairs
    notes = [
        f"{len(aln):,} real alignments of the range's {full:,} pairs of {len(pair_seqs):,} proteins of the full set"
    ]
    return {"model": "none (parasail)", "costs": [cost], "records": {}, "notes": notes}


def _rest_part(part, ctx) -> dict:
    cfg, sp, index, seqs = _proteins(ctx.seed, str(ctx.workdir))
    costs, records = [], {}
    stats, kept, layers_of, stats_all = {}, {}, {}, {}
    for spec in map(str, cfg.models):
        path = _basis_path(ctx, spec)
        if not path.exists():
            raise FileNotFoundError(f"{path}: rehearse the part {spec} before rest")
        with np.load(path) as z:
            basis = {(int(k) if k.lstrip("-").isdigit() else k): z[k] for k in z.files}
        st = _stream(spec, seqs, cfg, ctx, basis)  # read back from the parts' states
        layers_of[spec] = protein_layers(SimpleNamespace(spec=fullsize_spec(spec)))
        stats_all[spec] = st.stats
        stats[spec], kept[spec] = st.stats[layers_of[spec][-1]], st.kept[layers_of[spec][-1]]
    n_comp = min(len(seqs), COMPOSITION_PROTEINS if ctx.max_items is None else ctx.max_items)
    baselines, cpu, wall = timed(P.composition_baselines, seqs[:n_comp], cfg.kmer_max)
    costs.append(_cost_here("composition baselines of every protein", n_comp, cpu, wall))
    costs[-1].full, costs[-1].cpu_full = len(seqs), cpu * len(seqs) / n_comp
    models = {spec: (SimpleNamespace(name=spec), None) for spec in map(str, cfg.models)}
    glob = P.global_table(kept, models, baselines, stats=stats)
    records.update(P.global_records(glob, False, []))
    records["aa_isoscore_package_diff"] = P.package_difference(baselines["aa_composition"])
    records.update(P.esm_layer_records({s: [stats_all[s][k].summary()["isoscore"] for k in layers_of[s]]
                                        for s in stats_all if fullsize_spec(s).recipe == "esm"}, False))  # fmt: skip
    pair_seqs = seqs[: cfg.n_pair_proteins]
    n_ranges = max(p.shards[1] for p in chapter_parts("protein_isotropy", "paper") if p.name.startswith("align-"))
    ranges = [_align_range(cfg, k, n_ranges, ctx) for k in range(n_ranges)]
    pairs = np.concatenate([r[0] for r in ranges])
    aln = pd.concat([_aligned(pair_seqs, r[0], cfg, ctx) for r in ranges], ignore_index=True)  # the parts' chunks
    records.update({"pair_n_proteins": len(pair_seqs), "n_pairs": len(pairs)})
    all_pairs = sum(r[1] for r in ranges)
    xc, cpu, wall = timed(
        P.alignment_crosscheck, pair_seqs, aln, cfg.n_biopython, ctx.seed, **P.alignment_settings(cfg)
    )
    costs.append(_cost_here(f"Biopython cross-check of {cfg.n_biopython:,} pairs", cfg.n_biopython, cpu, wall))
    records.update(P.crosscheck_records(xc))
    records.update(P.score_identity_records(aln))

    def tables():
        emb = P.pair_embeddings(pair_seqs, kept, [])
        t = P.pair_tables(emb, pairs, aln)
        return t, P.correlation_table(t)

    (tabs, corr), cpu, wall = timed(tables)
    costs.append(_cost_here(f"pair tables and correlations, {len(pairs):,} pairs x {len(tabs)}", len(pairs), cpu, wall))
    costs[-1].full, costs[-1].cpu_full = all_pairs, cpu * all_pairs / len(pairs)
    records.update(P.pair_correlation_records(tabs, [], False))
    records["pairs_high_identity"] = int((aln.identity >= 0.3).sum())
    records.update(_parts_records(ctx, cfg))
    notes = [
        "the book's own trained protein model (its rows) is left out: its paper-size training is the training chapter's part"
    ]
    return {"model": "the parts' streams (8 stand-ins)", "costs": costs, "records": records, "notes": notes}


def _cost_here(what: str, n: int, cpu: float, wall: float) -> Cost:
    cost = Cost(what, [n], [cpu], [wall], n)
    cost.cpu_full = cpu
    return cost


def _parts_records(ctx, cfg) -> dict:
    """The records the model parts wrote (the per-residue analysis is ProtBERT's part's)."""
    out = {}
    for path in sorted((Path(ctx.workdir) / "parts").glob("*.json")):
        out.update(json.loads(path.read_text()).get("records", {}))
    return {k: v for k, v in out.items() if k.startswith("local_")}


def rehearse_protein(part, ctx) -> dict:
    """One part of the protein chapter (see the module docstring)."""
    if part.name == "rest":
        out = _rest_part(part, ctx)
    elif part.name.startswith("align-"):
        out = _align_part(part, ctx)
    else:
        out = _model_part(part, ctx)
    folder = Path(ctx.workdir) / "parts"
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / f"{part.name}.json", {"records": _jsonable(out["records"])})
    return out


def _jsonable(records: dict) -> dict:
    return json.loads(json.dumps(records, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
