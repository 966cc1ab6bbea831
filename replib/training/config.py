"""Sizes of the two training runs per profile, and the log-spaced checkpoint schedule."""

from __future__ import annotations

import copy

#: ESM-2-style masked protein LM and GPT-2-style causal LM, per profile. ``steps`` optimizer updates of
#: ``batch`` sequences of ``seq_len`` tokens. ``offline`` is sized so that both runs of a seed train in about
#: 150 CPU-seconds on one thread each (book/measurements/training_throughput.csv) and end clearly below their
#: unigram baselines without fitting their training text (:data:`replib.training.quality.FLATTENING`): the
#: protein model, 2 blocks of width 128, leaves the unigram plateau near update 30 and is flat by update 96;
#: the text model, 4 blocks of width 64, sees its 730,000 training tokens (:data:`_TEXT_DATA`) about once, so its
#: train-test gap stays near the 3 % that the held-out articles differ by, while its test loss still falls
#: (more passes over the same text widen the gap faster than they flatten the curve). ``paper`` is the same code
#: at GPU scale (ESM-2 8M's shape: 6 layers, width 320; a 6-layer width-512 GPT-2 on the WikiText-2 *train*
#: split), 6,000 updates each so that the chapter runs in one Colab T4 session (book/rehearsal.csv; 50,000
#: updates each were 9.7 T4-hours of training by the earlier rehearsal, which counted no attention).
#: the shape and schedule of each model (the columns of :data:`_SHAPES`)
RUN_SHAPE = ("layers", "hidden", "heads", "ffn", "seq_len", "batch", "steps", "lr", "warmup", "n_val", "save_every")
# fmt: off
_SHAPES = {
    #           layers hidden heads   ffn  seq_len batch   steps     lr  warmup  n_val  save_every
    "protein": {
        "smoke":   (2,     64,    2,   128,    32,    8,      16,  2e-3,      4,    32,      8),
        "offline": (2,    128,    4,   512,   128,   32,      96,  2e-3,     24,   128,     64),
        "paper":   (6,    320,   20,  1280,   512,   64,   6_000,  4e-4,    600,  2048,    500),
    },
    "text": {
        "smoke":   (2,     64,    2,   128,    32,    8,      16,  2e-3,      4,    32,      8),
        "offline": (4,     64,    4,   256,   128,   16,     384,  5e-3,     16,   128,     64),
        "paper":   (6,    512,    8,  2048,   256,   32,   6_000,  6e-4,    600,  2048,    500),
    },
}
# fmt: on
#: torch threads of the training loop per profile (None: torch's default). The small models of ``smoke`` and
#: ``offline`` (at most 4 layers of width 128) train on one thread: their matrices are too small for a second thread
#: to pay, and with the other core busy an OpenMP pool of two spins at its barriers (measured on 2 busy cores:
#: 387 ms an update of a 4-layer width-128 text model on one thread, 3,441 ms on two). A fixed count also makes the
#: weights independent of the machine's cores: bit-identity holds on one thread count (replib.training.loop)
_THREADS = {"smoke": 1, "offline": 1, "paper": None}
#: the data of each model per profile: protein = the Swiss-Prot subset; text = corpus, splits, vocabulary
_PROTEIN_DATA = {"smoke": "5k", "offline": "20k", "paper": "current"}
#: (offline: the WikiText-2 train split is not in the mirror; the model trains on *valid* and on the *test* articles
#: after the ones held out for its evaluation windows, :func:`replib.training.loop.text_lines`, about twice the
#: distinct text of *valid* alone)
_TEXT_DATA = {"smoke": ("valid", 512), "offline": (["valid", "test"], 2048), "paper": ("train", 16_384)}
#: what is measured at each checkpoint
_MEASURE = {
    "smoke": dict(n_tokens=400, lid_k=20, max_per_type=50, n_rogue=3),
    "offline": dict(n_tokens=1000, lid_k=50, max_per_type=200, n_rogue=3),
    "paper": dict(n_tokens=10_000, lid_k=100, max_per_type=1000, n_rogue=3),
}


def _profile(profile: str) -> dict:
    split, vocab = _TEXT_DATA[profile]
    return {
        "protein": {
            "subset": _PROTEIN_DATA[profile],
            "threads": _THREADS[profile],
            **dict(zip(RUN_SHAPE, _SHAPES["protein"][profile])),
        },
        "text": {
            "threads": _THREADS[profile],
            "corpus": "wikitext2",
            "train_split": split,
            "eval_split": "test",
            "vocab": vocab,
            **dict(zip(RUN_SHAPE, _SHAPES["text"][profile])),
        },
        "measure": dict(_MEASURE[profile]),
    }


_CFG = {profile: _profile(profile) for profile in ("smoke", "offline", "paper")}


def config_for(profile: str) -> dict:
    """Training and measurement sizes of a profile (a deep copy: callers may edit it)."""
    if profile not in _CFG:
        raise ValueError(f"unknown profile {profile!r}; expected one of {sorted(_CFG)}")
    return copy.deepcopy(_CFG[profile])


#: how many evenly spaced evaluations of the validation loss are logged besides the checkpoints (the
#: flattening criterion of :mod:`replib.training.quality` reads the one at three quarters of training)
EVAL_POINTS = 8


def eval_steps(total: int) -> list[int]:
    """Steps at which the validation loss is logged: the checkpoints (:func:`log_spaced_steps`) and
    ``ceil(k * total / EVAL_POINTS)`` for ``k = 1..EVAL_POINTS`` (weights are saved at the checkpoints only)."""
    total = int(total)
    linear = {-(-k * total // EVAL_POINTS) for k in range(1, EVAL_POINTS + 1)} if total > 0 else set()
    return sorted(set(log_spaced_steps(total)) | linear)


def log_spaced_steps(total: int) -> list[int]:
    """Checkpoint steps ``0, 1, 2, 4, 8, …`` (powers of two) up to and including ``total``.

    Step ``s`` means the weights after ``s`` optimizer updates (step 0 = the random initialisation), so
    early training, where most of the change happens, is sampled densely.
    """
    total = int(total)
    if total < 0:
        raise ValueError(f"total steps must be >= 0; got {total}")
    steps, s = [0], 1
    while s < total:
        steps.append(s)
        s *= 2
    if total > 0:
        steps.append(total)
    return steps
