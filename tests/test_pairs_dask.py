"""The Dask path (--scheduler, replib.distributed) on a dask.distributed LocalCluster: the alignment pair engine
and the protein embedding shards give the same results as the serial run and resume (a rerun reads the finished
chunks back). This is the route to a real cluster (issues 18 and 26)."""

import functools
import os
from pathlib import Path

import numpy as np
import pytest

from bookkit import cli
from bookkit.run import runner
from replib.distributed import THREAD_VARIABLES, dask_client
from replib.embeddings import embed_proteins
from replib.methods import protein_isotropy as P
from replib.models import tiny_model

ROOT = Path(__file__).resolve().parents[1]

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


def _proteins(rng, n=18):
    aa = np.array(list("ACDEFGHIKLMNPQRSTVWY"))
    return ["".join(rng.choice(aa, size=int(rng.integers(10, 40)))) for _ in range(n)]


@pytest.mark.slow  # two worker processes start and load the model
def test_embedding_shards_on_a_two_worker_cluster_equal_the_serial_path_and_resume(tmp_path, rng):
    seqs = _proteins(rng)
    loader = functools.partial(tiny_model, "esm", seed=0)
    lm = loader()
    serial = embed_proteins(lm, seqs, layers=(0, -1), shard_size=4, progress=False)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        kw = dict(layers=(0, -1), shard_size=4, progress=False, cache_dir=tmp_path, client=client, loader=loader)
        half = embed_proteins(lm, seqs, shards=(0, 2), **kw)  # a part: the first half of the shards
        # shards are ranges of the length-sorted sequences; a part returns its own in input order
        mine = np.sort(np.argsort([len(s) for s in seqs], kind="stable")[:12])
        assert len(half.lengths) == 12 and half.index.tolist() == mine.tolist()
        done = embed_proteins(lm, seqs, **kw)
        assert len(client.run(lambda: 1)) == 2  # two workers
    for layer in (0, -1):
        np.testing.assert_allclose(done.pooled[layer], serial.pooled[layer], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(done.lengths, serial.lengths)
    np.testing.assert_array_equal(half.pooled[-1], done.pooled[-1][mine])  # the whole read the part's shards back
    again = embed_proteins(lm, seqs, layers=(0, -1), shard_size=4, progress=False, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.pooled[-1], done.pooled[-1])  # the serial path reads the cluster's shards


@pytest.mark.slow  # a LocalCluster of two worker processes
def test_the_dask_path_needs_a_loader_and_connects_by_scheduler(tmp_path, rng):
    lm = tiny_model("esm", seed=0)
    with pytest.raises(ValueError, match="loader"):
        embed_proteins(lm, _proteins(rng, 3), client=object(), progress=False)
    assert dask_client(None) is None  # no scheduler: the serial and joblib paths
    before = {k: os.environ.get(k) for k in THREAD_VARIABLES}
    client = dask_client("local", n_workers=2)
    # the nanny sets OMP_NUM_THREADS=1 & co. in this process for its workers; left there, every later
    # subprocess (a training run, a chapter's kernel) would run on one thread (CI found it)
    assert {k: os.environ.get(k) for k in THREAD_VARIABLES} == before
    try:
        assert len(client.scheduler_info()["workers"]) == 2
        done = []
        seqs, pairs = _job(rng, n=8)
        df = P.alignment_pair_stats(
            seqs, pairs, chunk_size=7, n_jobs=2, backend="dask", progress=False, out_dir=tmp_path, on_chunk=done.append
        )
        assert df.equals(P.alignment_pair_stats(seqs, pairs, chunk_size=7, progress=False)) and len(done) == 4
    finally:
        client.close()
        client.cluster.close()


def test_the_runner_passes_the_scheduler_and_it_does_not_change_the_fingerprint(tmp_path):
    args = cli.build_parser().parse_args(["run", "protein_isotropy", "--profile", "paper", "--scheduler"])
    assert args.scheduler == "local" and args.chapter == ["protein_isotropy"]
    args = cli.build_parser().parse_args(["run", "--scheduler", "tcp://10.0.0.1:8786", "--chapters", "x"])
    assert args.scheduler == "tcp://10.0.0.1:8786"
    plan = runner._Plan("smoke", ROOT, tmp_path, False, 1.0, None, False, print, [None], False, scheduler="local")
    params = runner._parameters(plan, "protein_isotropy", None, "align-1")
    assert params == {"part": "align-1", "scheduler": "local"}
    serial = dict(plan.__dict__, scheduler=None)
    assert runner._fingerprint(plan, "protein_isotropy", params) == runner._fingerprint(
        runner._Plan(**serial),
        "protein_isotropy",
        runner._parameters(runner._Plan(**serial), "protein_isotropy", None, "align-1"),
    )
