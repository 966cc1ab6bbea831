"""The entries of the data registry: a data set, its files and their archives (:mod:`replib.data.registry`)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Archive", "DataFile", "Dataset"]


@dataclass(frozen=True)
class Archive:
    """Canonical upstream archive of a file.

    Parameters
    ----------
    url : str
        URL of the archive (``.zip``, ``.tar.gz``/``.tgz``).
    member : str
        Path of the member inside the archive.
    identical : bool
        True when the member is expected to be byte-identical to the registered
        file (extraction is then verified against the registered sha256).  False
        when the registered file is derived from the member (see ``note``).
    note : str
        How the registered file was derived from the member, if it was.
    md5 : str or None
        A published md5 of the whole archive (verified before extraction when given).
    """

    url: str
    member: str
    identical: bool
    note: str = ""
    md5: str | None = None  # published checksum of the archive itself, where one exists


@dataclass(frozen=True)
class DataFile:
    """One file of a data set.

    Parameters
    ----------
    path : str
        Path relative to the mirror root (``REPLIB_DATA_MIRROR``) and to the cache.
    sha256 : str or None
        Expected sha256; None for paper-profile files without a fixed checksum.
    size, lines : int or None
        Bytes and newline count (from PROVENANCE.md).
    urls : tuple of str
        Direct URLs of exactly these bytes, tried in order (verified by sha256).
    archive : Archive or None
        Canonical upstream archive and member.
    canonical : str
        Human-readable canonical source (shown in error messages).
    in_mirror : bool
        Whether the offline mirror (``shared/data`` layout) holds the file.
    note : str
        Anything a user should know (re-splits, tokenisation, how to regenerate).
    md5 : str or None
        A *published* md5 of the file, for files whose sha256 could not be observed from a verified copy
        (an md5 second preimage is out of reach, so it still pins the bytes); verified like the sha256.
    """

    path: str
    sha256: str | None
    size: int | None = None
    lines: int | None = None
    urls: tuple[str, ...] = ()
    archive: Archive | None = None
    canonical: str = ""
    in_mirror: bool = True
    note: str = ""
    md5: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A data set: description, licence, parser and files (keyed by path inside its folder)."""

    name: str
    description: str
    homepage: str
    licence: str
    citation: str
    parser: str
    files: dict[str, DataFile] = field(default_factory=dict)
