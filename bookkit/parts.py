"""A chapter's parts (:mod:`replib.parts`) in an output folder: where each part's execution is kept, its state,
and the values it contributes. The merge of those values, the claims that wait for a part and the merge of
several reports are :mod:`bookkit.part_records`; running a part is :mod:`bookkit.runner_parts`.

A part runs as its own execution of the chapter (parameter ``part``) into
``<out>/notebooks/parts/<chapter>--<part>.ipynb``, with a fingerprint manifest beside it
(:mod:`bookkit.reuse`). A part is then

``done``
    its notebook completed and its manifest's fingerprint is the one its inputs give now;
``stale``
    it completed once, but its inputs changed since (code, chapter, parameters, models, packages): rerun it;
``failed``
    its last execution did not complete;
``missing``
    it never ran into this folder.

The chapter's records are the records of its done parts, each contributing only the keys it owns
(:func:`read_part_records`); the report keeps every part's state, the patterns of the keys it owns and the
values it contributed, so that ``python -m replib report merge`` combines the parts of one chapter run on
different machines without the science package.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from replib._io import confined
from replib.record import read_records

from . import reuse
from .execute import completed
from .part_records import owns

__all__ = ["part_notebook", "part_states", "read_part_records", "states_line"]

_ORDER = ("done", "stale", "failed", "missing")


def part_notebook(out_dir: Path, chapter: str, part: str) -> Path:
    """Where the execution of one part is kept."""
    return confined(Path(out_dir) / "notebooks" / "parts", f"{chapter}--{part}.ipynb", what="chapter part")


# ------------------------------------------------------------------------------------------ states
def part_states(out_dir: Path, chapter: str, parts, fingerprint_of: Callable) -> dict[str, dict]:
    """``part name -> {"status", "notebook", "executed", "seconds", "owns"}`` of every part in ``out_dir`` (see
    the module docstring); ``fingerprint_of(part)`` gives the fingerprint its inputs have now."""
    out = {}
    for p in parts:
        nb = part_notebook(out_dir, chapter, p.name)
        manifest = reuse.read_manifest(nb)
        state = {"notebook": str(nb.relative_to(out_dir)), "executed": None, "seconds": None, "owns": list(p.records)}
        if not nb.exists():
            state["status"] = "missing"
        elif manifest is None or not completed(nb):
            state["status"] = "failed"
        else:
            fresh = manifest["fingerprint"] == fingerprint_of(p)["fingerprint"]
            state.update(status="done" if fresh else "stale", executed=manifest.get("executed"))
            state["seconds"] = manifest.get("seconds")
        out[p.name] = state
    return out


def states_line(states: dict[str, dict]) -> str:
    """``3 done (a, b, c); 1 stale (d); 2 missing (e, rest)``: the parts by state."""
    groups: dict[str, list[str]] = {}
    for name, s in states.items():
        groups.setdefault(s["status"], []).append(name)
    return "; ".join(f"{len(groups[k])} {k} ({', '.join(groups[k])})" for k in _ORDER if k in groups)


def read_part_records(out_dir: Path, states: dict[str, dict]) -> None:
    """Put into each done part's state the values it contributes (``records``: the keys it owns)."""
    for state in states.values():
        if state["status"] == "done":
            recorded = read_records(Path(out_dir) / state["notebook"])
            state["records"] = {k: v for k, v in recorded.items() if owns(state["owns"], k)}
