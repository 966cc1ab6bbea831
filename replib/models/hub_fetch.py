"""Hugging Face Hub downloads through the book's own downloader: a size cap on the whole model, per-read and
overall deadlines, resumption and a checksum for every file, into the standard Hugging Face cache.

``transformers`` and ``sentence-transformers`` would download a model with ``huggingface_hub``, which has a
per-read timeout but no cap on what a repository brings and no overall deadline: a server that drips bytes
holds a run for ever, and a repository with every weight format in it brings all of them. Here the files a
loader needs are listed first (one call to the Hub's API with the files' sizes and hashes), their total is
checked against :data:`MAX_MODEL_BYTES` before a byte is fetched, and each file comes through
:func:`replib.data.download.download` (size fixed by the listing, sha256 for LFS files and the git blob hash
for the others, resumable, one deadline for the whole model). The files are laid out as the Hugging Face
cache holds them (``models--org--name/blobs``, ``snapshots/<commit>``, ``refs/<revision>``), so the loaders
then read them with ``local_files_only=True`` and never reach the network themselves.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import huggingface_hub.constants as hf_constants
from huggingface_hub.file_download import repo_folder_name
from huggingface_hub.hf_api import ModelInfo
from huggingface_hub.utils import get_token

from .._io import UnsafePathError, atomic_write, confined
from ..data.download import (
    DEFAULT_TIMEOUT,
    ChecksumError,
    DownloadTimeoutError,
    DownloadTooLargeError,
    default_deadline,
    download,
)
from .errors import ModelUnavailableError

__all__ = ["HubFile", "MAX_MODEL_BYTES", "MAX_MODEL_BYTES_ENV", "fetch_hub_snapshot", "hub_listing", "needed_files"]

#: environment variable that raises (or lowers) the cap on one model's download, in bytes
MAX_MODEL_BYTES_ENV = "REPLIB_HUB_MAX_BYTES"
#: the most bytes one model may bring from the Hub by default (the largest paper model, ESM-2 650M, is 2.6 GB)
MAX_MODEL_BYTES = 10 * 2**30
#: seconds allowed for the whole listing request when the caller gives no deadline
LISTING_DEADLINE = 120.0
#: the most bytes a listing may bring (the largest repositories list a few MB)
LISTING_MAX_BYTES = 64 * 2**20
#: weight and export formats no loader here reads: never downloaded
_SKIP = re.compile(
    r"(^|/)(tf_model\.h5|flax_model\.msgpack|rust_model\.ot|model\.onnx.*|.*\.tflite|.*\.mlmodel|.*\.ckpt.*|"
    r"coreml/.*|onnx/.*|openvino/.*|.*\.gguf|.*\.h5|.*\.msgpack|.*\.ot)$"
)
_TORCH_BIN = re.compile(r"(^|/)(pytorch_model.*\.bin|pytorch_model\.bin\.index\.json)$")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub repository at a commit: its path, exact size and hashes (``sha256`` for LFS files,
    the git blob id for every file)."""

    path: str
    size: int
    blob_id: str | None
    sha256: str | None

    @property
    def etag(self) -> str:
        """The name of the file's blob in the Hugging Face cache (the LFS sha256, else the git blob id)."""
        return self.sha256 or self.blob_id or hashlib.sha256(self.path.encode()).hexdigest()


def max_model_bytes() -> int:
    """The cap on one model's download: ``$REPLIB_HUB_MAX_BYTES`` or :data:`MAX_MODEL_BYTES`."""
    raw = os.environ.get(MAX_MODEL_BYTES_ENV, "").strip()
    if not raw:
        return MAX_MODEL_BYTES
    try:
        value = int(float(raw))
    except ValueError:
        raise ValueError(f"{MAX_MODEL_BYTES_ENV}={raw!r} is not a number of bytes") from None
    if value <= 0:
        raise ValueError(f"{MAX_MODEL_BYTES_ENV}={raw!r} must be a positive number of bytes")
    return value


def hub_listing(
    hf_id: str,
    revision: str,
    *,
    endpoint: str,
    timeout: float = DEFAULT_TIMEOUT,
    deadline: float = LISTING_DEADLINE,
    headers: dict | None = None,
):
    """The commit that ``revision`` names and the repository's files at it, with sizes and hashes.

    The request is the one ``HfApi.model_info(files_metadata=True)`` makes, through the book's downloader:
    per-read ``timeout`` and one overall ``deadline`` (a server that drips its answer is stopped there).

    Returns
    -------
    commit : str
    files : list of HubFile

    Raises
    ------
    ModelUnavailableError
        The Hub does not know the repository or revision, or does not list the files' sizes (nothing would
        bound the download), or lists names and hashes that are not ones.
    DownloadTimeoutError
        The listing outlasted ``deadline``.
    """
    url = f"{endpoint}/api/models/{hf_id}/revision/{urllib.parse.quote(revision, safe='')}?blobs=true"
    with tempfile.TemporaryDirectory(prefix="replib-listing-") as tmp:
        dest = Path(tmp) / "listing.json"
        try:
            download(url, dest, None, timeout=timeout, deadline=deadline, max_bytes=LISTING_MAX_BYTES, headers=headers)
        except urllib.error.HTTPError as exc:
            raise ModelUnavailableError(
                f"{hf_id}@{revision}: the Hub answered {exc.code} ({exc.reason}); check the model id and revision "
                "(and HF_TOKEN for a gated or private model)"
            ) from None
        try:
            info = ModelInfo(**json.loads(dest.read_text(encoding="utf-8")))
        except (ValueError, TypeError, KeyError) as exc:
            raise ModelUnavailableError(
                f"{hf_id}@{revision}: the Hub's listing is not readable ({exc}); check HF_ENDPOINT"
            ) from None
    files = []
    for s in info.siblings or []:
        if s.size is None:
            raise ModelUnavailableError(
                f"{hf_id}@{revision}: the Hub did not give the size of {s.rfilename}, so its download cannot be "
                "capped; download the model where you trust the source and pass its folder (--model PATH)"
            )
        files.append(_checked_file(hf_id, revision, s.rfilename, s.size, s.blob_id, s.lfs.sha256 if s.lfs else None))
    if not isinstance(info.sha, str) or not _COMMIT.fullmatch(info.sha):
        raise ModelUnavailableError(
            f"{hf_id}@{revision}: the Hub answered the commit {info.sha!r}, not 40 hexadecimal digits; refused "
            "(check HF_ENDPOINT points at the Hub)"
        )
    return info.sha, files


def _checked_file(hf_id: str, revision: str, path, size, blob_id, sha256) -> HubFile:
    """One listed file, refused unless its hashes are hexadecimal digests and its size a count of bytes (they
    name files in the cache, so a listing cannot make them climb out of it)."""
    where = f"{hf_id}@{revision}: the Hub listed {path!r}"
    if not isinstance(path, str) or not path:
        raise ModelUnavailableError(f"{where}, not a file name; refused (check HF_ENDPOINT points at the Hub)")
    if blob_id is not None and not _COMMIT.fullmatch(str(blob_id)):
        raise ModelUnavailableError(f"{where} with the blob id {blob_id!r}, not a git hash; refused")
    if sha256 is not None and not _SHA256.fullmatch(str(sha256)):
        raise ModelUnavailableError(f"{where} with the sha256 {sha256!r}, not a sha256; refused")
    if int(size) < 0:
        raise ModelUnavailableError(f"{where} with a negative size; refused")
    return HubFile(path, int(size), blob_id, sha256)


def needed_files(files: list[HubFile]) -> list[HubFile]:
    """The files a ``transformers``/``sentence-transformers`` loader reads: configuration, tokenizer and
    sentence-transformers files, and one weight format (safetensors where the repository has them, else the
    PyTorch pickles); TensorFlow, Flax, ONNX and other exports are left out."""
    keep = [f for f in files if not _SKIP.search(f.path)]
    if any(f.path.endswith(".safetensors") for f in keep):
        keep = [f for f in keep if not _TORCH_BIN.search(f.path)]
    return keep


def fetch_hub_snapshot(
    hf_id: str,
    revision: str,
    cache_dir=None,
    *,
    deadline: float | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    select: tuple[str, ...] | None = None,
) -> Path:
    """Download what a loader needs of ``hf_id@revision`` into the Hugging Face cache; return the snapshot folder.

    The model's files may add up to :func:`max_model_bytes` at most; more is refused before any download,
    naming the size and how to raise the cap.

    Parameters
    ----------
    deadline : float, optional
        Seconds for the whole model, its listing included (default: :data:`LISTING_DEADLINE` for the listing,
        then :func:`replib.data.download.default_deadline` of the total size for the files).
    timeout : float
        Seconds for the connection and each read.
    select : tuple of str, optional
        Only these paths (those the repository has), e.g. the configuration files.

    Raises
    ------
    DownloadTooLargeError
        The files add up to more than the cap, or a server sends more than the listing says.
    DownloadTimeoutError
        The deadline passed (the bytes of the file in flight are kept and resumed next time).
    ChecksumError
        A file's bytes differ from the listed hash.
    """
    endpoint = hf_constants.ENDPOINT.rstrip("/")
    t_start = time.monotonic()
    token = get_token()  # HF_TOKEN or the stored login: sent to the Hub only, not to its storage on redirect
    headers = {"Authorization": f"Bearer {token}"} if token else None
    listing_deadline = LISTING_DEADLINE if deadline is None else deadline
    commit, files = hub_listing(
        hf_id, revision, endpoint=endpoint, timeout=timeout, deadline=listing_deadline, headers=headers
    )
    files = needed_files(files) if select is None else [f for f in files if f.path in select]
    total, cap = sum(f.size for f in files), max_model_bytes()
    if total > cap:
        raise DownloadTooLargeError(
            f"{hf_id}@{revision} would download {total / 1e9:.2f} GB ({len(files)} files), more than the "
            f"{cap / 1e9:.2f} GB allowed; set {MAX_MODEL_BYTES_ENV} to a larger number of bytes, or download it "
            "yourself and pass its folder (--model PATH)"
        )
    root = confined(
        cache_dir or hf_constants.HF_HUB_CACHE, repo_folder_name(repo_id=hf_id, repo_type="model"), what="model id"
    )
    snap = confined(root / "snapshots", commit, what="commit")
    try:
        targets = {f.path: confined(snap, f.path, what=f"{hf_id}@{revision}: the listed file") for f in files}
        ref = confined(root / "refs", revision, what=f"{hf_id}: the revision") if revision != commit else None
    except UnsafePathError as err:
        raise ModelUnavailableError(f"{err} (a listing or revision that climbs out of the cache)") from None
    t_end = time.monotonic() + default_deadline(total) if deadline is None else t_start + deadline
    for f in files:  # each missing file into blobs/ (checked), linked from snapshots/<commit>/
        if targets[f.path].is_file():
            continue
        left = t_end - time.monotonic()
        if left <= 0:
            raise DownloadTimeoutError(f"{hf_id}@{commit}: the download's overall deadline passed before {f.path}")
        url = f"{endpoint}/{hf_id}/resolve/{commit}/{urllib.parse.quote(f.path)}"
        blob = confined(root / "blobs", f.etag, what="blob")
        blob.parent.mkdir(parents=True, exist_ok=True)
        if not blob.is_file():
            kw = dict(size=f.size, timeout=min(timeout, left), deadline=left, max_bytes=f.size, headers=headers)
            download(url, blob, f.sha256, **kw)
            if f.sha256 is None and f.blob_id is not None and _git_blob_id(blob) != f.blob_id:
                blob.unlink()
                raise ChecksumError(f"{url}: git blob hash differs from the listed {f.blob_id}; the file was removed")
        _link(blob, targets[f.path])
    if ref is not None:
        atomic_write(ref, lambda fh: fh.write(commit.encode()))
    return snap


def _git_blob_id(path: Path) -> str:
    """git's object id of a file: sha1 of ``b"blob <size>\\0"`` followed by its bytes."""
    h = hashlib.sha1(usedforsecurity=False)
    h.update(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _link(blob: Path, dest: Path) -> None:
    """``dest`` pointing at ``blob`` (a relative symlink as ``huggingface_hub`` makes, or a copy), atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        tmp.symlink_to(os.path.relpath(blob, dest.parent))
    except OSError:  # no symlinks here (some Windows setups): a copy
        tmp.write_bytes(blob.read_bytes())
    os.replace(tmp, dest)
