"""Atomic file writes: a file either appears complete or not at all (no half-written results)."""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "write_json_atomic"]


@contextlib.contextmanager
def atomic_path(dest, suffix: str = ".part") -> Iterator[Path]:
    """Yield a temporary path beside ``dest``; on success it replaces ``dest`` atomically (``os.replace``),
    on any exception it is removed and ``dest`` is left untouched."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix="." + dest.name + ".", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json_atomic(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, default=str))


CACHE_ENV = "REPLIB_CACHE_DIR"


def cache_root(sub: str | None = None) -> Path:
    """The cache folder of replib: ``$REPLIB_CACHE_DIR`` (default ``~/.cache/replib``), or a subfolder of it
    (``data``, ``embeddings``, ``proteinbert``, ``tiny``, ``runs``). On Colab, point it at Google Drive to
    survive a disconnected runtime."""
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "replib").expanduser()
    return root / sub if sub else root


PROGRESS_OFF_ENV = "TQDM_DISABLE"


def progress_off(progress: bool = True) -> bool:
    """tqdm's ``disable=``: true when ``progress`` is false or ``$TQDM_DISABLE`` is set.

    An explicit ``disable=`` would override tqdm's own reading of ``TQDM_DISABLE``; the runner sets it so
    that executed chapters (and the book built from them) carry no progress bars.
    """
    return not progress or os.environ.get(PROGRESS_OFF_ENV, "").strip().lower() not in ("", "0", "false")
