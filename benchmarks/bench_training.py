"""Tokens per second of the training loop against this CPU's one-thread float32 peak (run by hand).

    PYTHONPATH=. python benchmarks/bench_training.py [--profile offline] [--updates 8] [--csv FILE]

One update of each offline model (:func:`replib.training.loop._update`: forward, backward, clipping, AdamW) on
one thread, as the training chapter trains it, timed in CPU seconds (``time.process_time``: other work on the
machine slows the wall clock, not the CPU seconds of this process), after two warm-up updates; beside it the
one-thread float32 GEMM peak (2048², torch). FLOP of an update: ``6 × parameters × tokens`` for the matrix
products of the weights (the tied embedding included once, as the LM head) plus the attention scores and
values (``6 × 2 × layers × seq_len × hidden`` per token with backward). One CSV row per model.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from replib._io import read_csv, write_csv_atomic  # noqa: E402
from replib.profiles import choose_precision, cpu_flags  # noqa: E402
from replib.training.config import config_for  # noqa: E402
from replib.training.loop import _update, build_model  # noqa: E402

VOCAB = {"protein": 33}


def gemm_peak(n: int = 2048, reps: int = 4) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.process_time()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.process_time() - t)


def update_flop(cfg: dict, n_params: int) -> float:
    tokens = cfg["batch"] * cfg["seq_len"]
    attention = 6 * 2 * cfg["layers"] * cfg["seq_len"] * cfg["hidden"]
    return tokens * (6 * n_params + attention)


def bench(task: str, cfg: dict, updates: int) -> dict:
    vocab = VOCAB.get(task, cfg.get("vocab"))
    model = build_model(task, cfg, vocab, 0).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    ids = rng.integers(4, vocab, (cfg["batch"], cfg["seq_len"]))
    batch = {"input_ids": ids, "attention_mask": np.ones_like(ids), "labels": ids.copy()}
    for _ in range(2):
        _update(model, opt, batch, 1e-3, "cpu")
    t = time.process_time()
    for _ in range(updates):
        _update(model, opt, batch, 1e-3, "cpu")
    seconds = (time.process_time() - t) / updates
    n_params = sum(p.numel() for p in model.parameters())
    return {"seconds": seconds, "tokens": cfg["batch"] * cfg["seq_len"], "flop": update_flop(cfg, n_params)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="offline")
    p.add_argument("--updates", type=int, default=8)
    p.add_argument("--csv", type=Path, help="append the rows to this CSV file")
    args = p.parse_args()
    torch.set_num_threads(1)
    peak = gemm_peak()
    cfgs = config_for(args.profile)
    rows = []
    for task in ("text", "protein"):
        r = bench(task, cfgs[task], args.updates)
        rows.append(
            {
                "date": date.today().isoformat(),
                "machine": platform.processor() or platform.machine(),
                "cpu_flags": " ".join(sorted(f for f in cpu_flags() if f.startswith(("avx", "amx", "fma")))),
                "precision": choose_precision(),
                "model": f"{args.profile} {task}",
                "tokens_per_update": r["tokens"],
                "cpu_s_per_update": round(r["seconds"], 4),
                "tokens_per_cpu_s": round(r["tokens"] / r["seconds"]),
                "gflop_per_s": round(r["flop"] / r["seconds"] / 1e9, 1),
                "one_thread_peak_gflop_per_s": round(peak / 1e9, 1),
                "share_of_peak": round(r["flop"] / r["seconds"] / peak, 2),
            }
        )
    for row in rows:
        print(row)
    if args.csv:  # appended to the rows already there (a file with other columns is an error)
        write_csv_atomic(args.csv, read_csv(args.csv, list(rows[0])) + rows, list(rows[0]))


if __name__ == "__main__":
    main()
