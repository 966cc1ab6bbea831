"""Paths built from remote or user input stay in their folder (replib._io.confined): the Hub cache, the
chapters' notebooks, the parts' executions."""

from __future__ import annotations

import pytest

from bookkit.project import chapter_source
from bookkit.run.parts import part_notebook
from replib._io import UnsafePathError, confined


@pytest.mark.parametrize("parts", [("..",), ("../x",), ("a/../../x",), ("/etc/passwd",), ("",), ("a\0b",), ("a\\..",)])
def test_a_name_that_leaves_its_folder_is_refused(tmp_path, parts):
    with pytest.raises(UnsafePathError, match="refused"):
        confined(tmp_path / "root", *parts, what="file name")


def test_names_inside_are_kept_and_a_symlinked_folder_out_is_refused(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    assert confined(root, "sub/../a.txt") == root / "a.txt"
    assert confined(root, "refs", "pr/1") == root / "refs" / "pr" / "1"
    (root / "out").symlink_to(tmp_path)  # a link already in the tree that points outside
    with pytest.raises(UnsafePathError, match="leaves"):
        confined(root, "out/x")
    (root / "sub" / "link").symlink_to(tmp_path / "elsewhere")  # the last component is replaced, not followed
    assert confined(root, "sub/link") == root / "sub" / "link"


@pytest.mark.probe(
    "a chapter or part name that climbs out of its folder (from a report being merged, or the command line)",
    "`UnsafePathError` naming it; no file outside `notebooks/` is read or written",
)
def test_chapter_and_part_names_stay_in_their_folders(tmp_path):
    with pytest.raises(UnsafePathError):
        chapter_source(tmp_path, "../../etc/passwd")
    with pytest.raises(UnsafePathError):
        part_notebook(tmp_path, "isoscore", "../../../x")
    assert chapter_source(tmp_path, "isoscore") == tmp_path / "notebooks" / "isoscore.md"
