"""Claims: what each chapter asserts, and the checker that compares recorded values to them.

A claims file (``notebooks/<chapter>.claims.yml``) lists, per claim, the paper's value with its
source, and per profile one check: a ``tolerance`` around the paper's value, a ``property`` that
would fail if the science broke, or ``unverified`` with the reason. See CONTRIBUTING.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from replib.profiles import PROFILES

#: every status, in the order reports show them
STATUSES = ("reproduced", "consistent", "sanity", "deviates", "inconclusive", "failed", "unverified")
STATUS_BADGE = {
    "reproduced": "✅ reproduced",
    "consistent": "✅ consistent",
    "sanity": "🔧 sanity",
    "deviates": "⚠️ deviates",
    "inconclusive": "❔ inconclusive",
    "failed": "❌ failed",
    "unverified": "⏸ unverified",
}
#: statuses that do not fail a run (a deviation is a documented failure of the paper's claim, not a pass:
#: it is counted and shown apart)
PASSING = {"reproduced", "consistent", "deviates", "sanity"}
TOP_FIELDS = {"chapter", "title", "timeout", "claims", "families", "defaults"}
CLAIM_FIELDS = {"key", "claim", "paper", "checks", "deviation", "sanity", "stand_in", "seeds"}
PAPER_FIELDS = {"value", "source", "ref"}
CHECK_KINDS = {"tolerance", "property", "unverified"}
TOLERANCE_FIELDS = {"abs", "rel", "log10"}
PROPERTY_FIELDS = {"op", "value", "key", "abs"}
_OPS = {
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
}


class ClaimsFileError(ValueError):
    """A claims file that does not follow the schema."""


class _StrictLoader(yaml.SafeLoader):
    """YAML SafeLoader that refuses a mapping with the same key twice (PyYAML silently keeps the last)."""


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ClaimsFileError(f"duplicate key {key!r} (line {key_node.start_mark.line + 1})")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _number(where: str, v: Any) -> float | int:
    """A finite number from a claims file: ints and floats as they are, numeric strings in any spelling
    (PyYAML reads ``1e-6`` as the *string* "1e-6"); anything else is an error naming where it is."""
    if isinstance(v, bool):
        raise ClaimsFileError(f"{where}: expected a number, got the boolean {v!r}")
    if isinstance(v, (int, float)):
        out = v
    elif isinstance(v, str):
        try:
            out = float(v.strip())
        except ValueError:
            raise ClaimsFileError(f"{where}: expected a number, got {v!r}") from None
    else:
        raise ClaimsFileError(f"{where}: expected a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(out):
        raise ClaimsFileError(f"{where}: expected a finite number, got {v!r}")
    return out


def _unknown(where: str, got, allowed: set) -> None:
    extra = set(got) - allowed
    if extra:
        raise ClaimsFileError(f"{where}: unknown field(s) {sorted(extra)}; allowed: {sorted(allowed)}")


@dataclass
class Claim:
    chapter: str
    key: str
    claim: str
    paper_value: Any
    source: str
    checks: dict
    deviation: str | None = None
    sanity: bool = False  # holds by construction (a count fixed by the data, an invariance): never a reproduction
    stand_in: str | None = None  # the paper's value met by a stand-in experiment: at best consistent, never reproduced
    seeds: str = "all"  # how a run over several seeds is combined (bookkit.seeds): all, worst or mean
    ref: str | None = None  # "<paper>:<id>" of the paper's number in data/papers (bookkit.paper_tables)


@dataclass
class ChapterClaims:
    chapter: str
    title: str
    path: Path
    claims: list[Claim]
    timeout: dict = field(default_factory=dict)
    error: str | None = None  # the loader's error when the claims file is malformed (the chapter fails alone)

    def timeout_for(self, profile: str, default: int = 1800) -> int:
        return int(self.timeout.get(profile, default))


@dataclass
class ClaimResult:
    chapter: str
    key: str
    claim: str
    profile: str
    paper_value: Any
    source: str
    value: Any
    check: str
    status: str
    detail: str
    deviation: str | None = None
    sanity: bool = False
    stand_in: str | None = None
    ref: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


_CHECK_FAILED = "check failed: "


def _split_check(check: dict) -> tuple[str, Any, str | None]:
    """(kind, spec, expected_failure reason or None) of one profile's check."""
    expected = check.get("expected_failure")
    kind, spec = next((k, v) for k, v in check.items() if k != "expected_failure")
    return kind, spec, expected


def _validate_check(where: str, check: Any) -> None:
    """Validate one profile's check in place (numeric strings become numbers)."""
    if not isinstance(check, dict) or len([k for k in check if k != "expected_failure"]) != 1:
        raise ClaimsFileError(f"{where}: a check is a mapping with exactly one of tolerance/property/unverified")
    _unknown(where, check, CHECK_KINDS | {"expected_failure"})
    kind, spec, expected = _split_check(check)
    if expected is not None:
        if not isinstance(expected, str) or not expected.strip():
            raise ClaimsFileError(f"{where}: 'expected_failure' needs the reason as text")
        if kind == "unverified":
            raise ClaimsFileError(f"{where}: an unverified check cannot have an expected failure")
    if kind == "unverified":
        if not isinstance(spec, str) or not spec.strip():
            raise ClaimsFileError(f"{where}: 'unverified' needs the reason as text")
    elif kind == "tolerance":
        if not isinstance(spec, dict) or not set(spec) <= TOLERANCE_FIELDS or not spec:
            raise ClaimsFileError(f"{where}: tolerance takes abs, rel and/or log10")
        for k in list(spec):
            spec[k] = _number(f"{where} tolerance.{k}", spec[k])
            if spec[k] < 0:
                raise ClaimsFileError(f"{where}: tolerance.{k} must be >= 0; got {spec[k]}")
    elif kind == "property":
        op = spec.get("op") if isinstance(spec, dict) else None
        if op not in (*_OPS, "between", "close", "true", "false"):
            raise ClaimsFileError(f"{where}: property op must be one of lt le gt ge eq ne between close true false")
        _unknown(f"{where} property", spec, PROPERTY_FIELDS)
        if op in _OPS and ("value" in spec) == ("key" in spec):
            raise ClaimsFileError(f"{where}: property op {op!r} needs exactly one of value/key")
        if op == "between" and not (isinstance(spec.get("value"), list) and len(spec["value"]) == 2):
            raise ClaimsFileError(f"{where}: between needs value: [lo, hi]")
        if op == "close" and ("abs" not in spec or ("key" not in spec and "value" not in spec)):
            raise ClaimsFileError(f"{where}: close needs abs and a key or value")
        if "key" in spec and not (isinstance(spec["key"], str) and spec["key"]):
            raise ClaimsFileError(f"{where}: property key must name a recorded key")
        if op == "between":
            spec["value"] = [_number(f"{where} between[{i}]", v) for i, v in enumerate(spec["value"])]
        elif "value" in spec and op not in ("true", "false"):
            spec["value"] = _number(f"{where} property.value", spec["value"])
        if "abs" in spec:
            spec["abs"] = _number(f"{where} property.abs", spec["abs"])
    else:
        raise ClaimsFileError(f"{where}: unknown check kind {kind!r}")


def _expand(doc: dict, path: Path, tables) -> list:
    """The file's claims followed by its families' claims (:func:`~bookkit.paper_tables.expand_family`);
    claims and families without ``checks`` take ``defaults.checks``."""
    from .paper_tables import PaperTableError, expand_family

    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict) or set(defaults) - {"checks"}:
        raise ClaimsFileError(
            f"{path}: 'defaults' holds only 'checks' (per-profile checks of claims without their own)"
        )
    families = doc.get("families") or []
    if not isinstance(families, list):
        raise ClaimsFileError(f"{path}: 'families' must be a list of families")
    raw = list(doc["claims"] or [])
    for i, fam in enumerate(families):
        where = f"{path.name} family #{i + 1}"
        if not isinstance(fam, dict):
            raise ClaimsFileError(f"{where}: a family is a mapping with key, claim, rows and checks")
        try:
            raw += expand_family(fam, tables(), where)
        except PaperTableError as exc:
            raise ClaimsFileError(str(exc)) from None
    if "checks" in defaults:
        import copy

        for c in raw:
            if isinstance(c, dict) and "checks" not in c:
                c["checks"] = copy.deepcopy(defaults["checks"])
    return raw


def _resolve_paper(where: str, paper: dict, tables) -> str | None:
    """Fill ``value`` and ``source`` of a claim's ``paper`` from its ``ref``; an inline value must agree."""
    from .paper_tables import PaperTableError, resolve_ref

    if "ref" not in paper:
        return None
    try:
        n = resolve_ref(paper["ref"], tables())
    except PaperTableError as exc:
        raise ClaimsFileError(f"{where}: {exc}") from None
    if paper.get("value") is not None:
        v = _number(f"{where} paper.value", paper["value"])
        if not math.isclose(v, n.value, rel_tol=1e-9, abs_tol=0.0):
            raise ClaimsFileError(f"{where}: paper.value {v!r} disagrees with {n.ref} = {n.value!r} in its paper table")
    paper["value"] = int(n.value) if n.value.is_integer() and abs(n.value) < 2**53 and n.scale == "linear" else n.value
    paper.setdefault("source", n.cited())
    return n.ref


def load_claims(path, tables=None) -> ChapterClaims:
    """Read and validate a claims file; references to the papers' numbers are resolved in ``tables``
    (default: the project's ``data/papers``, two folders above the file; see :mod:`.paper_tables`)."""
    path = Path(path)
    cache = {}

    def get_tables():
        if "t" not in cache:
            from .paper_tables import PaperTableError, load_paper_tables

            try:
                cache["t"] = tables if tables is not None else load_paper_tables(path.resolve().parent.parent)
            except PaperTableError as exc:
                raise ClaimsFileError(str(exc)) from None
        return cache["t"]

    try:
        doc = yaml.load(path.read_text(), Loader=_StrictLoader)
    except ClaimsFileError as exc:
        raise ClaimsFileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ClaimsFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or "claims" not in doc:
        raise ClaimsFileError(f"{path}: needs top-level 'chapter', 'title' and 'claims'")
    _unknown(str(path), doc, TOP_FIELDS)
    if not isinstance(doc["claims"], list):
        raise ClaimsFileError(f"{path}: 'claims' must be a list of claims")
    timeout = doc.get("timeout", {}) or {}
    if not isinstance(timeout, dict):
        raise ClaimsFileError(f"{path}: 'timeout' maps profiles to seconds")
    for prof, sec in timeout.items():
        if prof not in PROFILES:
            raise ClaimsFileError(f"{path}: timeout for unknown profile {prof!r}")
        timeout[prof] = _number(f"{path} timeout.{prof}", sec)
    chapter = doc.get("chapter") or path.name.split(".")[0]
    claims, seen = [], set()
    for i, c in enumerate(_expand(doc, path, get_tables)):
        where = f"{path.name} claim #{i + 1}"
        if not isinstance(c, dict):
            raise ClaimsFileError(f"{where}: a claim is a mapping with key, claim, paper and checks; got {c!r}")
        for req in ("key", "claim", "paper", "checks"):
            if req not in c:
                raise ClaimsFileError(f"{where}: missing {req!r}")
        _unknown(f"{where} ({c['key']})", c, CLAIM_FIELDS)
        if not isinstance(c["key"], str) or not c["key"]:
            raise ClaimsFileError(f"{where}: key must be a non-empty string")
        if not isinstance(c.get("checks"), dict):
            raise ClaimsFileError(f"{where} ({c['key']}): checks maps each profile to one check")
        if not isinstance(c.get("paper") or {}, dict):
            raise ClaimsFileError(f"{where} ({c['key']}): paper is a mapping with value and source")
        _unknown(f"{where} ({c['key']}) paper", c.get("paper") or {}, PAPER_FIELDS)
        if "sanity" in c and not isinstance(c["sanity"], bool):
            raise ClaimsFileError(f"{where} ({c['key']}): sanity is true or false")
        if "stand_in" in c and not (isinstance(c["stand_in"], str) and c["stand_in"].strip()):
            raise ClaimsFileError(f"{where} ({c['key']}): stand_in says what stands in for the paper's experiment")
        if c["key"] in seen:
            raise ClaimsFileError(f"{where}: duplicate key {c['key']!r}")
        seen.add(c["key"])
        paper = c["paper"] or {}
        ref = _resolve_paper(f"{where} ({c['key']})", paper, get_tables)
        if "source" not in paper:
            raise ClaimsFileError(f"{where}: paper needs a 'source' (table/figure/page)")
        if isinstance(paper.get("value"), str):
            paper["value"] = _number(f"{where} paper.value", paper["value"])
        checks = c["checks"] or {}
        missing = [p for p in PROFILES if p not in checks]
        if missing:
            raise ClaimsFileError(f"{where} ({c['key']}): no check for profile(s) {missing}")
        for prof, chk in checks.items():
            if prof not in PROFILES:
                raise ClaimsFileError(f"{where}: unknown profile {prof!r}")
            _validate_check(f"{where} [{prof}]", chk)
            if "tolerance" in chk and not isinstance(paper.get("value"), (int, float)):
                raise ClaimsFileError(f"{where} [{prof}]: a tolerance check needs a numeric paper value")
        rule = c.get("seeds", "all")
        from .seeds import rule_problem  # seeds imports this module

        problem = rule_problem(c["key"], rule, checks)
        if problem:
            raise ClaimsFileError(f"{where}: {problem}")
        claims.append(
            Claim(
                chapter=chapter,
                key=c["key"],
                claim=c["claim"],
                paper_value=paper.get("value"),
                source=paper["source"],
                checks=checks,
                deviation=c.get("deviation"),
                sanity=bool(c.get("sanity", False)),
                stand_in=c.get("stand_in"),
                seeds=rule,
                ref=ref,
            )
        )
    return ChapterClaims(chapter=chapter, title=doc.get("title", chapter), path=path, claims=claims, timeout=timeout)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_finite_number(v: Any) -> bool:
    return _is_number(v) and math.isfinite(v)


def _describe(check: dict) -> str:
    kind, spec, _ = _split_check(check)
    if kind == "unverified":
        return "unverified"
    if kind == "tolerance":
        return "tolerance " + ", ".join(f"{k}={v}" for k, v in spec.items())
    rhs = spec.get("key", spec.get("value"))
    extra = f" ±{spec['abs']}" if "abs" in spec else ""
    return f"{spec['op']} {rhs}{extra}" if spec["op"] not in ("true", "false") else f"is {spec['op']}"


def evaluate_claim(
    claim: Claim, profile: str, records: dict[str, Any], notebook_error: str | None = None
) -> ClaimResult:
    """Check one claim in one profile against the recorded values of its executed notebook."""
    check = claim.checks[profile]
    kind, spec, expected = _split_check(check)
    value = records.get(claim.key)

    def result(status: str, detail: str) -> ClaimResult:
        deviation = claim.deviation
        if expected is not None:  # strict expected failure: the check itself still runs
            if status == "failed" and detail.startswith(_CHECK_FAILED):
                status, deviation = "deviates", expected
                detail = "does not hold here, as documented: " + detail[len(_CHECK_FAILED) :]
            elif status in PASSING:
                status = "failed"
                detail = (
                    f"expected to fail in this profile ({expected}) but holds now ({detail}): "
                    "update the claims file and the chapter's deviations"
                )
        if claim.sanity and status in ("reproduced", "consistent"):
            status = "sanity"  # holds by construction: shown apart, never counted as a reproduction
        elif claim.stand_in and status == "reproduced":
            status = "consistent"  # a stand-in experiment agreeing with the paper's number is not a reproduction
            detail += f" (stand-in: {claim.stand_in})"
        return ClaimResult(
            chapter=claim.chapter,
            key=claim.key,
            claim=claim.claim,
            profile=profile,
            paper_value=claim.paper_value,
            source=claim.source,
            value=value,
            check=_describe(check) + (" (expected to fail)" if expected else ""),
            status=status,
            detail=detail,
            deviation=deviation,
            sanity=claim.sanity,
            stand_in=claim.stand_in,
            ref=claim.ref,
        )

    if kind == "unverified":
        return result("unverified", spec)
    if notebook_error:
        return result("failed", f"notebook did not complete: {notebook_error}")
    if claim.key not in records:
        return result("failed", "value not recorded (missing key: the cell did not run)")
    if kind == "tolerance":
        if not _is_number(value) or not math.isfinite(value):
            return result("failed", f"recorded value {value!r} is not a finite number")
        ref = float(claim.paper_value)
        problems = []
        if "abs" in spec and not abs(value - ref) <= spec["abs"]:
            problems.append(f"|{value:.6g} - {ref:.6g}| = {abs(value - ref):.3g} > {spec['abs']}")
        if "rel" in spec and not abs(value - ref) <= spec["rel"] * abs(ref):
            problems.append(f"relative error {abs(value - ref) / abs(ref):.3g} > {spec['rel']}")
        if "log10" in spec:
            if value <= 0 or ref <= 0:
                problems.append("log10 tolerance needs positive values")
            elif not abs(math.log10(value) - math.log10(ref)) <= spec["log10"]:
                problems.append(f"|log10 {value:.3g} - log10 {ref:.3g}| > {spec['log10']}")
        if problems:
            return result("failed", _CHECK_FAILED + "; ".join(problems))
        return result("reproduced", f"within {_describe(check)[10:]} of the paper's {ref:g}")
    # property: fails closed. A number is compared only with a finite number; NaN, ±inf, None, strings and
    # lists never satisfy lt/le/gt/ge/eq/ne/between/close (not even `ne`).
    op = spec["op"]
    if op in ("true", "false"):
        ok = isinstance(value, bool) and value is (op == "true")
        detail = f"value is {value!r}"
    else:
        if "key" in spec:
            if spec["key"] not in records:
                return result("failed", f"comparison key {spec['key']!r} not recorded")
            rhs = records[spec["key"]]
        else:
            rhs = spec["value"]
        if not _is_finite_number(value):
            return result("failed", _CHECK_FAILED + f"recorded value {value!r} of {claim.key!r} is not a finite number")
        if op == "between":
            lo, hi = rhs
            ok = lo <= value <= hi
        else:
            if not _is_finite_number(rhs):
                return result(
                    "failed",
                    _CHECK_FAILED
                    + f"comparison value {rhs!r}"
                    + (f" (key {spec['key']!r})" if "key" in spec else "")
                    + " is not a finite number",
                )
            ok = abs(value - rhs) <= spec["abs"] if op == "close" else bool(_OPS[op](value, rhs))
        detail = f"{value!r} {op} {rhs!r}" + (f" (±{spec['abs']})" if op == "close" else "")
    if not ok:
        return result("failed", _CHECK_FAILED + "property does not hold: " + detail)
    return result("deviates" if claim.deviation else "consistent", detail)


def check_chapter(
    claims: ChapterClaims, profile: str, records: dict[str, Any], notebook_error: str | None = None
) -> list[ClaimResult]:
    """Evaluate every claim of a chapter."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    return [evaluate_claim(c, profile, records, notebook_error) for c in claims.claims]


def summarize(claims: list[dict], chapters: list[dict]) -> dict:
    """Counts per status, and the run's verdict: ``failed`` counts failed and inconclusive claims plus every
    chapter that did not complete without a failed claim of its own; ``chapter_failures`` the chapters."""
    counts = {st: sum(1 for c in claims if c["status"] == st) for st in STATUSES}
    bad = [c["chapter"] for c in chapters if c.get("status") != "ok"]
    silent = sum(1 for ch in bad if not any(c["chapter"] == ch and c["status"] == "failed" for c in claims))
    return {**counts, "failed": counts["failed"] + counts["inconclusive"] + silent, "chapter_failures": len(bad)}


def closing_line(summary: dict) -> str:
    """The runner's last line: every status separately (a deviation is never called a pass)."""
    return (
        ", ".join(f"{summary.get(st, 0)} {st}" for st in STATUSES if st != "failed") + f"; {summary['failed']} failing"
    )
