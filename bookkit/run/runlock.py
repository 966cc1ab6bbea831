"""One runner at a time per output folder (:func:`run_lock`)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import filelock

from ..errors import RunLockedError

__all__ = ["run_lock"]


@contextmanager
def run_lock(out_dir: Path):
    """One runner at a time per output folder: an exclusive lock (``filelock``) on ``out_dir/.lock``, which
    the system releases when its process ends in any way, so a lock left by a killed runner never blocks the
    next one. ``out_dir/.lock.pid`` names the owner for the message. The report, the executed notebooks and
    the logs of two concurrent runs can therefore never interleave."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    owner = out_dir / ".lock.pid"
    lock = filelock.FileLock(out_dir / ".lock", timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            pid = f" (pid {int(owner.read_text().strip())})"
        except (OSError, ValueError):
            pid = ""
        raise RunLockedError(
            f"another runner{pid} is writing into {out_dir}; wait for it or use another output folder"
        ) from None
    try:
        owner.write_text(str(os.getpid()))
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()
