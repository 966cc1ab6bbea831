"""Every layer of a model measured at paper scale without holding its embeddings.

:func:`stream_layers` embeds the items shard by shard, folds each shard's rows into one
:class:`~replib.metrics.LayerAccumulator` per layer and drops them; only the rows a chapter needs later are kept
(a documented sample for LID and k-means, the proteins of the pair analysis). Memory is O(d²) per layer plus the
kept rows (ESM-2 650M's 34 hidden states over Swiss-Prot: 34 accumulators of 13 MB instead of 85 GB of vectors).
The state is written atomically every ``checkpoint_seconds`` and at the end: a killed run resumes from its last
checkpoint, bit for bit the uninterrupted result (tested), and a finished stream is read back without embedding.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._io import atomic_write, cache_key, hash_inputs, progress_off, shard_span
from ..metrics import LayerAccumulator

__all__ = ["StreamedLayers", "merge_streams", "sample_rows", "stream_layers", "stream_windows"]

STATE_FORMAT = 1


@dataclass
class StreamedLayers:
    """The result of :func:`stream_layers`.

    Attributes
    ----------
    stats : dict
        layer -> :class:`~replib.metrics.LayerAccumulator` of every row.
    kept : dict
        layer -> (len(keep), d) float32: the rows whose global index is in ``keep``, in index order (layers of
        ``keep_layers`` only).
    keep : ndarray of int
        The kept rows' global indices (sorted; with a shard range, those of the range are the ones in ``kept``).
    n_rows : int
        Rows seen per layer.
    """

    stats: dict
    kept: dict
    keep: np.ndarray
    n_rows: int

    def table(self, model: str = "") -> pd.DataFrame:
        """One row per layer: model, layer, n_tokens, n_features, isoscore, effective_dims, avg_cosine,
        mean_norm (the columns of :func:`replib.methods.layerwise.layer_isotropy`, and the mean norm)."""
        layers = sorted(self.stats, key=lambda k: (isinstance(k, str), k))
        rows = [{"model": model, "layer": layer, **self.stats[layer].summary()} for layer in layers]
        return pd.DataFrame(rows).rename(columns={"n_samples": "n_tokens", "eff_dims": "effective_dims"})


def sample_rows(n_rows: int, n_sample: int | None, seed: int) -> np.ndarray:
    """A documented sample of row indices: ``n_sample`` of ``range(n_rows)`` drawn without replacement with
    ``numpy.random.default_rng(seed)``, sorted (all rows when ``n_sample`` is None or at least ``n_rows``)."""
    if n_sample is None or n_sample >= n_rows:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=int(n_sample), replace=False))


class _Kept:
    """The kept rows of one layer: in memory, or spooled to an append-only float32 file (``spool``: the rows of
    a large sample never all in memory; read back memory-mapped). Its ``state`` is what a checkpoint saves."""

    def __init__(self, spool: Path | None = None):
        self.parts: list = []
        self.spool, self.count, self.dim = spool, 0, 0
        if spool is not None:
            spool.parent.mkdir(parents=True, exist_ok=True)

    def append(self, X: np.ndarray) -> None:
        X = np.ascontiguousarray(X, dtype=np.float32)
        self.dim = X.shape[1]
        self.count += len(X)
        if self.spool is None:
            self.parts.append(X)
            return
        with open(self.spool, "ab") as fh:
            fh.write(X.tobytes())

    def state(self) -> np.ndarray:
        """In memory: the rows; spooled: ``[count, dim]`` (the file is flushed to disk first)."""
        if self.spool is None:
            return self.rows()
        if self.spool.exists():
            with open(self.spool, "rb+") as fh:
                os.fsync(fh.fileno())
        return np.array([self.count, self.dim], np.int64)

    def restore(self, saved: np.ndarray) -> None:
        """Back to a checkpoint's state (a spool file is cut to the rows the checkpoint had)."""
        if self.spool is None:
            self.parts = [saved] if saved.size else []
            self.count, self.dim = len(saved), (saved.shape[1] if saved.size else 0)
            return
        self.count, self.dim = (int(v) for v in saved)
        with open(self.spool, "ab") as fh:
            fh.truncate(self.count * self.dim * 4)

    def rows(self) -> np.ndarray:
        if self.spool is None:
            return np.concatenate(self.parts) if self.parts else np.zeros((0, 0), np.float32)
        if self.count == 0:
            return np.zeros((0, self.dim), np.float32)
        return np.memmap(self.spool, dtype=np.float32, mode="r", shape=(self.count, self.dim))


def _save_state(path: Path, stats: dict, kept: dict, shard: int, n_rows: int, done: bool, meta: dict) -> None:
    arrays = {"__meta__": np.array(json.dumps(dict(meta, shard=shard, n_rows=n_rows, done=done)))}
    for layer, acc in stats.items():
        arrays.update({f"L{layer}:{k}": v for k, v in acc.state_dict().items()})
    for layer, rows in kept.items():
        arrays[f"kept:L{layer}"] = rows.state()
    atomic_write(path, lambda fh: np.savez(fh, **arrays))


def _load_state(path: Path, layers, kept: dict, meta: dict):
    """The saved (stats, shard, n_rows, done) with ``kept`` restored, or None when absent or another job's."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            saved = json.loads(str(z["__meta__"][()]))
            if {k: saved.get(k) for k in meta} != meta:
                return None
            stats = {}
            for layer in layers:
                prefix = f"L{layer}:"
                state = {k[len(prefix) :]: z[k] for k in z.files if k.startswith(prefix)}
                if state:
                    stats[layer] = LayerAccumulator.from_state_dict(state)
            for layer, rows in kept.items():
                rows.restore(z[f"kept:L{layer}"])
    except (OSError, ValueError, KeyError):
        return None
    return stats, int(saved["shard"]), int(saved["n_rows"]), bool(saved["done"])


def stream_layers(
    n_items: int,
    shard_size: int,
    compute: Callable[[int, int], dict],
    *,
    layers,
    info: dict,
    keep=None,
    keep_layers=None,
    shards: tuple[int, int] | None = None,
    rows_per_item: int = 1,
    state_dir=None,
    spool: bool = False,
    checkpoint_seconds: float = 300.0,
    desc: str = "stream",
    progress: bool = True,
    on_shard: Callable[[int], None] | None = None,
) -> StreamedLayers:
    """Fold every layer's rows of ``n_items`` items into accumulators, shard by shard.

    Parameters
    ----------
    n_items : int
        Items (sequences, sentences, windows); shard ``i`` covers items ``[i * shard_size, (i + 1) * shard_size)``.
    compute : callable
        ``compute(start, stop)`` -> dict layer -> (rows, d) array of those items' rows (one row per protein,
        one per token of a window...); rows are numbered globally in the order they come.
    layers : iterable
        The layers ``compute`` returns (ints, or names such as ``"global"``).
    info : dict
        Everything that determines ``compute``'s output (model identity, inputs' hash, settings): with the
        shard size, the keep set and the layers it keys the saved state, so another job never reuses it.
    keep : array_like of int, optional
        Global row indices to keep (e.g. :func:`sample_rows`, or ``range(n)`` for the first n proteins).
    keep_layers : iterable, optional
        Layers whose kept rows are stored (default: every layer).
    shards : (k, n), optional
        Only the k-th of n equal ranges of the shards (:func:`replib._io.shard_span`: one part of a chapter);
        its state is its own, and :func:`merge_streams` of the n ranges is the whole stream.
    rows_per_item : int
        Rows ``compute`` returns per item (1 per protein, the window length per window): where a shard
        range starts in the global row numbering of ``keep``.
    state_dir : path-like, optional
        Folder of the checkpoint (``<state_dir>/<key>.npz``); None: no checkpoint.
    spool : bool
        Write the kept rows to ``<state_dir>/<key>.kept/`` as they come (append-only files, cut back to the
        last checkpoint on resume) and return them memory-mapped: a large sample of every layer is never in
        memory at once. Needs ``state_dir``.
    checkpoint_seconds : float
        Write the state at most this often (and always after the last shard).
    on_shard : callable, optional
        Called with the shard index after it is folded in (tests simulate a kill with it).

    Returns
    -------
    StreamedLayers
    """
    if shard_size < 1 or n_items < 0:
        raise ValueError("shard_size must be >= 1 and n_items >= 0")
    layers = list(layers)
    keep = np.unique(np.asarray([] if keep is None else keep, dtype=np.int64))
    keep_layers = list(layers if keep_layers is None else keep_layers)
    meta = {
        "format": STATE_FORMAT,
        "key": cache_key(
            {
                "info": info,
                "n": int(n_items),
                "shard": int(shard_size),
                "layers": [str(x) for x in layers],
                "keep": cache_key({"k": keep.tolist()}),
                "keep_layers": [str(x) for x in keep_layers],
                "shards": list(shards) if shards else None,
            }
        ),
    }
    path = None if state_dir is None else Path(state_dir) / f"{meta['key']}.npz"
    if spool and path is None:
        raise ValueError("spool=True keeps the rows in state_dir: give one")
    kept = {layer: _Kept(path.with_suffix(".kept") / f"L{layer}.f32" if spool else None) for layer in keep_layers}
    state = None if path is None else _load_state(path, layers, kept, meta)
    span = shard_span(shards, -(-n_items // shard_size))
    if state is None:
        for rows in kept.values():
            rows.restore(np.zeros((0, 0), np.float32) if rows.spool is None else np.zeros(2, np.int64))
        state = ({}, span.start, span.start * shard_size * rows_per_item, False)  # first shard, its first row
    stats, first, next_row, done = state
    if not done and len(span):
        last_save = time.monotonic()
        start = min(n_items, first * shard_size)
        bar = tqdm(total=n_items, initial=start, desc=desc, disable=progress_off(progress), leave=False)
        for i in range(first, span.stop):
            a, b = i * shard_size, min(n_items, (i + 1) * shard_size)
            out = compute(a, b)
            missing = [layer for layer in layers if layer not in out]
            if missing:
                raise ValueError(f"compute({a}, {b}) returned no rows for layers {missing}")
            n_new = len(out[layers[0]])
            lo, hi = np.searchsorted(keep, [next_row, next_row + n_new])
            for layer in layers:
                X = np.asarray(out[layer])
                if len(X) != n_new:
                    raise ValueError(f"layer {layer} has {len(X)} rows, layer {layers[0]} {n_new}")
                stats.setdefault(layer, LayerAccumulator(X.shape[1])).update(X)
                if layer in kept and hi > lo:
                    kept[layer].append(X[keep[lo:hi] - next_row])
            next_row += n_new
            del out
            last = i == span.stop - 1
            if path is not None and (last or time.monotonic() - last_save >= checkpoint_seconds):
                _save_state(path, stats, kept, i + 1, next_row, last, meta)
                last_save = time.monotonic()
            bar.update(b - a)
            if on_shard is not None:
                on_shard(i)
        bar.close()
    n_rows = next(iter(stats.values())).count if stats else 0
    return StreamedLayers(stats, {layer: rows.rows() for layer, rows in kept.items()}, keep, n_rows)


def merge_streams(streams) -> StreamedLayers:
    """The whole stream from the streams of its shard ranges, in order (:func:`stream_layers` with ``shards=(k,
    n)`` for k = 0..n-1): accumulators merged, kept rows concatenated. Equal to one uninterrupted stream to
    rounding (the accumulators' merge re-centres exactly; the sums are added in another order)."""
    streams = list(streams)
    if not streams:
        raise ValueError("no streams to merge")
    stats: dict = {}
    for st in streams:
        for layer, acc in st.stats.items():
            stats.setdefault(layer, LayerAccumulator(acc.n_features)).merge(acc)
    kept = {}
    for layer in streams[0].kept:
        parts = [st.kept[layer] for st in streams if st.kept[layer].size]
        kept[layer] = np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)
    keep = np.unique(np.concatenate([st.keep for st in streams]))
    return StreamedLayers(stats, kept, keep, sum(st.n_rows for st in streams))


def stream_windows(lm, windows: np.ndarray, keep=None, state_dir=None, spool: bool = False) -> StreamedLayers:
    """Every code layer of ``lm`` over the token ``windows`` (:func:`replib.embeddings.token_windows`, an
    ``(n_windows, window)`` array) folded into accumulators, 16 windows a shard (:func:`stream_layers` of
    :func:`replib.embeddings.window_hidden_states`, keyed by the model's identity and the token ids), keeping the
    rows ``keep`` (token indices in stream order) of every layer."""
    from ..embeddings import model_identity, window_hidden_states  # torch: only where a model streams

    layers, window = list(range(lm.spec.n_layers)), int(windows.shape[1])
    info = dict(
        model_identity(lm), fn="window_hidden_states", window=window, inputs=hash_inputs(map(str, windows.ravel()))
    )
    return stream_layers(
        len(windows), 16, lambda a, b: window_hidden_states(lm, windows[a:b], layers), layers=layers, info=info,
        keep=keep, rows_per_item=window, state_dir=state_dir, spool=spool, desc=f"stream {lm.name}",
    )  # fmt: skip
