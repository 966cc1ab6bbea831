"""Sizes of the two training runs per profile, and the log-spaced checkpoint schedule."""

from __future__ import annotations

import copy

#: ESM-2-style masked protein LM and GPT-2-style causal LM, per profile. ``steps`` optimizer updates of
#: ``batch`` sequences of ``seq_len`` tokens. ``offline`` is sized for about 12 minutes of the whole
#: chapter on 2 shared CPU cores; ``paper`` is the same code at GPU scale (ESM-2 8M's shape: 6 layers,
#: width 320; a 6-layer width-512 GPT-2 on the WikiText-2 *train* split) — expected about 1 h for both
#: on one A100/H100-class GPU, not measured here.
_CFG = {
    "smoke": {
        "protein": dict(
            subset="5k",
            layers=2,
            hidden=64,
            heads=2,
            ffn=128,
            seq_len=32,
            batch=8,
            steps=16,
            lr=2e-3,
            warmup=4,
            n_val=32,
            save_every=8,
        ),
        "text": dict(
            corpus="wikitext2",
            train_split="valid",
            eval_split="test",
            vocab=512,
            layers=2,
            hidden=64,
            heads=2,
            ffn=128,
            seq_len=32,
            batch=8,
            steps=16,
            lr=2e-3,
            warmup=4,
            n_val=32,
            save_every=8,
        ),
        "measure": dict(n_tokens=400, lid_k=20, max_per_type=50, n_rogue=3),
    },
    "offline": {
        "protein": dict(
            subset="20k",
            layers=4,
            hidden=128,
            heads=4,
            ffn=512,
            seq_len=64,
            batch=8,
            steps=128,
            lr=2e-3,
            warmup=8,
            n_val=64,
            save_every=32,
        ),
        "text": dict(
            corpus="wikitext2",
            train_split="valid",
            eval_split="test",
            vocab=2048,
            layers=4,
            hidden=128,
            heads=4,
            ffn=512,
            seq_len=64,
            batch=8,
            steps=128,
            lr=2e-3,
            warmup=8,
            n_val=64,
            save_every=32,
        ),
        "measure": dict(n_tokens=1000, lid_k=50, max_per_type=200, n_rogue=3),
    },
    "paper": {
        "protein": dict(
            subset="current",
            layers=6,
            hidden=320,
            heads=20,
            ffn=1280,
            seq_len=512,
            batch=64,
            steps=50_000,
            lr=4e-4,
            warmup=2000,
            n_val=2048,
            save_every=1000,
        ),
        "text": dict(
            corpus="wikitext2",
            train_split="train",
            eval_split="test",
            vocab=16_384,
            layers=6,
            hidden=512,
            heads=8,
            ffn=2048,
            seq_len=256,
            batch=32,
            steps=50_000,
            lr=6e-4,
            warmup=2000,
            n_val=2048,
            save_every=1000,
        ),
        "measure": dict(n_tokens=10_000, lid_k=100, max_per_type=1000, n_rogue=3),
    },
}


def config_for(profile: str) -> dict:
    """Training and measurement sizes of a profile (a deep copy: callers may edit it)."""
    if profile not in _CFG:
        raise ValueError(f"unknown profile {profile!r}; expected one of {sorted(_CFG)}")
    return copy.deepcopy(_CFG[profile])


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
