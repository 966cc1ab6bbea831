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

from ..profiles import PROFILES
STATUSES = ("reproduced", "consistent", "deviates", "failed", "unverified")
PASSING = {"reproduced", "consistent", "deviates"}
_OPS = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


class ClaimsFileError(ValueError):
    """A claims file that does not follow the schema."""


@dataclass
class Claim:
    chapter: str
    key: str
    claim: str
    paper_value: Any
    source: str
    checks: dict
    deviation: str | None = None


@dataclass
class ChapterClaims:
    chapter: str
    title: str
    path: Path
    claims: list[Claim]
    timeout: dict = field(default_factory=dict)

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

    def to_dict(self) -> dict:
        return asdict(self)


_CHECK_FAILED = "check failed: "


def _split_check(check: dict) -> tuple[str, Any, str | None]:
    """(kind, spec, expected_failure reason or None) of one profile's check."""
    expected = check.get("expected_failure")
    kind, spec = next((k, v) for k, v in check.items() if k != "expected_failure")
    return kind, spec, expected


def _validate_check(where: str, check: Any) -> None:
    if not isinstance(check, dict) or len([k for k in check if k != "expected_failure"]) != 1:
        raise ClaimsFileError(f"{where}: a check is a mapping with exactly one of tolerance/property/unverified")
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
        if not isinstance(spec, dict) or not set(spec) <= {"abs", "rel", "log10"} or not spec:
            raise ClaimsFileError(f"{where}: tolerance takes abs, rel and/or log10")
    elif kind == "property":
        op = spec.get("op") if isinstance(spec, dict) else None
        if op not in (*_OPS, "between", "close", "true", "false"):
            raise ClaimsFileError(f"{where}: property op must be one of lt le gt ge eq ne between close true false")
        if op in _OPS and ("value" in spec) == ("key" in spec):
            raise ClaimsFileError(f"{where}: property op {op!r} needs exactly one of value/key")
        if op == "between" and not (isinstance(spec.get("value"), list) and len(spec["value"]) == 2):
            raise ClaimsFileError(f"{where}: between needs value: [lo, hi]")
        if op == "close" and ("abs" not in spec or ("key" not in spec and "value" not in spec)):
            raise ClaimsFileError(f"{where}: close needs abs and a key or value")
    else:
        raise ClaimsFileError(f"{where}: unknown check kind {kind!r}")


def load_claims(path) -> ChapterClaims:
    """Read and validate a claims file."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ClaimsFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or "claims" not in doc:
        raise ClaimsFileError(f"{path}: needs top-level 'chapter', 'title' and 'claims'")
    chapter = doc.get("chapter") or path.name.split(".")[0]
    claims, seen = [], set()
    for i, c in enumerate(doc["claims"] or []):
        where = f"{path.name} claim #{i + 1}"
        for req in ("key", "claim", "paper", "checks"):
            if req not in c:
                raise ClaimsFileError(f"{where}: missing {req!r}")
        if c["key"] in seen:
            raise ClaimsFileError(f"{where}: duplicate key {c['key']!r}")
        seen.add(c["key"])
        paper = c["paper"] or {}
        if "source" not in paper:
            raise ClaimsFileError(f"{where}: paper needs a 'source' (table/figure/page)")
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
        claims.append(Claim(chapter=chapter, key=c["key"], claim=c["claim"], paper_value=paper.get("value"),
                            source=paper["source"], checks=checks, deviation=c.get("deviation")))
    return ChapterClaims(chapter=chapter, title=doc.get("title", chapter), path=path, claims=claims,
                         timeout=doc.get("timeout", {}) or {})


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _describe(check: dict) -> str:
    kind, spec, _ = _split_check(check)
    if kind == "unverified":
        return "unverified"
    if kind == "tolerance":
        return "tolerance " + ", ".join(f"{k}={v}" for k, v in spec.items())
    rhs = spec.get("key", spec.get("value"))
    extra = f" ±{spec['abs']}" if "abs" in spec else ""
    return f"{spec['op']} {rhs}{extra}" if spec["op"] not in ("true", "false") else f"is {spec['op']}"


def evaluate_claim(claim: Claim, profile: str, records: dict[str, Any],
                   notebook_error: str | None = None) -> ClaimResult:
    """Check one claim in one profile against the recorded values of its executed notebook."""
    check = claim.checks[profile]
    kind, spec, expected = _split_check(check)
    value = records.get(claim.key)

    def result(status: str, detail: str) -> ClaimResult:
        deviation = claim.deviation
        if expected is not None:  # strict expected failure: the check itself still runs
            if status == "failed" and detail.startswith(_CHECK_FAILED):
                status, deviation = "deviates", expected
                detail = "does not hold here, as documented: " + detail[len(_CHECK_FAILED):]
            elif status in PASSING:
                status = "failed"
                detail = (f"expected to fail in this profile ({expected}) but holds now ({detail}): "
                          "update the claims file and the chapter's deviations")
        return ClaimResult(chapter=claim.chapter, key=claim.key, claim=claim.claim, profile=profile,
                           paper_value=claim.paper_value, source=claim.source, value=value,
                           check=_describe(check) + (" (expected to fail)" if expected else ""),
                           status=status, detail=detail, deviation=deviation)

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
    # property
    op = spec["op"]
    if op in ("true", "false"):
        ok = value is (op == "true")
        detail = f"value is {value!r}"
    else:
        if "key" in spec:
            if spec["key"] not in records:
                return result("failed", f"comparison key {spec['key']!r} not recorded")
            rhs = records[spec["key"]]
        else:
            rhs = spec["value"]
        if op == "between":
            lo, hi = rhs
            ok = _is_number(value) and lo <= value <= hi
        elif op == "close":
            ok = _is_number(value) and _is_number(rhs) and abs(value - rhs) <= spec["abs"]
        else:
            try:
                ok = bool(_OPS[op](value, rhs))
            except TypeError:
                ok = False
        if _is_number(value) and not math.isfinite(value):
            ok = False
        detail = f"{value!r} {op} {rhs!r}" + (f" (±{spec['abs']})" if op == "close" else "")
    if not ok:
        return result("failed", _CHECK_FAILED + "property does not hold: " + detail)
    return result("deviates" if claim.deviation else "consistent", detail)


def check_chapter(claims: ChapterClaims, profile: str, records: dict[str, Any],
                  notebook_error: str | None = None) -> list[ClaimResult]:
    """Evaluate every claim of a chapter."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    return [evaluate_claim(c, profile, records, notebook_error) for c in claims.claims]
