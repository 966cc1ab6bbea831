"""Verdicts over several seeds: a claim's status must not depend on the seed a chapter ran with.

A chapter run for seeds ``s_1 .. s_n`` gives each claim ``n`` recorded values, each judged on its own first
(:func:`bookkit.claims.checker.evaluate_claim`, with the value's own spread when the claim has one). How they are
combined is the claim's ``seeds`` rule (claims file field; default ``all``):

``all``
    the claim gets the status every seed shares; when the seeds disagree, the values straddle the bound and
    the claim is ``inconclusive`` (never a finding, a deviation or an expected failure made of one seed's
    noise, never passed or failed by chance).
``worst``
    for a statement of the paper about *every* case ("lowers S_inter in every layer"): as ``all`` (seeds
    that disagree make it ``inconclusive``), and the value shown is the worst over seeds (the smallest for
    ``gt``/``ge``, the largest for ``lt``/``le``).
``mean``
    for a statement about an average: the check is applied to the mean over seeds and to the mean moved by
    two standard errors either way, :math:`\\bar v \\pm 2 s/\\sqrt{n}`; if the three verdicts differ the
    mean is within noise of the bound and the claim is ``inconclusive``.

A seed whose value is missing or whose notebook failed makes the claim ``failed`` (a crash is never
inconclusive). A claim whose per-seed records are not all finite numbers, or whose check is ``unverified``,
uses ``all``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from replib._validation import finite_number

from .checker import ChapterClaims, Claim, check_chapter, evaluate_claim, split_check

SEED_RULES = ("all", "worst", "mean")
#: property ops a ``worst``/``mean`` rule can combine (one-sided bounds with a fixed value)
_DIRECTION = {"gt": min, "ge": min, "lt": max, "le": max}


def rule_problem(claim_key: str, rule: str, checks: dict) -> str | None:
    """Why ``rule`` cannot combine the seeds of these checks (None if it can): ``worst`` needs one-sided
    property checks (``lt le gt ge`` against a value) wherever the claim is checked; ``mean`` also accepts
    tolerance checks."""
    if rule not in SEED_RULES:
        return f"{claim_key}: seeds must be one of {SEED_RULES}, got {rule!r}"
    if rule == "all":
        return None
    for prof, chk in checks.items():
        kind, spec, _ = split_check(chk)
        if kind == "unverified":
            continue
        if kind == "property" and spec.get("op") in _DIRECTION and "value" in spec:
            continue
        if rule == "mean" and kind == "tolerance":
            continue
        return (
            f"{claim_key} [{prof}]: seeds: {rule} combines one-sided property checks (lt le gt ge against a value)"
            + (" or tolerance checks" if rule == "mean" else "")
        )
    return None


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if finite_number(v) else repr(v)


def _broken(result, key: str, records: dict, error: str | None) -> bool:
    """A seed that measured nothing: a failed notebook, a missing value, or a number check on a value that is
    not a finite number (flags and strings are compared as they are)."""
    return result.status == "failed" and (bool(error) or key not in records or "not a finite number" in result.detail)


def combine_claim(
    claim: Claim, profile: str, records_by_seed: dict[int, dict], errors_by_seed: dict[int, str | None]
) -> dict:
    """The result of one claim over several seeds (see the module docstring), as a report dict with the
    per-seed values and statuses (``seed_values``, ``seed_statuses``), the ``seeds`` and the ``seed_rule``."""
    seeds = list(records_by_seed)
    per = {s: evaluate_claim(claim, profile, records_by_seed[s], errors_by_seed.get(s)) for s in seeds}
    values = {s: per[s].value for s in seeds}
    kind, spec, _ = split_check(claim.checks[profile])
    rule = claim.seeds
    numeric = all(finite_number(v) for v in values.values()) and not any(errors_by_seed.get(s) for s in seeds)
    if kind == "unverified" or not numeric:
        rule = "all"
    first = records_by_seed[seeds[0]]
    listing = ", ".join(  # a seed without a value (an unverified claim) is listed without "(None)"
        f"seed {s}: {per[s].status}" + ("" if values[s] is None else f" ({_fmt(values[s])})") for s in seeds
    )
    broken = [s for s in seeds if _broken(per[s], claim.value_key, records_by_seed[s], errors_by_seed.get(s))]
    if broken:
        out = per[broken[0]].to_dict()
        out["detail"] = f"seed {broken[0]}: {out['detail']} ({listing})"
    elif rule in ("all", "worst"):
        pick = seeds[0] if rule == "all" else _DIRECTION[spec["op"]](values, key=values.get)  # the worst seed
        out = per[pick].to_dict()
        if len({per[s].status for s in seeds}) > 1:
            out["status"] = "inconclusive"
            out["detail"] = f"the verdict depends on the seed: the values straddle the bound ({listing})"
        else:
            what = "every seed" if rule == "all" else f"worst case over seeds {_fmt(values[pick])}; every seed"
            out["detail"] = f"{out['detail']} ({what}: {listing})"
    else:  # mean
        xs = list(values.values())
        mean = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
        half = 2 * sd / math.sqrt(len(xs))
        alone = dataclasses.replace(claim, spread=None)  # the mean carries its own spread, not one seed's
        at = [evaluate_claim(alone, profile, {**first, claim.value_key: v}) for v in (mean, mean - half, mean + half)]
        out = at[0].to_dict()
        band = f"mean over seeds {_fmt(mean)} ± {_fmt(half)} (2 s.e.)"
        if len({r.status for r in at}) > 1:
            out["status"] = "inconclusive"
            out["detail"] = f"{band} straddles the check ({listing})"
        else:
            out["detail"] = f"{band}: {out['detail']} ({listing})"
    out.update(
        seeds=seeds,
        seed_rule=rule,
        seed_values={str(s): values[s] for s in seeds},
        seed_statuses={str(s): per[s].status for s in seeds},
    )
    return out


def check_chapter_seeds(
    claims: ChapterClaims,
    profile: str,
    records_by_seed: dict[int, dict],
    errors_by_seed: dict[int, str | None],
) -> list[dict]:
    """Every claim of a chapter over its seeds (one seed: the plain check, :func:`check_chapter`)."""
    if len(records_by_seed) == 1:
        ((seed, records),) = records_by_seed.items()
        return [r.to_dict() for r in check_chapter(claims, profile, records, errors_by_seed.get(seed))]
    return [combine_claim(c, profile, records_by_seed, errors_by_seed) for c in claims.claims]
