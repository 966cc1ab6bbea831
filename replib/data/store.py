"""Resolve registered data files: mirror, cache, checksummed downloads.

Resolution order of :func:`fetch`:

1. ``REPLIB_DATA_MIRROR`` (or the ``mirror`` argument) as a local folder laid out
   like the offline mirror: the file is read in place, its sha256 is verified once
   and the verification is remembered by (size, mtime).
2. ``REPLIB_DATA_MIRROR`` as an ``http://``/``https://`` base URL with the same
   layout: the file is downloaded into the cache.
3. The cache (``$REPLIB_CACHE_DIR/data``, default ``~/.cache/replib/data``).
4. The registered direct URLs, then the canonical archive (only when its member
   is expected to be byte-identical, or the file has no fixed checksum).

Downloads are written to a temporary file in the destination folder, verified,
and only then moved into place with :func:`os.replace`; a truncated or corrupted
download raises and leaves nothing that looks complete.  Set
``REPLIB_DATA_OFFLINE=1`` to forbid network access (mirror and cache only).
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import tarfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Optional, Union

from .._io import atomic_path, cache_root, sha256_file, write_json_atomic
from .registry import DataFile, get_file

__all__ = ["fetch", "cache_dir", "DataNotFoundError", "ChecksumError", "IncompleteDownloadError",
           "sha256_file"]

MIRROR_ENV = "REPLIB_DATA_MIRROR"
OFFLINE_ENV = "REPLIB_DATA_OFFLINE"
DEFAULT_TIMEOUT = 60.0
_PROGRESS_MIN_BYTES = 10 * 2**20
_CHUNK = 2**20
_USER_AGENT = "replib-data/0.1 (+https://github.com/; urllib)"

_verified_lock = threading.Lock()
_verified_memory: dict = {}


class DataNotFoundError(FileNotFoundError):
    """No mirror, cache or download could provide a registered file."""


class ChecksumError(ValueError):
    """A file's sha256 differs from the registered one."""


class IncompleteDownloadError(IOError):
    """A download ended before the announced number of bytes."""


def cache_dir(path: Union[str, os.PathLike, None] = None) -> Path:
    """Return the download cache folder.

    ``path`` if given, else ``$REPLIB_CACHE_DIR/data`` (default ``~/.cache/replib/data``).
    """
    if path is None:
        return cache_root("data")
    return Path(path).expanduser()


# ----------------------------------------------------------------- verification cache
def _verified_db(cache: Path) -> Path:
    return cache / ".verified.json"


def _load_verified(cache: Path) -> dict:
    try:
        return json.loads(_verified_db(cache).read_text())
    except (OSError, ValueError):
        return {}


def _store_verified(cache: Path, key: str, value: dict) -> None:
    """Remember a verification (best effort: an unwritable cache only costs speed)."""
    with _verified_lock:
        _verified_memory[key] = value
        try:
            cache.mkdir(parents=True, exist_ok=True)
            db = _load_verified(cache)
            db[key] = value
            write_json_atomic(_verified_db(cache), dict(sorted(db.items())), indent=0)
        except OSError:
            pass


def _verify_in_place(path: Path, entry: DataFile, cache: Path) -> None:
    """Verify ``path`` against ``entry.sha256``, skipping the hash when (size, mtime) were seen before."""
    if entry.sha256 is None:
        return
    st = path.stat()
    key = str(path.resolve())
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": entry.sha256}
    seen = _verified_memory.get(key) or _load_verified(cache).get(key)
    if seen == stamp:
        _verified_memory[key] = stamp
        return
    if entry.size is not None and st.st_size != entry.size:
        raise ChecksumError("%s has %d bytes, expected %d (registry %s); the copy is truncated or a different "
                            "version" % (path, st.st_size, entry.size, entry.path))
    digest = sha256_file(path)
    if digest != entry.sha256:
        raise ChecksumError("%s: sha256 %s differs from the registered %s (%s); the copy is corrupted or a "
                            "different version" % (path, digest, entry.sha256, entry.path))
    _store_verified(cache, key, stamp)


# ----------------------------------------------------------------------- download
def _is_url(s: str) -> bool:
    return urllib.parse.urlsplit(s).scheme in ("http", "https")


def _progress(total: Optional[int], desc: str):
    show = total is None or total >= _PROGRESS_MIN_BYTES
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=not show,
                leave=False)


def download(url: str, dest: Union[str, os.PathLike], sha256: Optional[str] = None, *,
             size: Optional[int] = None, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Download ``url`` atomically to ``dest`` and return the observed sha256.

    The bytes go to a temporary file in ``dest``'s folder; the file is moved into
    place with :func:`os.replace` only after the length (``Content-Length`` and
    ``size``) and the sha256 (when given) check out.

    Raises
    ------
    urllib.error.URLError, OSError
        Network errors (the temporary file is removed).
    IncompleteDownloadError
        Fewer bytes than announced.
    ChecksumError
        The sha256 differs from ``sha256``.
    """
    dest = Path(dest)
    with atomic_path(dest) as tmp:
        req = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
        h = hashlib.sha256()
        n = 0
        with open(tmp, "wb") as out, urllib.request.urlopen(req, timeout=timeout) as resp:
            announced = resp.headers.get("Content-Length")
            total = int(announced) if announced is not None else size
            bar = _progress(total, dest.name)
            try:
                while True:
                    try:
                        chunk = resp.read(_CHUNK)
                    except http.client.IncompleteRead as exc:
                        raise IncompleteDownloadError("%s: connection closed early (%s)" % (url, exc)) from exc
                    if not chunk:
                        break
                    out.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
            finally:
                if bar is not None:
                    bar.close()
        if announced is not None and n != int(announced):
            raise IncompleteDownloadError("%s: got %d of %s announced bytes" % (url, n, announced))
        if size is not None and n != size:
            raise IncompleteDownloadError("%s: got %d bytes, the registry expects %d" % (url, n, size))
        digest = h.hexdigest()
        if sha256 is not None and digest != sha256:
            raise ChecksumError("%s: sha256 %s differs from the registered %s; the download is corrupted or a "
                                "different version (nothing was written to %s)" % (url, digest, sha256, dest))
    return digest


def _extract_member(archive: Path, member: str, dest: Path, sha256: Optional[str]) -> str:
    """Extract one member of a zip or tar archive atomically to ``dest``; return its sha256."""
    want = member[2:] if member.startswith("./") else member
    with atomic_path(dest) as tmp:
        with open(tmp, "wb") as out:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as zf:
                    with zf.open(want) as src:
                        shutil.copyfileobj(src, out, _CHUNK)
            else:
                with tarfile.open(archive) as tf:
                    names = {m.name[2:] if m.name.startswith("./") else m.name: m for m in tf.getmembers()}
                    if want not in names:
                        raise KeyError("%s has no member %r" % (archive, member))
                    src = tf.extractfile(names[want])
                    shutil.copyfileobj(src, out, _CHUNK)
        digest = sha256_file(tmp)
        if sha256 is not None and digest != sha256:
            raise ChecksumError("member %s of %s: sha256 %s differs from the registered %s"
                                % (member, archive, digest, sha256))
    return digest


def _record_observed(dest: Path, digest: str, source: str) -> None:
    """Write ``<file>.sha256.json`` next to a file that has no registered checksum."""
    import datetime

    info = {"sha256": digest, "source": source, "size": dest.stat().st_size,
            "retrieved": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    side = dest.with_name(dest.name + ".sha256.json")
    side.write_text(json.dumps(info, indent=1))


def _missing_message(entry: DataFile, dataset: str, file: str, errors: list) -> str:
    lines = ["cannot find data file %s/%s (mirror path %s)." % (dataset, file, entry.path),
             "Set %s to a folder (or an http:// base URL) laid out like the offline mirror, e.g. "
             "%s=/path/to/shared/data, so that <mirror>/%s exists." % (MIRROR_ENV, MIRROR_ENV, entry.path)]
    if entry.urls:
        lines.append("Direct source(s): " + ", ".join(entry.urls))
    if entry.archive is not None:
        a = entry.archive
        lines.append("Canonical source: %s (member %s%s)" % (
            a.url, a.member, "" if a.identical else "; the registered file is derived from it: " + a.note))
    if entry.canonical:
        lines.append("Canonical source: " + entry.canonical)
    if entry.note:
        lines.append("Note: " + entry.note)
    if errors:
        lines.append("Attempts: " + "; ".join(errors))
    return "\n".join(lines)


def _offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes")


def fetch(dataset: str, file: str, *, mirror: Union[str, os.PathLike, None] = None,
          cache: Union[str, os.PathLike, None] = None, timeout: float = DEFAULT_TIMEOUT,
          download_ok: Optional[bool] = None) -> Path:
    """Return a local path to a registered data file, verified by sha256.

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

    Returns
    -------
    pathlib.Path
        The file in the local mirror (read in place) or in the cache.

    Raises
    ------
    KeyError
        Unknown data set or file.
    ChecksumError
        A mirror copy or a download has the wrong sha256.
    DataNotFoundError
        No source could provide the file; the message says which environment
        variable to set and where the canonical source is.
    """
    entry = get_file(dataset, file)
    cache = cache_dir(cache)
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV) or None
    if download_ok is None:
        download_ok = not _offline()
    dest = cache / entry.path
    errors = []

    if mirror is not None and not _is_url(str(mirror)):
        local = Path(mirror).expanduser() / entry.path
        if local.is_file():
            _verify_in_place(local, entry, cache)
            return local
        errors.append("mirror folder %s has no %s" % (mirror, entry.path))

    if dest.is_file():
        if entry.sha256 is not None:
            _verify_in_place(dest, entry, cache)
        return dest

    if mirror is not None and _is_url(str(mirror)):
        url = str(mirror).rstrip("/") + "/" + urllib.parse.quote(entry.path)
        try:
            digest = download(url, dest, entry.sha256, size=entry.size, timeout=timeout)
        except urllib.error.HTTPError as exc:
            errors.append("%s: HTTP %s" % (url, exc.code))
        except (urllib.error.URLError, OSError) as exc:
            if isinstance(exc, IncompleteDownloadError):
                raise
            errors.append("%s: %s" % (url, exc))
        else:
            if entry.sha256 is None:
                _record_observed(dest, digest, url)
            return dest

    if not download_ok:
        errors.append("downloads disabled (%s set or download_ok=False)" % OFFLINE_ENV)
        raise DataNotFoundError(_missing_message(entry, dataset, file, errors))

    for url in entry.urls:
        try:
            digest = download(url, dest, entry.sha256, size=entry.size, timeout=timeout)
        except (urllib.error.URLError, OSError, IncompleteDownloadError, ChecksumError) as exc:
            errors.append("%s: %s" % (url, exc))
            continue
        if entry.sha256 is None:
            _record_observed(dest, digest, url)
        return dest

    a = entry.archive
    if a is not None and (a.identical or entry.sha256 is None):
        archive_path = cache / "_archives" / Path(urllib.parse.urlsplit(a.url).path).name
        try:
            if not archive_path.is_file():
                adigest = download(a.url, archive_path, None, timeout=timeout)
                _record_observed(archive_path, adigest, a.url)
            digest = _extract_member(archive_path, a.member, dest, entry.sha256)
        except (urllib.error.URLError, OSError, KeyError, zipfile.BadZipFile, tarfile.TarError,
                ChecksumError) as exc:
            errors.append("%s [%s]: %s" % (a.url, a.member, exc))
        else:
            if entry.sha256 is None:
                _record_observed(dest, digest, "%s [%s]" % (a.url, a.member))
            return dest

    raise DataNotFoundError(_missing_message(entry, dataset, file, errors))
