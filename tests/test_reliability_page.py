"""The reliability page (book/reliability.md) is the table of the tests' probe markers, up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookkit.book import reliability

ROOT = Path(__file__).resolve().parents[1]


def test_the_reliability_page_is_the_table_of_the_tests_probes():
    probes = reliability.collect(ROOT / "tests")
    assert len(probes) >= 30 and len({p.test for p in probes}) >= 30
    assert not reliability.update_page(ROOT / reliability.PAGE, probes, check=True), (
        "book/reliability.md is out of date: run python -m bookkit.book.reliability"
    )
    text = (ROOT / reliability.PAGE).read_text()
    assert all(f"`{p.test}`" in text for p in probes)


def test_a_probe_marker_is_read_from_the_source_and_a_bad_one_names_its_line(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n\n@pytest.mark.slow\n@pytest.mark.probe('a | fault', 'what it gets')\ndef test_a():\n    pass\n"
    )
    (probe,) = reliability.collect(tmp_path)
    assert probe == reliability.Probe("a | fault", "what it gets", "test_x.py::test_a")
    assert "| a \\| fault | what it gets | `test_x.py::test_a` |" in reliability.render([probe])
    (tmp_path / "test_y.py").write_text("import pytest\n\n\n@pytest.mark.probe('only one')\ndef test_b():\n    pass\n")
    with pytest.raises(ValueError, match=r"test_y\.py:4: pytest\.mark\.probe takes two"):
        reliability.collect(tmp_path)


def test_check_reports_a_stale_page_and_writing_fixes_it(tmp_path, capsys):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import pytest\n\n\n@pytest.mark.probe('f', 'g')\ndef test_a():\n    pass\n"
    )
    (tmp_path / "book").mkdir()
    page = tmp_path / reliability.PAGE
    page.write_text(f"# Reliability\n\n{reliability.BEGIN}\n{reliability.END}\n")
    assert reliability.main(["--root", str(tmp_path), "--check"]) == 1
    assert reliability.main(["--root", str(tmp_path)]) == 0
    assert reliability.main(["--root", str(tmp_path), "--check"]) == 0
    assert "| f | g | `test_x.py::test_a` |" in page.read_text()
    page.write_text("# no markers\n")
    assert (
        reliability.main(["--root", str(tmp_path)]) == 2 and "no reliability table markers" in capsys.readouterr().err
    )
