"""Notebook hygiene: committed without outputs, one parameters cell, claims that the notebook records."""
import re
from pathlib import Path

import nbformat
import pytest
import yaml

from replib.claims import load_claims

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_chapters():
    assert NOTEBOOKS, "no chapter notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_committed_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} cell {i} has outputs: clear them before committing"
            assert cell.execution_count is None, f"{path.name} cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_parameters_cell_with_profile(path):
    nb = nbformat.read(path, as_version=4)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
    assert re.search(r"^profile\s*=", params[0].source, re.M), "the parameters cell must define `profile`"


def _recorded_patterns(source: str) -> tuple[set, list]:
    literal = set(re.findall(r"record\(\s*[\"']([A-Za-z0-9_.\-]+)[\"']", source))
    prefixes = re.findall(r"record\(\s*f[\"']([A-Za-z0-9_.\-]*)\{", source)
    return literal, prefixes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_claims_file_loads_and_every_key_is_recorded(path):
    claims_path = path.with_suffix(".claims.yml")
    assert claims_path.exists(), f"{path.name} has no claims file {claims_path.name}"
    claims = load_claims(claims_path)
    assert claims.chapter == path.stem
    assert claims.claims, "a chapter claims something"
    nb = nbformat.read(path, as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    literal, prefixes = _recorded_patterns(source)
    for c in claims.claims:
        if all("unverified" in chk for chk in c.checks.values()):
            continue
        assert c.key in literal or any(c.key.startswith(p) for p in prefixes if p), \
            f"{path.name}: claim key {c.key!r} is never passed to record()"


def test_every_chapter_is_in_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = re.findall(r"notebooks/([A-Za-z0-9_\-]+)", yaml.safe_dump(toc))
    assert sorted(files) == sorted(p.stem for p in NOTEBOOKS)


def test_glued_keys_are_recorded():
    """Every {glue:text}`key` in the prose names a key the notebook records."""
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        literal, prefixes = _recorded_patterns(code)
        for key in re.findall(r"\{glue(?::text)?\}`([A-Za-z0-9_.\-]+)", md):
            assert key in literal or any(key.startswith(p) for p in prefixes if p), f"{path.name}: glue {key!r}"
