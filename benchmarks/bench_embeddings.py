"""Tokens/s of replib's batched extractor vs a naive one-sentence-at-a-time loop (packaged MiniLM).

Run: ``REPLIB_DATA_MIRROR=/path/to/shared/data PYTHONPATH=. python benchmarks/bench_embeddings.py [n_sentences]`` (STS-B test sentences if the
mirror is present, else synthetic text). Both paths return the same mean vectors (checked).
"""

import sys
import time

import numpy as np
import torch

from replib.embeddings import embed_sentences
from replib.models import load_model


def sentences(n):
    """STS-B test sentences through the data layer (``REPLIB_DATA_MIRROR``), else synthetic text."""
    try:
        from replib.data import load_stsb

        df = load_stsb("test")
        return [t for pair in zip(df["sentence1"], df["sentence2"]) for t in pair][:n]
    except Exception as exc:  # no mirror, no download: say so and fall back
        print(f"STS-B unavailable ({type(exc).__name__}); using synthetic sentences")
    rng = np.random.default_rng(0)
    words = "the a man woman plays guitar runs fast slowly dog cat on beach park".split()
    return [" ".join(rng.choice(words, rng.integers(5, 30))) for _ in range(n)]


def naive(lm, texts):
    out = []
    with torch.no_grad():
        for t in texts:
            enc = lm.tokenizer(t, return_tensors="pt")
            h = lm.model(**enc).last_hidden_state[0]
            out.append(h.mean(0).numpy())
    return np.stack(out)


def main(n=1000):
    torch.set_num_threads(torch.get_num_threads())
    lm = load_model("all-MiniLM-L6-v2", device="cpu")
    texts = sentences(n)
    n_tok = sum(len(lm.tokenizer(t)["input_ids"]) for t in texts)
    t0 = time.perf_counter()
    ref = naive(lm, texts)
    t_naive = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = embed_sentences(lm, texts, drop_special=False, progress=False).means
    t_ours = time.perf_counter() - t0
    diff = float(np.abs(ours - ref).max())
    print(f"{len(texts)} sentences, {n_tok} tokens, {torch.get_num_threads()} threads")
    print(f"naive loop : {n_tok / t_naive:10.0f} tokens/s  ({t_naive:.2f} s)")
    print(f"extractor  : {n_tok / t_ours:10.0f} tokens/s  ({t_ours:.2f} s)  speed-up x{t_naive / t_ours:.2f}")
    print(f"max |diff| of mean vectors: {diff:.2e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
