"""The paper profile in parts: each chapter's work cut into named parts that each fit one Colab T4 session.

A :class:`Part` is data: its name and chapter, the models it loads, its fraction of the
chapter's paper work, its declared :class:`Budget` (at most :data:`COLAB_T4`: 3 T4-hours, 12 GB peak memory,
10 GB of cache; the rehearsal measures each part against it) and what it selects of the chapter's work:

* ``models``: the profile's models it runs (the chapter's ``cfg.models`` are narrowed to them);
* ``steps``: the chapter's steps it runs. A code cell whose first line is ``# step: NAME`` runs only in the
  parts that run step ``NAME`` (:func:`bookkit.run.parts.select_cells`); unmarked cells run in every part;
* ``select``: parameter subsets (``{"glue_tasks": ["cola", "sst2"]}``) and other named selections read with
  ``cfg.selected(name, values)`` (the training chapter's runs);
* ``shards``: ``(k, n)``, the ``k``-th of ``n`` equal ranges of a sharded job's shards (alignment pairs,
  sequences to embed); its shards are computed and cached, nothing is assembled;
* ``records``: the record keys it owns (``fnmatch`` patterns). A part's notebook may record more (a table
  over the part's models only); only the keys it owns count, so that no part ever contributes a value
  computed on a subset of what the key means.

Every chapter ends with a part ``rest`` that runs every step with every model and owns every key: the whole
chapter, cheap once the other parts filled the caches it reads (``needs``). A notebook run with ``part=None``
is the same work (:func:`replib.config.chapter_config`). The parts of each chapter are defined in its config
module (``parts(profile, params)``, beside ``TABLE``) and read with :func:`replib.config.chapter_parts`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "COLAB_T4",
    "REST",
    "Budget",
    "Part",
    "check_parts",
    "model_parts",
    "rest_part",
]

#: part and chapter names travel as file names, artifact names and command arguments
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: the name of every chapter's last part: the whole chapter, from the other parts' caches
REST = "rest"


@dataclass(frozen=True)
class Budget:
    """What a part may use: GPU time in T4-hours, peak resident memory and cache on disk in GB (10⁹ bytes)."""

    t4_hours: float
    peak_rss_gb: float
    cache_gb: float

    def within(self, limit: Budget) -> list[str]:
        """What exceeds ``limit`` (empty when nothing does)."""
        return [
            f"{name} {getattr(self, name):g} > {getattr(limit, name):g}"
            for name in ("t4_hours", "peak_rss_gb", "cache_gb")
            if not 0 <= getattr(self, name) <= getattr(limit, name)
        ]


#: one Colab session with a T4 GPU: at most 3 hours of work per part (free sessions end after a few hours and
#: when idle), 12 GB of RAM (the standard runtime has 12.7 GB) and 10 GB of cache (Drive's free 15 GB, with room
#: for the weights)
COLAB_T4 = Budget(t4_hours=3.0, peak_rss_gb=12.0, cache_gb=10.0)


@dataclass(frozen=True)
class Part:
    """One part of a chapter's work (see the module docstring).

    Attributes
    ----------
    name, chapter : str
    fraction : float
        Its share of the chapter's paper work (0 < fraction <= 1; a chapter's parts sum to 1).
    budget : Budget
        Declared for the paper profile, within :data:`COLAB_T4`.
    models : tuple of str or None
        The profile's model specs it runs; None: every model of the chapter.
    steps : tuple of str or None
        The chapter's steps it runs; None: every step.
    select : tuple of (name, tuple of values)
        Parameter subsets and named selections (see :meth:`selected`).
    shards : (k, n) or None
        The k-th of n equal ranges of the chapter's sharded job.
    records : tuple of str
        ``fnmatch`` patterns of the record keys it owns.
    needs : tuple of str
        Parts whose cached results it reads (it computes them itself when they are missing: slower).
    """

    name: str
    chapter: str
    fraction: float
    budget: Budget
    models: tuple[str, ...] | None = None
    steps: tuple[str, ...] | None = None
    select: tuple[tuple[str, tuple], ...] = ()
    shards: tuple[int, int] | None = None
    records: tuple[str, ...] = ("*",)
    needs: tuple[str, ...] = ()

    def __post_init__(self):
        problems = []
        for what in (self.name, self.chapter):
            if not isinstance(what, str) or not NAME.match(what):
                problems.append(f"name {what!r} must match {NAME.pattern}")
        if not (isinstance(self.fraction, (int, float)) and 0 < self.fraction <= 1):
            problems.append(f"fraction must be in (0, 1], got {self.fraction!r}")
        problems += self.budget.within(COLAB_T4)
        if self.shards is not None:
            k, n = self.shards
            if not (isinstance(k, int) and isinstance(n, int) and 0 <= k < n):
                problems.append(f"shards must be (k, n) with 0 <= k < n, got {self.shards!r}")
        if problems:
            raise ValueError(f"part {self.chapter}/{self.name}: " + "; ".join(problems))

    def runs(self, step: str) -> bool:
        """True when this part runs the chapter's step ``step``."""
        return self.steps is None or step in self.steps

    def selected(self, name: str, values: Iterable) -> list:
        """``values`` narrowed to this part's selection ``name`` (all of them when it selects none), in order."""
        chosen = dict(self.select).get(name)
        values = list(values)
        return values if chosen is None else [v for v in values if v in chosen]


# ------------------------------------------------------------------------------------------ building
def model_parts(
    chapter: str,
    models: Sequence[str],
    labels: dict[str, str],
    *,
    fraction: dict[str, float],
    budget: dict[str, Budget],
    steps: tuple[str, ...],
    records,
) -> list[Part]:
    """One part per model (named by its label): that model only, ``steps``, owning ``records(label)``.

    ``fraction`` and ``budget`` map a model spec to its values (key ``"*"``: every other model)."""
    out = []
    for spec in models:
        label = labels.get(spec, spec)
        out.append(
            Part(
                name=label,
                chapter=chapter,
                fraction=fraction.get(spec, fraction.get("*")),
                budget=budget.get(spec, budget.get("*")),
                models=(spec,),
                steps=steps,
                records=tuple(records(label)),
            )
        )
    return out


def rest_part(chapter: str, others: Sequence[Part], budget: Budget) -> Part:
    """The chapter's last part: every step with every model, owning every key, reading the caches of
    ``others``; its fraction is what the others leave."""
    left = 1.0 - sum(p.fraction for p in others)
    return Part(
        name=REST,
        chapter=chapter,
        fraction=round(max(left, 0.01), 4),
        budget=budget,
        needs=tuple(p.name for p in others),
    )


def check_parts(chapter: str, parts: Sequence[Part], steps: Sequence[str]) -> tuple[Part, ...]:
    """Validate a chapter's parts: names unique, chapter right, steps named and known, fractions summing to 1
    (±0.02), ``needs`` naming parts of the chapter, and a last part ``rest`` that runs everything."""
    parts = tuple(parts)
    names = [p.name for p in parts]
    problems = []
    if len(set(names)) != len(names):
        problems.append(f"part names listed twice: {sorted(n for n in set(names) if names.count(n) > 1)}")
    for p in parts:
        if p.chapter != chapter:
            problems.append(f"{p.name}: chapter {p.chapter!r}")
        if p.steps is None and p.name != REST:
            problems.append(f"{p.name}: a part other than {REST!r} names its steps (() for the unmarked cells only)")
        unknown = sorted(set(p.steps or ()) - set(steps))
        if unknown:
            problems.append(f"{p.name}: unknown steps {unknown} (steps: {list(steps)})")
        if set(p.needs) - set(names):
            problems.append(f"{p.name}: needs unknown parts {sorted(set(p.needs) - set(names))}")
    if not parts or parts[-1].name != REST or parts[-1].steps is not None or parts[-1].models is not None:
        problems.append(f"the last part must be {REST!r}, with every step and every model")
    total = sum(p.fraction for p in parts)
    if abs(total - 1.0) > 0.02:
        problems.append(f"fractions sum to {total:.3f}, not 1")
    if problems:
        raise ValueError(f"{chapter} parts: " + "; ".join(problems))
    return parts
