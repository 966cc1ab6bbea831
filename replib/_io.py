"""Persistence: the one atomic writer (:func:`atomic_path`: a file appears complete or not at all, with the mode
an ordinary ``open`` would give it), the one file hasher, the hashes of inputs, arrays and descriptions, the cache
folder and its locks (:func:`cache_lock`), the one sharded, resumable, verified cache (:func:`run_sharded`) and
:func:`memo` (one result computed once per description)."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import pickle
import re
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import filelock
import numpy as np
from tqdm.auto import tqdm

__all__ = [
    "atomic_path",
    "atomic_write",
    "commit_file",
    "cache_lock",
    "CacheLockTimeout",
    "LOCK_TIMEOUT",
    "write_json_atomic",
    "read_csv",
    "write_csv_atomic",
    "hash_file",
    "sha256_file",
    "hash_inputs",
    "hash_array",
    "cache_key",
    "cache_root",
    "memo",
    "CACHE_ENV",
    "run_sharded",
    "shard_cache_key",
    "shard_span",
    "ShardWarning",
    "confined",
    "UnsafePathError",
    "remove_stale_temporaries",
]

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the system allows (Linux ``/proc``)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


# ========================================================================================= confined paths
class UnsafePathError(ValueError):
    """A path built from remote or user input would leave the folder it belongs in."""


def confined(root, *parts: str, what: str = "path") -> Path:
    """``root / parts...``, refused unless it stays strictly inside ``root`` after normalisation.

    Every part is a relative name from outside (a listing's file name, a revision, a model id, a part or
    chapter name): an absolute part, a ``..`` that climbs out, an empty or NUL-bearing name, or a symlink
    already in the tree that points outside, raise :class:`UnsafePathError` naming ``what`` and the value.
    The last component itself may be a symlink (a snapshot's link to its blob): it is replaced, never followed.
    """
    base = Path(os.path.abspath(root))
    for part in parts:
        text = str(part)
        if not text or "\0" in text or "\\" in text or os.path.isabs(text):
            raise UnsafePathError(f"{what} {text!r} is not a relative name inside {base}; refused")
    dest = Path(os.path.normpath(base.joinpath(*map(str, parts))))
    real_base = Path(os.path.realpath(base))
    real_dest = Path(os.path.realpath(dest.parent)) / dest.name
    for candidate, anchor in ((dest, base), (real_dest, real_base)):
        if candidate == anchor or anchor not in candidate.parents:
            raise UnsafePathError(f"{what} {'/'.join(map(str, parts))!r} leaves {base}; refused")
    return dest


# ========================================================================================= atomic writes
def commit_file(tmp, dest) -> Path:
    """Move a finished temporary file onto ``dest`` atomically: ``fsync`` it, give it mode
    ``0o666 & ~umask`` (as ``open`` would) and ``os.replace`` it. ``tmp`` must be in ``dest``'s folder."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    os.replace(tmp, dest)
    return Path(dest)


@contextlib.contextmanager
def atomic_path(dest, suffix: str = ".part") -> Iterator[Path]:
    """Yield a temporary path beside ``dest``; on success it replaces ``dest`` atomically (``os.replace``),
    on any exception it is removed and ``dest`` is left untouched.

    The finished file is flushed to disk (``fsync``) before the rename and gets mode ``0o666 & ~umask``,
    as a file created with ``open`` would (:func:`commit_file`).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix="." + dest.name + ".", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        commit_file(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: the name :func:`atomic_path` gives its temporary files (``mkstemp``: ``.<name>.<8 characters><suffix>``)
_TEMPORARY = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.(tmp|part)$")


def remove_stale_temporaries(folder) -> list[Path]:
    """Remove the temporary files that :func:`atomic_path` writers killed mid-write left in ``folder`` (and its
    subfolders); returns them. Call it only while holding the folder's lock (:func:`cache_lock`), when no
    writer of it is alive: a live writer's temporary would be removed too."""
    gone = []
    for p in Path(folder).rglob(".*"):
        if p.is_file() and _TEMPORARY.match(p.name):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                gone.append(p)
    return gone


def atomic_write(dest, write: Callable, *, mode: str = "wb") -> Path:
    """Call ``write(file_object)`` on a temporary file and move it to ``dest`` atomically (:func:`atomic_path`)."""
    with atomic_path(dest, suffix=".tmp") as tmp:
        with open(tmp, mode) as fh:
            write(fh)
    return Path(dest)


def write_json_atomic(path, obj, *, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=indent, default=str))


def read_csv(path, columns: Iterable[str] | None = None) -> list[dict]:
    """The rows of a CSV file as dicts (none when the file does not exist); with ``columns``, a file whose
    header is not exactly those columns is an error."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if columns is not None and tuple(reader.fieldnames or ()) != tuple(columns):
            raise ValueError(f"{path}: columns {reader.fieldnames}, expected {list(columns)}")
        return list(reader)


def write_csv_atomic(path, rows: Iterable[dict], columns: Iterable[str]) -> None:
    """Write ``rows`` (dicts whose keys are among ``columns``) as CSV under the header ``columns``, atomically."""
    with atomic_path(path, suffix=".tmp") as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# ================================================================================================ hashes
def hash_file(path, algorithm: str = "sha256", chunk: int = 1 << 20) -> str:
    """Hex digest of a file under a :mod:`hashlib` algorithm (``"sha256"``, ``"md5"``, ...), read in blocks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


#: hex sha256 of a file
sha256_file = hash_file


def hash_inputs(items: Iterable) -> str:
    """sha256 over a sequence of strings (length-prefixed, so boundaries count)."""
    h = hashlib.sha256()
    for s in items:
        b = str(s).encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def hash_array(a) -> str:
    """sha256 over an array's dtype, shape and bytes (C order)."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def cache_key(info: dict) -> str:
    """Stable short key (24 hex digits) of a JSON-serialisable description."""
    blob = json.dumps(info, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


CACHE_ENV = "REPLIB_CACHE_DIR"


def cache_root(sub: str | None = None) -> Path:
    """The cache folder of replib: ``$REPLIB_CACHE_DIR`` (default ``~/.cache/replib``), or a subfolder of it
    (``data``, ``embeddings``, ``proteinbert``, ``tiny``, ``runs``). On Colab, point it at Google Drive to
    survive a disconnected runtime."""
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "replib").expanduser()
    return root / sub if sub else root


def memo(folder, info: dict, compute: Callable, *args, **kwargs):
    """``compute(*args, **kwargs)``, kept in ``folder`` under the key of ``info`` and read back instead of recomputed.

    ``info`` must describe everything the result depends on (the inputs' hashes, every parameter, the seed):
    a result is never looked up by anything else. It is pickled atomically (:func:`atomic_write`), so a killed
    run leaves no torn file; an unreadable file is recomputed and replaced. ``folder=None`` computes without
    a cache.
    """
    if folder is None:
        return compute(*args, **kwargs)
    path = Path(folder) / f"{cache_key(info)}.pkl"
    if path.exists():
        try:
            return pickle.loads(path.read_bytes())
        except Exception:  # torn, truncated or foreign: recomputed and replaced, never fatal (as run_sharded)
            pass
    out = compute(*args, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda fh: pickle.dump(out, fh, protocol=pickle.HIGHEST_PROTOCOL))
    return out


# ================================================================================================= locks
#: seconds a run waits for another run's lock on the same cache entry (a download, a training run)
LOCK_TIMEOUT = 3600.0


class CacheLockTimeout(TimeoutError):
    """Another process held a cache entry's lock for longer than the timeout."""


@contextlib.contextmanager
def cache_lock(path, *, timeout: float = LOCK_TIMEOUT, what: str | None = None) -> Iterator[Path]:
    """Hold the inter-process lock of the cache entry ``path`` (the hidden ``.<name>.lock`` beside it, by
    ``filelock``).

    Two runs that start together on one cache take turns: the second waits until the first has finished
    the entry (then finds it done) or until ``timeout`` seconds have passed. The lock is an OS file lock,
    released when its process ends (even by ``kill -9``); the empty lock file stays (removing it would
    let a third run lock a new file while the second still waits on the old one). Within
    one process a second ``cache_lock`` on the same path from the same thread re-enters.

    Raises
    ------
    CacheLockTimeout
        With the entry, the lock file and what to do.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_file = path.with_name("." + path.name + ".lock")
    lock = filelock.FileLock(lock_file, is_singleton=True)
    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout:
        raise CacheLockTimeout(
            f"{what or path} is in use by another run: its lock {lock_file} was held for more than {timeout:g} s. "
            "Wait for that run to finish (or stop it) and start again; a lock never outlives its process."
        ) from None
    try:
        yield path
    finally:
        lock.release()


# ========================================================================================== shard cache
class ShardWarning(UserWarning):
    """A cached file failed verification (unreadable, truncated, from another shard or job, altered) and is
    recomputed."""


#: Version of the shard layout; part of every key, so a layout change never reads old shards.
SHARD_FORMAT = 2
_META = "__shard__"


def shard_cache_key(info: dict, n_items: int, shard_size: int) -> str:
    """Key of a sharded job: ``info`` (everything that determines the output) plus the item count, the shard
    size and the layout version."""
    return cache_key({"info": info, "n_items": int(n_items), "shard_size": int(shard_size), "format": SHARD_FORMAT})


def _array_digest(arrays: dict) -> dict:
    return {
        k: {"dtype": np.asarray(v).dtype.str, "shape": list(np.shape(v)), "sha256": hash_array(v)}
        for k, v in sorted(arrays.items())
    }


def _shard_meta(key: str, i: int, span: tuple) -> dict:
    """What identifies shard ``i`` of the job ``key`` (its record holds its arrays' digests too)."""
    return {"format": SHARD_FORMAT, "key": key, "index": i, "start": span[0], "stop": span[1]}


def _write_shard(path: Path, meta: dict, arrays: dict) -> None:
    if _META in arrays:
        raise ValueError(f"a shard array may not be called {_META!r}")
    meta = dict(meta, arrays=_array_digest(arrays))
    atomic_write(path, lambda fh: np.savez(fh, **{_META: np.array(json.dumps(meta))}, **arrays))


def _read_shard(path: Path, key: str, i: int, span: tuple) -> dict | None:
    """The arrays of a verified shard, or None (missing, or bad: then a :class:`ShardWarning` names the file)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z[_META][()]))
            arrays = {k: z[k] for k in z.files if k != _META}
        want = _shard_meta(key, i, span)
        got = {k: meta.get(k) for k in want}
        if got != want:
            problem = f"belongs elsewhere ({got} != {want})"
        elif meta.get("arrays") != _array_digest(arrays):
            problem = "does not match its recorded shapes and checksums"
        else:
            return arrays
    except Exception as e:  # any unreadable cache file is recomputed, never fatal
        problem = f"is unreadable ({type(e).__name__}: {e})"
    warnings.warn(f"cache shard {path} {problem}; recomputing it", ShardWarning, stacklevel=3)
    return None


def _open_folder(cache_dir, key: str, manifest: dict) -> Path:
    folder = Path(cache_dir) / key
    folder.mkdir(parents=True, exist_ok=True)
    mpath = folder / "manifest.json"
    try:
        ok = json.loads(mpath.read_text()) == json.loads(json.dumps(manifest, default=str))
    except (OSError, ValueError):
        ok = False
    if not ok:
        if mpath.exists():
            warnings.warn(
                f"cache manifest {mpath} does not describe this job; rewriting it", ShardWarning, stacklevel=3
            )
        write_json_atomic(mpath, manifest, indent=1)
    return folder


def run_sharded(
    n_items: int,
    shard_size: int,
    compute: Callable[[int, int], dict],
    *,
    info: dict,
    cache_dir=None,
    desc: str = "shards",
    progress: bool = True,
    unit: str = "item",
    map_shards: Callable[[list], Iterable[dict]] | None = None,
    on_shard_written: Callable[[int], None] | None = None,
    shards: tuple[int, int] | None = None,
) -> list[dict]:
    """Compute ``compute(start, stop) -> dict of arrays`` per shard, cached, verified and resumable.

    Shard ``i`` covers items ``[i*shard_size, min(n_items, (i+1)*shard_size))``. With ``cache_dir`` each
    shard is written atomically to ``cache_dir/<key>/shard-<i>.npz`` together with its own record (key,
    index, item range, each array's dtype, shape and sha256); the key (:func:`shard_cache_key`) covers
    ``info``, ``n_items``, ``shard_size`` and the layout version, and ``manifest.json`` describes it. A rerun
    reads the shards that verify, recomputes the missing and the bad ones (a :class:`ShardWarning` names
    each bad file), and returns the same arrays.

    Parameters
    ----------
    n_items : int
    shard_size : int
    compute : callable
        ``compute(start, stop)`` returns a dict of numpy arrays for one shard.
    info : dict
        Everything else that determines the output (model identity, recipe, parameters, input hash).
    cache_dir : path-like or None
        No caching when None.
    desc, progress, unit
        ``tqdm.auto`` progress bar over items.
    map_shards : callable, optional
        ``map_shards([(start, stop), ...])`` yields the shards' dicts in that order (e.g. through
        ``joblib.Parallel(return_as="generator")``); default: ``compute`` on each span in turn.
    on_shard_written : callable, optional
        Called with the shard index after a shard file is stored (tests simulate a kill with it).
    shards : (k, n), optional
        Only the k-th of n equal ranges of the shards (:func:`shard_span`): one part of a job run in parts
        (:mod:`replib.parts`), each part's shards cached for the run that assembles them all.

    Returns
    -------
    list of dict
        One dict of arrays per shard (of the range, with ``shards``), in order.
    """
    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    if n_items < 0:
        raise ValueError("n_items must be >= 0")
    n_shards = -(-n_items // shard_size)
    spans = [(i * shard_size, min(n_items, (i + 1) * shard_size)) for i in range(n_shards)]
    chosen = shard_span(shards, n_shards)
    out: list = [None] * n_shards
    folder, key = None, None
    if cache_dir is not None:
        key = shard_cache_key(info, n_items, shard_size)
        manifest = {"key": key, "format": SHARD_FORMAT, "info": info, "n_items": n_items, "shard_size": shard_size}
        folder = _open_folder(cache_dir, key, dict(manifest, n_shards=n_shards))
        for i in chosen:
            out[i] = _read_shard(folder / f"shard-{i:05d}.npz", key, i, spans[i])
    todo = [i for i in chosen if out[i] is None]
    total = sum(spans[i][1] - spans[i][0] for i in chosen)
    bar = tqdm(
        total=total,
        initial=total - sum(spans[i][1] - spans[i][0] for i in todo),
        desc=desc,
        unit=unit,
        disable=progress_off(progress),
        leave=False,
    )
    results = map_shards([spans[i] for i in todo]) if map_shards is not None else (compute(*spans[i]) for i in todo)
    for i, res in zip(todo, results):
        if folder is not None:
            _write_shard(folder / f"shard-{i:05d}.npz", _shard_meta(key, i, spans[i]), res)
            if on_shard_written is not None:
                on_shard_written(i)
        out[i] = res
        bar.update(spans[i][1] - spans[i][0])
    bar.close()
    return [out[i] for i in chosen]


def shard_span(shards: tuple[int, int] | None, n_shards: int) -> range:
    """The shard indices of part ``(k, n)`` of a job of ``n_shards`` shards: the k-th of n equal ranges (the
    first ones one longer when they do not divide evenly); every shard when ``shards`` is None."""
    if shards is None:
        return range(n_shards)
    k, n = shards
    if not (0 <= k < n):
        raise ValueError(f"shards must be (k, n) with 0 <= k < n; got {shards}")
    base, extra = divmod(n_shards, n)
    start = k * base + min(k, extra)
    return range(start, start + base + (1 if k < extra else 0))


def progress_off(progress: bool = True) -> bool:
    """tqdm's ``disable=``: true when ``progress`` is false or ``$TQDM_DISABLE`` is set.

    An explicit ``disable=`` would override tqdm's own reading of ``TQDM_DISABLE``; the runner sets it so
    that executed chapters (and the book built from them) carry no progress bars.
    """
    return not progress or os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")
