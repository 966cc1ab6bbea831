"""Downloads with checksums: one URL to one file, atomically, with a size cap, per-read and overall deadlines,
resumption of an interrupted download, progress, and the registry's size and sha256 checked before the file
appears; archive members extracted and verified (:func:`download`, :func:`_extract_member`).
:mod:`replib.data.store` decides *what* to fetch from where."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import http.client
import os
import shutil
import socket
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from tqdm.auto import tqdm

from .._io import atomic_path, cache_lock, commit_file, hash_file, progress_off, sha256_file, write_json_atomic

#: seconds allowed for the connection and for each read
DEFAULT_TIMEOUT = 60.0
#: the overall deadline of a download of known length: BASE_DEADLINE + length / MIN_RATE seconds
BASE_DEADLINE = 600.0
MIN_RATE = 50_000.0
#: the overall deadline when neither the registry nor the server says how long the file is
UNKNOWN_LENGTH_DEADLINE = 3600.0
#: the most bytes any download may bring when the registry gives no size (a cap on a runaway server)
MAX_BYTES = 16 * 2**30
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
    """A server sent nothing for ``timeout`` seconds (connection, headers or body), or the whole download
    took longer than its overall deadline."""


class DownloadTooLargeError(IOError):
    """A server announced or sent more bytes than the registry's size (or the cap) allows."""


class InsecureSourceError(ValueError):
    """A plain-http source for a file that no registered checksum pins."""


#: interruptions after which a checksum-pinned download keeps its bytes and resumes
_RESUMABLE = (TimeoutError, IncompleteDownloadError, ConnectionError, http.client.HTTPException, KeyboardInterrupt)


def _is_url(s: str) -> bool:
    return urllib.parse.urlsplit(s).scheme in ("http", "https")


def partial_path(dest: Path) -> Path:
    """Where the bytes of an unfinished download of ``dest`` are kept for resumption (hidden, beside it)."""
    return dest.with_name("." + dest.name + ".partial")


def default_deadline(length: int | None) -> float:
    """Overall seconds for a download of ``length`` bytes: 10 minutes plus 50 kB/s, or 1 hour if unknown."""
    return UNKNOWN_LENGTH_DEADLINE if length is None else BASE_DEADLINE + length / MIN_RATE


def download(
    url: str,
    dest: str | os.PathLike,
    sha256: str | None = None,
    *,
    size: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    md5: str | None = None,
    deadline: float | None = None,
    max_bytes: int = MAX_BYTES,
    headers: dict | None = None,
) -> str:
    """Download ``url`` atomically to ``dest`` and return the observed sha256.

    The bytes go to ``.<name>.partial`` in ``dest``'s folder; the file is moved into place with
    :func:`os.replace` (mode ``0666 & ~umask``) only after the length (``Content-Length`` and ``size``) and
    the checksums (when given) check out. One process at a time downloads ``dest``
    (:func:`replib._io.cache_lock`).

    An interrupted download (timeout, dropped connection, killed run) leaves its bytes in the partial file
    when a checksum (``sha256`` or ``md5``) pins the result; the next call asks the server for the rest
    (HTTP ``Range``), hashes the kept bytes first, and verifies the whole. A server that ignores the range
    sends everything again. Without a checksum every download starts from the first byte.

    Parameters
    ----------
    timeout : float
        Seconds allowed for the connection and for *each* read: a server that accepts and then sends
        nothing raises :class:`DownloadTimeoutError` after ``timeout`` seconds.
    deadline : float, optional
        Seconds allowed for the whole download (default :func:`default_deadline` of the expected length):
        a server that drips bytes is stopped at the deadline (at most one ``timeout`` later).
    size : int, optional
        The exact expected length. No more than ``size`` (or ``max_bytes``) bytes are ever accepted: a
        larger ``Content-Length`` is refused before the body is read, and a body that runs past it is
        stopped at once (:class:`DownloadTooLargeError`).
    headers : dict, optional
        Request headers sent to ``url``'s server only, never to a server it redirects to (an access token
        stays with the Hub, not its storage).

    Raises
    ------
    urllib.error.URLError, OSError
        Network errors.
    DownloadTimeoutError
        Nothing arrived for ``timeout`` seconds, or the deadline passed.
    DownloadTooLargeError
        More bytes announced or sent than allowed.
    IncompleteDownloadError
        Fewer bytes than announced.
    ChecksumError
        The sha256 (or md5) differs from the expected one (the partial file is removed).
    """
    dest = Path(dest)
    with cache_lock(dest, what="the download of %s" % dest):
        part = partial_path(dest)
        pinned = sha256 is not None or md5 is not None
        limit = min(size, max_bytes) if size is not None else max_bytes
        h, h5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False) if md5 is not None else None
        hashes = [x for x in (h, h5) if x is not None]
        try:
            announced, n = _transfer(
                url, part, dest, limit, timeout, deadline, hashes, dict(headers or {}), size, pinned
            )
            if announced is not None and n != announced:
                raise IncompleteDownloadError("%s: got %d of %s announced bytes" % (url, n, announced))
            if size is not None and n != size:
                raise IncompleteDownloadError("%s: got %d bytes, the registry expects %d" % (url, n, size))
        except BaseException as exc:  # an interruption of a pinned download keeps its bytes; anything else none
            if not (pinned and isinstance(exc, _RESUMABLE) and part.is_file() and part.stat().st_size):
                with contextlib.suppress(OSError):
                    part.unlink()
            raise
        for algorithm, got, want, origin in (("sha256", h, sha256, "registered"), ("md5", h5, md5, "published")):
            if want is not None and got.hexdigest() != want:
                part.unlink()
                raise ChecksumError(
                    "%s: %s %s differs from the %s %s; the download is corrupted or a different version "
                    "(nothing was written to %s)" % (url, algorithm, got.hexdigest(), origin, want, dest)
                )
        commit_file(part, dest)
        return h.hexdigest()


def _transfer(url, part: Path, dest: Path, limit, timeout, deadline, hashes, headers, size, resume: bool) -> tuple:
    """Bring the bytes of ``url`` into ``part`` (continuing its kept bytes when ``resume``), chunk by chunk (each
    read returns what has arrived) until the body's end, ``limit`` bytes or the deadline; return the total length
    the server announced (None if it did not) and the length of ``part``. Network timeouts become
    :class:`DownloadTimeoutError`."""
    have = part.stat().st_size if resume and part.is_file() else 0
    req = urllib.request.Request(url=url, headers={"User-Agent": _USER_AGENT})
    for k, v in headers.items():
        req.add_unredirected_header(k, v)
    if have:
        req.add_header("Range", "bytes=%d-" % have)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            # the body continues the kept bytes only for a 206 Partial Content of the range asked for
            ranged = (
                have and resp.status == 206 and resp.headers.get("Content-Range", "").startswith("bytes %d-" % have)
            )
            start = have if ranged else 0
            announced = resp.headers.get("Content-Length")  # too long is refused before the body is read
            total = None if announced is None else start + int(announced)
            if total is not None and total > limit:
                raise DownloadTooLargeError(
                    "%s: the server announces %d bytes, more than the %d expected; nothing was downloaded"
                    % (url, total, limit)
                )
            if start:  # the kept bytes count in the checksums
                with open(part, "rb") as fh:
                    for block in iter(lambda: fh.read(_CHUNK), b""):
                        for hash_ in hashes:
                            hash_.update(block)
            n = start
            # without a Content-Length, the registered size sizes the deadline (the 1-hour one is for neither)
            expected = total if total is not None else size
            t_end = time.monotonic() + (deadline if deadline is not None else default_deadline(expected))
            off = progress_off(total is None or total >= _PROGRESS_MIN_BYTES)
            with (
                open(part, "r+b" if start else "wb") as out,
                tqdm(
                    total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=dest.name, disable=off, leave=False
                ) as bar,
            ):
                bar.update(n)
                out.seek(start)
                out.truncate()
                while True:
                    if time.monotonic() > t_end:
                        raise DownloadTimeoutError(
                            "%s: the download passed its overall deadline after %d bytes (the server is too slow); "
                            "the bytes are kept to resume" % (url, n)
                        )
                    try:
                        chunk = resp.read1(_CHUNK)
                    except http.client.IncompleteRead as exc:
                        raise IncompleteDownloadError("%s: connection closed early (%s)" % (url, exc)) from exc
                    if not chunk:
                        return total, n
                    n += len(chunk)
                    if n > limit:
                        raise DownloadTooLargeError(
                            "%s: the server sent more than the %d bytes expected; the download was stopped there "
                            "and nothing was kept" % (url, limit)
                        )
                    out.write(chunk)
                    for hash_ in hashes:
                        hash_.update(chunk)
                    bar.update(len(chunk))
    except TimeoutError as exc:
        if isinstance(exc, DownloadTimeoutError):
            raise
        raise DownloadTimeoutError(
            "%s: no data for %g s (the server accepted the connection but did not answer); "
            "nothing was written to %s" % (url, timeout, dest)
        ) from exc
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the kept bytes do not fit this file: start again
            part.unlink()
            return _transfer(url, part, dest, limit, timeout, deadline, hashes, headers, size, False)
        raise
    except urllib.error.URLError as exc:
        if isinstance(getattr(exc, "reason", None), (socket.timeout, TimeoutError)):
            raise DownloadTimeoutError(
                "%s: no answer within %g s; nothing was written to %s" % (url, timeout, dest)
            ) from exc
        raise


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
        if md5 is not None and (got := hash_file(tmp, "md5")) != md5:
            raise ChecksumError("member %s of %s: md5 %s differs from the published %s" % (member, archive, got, md5))
    return digest


def _record_observed(dest: Path, digest: str, source: str, verified_md5: str | None = None) -> None:
    """Write ``<file>.sha256.json`` next to a file that has no registered sha256 (later uses verify against it).

    ``verified_md5`` names the published md5 the bytes were checked against; without one the record is
    trust-on-first-use (https only, see :func:`fetch`)."""
    against = "published md5 %s" % verified_md5 if verified_md5 else "nothing (trust on first use over https)"
    info = {"sha256": digest, "source": source, "size": dest.stat().st_size, "verified_against": against}
    info["retrieved"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    write_json_atomic(dest.with_name(dest.name + ".sha256.json"), info, indent=1)
