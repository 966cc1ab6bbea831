"""The classifiers and training chapters' parts rehearsed at the papers' sizes (issue 26).

* classifiers ``setups``: the chapter's Sec. 1 checks (real), the SBERT forward passes of the polarity and
  SNLI sentences (the packaged all-MiniLM-L6-v2, real) at two sizes, and the paper's training protocol (an
  evaluation after every update) at two numbers of updates on vectors of the real sets' size and width,
  extrapolated to 1,000 updates x 5 seeds of both setups;
* ``glue-<model>``: the full-size SBERT stand-in's forward passes at two sizes extrapolated to the eight
  GLUE training sets (the paper's sizes), and 250 updates x 5 seeds with metrics on 10,000 items measured
  at two numbers of updates on QQP-sized vectors;
* training ``protein-1``, ``protein-2``... / ``text-1``...: the paper-shaped ESM-2 8M-like and GPT-2 models
  trained for a few updates at two counts on the stand-in data (Swiss-Prot 2014, the WikiText-2 train
  stand-in), extrapolated to the part's range of the 50,000 updates; the last range adds one checkpoint's
  measurements at the paper's settings (every layer) times the number of checkpoints.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

from ..config import chapter_config
from ..data import load_glue, load_polarity, load_snli
from ..embeddings import embed_sentences
from ..methods import classifiers as ct
from ..methods import training_dynamics as td
from ..models import resolve_model
from ..models.fullsize import fullsize_model
from ..training import config_for, log_spaced_steps
from ..training.data import encode_text, protein_batch, protein_split, text_batch, text_split, train_bpe_tokenizer
from ..training.loop import _update, build_model
from ..training.measure import measure_layer
from .core import Cost, count_flops, scaled_cost, sentence_flops, timed
from .standins import corpus_standin, swissprot_standin

__all__ = ["rehearse_classifiers", "rehearse_training_dynamics"]

#: items of the eight GLUE training sets (Wang et al. 2019, Table 1)
GLUE_TRAIN = {"cola": 8551, "sst2": 67349, "mrpc": 3668, "qqp": 363846, "mnli": 392702, "qnli": 104743, "rte": 2490,
              "wnli": 635}  # fmt: skip
_PAIRED = {"mrpc", "qqp", "mnli", "qnli", "rte", "wnli"}


def _here(what: str, n: int, cpu: float, wall: float) -> Cost:
    cost = Cost(what, [n], [cpu], [wall], n)
    cost.cpu_full = cpu
    return cost


def _training_cost(what: str, n_items: int, dim: int, n_classes: int, config, ctx, full_updates: int) -> Cost:
    """The chapter's training loop (metrics after every update) at two numbers of updates on ``n_items``
    stand-in vectors of width ``dim``, one seed; extrapolated to ``full_updates`` (updates x seeds). With
    ``ctx.max_items`` fewer items are trained on, and the work is counted in item-updates (linear in the
    items)."""
    n_full, n_items = n_items, n_items if ctx.max_items is None else min(n_items, ctx.max_items)
    setup = ct.synthetic_setup(n_items, dim, n_classes, seed=ctx.seed, name="stand-in")
    u1 = max(2, int(round(5 * ctx.scale)))

    def run(n):
        cfg = ct.TrainConfig(n_updates=n, eval_every=1, seeds=(0,), metric_sample=config.metric_sample, lr=config.lr,
                             checkpoint_every=n)  # fmt: skip
        with tempfile.TemporaryDirectory(dir=ctx.workdir) as fresh:  # no checkpoint of another size is resumed
            return ct.run_seeds(setup, cfg, cache_dir=fresh, progress=False)

    cost, _ = scaled_cost(what, run, [u1, 4 * u1], full_updates * n_full, units=lambda u: u * n_items, on_gpu=True,
                          precision="fp32")  # fmt: skip
    cost.flops_full = count_flops(run, u1) * full_updates * n_full / (u1 * n_items)
    cost.flops_exact = n_items == n_full  # every update on all the items: one shape, the count scales
    return cost


def rehearse_classifiers(part, ctx) -> dict:
    """``setups``, ``glue-<model>`` or ``rest`` of the classifiers chapter."""
    cfg = chapter_config("classifiers", "paper", seed=ctx.seed, part=part.name)
    main, glue = ct.train_config(cfg, "main"), ct.train_config(cfg, "glue")
    if part.name == "setups":
        return _setups(cfg, main, ctx)
    if part.name.startswith("glue-"):
        return _glue(cfg, glue, str(cfg.models[0]), ctx)
    rec, cpu, wall = timed(ct.silhouette_agreement, np.random.default_rng(ctx.seed))
    cost = _here("the silhouette's agreement with scikit-learn (three shapes)", 3, cpu, wall)
    return {"model": "none", "costs": [cost], "records": {"silhouette_torch_vs_sklearn_max_err": rec}, "notes": []}


def _setups(cfg, main, ctx) -> dict:
    rng = np.random.default_rng(ctx.seed)

    def theory():
        out = ct.variance_identity_records(rng, cfg.identity_n)
        out.update(ct.angle_records(ct.angle_table(rng)))
        return out

    records, cpu, wall = timed(theory)
    costs = [_here("Sec. 1 checks (variance identity, angles)", cfg.identity_n, cpu, wall)]
    pol, snli = load_polarity(), load_snli("dev")
    texts = list(pol["text"]) + list(snli["premise"]) + list(snli["hypothesis"])
    minilm = resolve_model("all-MiniLM-L6-v2")  # packaged: the real model
    order = np.random.default_rng(ctx.seed).permutation(len(texts))
    sample = [texts[i] for i in order]
    n1 = max(16, int(round(128 * ctx.scale)))

    def run(n):
        return embed_sentences(minilm, sample[:n], drop_special=False, progress=False)

    forward, _ = scaled_cost(
        "SBERT forward passes (all-MiniLM-L6-v2, real)", run, [n1, 4 * n1], len(texts), on_gpu=True
    )
    forward.flops_full, forward.flops_exact = sentence_flops(minilm, texts), True
    costs.append(forward)
    full = main.n_updates * len(main.seeds)
    costs.append(_training_cost("training, polarity (eval every update)", len(pol), 384, 2, main, ctx, full))
    costs.append(_training_cost("training, SNLI (eval every update)", len(snli), 768, 3, main, ctx, full))
    return {"model": "all-MiniLM-L6-v2 (packaged, real)", "costs": costs, "records": records,
            "notes": [f"{len(texts):,} sentences (polarity, SNLI dev as the mirror holds them)"]}  # fmt: skip


def _glue(cfg, glue, spec: str, ctx) -> dict:
    lm = resolve_model(spec) if spec == "all-MiniLM-L6-v2" else fullsize_model(spec, seed=ctx.seed)  # MiniLM: real
    texts = list(load_glue("SST-2", "train")["sentence"])
    sentences = sum(n * (2 if t in _PAIRED else 1) for t, n in GLUE_TRAIN.items())
    n1 = max(16, int(round(128 * ctx.scale)))

    def run(n):
        return embed_sentences(lm, texts[:n], drop_special=False, progress=False)

    forward, _ = scaled_cost(f"SBERT forward passes ({spec}), the eight GLUE training sets", run, [n1, 4 * n1],
                             sentences, on_gpu=True)  # fmt: skip
    # the mirror holds SST-2 of the eight: the others' sentences taken at its mean padded cost
    forward.flops_full = sentence_flops(lm, texts) * sentences / len(texts)
    full = glue.n_updates * len(glue.seeds) * len(GLUE_TRAIN)
    train = _training_cost("training on QQP-sized vectors (metrics on 10,000 items)", GLUE_TRAIN["qqp"],
                           lm.spec.hidden_size * 2, 2, glue, ctx, full)  # fmt: skip
    notes = [f"{sentences:,} sentences at the paper's GLUE sizes; SST-2 of the mirror measured"]
    return {"model": f"fullsize {spec} (random weights)" if "MiniLM" not in spec else spec, "costs": [forward, train],
            "records": {}, "notes": notes}  # fmt: skip


# ------------------------------------------------------------------------------------------ training chapter
def _batches(task: str, cfg: dict, seed: int, folder):
    """The stand-in training data of a paper-shaped run and ``make_batch(step, n)`` (``n`` sequences)."""
    if task == "protein":
        train, val = protein_split(swissprot_standin().sequence.tolist(), cfg["n_val"], seed)
        return 33, lambda step, n: protein_batch(train, step, seed, n, cfg["seq_len"])
    text = text_split(corpus_standin("wikitext2"))
    tok = train_bpe_tokenizer(text, cfg["vocab"], folder)
    stream = encode_text(tok, text)
    return len(tok), lambda step, n: text_batch(stream, step, seed, n, cfg["seq_len"])


def rehearse_training_dynamics(part, ctx) -> dict:
    """A range of a run's updates (``protein-1``..., training at the paper's shape; the last range also measures
    the run) or ``rest`` (the summaries, from the parts).

    The updates are timed on slices of the paper's batch (2 and 8 sequences of the paper's length: the cost
    per token), fitted in tokens and extrapolated to the paper's batch x steps tokens."""
    paper = config_for("paper")
    if part.name == "rest":
        return {"model": "none", "costs": [_here("summaries of the two runs' tables", 1, 0.0, 0.0)], "records": {},
                "notes": ["the summaries read the two parts' measurement tables (nothing to compute at scale)"]}  # fmt: skip
    select = dict(part.select)
    task, until = select["tasks"][0], select["until"][0]
    cfg = paper[task]
    first = next(a for a, b in td.task_ranges("paper", paper, task) if b == until)
    vocab, make_batch = _batches(task, cfg, ctx.seed, Path(ctx.workdir) / f"tok-{task}")
    model = build_model(task, cfg, vocab, ctx.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    model.train()
    s1 = max(1, int(round(2 * ctx.scale)))
    state = {"step": 0}

    def run(n):
        state["step"] += 1
        batch = {k: v for k, v in make_batch(state["step"], n).items() if k != "clean_ids"}
        _update(model, opt, batch, cfg["lr"], "cpu")

    steps, seq_len = until - first + 1, cfg["seq_len"]
    full = cfg["batch"] * seq_len * steps
    train, _ = scaled_cost(f"{task} LM updates {first:,}-{until:,} of {cfg['steps']:,} (tokens; x {cfg['batch']} x "
                           f"{seq_len})", run, [s1, 4 * s1], full, units=lambda n: n * seq_len, on_gpu=True,
                           precision="fp32")  # fmt: skip
    train.flops_full = count_flops(run, s1) * full / (s1 * seq_len)
    train.flops_exact = True  # every batch has the paper's shape (sequences x seq_len): the count scales exactly
    costs = [train]
    n_params = sum(p.numel() for p in model.parameters())
    notes = [f"{n_params:,} parameters; updates {first:,}-{until:,} of {cfg['steps']:,}"]
    if part.runs("measure"):  # the run's last range measures every checkpoint
        n_ckpt = len(log_spaced_steps(cfg["steps"]))
        costs.append(_measure_cost(model, make_batch, paper["measure"], n_ckpt, seq_len, ctx))
        notes.append(f"{n_ckpt} checkpoints measured in the paper profile")
    return {"model": f"{task} LM at the paper's shape (random init)", "costs": costs, "records": {}, "notes": notes}


def _measure_cost(model, make_batch, mcfg: dict, n_checkpoints: int, seq_len: int, ctx) -> Cost:
    """One checkpoint's measurements (every layer, the paper's ``n_tokens``) times the checkpoints."""
    model.eval()
    n_tokens = mcfg["n_tokens"] if ctx.max_items is None else min(mcfg["n_tokens"], ctx.max_items)
    batch = make_batch(10**6, 4 * -(-n_tokens // seq_len))  # padding is dropped: proteins are shorter
    # the unmasked sequences (a masked-LM batch's <mask> tokens are zero rows of ESM's embedding output)
    ids = torch.from_numpy(np.ascontiguousarray(batch.get("clean_ids", batch["input_ids"])))
    real = np.flatnonzero(np.asarray(batch["attention_mask"]).ravel())[:n_tokens]
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.from_numpy(np.asarray(batch["attention_mask"])),
                    output_hidden_states=True)  # fmt: skip
    states = [h.reshape(-1, h.shape[-1])[real].double().numpy() for h in out.hidden_states]
    types = ids.numpy().ravel()[real]

    def run():
        for X in states:
            measure_layer(X, types, mcfg, seed=ctx.seed)

    _, cpu, wall = timed(run)
    cost = Cost(f"one checkpoint's measurements ({len(states)} layers x {n_tokens:,} tokens)", [1], [cpu], [wall],
                n_checkpoints, repeats=n_checkpoints)  # fmt: skip
    cost.cpu_full = cpu * n_checkpoints
    return cost
