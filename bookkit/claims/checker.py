"""The claim checker: a chapter's claims (as :mod:`bookkit.claims.claims` reads them from its claims file) and the
verdict of each against the values the executed notebook recorded.

Per profile a claim has one check: a ``tolerance`` around the paper's value, a ``property`` that would fail if
the science broke, or ``unverified`` with the reason; ``expected_failure`` marks a check documented to fail.
The checker fails closed: a value that is missing, not a finite number, or compared with something that is
not one never passes.

A claim may carry a **spread**: the name of a second recorded value, the standard error :math:`s` of its own
value :math:`v` (a bootstrap over the sample the chapter drew, for instance). A bound is then judged on the
interval :math:`v \\pm z s` (:data:`Z_SPREAD` = 2): a property that holds at one end and not at the other is
``inconclusive`` (the data cannot decide; never passed or failed by chance). A tolerance compares two
estimates (the paper's number is often itself a sample statistic, e.g. Rudman's rotation table): ours
reproduces it when :math:`|v - p| \\le t + z s` (they agree within the printed precision :math:`t` and our
sampling error), provided our interval is no wider than the paper's word, :math:`z s \\le t` (the tolerance: the
printed precision, or a stated and reasoned one); a wider interval that agrees is ``inconclusive`` (a noisy value
never reproduces a number by its noise, and no band wider than the paper's word is drawn), and a value beyond
:math:`t + z s` fails. An expected
failure is declared only where the check fails beyond the spread.

A flag (a ``true``/``false`` check) compares two sample statistics too ("IsoScore falls": the final value below
the first). With a spread ``<m>_spread`` it rests on the signed margin recorded as ``<m>`` (positive where the
flag is true, e.g. the first IsoScore minus the final) with that standard error: a margin within
:math:`z s` of zero is ``inconclusive``, and a margin whose sign disagrees with the flag fails.
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replib._validation import finite_number
from replib.profiles import PROFILES

from .status import PASSING

__all__ = [
    "ChapterClaims",
    "Claim",
    "ClaimResult",
    "check_chapter",
    "describe",
    "evaluate_claim",
    "split_check",
]

#: the comparison of each one-sided or equality property op
OPS = {op: getattr(operator, op) for op in ("lt", "le", "gt", "ge", "eq", "ne")}
#: property ops a spread can move a value across (the others compare flags)
SPREAD_OPS = ("lt", "le", "gt", "ge", "between", "close")
#: how many standard errors either side of a value its interval spans
Z_SPREAD = 2.0
#: the suffix of a spread's key: a flag's spread ``<m>_spread`` is the standard error of its margin ``<m>``
SPREAD_SUFFIX = "_spread"
_CHECK_FAILED = "check failed: "
#: how the detail of an expected failure that holds begins (a run on substituted models reads it: the expectation
#: was registered for the profile's own model)
XFAIL_HOLDS = "expected to fail in this profile "


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
    seeds: str = "all"  # how a run over several seeds is combined (bookkit.claims.seeds): all, worst or mean
    ref: str | None = None  # "<paper>:<id>" of the paper's number in data/papers (bookkit.claims.paper_tables)
    spread: str | None = None  # recorded key holding the standard error of the value (see the module docstring)
    tolerance_reason: str | None = None  # why a tolerance is wider than the paper's printed precision
    alternative: bool = False  # tests an alternative explanation of the paper's result: failing supports the paper
    finding: str | None = None  # "<paper>:<name>" of the paper's finding this claim tests on a model of the book
    model: str | None = None  # the model of the book a finding is tested on (bookkit.claims.findings)
    record: str | None = None  # the recorded key holding the value, when it is not the claim's key

    @property
    def value_key(self) -> str:
        """The recorded key that holds the claim's value."""
        return self.record or self.key


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
    spread: float | None = None  # the recorded standard error of ``value`` (None: the claim has none)
    alternative: bool = False
    finding: str | None = None
    model: str | None = None
    record: str | None = None  # the recorded key of the value, when it is not the claim's key

    def to_dict(self) -> dict:
        return asdict(self)


#: the fields a claim's result copies from the claim as they are
_SHARED = "chapter key claim paper_value source sanity stand_in ref alternative finding model record".split()


def split_check(check: dict) -> tuple[str, Any, str | None]:
    """(kind, spec, expected_failure reason or None) of one profile's check."""
    expected = check.get("expected_failure")
    kind, spec = next((k, v) for k, v in check.items() if k != "expected_failure")
    return kind, spec, expected


def describe(check: dict) -> str:
    """One profile's check in words: ``unverified``, ``tolerance abs=0.1``, ``lt 3``, ``is true``."""
    kind, spec, _ = split_check(check)
    if kind == "unverified":
        return "unverified"
    if kind == "tolerance":
        parts = ", ".join(f"{k}={v:.3g}" for k, v in spec.items() if k != "printed")
        return "tolerance " + parts + (" (the paper's printed precision)" if spec.get("printed") else "")
    rhs = spec["key"] if "key" in spec else _shown(spec.get("value"))
    extra = f" ±{spec['abs']}" if "abs" in spec else ""
    return f"{spec['op']} {rhs}{extra}" if spec["op"] not in ("true", "false") else f"is {spec['op']}"


def _shown(v: Any) -> str:
    """A compared value as a detail shows it: a float with 6 significant digits (never its 17-digit repr)."""
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(_shown, v)) + "]"
    return repr(v)


def _adjust(claim: Claim, expected: str | None, status: str, detail: str) -> tuple[str, str, str | None]:
    """The final (status, detail, deviation) of a raw verdict: a strict expected failure (the check runs; a
    failure beyond the value's spread is the documented ``expected_failure``, a value that is not a number
    stays ``failed``, an inconclusive one stays inconclusive, a pass means the claims file is out of date),
    then a sanity check is never a reproduction and a stand-in at best consistent."""
    deviation = claim.deviation
    if expected is not None:
        if status == "failed" and detail.startswith(_CHECK_FAILED):
            status, deviation = "expected_failure", expected
            detail = "does not hold here, as documented: " + detail[len(_CHECK_FAILED) :]
        elif status in PASSING:
            status = "failed"
            detail = (
                f"{XFAIL_HOLDS}({expected}) but holds now ({detail}): "
                "update the claims file and the chapter's deviations"
            )
    if claim.finding and status == "failed" and detail.startswith(_CHECK_FAILED):
        status = "does_not_hold"  # a paper's finding measured on a model of the book: a finding about the model
        detail = f"does not hold on {claim.model}: " + detail[len(_CHECK_FAILED) :]
    if claim.sanity and status in ("reproduced", "consistent"):
        status = "sanity"  # holds by construction: shown apart, never counted as a reproduction
    elif claim.stand_in and status == "reproduced":
        status = "consistent"  # a stand-in experiment agreeing with the paper's number is not a reproduction
        detail += f" (stand-in: {claim.stand_in})"
    return status, detail, deviation


def tolerance_width(spec: dict, value: float) -> dict:
    """Each part of a tolerance spec as what it accepts: ``abs`` as it is, ``rel`` times ``|value|``,
    ``log10`` as the largest value above ``value`` minus ``value`` (all absolute half-widths)."""
    out = {}
    if "abs" in spec:
        out["abs"] = float(spec["abs"])
    if "rel" in spec:
        out["rel"] = float(spec["rel"]) * abs(value)
    if "log10" in spec:
        out["log10"] = abs(value) * (10 ** float(spec["log10"]) - 1)
    return out


def tolerance_bounds(paper: float, spec: dict) -> tuple[float, float]:
    """The values a tolerance ``spec`` accepts around the paper's value, every bound at once: ``abs``
    :math:`|v - p| \\le a`, ``rel`` :math:`|v - p| \\le r|p|`, ``log10`` :math:`|\\log_{10} v - \\log_{10} p| \\le t`
    (a positive ``p`` only); ``-inf``/``inf`` where nothing bounds a side."""
    lo, hi = -math.inf, math.inf
    if "abs" in spec:
        lo, hi = max(lo, paper - spec["abs"]), min(hi, paper + spec["abs"])
    if "rel" in spec:
        lo, hi = max(lo, paper - spec["rel"] * abs(paper)), min(hi, paper + spec["rel"] * abs(paper))
    if "log10" in spec and paper > 0:
        lo, hi = max(lo, paper / 10 ** spec["log10"]), min(hi, paper * 10 ** spec["log10"])
    return lo, hi


def _tolerance_verdict(claim: Claim, check: dict, spec: dict, value: Any) -> tuple[str, str]:
    """(status, detail) of a tolerance check of ``value`` around the paper's value."""
    if not finite_number(value):
        return "failed", f"recorded value {value!r} is not a finite number"
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
            problems.append(f"|log10 {value:.3g} - log10 {ref:.3g}| > {spec['log10']:.3g}")
    if problems:
        return "failed", _CHECK_FAILED + "; ".join(problems)
    return "reproduced", f"within {describe(check)[10:]} of the paper's {ref:g}"


def _tolerance_with_spread(claim: Claim, check: dict, spec: dict, value: Any, s: float) -> tuple[str, str]:
    """A tolerance with our value's standard error ``s``: agreement within the tolerance plus ``Z_SPREAD * s``
    reproduces the paper's number when that interval is at most the tolerance wide on each side (the paper's
    word: never a band wider than it), else it is ``inconclusive``; disagreement beyond it fails."""
    if not s or not finite_number(value):
        return _tolerance_verdict(claim, check, spec, value)
    half, ref = Z_SPREAD * s, float(claim.paper_value)
    closer = max(abs(value - ref) - half, 0.0)  # the interval's point nearest the paper's value
    status, detail = _tolerance_verdict(claim, check, spec, ref + math.copysign(closer, value - ref))
    band = f"{value:.4g} ± {half:.3g} ({Z_SPREAD:g} s.e.)"
    if status == "failed":
        return "failed", f"{detail} (nearest end of {band})"
    widest = max(tolerance_width(spec, ref).values(), default=0.0)
    if half > widest:
        return "inconclusive", f"{band} agrees with the paper's {ref:g} but is wider than ±{widest:.3g}"
    return "reproduced", f"{band} agrees with the paper's {ref:g} within {describe(check)[10:]} and our spread"


def _property_verdict(claim: Claim, spec: dict, value: Any, records: dict[str, Any]) -> tuple[str, str]:
    """(status, detail) of a property check. It fails closed: a number is compared only with a finite number;
    NaN, ±inf, None, strings and lists never satisfy lt/le/gt/ge/eq/ne/between/close (not even ``ne``)."""
    op = spec["op"]
    if op in ("true", "false"):
        ok, detail = isinstance(value, bool) and value is (op == "true"), f"value is {value!r}"
    else:
        if "key" in spec and spec["key"] not in records:
            return "failed", f"comparison key {spec['key']!r} not recorded"
        rhs = records[spec["key"]] if "key" in spec else spec["value"]
        if not finite_number(value):  # never an expected failure: nothing was measured
            return "failed", f"recorded value {value!r} of {claim.key!r} is not a finite number"
        if op == "between":
            ok = rhs[0] <= value <= rhs[1]
        elif not finite_number(rhs):
            of_key = f" (key {spec['key']!r})" if "key" in spec else ""
            return "failed", _CHECK_FAILED + f"comparison value {rhs!r}{of_key} is not a finite number"
        else:
            ok = abs(value - rhs) <= spec["abs"] if op == "close" else bool(OPS[op](value, rhs))
        detail = f"{_shown(value)} {op} {_shown(rhs)}" + (f" (±{spec['abs']})" if op == "close" else "")
    if not ok:
        return "failed", _CHECK_FAILED + "property does not hold: " + detail
    return ("deviates" if claim.deviation else "consistent"), detail


def _spread_of(claim: Claim, records: dict[str, Any]) -> tuple[float | None, str | None]:
    """(standard error, problem): the recorded spread of the claim's value; a declared spread that is not
    recorded, or not a finite number >= 0, is a problem (the check fails closed)."""
    if claim.spread is None:
        return None, None
    s = records.get(claim.spread)
    if not finite_number(s) or s < 0:
        return None, f"spread {claim.spread!r} of {claim.key!r} not recorded as a finite number >= 0 (got {s!r})"
    return float(s), None


def _flag_with_spread(claim: Claim, status: str, detail: str, value: Any, records: dict, s: float) -> tuple[str, str]:
    """A flag judged on its margin (the record named by its spread without :data:`SPREAD_SUFFIX`; positive
    where the flag is true) and the margin's standard error ``s``: ``inconclusive`` when the margin is within
    ``Z_SPREAD * s`` of zero; a margin that is missing, not a number, or of the other sign than the flag fails."""
    key = claim.spread.removesuffix(SPREAD_SUFFIX)
    margin = records.get(key)
    if key == claim.spread or not finite_number(margin):
        return "failed", f"the margin {key!r} of the flag {claim.key!r} is not recorded as a finite number"
    if not isinstance(value, bool) or (margin > 0) is not value:
        return "failed", f"the flag {value!r} disagrees with the sign of its margin {key} = {margin:.4g}"
    band = f"margin {margin:.4g} ± {Z_SPREAD * s:.3g} ({Z_SPREAD:g} s.e.)"
    if abs(margin) <= Z_SPREAD * s:
        return "inconclusive", f"{band} straddles 0: {detail.removeprefix(_CHECK_FAILED)}"
    return status, f"{detail} ({band})"


def _property_with_spread(claim: Claim, spec: dict, value: Any, records: dict, s: float) -> tuple[str, str]:
    """A property judged on ``value ± Z_SPREAD * s``: the same verdict at both ends and at the value, or
    ``inconclusive`` when the interval straddles the bound; a flag on its margin (:func:`_flag_with_spread`)."""
    status, detail = _property_verdict(claim, spec, value, records)
    if claim.spread is not None and spec["op"] in ("true", "false"):
        return _flag_with_spread(claim, status, detail, value, records, s)
    if not s or spec["op"] not in SPREAD_OPS or not finite_number(value):
        return status, detail
    ends = [_property_verdict(claim, spec, value + d, records)[0] for d in (-Z_SPREAD * s, Z_SPREAD * s)]
    band = f"{value:.4g} ± {Z_SPREAD * s:.3g} ({Z_SPREAD:g} s.e.)"
    if any(e != status for e in ends):
        return "inconclusive", f"{band} straddles the bound: {detail.removeprefix(_CHECK_FAILED)}"
    return status, f"{detail} (also at {band})"


def evaluate_claim(
    claim: Claim, profile: str, records: dict[str, Any], notebook_error: str | None = None
) -> ClaimResult:
    """Check one claim in one profile against the recorded values of its executed notebook."""
    check = claim.checks[profile]
    kind, spec, expected = split_check(check)
    value = records.get(claim.value_key)
    s, problem = _spread_of(claim, records)
    if kind == "unverified":
        status, detail = "unverified", spec
    elif notebook_error:
        status, detail = "failed", f"notebook did not complete: {notebook_error}"
    elif claim.value_key not in records:
        status, detail = "failed", "value not recorded (missing key: the cell did not run)"
    elif problem:
        status, detail = "failed", problem
    elif kind == "tolerance":
        status, detail = _tolerance_with_spread(claim, check, spec, value, s or 0.0)
    else:
        status, detail = _property_with_spread(claim, spec, value, records, s or 0.0)
    status, detail, deviation = _adjust(claim, expected, status, detail)
    return ClaimResult(
        **{f: getattr(claim, f) for f in _SHARED},
        profile=profile,
        value=value,
        check=describe(check) + (" (expected to fail)" if expected else ""),
        status=status,
        detail=detail,
        deviation=deviation,
        spread=s,
    )


def check_chapter(
    claims: ChapterClaims, profile: str, records: dict[str, Any], notebook_error: str | None = None
) -> list[ClaimResult]:
    """Evaluate every claim of a chapter."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    return [evaluate_claim(c, profile, records, notebook_error) for c in claims.claims]
