"""Forward passes against the hardware (``python -m replib bench --floor``).

At paper scale the chapters' cost is the models' forward passes, so three things are measured here:

- **extraction against the bare forward**: replib's extractor (:func:`replib.embeddings.embed_sentences`,
  :func:`~replib.embeddings.embed_proteins`: tokenising, batching, the forward, pooling) against the model's
  forward alone on the same pre-tokenised, length-sorted, padded batches (built before the clock starts), in
  tokens per second (target: replib at least 0.9 of the bare forward);
- **the forward against the CPU**: the forward's matrix-product work (:func:`encoder_gemm_flop`) per second
  against this CPU's float32 GEMM peak (:func:`gemm_peak_flops`), for the packaged MiniLM and for a
  full-size BERT-large geometry (24 layers, width 1024, random weights: the cost of a forward does not depend
  on the weights' values);
- **padding**: the padded tokens of length-sorted batches with a token budget on Swiss-Prot's lengths
  (:func:`padding_rows`), and the forward's precision (:func:`precision_rows`: bf16 autocast against float32,
  speed and the difference in IsoScore and effective dimensions).

Nothing here is asserted about speed; ``tests/test_bench.py`` checks that the extractor and the bare forward
compute the same vectors.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch
import transformers as tr

from replib.data import load_stsb, load_swissprot
from replib.embeddings import embed_proteins, embed_sentences, protein_text
from replib.embeddings.batching import length_batches, pad_batch, pad_token_id, padded_tokens
from replib.metrics import effective_dimensions, isoscore
from replib.models import load_model, tiny_model
from replib.models.base import LoadedModel, state_sha256
from replib.profiles import cpu_flags

from .bench_tables import (
    ForwardRow,
    PaddingRow,
    PrecisionRow,
    as_dicts,
    forward_markdown,
    padding_markdown,
    precision_markdown,
)

__all__ = [
    "bert_large_geometry",
    "encoder_gemm_flop",
    "forward_rows",
    "gemm_peak_flops",
    "padding_rows",
    "precision_rows",
]

#: the default token budgets and shard sizes of the extractors (embed_sentences on CPU, embed_proteins)
SENTENCE_BUDGET, SENTENCE_SHARD = 2048, 2048
PROTEIN_BUDGET, PROTEIN_SHARD = 16384, 256


def _best(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def gemm_peak_flops(n: int = 2048, repeat: int = 3) -> float:
    """This CPU's float32 matrix-product throughput (FLOP/s): the best of torch's and numpy's ``n × n`` GEMM."""
    a = torch.randn(n, n, generator=torch.Generator().manual_seed(0))
    an = a.numpy()
    t = min(_best(lambda: torch.mm(a, a), repeat)[0], _best(lambda: an @ an, repeat)[0])
    return 2.0 * n**3 / t


def _config(lm):
    c = lm.model.config
    return c.num_hidden_layers, c.hidden_size, c.intermediate_size, c.num_attention_heads


def encoder_gemm_flop(lm, shapes) -> float:
    r"""Matrix-product FLOP of a BERT-style encoder's forward over padded batches of ``shapes`` = ``[(B, P)]``.

    Per layer and batch: :math:`8BPh^2` (query, key, value and output projections), :math:`4BPhf` (the
    feed-forward) and :math:`4BP^2h` (attention's two products), with ``h`` the width and ``f`` the
    feed-forward width; embeddings, normalisations and softmax are left out (not GEMMs, a few percent).
    """
    L, h, f, _ = _config(lm)
    return float(sum(L * (8 * B * P * h * h + 4 * B * P * h * f + 4 * B * P * P * h) for B, P in shapes))


def bert_large_geometry(seed: int = 0) -> LoadedModel:
    """BERT-large's geometry (24 layers, width 1024, 16 heads, FFN 4096; 1,026 positions) with random weights
    and ProtBert's 30-token vocabulary: a full-size forward for timing, not a model of anything."""
    tiny = tiny_model("protbert", seed=seed)
    cfg = tr.BertConfig(
        vocab_size=tiny.tokenizer.vocab_size,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        max_position_embeddings=1026,
    )
    torch.manual_seed(seed)
    model = tr.BertModel(cfg, add_pooling_layer=False).eval()
    spec = replace(tiny.spec, name="bert-large-geometry", hidden_size=1024, n_layers=24)
    ident = {"random": "bert-large-geometry", "seed": seed, "state_sha256": state_sha256(model)}
    return LoadedModel("bert-large-geometry", model, tiny.tokenizer, spec, "cpu", f"random:seed={seed}", identity=ident)


def _batches(lm, enc: list, budget: int, shard: int, items=None) -> list:
    """Padded batches of the token ids ``enc``, length-sorted within shards of ``shard`` under a ``budget`` of
    tokens: ``[(items, ids, mask)]``, the items being the positions in ``enc`` or their ``items``."""
    out = []
    for s in range(0, len(enc), shard):
        part = enc[s : s + shard]
        for b in length_batches([len(e) for e in part], budget):
            ids, mask = pad_batch([part[i] for i in b], pad_token_id(lm.tokenizer), left=False)
            out.append(([s + i if items is None else int(items[s + i]) for i in b], ids, mask))
    return out


def _sentence_batches(lm, texts, max_length: int = 512):
    """embed_sentences' batches of ``texts`` (every token kept), built ahead: ``[(items, ids, mask)]``."""
    enc = lm.tokenizer(texts, add_special_tokens=True, truncation=True, max_length=max_length)["input_ids"]
    return _batches(lm, enc, SENTENCE_BUDGET, SENTENCE_SHARD)


def _protein_batches(lm, seqs, max_length: int):
    """embed_proteins' batches (ProtBert recipe: sorted by length over the whole input, then shards and
    batches), built ahead: ``[(items, ids, mask)]``."""
    kept = [s[:max_length] for s in seqs]
    order = np.argsort([len(s) for s in kept], kind="stable")
    enc = [lm.tokenizer(protein_text(kept[i], lm.spec.recipe))["input_ids"] for i in order]
    return _batches(lm, enc, PROTEIN_BUDGET, PROTEIN_SHARD, order)


def bare_forward(lm, batches):
    """The model's forward alone over ready batches (last hidden state of each)."""
    with torch.inference_mode():
        return [lm.model(input_ids=ids, attention_mask=mask).last_hidden_state for _, ids, mask in batches]


def _pooled(batches, outs, n: int, d: int, drop_ends: bool) -> np.ndarray:
    """Mean of each item's rows of the last hidden state (``drop_ends``: without the first and last token)."""
    pooled = np.zeros((n, d))
    for (items, _, mask), h in zip(batches, outs):
        for r, i in enumerate(items):
            m = int(mask[r].sum())
            pooled[i] = (h[r, 1 : m - 1] if drop_ends else h[r, :m]).double().mean(0)
    return pooled


def _forward_row(lm, data, batches, n_items, replib_fn, drop_ends, peak, repeat) -> ForwardRow:
    t_ours, ours = _best(replib_fn, repeat)
    t_raw, outs = _best(lambda: bare_forward(lm, batches), repeat)
    raw = _pooled(batches, outs, n_items, lm.spec.hidden_size, drop_ends)
    shapes = [tuple(ids.shape) for _, ids, _ in batches]
    L, h, f, heads = _config(lm)
    tokens, padded = int(sum(int(m.sum()) for _, _, m in batches)), int(sum(B * P for B, P in shapes))
    geometry, budget = f"{L} layers × {h}, {heads} heads, FFN {f}", PROTEIN_BUDGET if drop_ends else SENTENCE_BUDGET
    diff, flop = float(np.abs(np.asarray(ours, dtype=float) - raw).max()), encoder_gemm_flop(lm, shapes)
    return ForwardRow(lm.name, geometry, data, n_items, tokens, padded, budget, t_ours, t_raw, flop, peak, diff)


def _sentences(n: int) -> tuple[list[str], str]:
    """The first ``n`` sentences of STS-B test (both columns), else generated ones."""
    try:
        df = load_stsb("test")
        texts = (df["sentence1"].tolist() + df["sentence2"].tolist())[:n]
        return texts, f"STS-B test, {len(texts):,} sentences"
    except Exception:  # no data mirror: generated sentences of 5-40 words
        words = "the a man woman plays guitar runs fast slowly dog cat on beach park under bright sky".split()
        rng = np.random.default_rng(0)
        return [" ".join(rng.choice(words, int(rng.integers(5, 40)))) for _ in range(n)], f"{n:,} generated sentences"


def _proteins(n: int) -> tuple[list[str], str]:
    seqs = load_swissprot("5k")["sequence"].tolist()
    pick = np.random.default_rng(0).choice(len(seqs), size=min(n, len(seqs)), replace=False)
    return [seqs[i] for i in pick], f"Swiss-Prot 2014, {len(pick)} random sequences (≤ 1,022 residues)"


def forward_rows(quick: bool = False, repeat: int = 3, progress=print):
    """MiniLM on sentences and a full-size model on proteins (``quick``: a tiny ProtBert and a few items)."""
    peak = gemm_peak_flops(1024 if quick else 2048)
    rows = []
    lm = load_model("all-MiniLM-L6-v2")
    texts, data = _sentences(64 if quick else 2000)
    batches = _sentence_batches(lm, texts)
    fn = lambda: embed_sentences(lm, texts, drop_special=False, progress=False).means
    rows.append(_forward_row(lm, data, batches, len(texts), fn, False, peak, repeat))
    progress(f"forward {lm.name}: replib ÷ bare {rows[-1].ratio:.2f}, {rows[-1].gflops:.0f} GFLOP/s")
    big = tiny_model("protbert") if quick else bert_large_geometry()
    seqs, data = _proteins(8 if quick else 16)
    batches = _protein_batches(big, seqs, 1022)
    fn = lambda: embed_proteins(big, seqs, layers=(-1,), max_length=1022, progress=False).pooled[-1]
    rows.append(_forward_row(big, data, batches, len(seqs), fn, True, peak, 1 if not quick else repeat))
    progress(f"forward {big.name}: replib ÷ bare {rows[-1].ratio:.2f}, {rows[-1].gflops:.0f} GFLOP/s")
    return rows


def padding_rows() -> list[PaddingRow]:
    """Padding of the extractors' batches on Swiss-Prot's lengths (ProtBert tokens: residues + 2, at most
    1,022 residues) and on STS-B's sentences (MiniLM's tokens), each under the batching it gets."""
    rows = []
    for subset in ("5k", "20k"):
        lengths = np.minimum(load_swissprot(subset)["length"].to_numpy(), 1022) + 2
        name, n, tokens = f"Swiss-Prot 2014 {subset} (ProtBert tokens)", len(lengths), int(lengths.sum())
        for how, order in (("within shards of 256 (before)", lengths), ("over the whole input", np.sort(lengths))):
            padded = padded_tokens(order, PROTEIN_BUDGET, PROTEIN_SHARD)
            rows.append(PaddingRow(name, f"{PROTEIN_BUDGET:,}-token batches, sorted {how}", n, tokens, padded))
    texts, data = _sentences(10**9)
    lengths = np.array([len(e) for e in load_model("all-MiniLM-L6-v2").tokenizer(texts)["input_ids"]])
    how = f"{SENTENCE_BUDGET:,}-token batches, sorted within shards of {SENTENCE_SHARD:,}"
    padded = padded_tokens(lengths, SENTENCE_BUDGET, SENTENCE_SHARD)
    rows.append(PaddingRow(f"{data} (MiniLM tokens)", how, len(lengths), int(lengths.sum()), padded))
    return rows


def _token_cloud(lm, texts, precision: str):
    out = embed_sentences(lm, texts, precision=precision, progress=False)
    return np.concatenate(out.tokens), out.means


def precision_rows(quick: bool = False) -> list[PrecisionRow]:
    """bf16 autocast against float32 for MiniLM on STS-B sentences, on CUDA when there is one, else the CPU (one
    run each): tokens per second, and IsoScore and effective dimensions of the token cloud and of the sentence
    means in both precisions."""
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    lm = load_model("all-MiniLM-L6-v2", device=dev)
    texts, _ = _sentences(64 if quick else 2000)
    t32, (tok32, mean32) = _best(lambda: _token_cloud(lm, texts, "fp32"), 1)
    flags = sorted(f for f in cpu_flags() if "bf16" in f or f.startswith("amx"))  # as /proc/cpuinfo lists them
    note = "" if dev != "cpu" else f" ({', '.join(flags)})" if flags else " (no bf16 instructions: emulated)"
    rows = []
    for precision in ("bf16",) + (("fp16",) if dev.startswith("cuda") else ()):
        t, (tok, mean) = _best(lambda p=precision: _token_cloud(lm, texts, p), 1)
        measures = {
            "IsoScore (tokens)": (isoscore(tok32), isoscore(tok)),
            "effective dimensions (tokens)": (effective_dimensions(tok32), effective_dimensions(tok)),
            "IsoScore (sentence means)": (isoscore(mean32), isoscore(mean)),
            "max |Δ| of a token vector": (0.0, float(np.abs(tok.astype(float) - tok32).max())),
        }
        rows.append(PrecisionRow(lm.name, dev, precision, len(tok32), t, t32, measures, note))
    return rows


def sections(
    quick: bool = False, repeat: int = 3, precision: bool = False, floor: bool = True, progress=print
) -> tuple[str, dict]:
    """The forward-pass and padding tables (``floor``) and the precision table (``precision``) as Markdown, and
    their rows."""
    parts, rows = [], {}
    if floor:
        fw = forward_rows(quick=quick, repeat=repeat, progress=progress)
        pad = padding_rows()
        parts = [
            "Forward passes: replib's extractor (tokenise, batch, forward, pool) against the model's bare forward on "
            "the same pre-tokenised, length-sorted batches (tokens per second; the padding share in brackets), and "
            "the forward's matrix-product GFLOP/s against this CPU's float32 GEMM peak (best of torch's and "
            "numpy's square GEMM). The full-size model is timed once per side; max abs diff compares the mean-pooled "
            "vectors of the two.",
            "",
            forward_markdown(fw),
            "",
            "Padding of the extractors' length-sorted batches with a token budget:",
            "",
            padding_markdown(pad),
        ]
        rows = {"forward": as_dicts(fw), "padding": as_dicts(pad)}
    if precision:
        prec = precision_rows(quick=quick)
        parts += ["", "Forward precision (autocast) against float32, same model, data and device:", ""]
        parts.append(precision_markdown(prec))
        rows["precision"] = as_dicts(prec)
    return "\n".join(parts).strip("\n"), rows
