"""The text chapters' parts rehearsed at the papers' sizes (IsoScore, manifolds, cluster isotropy; issue 26).

Each model part runs its full-size random stand-in through the chapter's own forward function on the
stand-in data at two sizes 4x apart (exponent fitted, extrapolated to the part's paper size, floating-point
work counted), then the chapter's statistics at the paper's size fed with vectors of the model's width
(its measured outputs, resampled with noise: :func:`~replib.rehearsal.core.feeder`):

* IsoScore (``bert``...): every token of 3,000 lines of the WikiText-2 train stand-in through the chapter's
  streamed per-layer statistics (:func:`replib.methods.isoscore.stream_contextual`);
* manifolds (``bert-ptb-1``...): every token of the PTB or WikiText-2 train stand-in through the streamed
  pass with its spooled sample of 200,000 tokens (:func:`replib.methods.manifolds.stream_corpus`; a model's
  later layer ranges resume the first's stream); the analysis of the part's layers, its CPU work (k-means
  with the silhouette, S_inter/S_intra, LID's refinement) measured at two sample sizes in the paper's regime
  and extrapolated to the 200,000-token sample, LID's neighbour search counted as GPU work
  (:mod:`.layers`); a part whose estimate is near the session's budget is measured at a third size
  (:func:`~replib.rehearsal.layers.escalates`), on rows beyond the spooled sample made as the stream makes
  them (:func:`_standin_rows`);
* cluster isotropy (``bert``...): every STS data set's token pool at its real size through the paper's
  methods and seeds (:func:`replib.methods.cluster_isotropy.run_sts`), and the layers' I(W) on STS-B dev;
  ``semcor`` (Table 4) on the SemCor-shaped stand-in (:mod:`.semcor`).

Each chapter's ``rest`` runs what its notebook computes besides (the synthetic tests of the IsoScore chapter,
the transform checks and Table 1 of the cluster chapter...) at full size.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import hash_array
from ..config import chapter_config
from ..embeddings import embed_sentence_layers, token_windows, window_hidden_states
from ..methods import cluster_isotropy as ci
from ..methods import isoscore as iso
from ..methods import manifolds as mf
from ..methods.manifolds.setup import SHARD_WINDOWS
from ..metrics import partition_isotropy
from ..metrics.lid import lid_mle
from ..models.fullsize import fullsize_model
from .core import (
    MIN_MEASURED,
    Cost,
    count_flops,
    feeder,
    model_length_flops,
    scaled_cost,
    sentence_flops,
    stats_items,
    timed,
)
from .layers import THIRD_SIZE, add_analysis_size, analysis_costs, escalates
from .semcor import rehearse_semcor
from .standins import corpus_standin

__all__ = ["rehearse_cluster_isotropy", "rehearse_isoscore", "rehearse_manifolds"]

#: CPU seconds the smaller forward measurement aims at (the larger is 4x)
FORWARD_TARGET_CPU = 6.0
#: tokens of the smaller measurement of a layer's analysis (the larger is 4x: both within the spooled sample)
ANALYSIS_FIRST = 2500
_GFLOP_PER_CPU_S = 30.0


def _windows_first(lm, scale: float, window: int = 512) -> int:
    per_window = 2.0 * sum(p.numel() for p in lm.model.parameters()) * window / (_GFLOP_PER_CPU_S * 1e9)
    return max(1, int(round(FORWARD_TARGET_CPU / per_window * scale)))


def _feed_info(spec: str, basis: dict) -> dict:
    return {"rehearsal": "feeder", "model": spec, "basis": {str(k): hash_array(v) for k, v in basis.items()}}


def _window_forward(lm, windows, spec: str, ctx) -> tuple[Cost, dict]:
    """The chapter's window forward (every code layer) at two sizes; the larger's outputs are the basis."""
    layers = list(range(lm.spec.n_layers))
    n1 = min(_windows_first(lm, ctx.scale), max(1, len(windows) // 4))

    def run(n):
        return window_hidden_states(lm, windows[:n], layers)

    cost, outs = scaled_cost(f"forward passes of {spec} (512-token windows)", run, [n1, 4 * n1], len(windows))
    cost.on_gpu = True
    # every window has the same tokens (no padding): its FLOPs (every code layer) times the windows
    cost.flops_full, cost.flops_exact = model_length_flops(lm)(windows.shape[1]) * len(windows), True
    return cost, outs[-1]


# ------------------------------------------------------------------------------------------ IsoScore
def rehearse_isoscore(part, ctx) -> dict:
    """A model's contextual part, or ``rest`` (the synthetic tests and the records over every model)."""
    cfg = chapter_config("isoscore", "paper", seed=ctx.seed)
    lines = corpus_standin("wikitext2")[: cfg.n_lines]
    if part.name == "rest":
        return _isoscore_rest(cfg, lines, ctx)
    spec = part.models[0]
    lm = fullsize_model(spec, seed=ctx.seed)
    windows = token_windows(lm.tokenizer, lines, cfg.window)
    forward, basis = _window_forward(lm, windows, spec, ctx)
    np.savez(_basis(ctx, spec), **{str(k): v for k, v in basis.items()})
    st, cpu, wall = timed(_iso_stream, lm, spec, lines, cfg, ctx, basis)
    stats = _linear(f"streamed statistics of every token, {lm.spec.n_layers} layers x {lm.spec.hidden_size}",
                    st.n_rows // cfg.window, len(windows), cpu, wall)  # fmt: skip
    table = st.table(spec).drop(columns="mean_norm")
    records = iso.paper_layer_records(iso.ContextualLayers(table, {spec: st}), cfg)
    notes = [f"{len(windows):,} windows of 512 tokens of the first {cfg.n_lines:,} lines of the WikiText-2 stand-in"]
    return {"model": f"fullsize {spec} (random weights)", "costs": [forward, stats], "records": records, "notes": notes}


def _stats_lines(lm, lines, window: int, ctx, n_windows: int | None = None) -> list:
    """The lines whose windows the statistics stream here: all of them when their accumulator work fits
    ``ctx.stats_flops`` (:func:`~replib.rehearsal.core.stats_items`), else the first that hold as many windows
    as fit."""
    n_windows = len(token_windows(lm.tokenizer, lines, window)) if n_windows is None else n_windows
    per = 2.0 * window * lm.spec.n_layers * lm.spec.hidden_size**2
    n = stats_items(n_windows, per, ctx.stats_flops, ctx.max_items)
    return lines if n >= n_windows else _lines_for(lm, lines, window, n)


def _iso_stream(lm, spec, lines, cfg, ctx, basis, sample: int | None = None):
    compute = feeder(basis, ctx.seed, rows_per_item=cfg.window)
    lines = _stats_lines(lm, lines, cfg.window, ctx)
    sample = cfg.package_sample if sample is None else sample
    return iso.stream_contextual(lm, lines, cfg.window, sample, cfg.seed, Path(ctx.workdir) / "streams",
                                 compute=compute, info=_feed_info(spec, basis), progress=ctx.progress)  # fmt: skip


def _lines_for(lm, lines, window: int, n_windows: int) -> list:
    """The first lines that hold ``n_windows`` windows (tests run small)."""
    ids = 0
    for k, line in enumerate(lines, start=1):
        ids += len(lm.tokenizer.encode(line))
        if ids >= (n_windows + 1) * window:
            return lines[:k]
    return lines


def _basis(ctx, spec: str) -> Path:
    path = Path(ctx.workdir) / "basis" / f"{spec}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _load_basis(ctx, spec: str) -> dict:
    path = _basis(ctx, spec)
    if not path.exists():
        raise FileNotFoundError(f"{path}: rehearse the part of {spec} before rest")
    with np.load(path) as z:
        return {(int(k) if k.lstrip("-").isdigit() else k): z[k] for k in z.files}


def _here(what: str, n: int, cpu: float, wall: float) -> Cost:
    cost = Cost(what, [n], [cpu], [wall], n)
    cost.cpu_full = cpu
    return cost


def _linear(what: str, n: int, full: int, cpu: float, wall: float) -> Cost:
    """A streamed step measured on ``n`` of its ``full`` items: its work per item is constant (an accumulator's
    update per row), so it is extrapolated linearly (exponent 1)."""
    cost = Cost(what, [max(int(n), 1)], [cpu], [wall], max(int(full), 1))
    cost.cpu_full = cpu * cost.full / cost.sizes[0]
    return cost


def _isoscore_rest(cfg, lines, ctx) -> dict:
    costs, records = [], {}

    def synthetic():
        rng = np.random.default_rng(cfg.seed)
        clouds = iso.agreement_clouds(rng)
        out = {"package_max_abs_diff": iso.package_agreement(clouds)["|diff|"].max()}
        out.update(iso.orientation_check(clouds["Gaussian 3000x100, scales 0.1..3"]))
        base, versions, population = iso.rotation_versions(cfg.n_rot, cfg.seed)
        out.update(iso.rotation_records(base, iso.rotation_table(versions, population), cfg.seed))
        out.update(iso.mean_and_scale_records(rng))
        fraction = iso.fraction_of_dimensions(cfg.sweep, cfg.seed)
        out["fraction_dims_max_error"] = (fraction["IsoScore"] - fraction["(k-1)/(n-1)"]).abs().max()
        meatball = iso.skewered_meatball(cfg.sweep, cfg.seed)
        out["meatball_isoscore_ball"] = meatball["IsoScore"].iloc[0]
        out["meatball_monotone"] = bool(np.all(np.diff(meatball["IsoScore"]) < 0))
        deflation = iso.deflation(cfg.seed, n=100)
        out["deflation_max_dev"] = (deflation["IsoScore"] - deflation["m/(n+m)"]).abs().max()
        out["streaming_max_diff"] = iso.streaming_difference(rng, n_batches=37)
        return out

    out, cpu, wall = timed(synthetic)
    costs.append(_here("the synthetic tests (rotation, meatball, deflation...)", 1, cpu, wall))
    records.update(out)
    tables, streams = [], {}
    for i, ref in enumerate(cfg.models):
        spec = str(ref)
        lm = fullsize_model(spec, seed=ctx.seed)
        streams[spec] = _iso_stream(
            lm, spec, lines, cfg, ctx, _load_basis(ctx, spec), cfg.package_sample if i == 0 else 0
        )
        tables.append(streams[spec].table(spec).drop(columns="mean_norm"))
        del lm
    layers = iso.ContextualLayers(pd.concat(tables, ignore_index=True), streams)
    rec, cpu, wall = timed(iso.contextual_records, layers, cfg.seed)
    costs.append(_here("the contextual records (package check on the sample, Gaussian of the same size)", 1, cpu, wall))
    records.update(rec)
    records.update(iso.paper_layer_records(layers, cfg))
    return {"model": "the parts' streams (4 stand-ins)", "costs": costs, "records": records, "notes": []}


# ------------------------------------------------------------------------------------------ manifolds
def rehearse_manifolds(part, ctx) -> dict:
    """A model-and-corpus part (``bert-ptb``, or a layer range ``bert-ptb-1``...), or ``rest`` (GloVe and the
    checks). A later layer range (a part that ``needs`` the first) reuses the first range's stand-in outputs and
    resumes its token stream: its costs are its layers' analysis and the stream's reading."""
    cfg = chapter_config("manifolds", "paper", seed=ctx.seed)
    if part.name == "rest":
        return _manifolds_rest(cfg, ctx)
    spec = part.models[0]
    corpus = dict(part.select)["corpora"][0]
    lm = fullsize_model(spec, seed=ctx.seed)
    lines = corpus_standin(corpus)
    windows = token_windows(lm.tokenizer, lines, cfg["window"])
    costs, key = [], f"{spec}-{corpus}"
    if part.needs:
        basis = _load_basis(ctx, key)
    else:
        forward, basis = _window_forward(lm, windows, spec, ctx)
        np.savez(_basis(ctx, key), **{str(k): v for k, v in basis.items()})
        costs.append(forward)
    lines = _stats_lines(lm, lines, cfg["window"], ctx, len(windows))
    out, cpu, wall = timed(
        mf.stream_corpus, lm, lines, cfg, Path(ctx.workdir) / "streams",
        compute=feeder(basis, ctx.seed, rows_per_item=cfg["window"]), info=_feed_info(spec, basis),
        progress=ctx.progress,
    )  # fmt: skip
    sample, exact = out
    n_tokens = exact[0]["n_samples"]
    if part.needs:
        costs.append(_here(f"the token stream of {part.needs[0]} resumed (read back)", n_tokens, cpu, wall))
    else:
        costs.append(_linear(f"streamed pass, {lm.spec.n_layers} layers x {lm.spec.hidden_size}, sample of "
                             f"{len(sample.tokens):,} spooled", n_tokens, windows.size, cpu, wall))  # fmt: skip
    layers = part.selected("layers", range(lm.spec.n_layers))
    hours_before = sum(c.t4_seconds for c in costs) / 3600.0

    def rows(n):
        return _standin_rows(lm, windows, basis, sample, layers[-1], n, cfg["window"], ctx.seed)

    costs += _layer_analysis(sample, cfg, layers, ctx, hours_before, rows)
    notes = [f"{n_tokens:,} tokens of the {corpus} train stand-in ({len(windows):,} windows); layers "
             f"{layers[0]}-{layers[-1]} analysed"]  # fmt: skip
    return {"model": f"fullsize {spec} (random weights)", "costs": costs, "records": {}, "notes": notes}


def _layer_analysis(sample, cfg, layers: list, ctx, hours_before: float = 0.0, rows=None) -> list:
    """The analysis of the part's ``layers`` at paper size, each component in its own regime
    (:func:`~replib.rehearsal.layers.analysis_costs`: the CPU work measured on the last of them at two sizes 4x
    apart, LID's neighbour search counted as GPU work). When the part's estimate (``hours_before``, its other
    steps, plus the analysis) passes the escalation rule (:func:`~replib.rehearsal.layers.escalates`), the
    analysis is measured again at ``THIRD_SIZE n1`` tokens, ``rows(n)`` giving them where the sample is
    shorter, and refitted on the two largest sizes."""
    X, tokens = sample.layers[layers[-1]], np.asarray(sample.tokens)
    # the larger size at least a tenth of the paper's sample (an extrapolation of at most 10x)
    first = max(ANALYSIS_FIRST * ctx.scale, MIN_MEASURED * int(cfg["analysis_sample"]) / 4)
    n1 = max(100, min(len(tokens) // 4, int(math.ceil(first))))
    costs = analysis_costs(X, tokens, cfg, len(layers), n1)
    hours = hours_before + sum(c.t4_seconds for c in costs) / 3600.0
    n3 = THIRD_SIZE * n1
    if not escalates(hours) or n3 > int(cfg["analysis_sample"]):
        return costs
    source = "the spooled sample"
    if n3 > len(tokens):
        if rows is None:
            raise ValueError(f"a third size of {n3:,} tokens needs rows beyond the sample's {len(tokens):,}")
        X, tokens, source = rows(n3)
    costs = add_analysis_size(costs, X, tokens, cfg, n3, source)
    costs[0].notes.append(f"escalated: {hours:.2f} T4-hours from the two smaller sizes > 90 % of a session")
    return costs


def _standin_rows(lm, windows, basis, sample, layer: int, n: int, window: int, seed: int):
    """``n`` rows of ``layer`` and their tokens as the part's stream makes them, for a measurement beyond the
    spooled sample (which holds every streamed token, whole windows, in order): the sample's rows, then the
    next windows of the corpus (``windows``) with rows from the same :func:`~replib.rehearsal.core.feeder`
    (``basis``, ``seed``, :data:`SHARD_WINDOWS` windows a shard, each seeded by its first window, so no shard
    repeats the stream's). Returns ``(X, tokens, where they come from)``."""
    kept = len(sample.tokens)
    if kept % window or not np.array_equal(np.asarray(sample.token_ids), windows[: kept // window].ravel()):
        raise ValueError("the spooled sample is not the corpus' first whole windows: cannot continue it")
    first, last = kept // window, -(-n // window)
    if last > len(windows):
        raise ValueError(f"{n:,} tokens need {last:,} windows; the corpus has {len(windows):,}")
    compute = feeder(basis, seed, rows_per_item=window)
    more = [compute(a, min(a + SHARD_WINDOWS, last))[layer] for a in range(first, last, SHARD_WINDOWS)]
    X = np.concatenate([np.asarray(sample.layers[layer]), *more])[:n]
    ids = windows[:last].ravel()[:n]
    tokens = np.asarray(lm.tokenizer.convert_ids_to_tokens(ids.tolist()))
    source = (f"the {kept:,} spooled tokens, then windows {first:,}-{last - 1:,} of the stand-in corpus with "
              "vectors from the stream's feeder")  # fmt: skip
    return X, tokens, source


def _manifolds_rest(cfg, ctx) -> dict:
    words, vecs = mf.static_glove(cfg["glove_max_words"])

    def glove():
        return lid_mle(np.asarray(vecs), k=cfg["lid_k"], metric="cosine", variant="cai", n_queries=cfg["glove_queries"],
                       seed=cfg.seed)  # fmt: skip

    r, cpu, wall = timed(glove)
    cost = _here(f"GloVe LID ({len(words):,} words, {cfg['glove_queries']:,} queries)", len(words), cpu, wall)
    return {"model": "GloVe 6B 50d (packaged, real)", "costs": [cost], "records": {"lid_static_glove": r.mean},
            "notes": ["the per-layer summaries come from the model parts' analyses (extrapolated here)"]}  # fmt: skip


# ------------------------------------------------------------------------------------------ cluster isotropy
def rehearse_cluster_isotropy(part, ctx) -> dict:
    """A model's part (``gpt2``, ``bert``, ``roberta``: layers and STS), ``deck``, ``classify``, ``semcor``
    (Table 4 on the SemCor-shaped stand-in: :func:`~replib.rehearsal.semcor.rehearse_semcor`) or ``rest``."""
    if part.name == "semcor":  # not a model part: its work is its own (verbs of SemCor), not STS
        return rehearse_semcor(part, ctx)
    cfg = chapter_config("cluster_isotropy", "paper", seed=ctx.seed, part=part.name)
    spec = str(cfg.models[0]) if part.name not in ("deck", "classify") else cfg.deck_model
    if part.name == "rest":
        return _cluster_rest(cfg, ctx)
    if part.name == "classify":
        return _classify(cfg, ctx)
    lm = fullsize_model(spec, seed=ctx.seed)
    datasets = ("STS15", "STS-B") if part.name == "deck" else cfg.datasets
    every = {ds: ci.load_sts_pairs(ds, stsb_split=cfg.stsb_split) for ds in datasets}
    frames = {ds: df.head(ctx.max_items) if ctx.max_items else df for ds, df in every.items()}
    dev_all = ci.load_sts_pairs("STS-B-dev")
    dev = dev_all.head(ctx.max_items) if ctx.max_items else dev_all
    texts = sorted({t for df in every.values() for t in (*df.sentence1, *df.sentence2)})
    forward, basis = _sentence_forward(lm, texts, spec, ctx)
    np.savez(_basis(ctx, spec), last=basis[-1])  # the rest part's pool
    costs, records, seeds = [forward], {}, ci.chapter_seeds(cfg)
    rows, cpu, wall = timed(_sts_rows, lm, frames, basis[-1], cfg, spec, seeds, part.name == "deck", ctx)
    n_pairs, all_pairs = sum(map(len, frames.values())), sum(map(len, every.values()))
    costs.append(_linear(f"STS methods x {len(seeds)} seeds on the {len(datasets)} token pools (stand-in vectors)",
                         n_pairs, all_pairs, cpu, wall))  # fmt: skip
    if part.name == "deck":
        deck = pd.DataFrame(rows).replace({"method": {"baseline": "Pre-trained"}})
        records.update(ci.deck_records(deck, cfg))
    else:
        sts = pd.DataFrame(rows)
        records.update(ci.sts_records(ci.sts_summary(sts), cfg))
        layers, cpu, wall = timed(_layer_iw, lm, dev, basis, ctx)
        costs.append(_linear("I(W) of every hidden state on STS-B dev (one pass)", len(dev), len(dev_all), cpu, wall))
        short = ci.short_names(cfg)[spec]
        records.update({f"layer_{short}_{k}": 10.0**v for k, v in enumerate(layers)})
    return {"model": f"fullsize {spec} (random weights)", "costs": costs, "records": records,
            "notes": [f"{len(texts):,} distinct sentences (the mirror's {', '.join(datasets)}); statistics on "
                      f"{n_pairs:,} of {all_pairs:,} pairs"]}  # fmt: skip


def _sentence_forward(lm, texts, spec, ctx) -> tuple[Cost, dict]:
    """The chapter's sentence forward (every hidden state, one pass) at two sizes of a seeded sample."""
    order = np.random.default_rng(ctx.seed).permutation(len(texts))
    sample = [texts[i] for i in order]
    n1 = max(8, min(len(texts) // 4, int(round(64 * ctx.scale))))

    def run(n):
        return embed_sentence_layers(lm, sample[:n], progress=False)

    cost, outs = scaled_cost(f"forward passes of {spec} (sentences, every hidden state)", run, [n1, 4 * n1], len(texts))
    cost.on_gpu = True
    cost.flops_full, cost.flops_exact = sentence_flops(lm, texts), True
    basis = {layer: np.concatenate(e.tokens) for layer, e in outs[-1].items()}
    basis[-1] = basis[max(basis)]
    return cost, basis


def _pool_like(lm, texts, basis, rng) -> list:
    """Token matrices of ``texts`` with their real token counts (the stand-in's tokenizer, specials dropped),
    filled with full-width stand-in vectors."""
    counts = [max(1, len(lm.tokenizer.encode(t, add_special_tokens=False))) for t in texts]
    return [basis[rng.integers(0, len(basis), c)] + rng.standard_normal((c, basis.shape[1])).astype(np.float32) * 0.05
            for c in counts]  # fmt: skip


def _sts_rows(lm, frames, basis, cfg, spec, seeds, deck: bool, ctx) -> list:
    rng = np.random.default_rng(ctx.seed)
    hp = dict(cfg.hparams[spec])
    methods = ["baseline", *ci.DECK_VARIANTS] if deck else ci.METHODS
    rows = []
    for ds, df in frames.items():
        t1, t2 = _pool_like(lm, df.sentence1, basis, rng), _pool_like(lm, df.sentence2, basis, rng)
        use = seeds[: cfg.deck_seeds] if deck else seeds
        rows += [{"model": spec, "dataset": ds, **r} for r in ci.run_sts(t1, t2, df["score"], methods=methods,
                                                                           hparams=hp, seeds=use)]  # fmt: skip
    return rows


def _layer_iw(lm, dev, basis, ctx) -> list:
    rng = np.random.default_rng(ctx.seed + 1)
    sents = sorted(set(dev.sentence1) | set(dev.sentence2))
    layers = sorted(k for k in basis if k >= 0)
    return [partition_isotropy(np.concatenate(_pool_like(lm, sents, basis[k], rng))).log10 for k in layers]


def _classify(cfg, ctx) -> dict:
    """The classification protocol's forward passes at two sizes, extrapolated to the full splits; the feature
    tensor's size at paper scale (n, 64, d) reported against the memory budget."""
    lm = fullsize_model(cfg.clf_model, seed=ctx.seed)
    costs, notes, total = [], [], 0
    for task in cfg.clf_tasks:
        a, b, y, splits = ci.load_classification(task, None, seed=cfg.seed)
        total += len(y)
    a, b, y, _ = ci.load_classification("SST-2", None, seed=cfg.seed)
    n1 = max(8, int(round(64 * ctx.scale)))

    def run(n):
        return ci.pair_token_features(lm, a[:n], None if b is None else b[:n], max_length=cfg.clf_max_length,
                                      progress=False)  # fmt: skip

    forward, outs = scaled_cost("forward passes (64-token padded examples)", run, [n1, 4 * n1], total, on_gpu=True)
    forward.flops_full = count_flops(run, n1) * total / n1
    forward.flops_exact = True  # every example is padded to clf_max_length tokens: one shape, the count scales
    costs.append(forward)
    feat_gb = total * cfg.clf_max_length * lm.spec.hidden_size * 4 / 1e9
    notes.append(f"{total:,} examples of {', '.join(cfg.clf_tasks)} (the mirror's splits): features "
                 f"{total:,} x {cfg.clf_max_length} x {lm.spec.hidden_size} float32 = {feat_gb:.1f} GB in memory")  # fmt: skip
    return {"model": f"fullsize {cfg.clf_model} (random weights)", "costs": costs, "records": {}, "notes": notes,
            "memory_gb_paper": feat_gb}  # fmt: skip


def _cluster_rest(cfg, ctx) -> dict:
    rng = np.random.default_rng(ctx.seed)
    spec = cfg.model_specs[0]
    basis = _load_basis(ctx, spec)["last"]
    dev = ci.load_sts_pairs("STS-B-dev", max_pairs=ctx.max_items)
    lm = fullsize_model(spec, seed=ctx.seed)
    pool, _ = ci.token_pool(_pool_like(lm, list(dev.sentence1) + list(dev.sentence2), basis, rng))

    def checks():
        _, _, rec = ci.transform_checks(pool, cfg.demo_clusters, cfg.demo_pc, cfg.seed)
        rows = ci.zero_mean_isotropy(pool, cfg.table1_ks, ci.chapter_seeds(cfg))
        return rec, rows

    (rec, rows), cpu, wall = timed(checks)
    cost = _here(f"transform checks and Table 1 on the STS-B dev pool ({len(pool):,} tokens)", len(pool), cpu, wall)
    return {"model": f"fullsize {spec} (stand-in vectors)", "costs": [cost], "records": rec, "notes": []}
