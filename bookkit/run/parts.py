"""A chapter's parts (:mod:`replib.parts`) in an output folder: where each part's execution is kept, its state,
and the values it contributes. The merge of those values, the claims that wait for a part and the merge of
several reports are :mod:`bookkit.run.part_records`; running a part is :mod:`bookkit.run.runner`.

A part runs as its own execution of the chapter (parameter ``part``) into
``<out>/notebooks/parts/<chapter>--<part>.ipynb``, with a fingerprint manifest beside it
(:mod:`bookkit.run.reuse`). A part is then

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

import re
from collections.abc import Callable
from pathlib import Path

from replib._io import confined
from replib._optional import optional_import
from replib.record import read_records

from . import reuse
from .execute import completed
from .part_records import owns

__all__ = [
    "STEP_MARK",
    "cell_steps",
    "part_notebook",
    "part_states",
    "read_part_records",
    "select_cells",
    "states_line",
]

_ipython = optional_import("IPython")


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
    groups = {k: [n for n, s in states.items() if s["status"] == k] for k in ("done", "stale", "failed", "missing")}
    return "; ".join(f"{len(names)} {k} ({', '.join(names)})" for k, names in groups.items() if names)


def read_part_records(out_dir: Path, states: dict[str, dict]) -> None:
    """Put into each done part's state the values it contributes (``records``: the keys it owns)."""
    for state in states.values():
        if state["status"] == "done":
            recorded = read_records(Path(out_dir) / state["notebook"])
            state["records"] = {k: v for k, v in recorded.items() if owns(state["owns"], k)}


#: a code cell's first line ``# step: NAME[, NAME ...]`` names the steps it belongs to
STEP_MARK = re.compile(r"^#\s*step:\s*([A-Za-z0-9_.,\s-]+?)\s*$")


def cell_steps(code: str) -> tuple[str, ...] | None:
    """The steps a code cell belongs to (its first non-blank line ``# step: a, b``), or None (every part)."""
    for line in code.splitlines():
        if line.strip():
            m = STEP_MARK.match(line.strip())
            return tuple(s.strip() for s in m.group(1).split(",") if s.strip()) if m else None
    return None


class _SkipOtherSteps:
    """An IPython input transformer: a cell marked with steps the part does not run becomes one printed line."""

    def __init__(self, part):
        self.part = part

    def __call__(self, lines: list[str]) -> list[str]:
        steps = cell_steps("".join(lines))
        if steps is None or any(self.part.runs(s) for s in steps):
            return lines
        note = f"step {', '.join(steps)}: not in part {self.part.name}, skipped"
        return [f"print({note!r})\n"]


def select_cells(part, shell=None) -> bool:
    """Run only the cells of ``part`` from here on in this IPython kernel: a cell whose first line is
    ``# step: NAME`` runs when the part runs step ``NAME`` and is skipped (one printed line) otherwise. With
    ``part=None`` (the whole chapter) every cell runs. Outside IPython nothing is skipped.

    Returns True when a selection is active."""
    shell = shell if shell is not None else (_ipython.get_ipython() if _ipython is not None else None)
    if shell is None:
        return False
    post = shell.input_transformers_post
    post[:] = [t for t in post if not isinstance(t, _SkipOtherSteps)]
    if part is None:
        return False
    post.append(_SkipOtherSteps(part))
    return True
