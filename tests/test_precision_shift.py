"""The measurement behind a chapter's bf16 choice (bookkit.bench.precision_shift): each claim's band in the
offline profile, and the shift of its value over that band."""

import math
import textwrap

import pytest

from bookkit.bench.precision_shift import claim_bands, shift_rows, write_rows
from bookkit.claims.claims import load_claims
from replib._io import read_csv
from replib.profiles import SHIFT_COLUMNS, measured_shift

CLAIMS = """
chapter: x
title: X
claims:
  - key: tol
    claim: within a tolerance of the paper
    paper: {value: 2.0, source: "Table 1, p. 3"}
    checks:
      smoke: {unverified: "tiny model"}
      offline: {tolerance: {abs: 0.1, rel: 0.2}}
      paper: {unverified: "needs a GPU"}
  - key: spread
    claim: positive, judged with its spread
    paper: {value: null, source: "Sec. 2"}
    spread: spread_se
    checks:
      smoke: {unverified: "tiny model"}
      offline: {property: {op: gt, value: 0}}
      paper: {unverified: "needs a GPU"}
  - key: margin
    claim: above a half
    paper: {value: null, source: "Sec. 2"}
    checks:
      smoke: {unverified: "tiny model"}
      offline: {property: {op: gt, value: 0.5}}
      paper: {unverified: "needs a GPU"}
  - key: built
    claim: an identity of the code
    sanity: true
    paper: {value: null, source: "ours"}
    checks:
      smoke: {property: {op: lt, value: 1.0e-9}}
      offline: {property: {op: lt, value: 1.0e-9}}
      paper: {property: {op: lt, value: 1.0e-9}}
  - key: later
    claim: needs the paper's model
    paper: {value: 3.0, source: "Table 2"}
    checks:
      smoke: {unverified: "tiny model"}
      offline: {unverified: "needs the paper's weights"}
      paper: {tolerance: {abs: 0.1}}
"""


@pytest.fixture
def claims(tmp_path):
    path = tmp_path / "notebooks" / "x.claims.yml"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(CLAIMS))
    return load_claims(path)


def test_each_claim_with_a_band_gets_the_band_its_check_judges_by(claims):
    fp32 = {"tol": 2.05, "spread": 0.3, "spread_se": 0.02, "margin": 0.8, "built": 1e-12, "later": 1.0}
    bands = claim_bands(claims, fp32)
    assert set(bands) == {"tol", "spread", "margin"}  # no band: a sanity check, an unverified claim
    assert bands["tol"] == (pytest.approx(0.1), "tolerance")  # the narrowest of abs 0.1 and rel 0.2 x 2.0
    assert bands["spread"] == (0.02, "spread")
    assert bands["margin"] == (pytest.approx(0.3), "margin")


def test_the_shift_over_the_band_is_what_the_choice_reads(claims, tmp_path):
    fp32 = {"tol": 2.05, "spread": 0.3, "spread_se": 0.02, "margin": 0.8}
    bf16 = {"tol": 2.051, "spread": 0.304, "spread_se": 0.02, "margin": 0.8}
    rows = {r["key"]: r for r in shift_rows("x", claims, fp32, bf16)}
    assert float(rows["tol"]["shift_of_band"]) == pytest.approx(0.01, rel=1e-2)
    assert float(rows["spread"]["shift_of_band"]) == pytest.approx(0.2, rel=1e-2)
    assert float(rows["margin"]["shift_of_band"]) == 0.0
    path = tmp_path / "shift.csv"
    write_rows(list(rows.values()), path)
    write_rows([dict(rows["tol"], chapter="y")], path)  # another chapter's rows are kept
    assert measured_shift("x", path) == pytest.approx(0.2, rel=1e-2) and measured_shift("y", path) < 0.1
    assert [r["key"] for r in read_csv(path, SHIFT_COLUMNS)] == ["tol", "spread", "margin", "tol"]
    with pytest.raises(ValueError, match="margin recorded in float32 but not"):
        shift_rows("x", claims, fp32, {**bf16, "margin": math.nan})
