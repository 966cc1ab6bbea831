"""Verdicts over several seeds (bookkit.claims.seeds) and the runner's --seeds."""

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from bookkit.claims.claims import Claim, ClaimsFileError, load_claims
from bookkit.claims.seeds import combine_claim
from bookkit.run import runner

FIXTURES = Path(__file__).parent / "fixtures" / "runner"


def _claim(check, seeds="all", paper_value=None):
    checks = {"smoke": check, "offline": check, "paper": {"unverified": "n/a"}}
    return Claim("ch", "k", "a claim", paper_value, "src", checks, seeds=seeds)


def _combine(claim, *values):
    return combine_claim(claim, "offline", {s: {"k": v} for s, v in enumerate(values)}, {})


def test_all_rule_same_verdict_kept_and_flip_is_inconclusive():
    c = _claim({"property": {"op": "gt", "value": 0.0}})
    same = _combine(c, 0.2, 0.3)
    assert same["status"] == "consistent" and same["seed_statuses"] == {"0": "consistent", "1": "consistent"}
    assert same["seed_values"] == {"0": 0.2, "1": 0.3} and same["value"] == 0.2
    flip = _combine(c, 0.2, -0.1)
    assert flip["status"] == "inconclusive" and "depends on the seed" in flip["detail"]


def test_a_flipping_expected_failure_is_inconclusive_never_a_deviation():
    c = _claim({"property": {"op": "gt", "value": 0.0}, "expected_failure": "it rises"})
    assert _combine(c, -0.01, -0.02)["status"] == "expected_failure"
    assert _combine(c, -0.0146, 0.0055)["status"] == "inconclusive"


def test_worst_rule_shows_the_worst_seed_and_never_decides_by_one_seed():
    c = _claim({"property": {"op": "gt", "value": 0.0}}, seeds="worst")
    ok = _combine(c, 0.2, 0.1)
    assert ok["status"] == "consistent" and ok["value"] == 0.1 and "worst case" in ok["detail"]
    r = _combine(c, 0.2, -0.1)  # one seed on each side of the bound: a coin toss, neither passed nor failed
    assert r["status"] == "inconclusive" and r["value"] == -0.1
    assert _combine(c, -0.2, -0.1)["status"] == "failed"  # every seed fails
    lt = _claim({"property": {"op": "lt", "value": 0.18}}, seeds="worst")
    assert _combine(lt, 0.1, 0.17)["value"] == 0.17
    assert _combine(lt, 0.1, 0.19)["status"] == "inconclusive"
    assert _combine(lt, 0.2, 0.19)["status"] == "failed"
    xf = _claim({"property": {"op": "gt", "value": 0.0}, "expected_failure": "rises"}, seeds="worst")
    assert _combine(xf, 0.01, -0.01)["status"] == "inconclusive"  # the failure is not beyond the seeds' spread
    assert _combine(xf, -0.02, -0.01)["status"] == "expected_failure"


def test_a_spread_that_straddles_the_bound_is_inconclusive_for_every_seed():
    checks = {p: {"property": {"op": "gt", "value": 0.0}} for p in ("smoke", "offline")}
    c = Claim("ch", "k", "a claim", None, "src", {**checks, "paper": {"unverified": "n/a"}}, spread="k_se")
    per_seed = {0: {"k": 0.01, "k_se": 0.02}, 1: {"k": -0.01, "k_se": 0.02}, 2: {"k": 0.03, "k_se": 0.02}}
    r = combine_claim(c, "offline", per_seed, {})
    assert r["status"] == "inconclusive" and set(r["seed_statuses"].values()) == {"inconclusive"}
    firm = combine_claim(c, "offline", {0: {"k": 0.1, "k_se": 0.02}, 1: {"k": 0.09, "k_se": 0.02}}, {})
    assert firm["status"] == "consistent"


def test_mean_rule_compares_the_mean_with_its_spread():
    c = _claim({"property": {"op": "gt", "value": 0.0}}, seeds="mean")
    assert _combine(c, 1.0, 1.1, 0.9)["status"] == "consistent"
    r = _combine(c, 0.01, -0.02)
    assert r["status"] == "inconclusive" and "straddles" in r["detail"]
    tol = _claim({"tolerance": {"abs": 0.05}}, seeds="mean", paper_value=0.5)
    assert _combine(tol, 0.5, 0.51)["status"] == "reproduced"
    assert _combine(tol, 0.4, 0.41)["status"] == "failed"


def test_non_numeric_or_missing_values_fail_never_inconclusive():
    c = _claim({"property": {"op": "gt", "value": 0.0}}, seeds="worst")
    r = combine_claim(c, "offline", {0: {"k": 0.2}, 1: {}}, {})
    assert r["status"] == "failed" and r["seed_rule"] == "all" and "seed 1" in r["detail"]
    crash = combine_claim(c, "offline", {0: {"k": 0.2}, 1: {"k": 0.3}}, {1: "timeout"})
    assert crash["status"] == "failed" and "did not complete" in crash["detail"]
    nan = combine_claim(c, "offline", {0: {"k": float("nan")}, 1: {"k": float("nan")}}, {})
    assert nan["status"] == "failed"


def _write_claims(tmp_path, extra):
    p = tmp_path / "x.claims.yml"
    p.write_text(
        textwrap.dedent(
            """\
            chapter: x
            title: x
            claims:
              - key: k
                claim: c
                paper: {value: 0.5, source: s}
            """
        )
        + textwrap.indent(textwrap.dedent(extra), "    ")
    )
    return p


def test_loader_refuses_a_rule_that_cannot_combine_the_check(tmp_path):
    ok = _write_claims(
        tmp_path,
        """\
        seeds: worst
        checks: {smoke: {property: {op: gt, value: 0}}, offline: {property: {op: gt, value: 0}}, paper: {unverified: r}}
        """,
    )
    assert load_claims(ok).claims[0].seeds == "worst"
    for extra in (
        "seeds: worst\nchecks: {smoke: {tolerance: {abs: 1}}, offline: {tolerance: {abs: 1}}, paper: {unverified: r}}\n",
        "seeds: median\nchecks: {smoke: {unverified: r}, offline: {unverified: r}, paper: {unverified: r}}\n",
        "seeds: mean\nchecks: {smoke: {property: {op: 'true'}}, offline: {unverified: r}, paper: {unverified: r}}\n",
    ):
        with pytest.raises(ClaimsFileError, match="seeds"):
            load_claims(_write_claims(tmp_path, extra))


SEEDED = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# seeded

```{code-cell}
:tags: [parameters]

profile = None
seed = 0
```

```{code-cell}
from replib import record
record("stable", 1.0 + seed)
record("flips", 0.1 if seed == 0 else -0.1)
```
"""

SEEDED_CLAIMS = """\
chapter: seeded
title: seeded
timeout: {smoke: 120, offline: 120, paper: 120}
claims:
  - key: stable
    claim: positive whatever the seed
    paper: {value: null, source: fixture}
    checks:
      smoke: {property: {op: gt, value: 0}}
      offline: {property: {op: gt, value: 0}}
      paper: {unverified: n/a}
  - key: flips
    claim: positive for one seed only
    paper: {value: null, source: fixture}
    checks:
      smoke: {property: {op: gt, value: 0}}
      offline: {property: {op: gt, value: 0}}
      paper: {unverified: n/a}
"""


@pytest.mark.chapter
def test_runner_runs_each_seed_and_a_flip_is_inconclusive(tmp_path):
    project = tmp_path / "p"
    shutil.copytree(FIXTURES, project)
    (project / "notebooks" / "seeded.md").write_text(SEEDED)
    (project / "notebooks" / "seeded.claims.yml").write_text(SEEDED_CLAIMS)
    out = tmp_path / "out"
    rep = runner.run("smoke", chapters=["seeded"], out_dir=out, root=project, seeds=[0, 1], progress=lambda m: None)
    by_key = {c["key"]: c for c in rep["claims"]}
    assert by_key["stable"]["status"] == "consistent"
    assert by_key["stable"]["seed_values"] == {"0": 1.0, "1": 2.0}
    assert by_key["flips"]["status"] == "inconclusive"
    # a flip is inconclusive: counted apart, never a pass and never a failure of the run
    assert rep["summary"]["inconclusive"] == 1 and rep["summary"]["failed"] == 0
    entry = rep["chapters"][0]
    assert set(entry["seeds"]) == {"0", "1"} and entry["notebook"] == "notebooks/seeded.ipynb"
    assert (out / "notebooks" / "seeded.seed-1.ipynb").exists()
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk["seeds"] == [0, 1]
    # check-only re-checks both seeds from the notebooks on disk, without --seeds
    again = runner.run(
        "smoke", chapters=["seeded"], out_dir=out, root=project, check_only=True, progress=lambda m: None
    )
    assert {c["key"]: c["status"] for c in again["claims"]} == {"stable": "consistent", "flips": "inconclusive"}
    one = runner.run("smoke", chapters=["seeded"], out_dir=out, root=project, seeds=[1], progress=lambda m: None)
    assert {c["key"]: c["status"] for c in one["claims"]}["flips"] == "failed"


def test_seeds_must_be_distinct(tmp_path):
    with pytest.raises(ValueError, match="distinct"):
        runner.run("smoke", out_dir=tmp_path, root=FIXTURES, seeds=[0, 0])


def test_details_show_values_as_a_reader_reads_them():
    """No 17-digit repr of a float in a detail, and no '(None)' for an unverified claim's missing value."""
    c = _claim({"property": {"op": "gt", "value": 0.1}})
    out = _combine(c, 0.25736912345678901, 0.30000000000000004)
    assert "0.257369 gt 0.1" in out["detail"] and "0.30000000000000004" not in out["detail"]
    unverified = Claim("ch", "k", "a claim", None, "src", {"offline": {"unverified": "needs a GPU"}})
    out = combine_claim(unverified, "offline", {0: {}, 1: {}}, {})
    assert out["status"] == "unverified" and "None" not in out["detail"] and "needs a GPU" in out["detail"]
