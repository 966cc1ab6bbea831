"""A part of a real chapter records what the whole chapter records for it (smoke profile): the whole chapter
is the smoke run every test session shares (``smoke_book``), the part runs here, from the same caches."""

import math
from pathlib import Path

import pytest

from bookkit.run import runner
from replib.record import read_records

ROOT = Path(__file__).resolve().parents[1]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.chapter
@pytest.mark.parametrize(
    "chapter,part",
    [("protein_isotropy", "prot_bert"), ("cluster_isotropy", "tinygpt2"), ("training_dynamics", "text")],
)
def test_a_part_records_the_whole_chapters_values_for_it(smoke_book, tmp_path, chapter, part):
    rep = runner.run("smoke", chapters=[chapter], out_dir=tmp_path, root=ROOT, part=part, progress=lambda *_: None)
    entry = rep["chapters"][0]
    assert entry["status"] == "ok", entry["error"]
    own = entry["parts"][part]["records"]
    whole = read_records(smoke_book.executed / f"{chapter}.ipynb")
    assert len(own) >= 3  # the part owns values of its own ...
    differ = {k: (v, whole.get(k, "<not recorded>")) for k, v in own.items() if not _same(v, whole.get(k))}
    assert not differ  # ... and computes them as the whole chapter does
    # its claims are checked; the others wait for their parts
    statuses = {c["status"] for c in rep["claims"]}
    assert "missing" in statuses and rep["summary"]["failed"] == 0, [
        (c["key"], c["detail"]) for c in rep["claims"] if c["status"] == "failed"
    ]
