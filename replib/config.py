"""One configuration type for every chapter: :class:`ChapterConfig`, built by :func:`chapter_config`.

A chapter's parameters per profile are defined once, as data, in the ``config`` module of its methods
package (``replib.methods.<package>.config``, listed in :data:`CHAPTERS`). Such a module holds

* ``TABLE``: profile -> a JSON-like dict of that profile's parameters, with ``models`` the profile's
  default model specs (a list of strings, empty for a chapter without models);
* ``SCHEMA``: the JSON Schema of one profile's dict, checked by :func:`replib.schema.validate` (the project's
  one validator) every time a configuration is built, so an error names the chapter and the profile;
* optionally ``derive(params, models, *, default, given) -> dict``: parameters that depend on the chosen
  models (a reader's ``--model`` can change which model runs the tuning, the display names...), computed
  by code from the validated table; ``default`` is the profile's model list, ``given`` whether the reader
  chose the models.

A chapter's set-up cell is then one call::

    cfg = chapter_config("protein_isotropy", profile, models=models, seed=seed)
    cfg.profile, cfg.seed, cfg.models     # the resolved profile, the seed, the models as ModelRefs
    cfg.n_global, cfg["n_global"]         # a parameter, by attribute or by item

The parameters are read-only (:class:`Params`: lists become tuples, dicts read-only mappings) and can be
pickled, so a configuration travels to worker processes as it is.
"""

from __future__ import annotations

import importlib
import json
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .models import ModelRef, model_refs
from .profiles import PROFILES, resolve_profile
from .schema import validate

__all__ = ["CHAPTERS", "ChapterConfig", "Params", "chapter_config", "chapter_table", "profile_params"]

#: chapter -> the module holding its table (``TABLE``, ``SCHEMA`` and optionally ``derive``)
CHAPTERS = {
    "isoscore": "replib.methods.isoscore.config",
    "protein_isotropy": "replib.methods.protein.config",
    "classifiers": "replib.methods.classifier_training.config",
    "manifolds": "replib.methods.manifolds.config",
    "cluster_isotropy": "replib.methods.cluster_isotropy.config",
    "training_dynamics": "replib.methods.training_dynamics",
}


# ------------------------------------------------------------------------------------------ params
def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping) and not isinstance(value, Params):
        return Params(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


class Params(Mapping):
    """A read-only mapping of parameters with attribute access (``p.n_global`` is ``p["n_global"]``).

    Nested dicts are :class:`Params` too and lists are tuples. Picklable (the manifolds chapter sends its
    configuration to worker processes).
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping | None = None):
        object.__setattr__(self, "_data", {str(k): _freeze(v) for k, v in dict(data or {}).items()})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r} (parameters: {sorted(self._data)})") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("parameters are read-only: build another configuration with ChapterConfig.replace")

    def __reduce__(self):
        return (Params, (self.thaw(),))

    def __repr__(self) -> str:
        return f"Params({self.thaw()!r})"

    def thaw(self) -> dict:
        """A plain, editable deep copy (dicts and lists)."""
        return _thaw(self)


# ------------------------------------------------------------------------------------------ config
@dataclass(frozen=True)
class ChapterConfig:
    """A chapter's parameters for one profile, seed and set of models.

    Attributes
    ----------
    chapter : str
        The chapter's name (a key of :data:`CHAPTERS`).
    profile : str
        ``smoke``, ``offline`` or ``paper`` (already resolved: never None).
    seed : int
    models : tuple of :class:`~replib.models.ModelRef`
        The models the chapter runs: the reader's ``models`` parameter, or the profile's default, parsed once
        (``str(ref)`` is the normalised spec, ``ref.slug`` its name in record keys).
    params : Params
        Everything else, read-only; ``cfg.name`` and ``cfg["name"]`` read one parameter.
    """

    chapter: str
    profile: str
    seed: int
    models: tuple[ModelRef, ...]
    params: Params

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "params":
            raise AttributeError(name)
        try:
            return self.params[name]
        except KeyError:
            raise AttributeError(
                f"{self.chapter} config ({self.profile}) has no parameter {name!r}; parameters: {sorted(self.params)}"
            ) from None

    def __getitem__(self, key: str) -> Any:
        try:
            return self.params[key]
        except KeyError:
            raise KeyError(f"{self.chapter} config ({self.profile}) has no parameter {key!r}") from None

    def __contains__(self, key: object) -> bool:
        return key in self.params

    def get(self, key: str, default: Any = None) -> Any:
        return self.params.get(key, default)

    @property
    def model_specs(self) -> list[str]:
        """The models as spec strings (``str`` of each ref), in order."""
        return [str(m) for m in self.models]

    def replace(self, **params: Any) -> ChapterConfig:
        """A copy with some parameters changed (tests use smaller sizes); unknown names raise."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise KeyError(f"{self.chapter} config ({self.profile}) has no parameters {unknown}")
        return ChapterConfig(self.chapter, self.profile, self.seed, self.models, Params({**self.params, **params}))


def chapter_table(chapter: str) -> ModuleType:
    """The module that holds a chapter's table (``TABLE``, ``SCHEMA``, optionally ``derive``)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; chapters with a configuration: {sorted(CHAPTERS)}")
    return importlib.import_module(CHAPTERS[chapter])


def profile_params(chapter: str, profile: str) -> dict:
    """One profile's row of a chapter's table: validated against the chapter's schema, as a plain JSON copy
    (tuples become lists), ``models`` included.

    Raises
    ------
    replib.schema.SchemaError
        ``"<chapter> config (<profile>): <path>: <message>"`` when the table does not follow its schema.
    """
    table = chapter_table(chapter)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    if profile not in table.TABLE:
        raise ValueError(f"{chapter} has no configuration for profile {profile!r}")
    params = json.loads(json.dumps(table.TABLE[profile]))  # data, not code: JSON types only
    validate(params, table.SCHEMA, source=f"{chapter} config ({profile})")
    return params


def chapter_config(chapter: str, profile: str | None = None, *, models=None, seed: int = 0) -> ChapterConfig:
    """Build a chapter's :class:`ChapterConfig` from its table.

    Parameters
    ----------
    chapter : str
        A key of :data:`CHAPTERS` (the notebook's name).
    profile : str or None
        ``smoke``, ``offline``, ``paper``, or None for automatic (:func:`replib.profiles.resolve_profile`).
    models : None, str or list of str
        The chapter's papermill ``models`` parameter: None for the profile's models, else one spec or a
        list of specs (registry key, folder, Hugging Face id), parsed by :func:`replib.models.model_refs`.
    seed : int

    Returns
    -------
    ChapterConfig

    Raises
    ------
    ValueError
        An unknown chapter or profile, a seed that is not an integer, or a model spec that does not parse
        (:class:`~replib.models.ModelUnavailableError`); :class:`~replib.schema.SchemaError` for a table that
        does not follow its schema.
    """
    profile = resolve_profile(profile)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    params = profile_params(chapter, profile)
    default = params.pop("models")
    refs = model_refs(models, default)
    given = not (models is None or (isinstance(models, (list, tuple)) and not models))
    derive = getattr(chapter_table(chapter), "derive", None)
    if derive is not None:
        params = derive(params, refs, default=default, given=given)
    return ChapterConfig(chapter, profile, int(seed), refs, Params(params))
