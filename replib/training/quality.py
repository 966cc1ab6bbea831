"""How far a run trained: the unigram baseline of its validation loss, and whether its validation curve
flattened.

A language model that has learned only the frequencies of its tokens predicts every token with its
training frequency; its cross-entropy on the validation tokens is the *unigram baseline*. A model
whose validation perplexity is not clearly below it has learned little beyond frequencies, and the
isotropy of its representations says little about trained models.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ..models.tiny import ESM_VOCAB

__all__ = [
    "FLATTENING",
    "residue_counts",
    "unigram_cross_entropy",
    "validation_targets",
    "unigram_baseline",
    "relative_drop",
    "over_minimum",
    "generalisation_gap",
    "flattening",
]

#: the flattening criterion: the validation loss fell by less than ``max_rel_drop`` (relative) over the
#: last ``last_frac`` of the updates, from the evaluation step at ``(1 - last_frac) * steps`` to the last; the
#: final validation loss lies within ``max_over_min`` (relative) of the run's minimum (the curve did not turn
#: up again); and the training loss on fixed training windows lies less than ``max_gap`` (relative to the
#: validation loss) below the validation loss at the end (a curve that flattened because the model learned its
#: training text by heart is not a converged one)
FLATTENING = {"last_frac": 0.25, "max_rel_drop": 0.01, "max_over_min": 0.01, "max_gap": 0.05}

_UNK = ESM_VOCAB.index("<unk>")
_LUT = np.full(256, _UNK, dtype=np.int64)  # byte -> ESM-2 token id (unknown letters -> <unk>)
for _i, _tok in enumerate(ESM_VOCAB):
    if len(_tok) == 1:
        _LUT[ord(_tok)] = _i


def residue_counts(seqs: Iterable[str], vocab_size: int = len(ESM_VOCAB)) -> np.ndarray:
    """How often each ESM-2 token id occurs among the residues of ``seqs`` (upper-cased; a letter outside
    the vocabulary counts as ``<unk>``, as :func:`replib.training.data.encode_protein` encodes it)."""
    text = "".join(seqs).upper().encode("ascii", errors="replace")
    return np.bincount(_LUT[np.frombuffer(text, dtype=np.uint8)], minlength=vocab_size)


def unigram_cross_entropy(counts, targets) -> float:
    """Cross-entropy (nats per token) of ``targets`` under the add-one smoothed unigram distribution.

    .. math:: p(t) = \\frac{c_t + 1}{\\sum_u c_u + V}, \\qquad H = -\\frac{1}{n} \\sum_{i=1}^{n} \\ln p(t_i)

    with ``c`` the training counts over a vocabulary of ``V = len(counts)`` ids (add-one, Laplace's rule, so
    an id never seen in training keeps a finite loss).

    Parameters
    ----------
    counts : array (V,) of int
        Training frequency of every token id.
    targets : array of int
        The token ids to predict (ids in ``[0, V)``).
    """
    counts = np.asarray(counts)
    targets = np.asarray(targets).ravel()
    if counts.ndim != 1 or len(counts) == 0 or (counts < 0).any():
        raise ValueError(f"counts must be a non-empty 1-d array of non-negative counts; got shape {counts.shape}")
    if targets.size == 0:
        raise ValueError("no target tokens to score")
    if targets.min() < 0 or targets.max() >= len(counts):
        raise ValueError(f"target ids must lie in [0, {len(counts)}); got {targets.min()}..{targets.max()}")
    logp = np.log(counts.astype(np.float64) + 1.0) - math.log(float(counts.sum()) + len(counts))
    return float(-logp[targets].mean())


def validation_targets(task: str, batches: Sequence[dict]) -> np.ndarray:
    """The token ids a run's validation loss scores: the masked residues (``labels != -100``) of the protein
    batches; every token after the first of each text window (a causal LM predicts positions 1..L-1)."""
    if task == "protein":
        return np.concatenate([b["labels"][b["labels"] != -100] for b in batches])
    if task == "text":
        return np.concatenate([b["labels"][:, 1:].ravel() for b in batches])
    raise ValueError(f"task must be 'protein' or 'text'; got {task!r}")


def unigram_baseline(task: str, data: dict) -> dict:
    """The unigram baseline of a run's validation loss, from its training-split frequencies.

    Parameters
    ----------
    task : {"protein", "text"}
    data : dict
        :func:`replib.training.loop.prepare_data`'s output (training sequences or token stream, validation
        batches, vocabulary size).

    Returns
    -------
    dict
        ``val_loss`` (nats per scored token), ``val_ppl`` (its exponential) and ``n_tokens`` (how many
        validation tokens were scored: the same ones as the model's validation loss).
    """
    if task == "protein":
        counts = residue_counts(data["train"], data["vocab_size"])
    else:
        counts = np.bincount(data["train"], minlength=data["vocab_size"])
    targets = validation_targets(task, data["val_batches"])
    loss = unigram_cross_entropy(counts, targets)
    return {"val_loss": loss, "val_ppl": math.exp(loss), "n_tokens": int(targets.size)}


def relative_drop(log: Sequence[dict], last_frac: float = FLATTENING["last_frac"]) -> float:
    """Relative fall of the validation loss over the last ``last_frac`` of training.

    .. math:: \\frac{L(s) - L(T)}{L(s)}, \\qquad s = \\min\\{\\text{logged step} \\ge (1 - f)\\,T\\}

    with ``T`` the last logged step and ``f = last_frac``; below :data:`FLATTENING`'s ``max_rel_drop`` the
    curve has flattened (negative when the loss rose again).

    Parameters
    ----------
    log : sequence of dict
        The run's log rows (``step``, ``val_loss``), as :meth:`replib.training.TrainRun.log` returns them.
    """
    if not 0 < last_frac < 1:
        raise ValueError(f"last_frac must be in (0, 1); got {last_frac}")
    rows = sorted(log, key=lambda r: r["step"])
    if len(rows) < 2:
        raise ValueError(f"need at least two logged steps; got {len(rows)}")
    total = rows[-1]["step"]
    start = next(r for r in rows if r["step"] >= (1 - last_frac) * total)
    if start["step"] == total:
        raise ValueError(
            f"no validation loss logged in the last {last_frac:.0%} of the {total} steps before the last one"
        )
    return float((start["val_loss"] - rows[-1]["val_loss"]) / start["val_loss"])


def over_minimum(log: Sequence[dict]) -> float:
    """How far the final validation loss lies above the run's lowest one, relative to that minimum:
    :math:`(L(T) - \\min_s L(s)) / \\min_s L(s)` over the logged steps (0 when the last is the lowest)."""
    rows = sorted(log, key=lambda r: r["step"])
    if not rows:
        raise ValueError("no logged steps")
    low = min(r["val_loss"] for r in rows)
    return float((rows[-1]["val_loss"] - low) / low)


def generalisation_gap(log: Sequence[dict]) -> float:
    """The train–validation gap at the last logged step, relative to the validation loss:
    :math:`(L_{val}(T) - L_{train}(T)) / L_{val}(T)`, with :math:`L_{train}` the loss on fixed training windows
    (``train_eval_loss`` of the log, scored like the validation loss); positive when the model fits its
    training text better than held-out text."""
    last = max(log, key=lambda r: r["step"])
    if last.get("train_eval_loss") is None:
        raise ValueError(f"step {last['step']} has no train_eval_loss: the run predates the generalisation gap")
    return float((last["val_loss"] - last["train_eval_loss"]) / last["val_loss"])


def flattening(log: Sequence[dict], criterion: dict = FLATTENING) -> dict:
    """The flattening criterion of a run's log (:data:`FLATTENING`): ``rel_drop`` (:func:`relative_drop`),
    ``over_min`` (:func:`over_minimum`), ``gap`` (:func:`generalisation_gap`) and ``flattened``: all three
    below their bounds, so that a curve that stopped falling because the run overfitted fails it."""
    drop = relative_drop(log, criterion["last_frac"])
    over, gap = over_minimum(log), generalisation_gap(log)
    ok = drop < criterion["max_rel_drop"] and over < criterion["max_over_min"] and gap < criterion["max_gap"]
    return {"rel_drop": drop, "over_min": over, "gap": gap, "flattened": bool(ok)}
