"""replib.precision: the precision rule's sizes from stand-in spreads, and the paper profile holding them."""

from __future__ import annotations

import math

import pytest

from replib import precision, sampling
from replib._io import read_csv
from replib.config import profile_params
from replib.papers import project_tables

TABLES = project_tables()


def _row(chapter, statistic, model, spread, n_sample):
    return {"chapter": chapter, "statistic": statistic, "model": model, "data": "d", "spread": str(spread),
            "n_sample": str(n_sample)}  # fmt: skip


def _rule(**kw):
    base = dict(chapter="c", claims="k", refs=("hakim2025:corr/cosine/sq_euclidean",), statistic="Pearson r *",
                standin_chapter="c", parameter="n", unit="proteins", per_unit=1.0, cap=10**9)  # fmt: skip
    return precision.Rule(**(base | kw))


def test_reachable_band_gives_the_closed_form_size():
    # printed 0.791: band 0.0005, target a quarter of it; spread 0.01 at 100 units -> n = 100 (0.01/0.000125)^2
    out = precision.plan_row(_rule(), [_row("c", "Pearson r (a, b)", "m", 0.01, 100)], TABLES)
    assert out["reached"] == "true" and out["n"] == 640_000
    assert float(out["spread"]) <= sampling.BAND_FRACTION * 0.0005 * (1 + 1e-9)


def test_unreachable_band_falls_back_to_a_quarter_of_the_ten_percent_bound():
    out = precision.plan_row(_rule(cap=10_000), [_row("c", "Pearson r (a, b)", "m", 0.01, 100)], TABLES)
    assert out["reached"] == "false"
    # 10 % of 0.791 is the bound; a quarter of it is 0.019775 > 0.01: the validated floor (100) decides
    assert out["n"] == 100 and "stated spread" in out["reason"] and "validated" in out["reason"]


def test_fallback_size_scales_with_the_square_of_the_spread():
    out = precision.plan_row(_rule(cap=10_000), [_row("c", "Pearson r (a, b)", "m", 0.1, 100)], TABLES)
    expected = math.ceil(100 * (0.1 / (0.25 * 0.1 * 0.791)) ** 2)
    assert int(out["n"]) >= expected and int(out["n"]) == precision._round_up(expected, 2)


def test_size_never_exceeds_the_papers_data():
    out = precision.plan_row(_rule(cap=500), [_row("c", "Pearson r (a, b)", "m", 1.0, 100)], TABLES)
    assert out["n"] == 500 and "out of reach too" in out["reason"]


def test_the_largest_spread_per_unit_decides():
    rows = [_row("c", "Pearson r (a, b)", "m", 0.01, 100), _row("c", "Pearson r (c, d)", "m", 0.01, 400)]
    out = precision.plan_row(_rule(), rows, TABLES)
    assert out["standin_n"] == 400  # 0.01 at 400 units is twice the per-unit spread of 0.01 at 100


def test_a_fixed_rule_keeps_its_size_and_says_why():
    rule = _rule(chapter="manifolds", parameter="analysis_sample", fixed="because", cap=77)
    out = precision.plan_row(rule, [], TABLES)
    assert out["n"] == profile_params("manifolds", "paper")["analysis_sample"] and out["reason"] == "because"


def test_a_shared_parameter_takes_the_largest_size():
    plan = [
        {"chapter": "a", "parameter": "n", "n": 5, "standin": "x"},
        {"chapter": "a", "parameter": "n", "n": 9, "standin": "y"},
        {"chapter": "a", "parameter": "m", "n": 3, "standin": ""},  # inherited: not chosen
    ]
    assert precision.chosen_sizes(plan) == {("a", "n"): 9}


@pytest.mark.parametrize("n", [1, 7, 10, 99, 101, 12_345])
def test_round_up_never_rounds_down(n):
    assert precision._round_up(n, 2) >= n


def test_every_rule_names_real_paper_numbers_and_parameters():
    for rule in precision.RULES:
        if not rule.fixed:
            assert precision.select_rows(list(rule.refs), TABLES)
        assert rule.parameter in profile_params(rule.chapter, "paper"), rule


def test_a_bias_asks_for_a_larger_size():
    row = _row("c", "Pearson r (a, b)", "m", 0.01, 100)
    plain = precision.plan_row(_rule(), [row], TABLES)
    biased = precision.plan_row(_rule(), [row | {"bias": "0.01"}], TABLES)
    assert int(biased["n"]) > int(plain["n"])
    assert float(biased["spread"]) <= sampling.BAND_FRACTION * 0.0005 * (1 + 1e-9)


def test_every_paper_profile_size_is_at_least_its_plans():
    """Each size of the paper profile is at least the written plan's n for its statistic (book/sampling_plan.csv,
    the table on the page); the whole data set (None) is at least any n."""
    if not precision.PLAN_CSV.exists():
        pytest.skip("book/sampling_plan.csv not generated")
    for row in read_csv(precision.PLAN_CSV):
        have = profile_params(row["chapter"], "paper")[row["parameter"]]
        if have is None:
            continue
        assert row["n"] != "all" and have >= int(row["n"]), (row["chapter"], row["parameter"], row["claims"])


def test_the_written_plan_is_the_rules_plan():
    """book/sampling_plan.csv is what the rule computes from book/sampling.csv now (not a stale copy)."""
    if not precision.PLAN_CSV.exists():
        pytest.skip("book/sampling_plan.csv not generated")
    written = read_csv(precision.PLAN_CSV)
    assert [{k: str(v) for k, v in r.items()} for r in precision.plan_rows()] == written


def test_paper_profile_holds_the_chosen_sizes():
    """The paper profile's tables hold the sizes the rule chooses from book/sampling.csv (the plan)."""
    if not precision.SAMPLING_CSV.exists():
        pytest.skip("book/sampling.csv not generated")
    for (chapter, parameter), n in precision.chosen_sizes(precision.plan_rows()).items():
        assert profile_params(chapter, "paper")[parameter] == n, (chapter, parameter)


def test_plan_rows_appear_on_the_chapters_validation_page(tmp_path):
    from bookkit.book.book import plan_markdown

    plan = tmp_path / "plan.csv"
    row = {c: "" for c in precision.PLAN_COLUMNS} | dict(chapter="manifolds", claims="lid_*", parameter="lid_queries",
                                                          unit="query tokens", n="3000", paper_n="200000",
                                                          reason="why")  # fmt: skip
    import csv

    with open(plan, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=precision.PLAN_COLUMNS)
        w.writeheader()
        w.writerow(row)
    page = "\n".join(plan_markdown("manifolds", plan))
    assert "3,000 query tokens" in page and "200,000" in page and "why" in page
    assert plan_markdown("isoscore", plan) == [] and plan_markdown("manifolds", tmp_path / "none.csv") == []


def test_every_sampled_paper_claim_has_a_size():
    """Each claim of the ruled chapters that compares a paper number with a recorded spread in the paper
    profile falls under a rule (its size, spread and reason in the plan)."""
    from fnmatch import fnmatchcase

    from bookkit.claims.claims import load_claims
    from bookkit.project import find_root

    root = find_root()
    for chapter in {r.chapter for r in precision.RULES}:
        globs = [g.strip() for r in precision.RULES if r.chapter == chapter for g in r.claims.split(",")]
        cc = load_claims(root / "notebooks" / f"{chapter}.claims.yml")
        sampled = [c.key for c in cc.claims if c.spread and "unverified" not in c.checks["paper"] and c.ref]
        assert sampled, chapter
        missing = [k for k in sampled if not any(fnmatchcase(k, g) for g in globs)]
        assert not missing, (chapter, missing)


def test_the_global_sample_holds_the_pair_and_residue_proteins():
    plan = [
        {"chapter": "protein_isotropy", "parameter": "n_global", "n": 100, "standin": "x"},
        {"chapter": "protein_isotropy", "parameter": "n_pair_proteins", "n": 3578, "standin": "x"},
        {"chapter": "protein_isotropy", "parameter": "n_local", "n": 5000, "standin": "x"},
    ]
    assert precision.chosen_sizes(plan)["protein_isotropy", "n_global"] == 5000


def test_a_size_whose_band_missed_is_not_a_floor():
    row = _row("c", "Pearson r (a, b)", "m", 0.01, 100) | {"covered": "0.80", "n_full": "1000"}
    out = precision.plan_row(_rule(cap=10_000), [row], TABLES)
    assert out["n"] == 1000 and "missed" in out["reason"]


def test_the_plan_table_shows_a_whole_data_set_size_as_a_word(tmp_path):
    """A size 'all' (the whole data set, no stand-in measured) broke the book build with int('all')."""
    from bookkit.book.book import plan_markdown

    plan = tmp_path / "plan.csv"
    plan.write_text(
        "chapter,claims,statistic,parameter,unit,paper_n,spread,standin,reason,n\n"
        "alpha,a_*,IsoScore,n_global,proteins,570000,,,no stand-in measured,all\n"
    )
    md = "\n".join(plan_markdown("alpha", plan))
    assert "| all proteins | 570,000 |" in md
