"""Chapter hygiene: one MyST Markdown source per chapter, one parameters cell, boilerplate hidden on the
page, claims that the chapter records."""

import ast
import re
from functools import cache
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

from bookkit.claims.claims import load_claims
from bookkit.notebooks import colab_prose, read_chapter

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.md"))


def test_there_are_chapters():
    assert NOTEBOOKS, "no chapter notebooks found"


def test_no_second_source():
    """A chapter is one text file: no .ipynb copy and no generator script beside it."""
    assert not list((ROOT / "notebooks").glob("*.ipynb")), "commit chapters as notebooks/<name>.md only"
    assert not (ROOT / "tools" / "notebooks").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_source_is_a_myst_notebook_that_round_trips(path):
    """The .md is what jupytext writes for its notebook: editing it in Jupyter or as text is the same edit."""
    text = path.read_text()
    nb = jupytext.reads(text, fmt="md:myst")
    nbformat.validate(nb)
    assert jupytext.writes(nb, fmt="md:myst").strip() == text.strip(), (
        f"{path.name} is not in jupytext's md:myst form: run `jupytext --to md:myst {path.name}` (pre-commit does)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_science_first(path):
    """The page opens with the paper: a title cell first; the parameters and set-up cells are hidden."""
    nb = read_chapter(path)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), "the first code cell is the parameters cell"
    for cell in code[:2]:
        tags = set(cell.metadata.get("tags", []))
        assert tags & {"hide-cell", "remove-cell", "hide-input"}, f"{path.name}: set-up cell not hidden"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_parameters_cell_with_profile(path):
    nb = read_chapter(path)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{path.name} needs exactly one cell tagged 'parameters'"
    assert re.search(r"^profile\s*=", params[0].source, re.M), "the parameters cell must define `profile`"


@cache
def _helper_patterns() -> tuple[frozenset, tuple, tuple]:
    """Record keys built by the chapters' record helpers: functions named ``*_records`` in ``replib/methods``
    return ``{key: value}`` dicts that a chapter records in a loop. Their string constants count as recorded
    keys, and the constant head and tail of their f-strings as key prefixes and suffixes."""
    literal, prefixes, suffixes = set(), [], []
    for path in sorted((ROOT / "replib" / "methods").rglob("*.py")):
        tree = ast.parse(path.read_text())
        helpers = [fn for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and fn.name.endswith("_records")]
        if helpers:  # a module's key tables (a dict of keys at its top level, read by its helpers) count too
            for node in tree.body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
                    literal |= {
                        k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    }
        for fn in helpers:
            for node in ast.walk(fn):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    literal.add(node.value)
                elif isinstance(node, ast.JoinedStr) and len(node.values) > 1:
                    head, tail = node.values[0], node.values[-1]
                    if isinstance(head, ast.Constant) and head.value:
                        prefixes.append(head.value)
                    if isinstance(tail, ast.Constant) and tail.value:
                        suffixes.append(tail.value)
    return frozenset(literal), tuple(prefixes), tuple(suffixes)


def _recorded_patterns(source: str) -> tuple[set, list, list]:
    literal = set(re.findall(r"record\(\s*[\"']([A-Za-z0-9_.\-]+)[\"']", source))
    prefixes = re.findall(r"record\(\s*f[\"']([A-Za-z0-9_.\-]*)\{", source)
    suffixes = re.findall(r"record\(\s*f[\"']\{[^}\"']+\}([A-Za-z0-9_.\-]+)[\"']", source)  # f"{name}_pearson"
    if re.search(r"_records\(", source):  # the chapter records what record helpers return
        h_literal, h_prefixes, h_suffixes = _helper_patterns()
        literal |= h_literal
        prefixes += list(h_prefixes)
        suffixes += list(h_suffixes)
    return literal, prefixes, suffixes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_claims_file_loads_and_every_key_is_recorded(path):
    claims_path = path.with_name(path.stem + ".claims.yml")
    assert claims_path.exists(), f"{path.name} has no claims file {claims_path.name}"
    claims = load_claims(claims_path)
    assert claims.chapter == path.stem
    assert claims.claims, "a chapter claims something"
    nb = read_chapter(path)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    literal, prefixes, suffixes = _recorded_patterns(source)
    for c in claims.claims:
        if all("unverified" in chk for chk in c.checks.values()):
            continue
        key = c.record or c.key  # a finding's cell reads a record the chapter makes under its own key
        assert (
            key in literal or any(key.startswith(p) for p in prefixes if p) or any(key.endswith(x) for x in suffixes)
        ), f"{path.name}: claim key {key!r} is never passed to record()"


def test_every_chapter_is_in_the_toc():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = re.findall(r"notebooks/([A-Za-z0-9_\-]+)", yaml.safe_dump(toc))
    assert sorted(files) == sorted(p.stem for p in NOTEBOOKS)


def test_glued_keys_are_recorded():
    """Every {glue:text}`key` in the prose names a key the notebook records."""
    for path in NOTEBOOKS:
        nb = read_chapter(path)
        md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        literal, prefixes, _ = _recorded_patterns(code)
        for key in re.findall(r"\{glue(?::text)?\}`([A-Za-z0-9_.\-]+)", md):
            assert key in literal or any(key.startswith(p) for p in prefixes if p), f"{path.name}: glue {key!r}"


def test_colab_prose_puts_the_runs_values_in_place_of_glue_roles():
    """Colab shows MyST roles as raw text: the published runnable notebook carries the run's values."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_markdown_cell(
                "IsoScore is {glue:text}`iso:.3f`, cosine {glue}`cos` and {glue:text}`gone`."
            ),
            nbformat.v4.new_code_cell("record('iso', 0.21634)"),
        ]
    )
    out = colab_prose(nb, {"iso": "0.21634", "cos": "0.5"}, "the book's `offline` run of commit abc")
    assert out.cells[1].source.startswith("*The numbers in this notebook's text are those of the book's `offline`")
    assert out.cells[2].source == "IsoScore is 0.216, cosine 0.5 and `gone`."
    assert out.cells[3].source == "record('iso', 0.21634)"  # code untouched
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# No roles")])
    assert len(colab_prose(plain, {}, "x").cells) == 1  # nothing to explain


def test_the_command_line_runs_without_the_book_extra():
    """A Colab or GPU machine installs ``replib[colab]`` (no myst-nb, Sphinx or Selenium): the runner, the
    rehearsal and the Colab report must import there."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('myst_nb', 'sphinx', 'jupyter_book', 'myst_parser', 'selenium'):\n"
        "            raise ModuleNotFoundError(name, name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import bookkit.cli, bookkit.run.runner, bookkit.bench.rehearsal, bookkit.run.colab\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
