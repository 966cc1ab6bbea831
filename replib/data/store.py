"""Resolve registered data files: mirror, cache, checksummed downloads.

Resolution order of :func:`fetch`:

1. ``REPLIB_DATA_MIRROR`` (or the ``mirror`` argument) as a local folder laid out
   like the offline mirror: the file is read in place, its sha256 is verified once
   and the verification is remembered by a stamp of (device, inode, size, mtime,
   ctime).  Any write to the file, and any ``touch -d`` that restores its mtime,
   changes the ctime, which cannot be set back without changing the system clock,
   so the file is re-hashed.  ``verify=True`` or ``REPLIB_VERIFY=1`` re-hashes
   every time; ``python -m replib.data verify`` re-hashes every registered file.
2. ``REPLIB_DATA_MIRROR`` as an ``http://``/``https://`` base URL with the same
   layout: the file is downloaded into the cache.
3. The cache (``$REPLIB_CACHE_DIR/data``, default ``~/.cache/replib/data``).
4. The registered direct URLs, then the canonical archive (only when its member
   is expected to be byte-identical, or the file has no fixed checksum).

Downloads are atomic, verified and time-limited (:func:`replib.data.download.download`). A file is downloaded
over plain ``http`` only when a registered checksum (sha256, or a published md5) pins its bytes; a file without
any checksum is fetched over ``https`` only, its observed sha256 recorded next to it and verified on later use.
Set ``REPLIB_DATA_OFFLINE=1`` to forbid network access (mirror and cache only).
"""

from __future__ import annotations

import json
import os
import tarfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from .._io import CacheLockTimeout, cache_lock, cache_root, hash_file, sha256_file, write_json_atomic
from ..provenance import note_data
from .download import (  # the public errors and download live with the downloader (re-exported)
    DEFAULT_TIMEOUT,
    MAX_BYTES,
    ChecksumError,
    DataNotFoundError,
    DownloadTimeoutError,
    DownloadTooLargeError,
    IncompleteDownloadError,
    InsecureSourceError,
    _extract_member,
    _is_url,
    _record_observed,
    download,
)
from .registry import DATASETS, DataFile, get_file

__all__ = [
    "fetch",
    "cache_dir",
    "DataNotFoundError",
    "ChecksumError",
    "IncompleteDownloadError",
    "DownloadTimeoutError",
    "DownloadTooLargeError",
    "InsecureSourceError",
    "sha256_file",
    "verify_all",
    "download",
]

MIRROR_ENV = "REPLIB_DATA_MIRROR"
OFFLINE_ENV = "REPLIB_DATA_OFFLINE"
VERIFY_ENV = "REPLIB_VERIFY"

#: seconds to wait for another run's update of the verification record before skipping this one
VERIFIED_LOCK_TIMEOUT = 60.0
_VERIFIED = ".verified.json"  # the verification record, in the cache folder
_verified_lock = threading.Lock()
_verified_memory: dict = {}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """Return the download cache folder.

    ``path`` if given, else ``$REPLIB_CACHE_DIR/data`` (default ``~/.cache/replib/data``).
    """
    return cache_root("data") if path is None else Path(path).expanduser()


# ----------------------------------------------------------------- verification cache
def _load_verified(cache: Path) -> dict:
    try:
        return json.loads((cache / _VERIFIED).read_text())
    except (OSError, ValueError):
        return {}


def _store_verified(cache: Path, key: str, value: dict) -> None:
    """Remember a verification (best effort: an unwritable or busy cache only costs speed).

    The record is read, updated and rewritten under the cache's lock, so runs that verify files at the same
    time each add their own entries and none is lost."""
    with _verified_lock:
        _verified_memory[key] = value
        try:
            with cache_lock(cache / _VERIFIED, timeout=VERIFIED_LOCK_TIMEOUT):
                db = _load_verified(cache)
                db[key] = value
                write_json_atomic(cache / _VERIFIED, dict(sorted(db.items())), indent=0)
        except (OSError, CacheLockTimeout):
            pass


def _expected_checksum(path: Path, entry: DataFile) -> tuple | None:
    """``(algorithm, hex digest, origin)`` the file must have: the registry's sha256, else its published md5,
    else the sha256 recorded next to a downloaded file (``<file>.sha256.json``); None if nothing is known."""
    if entry.sha256 is not None:
        return "sha256", entry.sha256, "registered"
    if entry.md5 is not None:
        return "md5", entry.md5, "published md5"
    side = path.with_name(path.name + ".sha256.json")
    try:
        return "sha256", json.loads(side.read_text())["sha256"], "recorded in %s" % side.name
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _stamp(st: os.stat_result, algorithm: str, digest: str) -> dict:
    """What must be unchanged for a past verification to count: ctime changes on every write and on every
    ``touch``/``utime`` (restoring the mtime sets the ctime to now), and the inode changes on replacement."""
    fields = ("size", "mtime_ns", "ctime_ns", "ino", "dev")
    return {k: getattr(st, "st_" + k) for k in fields} | {"algorithm": algorithm, "digest": digest}


def _verify_in_place(path: Path, entry: DataFile, cache: Path, verify: bool = False) -> None:
    """Verify ``path`` against its expected checksum (:class:`ChecksumError`); skip the hash when its stamp was
    verified before, unless ``verify`` (or ``REPLIB_VERIFY=1``)."""
    want = _expected_checksum(path, entry)
    if want is None:
        return
    algorithm, expected, origin = want
    st = path.stat()
    key = str(path.resolve())
    stamp = _stamp(st, algorithm, expected)
    if not (verify or _env_flag(VERIFY_ENV)):
        seen = _verified_memory.get(key) or _load_verified(cache).get(key)
        if seen == stamp:
            _verified_memory[key] = stamp
            return
    if entry.size is not None and st.st_size != entry.size:
        raise ChecksumError(
            "%s has %d bytes, expected %d (registry %s); the copy is truncated or a different "
            "version" % (path, st.st_size, entry.size, entry.path)
        )
    digest = hash_file(path, algorithm)
    if digest != expected:
        with _verified_lock:
            _verified_memory.pop(key, None)
        raise ChecksumError(
            "%s: %s %s differs from the %s %s (%s); the copy is corrupted or a "
            "different version" % (path, algorithm, digest, origin, expected, entry.path)
        )
    _store_verified(cache, key, stamp)


def verify_all(mirror: str | os.PathLike | None = None, cache: str | os.PathLike | None = None, datasets=None) -> list:
    """Re-hash every registered file present in the mirror folder and the cache.

    Returns
    -------
    list of (path, status, message)
        ``status`` is ``"ok"``, ``"FAILED"`` or ``"unpinned"`` (a file with no known checksum).
    """
    cache = cache_dir(cache)
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV) or None
    roots = [Path(mirror).expanduser()] if mirror is not None and not _is_url(str(mirror)) else []
    roots.append(cache)
    out = []
    for name in sorted(datasets or DATASETS):
        for entry in DATASETS[name].files.values():
            for root in roots:
                path = root / entry.path
                if not path.is_file():
                    continue
                if _expected_checksum(path, entry) is None:
                    out.append((path, "unpinned", "no registered or recorded checksum"))
                    continue
                try:
                    _verify_in_place(path, entry, cache, verify=True)
                except (ChecksumError, OSError) as exc:
                    out.append((path, "FAILED", str(exc)))
                else:
                    out.append((path, "ok", ""))
    return out


# ----------------------------------------------------------------------- download
def _missing_message(entry: DataFile, dataset: str, file: str, errors: list) -> str:
    lines = [
        "cannot find data file %s/%s (mirror path %s)." % (dataset, file, entry.path),
        "Set %s to a folder (or an http:// base URL) laid out like the offline mirror, e.g. "
        "%s=/path/to/shared/data, so that <mirror>/%s exists." % (MIRROR_ENV, MIRROR_ENV, entry.path),
    ]
    if entry.urls:
        lines.append("Direct source(s): " + ", ".join(entry.urls))
    if entry.archive is not None:
        a = entry.archive
        lines.append(
            "Canonical source: %s (member %s%s)"
            % (a.url, a.member, "" if a.identical else "; the registered file is derived from it: " + a.note)
        )
    if entry.canonical:
        lines.append("Canonical source: " + entry.canonical)
    if entry.note:
        lines.append("Note: " + entry.note)
    if errors:
        lines.append("Attempts: " + "; ".join(errors))
    return "\n".join(lines)


def fetch(
    dataset: str,
    file: str,
    *,
    mirror: str | os.PathLike | None = None,
    cache: str | os.PathLike | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    download_ok: bool | None = None,
    verify: bool | None = None,
) -> Path:
    """Return a local path to a registered data file, verified by its checksum.

    Parameters
    ----------
    dataset : str
        Data set name, a key of :data:`replib.data.DATASETS` (e.g. ``"stsb"``).
    file : str
        Path of the file inside the data set's folder (e.g. ``"sts-dev.csv"``).
    mirror : str or path-like, optional
        Local folder or ``http(s)://`` base URL laid out like the offline mirror;
        default ``$REPLIB_DATA_MIRROR``.
    cache : str or path-like, optional
        Download cache; default ``$REPLIB_CACHE_DIR/data`` (``~/.cache/replib/data``).
    timeout : float
        Seconds for each network connection/read.
    download_ok : bool, optional
        Whether the canonical sources may be downloaded; default: unless
        ``$REPLIB_DATA_OFFLINE`` is set.
    verify : bool, optional
        Re-hash a mirror or cached file even when its stamp (device, inode, size,
        mtime, ctime) shows it unchanged since the last verification; default
        ``$REPLIB_VERIFY``.

    Returns
    -------
    pathlib.Path
        The file in the local mirror (read in place) or in the cache.

    Raises
    ------
    KeyError
        Unknown data set or file.
    ChecksumError
        A mirror copy, a cached copy or a download has the wrong sha256 (or md5).
    DataNotFoundError
        No source could provide the file; the message says which environment
        variable to set and where the canonical source is.
    replib._io.CacheLockTimeout
        Another run held the file's cache lock for more than an hour (two runs
        that start together take turns: the second finds the file downloaded).
    """
    entry = get_file(dataset, file)
    cache = cache_dir(cache)
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV) or None
    verify, errors = bool(verify) or _env_flag(VERIFY_ENV), []
    if mirror is not None and not _is_url(str(mirror)):
        local = Path(mirror).expanduser() / entry.path
        if local.is_file():
            _verify_in_place(local, entry, cache, verify)
            return _noted(dataset, file, entry, local, "mirror")
        errors.append("mirror folder %s has no %s" % (mirror, entry.path))
    dest = cache / entry.path
    with cache_lock(dest, what="%s/%s in the cache %s" % (dataset, file, cache)):
        if dest.is_file():
            _verify_in_place(dest, entry, cache, verify)
            return _noted(dataset, file, entry, dest, "cache")
        sources = _Sources(entry, dest, timeout, errors)
        if mirror is not None and _is_url(str(mirror)) and sources.from_mirror_url(str(mirror)):
            return _noted(dataset, file, entry, dest, "mirror")
        if download_ok is None:
            download_ok = not _env_flag(OFFLINE_ENV)
        if not download_ok:
            errors.append("downloads disabled (%s set or download_ok=False)" % OFFLINE_ENV)
        elif sources.from_urls() or sources.from_archive(cache):
            return _noted(dataset, file, entry, dest, "download")
    raise DataNotFoundError(_missing_message(entry, dataset, file, errors))


def _noted(dataset: str, file: str, entry: DataFile, path: Path, source: str) -> Path:
    """``path``, after noting the file for the run's provenance (:func:`replib.provenance.note_data`)."""
    known = _expected_checksum(path, entry)
    note_data(dataset, file, checksum=f"{known[0]}:{known[1]}" if known else None, source=source)
    return path


class _Sources:
    """The download routes of one registry entry into the cache (with ``dest``'s lock held): each returns
    True when ``dest`` is in place and verified, or appends why not to ``errors``."""

    def __init__(self, entry: DataFile, dest: Path, timeout: float, errors: list):
        self.entry, self.dest, self.timeout, self.errors = entry, dest, timeout, errors
        self.pinned = entry.sha256 is not None or entry.md5 is not None

    def _get(self, url: str) -> None:
        """Download one source; plain http only for bytes a checksum pins."""
        e = self.entry
        if not self.pinned and urllib.parse.urlsplit(url).scheme != "https":
            raise InsecureSourceError(
                "%s: refusing a plain-http download of %s, which has no registered "
                "checksum (anyone on the path could change it)" % (url, e.path)
            )
        cap = e.size if e.size is not None else MAX_BYTES  # the registered size, else the general cap
        digest = download(url, self.dest, e.sha256, size=e.size, timeout=self.timeout, md5=e.md5, max_bytes=cap)
        self._got(digest, url)

    def _got(self, digest: str, source: str, verified_md5: str | None = None) -> None:
        if self.entry.sha256 is None:
            _record_observed(self.dest, digest, source, verified_md5=verified_md5 or self.entry.md5)

    def from_mirror_url(self, mirror: str) -> bool:
        url = mirror.rstrip("/") + "/" + urllib.parse.quote(self.entry.path)
        try:
            self._get(url)
        except urllib.error.HTTPError as exc:
            self.errors.append("%s: HTTP %s" % (url, exc.code))
        except (urllib.error.URLError, OSError, InsecureSourceError) as exc:
            if isinstance(exc, (IncompleteDownloadError, DownloadTooLargeError)):
                raise
            self.errors.append("%s: %s" % (url, exc))
        else:
            return True
        return False

    def from_urls(self) -> bool:
        for url in self.entry.urls:
            try:
                self._get(url)
            except (urllib.error.URLError, OSError, ChecksumError, InsecureSourceError) as exc:
                self.errors.append("%s: %s" % (url, exc))
                continue
            return True
        return False

    def from_archive(self, cache: Path) -> bool:
        a, e = self.entry.archive, self.entry
        if a is None or not (a.identical or not self.pinned):
            return False
        archive_path = cache / "_archives" / Path(urllib.parse.urlsplit(a.url).path).name
        try:
            if not (self.pinned or a.md5 is not None or urllib.parse.urlsplit(a.url).scheme == "https"):
                raise InsecureSourceError(
                    "refusing a plain-http archive: neither it nor its member %s has a registered checksum" % a.member
                )
            with cache_lock(archive_path, what="the archive %s" % archive_path):
                _archive_in_cache(archive_path, a, self.timeout)
            digest = _extract_member(archive_path, a.member, self.dest, e.sha256, e.md5)
        except _ARCHIVE_ERRORS as exc:
            self.errors.append("%s [%s]: %s" % (a.url, a.member, exc))
            return False
        self._got(
            digest,
            "%s [%s]" % (a.url, a.member),
            verified_md5=None if a.md5 is None else "%s (of the archive)" % a.md5,
        )
        return True


#: what makes the archive route fail over (``urllib.error.URLError`` is an ``OSError``)
_ARCHIVE_ERRORS = (OSError, KeyError, zipfile.BadZipFile, tarfile.TarError, ChecksumError, InsecureSourceError)


def _archive_in_cache(archive_path: Path, a, timeout: float) -> None:
    """The canonical archive in the cache: checked against its published md5, or downloaded (lock held)."""
    if archive_path.is_file():
        if a.md5 is not None and hash_file(archive_path, "md5") != a.md5:
            raise ChecksumError(
                "cached archive %s: md5 differs from the published %s; delete it" % (archive_path, a.md5)
            )
        return
    adigest = download(a.url, archive_path, timeout=timeout, md5=a.md5)  # its lock is held: re-entered
    _record_observed(archive_path, adigest, a.url, verified_md5=a.md5)
