"""What a model spec points at on disk or on the Hub, before any weights are loaded (:func:`describe_model`)."""

from __future__ import annotations

from dataclasses import dataclass

from .files import st_transformer_dir
from .ref import ModelRef
from .static import static_layout

__all__ = ["ModelSource", "describe_model"]


@dataclass(frozen=True)
class ModelSource:
    """What a model spec points at, before any weights are loaded.

    Attributes
    ----------
    kind : {"registry", "tiny", "hub", "local", "static"}
        As :attr:`ModelRef.kind <replib.models.ref.ModelRef.kind>`, with ``local`` for a folder.
    name : str
        Display name (registry key, Hub id, folder or file name).
    location : str
        Registry key, Hub id, or absolute path.
    revision : str or None
        Hub revision asked for (``id@revision``), None for local files.
    layout : {"transformers", "sentence-transformers", "glove", "word2vec", "word2vec-binary", None}
    transformer_dir : str or None
        Folder holding ``config.json`` and the weights (a sentence-transformers module path may differ from
        the root).
    """

    kind: str
    name: str
    location: str
    revision: str | None = None
    layout: str | None = None
    transformer_dir: str | None = None


def describe_model(spec, revision: str | None = None) -> ModelSource:
    """Classify a model spec without loading it.

    Parameters
    ----------
    spec : str, path-like or ModelRef
        ``tiny-<family>``, a registry key or alias, an existing folder or file, or a Hub id
        (``org/name`` or ``org/name@revision``); see :meth:`ModelRef.parse <replib.models.ref.ModelRef.parse>`.
    revision : str, optional
        Hub revision (overrides an ``@revision`` suffix).

    Raises
    ------
    ModelUnavailableError
        For a path that does not exist (something that looks like a path, not a Hub id) or a folder in no
        known layout.
    """
    ref = ModelRef.parse(spec)
    if ref.kind in ("tiny", "registry"):
        return ModelSource(ref.kind, ref.name, ref.name, revision if ref.kind == "registry" else None)
    if ref.kind == "hub":
        return ModelSource("hub", ref.name, ref.name, revision or ref.revision or "main")
    p = ref.path
    if ref.kind == "static":
        return ModelSource("static", ref.name, str(p), None, static_layout(p))
    if (p / "modules.json").exists():
        return ModelSource("local", ref.name, str(p), None, "sentence-transformers", str(st_transformer_dir(p)))
    return ModelSource("local", ref.name, str(p), None, "transformers", str(p))
