"""The kit's own user-facing errors: what the command line prints in one line (:mod:`bookkit.cli`), with no
traceback. The kit and the science raise ``ValueError`` (a claims file, a bad option, a model spec) and
``OSError`` (a path) for bad input too; a :class:`KitError` is one that is neither."""

from __future__ import annotations

__all__ = ["BookBuildError", "KitError", "RunLockedError"]


class KitError(Exception):
    """A problem the user can fix, said in one line (what, where, what to do)."""


class RunLockedError(KitError, RuntimeError):
    """Another runner is writing into the same output folder."""


class BookBuildError(KitError, RuntimeError):
    """jupyter-book is missing or the book did not build."""
