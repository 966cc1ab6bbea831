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

* ``STEPS`` and ``parts(profile, params) -> list of Part``: the chapter's steps and its parts for one
  profile and its parameters (:mod:`replib.parts`), read with :func:`chapter_parts`.

A chapter's set-up cell is then one call::

    cfg = chapter_config("protein_isotropy", profile, models=models, seed=seed, part=part)
    cfg.profile, cfg.seed, cfg.models     # the resolved profile, the seed, the models as ModelRefs
    cfg.n_global, cfg["n_global"]         # a parameter, by attribute or by item
    cfg.part, cfg.runs("embed")           # the part (None: the whole chapter); does it run this step?

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

from .models import ModelRef, model_refs, require_protein_model
from .parts import Part, check_parts
from .profiles import PROFILES, resolve_profile
from .schema import validate

__all__ = [
    "CHAPTERS",
    "ChapterConfig",
    "Params",
    "chapter_config",
    "chapter_parts",
    "chapter_table",
    "execution_order",
    "PREPARE",
    "TAKES_NO_MODEL",
    "prepare_chapter",
    "find_part",
    "profile_params",
    "require_chapter_models",
]

#: chapter -> the module holding its table (``TABLE``, ``SCHEMA`` and optionally ``derive``)
CHAPTERS = {
    "isoscore": "replib.methods.isoscore.config",
    "protein_isotropy": "replib.methods.protein.config",
    "classifiers": "replib.methods.classifier_training.config",
    "manifolds": "replib.methods.manifolds.config",
    "cluster_isotropy": "replib.methods.cluster_isotropy.config",
    "training_dynamics": "replib.methods.training_dynamics",
}

#: chapter -> the chapters that read an artefact it makes (the training chapter's trained runs: the protein
#: chapter's row of this book's own protein LM). A run executes the maker first (:func:`execution_order`), so
#: that it makes the artefact in its own way (the training chapter trains its two runs side by side) and the
#: readers find it cached.
SHARED_ARTEFACTS = {"training_dynamics": ("protein_isotropy",)}

#: chapter -> what a run does before executing several of its seeds (``"module:function"``, called as
#: ``function(profile, seeds, progress=...)`` in the runner's process; returns what it did, a list): the
#: training chapter trains every seed's runs at once, longest first (:func:`replib.training.train_seeds`), so that
#: on two cores two seeds' long text runs train side by side instead of each seed's pair leaving a core idle while
#: its text run ends; the seeds' notebooks then read the runs from the cache. See :func:`prepare_chapter`.
PREPARE = {"training_dynamics": "replib.methods.training_dynamics:prepare"}

#: the chapters that take no model of the reader's: the training chapter trains its own two (``--model`` does
#: not apply to it; the runner says so and runs it on its own models)
TAKES_NO_MODEL = frozenset({"training_dynamics"})

#: chapter -> the check every model a reader gives it must pass (the other chapters take any text model or
#: word-vector file; the protein chapter's own steps check again, :func:`replib.methods.protein.setup.require_protein_models`)
MODEL_KIND_CHECKS = {"protein_isotropy": require_protein_model}


def require_chapter_models(chapter: str, specs) -> None:
    """Refuse, before the chapter runs and before any weights are loaded, a reader's model it cannot use.

    Raises
    ------
    replib.models.WrongModelKindError
        "this chapter needs a protein model; <name> is a text model ..." (the protein chapter).
    replib.models.ModelUnavailableError
        For a spec whose kind cannot be read here (the chapter would say the same).
    """
    check = MODEL_KIND_CHECKS.get(chapter)
    for spec in specs if check else ():
        check(spec)


def prepare_chapter(chapter: str, profile: str, seeds, *, progress: bool = True) -> list:
    """Run ``chapter``'s preparation (:data:`PREPARE`) for the ``seeds`` a run is about to execute; ``[]`` for a
    chapter without one. What it makes is a cache the seeds' notebooks read (they make it themselves when it is
    missing), so it changes when the work is done, never the results."""
    target = PREPARE.get(chapter)
    if target is None:
        return []
    module, name = target.split(":")
    return list(getattr(importlib.import_module(module), name)(profile, list(seeds), progress=progress))


def execution_order(chapters) -> list[str]:
    """``chapters`` (book order) in the order a run executes them: each maker of :data:`SHARED_ARTEFACTS` moved
    just before the first of its readers, the others in their order. The report keeps the book's order."""
    order = list(chapters)
    for maker, readers in SHARED_ARTEFACTS.items():
        first = min((order.index(r) for r in readers if r in order), default=None)
        if maker in order and first is not None and order.index(maker) > first:
            order.remove(maker)
            order.insert(first, maker)
    return order


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
    part : Part or None
        The part of the chapter this configuration runs (:mod:`replib.parts`); None: the whole chapter.
        Its models and parameter subsets are already applied to ``models`` and ``params``.
    """

    chapter: str
    profile: str
    seed: int
    models: tuple[ModelRef, ...]
    params: Params
    part: Part | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("params", "part"):
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
        params = Params({**self.params, **params})
        return ChapterConfig(self.chapter, self.profile, self.seed, self.models, params, self.part)

    def runs(self, step: str) -> bool:
        """True when this configuration runs the chapter's step ``step`` (always for the whole chapter)."""
        return self.part is None or self.part.runs(step)

    def selected(self, name: str, values) -> list:
        """``values`` narrowed to the part's selection ``name`` (all of them for the whole chapter)."""
        return list(values) if self.part is None else self.part.selected(name, values)

    @property
    def shards(self) -> tuple[int, int] | None:
        """The part's share ``(k, n)`` of the chapter's sharded job, or None (every shard)."""
        return None if self.part is None else self.part.shards


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


def chapter_parts(chapter: str, profile: str) -> tuple[Part, ...]:
    """The parts of a chapter in one profile, in order (the last is ``rest``): the ``parts(profile, params)``
    of its config module on the profile's validated parameters, checked by :func:`replib.parts.check_parts`."""
    table = chapter_table(chapter)
    return check_parts(chapter, table.parts(profile, profile_params(chapter, profile)), table.STEPS)


def find_part(chapter: str, profile: str, name: str) -> Part:
    """One part of a chapter by name; a ValueError lists the chapter's parts."""
    parts = {p.name: p for p in chapter_parts(chapter, profile)}
    if name not in parts:
        raise ValueError(f"{chapter} has no part {name!r} in profile {profile!r}; parts: {', '.join(parts)}")
    return parts[name]


def _part_models(part: Part, refs: tuple, default: list, given: bool) -> tuple:
    """The models a part runs: the profile's models it names; with the reader's models (``given``), those in
    the same positions when the reader gave as many as the profile has (a stand-in for each), else all."""
    if part.models is None:
        return refs
    if given and len(refs) != len(default):
        return refs
    positions = [i for i, spec in enumerate(default) if spec in part.models]
    return tuple(refs[i] for i in positions)


def _part_params(part: Part, params: dict, chapter: str) -> dict:
    """``params`` with the part's parameter subsets applied (each must be a subset of the profile's list)."""
    out = dict(params)
    for name, values in part.select:
        if name not in out:
            continue  # a named selection the chapter reads with cfg.selected
        unknown = [v for v in values if v not in out[name]]
        if unknown:
            raise ValueError(f"{chapter} part {part.name}: {name} {unknown} not in the profile's {list(out[name])}")
        if isinstance(out[name], dict):  # a mapping (the manifolds chapter's corpora): keep the chosen keys
            out[name] = {k: v for k, v in out[name].items() if k in values}
        else:
            out[name] = [v for v in out[name] if v in values]
    return out


def chapter_config(
    chapter: str, profile: str | None = None, *, models=None, seed: int = 0, part: str | None = None
) -> ChapterConfig:
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
    part : str or None
        The name of one of the chapter's parts (:func:`chapter_parts`): its models and parameter subsets are
        applied; None (default) runs the whole chapter.

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
    chosen = find_part(chapter, profile, part) if part is not None else None
    if chosen is not None:
        refs, params = _part_models(chosen, refs, default, given), _part_params(chosen, params, chapter)
    derive = getattr(chapter_table(chapter), "derive", None)
    if derive is not None:
        params = derive(params, refs, default=default, given=given)
    return ChapterConfig(chapter, profile, int(seed), refs, Params(params), chosen)
