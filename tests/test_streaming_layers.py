"""stream_layers: every layer measured shard by shard equals the in-memory metrics, keeps exactly the rows asked for,
and a killed stream resumes to the same result bit for bit (issue 26, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from replib.methods.streaming import sample_rows, stream_layers
from replib.metrics import avg_pairwise_cosine, effective_dimensions, isoscore

N_ITEMS, ROWS_PER_ITEM, D = 60, 7, 16


def _data(seed=0):
    """Two 'layers' of rows, ROWS_PER_ITEM rows per item (a window of tokens), float32 as embeddings are."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(N_ITEMS * ROWS_PER_ITEM, D)) * np.geomspace(3.0, 0.1, D)
    return {0: (base + 5.0).astype(np.float32), "last": (base @ rng.normal(size=(D, D))).astype(np.float32)}


def _compute(data, calls=None):
    def compute(a, b):
        if calls is not None:
            calls.append((a, b))
        return {k: v[a * ROWS_PER_ITEM : b * ROWS_PER_ITEM] for k, v in data.items()}

    return compute


def test_stream_equals_in_memory_and_keeps_the_sample():
    data = _data()
    keep = sample_rows(N_ITEMS * ROWS_PER_ITEM, 50, seed=3)
    out = stream_layers(N_ITEMS, 8, _compute(data), layers=[0, "last"], info={"t": 1}, keep=keep, progress=False)
    assert out.n_rows == N_ITEMS * ROWS_PER_ITEM
    table = out.table("m").set_index("layer")
    for layer, X in data.items():
        X64 = X.astype(np.float64)
        assert table.loc[layer, "isoscore"] == pytest.approx(isoscore(X64), rel=1e-9)
        assert table.loc[layer, "effective_dims"] == pytest.approx(effective_dimensions(X64), rel=1e-9)
        assert table.loc[layer, "avg_cosine"] == pytest.approx(avg_pairwise_cosine(X64), rel=1e-9)
        np.testing.assert_array_equal(out.kept[layer], X[keep])


def test_sample_rows_is_documented_and_seeded():
    a, b = sample_rows(1000, 100, 0), sample_rows(1000, 100, 0)
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a)) == 100 and np.all(np.diff(a) > 0)
    np.testing.assert_array_equal(sample_rows(10, None, 0), np.arange(10))
    np.testing.assert_array_equal(sample_rows(10, 50, 0), np.arange(10))


class Killed(Exception):
    pass


def test_killed_stream_resumes_to_the_same_result(tmp_path):
    data = _data(seed=1)
    keep = np.arange(0, N_ITEMS * ROWS_PER_ITEM, 9)
    kw = dict(layers=[0, "last"], info={"t": 2}, keep=keep, keep_layers=["last"], progress=False)
    whole = stream_layers(N_ITEMS, 7, _compute(data), **kw)

    def kill(i):
        if i == 4:
            raise Killed

    with pytest.raises(Killed):
        stream_layers(N_ITEMS, 7, _compute(data), state_dir=tmp_path, checkpoint_seconds=0, on_shard=kill, **kw)
    calls = []
    resumed = stream_layers(N_ITEMS, 7, _compute(data, calls), state_dir=tmp_path, **kw)
    assert calls[0] == (35, 42)  # shards 0-4 came from the checkpoint
    assert resumed.table().equals(whole.table())  # bit for bit
    np.testing.assert_array_equal(resumed.kept["last"], whole.kept["last"])
    assert set(resumed.kept) == {"last"}
    # a finished stream is read back without computing anything
    again = stream_layers(N_ITEMS, 7, _compute(data, calls := []), state_dir=tmp_path, **kw)
    assert calls == [] and again.table().equals(whole.table())
    # another job (other inputs) never reuses that state
    stream_layers(N_ITEMS, 7, _compute(data, calls), state_dir=tmp_path, **dict(kw, info={"t": 3}))
    assert calls[0] == (0, 7)


def test_compute_must_return_every_layer_with_the_same_rows():
    data = _data()
    with pytest.raises(ValueError, match="no rows for layers"):
        stream_layers(N_ITEMS, 8, lambda a, b: {0: data[0][:8]}, layers=[0, 1], info={}, progress=False)
    with pytest.raises(ValueError, match="rows"):
        stream_layers(N_ITEMS, 8, lambda a, b: {0: data[0][:8], 1: data[0][:9]}, layers=[0, 1], info={}, progress=False)


def test_shard_ranges_merge_to_the_whole_stream(tmp_path):
    from replib.methods.streaming import merge_streams

    data = _data(seed=5)
    keep = sample_rows(N_ITEMS * ROWS_PER_ITEM, 40, seed=1)
    kw = dict(layers=[0, "last"], info={"t": 5}, keep=keep, rows_per_item=ROWS_PER_ITEM, progress=False)
    whole = stream_layers(N_ITEMS, 8, _compute(data), **kw)
    ranges = [stream_layers(N_ITEMS, 8, _compute(data), shards=(k, 3), state_dir=tmp_path, **kw) for k in range(3)]
    assert sum(r.n_rows for r in ranges) == whole.n_rows
    merged = merge_streams(ranges)
    a, b = merged.table().set_index("layer"), whole.table().set_index("layer")
    for col in ("isoscore", "effective_dims", "avg_cosine", "mean_norm"):
        np.testing.assert_allclose(a[col], b[col], rtol=1e-12)
    for layer in (0, "last"):
        np.testing.assert_array_equal(merged.kept[layer], whole.kept[layer])
    # each range's state is its own: reading them back computes nothing
    calls = []
    again = [
        stream_layers(N_ITEMS, 8, _compute(data, calls), shards=(k, 3), state_dir=tmp_path, **kw) for k in range(3)
    ]
    assert calls == [] and merge_streams(again).table().equals(merged.table())


def test_spooled_sample_is_on_disk_and_resumes(tmp_path):
    data = _data(seed=7)
    keep = sample_rows(N_ITEMS * ROWS_PER_ITEM, 100, seed=2)
    kw = dict(layers=[0, "last"], info={"t": 7}, keep=keep, rows_per_item=ROWS_PER_ITEM, progress=False)
    whole = stream_layers(N_ITEMS, 6, _compute(data), **kw)

    def kill(i):
        if i == 5:
            raise Killed

    for every in (0, 10**6):  # a checkpoint after every shard; none before the kill (rows spooled past it)
        folder = tmp_path / str(every)
        with pytest.raises(Killed):
            stream_layers(
                N_ITEMS, 6, _compute(data), state_dir=folder, spool=True, checkpoint_seconds=every, on_shard=kill, **kw
            )
        # rows the killed run spooled after its last checkpoint are cut off on resume
        resumed = stream_layers(N_ITEMS, 6, _compute(data), state_dir=folder, spool=True, **kw)
        for layer in (0, "last"):
            assert isinstance(resumed.kept[layer], np.memmap)
            np.testing.assert_array_equal(resumed.kept[layer], whole.kept[layer])
        assert resumed.table().equals(whole.table())
    with pytest.raises(ValueError, match="state_dir"):
        stream_layers(N_ITEMS, 6, _compute(data), spool=True, **kw)
