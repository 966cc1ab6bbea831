"""The paper profile rehearsed at paper scale on a CPU, a chapter as a whole (issue 39, item 4).

A chapter's rehearsal (part :data:`ALL`) runs each of its parts (:mod:`replib.parts`) in turn in one process
with stand-ins of the profile's sizes: full-size random-weight architectures (:mod:`replib.models.fullsize`)
and data of the profile's sizes (:mod:`.standins`). A GPU step's cost is its floating-point work, counted
(:func:`.core.count_flops`, attention included) over every batch the chapter forms on the GPU, padding
included (:func:`.core.padded_flops`), or on one batch shape where every batch has it; a CPU step (the
statistics, alignments, k-means) is measured on at least a tenth of its items (:data:`.core.MIN_MEASURED`) and
extrapolated with its fitted exponent; the streamed statistics run fed with vectors of the models' full width
(:func:`.core.feeder`), so that memory and streaming are proven at the profile's size. Each part returns its
costs and the records it computes (property claims are evaluated on them; values bound to the papers' models
never are); a chapter's T4 and L4 estimates are its costs' (:class:`.core.Cost`).

``python -m replib.rehearsal run CHAPTER all`` rehearses a chapter, ``... run CHAPTER PART`` one part (the
kit's ``python -m replib rehearsal`` runs them in child processes and measures their peak memory and cache:
:mod:`bookkit.rehearsal`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from ..config import chapter_parts, find_chapter, find_part
from .core import Cost

__all__ = ["ALL", "Context", "rehearsal_of", "rehearse_chapter", "rehearse_part", "selection", "summarize"]

#: the part name of a whole chapter's rehearsal: every part in one process, one session's peak memory
ALL = "all"


def rehearsal_of(chapter: str):
    """The function that rehearses one part of ``chapter``: its declaration's ``rehearse`` (``"module:function"``, a
    module of this package: :class:`replib.chapter.Chapter`); a ValueError for a chapter that declares none."""
    target = find_chapter(chapter).rehearse
    if target is None:
        raise ValueError(f"{chapter} declares no rehearsal")
    module, name = target.split(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


@dataclass
class Context:
    """Where and how a part is rehearsed.

    Attributes
    ----------
    workdir : Path
        The chapter's rehearsal folder (its parts share it: streams' states, alignments, bases).
    seed : int
    scale : float
        Multiplies the sizes of the forward measurements (1.0: about a minute of CPU for the smaller).
    max_items : int or None
        Caps the items of the statistics (tests); None: as many as ``stats_flops`` allows.
    progress : bool
    stats_flops : float
        Accumulator work the streamed statistics of one part may do here (floating-point operations: rows x
        layers x 2 d² for the covariances); 10¹² is about a minute of one core. The items are all of the
        paper's when they fit, else the first that fit, and the rest is extrapolated linearly.
    """

    workdir: Path
    seed: int = 0
    scale: float = 1.0
    max_items: int | None = None
    progress: bool = False
    stats_flops: float = 1e12


def summarize(out: dict) -> dict:
    """A part's totals from its costs (:class:`~replib.rehearsal.core.Cost`, or their dicts): the T4 estimate
    (each step's :attr:`~replib.rehearsal.core.Cost.t4_seconds`), the share of the paper's work that ran here,
    and CPU seconds.

    The share weights each step by its CPU seconds *here* at the paper's size (measured, or extrapolated): the
    one unit every step has, forward passes included. A part whose forward passes ran on 5 of 570,000 proteins
    and whose statistics ran on all of them has a small share, because the forward passes are its work."""
    costs = [c if isinstance(c, Cost) else Cost.from_dict(c) for c in out["costs"]]
    work = [max(c.cpu_full, 0.0) for c in costs]
    total = sum(work)
    fraction = sum(w * c.measured_fraction for w, c in zip(work, costs)) / total if total > 0 else 1.0
    return {
        "t4_hours_estimate": sum(c.t4_seconds for c in costs) / 3600.0,  # each step on the GPU or the CPU
        "l4_hours_estimate": sum(c.l4_seconds for c in costs) / 3600.0,
        "extrapolation": max((c.extrapolation for c in costs), default=1.0),
        "fraction_of_paper": fraction,
        "gpu_flops_paper": sum(c.flops_full or 0.0 for c in costs if c.on_gpu),
        "cpu_seconds_paper": sum(c.cpu_full for c in costs if not c.on_gpu),
        "cpu_seconds_here": sum(sum(c.cpu) for c in costs),
    }


def selection(part) -> list:
    """A part's selections as JSON (``[[name, [values...]], ...]``): which layers, tasks or step range it measured."""
    return [[name, list(values)] for name, values in part.select]


def rehearse_chapter(chapter: str, ctx: Context) -> dict:
    """Rehearse a whole chapter (part :data:`ALL`): each of its parts in turn in this process (a later part
    reads what an earlier one left in ``ctx.workdir``, as the chapter's steps do), their costs together."""
    outs = [rehearse_part(chapter, p.name, ctx) for p in chapter_parts(chapter, "paper")]
    models = list(dict.fromkeys(m for o in outs for m in o["models"]))
    out = {
        "chapter": chapter, "part": ALL, "model": "; ".join(dict.fromkeys(o["model"] for o in outs)),
        "data": ", ".join(dict.fromkeys(d for o in outs for d in o["data"].split(", ") if d != "-")) or "-",
        "costs": [c for o in outs for c in o["costs"]], "models": models, "parts": [o["part"] for o in outs],
        "notes": [n for o in outs for n in o.get("notes", [])],
    }  # fmt: skip
    out.update(summarize(out))
    return out


def rehearse_part(chapter: str, part: str, ctx: Context) -> dict:
    """Rehearse one part (see the module docstring): its costs, records, notes and totals (:func:`summarize`);
    part :data:`ALL`: the whole chapter (:func:`rehearse_chapter`)."""
    rehearse = rehearsal_of(chapter)
    if part == ALL:
        return rehearse_chapter(chapter, ctx)
    p = find_part(chapter, "paper", part)
    Path(ctx.workdir).mkdir(parents=True, exist_ok=True)
    out = rehearse(p, ctx)
    out.update(summarize(out))
    shards = list(p.shards) if p.shards else None  # which range a part of a split model measured
    data = out.pop("data", None) or ", ".join(p.data) or "-"  # a part may name the stand-in it ran on
    out.update(chapter=chapter, part=part, data=data, budget=vars(p.budget),
               models=list(p.models or ()), shards=shards, select=selection(p))  # fmt: skip
    out["costs"] = [c.as_dict() for c in out["costs"]]
    return out
