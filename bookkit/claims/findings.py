"""The papers' findings on every model the book has: ``data/findings.yml`` read into claims, one per cell of a
findings x models grid.

A finding is a paper's stated result in its own words, with the section and the measurable statement tested
here (a property of :mod:`bookkit.claims.checker`). Each model of the book has one or more cells per finding: the
chapter that records the value and its ``record`` key (a cell reads an existing record, so a value checked by a
chapter's own claim needs no second computation), or ``not_applicable`` with the reason. A cell becomes a claim
of its chapter (key ``finding.<paper>.<name>.<model>``) checked in the offline profile (and on any ``--model``
the offline profile runs); the smoke profile's tiny random models and the paper profile's models are not the
book's, so there it is unverified. A cell that does not hold is a finding about that model (status
``does_not_hold``): never a failure of the paper, whose verdict rests on its numbers alone
(:mod:`bookkit.claims.verdicts`), nor of the run.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..yamlfile import load_yaml
from .checker import Claim

__all__ = ["FINDINGS_FILE", "finding_claims", "load_findings"]

#: the findings file, relative to the project root
FINDINGS_FILE = Path("data") / "findings.yml"
_SMOKE = "the smoke profile's tiny random models are not the book's models"
_PAPER = "the paper profile runs the paper's models; the findings grid tests the book's (offline) models"


class FindingsFileError(ValueError):
    """A findings file that does not follow the format."""


@functools.cache
def load_findings(root: Path) -> dict:
    """``{"models": {name: label}, "findings": [...]}`` of ``root/data/findings.yml`` (empty when absent),
    every cell checked: a known model, a chapter, and either a record or a reason."""
    path = Path(root) / FINDINGS_FILE
    if not path.is_file():
        return {"models": {}, "findings": []}
    data = load_yaml(path, what="findings file").data
    models = data.get("models") or {}
    for f in data.get("findings") or []:
        for key in ("id", "section", "words", "statement", "check", "models"):
            if key not in f:
                raise FindingsFileError(f"{path}: finding {f.get('id', '?')!r} has no {key!r}")
        if ":" not in f["id"]:
            raise FindingsFileError(f"{path}: finding id {f['id']!r} is not <paper>:<name>")
        for model, cells in f["models"].items():
            for cell in cells if isinstance(cells, list) else [cells]:
                if model not in models or "chapter" not in cell or ("record" in cell) == ("not_applicable" in cell):
                    raise FindingsFileError(
                        f"{path}: finding {f['id']!r}, model {model!r}: a model of 'models:', a chapter, and either "
                        "a record or not_applicable"
                    )
    return {"models": models, "findings": data.get("findings") or []}


def _cell_claim(f: dict, label: str, slug: str, cell: dict, chapter: str) -> Claim:
    paper, _, name = f["id"].partition(":")
    offline = (
        {"unverified": cell["not_applicable"]}
        if "not_applicable" in cell
        else {"property": dict(cell.get("check") or f["check"])}
    )
    what = f" ({cell['what']})" if cell.get("what") else ""
    words = " ".join(f["words"].split())
    return Claim(
        chapter=chapter,
        key=f"finding.{paper}.{name}.{slug}",
        claim=f"{f['statement']}: on {label}{what}",
        paper_value=None,
        source=f"{f['section']}: " + (words if words.startswith("(") else f"\u201c{words}\u201d"),  # ( : paraphrase
        checks={"smoke": {"unverified": _SMOKE}, "offline": offline, "paper": {"unverified": _PAPER}},
        spread=cell.get("spread"),
        finding=f["id"],
        model=label,
        record=cell.get("record"),
    )


def finding_claims(root: Path, chapter: str) -> list[Claim]:
    """The claims of ``chapter``'s cells in the findings grid of the project at ``root``."""
    data = load_findings(Path(root).resolve())
    out = []
    for f in data["findings"]:
        for model, cells in f["models"].items():
            cells = cells if isinstance(cells, list) else [cells]
            for i, cell in enumerate(cells):
                if cell["chapter"] != chapter:
                    continue
                slug = model.replace("_", "-") + (f".{i + 1}" if len(cells) > 1 else "")
                out.append(_cell_claim(f, data["models"][model], slug, cell, chapter))
    return out
