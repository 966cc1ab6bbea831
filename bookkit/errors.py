"""The kit's own user-facing errors: what the command line prints in one line (:mod:`bookkit.cli`), with no
traceback. The kit and the science raise ``ValueError`` (a claims file, a bad option, a model spec) and
``OSError`` (a path) for bad input too; a :class:`KitError` is one that is neither."""

from __future__ import annotations

__all__ = ["USER_ERRORS", "BookBuildError", "KitError", "RunLockedError", "one_line"]


class KitError(Exception):
    """A problem the user can fix, said in one line (what, where, what to do)."""


class RunLockedError(KitError, RuntimeError):
    """Another runner is writing into the same output folder."""


class BookBuildError(KitError, RuntimeError):
    """jupyter-book is missing or the book did not build."""


#: exceptions that are the user's to fix (what the kit and the science raise for bad input); anything else is a
#: bug and keeps its traceback
USER_ERRORS = (ValueError, OSError, ImportError, KitError)


def one_line(exc: BaseException) -> str:
    """A user error in one line: the message with its lines joined; an operating-system error says what it
    could not do, with which file, and what to do."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        what = f"{exc.strerror}: {exc.filename}"
        if isinstance(exc, PermissionError):
            return f"{what}: choose a folder you can write to (or change its permissions)"
        if isinstance(exc, FileNotFoundError):
            return f"{what}: check the path"
        if isinstance(exc, (NotADirectoryError, FileExistsError)):
            return f"{what}: a file is in the way; choose another path"
        return what
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__
