"""The alignment pair engine on a dask.distributed LocalCluster: the same results as the serial run, and
resumable (a rerun reads the finished chunks back). This is the route to a real cluster (issue 18)."""

import numpy as np
import pytest

from replib.methods import protein as P

distributed = pytest.importorskip("distributed", reason="dask.distributed not installed (dev extra)")


def _job(rng, n=16):
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    seqs = ["".join(rng.choice(aa, size=int(rng.integers(20, 60)))) for _ in range(n)]
    return seqs, P.all_pairs(n)


def test_dask_backend_gives_the_serial_results_and_resumes(tmp_path, rng):
    seqs, pairs = _job(rng)
    serial = P.alignment_pair_stats(seqs, pairs, chunk_size=17, progress=False)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster),
    ):
        done = []
        first = P.alignment_pair_stats(
            seqs, pairs, chunk_size=17, n_jobs=2, backend="dask", progress=False, out_dir=tmp_path, on_chunk=done.append
        )
        assert len(done) == -(-len(pairs) // 17)  # every chunk computed on the cluster
        again = []
        second = P.alignment_pair_stats(
            seqs,
            pairs,
            chunk_size=17,
            n_jobs=2,
            backend="dask",
            progress=False,
            out_dir=tmp_path,
            on_chunk=again.append,
        )
    assert again == []  # all chunks read back, none recomputed
    for df in (first, second):
        assert df.equals(serial)
