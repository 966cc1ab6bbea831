"""Integrity rules for claims: checks that could not tell right from wrong, or that contradict each other.

The rules (enforced by ``tests/test_claims_integrity.py`` over every claims file, and on every runner
report by :func:`report_problems`):

1. **No two checks of one computed value with disjoint acceptance.** Two claims of a chapter whose values
   are the same computation (the same expression passed to ``record`` in the chapter, or, in a report,
   the same recorded number) must have acceptance intervals that meet in every profile; otherwise at
   least one of them must fail whatever the code computes.
2. **I(W) in its natural scale.** I(W) spans hundreds of orders of magnitude: a tolerance on an I(W)
   value is a ``log10`` tolerance, never ``abs``/``rel``.
3. **A tolerance that cannot fail is no check.** An ``abs`` tolerance at least as wide as the distance
   from the paper's value to a bound of the quantity's range (0 for a quantity that is never negative)
   accepts a value of zero; for such quantities use ``log10`` or ``rel``.
4. **Sanity checks and stand-ins are labelled**: the checker never gives them *reproduced* (see
   :func:`bookkit.claims.checker.evaluate_claim`); here a sanity claim must not carry a tolerance around
   a paper's number in any profile, since it would read as a reproduction.
5. **At the paper's word.** A tolerance around a paper's number is no wider than the number's printed
   precision (half a unit in its last printed digit, :func:`bookkit.claims.paper_tables.printed_tolerance`; a
   ``spread`` widens it by the value's own standard errors at check time), unless the claim says why in
   ``tolerance_reason``.
6. **Each paper number counted once.** Per profile, at most one claim that could be *reproduced* (a
   tolerance, not sanity, not a stand-in, not an expected failure) refers to a paper number
   (:func:`double_counted`, over every chapter).
7. **Paper values live in ``data/papers``.** No literal in the code (the packages and the chapters' code cells)
   equals one of a paper's results, or a number it quotes, to three or more significant digits as written, whatever
   its sign (a minus is an operator of its own; :func:`paper_value_copies`): code reads them from the tables
   (:func:`replib.papers.project_table`), so that a corrected transcription reaches every use.
8. **Sanity by rule** (:func:`sanity_problems`): a check that tests a numerical identity (``close`` within 1e-6,
   or an error bound of at most 1e-6) holds by construction and is labelled sanity; a sanity label on a check
   of a number of the paper's tables at its word (an ``eq``, a tolerance or a bound that is the paper's
   number) is wrong, since that check can fail against the paper. And a claim that is evidence without a number
   of the paper (no ``ref``, no paper value: not sanity, a stand-in, an alternative or a finding) tests somebody's
   statement: its source names a paper (its year) or this book's registered expectation; one whose source names
   neither (a design, an identity, the geometry, a check of the code) holds by construction and is labelled sanity.
9. **A flag that is evidence rests on its margin** (:func:`flag_problems`): a ``true``/``false`` check of a claim
   that is not sanity (in the offline or paper profile) compares two sample statistics, so it names a spread
   ``<m>_spread``, the standard error of its recorded margin ``<m>`` (:func:`bookkit.claims.checker.evaluate_claim`:
   a margin within two standard errors of zero is inconclusive).
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from pathlib import Path

from ..notebooks import read_chapter
from .checker import SPREAD_SUFFIX, ChapterClaims, Claim, split_check, tolerance_bounds, tolerance_width
from .paper_tables import PaperTableError, half_unit, load_paper_tables, printed_tolerance, resolve_ref

INF = math.inf
#: keys whose values are I(W) (Mu & Viswanath's partition isotropy), compared in log10
IW_KEY = re.compile(r"^(iw_|table1_|layer_)|(^|_)iw(_|$)")


def acceptance(claim: Claim, profile: str) -> tuple[float, float] | None:
    """The interval of values the claim accepts in ``profile`` (None: not an interval on its own value)."""
    kind, spec, expected = split_check(claim.checks[profile])
    if expected is not None or kind == "unverified":
        return None
    if kind == "tolerance":
        return tolerance_bounds(float(claim.paper_value), spec)
    op = spec["op"]
    if "key" in spec or op in ("true", "false"):
        return None
    v = spec.get("value")
    return {
        "lt": (-INF, v),
        "le": (-INF, v),
        "gt": (v, INF),
        "ge": (v, INF),
        "eq": (v, v),
        "ne": None,
        "between": tuple(v) if isinstance(v, list) else None,
        "close": (v - spec.get("abs", 0), v + spec.get("abs", 0)) if isinstance(v, (int, float)) else None,
    }.get(op)


def _disjoint(a: Claim, b: Claim, profile: str) -> tuple | None:
    """The acceptance intervals of ``a`` and ``b`` in ``profile`` when both are intervals and they do not meet."""
    ia, ib = acceptance(a, profile), acceptance(b, profile)
    return (ia, ib) if ia is not None and ib is not None and max(ia[0], ib[0]) > min(ia[1], ib[1]) else None


def same_value_groups(chapter_source: str) -> list[list[str]]:
    """Keys that a chapter records from the same expression (``record("a", E)`` and ``record("b", E)``)."""
    by_expr: dict[str, list[str]] = {}
    try:
        tree = ast.parse(chapter_source)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "record"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            by_expr.setdefault(ast.dump(node.args[1]), []).append(node.args[0].value)
    return [keys for keys in by_expr.values() if len(set(keys)) > 1]


def wider_than_printed(claim: Claim, half: float, tables: dict) -> str | None:
    """Why accepting ``half`` either side of the claim's paper value is more than its printed precision allows
    (None when it is not): from its table when the claim refers to one, else from the inline value as the claims
    file gives it."""
    if claim.ref:
        n = resolve_ref(claim.ref, tables)
        allowed, printed = printed_tolerance(n), n.printed
    else:
        printed = repr(claim.paper_value)
        allowed = {"abs": half_unit(printed)}
    limit = max(tolerance_width(allowed, float(claim.paper_value)).values())
    return None if half <= limit * (1 + 1e-9) else f"accepts ±{half:.3g} around {printed}, printed to ±{limit:.3g}"


def looser_than_printed(claim: Claim, spec: dict, tables: dict) -> str | None:
    """Why a tolerance ``spec`` accepts more than the paper's printed precision (None when it does not)."""
    wide = tolerance_width({k: v for k, v in spec.items() if k != "printed"}, float(claim.paper_value)).values()
    return wider_than_printed(claim, max(wide, default=0.0), tables)


def band_wider_than_printed(claim: Claim, spec: dict, tables: dict) -> str | None:
    """Why a two-sided property (``between``, ``close``) around the claim's own paper value accepts more than
    the paper's printed precision (None when it does not, or when the band does not hold the paper's value)."""
    if spec.get("op") not in ("between", "close") or "key" in spec or not isinstance(claim.paper_value, (int, float)):
        return None
    v = spec.get("value")
    lo, hi = tuple(v) if spec["op"] == "between" else (v - spec.get("abs", 0), v + spec.get("abs", 0))
    value = float(claim.paper_value)
    if abs((lo + hi) / 2 - value) > 0.1 * (hi - lo) / 2:  # a band that is not around the paper's value
        return None
    return wider_than_printed(claim, max(value - lo, hi - value), tables)


def reproducible_checks(claim: Claim) -> list[str]:
    """The profiles in which ``claim`` could be *reproduced*: a tolerance, not sanity, not a stand-in, not an
    expected failure."""
    if claim.sanity or claim.stand_in:
        return []
    return [p for p, c in claim.checks.items() if split_check(c)[0] == "tolerance" and split_check(c)[2] is None]


def double_counted(chapters: list[ChapterClaims]) -> list[str]:
    """Rule 6 over every chapter: a paper number that more than one claim could reproduce in one profile."""
    seen: dict[tuple[str, str], list[str]] = {}
    for ch in chapters:
        for c in ch.claims:
            for profile in reproducible_checks(c) if c.ref else []:
                seen.setdefault((c.ref, profile), []).append(f"{ch.chapter}:{c.key}")
    return [
        f"{ref} could be reproduced by {len(keys)} claims in {profile}: {', '.join(keys)} (count a number once; "
        "the others are sanity checks, stand-ins or properties)"
        for (ref, profile), keys in seen.items()
        if len(keys) > 1
    ]


def claims_problems(claims: ChapterClaims, code: str = "", tables: dict | None = None) -> list[str]:
    """Every integrity problem of one chapter's claims (``code``: the chapter's code cells, for rule 1;
    ``tables``: the papers' tables, default the project's, two folders above the claims file)."""
    if tables is None:
        try:
            tables = load_paper_tables(Path(claims.path).resolve().parent.parent)
        except PaperTableError:
            tables = {}
    out: list[str] = double_counted([claims]) + flag_problems(claims)
    where = claims.path.name
    by_key = {c.key: c for c in claims.claims}
    for group in same_value_groups(code):
        claimed = [by_key[k] for k in group if k in by_key]
        for i, a in enumerate(claimed):
            for b in claimed[i + 1 :]:
                for profile in a.checks:
                    if apart := _disjoint(a, b, profile):
                        out.append(
                            f"{where}: {a.key!r} and {b.key!r} check the same value with disjoint "
                            f"acceptance in {profile} ({apart[0]} vs {apart[1]})"
                        )
    for c in claims.claims:
        for profile, check in c.checks.items():
            kind, spec, _ = split_check(check)
            band = None if c.tolerance_reason or kind != "property" else band_wider_than_printed(c, spec, tables)
            if band:
                out.append(
                    f"{where}: {c.key!r} ({profile}): the band {band}: narrow it to the paper's precision or say "
                    "why in tolerance_reason"
                )
            if kind != "tolerance":
                continue
            if c.sanity:
                out.append(
                    f"{where}: sanity claim {c.key!r} has a tolerance around a paper value in {profile}: "
                    "a check that holds by construction must not read as a reproduction"
                )
            if IW_KEY.search(c.key) and ("abs" in spec or "rel" in spec) and "log10" not in spec:
                out.append(f"{where}: {c.key!r} is an I(W) value: compare it in log10, not {sorted(spec)} ({profile})")
            ref = c.paper_value
            if (
                (IW_KEY.search(c.key) or "isoscore" in c.key)
                and "abs" in spec
                and ref is not None
                and spec["abs"] >= abs(float(ref))
            ):
                out.append(f"{where}: {c.key!r}: abs tolerance {spec['abs']} around {ref} accepts 0 ({profile})")
            if not c.tolerance_reason:
                why = looser_than_printed(c, spec, tables)
                if why:
                    out.append(
                        f"{where}: {c.key!r} ({profile}): the tolerance {why}: narrow it to the paper's precision "
                        "(tolerance: {printed: true}, with a spread for our sampling error) or say why in "
                        "tolerance_reason"
                    )
    return out


def flag_problems(claims: ChapterClaims) -> list[str]:
    """Rule 9 on one chapter's claims: flags that are evidence without the spread of their margin."""
    out = []
    for c in claims.claims:
        if c.sanity:
            continue
        for profile in ("offline", "paper"):
            kind, spec, _ = split_check(c.checks[profile])
            flag = kind == "property" and spec["op"] in ("true", "false")
            if flag and not (c.spread or "").endswith(SPREAD_SUFFIX):
                out.append(
                    f"{claims.path.name}: {c.key!r} ({profile}) is a flag that is evidence: name the spread of its "
                    f"margin (spread: <margin>{SPREAD_SUFFIX}), or label it sanity if it holds by construction"
                )
    return out


def report_problems(report: dict, claims_by_chapter: dict[str, ChapterClaims]) -> list[str]:
    """Rule 1 on a runner report: claims of one chapter that recorded the identical number (the same
    computation) must not have disjoint acceptance in the report's profile."""
    out = []
    profile = report["profile"]
    by_value: dict[tuple, list[str]] = {}
    for c in report["claims"]:
        v = c.get("value")
        if isinstance(v, float) and math.isfinite(v) and v not in (0.0, 1.0):
            by_value.setdefault((c["chapter"], v), []).append(c["key"])
    for (chapter, _), keys in by_value.items():
        ch = claims_by_chapter.get(chapter)
        if ch is None or len(keys) < 2:
            continue
        claims = {c.key: c for c in ch.claims}
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                if a in claims and b in claims and profile in claims[a].checks:
                    if _disjoint(claims[a], claims[b], profile):
                        out.append(
                            f"{chapter}: {a!r} and {b!r} recorded the same value with disjoint acceptance in {profile}"
                        )
    return out


def chapter_code(path: Path) -> str:
    """The code cells of a chapter source (MyST Markdown notebook), joined."""
    nb = read_chapter(path)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code" and not c.source.lstrip().startswith("%"))


#: significant digits a literal must show to count as a copy of a paper's number (rule 7): fewer (``5``,
#: ``0.5``, ``60``) are ordinary constants
COPY_DIGITS = 3
#: a numerical identity's bound (rule 8): a check this tight holds by construction, up to rounding
IDENTITY_BOUND = 1e-6


def significant_digits(text: str) -> int:
    """Significant digits of a number as written (``0.001658`` 4, ``4_094_976`` 7, ``60.0`` 1, ``1e-6`` 1)."""
    mantissa = text.lower().replace("_", "").split("e")[0].lstrip("+-")
    return len(mantissa.replace(".", "").strip("0"))


#: the kinds of a paper table's numbers that are the paper's own values (rule 7): its results and the numbers it
#: quotes from others
COPY_KINDS = ("result", "quoted")


def paper_value_copies(paths, tables: dict) -> list[str]:
    """Rule 7: ``file:line: literal`` for every numeric literal in ``paths`` (Python files, or chapters: their
    code cells) whose absolute value equals one of the papers' results or quoted numbers (:data:`COPY_KINDS`)
    with at least :data:`COPY_DIGITS` significant digits as written."""
    results: dict[float, str] = {}
    for numbers in tables.values():
        for n in numbers.values():
            if n.kind in COPY_KINDS and significant_digits(n.printed) >= COPY_DIGITS:
                results.setdefault(abs(n.value), n.ref)
    out = []
    for path in paths:
        code = chapter_code(Path(path)) if Path(path).suffix == ".md" else Path(path).read_text()
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        for tok in tokens:
            if tok.type != tokenize.NUMBER or significant_digits(tok.string) < COPY_DIGITS:
                continue
            try:
                value = float(tok.string.replace("_", ""))
            except ValueError:  # complex and other literals
                continue
            ref = next((r for v, r in results.items() if math.isclose(value, v, rel_tol=1e-9)), None)
            if ref:
                out.append(f"{path}:{tok.start[0]}: {tok.string} is {ref}: read it from data/papers instead")
    return out


#: how a claim's source names whose statement it tests (rule 8): a paper, by its year, or this book's registered
#: expectation
STATEMENT_SOURCE = re.compile(r"\b(19|20)\d\d[a-z]?\b|this book's|expectation")


def _tests_a_statement(claim: Claim) -> bool:
    """Whether a claim without a number of the paper names whose statement it tests (rule 8)."""
    return bool(claim.ref or claim.paper_value is not None or STATEMENT_SOURCE.search(claim.source or ""))


def _identity_check(check: dict) -> bool:
    kind, spec, expected = split_check(check)
    if kind != "property" or expected is not None or "key" in spec and spec["op"] != "close":
        return False
    if spec["op"] == "close":
        return spec.get("abs", INF) <= IDENTITY_BOUND and (spec.get("key") is not None or spec.get("value") == 0)
    v = spec.get("value")
    return spec["op"] in ("lt", "le") and isinstance(v, (int, float)) and 0 < v <= IDENTITY_BOUND


def _at_the_papers_word(claim: Claim, check: dict) -> bool:
    kind, spec, _ = split_check(check)
    if kind == "tolerance":
        return True
    pv = claim.paper_value
    if kind != "property" or not claim.ref or not isinstance(pv, (int, float)) or isinstance(pv, bool) or "key" in spec:
        return False
    v = spec.get("value")
    return spec["op"] in ("eq", "lt", "le", "gt", "ge") and isinstance(v, (int, float)) and math.isclose(v, pv)


def sanity_problems(claims: ChapterClaims) -> list[str]:
    """Rule 8 on one chapter's claims: identities not labelled sanity, and sanity labels on checks of the
    paper's own value at its word (the offline and paper profiles: smoke checks code paths)."""
    out = []
    where = claims.path.name
    for c in claims.claims:
        checks = [c.checks[p] for p in ("offline", "paper") if p in c.checks]
        real = [ch for ch in checks if split_check(ch)[0] != "unverified"]
        if real and all(_identity_check(ch) for ch in real) and not c.sanity:
            out.append(f"{where}: {c.key!r} checks a numerical identity (within {IDENTITY_BOUND:g}): label it sanity")
        elif real and not (c.sanity or c.stand_in or c.alternative or c.finding or _tests_a_statement(c)):
            out.append(
                f"{where}: {c.key!r} is evidence but its source ({c.source!r}) names neither a paper's statement nor "
                "this book's expectation: a check that holds by construction is labelled sanity"
            )
        if c.sanity and any(_at_the_papers_word(c, ch) for ch in real):
            out.append(
                f"{where}: {c.key!r} is labelled sanity but checks the paper's value {c.paper_value!r} at its word: "
                "it can fail against the paper, so it is evidence, not sanity"
            )
    return out
