"""``python -m bookkit.bench.precision_shift``: how far each chapter's statistics move when its forward passes run
under bf16 autocast instead of float32, over the bands its claims judge them by.

A chapter runs its forward passes in bf16 on a CPU with native bf16 only where every one of its statistics was
measured to move by less than a tenth of its band (:func:`replib.profiles.chapter_precision`). This module makes
that measurement: it executes the chapter's notebook (offline profile, seed 0) with ``REPLIB_PRECISION=bf16``,
reads the float32 records of an earlier execution (the main job's, or a run it makes with
``REPLIB_PRECISION=fp32``), and writes one row per claim with a band to
:data:`replib.profiles.SHIFT_FILE`. A claim's band, in the offline profile:

- a tolerance around the paper's value: its half-width (the narrowest of ``abs``, ``rel``, ``log10``);
- a value judged with its recorded spread (``spread:``): one standard error (the checker's interval is two);
- a property with a numeric bound and no spread: the margin between the float32 value and the bound (a shift
  below a tenth of it cannot move the value across the bound).

Claims that are unverified in the profile, sanity checks (they hold by construction), booleans and values
without a numeric bound have no band and no row.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from datetime import date
from pathlib import Path
from unittest import mock

import nbformat

from replib._io import read_csv, write_csv_atomic
from replib._validation import finite_number
from replib.profiles import PRECISION_ENV, SHIFT_COLUMNS, SHIFT_FILE
from replib.record import read_records

from ..claims.checker import ChapterClaims, split_check, tolerance_width
from ..claims.claims import load_claims
from ..project import find_root
from ..run.run_times import machine

#: the chapters whose forward passes follow :attr:`replib.config.ChapterConfig.precision` (the classifiers'
#: SBERT vectors go through sentence-transformers' own modules and stay float32)
CHAPTERS = ("cluster_isotropy", "manifolds", "isoscore")
#: the profile whose forward passes the choice applies to
PROFILE = "offline"


def claim_bands(claims: ChapterClaims, records: dict, profile: str = PROFILE) -> dict[str, tuple[float, str]]:
    """``value key -> (band, what it is)`` of every claim of ``claims`` with a band in ``profile`` (see the module
    docstring), from the float32 ``records``."""
    out = {}
    for c in claims.claims:
        check = c.checks.get(profile)
        if not check or c.sanity:
            continue
        kind, spec, _ = split_check(check)
        value = records.get(c.value_key)
        if kind == "unverified" or not finite_number(value):
            continue
        if kind == "tolerance" and finite_number(c.paper_value):
            widths = tolerance_width({k: v for k, v in spec.items() if k != "printed"}, float(c.paper_value))
            if widths:
                out[c.value_key] = (min(widths.values()), "tolerance")
        elif c.spread is not None and finite_number(records.get(c.spread)):
            out[c.value_key] = (float(records[c.spread]), "spread")
        elif kind == "property" and finite_number(spec.get("value")) and spec.get("key") is None:
            out[c.value_key] = (abs(float(value) - float(spec["value"])), "margin")
    return out


def shift_rows(chapter: str, claims: ChapterClaims, fp32: dict, bf16: dict, profile: str = PROFILE) -> list[dict]:
    """One row per claim with a band: both values, the shift and the band, and the shift over the band."""
    rows = []
    for key, (band, what) in claim_bands(claims, fp32, profile).items():
        if not finite_number(bf16.get(key)):
            raise ValueError(f"{chapter}: {key} recorded in float32 but not as a finite number in bf16")
        shift = abs(float(bf16[key]) - float(fp32[key]))
        ratio = shift / band if band > 0 else (0.0 if shift == 0 else math.inf)
        rows.append(dict(chapter=chapter, key=key, fp32=f"{float(fp32[key]):.6g}", bf16=f"{float(bf16[key]):.6g}"))
        rows[-1].update(shift=f"{shift:.3g}", band=f"{band:.3g}", band_from=what, shift_of_band=f"{ratio:.3g}")
        rows[-1].update(date=date.today().isoformat(), machine=machine())
    return rows


def executed_records(chapter: str, precision: str, out_dir: Path, root: Path) -> dict:
    """Execute ``chapter`` (offline, seed 0) with its forward passes in ``precision`` into ``out_dir``; its
    records."""
    from ..run.runner import run

    # the kernel inherits the variable and the chapter's configuration reads it; restored afterwards
    with mock.patch.dict(os.environ, {PRECISION_ENV: precision}):
        run(profile=PROFILE, chapters=[chapter], seeds=[0], out_dir=out_dir, force=True, root=root)
    return notebook_records(out_dir, chapter)


def notebook_records(runs_dir: Path, chapter: str) -> dict:
    """The records of the executed seed-0 notebook of ``chapter`` in a run's output folder."""
    path = Path(runs_dir) / "notebooks" / f"{chapter}.ipynb"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no executed notebook of {chapter} there")
    return read_records(nbformat.read(str(path), as_version=4))


def measure(chapters=CHAPTERS, fp32_from: Path | None = None, root: Path | None = None) -> list[dict]:
    """The rows of every chapter of ``chapters``: bf16 executed now, float32 read from ``fp32_from`` (a run's
    output folder whose seed-0 notebooks ran in float32) or executed now."""
    root = Path(root or find_root())
    rows = []
    with tempfile.TemporaryDirectory(prefix="precision-shift-") as tmp:
        for chapter in chapters:
            claims = load_claims(root / "notebooks" / f"{chapter}.claims.yml")
            if fp32_from is not None:
                fp32 = notebook_records(Path(fp32_from), chapter)
            else:
                fp32 = executed_records(chapter, "fp32", Path(tmp) / "fp32", root)
            bf16 = executed_records(chapter, "bf16", Path(tmp) / "bf16", root)
            rows += shift_rows(chapter, claims, fp32, bf16)
    return rows


def write_rows(rows: list[dict], path: Path = SHIFT_FILE) -> None:
    """Replace the measured chapters' rows of ``path`` by ``rows`` (other chapters' rows kept)."""
    measured = {r["chapter"] for r in rows}
    kept = [r for r in read_csv(path, SHIFT_COLUMNS) if r["chapter"] not in measured]
    write_csv_atomic(path, kept + rows, SHIFT_COLUMNS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bookkit.bench.precision_shift", description=__doc__.split("\n")[0])
    ap.add_argument("chapters", nargs="*", default=list(CHAPTERS))
    ap.add_argument("--fp32-from", type=Path, help="a run's output folder with the float32 seed-0 notebooks")
    ap.add_argument("--out", type=Path, default=SHIFT_FILE)
    a = ap.parse_args(argv)
    rows = measure(a.chapters, a.fp32_from)
    write_rows(rows, a.out)
    for ch in a.chapters:
        mine = [r for r in rows if r["chapter"] == ch]
        worst = max(mine, key=lambda r: float(r["shift_of_band"]), default=None)
        print(
            f"{ch}: {len(mine)} statistics; largest shift over band "
            + (f"{worst['shift_of_band']} ({worst['key']}, {worst['band_from']})" if worst else "none")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
