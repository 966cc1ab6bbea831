"""The errors of :mod:`replib.models`: one class per way a model cannot be used, each with a one-line message
(what, where, what to do). They all derive from :class:`ModelUnavailableError` (a ``ValueError``), so a caller
that reports user errors catches that one class; tracebacks are the command line's business."""

from __future__ import annotations

__all__ = [
    "ModelUnavailableError",
    "UntrustedCodeError",
    "NoTokenizerError",
    "CorruptModelFileError",
    "WrongModelKindError",
]


class ModelUnavailableError(ValueError):
    """The model cannot be loaded here (not cached while offline, unknown spec); the message says what to do."""


class UntrustedCodeError(ModelUnavailableError):
    """A model asks to run its own Python code (``auto_map`` in its configuration); the book never does."""


class NoTokenizerError(ModelUnavailableError):
    """A model folder holds no tokenizer file."""


class CorruptModelFileError(ModelUnavailableError):
    """A model or word-vector file is truncated or malformed."""


class WrongModelKindError(ModelUnavailableError):
    """A chapter was given a model of the wrong kind (a text model where a protein model is needed)."""
