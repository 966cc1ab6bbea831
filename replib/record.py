"""``record(name, value)``: publish a computed number from a chapter notebook; ``record_all(records)`` a step's
``name -> value`` mapping at once.

The output is a ``display_data`` in the format of MyST-NB's ``glue`` (metadata ``scrapbook`` with a
``mime_prefix``), so Jupyter Book 1 renders it in prose with ``{glue:text}`key``` and the output
itself stays hidden; the claim checker reads it back with plain ``nbformat`` from the
``application/vnd.replib.record+json`` entry. No dependency on scrapbook or myst-nb.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._optional import optional_import

#: IPython displays the records in a kernel; without it (plain Python) they are kept in RECORDED only
_ipython = optional_import("IPython")
_ipython_display = optional_import("IPython.display")

GLUE_PREFIX = "application/papermill.record/"
RECORD_MIME = "application/vnd.replib.record+json"

#: values recorded in this process (useful in scripts and tests)
RECORDED: dict[str, Any] = {}


def _plain(value: Any) -> Any:
    """numpy/torch scalars -> Python scalars; lists/tuples/dicts recursively; reject other objects."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    raise TypeError(f"record() takes numbers, booleans, strings or lists of them; got {type(value).__name__}")


def record(name: str, value: Any) -> Any:
    """Record ``value`` under ``name`` for the book's prose and the claim checker.

    Parameters
    ----------
    name : str
        A key named in the chapter's claims file, or used in prose as ``{glue:text}`name:.3f```.
        Letters, digits, ``_``, ``-`` and ``.`` only.
    value : number, bool, str or list of them
        Numpy and torch scalars are converted to Python scalars.

    Returns
    -------
    The plain value, so ``x = record("x", compute())`` reads naturally.
    """
    if not name or not all(c.isalnum() or c in "_-." for c in name):
        raise ValueError(f"record name {name!r} must be non-empty and use letters, digits, '_', '-', '.'")
    plain = _plain(value)
    RECORDED[name] = plain
    payload = {"name": name, "value": plain}
    if _ipython is None or _ipython.get_ipython() is None:  # plain Python: the value is in RECORDED only
        return plain
    _ipython_display.display(  # hidden in the output, shown only where glued
        {GLUE_PREFIX + "text/plain": str(plain), GLUE_PREFIX + RECORD_MIME: payload},
        raw=True,
        metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}},
    )
    return plain


def record_all(records: Mapping[str, Any]) -> None:
    """:func:`record` every ``name -> value`` of ``records`` (a step's records, e.g. ``iso.rotation_records(...)``),
    in their order. Returns None, so that a cell ending with it shows nothing."""
    for name, value in records.items():
        record(name, value)


def read_records(nb) -> dict[str, Any]:
    """Read every recorded value from an executed notebook (an ``nbformat`` node, a dict or the path of an
    ``.ipynb`` file, read as the JSON it is).

    Returns
    -------
    dict
        name -> value. A key recorded twice keeps the last value.
    """
    if not isinstance(nb, dict):
        nb = json.loads(Path(nb).read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            data = output.get("data", {})
            payload = data.get(meta.get("mime_prefix", "") + RECORD_MIME)
            if isinstance(payload, dict) and "value" in payload:
                out[meta["name"]] = payload["value"]
    return out
