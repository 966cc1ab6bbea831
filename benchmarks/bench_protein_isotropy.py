"""Pairs/s of the alignment engine: parasail traceback kernel vs Biopython, and the joblib pair engine.

Run: ``REPLIB_DATA_MIRROR=/path/to/shared/data PYTHONPATH=. python benchmarks/bench_protein_isotropy.py [n_proteins]``.
Real Swiss-Prot sequences when the mirror is present, else random sequences of length 300-400.
Prints pairs/s and checks that the engine equals the direct calls; timings on a shared machine vary.
"""

import os
import sys
import tempfile
import time

import numpy as np

from replib.methods import protein_isotropy as P


def sequences(n):
    try:
        from replib.data import load_swissprot

        s = load_swissprot("5k").sequence.tolist()
        return [s[i] for i in P.sample_proteins(len(s), n, seed=0)]
    except Exception:  # no mirror: synthetic sequences
        rng = np.random.default_rng(0)
        return ["".join(rng.choice(list(P.AMINO_ACIDS), size=int(rng.integers(300, 400)))) for _ in range(n)]


def rate(fn, pairs, seqs):
    t = time.perf_counter()
    out = [fn(seqs[i], seqs[j]) for i, j in pairs]
    return len(pairs) / (time.perf_counter() - t), out


def main(n=120):
    seqs = [P.map_residues_for_alignment(s) for s in sequences(n)]
    pairs = P.all_pairs(n)
    few = pairs[:200]
    r_par, a = rate(P.alignment_stats, few, seqs)
    r_bio, b = rate(P.alignment_stats_biopython, few, seqs)
    assert all(x["score"] == y["score"] for x, y in zip(a, b))
    print(
        f"single core: parasail nw_trace_scan_16 + traceback counts {r_par:,.0f} pairs/s; Biopython align+counts {r_bio:,.0f} pairs/s"
    )
    for n_jobs in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            df = P.alignment_pair_stats(seqs, pairs, out_dir=tmp, chunk_size=2000, n_jobs=n_jobs, progress=False)
            dt = time.perf_counter() - t
            t = time.perf_counter()
            again = P.alignment_pair_stats(seqs, pairs, out_dir=tmp, chunk_size=2000, n_jobs=n_jobs, progress=False)
            dt_resume = time.perf_counter() - t
        assert df.equals(again)
        print(
            f"engine n_jobs={n_jobs}: {len(pairs):,} pairs in {dt:.1f} s ({len(pairs) / dt:,.0f} pairs/s); "
            f"rerun from the chunk store {dt_resume:.2f} s; cores: {os.cpu_count()}"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 120)
