"""The precision rule: each paper number's sample size in the ``paper`` profile, chosen, not inherited.

For every group of claims that checks a paper's number with a sampled statistic (:data:`RULES`), the sample
size is the smallest :math:`n` at which the statistic's sampling spread is at most a quarter
(:data:`replib.sampling.BAND_FRACTION`) of the check's band:

1. the band is the number's printed precision :math:`t` (half a unit in its last digit, in its table's scale,
   :func:`replib.papers.printed_band`); the spread at :math:`n` follows the :math:`1/\\sqrt{n}` law from the
   spread measured on a stand-in (``book/sampling.csv``, :mod:`replib.sampling_validation`):
   :math:`n_t = \\lceil n_0 (s_0 / (t/4))^2 \\rceil`; where the stand-in's samples showed a finite-sample
   bias :math:`b_0`, the error :math:`e_0 = \\sqrt{s_0^2 + b_0^2}` takes the spread's place and is carried to
   other sizes as a spread is: a bias shrinks as :math:`1/n` where the statistic is :math:`a + b/n`, but the
   stand-ins' window statistics fall more slowly (their half-sample estimates fall short of the samples' mean
   deviation in ``book/sampling.csv``), so the slower :math:`1/\\sqrt{n}` law is the safe one;
2. where :math:`n_t` exceeds the paper's own data (:attr:`Rule.cap`), the printed precision is out of reach:
   the claim's band is then our stated spread (the checker calls a value inconclusive whose two-spread
   interval is wider than the paper's word), and 10 % of the paper's value is the widest band worth having
   (:data:`REL_PRECISION`). :math:`n` is then the smallest size whose spread is a quarter of that
   10 % bound (:math:`0.025 |v|`, or :math:`0.025/\\ln 10` in log10 units), at most the cap;
3. never below the size the stand-in's coverage was validated at (its ``n_sample``; its ``n_full`` where fewer
   than :data:`COVERAGE` of the samples' bands covered the full value).

Spreads are proxies: measured on the stand-ins this machine has (all-MiniLM-L6-v2, GloVe 6B 50d and this
book's own protein LM), not on the papers' models. A size parameter shared by several groups takes the
largest of their sizes. ``python -m replib.precision`` writes ``book/sampling_plan.csv``; the ``paper``
profile's tables (``replib.methods.*.config``) hold the chosen sizes and a test checks they agree.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from . import sampling
from ._io import read_csv, write_csv_atomic
from .config import profile_params
from .papers import printed_band, project_tables, select_rows

__all__ = ["PLAN_COLUMNS", "REL_PRECISION", "RULES", "Rule", "chosen_sizes", "plan_rows", "main"]

ROOT = Path(__file__).resolve().parents[1]
SAMPLING_CSV = ROOT / "book" / "sampling.csv"
PLAN_CSV = ROOT / "book" / "sampling_plan.csv"
#: the fraction of trials whose band must cover the full value for a size to count as validated
COVERAGE = 0.95
#: the widest two-spread interval (relative to the paper's value) that can reproduce it (the checker's rule)
REL_PRECISION = 0.1
PLAN_COLUMNS = (
    "chapter",
    "claims",
    "statistic",
    "parameter",
    "unit",
    "paper_n",
    "band",
    "standin",
    "standin_n",
    "standin_spread",
    "n_printed",
    "n",
    "spread",
    "reached",
    "reason",
)


@dataclass(frozen=True)
class Rule:
    """A group of claims, the paper numbers they check and the configuration parameter that sizes them."""

    chapter: str
    claims: str  # the claim keys (glob) this size applies to
    refs: tuple  # the paper numbers (``<paper>:<id>`` globs) whose printed precision sets the band
    statistic: str  # the stand-in rows of book/sampling.csv: (chapter, statistic); the largest spread is used
    standin_chapter: str
    parameter: str  # the key of the chapter's configuration table
    unit: str  # what the parameter counts
    per_unit: float  # parameter units per sampling unit of the stand-in (e.g. lines per 512-token window)
    cap: int  # the paper's own data, in parameter units: never more
    scale: str = "same"  # "same": spread and band in one scale; "log10->linear": a log10 spread, a linear band
    model: str = ""  # the stand-in rows' model must contain this
    fixed: str = ""  # why this size is not chosen by the rule (then the cap, the inherited size)
    round_to: int = 2  # significant digits the size is rounded up to


#: WikiText-2 lines per 512-token window of all-MiniLM-L6-v2's tokenizer (87 windows of the first 600 test lines)
_LINES_PER_WINDOW = 600 / 87

RULES = (
    Rule("isoscore", "paper_*_layer*", ("rudman2022:layers/*",), "log10 IsoScore", "isoscore", "n_lines", "lines",
         _LINES_PER_WINDOW, 36_718),
    Rule("isoscore", "paper_*_layer*_avgcos", ("rudman2022:avgcos/*",), "1 - |average cosine|", "isoscore",
         "n_lines", "lines", _LINES_PER_WINDOW, 36_718),
    Rule("isoscore", "contextual_isoscore_max", ("rudman2022:s5.2/contextual_max",), "log10 IsoScore", "isoscore",
         "n_lines", "lines", _LINES_PER_WINDOW, 36_718, scale="log10->linear"),
    Rule("isoscore", "rotation_*", ("rudman2022:rotation/*",), "IsoScore, partition score (Gaussian draw)",
         "isoscore", "n_rot", "points", 1.0, 10_000,
         fixed="the paper's number is itself one draw of 10,000 points: ours has the same size, so the two are "
         "compared within the spread of their difference (synthetic data: nothing to save)"),
    Rule("protein_isotropy", "*_isoscore", ("hakim2025:global/*/isoscore",), "log10 IsoScore",
         "protein_isotropy", "n_global", "proteins", 1.0, 570_000),
    Rule("protein_isotropy", "*_eff_dims_ceil", ("hakim2025:global/*/eff_dims",), "effective dimensions",
         "protein_isotropy", "n_global", "proteins", 1.0, 570_000),
    Rule("protein_isotropy", "prot_bert_corr_*, corr_score_identity", ("hakim2025:corr/*",), "Pearson r *",
         "protein_isotropy", "n_pair_proteins", "proteins", 1.0, 3578),
    Rule("protein_isotropy", "local_mean_eff_dims", ("hakim2025:local/mean_eff_dims",),
         "local mean effective dimensions", "protein_isotropy", "n_local", "proteins", 1.0, 5000),
    Rule("manifolds", "lid_cosine_*, lid_contextual_model_max", ("cai2021:T3/bert", "cai2021:T3/dbert",
         "cai2021:T3/gpt", "cai2021:T3/gpt2", "cai2021:T3/elmo"), "LID mean (cosine, k = 20)", "manifolds",
         "lid_queries", "query tokens", 1.0, 200_000, model="MiniLM"),
    Rule("manifolds", "lid_static_table3_*, lid_static_glove_standin", ("cai2021:T3/glove", "cai2021:T3/glove_2m",
         "cai2021:T3/gnews"), "LID mean (cosine, k = 20)", "manifolds", "glove_queries", "query words", 1.0,
         50_000, model="GloVe"),
    Rule("manifolds", "lid_*, s_inter_*, s_intra_*", (), "LID index, S_inter, S_intra", "manifolds",
         "analysis_sample", "tokens", 1.0, 200_000,
         fixed="the neighbour index of LID: its size moves the neighbour distances (a bias, not a spread), so it "
         "stays the paper's k-means sample"),
)  # fmt: skip


def _standin(rule: Rule, rows: list[dict]) -> dict | None:
    """The stand-in row of ``rule`` with the largest spread (per unit: spread times the root of its size)."""
    mine = [
        r
        for r in rows
        if r["chapter"] == rule.standin_chapter
        and fnmatchcase(r["statistic"], rule.statistic)
        and rule.model in r["model"]
    ]
    return max(mine, key=lambda r: float(r["spread"]) * math.sqrt(int(r["n_sample"])), default=None)


def _current(rule: Rule) -> int | str:
    """The size the paper profile holds now ("all" for None: the whole data set)."""
    value = profile_params(rule.chapter, "paper")[rule.parameter]
    return "all" if value is None else int(value)


def _round_up(n: float, digits: int) -> int:
    if n <= 1:
        return 1
    step = 10 ** max(int(math.floor(math.log10(n))) - digits + 1, 0)
    return int(math.ceil(n / step) * step)


def plan_row(rule: Rule, rows: list[dict], tables=None) -> dict:
    """The chosen size of one rule's claims (a row of ``book/sampling_plan.csv``)."""
    tables = project_tables() if tables is None else tables
    out = dict(chapter=rule.chapter, claims=rule.claims, statistic=rule.statistic, parameter=rule.parameter,
               unit=rule.unit, paper_n=rule.cap)  # fmt: skip
    empty = dict(band="", standin="", standin_n="", standin_spread="", n_printed="", spread="", reached="")
    if rule.fixed:
        return out | empty | dict(n=_current(rule), reason=rule.fixed)
    numbers = select_rows(list(rule.refs), tables)
    band = float(sorted(printed_band(n) for n in numbers)[len(numbers) // 2])
    value = float(sorted(abs(n.value) for n in numbers)[len(numbers) // 2])
    scale = numbers[0].scale
    row = _standin(rule, rows)
    if row is None:
        return (
            out | empty | dict(band=f"{band:.3g}", n=_current(rule), reason="no stand-in measured: the inherited size")
        )
    out["band"] = f"{band:.3g}"
    s0, n0 = float(row["spread"]), int(row["n_sample"])
    b0 = abs(float(row.get("bias") or 0.0))  # the samples' finite-sample bias at n0 (0 where not measured)
    if rule.scale == "log10->linear":  # a log10 spread of a value near the paper's: s = v ln(10) s_log
        s0 *= value * math.log(10)
        b0 *= value * math.log(10)
    e0 = math.hypot(s0, b0)  # the error at n0; carried as a spread (1/sqrt(n)), never faster than a bias shrinks
    covered = float(row.get("covered") or 1.0) >= COVERAGE
    floor = (n0 if covered else int(row.get("n_full") or n0)) * rule.per_unit
    n_printed = max(floor, sampling.n_for_spread(e0, n0, sampling.BAND_FRACTION * band) * rule.per_unit)
    reached = n_printed <= rule.cap
    if reached:
        n, why = n_printed, "the spread is a quarter of the printed band"
    else:
        bound = REL_PRECISION / math.log(10) if scale == "log10" and rule.scale == "same" else REL_PRECISION * value
        n10 = max(floor, sampling.n_for_spread(e0, n0, sampling.BAND_FRACTION * bound) * rule.per_unit)
        n = min(n10, rule.cap)
        why = (
            "the printed band needs more than the paper's data: the band is our stated spread, a quarter of the "
            "checker's 10 % bound" + ("" if n10 <= rule.cap else " is out of reach too (inconclusive expected)")
        )
    n = min(_round_up(n, rule.round_to), rule.cap)
    if n <= floor * 1.000001 and n > 0:
        why += (
            "; at least the validated stand-in size"
            if covered
            else "; the stand-in's samples missed the full value (a bias at that size): at least the full size"
        )
    spread = sampling.spread_at(e0, n0, n / rule.per_unit)
    return out | dict(
        standin=f"{row['model']} on {row['data']}",
        standin_n=round(n0 * rule.per_unit),
        standin_spread=f"{e0:.3g}",
        n_printed=_round_up(n_printed, 2),
        n=n,
        spread=f"{spread:.3g}",
        reached=str(reached).lower(),
        reason=why,
    )


def plan_rows(rows: list[dict] | None = None) -> list[dict]:
    """Every rule's row, from the stand-ins' spreads in ``book/sampling.csv``."""
    rows = read_csv(SAMPLING_CSV) if rows is None else rows
    tables = project_tables()
    return [plan_row(rule, rows, tables) for rule in RULES]


#: (chapter, parameter) -> the parameters whose items it must hold (the pair and per-residue proteins are the
#: first of the global sample)
HOLDS = {("protein_isotropy", "n_global"): ("n_pair_proteins", "n_local")}


def chosen_sizes(plan: list[dict]) -> dict:
    """(chapter, parameter) -> the size: the largest of the rules sharing the parameter, and at least the
    sizes of the parameters it holds (:data:`HOLDS`)."""
    out: dict = {}
    for r in plan:
        if not r.get("standin"):  # inherited or fixed: not chosen by the rule
            continue
        key = (r["chapter"], r["parameter"])
        out[key] = max(out.get(key, 0), int(r["n"]))
    for (chapter, param), held in HOLDS.items():
        if (chapter, param) in out:
            paper = profile_params(chapter, "paper")
            sizes = [out.get((chapter, h), int(paper[h] or 0)) for h in held]
            out[chapter, param] = max([out[chapter, param], *sizes])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m replib.precision", description=__doc__.split("\n\n")[0])
    p.add_argument("--sampling", default=str(SAMPLING_CSV))
    p.add_argument("--out", default=str(PLAN_CSV))
    args = p.parse_args(argv)
    plan = plan_rows(read_csv(args.sampling))
    write_csv_atomic(args.out, plan, PLAN_COLUMNS)
    for (chapter, param), n in chosen_sizes(plan).items():
        print(f"{chapter}.{param} = {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
