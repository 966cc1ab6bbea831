"""The reliability page of the book (``book/reliability.md``): every bad input or fault the tests try, what it
gets, and the test that tries it, read from the tests themselves.

A test that probes a fault carries the marker ``@pytest.mark.probe(FAULT, GETS)`` (registered in
``pyproject.toml``): ``FAULT`` says what is fed in (a malformed file, a kill, a server that drips bytes),
``GETS`` what the book does about it. :func:`collect` reads the markers from the test files without running
them (``ast``), :func:`render` makes the table, and ``python -m bookkit.book.reliability`` writes it into the page
between :data:`BEGIN` and :data:`END`; ``--check`` exits 1 when the page is not the table of the tests as they
are (the unit tests check it too), so the page cannot drift from the tests.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from replib._io import atomic_write

__all__ = ["BEGIN", "END", "PAGE", "Probe", "collect", "render", "update_page"]

#: the page, relative to the project root
PAGE = "book/reliability.md"
BEGIN = "<!-- reliability table: begin (python -m bookkit.book.reliability) -->"
END = "<!-- reliability table: end -->"


@dataclass(frozen=True)
class Probe:
    """One probe: the fault a test tries, what it gets, and the test (``file.py::name``)."""

    fault: str
    gets: str
    test: str


def _probe(dec: ast.Call, where: str, test: str) -> Probe:
    try:
        args = [ast.literal_eval(a) for a in dec.args]
        kw = {k.arg: ast.literal_eval(k.value) for k in dec.keywords}
    except ValueError:
        raise ValueError(f"{where}: pytest.mark.probe takes two literal strings (fault, gets)") from None
    values = [*args, *(kw[k] for k in ("fault", "gets") if k in kw)]
    if len(values) != 2 or not all(isinstance(v, str) and v.strip() for v in values):
        raise ValueError(f"{where}: pytest.mark.probe takes two non-empty strings (fault, gets); got {values!r}")
    return Probe(values[0], values[1], test)


def collect(tests_dir) -> list[Probe]:
    """Every probe marker of the ``test_*.py`` files in ``tests_dir``, by file name, in the order of the file.

    Raises
    ------
    ValueError
        ``file:line`` of a marker that is not ``probe(FAULT, GETS)`` with two literal strings.
    """
    probes = []
    for path in sorted(Path(tests_dir).glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and ast.unparse(dec.func) == "pytest.mark.probe":
                    probes.append(_probe(dec, f"{path}:{dec.lineno}", f"{path.name}::{node.name}"))
    return probes


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render(probes: list[Probe]) -> str:
    """The Markdown table of ``probes``: fault, what it gets, test."""
    lines = ["| bad input or fault | what it gets | test |", "|---|---|---|"]
    lines += [f"| {_cell(p.fault)} | {_cell(p.gets)} | `{p.test}` |" for p in probes]
    return "\n".join(lines)


def update_page(page, probes: list[Probe], *, check: bool = False) -> bool:
    """Write the table of ``probes`` into ``page`` between :data:`BEGIN` and :data:`END`; returns whether it
    changed. With ``check``, nothing is written.

    Raises
    ------
    ValueError
        The page lacks the markers.
    """
    page = Path(page)
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise ValueError(f"{page}: no reliability table markers ({BEGIN!r} ... {END!r}); add them where the table goes")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{render(probes)}\n{END}{tail}"
    if new != text and not check:
        atomic_write(page, lambda fh: fh.write(new), mode="w")
    return new != text


def main(argv: list[str] | None = None) -> int:
    """``python -m bookkit.book.reliability [--root ROOT] [--check]``: write (or check) the page's table."""
    ap = argparse.ArgumentParser(prog="python -m bookkit.book.reliability", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2], help="the project root")
    ap.add_argument("--check", action="store_true", help="exit 1 when the page is not up to date; write nothing")
    args = ap.parse_args(argv)
    try:
        changed = update_page(args.root / PAGE, collect(args.root / "tests"), check=args.check)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check and changed:
        print(f"{args.root / PAGE} is not the table of the tests' probes: run python -m bookkit.book.reliability")
        return 1
    print(f"{args.root / PAGE}: {'updated' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
