"""Which model weights a run actually used, for the validation report.

Every loader in :mod:`replib.models` (and the sentence-transformers loader of the classifiers chapter)
calls :func:`note_model` once per load. The entry says what was asked for (registry name, Hub id,
revision) and what was served (the commit the Hub resolved, the packaged copy's checksum, or random
weights with their seed). Entries are kept in :data:`USED_MODELS` for the current process and, when the
environment variable ``REPLIB_MODELS_LOG`` names a file, appended to it as one JSON line each: the runner
sets it for every chapter it executes and puts the entries into its report, so the validation page can
say which weights produced each number.

Data files are noted the same way (:func:`note_data`, called by :func:`replib.data.fetch` for every file it
serves): in the same log, marked ``"what": "data"``, read back by :func:`read_data_log`, so a chapter's header
can name the data that ran as well as the models.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

MODELS_LOG_ENV = "REPLIB_MODELS_LOG"

#: Entries noted in this process, in load order (duplicates removed).
USED_MODELS: list[dict] = []

_KEYS = ("name", "kind", "hf_id", "revision", "resolved", "pinned", "source")


def note_model(
    name: str,
    *,
    kind: str,
    source: str,
    hf_id: str | None = None,
    revision: str | None = None,
    resolved: str | None = None,
    pinned: bool | None = None,
) -> dict:
    """Record that a model was loaded.

    Parameters
    ----------
    name : str
        Registry key (``tiny-<family>`` for tiny random models, ``glove-6B-50d`` for GloVe).
    kind : {"hub", "packaged", "local", "file", "random"}
        Where the weights came from.
    source : str
        Human-readable origin (a path, ``hf:<id>@<revision>``, ``random:seed=<k>``).
    hf_id, revision : str, optional
        Hugging Face id and the revision that was requested.
    resolved : str, optional
        What was actually served: the commit hash the Hub resolved the revision to, or a file checksum.
    pinned : bool, optional
        Whether ``revision`` is an immutable commit (or checksum).

    Returns
    -------
    dict
        The entry, also appended to ``$REPLIB_MODELS_LOG`` when that is set.

    Warns
    -----
    UserWarning
        When a Hub model is loaded at an unpinned revision: the entry then records the commit the Hub
        served, which is the revision to pin in :mod:`replib.models.registry`.
    """
    entry = dict(zip(_KEYS, (name, kind, hf_id, revision, resolved, pinned, source)))
    if kind == "hub" and pinned is False:
        warnings.warn(
            f"{name}: registry revision {revision!r} is not pinned; the Hub served commit "
            f"{resolved or 'unknown'} (recorded in the report; pin it in replib/models/registry.py)",
            stacklevel=3,
        )
    if entry not in USED_MODELS:
        USED_MODELS.append(entry)
    _append_log(entry)
    return entry


def _append_log(entry: dict) -> None:
    """Append ``entry`` to ``$REPLIB_MODELS_LOG`` when it is set (one JSON line, a single ``write`` in append
    mode, so concurrent writers do not interleave lines)."""
    log = os.environ.get(MODELS_LOG_ENV)
    if log:
        path = Path(log)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")


def note_data(dataset: str, file: str, *, checksum: str | None, source: str) -> dict:
    """Record that a data file was read: ``dataset``/``file`` of the registry (:mod:`replib.data`), the
    ``checksum`` it was verified against (``sha256:<hex>``, ``md5:<hex>``; None when none is known) and where
    it was served from (``source``: ``mirror``, ``cache``, ``download``). Appended to ``$REPLIB_MODELS_LOG``
    marked ``"what": "data"`` (:func:`read_data_log` reads it back)."""
    entry = {"what": "data", "dataset": dataset, "file": file, "checksum": checksum, "source": source}
    _append_log(entry)
    return entry


def _log_lines(path) -> list[dict]:
    """The JSON objects of a log file, in order; a missing file gives ``[]``, a line that is not JSON (a write
    cut by a killed kernel) is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict):
            out.append(e)
    return out


def read_models_log(path) -> list[dict]:
    """The model entries of a ``REPLIB_MODELS_LOG`` file, duplicates removed, in first-load order.

    A missing file gives ``[]`` (a chapter that loads no model); a line that is not JSON (a write cut by
    a killed kernel) is skipped, and so are data entries (:func:`read_data_log`).
    """
    out: list[dict] = []
    for e in _log_lines(path):
        e = {k: e.get(k) for k in _KEYS} if e.get("what", "model") == "model" else None
        if e is not None and e not in out:
            out.append(e)
    return out


def read_data_log(path) -> list[dict]:
    """The data entries (:func:`note_data`) of a ``REPLIB_MODELS_LOG`` file, one per data set and file, in
    first-read order."""
    out: dict[tuple, dict] = {}
    for e in _log_lines(path):
        if e.get("what") == "data":
            out.setdefault(
                (e.get("dataset"), e.get("file")), {k: e.get(k) for k in ("dataset", "file", "checksum", "source")}
            )
    return list(out.values())


def revision_label(entry: dict) -> str:
    """Short label of the weights an entry describes: the served commit, else the requested revision,
    else the source."""
    return str(entry.get("resolved") or entry.get("revision") or entry.get("source") or "?")
