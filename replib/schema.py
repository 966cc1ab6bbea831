"""One validator for the project's structured inputs (chapter configurations, claims files): JSON Schema
(Draft 2020-12) through the ``jsonschema`` package, with errors that name the source, the place in the
document and, where the caller knows it, the line.

The book kit validates claims files with it (``bookkit.claims.claims``); the science package validates chapter
configurations (:mod:`replib.config`). Keeping one validator means one error format and one set of rules for
what "well formed" means.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema

__all__ = ["SchemaError", "closed_object", "load_schema", "validate"]


class SchemaError(ValueError):
    """A document that does not follow its schema; the message names the source, the path and the line."""


def closed_object(properties: dict) -> dict:
    """The JSON Schema of an object with exactly these ``properties``: every one required, no other allowed."""
    return {"type": "object", "additionalProperties": False, "required": list(properties), "properties": properties}


def load_schema(path: str | Path) -> dict:
    """Read a JSON Schema file and check that it is itself a valid schema."""
    schema = json.loads(Path(path).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def validate(
    instance: Any,
    schema: Mapping,
    *,
    source: str,
    line_of: Callable[[tuple], int | None] | None = None,
) -> None:
    """Validate ``instance`` against ``schema``; raise :class:`SchemaError` on the first problem.

    Parameters
    ----------
    instance : Any
        The parsed document (dicts, lists, scalars).
    schema : Mapping
        A JSON Schema (Draft 2020-12).
    source : str
        What the document is, for the message: a file name, or ``"<chapter> config (profile)"``.
    line_of : callable, optional
        Maps a path inside the document (a tuple of keys and indices) to its line number, when the caller
        parsed the document with positions (YAML); the error then says ``file:line``.

    Raises
    ------
    SchemaError
        ``"<source>:<line>: <path>: <message>"``; the most specific error first (jsonschema's
        ``best_match``).
    """
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is None:
        return
    path = tuple(error.absolute_path)
    line = line_of(path) if line_of is not None else None
    at = f"{source}:{line}" if line is not None else source
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "(top level)"
    raise SchemaError(f"{at}: {where}: {error.message}")
