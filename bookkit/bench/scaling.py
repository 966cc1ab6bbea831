"""``python -m replib bench --scaling DIR``: how each chapter's steps grow with their work, and which one
dominates at paper scale.

Two kinds of step are measured:

- **forward passes** of each paper model's geometry at full size (random weights: a forward's cost does not
  depend on the weights' values), on inputs of the length the paper's data have, at two sizes (numbers of
  sequences in one batch);
- **the kernels** (IsoScore, alignment, LID, k-means, the silhouette), at sizes spanning two orders of
  magnitude.

For each the exponent ``b`` of ``t = a * W**b`` is fitted by least squares in log-log and extrapolated to
the work of the ``paper`` profile (times its number of calls: models of the same geometry, evaluations);
a forward pass is extrapolated linearly instead, at the larger measurement's cost per item (n sequences of
one length are n times one sequence's work: a fitted exponent over 1-4 items is timing noise, which five
orders of magnitude of extrapolation would amplify), its fitted ``b`` shown as a check,
and the table marks each chapter's largest step as dominant. The paper-profile work is counted from the
mirror's data where it holds the split (token lengths, sentence counts) and taken from the data sets'
published sizes where it does not (each note says which). The GPU column divides that CPU extrapolation by an
*assumed* speed-up (stated per step, from the ratio of peak throughputs, not measured: no GPU was available
where this ran). Everything in the last two columns is an estimate until a paper run measures it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
import pandas as pd
import seaborn as sns
import torch
import transformers as tr
from matplotlib.figure import Figure

from replib.data import load_lm_corpus, load_polarity, load_sick, load_snli, load_sts, load_stsb, load_swissprot
from replib.embeddings import token_stream_ids
from replib.methods import protein_isotropy as P
from replib.methods.cluster_isotropy import cluster_labels
from replib.metrics import isoscore
from replib.metrics.lid import lid_mle
from replib.metrics.silhouette import silhouette_score
from replib.models import minilm_dir
from replib.models.fullsize import fullsize_config
from replib.plotting import save_figure

from .bench_forward import _best, gemm_peak_flops
from .bench_tables import Scaling, fit_power_law
from .bench_tables import scaling_markdown as markdown

__all__ = ["GPU_EFFICIENCY", "H100_FP32", "Scaling", "fit_power_law", "markdown", "plot", "run"]

#: an H100's FP32 (non-tensor-core) peak, FLOP/s, and the fraction of it a real kernel reaches (assumed)
H100_FP32 = 67e12
GPU_EFFICIENCY = 0.3

#: published token counts of the splits the mirror lacks (Merity et al. 2016, Table 1): train / valid
PTB_TRAIN_OVER_VALID = 929_590 / 73_761
WIKITEXT2_TRAIN_OVER_VALID = 2_088_628 / 217_646
#: published sizes (train + validation) of the GLUE tasks of Rajaee & Pilehvar's classification
#: (SST-2, CoLA, RTE, MRPC), and of the GLUE train sets of Mickus et al.'s appendix: single-sentence tasks
#: (CoLA, SST-2) and sentence-pair tasks (MNLI, MRPC, QNLI, QQP, RTE, WNLI)
GLUE_CLF_EXAMPLES = 67_349 + 872 + 8_551 + 1_043 + 2_490 + 277 + 3_668 + 408
GLUE_SINGLE, GLUE_PAIRS = 8_551 + 67_349, 392_702 + 3_668 + 104_743 + 363_846 + 2_490 + 635
#: current Swiss-Prot release, about (issue 30); the lengths are those of the mirror's 2014 sample
SWISSPROT_CURRENT = 570_000


@dataclass
class Step:
    """One step to measure: ``maker(n)`` returns the work of size ``n`` as a function to time."""

    step: str
    chapter: str
    unit: str
    sizes: list[int]
    maker: Callable
    paper_work: float
    note: str
    kind: str = "gemm"  # "gemm": the GPU speed-up of matrix products; "cores": CPU-bound (parasail SIMD)
    calls: float = 1.0
    linear: bool = False  # extrapolate at the largest size's cost per item (forward passes: same-shape batches)


@cache
def _encoder(geometry: str):
    """A full-size encoder with random weights: ``"bert-L-h"`` (BERT, ``L`` layers, width ``h``) or
    ``"esm2-650M"``."""
    torch.manual_seed(0)
    if geometry == "esm2-650M":  # the paper model's published configuration (replib.models.fullsize)
        return tr.EsmModel(fullsize_config("esm2_t33_650M"), add_pooling_layer=False).eval()
    _, layers, width = geometry.split("-")
    h = int(width)
    cfg = tr.BertConfig(
        vocab_size=30522, hidden_size=h, num_hidden_layers=int(layers), num_attention_heads=h // 64,
        intermediate_size=4 * h, max_position_embeddings=1026,
    )  # fmt: skip
    return tr.BertModel(cfg, add_pooling_layer=False).eval()


def _forward(geometry: str, length: int):
    """``maker(n)``: the forward of ``n`` sequences of ``length`` tokens, one batch, no padding."""

    def maker(n):
        model = _encoder(geometry)
        ids = torch.randint(5, 30, (n, length), generator=torch.Generator().manual_seed(n))
        mask = torch.ones_like(ids)

        def fn():
            with torch.inference_mode():
                return model(input_ids=ids, attention_mask=mask).last_hidden_state

        return fn

    return maker


def _workloads() -> dict:
    """The paper profile's work, counted from the mirror where it holds the data (see the module docstring)."""
    tok = tr.AutoTokenizer.from_pretrained(str(minilm_dir(verify=False)))  # bert-base-uncased WordPiece
    prot = np.minimum(load_swissprot("20k")["length"].to_numpy(), 1022) + 2
    wt_valid = load_lm_corpus("wikitext2", "valid")
    wt_tokens = len(token_stream_ids(tok, wt_valid))
    ptb_tokens = len(token_stream_ids(tok, load_lm_corpus("ptb", "valid")))
    sts = [load_sts(y) for y in (12, 13, 14, 15, 16)] + [load_sick("test"), load_stsb("test")]
    sts_sentences = [s for df in sts for s in df["sentence1"].tolist() + df["sentence2"].tolist()]
    snli = load_snli("dev")
    pol = load_polarity()
    clf_sentences = pol.iloc[:, 0].astype(str).tolist() + snli.iloc[:, 0].astype(str).tolist()
    length = lambda texts: float(np.mean([len(e) for e in tok(texts, truncation=True, max_length=512)["input_ids"]]))
    return {
        "protein_length": int(round(prot.mean())),
        "isoscore_windows": 3000 * wt_tokens / len(wt_valid) / 512,
        "manifolds_windows": (ptb_tokens * PTB_TRAIN_OVER_VALID + wt_tokens * WIKITEXT2_TRAIN_OVER_VALID) / 512,
        "sts_sentences": len(sts_sentences),
        "sts_length": int(round(length(sts_sentences))),
        "clf_sentences": len(pol) + 2 * len(snli) + GLUE_SINGLE + 2 * GLUE_PAIRS,
        "clf_length": int(round(length(clf_sentences))),
    }


def _forward_steps(w: dict) -> list[Step]:
    L, s, c = w["protein_length"], w["sts_length"], w["clf_length"]
    steps = [
        Step(f"forward, BERT 30 × 1024 ({L}-token sequences)", "protein_isotropy", "sequences", [1, 3],
             _forward("bert-30-1024", L), SWISSPROT_CURRENT, "current Swiss-Prot (about); ProtBert, ProtBert-BFD, "
             "ProtXLNet (XLNet costed as BERT of its geometry)", calls=3),
        Step(f"forward, ESM-2 650M: 33 × 1280 ({L}-token sequences)", "protein_isotropy", "sequences", [1, 3],
             _forward("esm2-650M", L), SWISSPROT_CURRENT, "current Swiss-Prot (about); the three smaller ESM-2 "
             "models add about a third"),
        Step("forward, BERT 12 × 768 (512-token windows)", "isoscore", "windows", [1, 4], _forward("bert-12-768", 512),
             w["isoscore_windows"], "3,000 WikiText-2 train lines (tokens per line from the valid split); BERT, GPT, "
             "GPT-2 and DistilBERT (6 layers: half)", calls=3.5),
        Step("forward, BERT 12 × 768 (512-token windows)", "manifolds", "windows", [1, 4], _forward("bert-12-768", 512),
             w["manifolds_windows"], "PTB and WikiText-2 train (valid-split tokens × the published train/valid "
             "ratio); BERT, GPT, GPT-2 and DistilBERT (half)", calls=3.5),
        Step(f"forward, BERT 12 × 768 ({s}-token sentences)", "cluster_isotropy", "sentences", [16, 64],
             _forward("bert-12-768", s), w["sts_sentences"], "STS 2012–2016, SICK-R, STS-B test (both sentences); "
             "BERT, RoBERTa, GPT-2", calls=3),
        Step("forward, BERT 12 × 768 (64-token padded examples)", "cluster_isotropy", "examples", [8, 32],
             _forward("bert-12-768", 64), GLUE_CLF_EXAMPLES, "SST-2, CoLA, RTE, MRPC train + validation (published "
             "sizes), BERT's token features"),
        Step(f"forward, BERT 12 × 768 ({c}-token sentences)", "classifiers", "sentences", [16, 64],
             _forward("bert-12-768", c), w["clf_sentences"], "polarity, SNLI dev and the GLUE train sets (published "
             "sizes); all-mpnet-base-v2, all-distilroberta-v1 (half), all-MiniLM-L6-v2 (about an eighth)", calls=1.6),
    ]  # fmt: skip
    return [replace(st, linear=True) for st in steps]  # same-shape batches: linear in the items


def _kernel_steps(rng) -> list[Step]:
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))

    def isoscore_at(n):
        X = rng.normal(size=(n, 768)).astype(np.float32)
        return lambda: isoscore(X)

    def alignment_at(n):
        seqs = ["".join(rng.choice(aa, size=150)) for _ in range(2 * n)]
        pairs = list(zip(seqs[::2], seqs[1::2]))
        return lambda: [P.alignment_stats(a, b) for a, b in pairs]

    def lid_at(n):
        X = rng.normal(size=(n, 16)) @ rng.normal(size=(16, 384))
        return lambda: lid_mle(X, k=20, variant="levina_bickel")

    def kmeans_at(n):
        X = rng.normal(size=(n, 384))
        return lambda: cluster_labels(X, 20, clusterer="scipy", random_state=0)

    def silhouette_at(n):
        X, y = rng.normal(size=(n, 768)).astype(np.float32), rng.integers(0, 2, n)
        return lambda: silhouette_score(X, y, dtype=torch.float32)

    return [
        Step("IsoScore of n × 768 vectors", "isoscore", "vectors", [300, 1000, 3000, 10_000, 30_000], isoscore_at,
             46 * 150_000, "46 layers of BERT, DistilBERT, GPT and GPT-2, about 150k WikiText-2 tokens each (one "
             "call per layer)"),
        Step("global alignment + identity (150-residue pairs)", "protein_isotropy", "pairs", [10, 30, 100, 300, 1000],
             alignment_at, 6_400_000, "Hakim et al.'s 6.4 million Swiss-Prot pairs", kind="cores"),
        Step("LID (MLE, k = 20) of n points in 384-d", "manifolds", "points", [300, 1000, 3000, 10_000, 30_000],
             lid_at, 1_190_000, "Cai et al.'s Table 3: 1.19 M BERT token instances, per layer (one layer)"),
        Step("k-means (k = 20, 10 Lloyd iterations) of n × 384 tokens", "cluster_isotropy", "tokens",
             [500, 1500, 5000, 15_000, 50_000], kmeans_at, 60_000, "an STS token pool of about 60k tokens (one fit "
             "of the grid; the grid and 5 seeds multiply it)"),
        Step("silhouette (float32) of n × 768 classifier inputs", "classifiers", "points", [500, 1000, 2000, 4000],
             silhouette_at, 10_000, "a sample of 10,000 at every update: 1,000 updates × 5 seeds × 2 setups and "
             "250 × 5 × 8 GLUE tasks, × 3 models", calls=60_000),
    ]  # fmt: skip


def run() -> list[Scaling]:
    """Measure every step at its sizes and fit its power law (several minutes on 2 cores)."""
    cpu_flops = gemm_peak_flops()  # this CPU's float32 GEMM: the basis of the assumed GPU speed-ups
    gemm = (
        H100_FP32 * GPU_EFFICIENCY / cpu_flops,
        f"H100 FP32 peak {H100_FP32 / 1e12:.0f} TFLOP/s × {GPU_EFFICIENCY} (assumed efficiency) ÷ this "
        f"CPU's measured {cpu_flops / 1e9:.0f} GFLOP/s",
    )
    cores = (8.0, "CPU-bound (parasail SIMD): the 16 host cores of an H100 machine against 2 here")
    steps = _forward_steps(_workloads()) + _kernel_steps(np.random.default_rng(0))
    out = []
    for st in sorted(steps, key=lambda s: s.chapter):
        seconds = []
        for n in st.sizes:
            seconds.append(_best(st.maker(n), 2)[0])
            print(f"{st.chapter}: {st.step}: {n} {st.unit} in {seconds[-1]:.3f} s")
        a, b = fit_power_law(st.sizes, seconds)
        speedup, why = gemm if st.kind == "gemm" else cores
        measured = (st.step, st.chapter, st.unit, st.sizes, seconds, b, a)
        out.append(Scaling(*measured, st.paper_work, st.note, speedup, why, st.calls, st.linear))
    _encoder.cache_clear()
    return out


def plot(rows: list[Scaling], path) -> None:
    """Log-log plot of cost against work with the fitted lines (seaborn), saved to ``path``."""
    x = "work (relative to the smallest size)"
    data = pd.DataFrame(
        [
            {"step": f"{r.chapter}: {r.step} (b = {r.exponent:.2f})", x: n / r.sizes[0], "s": t}
            for r in rows
            for n, t in zip(r.sizes, r.seconds)
        ]
    )
    fig = Figure(figsize=(9, 6))  # no pyplot: no backend, no global figure state
    ax = fig.subplots()
    sns.lineplot(data=data, x=x, y="s", hue="step", marker="o", ax=ax)
    ax.set(xscale="log", yscale="log", ylabel="seconds (best of 2)", title="Cost against work, with fitted exponents")
    ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)  # the PNG carries its legend verdict (replib.plotting)
