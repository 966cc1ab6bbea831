"""The one place where optional heavy dependencies are imported.

Every other module imports its dependencies at the top. A dependency that not every user has (FAISS for LID,
parasail for alignments, Dask for clusters, the reference packages used as oracles) is imported here, by
name, when the module that needs it is imported; a missing one leaves ``None`` and :func:`require` raises an
``ImportError`` that says what to install, at the moment the feature is used.

``replib.metrics`` needs numpy and scipy only: it never imports torch or transformers (a torch tensor passed
to a metric is converted by duck typing, see :mod:`replib._validation`). A metric with an optional torch path
(LID's GPU neighbour search) imports torch with :func:`import_at_use` when that path runs, never when the
module is imported: loading torch takes seconds and the metrics must work without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["optional_import", "require", "import_at_use"]


def optional_import(name: str) -> ModuleType | None:
    """Import ``name`` if it is installed, else return None (a broken install still raises)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.split(".")[0] != exc.name.split(".")[0]:
            raise  # the package is there but one of *its* dependencies is missing: say so, don't hide it
        return None


def require(module: ModuleType | None, name: str, purpose: str, *, pip: str | None = None) -> ModuleType:
    """``module`` if it was imported, else an ``ImportError`` naming the package and what needs it."""
    if module is None:
        raise ImportError(f"{purpose} needs the package {name!r}: pip install {pip or name}")
    return module


def import_at_use(name: str, purpose: str, *, pip: str | None = None) -> ModuleType:
    """Import ``name`` now, where a feature needs it (a heavy package a module must not load at its own import);
    an ``ImportError`` naming the package and what needs it when it is missing."""
    return require(optional_import(name), name, purpose, pip=pip)
