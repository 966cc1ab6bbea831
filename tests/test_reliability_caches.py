"""Fault injection on the persistence layer (issue 16): caches that cannot serve wrong data.

Every shard cache of the project is :func:`replib._io.run_sharded` (embeddings, SBERT vectors, the protein
pair engine), so the faults are injected there first and then through two of its users; the training
checkpoints of the classifier chapter have their own tests at the end.
"""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest

from replib._io import (
    ShardWarning,
    atomic_path,
    atomic_write,
    cache_key,
    hash_inputs,
    memo,
    run_sharded,
    sha256_file,
    shard_cache_key,
    write_json_atomic,
)

N, SIZE = 23, 5  # 5 shards: 4 of 5 items and one of 3


class Job:
    """A sharded job whose output depends on every item (and a ragged array, as token matrices are)."""

    def __init__(self, offset=0.0):
        self.calls, self.offset = [], offset

    def __call__(self, a, b):
        self.calls.append(a // SIZE)
        x = np.arange(a, b, dtype=np.float64) * 1.5 + self.offset
        return {"x": x, "rows": np.repeat(x, np.arange(a, b) % 3 + 1).astype(np.float32)[:, None] * np.ones(4)}


def run(cache, job=None, *, n=N, size=SIZE, info=None, **kw):
    job = job or Job()
    return run_sharded(n, size, job, info=info or {"job": "test"}, cache_dir=cache, progress=False, **kw), job


def same(a, b):
    assert len(a) == len(b)
    for s, t in zip(a, b):
        assert s.keys() == t.keys()
        for k in s:
            np.testing.assert_array_equal(s[k], t[k])


@pytest.fixture
def fresh():
    return run(None)[0]


@pytest.fixture
def cached(tmp_path, fresh):
    out, job = run(tmp_path)
    same(out, fresh)
    assert job.calls == [0, 1, 2, 3, 4]
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    return folder


def shard(folder, i):
    return folder / f"shard-{i:05d}.npz"


def rerun_expect(tmp_path, fresh, recomputed, bad_file=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, job = run(tmp_path)
    same(out, fresh)
    assert job.calls == recomputed
    msgs = [str(w.message) for w in caught if issubclass(w.category, ShardWarning)]
    if bad_file is None:
        assert msgs == []
    else:
        assert len(msgs) == 1 and str(bad_file) in msgs[0] and "recomputing" in msgs[0]
    return out


# ------------------------------------------------------------------------------------------- shards
def test_rerun_reads_every_shard_and_computes_nothing(tmp_path, fresh, cached):
    rerun_expect(tmp_path, fresh, [])


def test_deleted_shard_is_recomputed(tmp_path, fresh, cached):
    shard(cached, 2).unlink()
    rerun_expect(tmp_path, fresh, [2])


def test_flipped_byte_in_the_data_is_detected_and_recomputed(tmp_path, fresh, cached):
    p = shard(cached, 1)
    data = bytearray(p.read_bytes())
    at = data.find(fresh[1]["x"].tobytes())  # savez stores the arrays' bytes as they are
    assert at > 0
    data[at + 3] ^= 0x40
    p.write_bytes(bytes(data))
    rerun_expect(tmp_path, fresh, [1], bad_file=p)
    rerun_expect(tmp_path, fresh, [])  # the recomputed shard replaced the bad file


def test_no_single_flipped_byte_serves_wrong_data_or_crashes(tmp_path, fresh, cached):
    p = shard(cached, 4)
    good = p.read_bytes()
    n_detected = 0
    for at in range(0, len(good), 13):
        data = bytearray(good)
        data[at] ^= 0x08
        p.write_bytes(bytes(data))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out, job = run(tmp_path)
        same(out, fresh)
        warned = any(issubclass(w.category, ShardWarning) for w in caught)
        assert job.calls == ([4] if warned else [])  # recomputed exactly when reported
        n_detected += warned
        p.write_bytes(good)
    assert n_detected > len(good) // 13 // 2  # most positions matter (the rest: unused header bytes)


@pytest.mark.parametrize("keep", [0, 10, 0.5])
def test_truncated_shard_is_recomputed(tmp_path, fresh, cached, keep):
    p = shard(cached, 3)
    data = p.read_bytes()
    p.write_bytes(data[: keep if isinstance(keep, int) else int(len(data) * keep)])
    rerun_expect(tmp_path, fresh, [3], bad_file=p)


def test_shard_copied_over_another_is_rejected(tmp_path, fresh, cached):
    # issue 16: `cp shard-00006.npz shard-00007.npz` was accepted (wrong rows served)
    shutil.copy(shard(cached, 1), shard(cached, 2))
    rerun_expect(tmp_path, fresh, [2], bad_file=shard(cached, 2))


def test_last_shard_copied_over_a_full_one_is_rejected(tmp_path, fresh, cached):
    shutil.copy(shard(cached, 4), shard(cached, 0))  # fewer rows: a row count that does not fit
    rerun_expect(tmp_path, fresh, [0], bad_file=shard(cached, 0))


def test_shard_of_another_job_is_rejected(tmp_path, fresh, cached):
    other = tmp_path / "other"
    run(other, Job(offset=100.0), info={"job": "other"})
    (ofolder,) = list(other.iterdir())
    shutil.copy(shard(ofolder, 2), shard(cached, 2))  # same index, same shapes, another key
    rerun_expect(tmp_path, fresh, [2], bad_file=shard(cached, 2))


def test_consistently_rewritten_arrays_fail_their_checksum(tmp_path, fresh, cached):
    p = shard(cached, 2)
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["x"] = arrays["x"] + 1.0  # a valid archive with the old record: only the checksum can tell
    with open(p, "wb") as fh:
        np.savez(fh, **arrays)
    rerun_expect(tmp_path, fresh, [2], bad_file=p)


def test_shard_without_a_record_is_rejected(tmp_path, fresh, cached):
    p = shard(cached, 0)  # e.g. a shard of the old layout, or a hand-made file
    with open(p, "wb") as fh:
        np.savez(fh, **fresh[0])
    rerun_expect(tmp_path, fresh, [0], bad_file=p)


def test_garbage_manifest_is_rewritten_and_shards_still_used(tmp_path, fresh, cached):
    (cached / "manifest.json").write_text("{not json")
    with pytest.warns(ShardWarning, match="manifest"):
        out, job = run(tmp_path)
    same(out, fresh)
    assert job.calls == []


def test_kill_after_a_shard_is_written_resumes_identically(tmp_path, fresh):
    class Killed(BaseException):
        pass

    def kill(i):
        if i == 1:
            raise Killed

    with pytest.raises(Killed):
        run(tmp_path, on_shard_written=kill)
    (folder,) = list(tmp_path.iterdir())
    assert sorted(p.name for p in folder.glob("shard-*")) == ["shard-00000.npz", "shard-00001.npz"]
    written = []
    out, job = run(tmp_path, on_shard_written=written.append)
    same(out, fresh)
    assert job.calls == written == [2, 3, 4]


def test_kill_while_computing_or_writing_leaves_no_partial_file(tmp_path, fresh, monkeypatch):
    class Killed(BaseException):
        pass

    job = Job()

    def dies_in_shard_3(a, b):
        if a // SIZE == 3:
            raise Killed
        return job(a, b)

    with pytest.raises(Killed):
        run(tmp_path, dies_in_shard_3)
    # a kill in the middle of writing shard 0 of a second job: np.savez raises halfway through the file
    real_savez = np.savez

    def savez_dies(fh, **arrays):
        fh.write(b"PK\x03\x04 half an archive")
        raise Killed

    monkeypatch.setattr(np, "savez", savez_dies)
    with pytest.raises(Killed):
        run(tmp_path / "second")
    monkeypatch.setattr(np, "savez", real_savez)
    leftovers = [p.name for p in tmp_path.rglob("*") if p.is_file() and not p.name.startswith(("shard-", "manifest"))]
    assert leftovers == []
    assert not list((tmp_path / "second").rglob("shard-*"))
    out, job2 = run(tmp_path)
    same(out, fresh)
    assert job2.calls == [3, 4]


def test_shard_size_is_part_of_the_key(tmp_path):
    # issue 16: 3,000 texts at shard size 200, some shards deleted, rerun at 201 -> 2,992 rows, no error
    n = 3000
    ref = np.concatenate([s["x"] for s in run(None, n=n, size=200)[0]])
    run(tmp_path, n=n, size=200)
    (folder,) = list(tmp_path.iterdir())
    for i in (3, 7):
        shard(folder, i).unlink()
    out, job = run(tmp_path, n=n, size=201)
    x = np.concatenate([s["x"] for s in out])
    assert x.shape == (n,)
    np.testing.assert_array_equal(x, ref)
    assert len(job.calls) == -(-n // 201)  # a new job: nothing of the 200-item shards is read
    assert len(list(tmp_path.iterdir())) == 2
    assert shard_cache_key({"a": 1}, n, 200) != shard_cache_key({"a": 1}, n, 201)
    assert shard_cache_key({"a": 1}, n, 200) != shard_cache_key({"a": 1}, n + 1, 200)
    assert shard_cache_key({"a": 1}, n, 200) != shard_cache_key({"a": 2}, n, 200)


def test_zero_items_and_bad_sizes():
    assert run_sharded(0, 4, Job(), info={}, progress=False) == []
    with pytest.raises(ValueError, match="shard_size"):
        run_sharded(5, 0, Job(), info={}, progress=False)
    with pytest.raises(ValueError, match="n_items"):
        run_sharded(-1, 2, Job(), info={}, progress=False)


def test_parallel_map_gives_the_same_shards(tmp_path, fresh):
    job = Job()
    out = run_sharded(
        N,
        SIZE,
        job,
        info={"job": "test"},
        cache_dir=tmp_path,
        progress=False,
        map_shards=lambda spans: iter([job(a, b) for a, b in spans]),
    )
    same(out, fresh)
    rerun_expect(tmp_path, fresh, [])


# ------------------------------------------------------------------------------------- atomic writer
@pytest.fixture
def umask_002():
    old = os.umask(0o002)
    yield 0o664
    os.umask(old)


def test_files_get_the_umask_mode_not_0600(tmp_path, umask_002):
    write_json_atomic(tmp_path / "a.json", {"x": 1})
    atomic_write(tmp_path / "b.bin", lambda fh: fh.write(b"x"))
    run(tmp_path / "c")
    files = [tmp_path / "a.json", tmp_path / "b.bin", *(tmp_path / "c").rglob("*.*")]
    assert len(files) == 2 + 1 + 5
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {oct(umask_002)}


def test_atomic_path_leaves_the_old_file_on_failure(tmp_path):
    dest = tmp_path / "report.json"
    dest.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(dest) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert dest.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_hashes():
    import hashlib

    assert hash_inputs(["ab", "c"]) != hash_inputs(["a", "bc"])  # boundaries count
    assert cache_key({"a": 1, "b": 2}) == cache_key({"b": 2, "a": 1})
    p = __file__
    assert sha256_file(p) == hashlib.sha256(open(p, "rb").read()).hexdigest()


# -------------------------------------------------------------------------------------- through users
def test_embedding_cache_recomputes_a_copied_shard(tmp_path):
    from replib.embeddings import embed_proteins
    from replib.models import tiny_model

    lm = tiny_model("esm")
    seqs = ["MKTAYIAKQRQISFVKSHFSRQ" * (k % 4 + 1) for k in range(12)]
    ref = embed_proteins(lm, seqs, layers=(-1,), shard_size=3, progress=False)
    embed_proteins(lm, seqs, layers=(-1,), shard_size=3, cache_dir=tmp_path, progress=False)
    (folder,) = list(tmp_path.iterdir())
    shutil.copy(shard(folder, 1), shard(folder, 2))
    with pytest.warns(ShardWarning, match="shard-00002.npz"):
        out = embed_proteins(lm, seqs, layers=(-1,), shard_size=3, cache_dir=tmp_path, progress=False)
    np.testing.assert_array_equal(out.pooled[-1], ref.pooled[-1])
    other = embed_proteins(lm, seqs, layers=(-1,), shard_size=3, cache_dir=tmp_path, progress=False, precision="fp32")
    np.testing.assert_array_equal(other.pooled[-1], ref.pooled[-1])


def test_pair_engine_recomputes_a_corrupted_chunk(tmp_path):
    from replib.methods import protein_isotropy as P

    rng = np.random.default_rng(0)
    seqs = ["".join(rng.choice(list(P.AMINO_ACIDS), size=int(rng.integers(15, 40)))) for _ in range(9)]
    pairs = P.all_pairs(9)
    ref = P.alignment_pair_stats(seqs, pairs, chunk_size=8, progress=False)
    P.alignment_pair_stats(seqs, pairs, out_dir=tmp_path, chunk_size=8, progress=False)
    (folder,) = list(tmp_path.iterdir())
    p = shard(folder, 2)
    p.write_bytes(p.read_bytes()[:-7])
    done = []
    with pytest.warns(ShardWarning, match="shard-00002.npz"):
        out = P.alignment_pair_stats(seqs, pairs, out_dir=tmp_path, chunk_size=8, progress=False, on_chunk=done.append)
    assert done == [2]
    assert out.equals(ref)
    # another chunk size is another job: no chunk of size 8 is read as a chunk of size 9
    done.clear()
    out9 = P.alignment_pair_stats(seqs, pairs, out_dir=tmp_path, chunk_size=9, progress=False, on_chunk=done.append)
    assert out9.equals(ref) and done == list(range(4))


# ------------------------------------------------------------------------------ training checkpoints
def _setup():
    from replib.methods import classifiers as ct

    rng = np.random.default_rng(3)  # random unit vectors, random balanced labels
    E = rng.normal(size=(60, 6))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    y = np.arange(60) % 2
    rng.shuffle(y)
    return ct, ct.ClassifierSetup("synthetic", E, np.arange(60), y, bias=True, info=dict(data="synthetic"))


def test_corrupted_checkpoint_restarts_training_with_a_warning(tmp_path):
    ct, s = _setup()
    kw = dict(seed=0, n_updates=12, eval_every=3, checkpoint_every=4, progress=False)
    ref = ct.train_trajectory(s, **kw)
    ck = tmp_path / "run.pt"
    ct.train_trajectory(s, checkpoint=ck, **kw)
    ck.write_bytes(ck.read_bytes()[: ck.stat().st_size // 2])
    with pytest.warns(ShardWarning, match="run.pt"):
        again = ct.train_trajectory(s, checkpoint=ck, **kw)
    assert again.equals(ref)
    assert ct.train_trajectory(s, checkpoint=ck, **kw).equals(ref)  # the rewritten checkpoint is good


def test_checkpoint_is_never_unpickled(tmp_path):
    torch = pytest.importorskip("torch")
    ct, s = _setup()
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    ck = tmp_path / "run.pt"
    torch.save({"meta": Payload(), "step": 0, "E": None, "clf": {}, "opt": {}, "rng": {}, "rows": []}, ck)
    with pytest.warns(ShardWarning, match="run.pt"):
        out = ct.train_trajectory(s, seed=0, n_updates=4, eval_every=2, checkpoint=ck, progress=False)
    assert not marker.exists()
    assert out.equals(ct.train_trajectory(s, seed=0, n_updates=4, eval_every=2, progress=False))


def test_two_runs_on_one_cache_at_once(tmp_path, fresh):
    import threading
    import time

    outs, errors = [], []

    def slow(a, b):
        time.sleep(0.01)
        return Job()(a, b)

    def go():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ShardWarning)  # neither sees the other's half-written file
                outs.append(run(tmp_path, slow)[0])
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for out in outs:
        same(out, fresh)
    rerun_expect(tmp_path, fresh, [])


def test_memo_computes_once_per_description_and_recomputes_a_torn_file(tmp_path):
    calls = []

    def square(x, *, plus=0):
        calls.append(x)
        return {"y": x * x + plus}

    assert memo(tmp_path, {"x": 3}, square, 3, plus=1) == {"y": 10}
    assert memo(tmp_path, {"x": 3}, square, 3, plus=1) == {"y": 10} and calls == [3]  # read back
    assert memo(tmp_path, {"x": 4}, square, 4) == {"y": 16} and calls == [3, 4]  # another description
    (tmp_path / f"{cache_key({'x': 3})}.pkl").write_bytes(b"\x80torn")
    assert memo(tmp_path, {"x": 3}, square, 3, plus=1) == {"y": 10} and calls == [3, 4, 3]
    assert memo(tmp_path, {"x": 3}, square, 3, plus=1) == {"y": 10} and calls == [3, 4, 3]  # replaced
    assert memo(None, {"x": 3}, square, 3) == {"y": 9} and calls == [3, 4, 3, 3]  # no folder: no cache
