"""The cluster chapter's ``semcor`` part (Table 4: verb tense against meaning) rehearsed at SemCor's size.

SemCor is not in the mirror: the part runs on the SemCor-shaped stand-in
(:func:`~replib.rehearsal.standins.semcor_standin`: 37,176 real English sentences of WikiText-2 with synthetic
verb annotations, an upper bound of the real workload), the paper's selection rule applied to it
(:func:`replib.methods.cluster_isotropy.select_polysemous_verbs`). For each of the three full-size
random-weight models (:mod:`replib.models.fullsize`):

* the chapter's own verb route (:func:`replib.methods.cluster_isotropy.verb_vectors`: each sentence encoded
  alone, a verb's vector the mean of its word pieces' last-layer rows) at two sizes 4x apart of a seeded
  sample of the sentences, the cost exponent fitted and extrapolated to every sentence that holds a kept verb,
  its floating-point work counted (a GPU step);
* Table 4's statistics at full size (:func:`replib.methods.cluster_isotropy.semcor_rows`: the three mean
  distances over every anchor of every verb and I(W), on the last layer and after the global method), fed
  with one vector of the model's width per kept occurrence (the route's measured outputs resampled with
  noise, :func:`~replib.rehearsal.core.feeder`): a CPU step, measured at the paper's size.

Its values are those of random weights on synthetic senses: none is recorded (Table 4's claims need the real
models and SemCor).
"""

from __future__ import annotations

import numpy as np

from ..config import chapter_config
from ..methods import cluster_isotropy as ci
from ..models.fullsize import fullsize_model
from .core import Cost, count_flops, feeder, scaled_cost, sentence_flops, timed
from .standins import SEMCOR_SENTENCES, semcor_standin

__all__ = ["STANDIN_LABEL", "rehearse_semcor"]

#: the row's ``data``: what stands in for SemCor
STANDIN_LABEL = "semcor stand-in (WikiText-2 sentences, synthetic verbs)"


def _verb_forward(lm, sentences, spec: str, full: int, ctx) -> tuple[Cost, np.ndarray]:
    """The chapter's verb route on the first ``n`` sentences of a seeded sample, at two sizes 4x apart,
    extrapolated to ``full`` sentences; the larger size's verb vectors are the feeder's basis."""
    order = np.random.default_rng(ctx.seed).permutation(len(sentences))
    n1 = max(8, min(len(sentences) // 4, int(round(64 * ctx.scale))))

    def run(n):
        sub = [sentences[i] for i in order[:n]]
        return ci.verb_vectors(lm, sub, ci.verb_occurrences(sub), progress=False)

    what = f"verb vectors of {spec} (sentences alone, last layer, mean of the verb's pieces)"
    cost, outs = scaled_cost(what, run, [n1, 4 * n1], full, on_gpu=True)
    if full == len(sentences):  # every sentence's batch counted (the stand-in has the paper's sentences)
        cost.flops_full, cost.flops_exact = sentence_flops(lm, [s.text for s in sentences]), True
    else:
        cost.flops_full = count_flops(run, n1) * full / n1
    X, kept = outs[-1]
    cost.notes.append(f"{int(kept.sum()):,} of {len(kept):,} verb occurrences located at the larger size")
    return cost, X


def _statistics(spec: str, X, occ, global_pc: int, n_full: int) -> tuple[Cost, list]:
    """Table 4's rows of one model on ``X`` (one row per row of ``occ``), timed; a run on fewer rows than
    ``n_full`` (tests) is extrapolated quadratically (the distances of every pair of a verb's occurrences)."""
    rows, cpu, wall = timed(ci.semcor_rows, spec, X, occ, global_pc)
    what = (f"Table 4 statistics of {spec} (distances and I(W), base and RemovedPCs), {len(occ):,} verb "
            f"occurrences x {X.shape[1]}")  # fmt: skip
    cost = Cost(what, [len(occ)], [cpu], [wall], n_full)
    cost.exponent = 1.0 if len(occ) >= n_full else 2.0
    cost.cpu_full = cpu * (n_full / len(occ)) ** cost.exponent
    return cost, rows


def rehearse_semcor(part, ctx) -> dict:
    """The ``semcor`` part (see the module docstring): its costs and notes, no records."""
    cfg = chapter_config("cluster_isotropy", "paper", seed=ctx.seed, part=part.name)
    sentences = semcor_standin(seed=ctx.seed)
    occ = ci.select_polysemous_verbs(ci.verb_occurrences(sentences), min_count=cfg.semcor_min_count)
    used = sorted(set(occ["sentence"]))
    stats_occ = occ.head(ctx.max_items) if ctx.max_items else occ
    costs, notes = [], []
    for spec in cfg.model_specs:
        lm = fullsize_model(spec, seed=ctx.seed)
        forward, basis = _verb_forward(lm, [sentences[i] for i in used], spec, len(used), ctx)
        X = feeder({"last": basis}, ctx.seed)(0, len(stats_occ))["last"]
        stats, rows = _statistics(spec, X, stats_occ, cfg.hparams[spec]["global_pc"], len(occ))
        costs += [forward, stats]
        notes.append(f"{spec}: {rows[0]['n_verbs']} verbs, {rows[0]['n_anchors']:,} anchors with all three groups")
        del lm, X
    sizes = occ.groupby("lemma").size()
    notes.insert(0, f"SemCor-shaped stand-in: {len(sentences):,} WikiText-2 sentences (SemCor 3.0 has "
                    f"{SEMCOR_SENTENCES:,}), {len(occ):,} synthetic verb occurrences of {len(sizes)} lemmas kept by "
                    f"the paper's rule (largest group {sizes.max():,})")  # fmt: skip
    return {"model": "fullsize gpt2, bert-base-uncased, roberta-base (random weights)", "costs": costs,
            "records": {}, "notes": notes, "data": STANDIN_LABEL}  # fmt: skip
