"""Downloads with checksums: one URL to one file, atomically, with a stall timeout, progress and the
registry's size and sha256 checked before the file appears; archive members extracted and verified
(:func:`download`, :func:`_extract_member`). :mod:`replib.data.store` decides *what* to fetch from where."""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import socket
import tarfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from .._io import atomic_path, hash_file, progress_off, sha256_file, write_json_atomic

DEFAULT_TIMEOUT = 60.0
_PROGRESS_MIN_BYTES = 10 * 2**20
_CHUNK = 2**20
_USER_AGENT = "replib-data/0.1 (+https://github.com/; urllib)"


class DataNotFoundError(FileNotFoundError):
    """No mirror, cache or download could provide a registered file."""


class ChecksumError(ValueError):
    """A file's sha256 differs from the registered one."""


class IncompleteDownloadError(IOError):
    """A download ended before the announced number of bytes."""


class DownloadTimeoutError(TimeoutError):
    """A server sent nothing for ``timeout`` seconds (connection, headers or body)."""


class InsecureSourceError(ValueError):
    """A plain-http source for a file that no registered checksum pins."""


def _is_url(s: str) -> bool:
    return urllib.parse.urlsplit(s).scheme in ("http", "https")


def _progress(total: int | None, desc: str):
    show = total is None or total >= _PROGRESS_MIN_BYTES
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(
        total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=progress_off(show), leave=False
    )


def download(
    url: str,
    dest: str | os.PathLike,
    sha256: str | None = None,
    *,
    size: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    md5: str | None = None,
) -> str:
    """Download ``url`` atomically to ``dest`` and return the observed sha256.

    The bytes go to a temporary file in ``dest``'s folder; the file is moved into
    place with :func:`os.replace` (mode ``0666 & ~umask``) only after the length
    (``Content-Length`` and ``size``) and the checksums (when given) check out.

    Parameters
    ----------
    timeout : float
        Seconds allowed for the connection and for *each* read: a server that accepts and then sends
        nothing raises :class:`DownloadTimeoutError` after ``timeout`` seconds.

    Raises
    ------
    urllib.error.URLError, OSError
        Network errors (the temporary file is removed).
    DownloadTimeoutError
        Nothing arrived for ``timeout`` seconds.
    IncompleteDownloadError
        Fewer bytes than announced.
    ChecksumError
        The sha256 (or md5) differs from the expected one.
    """
    dest = Path(dest)
    try:
        with atomic_path(dest) as tmp:
            req = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
            h = hashlib.sha256()
            h5 = hashlib.md5(usedforsecurity=False) if md5 is not None else None
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
                        if h5 is not None:
                            h5.update(chunk)
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
                raise ChecksumError(
                    "%s: sha256 %s differs from the registered %s; the download is corrupted or a "
                    "different version (nothing was written to %s)" % (url, digest, sha256, dest)
                )
            if h5 is not None and h5.hexdigest() != md5:
                raise ChecksumError(
                    "%s: md5 %s differs from the published %s; the download is corrupted or a "
                    "different version (nothing was written to %s)" % (url, h5.hexdigest(), md5, dest)
                )
    except TimeoutError as exc:
        raise DownloadTimeoutError(
            "%s: no data for %g s (the server accepted the connection but did not answer); "
            "nothing was written to %s" % (url, timeout, dest)
        ) from exc
    except urllib.error.URLError as exc:
        if isinstance(getattr(exc, "reason", None), (socket.timeout, TimeoutError)):
            raise DownloadTimeoutError(
                "%s: no answer within %g s; nothing was written to %s" % (url, timeout, dest)
            ) from exc
        raise
    return digest


def _extract_member(archive: Path, member: str, dest: Path, sha256: str | None, md5: str | None = None) -> str:
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
            raise ChecksumError(
                "member %s of %s: sha256 %s differs from the registered %s" % (member, archive, digest, sha256)
            )
        if md5 is not None and hash_file(tmp, "md5") != md5:
            raise ChecksumError(
                "member %s of %s: md5 %s differs from the published %s" % (member, archive, hash_file(tmp, "md5"), md5)
            )
    return digest


def _record_observed(dest: Path, digest: str, source: str, verified_md5: str | None = None) -> None:
    """Write ``<file>.sha256.json`` next to a file that has no registered sha256 (later uses verify against it).

    ``verified_md5`` names the published md5 the bytes were checked against; without one the record is
    trust-on-first-use (https only, see :func:`fetch`)."""
    import datetime

    info = {
        "sha256": digest,
        "source": source,
        "size": dest.stat().st_size,
        "verified_against": ("published md5 %s" % verified_md5)
        if verified_md5
        else "nothing (trust on first use over https)",
        "retrieved": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    side = dest.with_name(dest.name + ".sha256.json")
    write_json_atomic(side, info, indent=1)
