"""A chapter, declared once: ``CHAPTER = Chapter(...)`` in its module or package of :mod:`replib.methods`, found
by discovery (:func:`replib.config.chapters`) by the runner, the configurations, the rehearsal and the tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Chapter"]


@dataclass(frozen=True)
class Chapter:
    """One chapter, besides its notebook and its claims.

    Attributes
    ----------
    name : str
        Its notebook ``notebooks/<name>.md``, its claims, its report entry.
    papers : tuple of str
        The bibliography keys (``book/references.bib``) of the papers it reproduces.
    table, schema : mapping
        Profile -> that profile's parameters as JSON-like data (``models``: the default model specs, a list), and
        the JSON Schema of one profile's dict (:func:`replib.schema.validate`).
    steps : tuple of str
        Its steps (cells marked ``# step: NAME``); ``parts(profile, params) -> list of Part`` cuts it into parts.
    derive : callable or None
        ``derive(params, models, *, default, given) -> dict``: parameters that depend on the chosen models
        (``default``: the profile's model list; ``given``: whether the reader chose the models).
    prepare : callable or None
        ``prepare(profile, seeds, *, progress) -> list``: a cache made once before a run executes several seeds
        (each seed's notebook makes it when it is missing); returns what it did.
    readers : tuple of str
        The chapters that read an artefact it makes: a run executes it before them.
    rehearsal : mapping
        How its ``paper`` profile shrinks for the rehearsal (:mod:`replib.rehearsal`): ``scale``, the parameters
        that are sample sizes (an integer n becomes ceil(fraction x n); a mapping of corpora scales each
        corpus' size; ``"run.steps"`` reaches into a nested mapping); ``set``, the parameters replaced because
        the data mirror lacks what the profile reads; ``whole``, name -> ``count(params)``: the count, from the
        data layer, that a size of ``None`` (the whole data set) stands for; ``sizes``, a function
        ``profile -> sizes`` that other code reads the sizes through (the training runs'), scaled alike, in its
        ``readers``' rehearsals too; ``least``, name -> the smallest size the chapter's steps accept (served when
        the share gives fewer).
    takes_models : bool
        False for a chapter that trains its own models (``--model`` does not apply).
    check_model : callable or None
        ``check_model(spec)`` refuses a reader's model the chapter cannot use, before any weights are loaded.
    """

    name: str
    papers: tuple[str, ...]
    table: Mapping
    schema: Mapping
    steps: tuple[str, ...]
    parts: Callable
    derive: Callable | None = None
    prepare: Callable | None = None
    readers: tuple[str, ...] = ()
    rehearsal: Mapping = field(default_factory=lambda: {"scale": ()})
    takes_models: bool = True
    check_model: Callable | None = None
