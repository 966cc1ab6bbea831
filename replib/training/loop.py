"""The resumable training loop.

Layout of a run folder (``$REPLIB_CACHE_DIR/training/<task>-<config hash>-s<seed>/``)::

    run.json                  the task, seed and everything the folder's key is made of (written first)
    tokenizer/                the tokenizer (ESM-2 vocabulary, or the BPE trained on the training text)
    ckpt/step_000000.safetensors ...   model weights at the log-spaced steps 0, 1, 2, 4, ...,
                              each with its sha256 beside it (``step_000000.safetensors.sha256``)
    log.jsonl                 one JSON line per evaluation step (the checkpoints and 8 evenly spaced steps,
                              :func:`replib.training.config.eval_steps`): step, lr, train loss (the
                              update's batch), train_eval_loss (fixed training windows, scored like the
                              validation ones), validation loss/perplexity
    resume.json + resume-<step>/       the latest resumable state: model.safetensors, optim.safetensors
                              (AdamW moments and the torch RNG state as plain tensors), each with its
                              ``.sha256``, and state.json
    final/                    Hugging Face layout: model.safetensors, config.json, tokenizer files,
                              sha256.json (sha256 of every file), training.json (configuration, log,
                              the unigram baseline of the validation loss, token counts)

The folder's name is content-keyed (:mod:`replib.training.cache`): configuration, data identity, code
version of the training modules and library versions; any change trains a new folder. A finished run is
reused only after every file of ``final/`` matches its sha256.

Every file is written atomically (:mod:`replib._io`), the log included: a new row rewrites the whole log
through a temporary file, so a kill mid-write leaves the previous log, never a torn line. Every checkpoint
and resume state is verified against its sha256 when it is loaded; a corrupted one is refused with a
:class:`CheckpointError` that names it. Nothing is ever unpickled. One process at a time trains a run
folder (:func:`replib._io.cache_lock`): a second run of the same configuration waits, then finds it done.
Batches are a pure function of ``(seed, step)`` and the learning rate a pure function of ``step``, so the
resumable state is the weights, the optimizer moments and the torch RNG; a run killed at any point and
restarted on the same number of threads finishes with bit-identical weights (tested in
``tests/test_training.py``, with real kills); a resume on another thread count is warned about.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import transformers as tr
from tqdm.auto import tqdm

from .._io import atomic_path, cache_lock, cache_root, remove_stale_temporaries, sha256_file, write_json_atomic
from ..data import load_swissprot
from ..data.loaders import load_lm_corpus
from ..models.tiny import ESM_VOCAB
from ..profiles import torch_device
from .cache import RUN_FORMAT, run_key, run_key_parts  # noqa: F401 (RUN_FORMAT re-exported)
from .checkpoints import (  # noqa: F401 (CheckpointError and verify_checkpoint re-exported)
    CheckpointError,
    _append_log,
    _load_resume,
    _load_weights,
    _read_log,
    _save_resume,
    _save_weights,
    verify_checkpoint,
    verify_final,
)
from .config import config_for, eval_steps, log_spaced_steps
from .data import encode_text, hold_out, protein_batch, protein_split, text_batch, text_split, train_bpe_tokenizer
from .quality import unigram_baseline

TASKS = ("protein", "text")
#: seconds a run waits for another process training the same run folder (paper-scale runs take hours)
TRAIN_LOCK_TIMEOUT = 6 * 3600.0


class TrainingInterrupted(RuntimeError):
    """Raised by a callback to stop training (used to test kill-and-resume)."""


@dataclass
class TrainRun:
    """A finished or partial training run on disk."""

    task: str
    cfg: dict
    seed: int
    dir: Path

    @property
    def steps(self) -> list[int]:
        return log_spaced_steps(self.cfg["steps"])

    @property
    def eval_steps(self) -> list[int]:
        """Steps whose validation loss is logged (the checkpoints and evenly spaced steps)."""
        return eval_steps(self.cfg["steps"])

    @property
    def final_dir(self) -> Path:
        return self.dir / "final"

    def training(self) -> dict:
        """``final/training.json``: configuration, log, the unigram baseline (``unigram``) and token counts."""
        return json.loads((self.final_dir / "training.json").read_text())

    def checkpoint(self, step: int) -> Path:
        return self.dir / "ckpt" / f"step_{step:06d}.safetensors"

    def log(self) -> list[dict]:
        """Log rows, one per evaluation step (a row re-written after a resume replaces the earlier one)."""
        return _read_log(self.dir / "log.jsonl")

    def sha256(self) -> dict:
        return json.loads((self.final_dir / "sha256.json").read_text())


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}")


def run_dir(task: str, cfg: dict, seed: int = 0, root=None) -> Path:
    """The run folder: ``<root or cache>/training/<task>-<key>-s<seed>``, ``key`` the content key of
    :func:`replib.training.cache.run_key` (configuration, data identity, code version, layout)."""
    _check_task(task)
    base = Path(root) if root is not None else cache_root("training")
    return base / f"{task}-{run_key(task, cfg)}-s{int(seed)}"


# ------------------------------------------------------------------------------------- model & data
def build_model(task: str, cfg: dict, vocab_size: int, seed: int):
    """A freshly initialised ``EsmForMaskedLM`` (ESM-2 settings: rotary positions, token dropout,
    pre-LN) or ``GPT2LMHeadModel``, seeded by ``torch.manual_seed(seed)``; dropout is 0."""
    torch.manual_seed(seed)
    if task == "protein":
        conf = tr.EsmConfig(
            vocab_size=len(ESM_VOCAB),
            pad_token_id=1,
            mask_token_id=ESM_VOCAB.index("<mask>"),
            hidden_size=cfg["hidden"],
            num_hidden_layers=cfg["layers"],
            num_attention_heads=cfg["heads"],
            intermediate_size=cfg["ffn"],
            max_position_embeddings=cfg["seq_len"] + 2,
            position_embedding_type="rotary",
            token_dropout=True,
            emb_layer_norm_before=False,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
        return tr.EsmForMaskedLM(conf)
    conf = tr.GPT2Config(
        vocab_size=vocab_size,
        n_embd=cfg["hidden"],
        n_layer=cfg["layers"],
        n_head=cfg["heads"],
        n_inner=cfg["ffn"],
        n_positions=cfg["seq_len"],
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return tr.GPT2LMHeadModel(conf)


def _esm_tokenizer(out_dir: Path):
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = out_dir / "vocab.txt"
    if not vocab.exists():
        with atomic_path(vocab) as tmp:
            tmp.write_text("\n".join(ESM_VOCAB) + "\n")
    return tr.EsmTokenizer.from_pretrained(str(out_dir))


def prepare_data(task: str, cfg: dict, seed: int, folder: Path) -> dict:
    """Tokenizer, training source and fixed validation batches of a run.

    ``protein``: Swiss-Prot (``cfg["subset"]``) through :func:`replib.data.load_swissprot`, split by
    :func:`protein_split` (``n_val`` held-out sequences). ``text``: the training lines of :func:`text_lines`
    (the ``train_split`` of the corpus through :func:`replib.data.loaders.load_lm_corpus`, less the held-out
    articles), a BPE trained on them, validation windows from the held-out lines. The frequency of every token
    id in the training stream is returned as ``counts``. ``train_eval_batches``: as many training sequences or
    windows as validation ones, fixed, scored like them (the train-validation gap of the log).
    """
    if task == "protein":
        seqs = load_swissprot(cfg["subset"])["sequence"].tolist()
        train, val = protein_split(seqs, cfg["n_val"], seed)
        tok = _esm_tokenizer(folder / "tokenizer")
        val_batches = [
            protein_batch(val, 0, seed, 0, cfg["seq_len"], stream=1, indices=range(i, min(i + cfg["batch"], len(val))))
            for i in range(0, len(val), cfg["batch"])
        ]
        # as many training sequences with a fixed masking, scored like the validation set: the train-validation gap
        train_eval = [
            protein_batch(
                train, 0, seed, 0, cfg["seq_len"], stream=2, indices=range(i, min(i + cfg["batch"], len(val)))
            )
            for i in range(0, len(val), cfg["batch"])
        ]
        for b in val_batches + train_eval:  # the validation set is the held-out sequences with a fixed masking
            b.pop("clean_ids")
        return {
            "tokenizer": tok,
            "train": train,
            "val_batches": val_batches,
            "val_seqs": val,
            "train_eval_batches": train_eval,
            "vocab_size": len(tok),
            "make_batch": lambda step: _strip(protein_batch(train, step, seed, cfg["batch"], cfg["seq_len"])),
        }
    held, train_lines = text_lines(cfg)
    text = text_split(train_lines)
    tok = train_bpe_tokenizer(text, cfg["vocab"], folder / "tokenizer")
    stream = encode_text(tok, text)
    eval_stream = encode_text(tok, text_split(held))
    n_win = min(cfg["n_val"], len(eval_stream) // cfg["seq_len"])
    starts = np.arange(n_win) * cfg["seq_len"]
    val_batches = [
        text_batch(eval_stream, 0, seed, 0, cfg["seq_len"], starts=starts[i : i + cfg["batch"]])
        for i in range(0, n_win, cfg["batch"])
    ]
    # as many fixed training windows, scored like the validation windows: the train-validation gap
    train_starts = np.random.default_rng([int(seed), 11]).integers(0, len(stream) - cfg["seq_len"], size=n_win)
    train_eval = [
        text_batch(stream, 0, seed, 0, cfg["seq_len"], starts=train_starts[i : i + cfg["batch"]])
        for i in range(0, n_win, cfg["batch"])
    ]
    return {
        "tokenizer": tok,
        "train": stream,
        "eval_stream": eval_stream,
        "val_batches": val_batches,
        "train_eval_batches": train_eval,
        "vocab_size": len(tok),
        "counts": np.bincount(stream, minlength=len(tok)),
        "make_batch": lambda step: text_batch(stream, step, seed, cfg["batch"], cfg["seq_len"]),
    }


def text_lines(cfg: dict) -> tuple[list[str], list[str]]:
    """The text run's (evaluation, training) lines. Training: the lines of ``train_split`` (one split or a list
    of them); evaluation: ``eval_split``. When the evaluation split is also a training split, its first articles
    with at least ``n_val * seq_len`` words (the evaluation windows) are held out (:func:`~.data.hold_out`) and
    only its other articles are trained on."""
    splits = [cfg["train_split"]] if isinstance(cfg["train_split"], str) else list(cfg["train_split"])
    eval_lines = load_lm_corpus(cfg["corpus"], cfg["eval_split"])
    if cfg["eval_split"] not in splits:
        return eval_lines, [line for sp in splits for line in load_lm_corpus(cfg["corpus"], sp)]
    held, rest = hold_out(eval_lines, cfg["n_val"] * cfg["seq_len"])
    train = [line for sp in splits for line in (rest if sp == cfg["eval_split"] else load_lm_corpus(cfg["corpus"], sp))]
    return held, train


def _strip(b: dict) -> dict:
    b = dict(b)
    b.pop("clean_ids", None)
    return b


def lr_at(step: int, cfg: dict) -> float:
    """Linear warm-up over ``warmup`` updates, then cosine decay to 10 % at ``steps``."""
    warm = max(int(cfg["warmup"]), 1)
    if step <= warm:
        return cfg["lr"] * step / warm
    t = (step - warm) / max(cfg["steps"] - warm, 1)
    return cfg["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))


def _to_torch(batch: dict, device="cpu"):
    return {k: torch.from_numpy(np.ascontiguousarray(v)).to(device) for k, v in batch.items()}


def validation_loss(model, batches) -> float:
    """Token-weighted mean cross-entropy over the fixed validation batches (nats per predicted token)."""
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    tot, n = 0.0, 0
    with torch.no_grad():
        for b in batches:
            lab = b["labels"]
            k = int((lab != -100).sum()) if model.config.model_type == "esm" else int(lab[:, 1:].size)
            loss = model(**_to_torch(b, device)).loss
            tot += float(loss) * k
            n += k
    model.train(was)
    return tot / max(n, 1)


def _export_final(run: TrainRun, model, tok, extra: dict) -> None:
    part = run.dir / "final.part"
    if part.exists():
        shutil.rmtree(part)
    model.save_pretrained(str(part), safe_serialization=True)
    tok.save_pretrained(str(part))
    write_json_atomic(
        part / "training.json", {"task": run.task, "seed": run.seed, "config": run.cfg, "log": run.log(), **extra}
    )
    sums = {p.name: sha256_file(p) for p in sorted(part.iterdir()) if p.is_file()}
    write_json_atomic(part / "sha256.json", sums)
    if run.final_dir.exists():
        shutil.rmtree(run.final_dir)
    part.replace(run.final_dir)


# ------------------------------------------------------------------------------------------- training
def train_lm(
    task: str,
    cfg: dict,
    seed: int = 0,
    *,
    root=None,
    callback: Callable[[int], None] | None = None,
    progress: bool = True,
    device: str | None = None,
) -> TrainRun:
    """Train (or resume, or just return) one run.

    Parameters
    ----------
    task : {"protein", "text"}
        ``protein``: ``EsmForMaskedLM`` on Swiss-Prot with the ESM masking recipe; ``text``:
        ``GPT2LMHeadModel`` on WikiText-2/PTB with a BPE trained on the training text.
    cfg : dict
        ``config_for(profile)[task]``; its ``threads`` (if any, not None) is torch's thread count while the
        run trains (restored after).
    seed : int
        Seeds the initialisation, the batches and the masking.
    root : path-like, optional
        Parent folder of the run folders (default ``$REPLIB_CACHE_DIR/training``).
    callback : callable(step), optional
        Called after every update once its checkpoint/resume state is on disk; raising
        :class:`TrainingInterrupted` stops the run (a test's stand-in for a kill).
    device : str, optional
        Default: ``"cuda"`` when a GPU is visible (the paper profile), else ``"cpu"``. Bit-identical
        resumption is guaranteed (and tested) on the CPU; on a GPU it holds up to cuBLAS determinism.

    Returns
    -------
    TrainRun
        With ``final/`` complete. A run whose ``final/`` exists is returned without training, once every
        file of it matches the sha256 recorded in ``final/sha256.json``.

    Raises
    ------
    CheckpointError
        The resume state or a file of ``final/`` on disk fails its sha256.
    replib._io.CacheLockTimeout
        Another process trained the same run folder for longer than :data:`TRAIN_LOCK_TIMEOUT`.
    """
    _check_task(task)
    run = TrainRun(task, dict(cfg), int(seed), run_dir(task, cfg, seed, root))
    if not (run.final_dir / "sha256.json").exists():
        with cache_lock(run.dir, timeout=TRAIN_LOCK_TIMEOUT, what=f"the training run {run.dir}"):
            if not (run.final_dir / "sha256.json").exists():  # another process may have finished it meanwhile
                with torch_threads(cfg.get("threads")):
                    _train(run, callback, progress, device or torch_device())
    verify_final(run.final_dir)
    return run


@contextlib.contextmanager
def torch_threads(n: int | None):
    """torch's intra-op threads set to ``n`` for the block (None: left as they are), restored after."""
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _train(run: TrainRun, callback, progress: bool, device: str) -> None:
    """Train ``run`` from its resume state (or from scratch) to its last step and export ``final/``."""
    cfg, task = run.cfg, run.task
    run.dir.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(run.dir)  # a killed run's half-written files (the run lock is held: no writer lives)
    write_json_atomic(run.dir / "run.json", {"task": task, "seed": run.seed, **run_key_parts(task, cfg)})
    data = prepare_data(task, cfg, run.seed, run.dir)
    model = build_model(task, cfg, data["vocab_size"], run.seed).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=(0.9, 0.98), eps=1e-8, weight_decay=0.01)
    start = _load_resume(run.dir, model, opt)
    schedule, evals = set(run.steps), set(run.eval_steps)
    model.train()

    def checkpoint(step, train_loss):
        if step in schedule:
            _save_weights(model, run.checkpoint(step))
        vl, tl = validation_loss(model, data["val_batches"]), validation_loss(model, data["train_eval_batches"])
        _append_log(
            run.dir,
            {
                "step": step,
                "lr": lr_at(step, cfg),
                "train_loss": train_loss,
                "train_eval_loss": tl,
                "val_loss": vl,
                "val_ppl": math.exp(vl),
            },
        )

    if start < 0:
        checkpoint(0, None)
        _save_resume(run.dir, model, opt, 0)
        start = 0
    total = cfg["steps"]
    bar = tqdm(range(start + 1, total + 1), initial=start, total=total, desc=f"train {task}", disable=not progress)
    for step in bar:
        loss = _update(model, opt, data["make_batch"](step), lr_at(step, cfg), device)
        if step in evals:
            checkpoint(step, loss)
        if step in schedule or step % cfg["save_every"] == 0 or step == total:
            _save_resume(run.dir, model, opt, step)
        bar.set_postfix(loss=f"{loss:.3f}")
        if callback is not None:
            callback(step)
    extra = {"unigram": unigram_baseline(task, data)}
    if "counts" in data:
        extra["token_counts"] = data["counts"].tolist()
    _export_final(run, model.cpu(), data["tokenizer"], extra)


def _update(model, opt, batch: dict, lr: float, device: str) -> float:
    """One optimizer update at learning rate ``lr`` (gradient norm clipped at 1); the batch's loss."""
    for g in opt.param_groups:
        g["lr"] = lr
    loss = model(**_to_torch(batch, device)).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())


def trained_model(task: str, profile: str, seed: int = 0, *, root=None, progress: bool = True) -> TrainRun:
    """The run of ``task`` at ``profile``'s sizes: read from the cache, or trained (resumed) now.

    The training chapter and the protein chapter both call this, so they share one artefact.
    """
    return train_lm(task, config_for(profile)[task], seed, root=root, progress=progress)


def load_checkpoint_model(run: TrainRun, step: int):
    """The full model (with its LM head) at a checkpoint step, in eval mode."""
    path = run.checkpoint(step)
    if not path.exists():
        raise FileNotFoundError(f"{run.dir.name}: no checkpoint at step {step} ({path})")
    vocab = json.loads((run.final_dir / "config.json").read_text())["vocab_size"] if run.final_dir.exists() else None
    if vocab is None:
        raise FileNotFoundError(f"{run.dir.name}: run is not finished (no final/)")
    model = build_model(run.task, run.cfg, vocab, run.seed)
    _load_weights(model, path)
    return model.eval()
