"""One configuration type for every chapter: :class:`ChapterConfig`, built by :func:`chapter_config`.

A chapter is declared once, as a :class:`~replib.chapter.Chapter` (its parameters per profile as data with
their JSON Schema, its steps and parts, its preparation, its models...) exported as ``CHAPTER`` by its module or
package of :mod:`replib.methods`; :func:`chapters` finds every one by discovery.

A chapter's set-up cell is then one call::

    cfg = chapter_config("protein_isotropy", profile, models=models, seed=seed, part=part)
    cfg.profile, cfg.seed, cfg.models     # the resolved profile, the seed, the models as ModelRefs
    cfg.n_global, cfg["n_global"]         # a parameter, by attribute or by item
    cfg.part, cfg.runs("embed")           # the part (None: the whole chapter); does it run this step?

The parameters are read-only (:class:`Params`: lists become tuples, dicts read-only mappings) and can be
pickled, so a configuration travels to worker processes as it is.
"""

from __future__ import annotations

import functools
import importlib
import json
import numbers
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from . import methods
from .chapter import Chapter
from .models import ModelRef, model_refs
from .parts import Part, check_parts
from .profiles import PROFILES, chapter_precision, resolve_profile
from .schema import validate
from .tables import format_cell

__all__ = [
    "ChapterConfig",
    "Params",
    "chapter_config",
    "chapter_parts",
    "chapters",
    "execution_order",
    "find_chapter",
    "find_part",
    "prepare_chapter",
    "profile_params",
    "require_chapter_models",
    "takes_models",
]


@functools.cache
def chapters() -> dict[str, Chapter]:
    """Every chapter by name: the ``CHAPTER`` of each module or package of :mod:`replib.methods` (discovered,
    so that no registry can leave a chapter out); a name declared twice raises."""
    found: dict[str, Chapter] = {}
    for info in pkgutil.iter_modules(methods.__path__, f"{methods.__name__}."):
        ch = getattr(importlib.import_module(info.name), "CHAPTER", None)
        if isinstance(ch, Chapter):
            if ch.name in found:
                raise ValueError(f"chapter {ch.name!r} is declared twice ({info.name})")
            found[ch.name] = ch
    return found


def find_chapter(name: str) -> Chapter:
    """One chapter's declaration (:func:`chapters`); a ValueError lists the chapters."""
    if name not in chapters():
        raise ValueError(f"unknown chapter {name!r}; chapters: {sorted(chapters())}")
    return chapters()[name]


def takes_models(chapter: str) -> bool:
    """Whether ``--model`` applies to ``chapter`` (False for a chapter that trains its own; True for a name no
    chapter declares, such as a test's)."""
    return getattr(chapters().get(chapter), "takes_models", True)


def require_chapter_models(chapter: str, specs) -> None:
    """Refuse, before the chapter runs and before any weights are loaded, a reader's model it cannot use
    (the chapter's ``check_model``).

    Raises
    ------
    replib.models.WrongModelKindError
        "this chapter needs a protein model; <name> is a text model ..." (the protein chapter).
    replib.models.ModelUnavailableError
        For a spec whose kind cannot be read here (the chapter would say the same).
    """
    check = getattr(chapters().get(chapter), "check_model", None)
    for spec in specs if check else ():
        check(spec)


def prepare_chapter(chapter: str, profile: str, seeds, *, progress: bool = True) -> list | None:
    """Run ``chapter``'s preparation (its ``prepare``) for the ``seeds`` a run is about to execute; None for a
    chapter without one. What it makes is a cache the seeds' notebooks read (they make it themselves when it is
    missing), so it changes when the work is done, never the results."""
    prepare = getattr(chapters().get(chapter), "prepare", None)
    return None if prepare is None else list(prepare(profile, list(seeds), progress=progress))


def execution_order(names) -> list[str]:
    """``names`` (book order) in the order a run executes them: each chapter whose artefacts others read (its
    ``readers``) moved just before the first of them, the others in their order. The report keeps the book's
    order."""
    order = list(names)
    for maker, ch in chapters().items():
        first = min((order.index(r) for r in ch.readers if r in order), default=None)
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
        The chapter's name (a key of :func:`chapters`).
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

    @property
    def precision(self) -> str:
        """The precision of the chapter's forward passes (:func:`replib.profiles.chapter_precision`: float32
        unless measured safe in bf16 on this CPU, or ``$REPLIB_PRECISION``); the chapter loads its models with it."""
        return chapter_precision(self.chapter, self.profile)

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

    def __str__(self) -> str:
        """What a reader sees of ``print(cfg)``: the run, then a parameter a line ("—": not set, the default)."""
        models = ", ".join(map(str, self.models)) or "its own"
        part = f", part {self.part.name}" if self.part is not None else ""
        head = f"{self.chapter}: profile {self.profile}, seed {self.seed}, models {models}{part}"
        return "\n".join([head, *(f"  {k} = {format_cell(v)}" for k, v in self.params.items())])

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


def profile_params(chapter: str, profile: str) -> dict:
    """One profile's row of a chapter's table: validated against the chapter's schema, as a plain JSON copy
    (tuples become lists), ``models`` included.

    Raises
    ------
    replib.schema.SchemaError
        ``"<chapter> config (<profile>): <path>: <message>"`` when the table does not follow its schema.
    """
    ch = find_chapter(chapter)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    if profile not in ch.table:
        raise ValueError(f"{chapter} has no configuration for profile {profile!r}")
    params = json.loads(json.dumps(ch.table[profile]))  # data, not code: JSON types only
    validate(params, ch.schema, source=f"{chapter} config ({profile})")
    return params


def chapter_parts(chapter: str, profile: str) -> tuple[Part, ...]:
    """The parts of a chapter in one profile, in order (the last is ``rest``): the ``parts(profile, params)``
    of its declaration on the profile's validated parameters, checked by :func:`replib.parts.check_parts`."""
    ch = find_chapter(chapter)
    return check_parts(chapter, ch.parts(profile, profile_params(chapter, profile)), ch.steps)


def find_part(chapter: str, profile: str, name: str) -> Part:
    """One part of a chapter by name; a ValueError lists the chapter's parts."""
    parts = {p.name: p for p in chapter_parts(chapter, profile)}
    if name not in parts:
        raise ValueError(f"{chapter} has no part {name!r} in profile {profile!r}; parts: {', '.join(parts)}")
    return parts[name]


def chapter_config(
    chapter: str, profile: str | None = None, *, models=None, seed: int = 0, part: str | None = None
) -> ChapterConfig:
    """Build a chapter's :class:`ChapterConfig` from its table.

    Parameters
    ----------
    chapter : str
        A key of :func:`chapters` (the notebook's name).
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
        # the part's models: the profile's models it names; with the reader's models (given), those in the same
        # positions when the reader gave as many as the profile has (a stand-in for each), else all
        if chosen.models is not None and not (given and len(refs) != len(default)):
            refs = tuple(refs[i] for i, spec in enumerate(default) if spec in chosen.models)
        for name, values in chosen.select:  # the part's subsets of the profile's lists
            if name not in params:
                continue  # a named selection the chapter reads with cfg.selected
            unknown = [v for v in values if v not in params[name]]
            if unknown:
                raise ValueError(f"{chapter} part {part}: {name} {unknown} not in the profile's {list(params[name])}")
            if isinstance(params[name], dict):  # a mapping (the manifolds chapter's corpora): keep the chosen keys
                params[name] = {k: v for k, v in params[name].items() if k in values}
            else:
                params[name] = [v for v in params[name] if v in values]
    derive = find_chapter(chapter).derive
    if derive is not None:
        params = derive(params, refs, default=default, given=given)
    return ChapterConfig(chapter, profile, int(seed), refs, Params(params), chosen)
