"""A training run's state on disk: checkpoints and resume states with their sha256 beside them, verified on
every load, and the checkpoint log, rewritten atomically row by row (see :mod:`replib.training.loop` for the
layout of a run folder)."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, load_model, save_file, save_model

from .._io import atomic_path, atomic_write, sha256_file, write_json_atomic

__all__ = ["CheckpointError", "verify_checkpoint", "verify_final"]


class CheckpointError(ValueError):
    """A checkpoint or resume state whose bytes differ from the sha256 recorded beside it (or that has none)."""


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _write_checked(path: Path, write: Callable[[str], None]) -> None:
    """``write(temporary path)`` a tensor file atomically, then its sha256 beside it (``<file>.sha256``)."""
    with atomic_path(path) as tmp:
        write(str(tmp))
        digest = sha256_file(tmp)
    atomic_write(_sidecar(path), lambda fh: fh.write(f"{digest}  {path.name}\n"), mode="w")


def verify_checkpoint(path: Path) -> None:
    """Check a checkpoint or resume file against the sha256 recorded beside it.

    Raises
    ------
    CheckpointError
        The file or its ``.sha256`` is missing, or the bytes differ; the message names the file.
    """
    side = _sidecar(path)
    try:
        expected = side.read_text().split()[0]
    except (OSError, IndexError):
        raise CheckpointError(
            f"{path}: no sha256 recorded beside it ({side.name}); it cannot be trusted. Delete the run folder "
            f"{path.parent.parent} to train it again"
        ) from None
    got = sha256_file(path)
    if got != expected:
        raise CheckpointError(
            f"{path}: sha256 {got} differs from the {expected} recorded when it was written: the checkpoint is "
            f"corrupted. Delete the run folder {path.parent.parent} to train it again"
        )


def verify_final(folder: Path) -> None:
    """Check every file listed in a finished run's ``final/sha256.json`` against its recorded sha256.

    Raises
    ------
    CheckpointError
        ``sha256.json`` is missing or unreadable, or a listed file is missing or differs; the message names
        the file and says how to train the run again.
    """
    folder = Path(folder)
    again = f"Delete the run folder {folder.parent} to train it again"
    try:
        sums = json.loads((folder / "sha256.json").read_text())
    except (OSError, ValueError):
        raise CheckpointError(f"{folder}: no readable sha256.json; the run cannot be trusted. {again}") from None
    for name, expected in sorted(sums.items()):
        path = folder / name
        got = sha256_file(path) if path.is_file() else "(missing)"
        if got != expected:
            raise CheckpointError(
                f"{path}: sha256 {got} differs from the {expected} recorded when the run finished: the trained "
                f"model is corrupted. {again}"
            )


def _save_weights(model, path: Path) -> None:
    _write_checked(path, lambda tmp: save_model(model, tmp))


def _load_weights(model, path: Path) -> None:
    verify_checkpoint(path)
    load_model(model, str(path), strict=True, device=str(next(model.parameters()).device))


def _save_resume(folder: Path, model, opt, step: int) -> None:
    sub = folder / f"resume-{step:06d}"
    if sub.exists():
        shutil.rmtree(sub)
    sub.mkdir(parents=True)
    _save_weights(model, sub / "model.safetensors")
    sd = opt.state_dict()
    tensors = {
        f"opt.{i}.{k}": v.detach().cpu().clone().contiguous() for i, st in sd["state"].items() for k, v in st.items()
    }
    tensors["rng.torch"] = torch.get_rng_state()
    _write_checked(sub / "optim.safetensors", lambda tmp: save_file(tensors, tmp))
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]
    state = {"step": step, "param_groups": groups, "threads": torch.get_num_threads()}
    write_json_atomic(sub / "state.json", state)
    write_json_atomic(folder / "resume.json", {"step": step, "folder": sub.name})
    for old in folder.glob("resume-*"):
        if old.name != sub.name:
            shutil.rmtree(old, ignore_errors=True)


def _load_resume(folder: Path, model, opt) -> int:
    """Restore the latest resume state into ``model`` and ``opt`` (verified); its step, or -1 if none."""
    ptr = folder / "resume.json"
    if not ptr.exists():
        return -1
    info = json.loads(ptr.read_text())
    sub = folder / info["folder"]
    _load_weights(model, sub / "model.safetensors")
    verify_checkpoint(sub / "optim.safetensors")
    tensors = load_file(str(sub / "optim.safetensors"))
    state: dict = {}
    for key, v in tensors.items():
        if key.startswith("opt."):
            _, i, k = key.split(".", 2)
            state.setdefault(int(i), {})[k] = v
    saved = json.loads((sub / "state.json").read_text())
    groups = saved["param_groups"]
    threads = saved.get("threads")
    if threads is not None and threads != torch.get_num_threads():
        warnings.warn(
            f"{folder.name}: resumed on {torch.get_num_threads()} torch threads, trained so far on {threads}; "
            "float sums are reduced in another order, so the result will not be bit-identical to an "
            "uninterrupted run (set torch.set_num_threads or OMP_NUM_THREADS to match)",
            stacklevel=3,
        )
    for g in groups:
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
    opt.load_state_dict({"state": state, "param_groups": groups})
    torch.set_rng_state(tensors["rng.torch"].cpu())
    return int(info["step"])


def _read_log(path: Path) -> list[dict]:
    """The rows of a log file, one per step, in step order (a later row of a step replaces an earlier one)."""
    rows = {}
    if path.exists():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except ValueError:
                raise ValueError(f"{path}, line {n}: not a JSON row (a torn write?): {line[:80]!r}") from None
            rows[r["step"]] = r
    return [rows[k] for k in sorted(rows)]


def _append_log(folder: Path, row: dict) -> None:
    """Add ``row`` to ``log.jsonl`` by rewriting the whole file atomically (it holds one row per checkpoint,
    a few dozen lines): a kill mid-write leaves the previous log intact, never a torn line."""
    path = folder / "log.jsonl"
    rows = [r for r in _read_log(path) if r["step"] != row["step"]] + [row]
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in sorted(rows, key=lambda r: r["step"]))
    atomic_write(path, lambda fh: fh.write(text), mode="w")
