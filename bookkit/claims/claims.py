"""Claims files: what each chapter asserts (``notebooks/<chapter>.claims.yml``), read and validated.

A claims file lists, per claim, the paper's value with its source, and per profile one check: a ``tolerance``
around the paper's value, a ``property`` that would fail if the science broke, or ``unverified`` with the
reason (see CONTRIBUTING.md). It is read in three steps, each error naming the file and the line:

1. safely (:func:`bookkit.yamlfile.load_yaml`: a size cap, bounded alias expansion, no duplicate keys);
2. against the JSON Schema ``bookkit/claims/claims.schema.json`` (:func:`replib.schema.validate`), the one statement
   of the file's structure;
3. the rules a schema cannot state: the ``chapter`` field names the file's chapter, numbers are finite and
   tolerances not negative, references to the papers' numbers resolve (and an inline value agrees), families
   expand, every claim has a check per profile and a key of its own, an ``expected_failure`` is on a real
   check, a tolerance has a numeric paper value, the ``seeds`` rule fits the checks (:mod:`bookkit.claims.seeds`).

The checker itself is :mod:`bookkit.claims.checker`; the names its callers read a file and check it with are
re-exported here.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replib.profiles import PROFILES
from replib.schema import SchemaError, load_schema, validate

from ..yamlfile import YamlDocument, YamlFileError, load_yaml
from .checker import ChapterClaims, Claim, check_chapter, evaluate_claim, split_check
from .findings import FINDINGS_FILE, finding_claims
from .paper_tables import PaperTableError, expand_family, load_paper_tables, printed_tolerance, resolve_ref
from .seeds import rule_problem

__all__ = [
    "CLAIMS_SUFFIX",
    "SCHEMA_PATH",
    "ChapterClaims",
    "Claim",
    "ClaimsFileError",
    "check_chapter",
    "claims_schema",
    "evaluate_claim",
    "load_claims",
]

CLAIMS_SUFFIX = ".claims.yml"
SCHEMA_PATH = Path(__file__).with_name("claims.schema.json")


class ClaimsFileError(ValueError):
    """A claims file that does not follow the schema or its rules; the message names the file and line."""


@functools.cache
def claims_schema() -> dict:
    """The JSON Schema of a claims file (checked to be a valid Draft 2020-12 schema once)."""
    return load_schema(SCHEMA_PATH)


class _File:
    """A parsed claims file and where its parts are, for the messages."""

    def __init__(self, doc: YamlDocument):
        self.doc = doc

    def error(self, where: tuple, message: str) -> ClaimsFileError:
        return ClaimsFileError(f"{self.doc.at(where)}: {message}")

    def number(self, where: tuple, v: Any, what: str) -> float | int:
        """A finite number: ints and floats as they are, numeric strings in any spelling (PyYAML reads
        ``1e-6`` as the *string* "1e-6"); anything else is an error at ``where``."""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out = v
        elif isinstance(v, str):
            try:
                out = float(v.strip())
            except ValueError:
                raise self.error(where, f"{what}: expected a number, got {v!r}") from None
        else:
            raise self.error(where, f"{what}: expected a number, got {type(v).__name__} {v!r}")
        if not math.isfinite(out):
            raise self.error(where, f"{what}: expected a finite number, got {v!r}")
        return out


def _read(path: Path) -> _File:
    """Steps 1 and 2: the file read safely and validated against the schema."""
    try:
        doc = load_yaml(path, what="claims file")
    except YamlFileError as exc:
        raise ClaimsFileError(str(exc)) from None
    if not isinstance(doc.data, dict):
        raise ClaimsFileError(f"{doc.at()}: a claims file is a mapping with 'chapter', 'title' and 'claims'")
    try:
        validate(doc.data, claims_schema(), source=str(path), line_of=doc.line_of)
    except SchemaError as exc:
        raise ClaimsFileError(str(exc)) from None
    return _File(doc)


def _numbers_of_check(f: _File, where: tuple, check: dict) -> None:
    """Numbers of one profile's check made finite numbers in place; tolerances not negative; an unverified
    check is never an expected failure."""
    kind, spec, expected = split_check(check)
    if kind == "unverified" and expected is not None:
        raise f.error(where, "an unverified check cannot have an expected failure (it checks nothing)")
    if kind == "tolerance":
        for k in list(spec):
            if k == "printed":  # the marker of a printed-precision tolerance (see _printed)
                continue
            spec[k] = f.number((*where, "tolerance", k), spec[k], f"tolerance.{k}")
            if spec[k] < 0:
                raise f.error((*where, "tolerance", k), f"tolerance.{k} must be >= 0; got {spec[k]}")
    elif kind == "property":
        value = spec.get("value")
        if spec["op"] == "between":
            spec["value"] = [
                f.number((*where, "property", "value", i), v, f"between[{i}]") for i, v in enumerate(value)
            ]
            if spec["value"][0] > spec["value"][1]:
                raise f.error(
                    (*where, "property", "value"),
                    f"between: [{spec['value'][0]}, {spec['value'][1]}] is empty; write the lower bound first",
                )
        elif "value" in spec and spec["op"] not in ("true", "false"):
            spec["value"] = f.number((*where, "property", "value"), value, "property.value")
        if "abs" in spec:
            spec["abs"] = f.number((*where, "property", "abs"), spec["abs"], "property.abs")


def _expand(f: _File, tables: Callable[[], dict]) -> list[tuple[tuple, str, dict]]:
    """``(where, label, claim)`` of the file's claims followed by its families' claims
    (:func:`~bookkit.claims.paper_tables.expand_family`); claims without ``checks`` take ``defaults.checks``."""
    data = f.doc.data
    out = [(("claims", i), f"claim #{i + 1}", c) for i, c in enumerate(data["claims"])]
    for j, family in enumerate(data.get("families") or []):
        where = ("families", j)
        try:
            expanded = expand_family(family, tables(), f"family #{j + 1}")
        except PaperTableError as exc:
            raise f.error(where, str(exc)) from None
        out += [(where, f"family #{j + 1}, claim {c['key']!r}", c) for c in expanded]
    defaults = (data.get("defaults") or {}).get("checks")
    for prof, check in (defaults or {}).items():  # checked where they are written, before they are copied
        _numbers_of_check(f, ("defaults", "checks", prof), check)
    for where, _, c in out:
        if "checks" not in c:
            if defaults is None:
                raise f.error(where, f"claim {c['key']!r}: no checks, and the file has no defaults.checks")
            c["checks"] = copy.deepcopy(defaults)
    return out


def _resolve_paper(f: _File, where: tuple, paper: dict, tables: Callable[[], dict]) -> str | None:
    """Fill ``value`` and ``source`` of a claim's ``paper`` from its ``ref`` (an inline value must agree);
    a numeric string becomes a number."""
    ref = None
    if "ref" in paper:
        try:
            n = resolve_ref(paper["ref"], tables())
        except PaperTableError as exc:
            raise f.error((*where, "paper", "ref"), str(exc)) from None
        if paper.get("value") is not None:
            v = f.number((*where, "paper", "value"), paper["value"], "paper.value")
            if not math.isclose(v, n.value, rel_tol=1e-9, abs_tol=0.0):
                raise f.error(
                    (*where, "paper", "value"), f"paper.value {v!r} disagrees with {n.ref} = {n.value!r} in its table"
                )
        linear_int = n.value.is_integer() and abs(n.value) < 2**53 and n.scale == "linear"
        paper["value"] = int(n.value) if linear_int else n.value
        paper.setdefault("source", n.cited())
        ref = n.ref
    if isinstance(paper.get("value"), str):
        paper["value"] = f.number((*where, "paper", "value"), paper["value"], "paper.value")
    return ref


def _printed(f: _File, where: tuple, check: dict, ref: str | None, tables: Callable[[], dict], what: str) -> None:
    """``tolerance: {printed: true}`` becomes the tolerance the referenced number's printed precision allows
    (:func:`bookkit.claims.paper_tables.printed_tolerance`: half a unit in its last digit, in its table's scale)."""
    spec = check.get("tolerance")
    if not isinstance(spec, dict) or "printed" not in spec:
        return
    if set(spec) != {"printed"} or spec["printed"] is not True:
        raise f.error((*where, "tolerance"), f"{what}: 'printed: true' stands alone in a tolerance")
    if ref is None:
        raise f.error((*where, "tolerance"), f"{what}: a printed-precision tolerance needs paper.ref")
    check["tolerance"] = dict(printed_tolerance(resolve_ref(ref, tables())), printed=True)


def _claim(f: _File, where: tuple, label: str, c: dict, chapter: str, tables: Callable[[], dict]) -> Claim:
    """One claim (from the file or a family), checked against the rules the schema cannot state."""
    what = f"{label} ({c['key']})"
    paper = c["paper"]
    ref = _resolve_paper(f, where, paper, tables)
    checks = c["checks"] = copy.deepcopy(c["checks"])  # YAML aliases share one dict between claims
    for prof in PROFILES:
        if prof not in checks:
            raise f.error(where, f"{what}: no check for profile {prof!r}")
        _printed(f, (*where, "checks", prof), checks[prof], ref, tables, what)
        _numbers_of_check(f, (*where, "checks", prof), checks[prof])
        if "tolerance" in checks[prof] and not isinstance(paper.get("value"), (int, float)):
            raise f.error((*where, "checks", prof), f"{what}: a tolerance check needs a numeric paper value")
    rule = c.get("seeds", "all")
    problem = rule_problem(c["key"], rule, checks)
    if problem:
        raise f.error((*where, "seeds"), problem)
    return Claim(
        chapter=chapter,
        key=c["key"],
        claim=c["claim"],
        paper_value=paper.get("value"),
        source=paper["source"],
        checks=checks,
        seeds=rule,
        ref=ref,
        sanity=bool(c.get("sanity", False)),
        alternative=bool(c.get("alternative", False)),
        **{k: c.get(k) for k in ("deviation", "stand_in", "spread", "tolerance_reason")},
    )


#: claims files read in this process: their inputs' stamp and the result (:func:`load_claims`)
_LOADED: dict[Path, tuple[str, ChapterClaims]] = {}


def _inputs_stamp(path: Path) -> str:
    """The digest of everything a claims file's result depends on with the default tables: the file, the
    project's paper tables and its findings grid (their bytes: a rewrite within the file system's time
    resolution still counts)."""
    root = path.resolve().parent.parent
    h = hashlib.sha256()
    for f in [path, root / FINDINGS_FILE, *sorted((root / "data" / "papers").glob("*"))]:
        h.update(str(f).encode() + b"\0")
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"\1missing")
    return h.hexdigest()


def load_claims(path: str | Path, tables: dict | None = None) -> ChapterClaims:
    """Read and validate a claims file (see the module docstring); references to the papers' numbers are
    resolved in ``tables`` (default: the project's ``data/papers``, two folders above the file; see
    :mod:`bookkit.claims.paper_tables`). With the default tables a file read before in this process, whose
    inputs (:func:`_inputs_stamp`) are unchanged, is not parsed again: a copy of the result is returned.

    Raises
    ------
    ClaimsFileError
        ``"<file>:<line>: <what is wrong>"`` for the first problem found.
    """
    path = Path(path)
    if tables is not None:
        return _load_claims(path, tables)
    key, stamp = path.resolve(), _inputs_stamp(path)
    if key not in _LOADED or _LOADED[key][0] != stamp:
        _LOADED[key] = (stamp, _load_claims(path, None))
    return copy.deepcopy(_LOADED[key][1])


def _load_claims(path: Path, tables: dict | None) -> ChapterClaims:
    f = _read(path)
    data = f.doc.data
    chapter = path.name.removesuffix(CLAIMS_SUFFIX) if path.name.endswith(CLAIMS_SUFFIX) else path.name.split(".")[0]
    if data["chapter"] != chapter:
        raise f.error(
            ("chapter",),
            f"chapter: {data['chapter']!r}, but this is the claims file of {chapter!r}: write chapter: {chapter}",
        )
    timeout = {p: f.number(("timeout", p), s, f"timeout.{p}") for p, s in (data.get("timeout") or {}).items()}
    for p, s in timeout.items():
        if s <= 0:
            raise f.error(("timeout", p), f"timeout.{p} is seconds and must be > 0; got {s}")

    @functools.cache
    def get_tables() -> dict:
        if tables is not None:
            return tables
        try:
            return load_paper_tables(path.resolve().parent.parent)
        except PaperTableError as exc:
            raise ClaimsFileError(f"{path}: {exc}") from None

    claims, seen = [], {}
    for where, label, c in _expand(f, get_tables):
        if c["key"] in seen:
            raise f.error(where, f"{label}: duplicate key {c['key']!r} (also {seen[c['key']]})")
        seen[c["key"]] = label
        claims.append(_claim(f, where, label, c, chapter, get_tables))
    for c in finding_claims(path.resolve().parent.parent, chapter):  # the chapter's cells of the findings grid
        if c.key in seen:
            raise ClaimsFileError(f"{path}: {c.key!r} is both a claim and a cell of {FINDINGS_FILE}")
        claims.append(c)
    return ChapterClaims(chapter=chapter, title=data["title"], path=path, claims=claims, timeout=timeout)
