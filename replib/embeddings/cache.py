"""Resumable on-disk shard cache for embedding extraction.

Layout under ``cache_dir/<key>/``: ``manifest.json`` (the key's inputs: model identity, recipe,
parameters, input hash, number of shards) and one ``shard-<i>.npz`` per finished shard. Every file is
written to a temporary name in the same folder and ``os.replace``'d, so a killed run leaves only
finished shards; a rerun with the same key recomputes only the missing ones and yields identical
output.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from .._io import progress_off

#: Test hook: called as ``_SHARD_HOOK(i)`` after shard ``i`` is written (used to simulate a kill).
_SHARD_HOOK: Callable[[int], None] | None = None


def hash_inputs(items) -> str:
    """sha256 over a sequence of strings (length-prefixed, so boundaries count)."""
    h = hashlib.sha256()
    for s in items:
        b = str(s).encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def cache_key(info: dict) -> str:
    """Stable short key (24 hex digits) of a JSON-serialisable description."""
    blob = json.dumps(info, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def _atomic_write(path: Path, write: Callable) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def run_sharded(n_items: int, shard_size: int, compute: Callable[[int, int], dict], *, info: dict,
                cache_dir=None, desc: str = "shards", progress: bool = True) -> list[dict]:
    """Compute ``compute(start, stop) -> dict of arrays`` per shard, cached and resumable.

    Parameters
    ----------
    n_items : int
        Number of input items; shard ``i`` covers items ``[i*shard_size, (i+1)*shard_size)``.
    shard_size : int
    compute : callable
        Returns a dict of numpy arrays for one shard.
    info : dict
        Everything that determines the output (model identity, recipe, parameters, input hash).
    cache_dir : path-like or None
        No caching when None.

    Returns
    -------
    list of dict
        One dict of arrays per shard, in order.
    """
    from tqdm.auto import tqdm

    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    n_shards = max(1, -(-n_items // shard_size)) if n_items else 0
    folder = None
    if cache_dir is not None:
        key = cache_key(info)
        folder = Path(cache_dir) / key
        folder.mkdir(parents=True, exist_ok=True)
        manifest = {"key": key, "info": info, "n_items": n_items, "shard_size": shard_size,
                    "n_shards": n_shards}
        mpath = folder / "manifest.json"
        if mpath.exists():
            old = json.loads(mpath.read_text())
            if old.get("key") != key or old.get("n_shards") != n_shards:
                raise ValueError(f"cache manifest {mpath} does not match this extraction")
        else:
            _atomic_write(mpath, lambda f: f.write(json.dumps(manifest, indent=1, default=str).encode()))
    out = []
    for i in tqdm(range(n_shards), desc=desc, disable=progress_off(progress), leave=False):
        path = folder / f"shard-{i:05d}.npz" if folder is not None else None
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as z:
                out.append({k: z[k] for k in z.files})
            continue
        res = compute(i * shard_size, min(n_items, (i + 1) * shard_size))
        if path is not None:
            _atomic_write(path, lambda f: np.savez(f, **res))
            if _SHARD_HOOK is not None:
                _SHARD_HOOK(i)
        out.append(res)
    return out
