"""The Hugging Face Hub, offline-aware: whether a model can be had (cache or network) before any download is
tried, and its configuration files read from the cache, checked for code (``auto_map``) before ``transformers``
sees them.

Offline (``HF_HUB_OFFLINE=1``, or no route to the Hub), a Hub id that is not in the local cache fails at once
with :class:`~replib.models.errors.ModelUnavailableError`, before any network call, instead of after the Hub
client's retries.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.parse
from pathlib import Path

from huggingface_hub import hf_hub_download, try_to_load_from_cache
from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

from .base import offline_mode
from .errors import ModelUnavailableError, UntrustedCodeError
from .files import CODE_CONFIGS, check_no_remote_code, pooling_mode, st_module
from .hub_fetch import fetch_hub_snapshot

__all__ = ["check_hub_available", "hub_pooling", "hub_snapshot"]

#: the files read to decide how to load a repository (code check, recipe, pooling)
CONFIG_FILES = (*CODE_CONFIGS, "modules.json", "1_Pooling/config.json")


def _hub_reachable(timeout: float = 0.8) -> bool:
    """Whether a TCP connection to the Hub opens within ``timeout`` seconds (DNS included, in a thread)."""
    url = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    ok = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    return bool(ok)


def check_hub_available(hf_id: str, revision: str = "main", cache_dir=None) -> bool:
    """Fail fast when a Hub model cannot be had: returns ``local_files_only`` for ``from_pretrained``.

    With ``HF_HUB_OFFLINE=1`` no network call is made: a cached model loads from the cache, an uncached one
    raises. Without it, the Hub is probed once (under a second); unreachable means the same as offline.

    Raises
    ------
    ModelUnavailableError
        Not cached and offline, with what to do.
    """
    offline = offline_mode()
    if not offline and _hub_reachable():
        return False
    if isinstance(try_to_load_from_cache(hf_id, "config.json", revision=revision, cache_dir=cache_dir), str):
        return True  # config.json is in the local cache
    why = "HF_HUB_OFFLINE=1 is set" if offline else "the Hugging Face Hub is not reachable"
    raise ModelUnavailableError(
        f"{hf_id}@{revision} is not in the local Hugging Face cache and this machine is offline ({why}). "
        f"To use it, download it once where there is internet (`hf download {hf_id} --revision "
        f"{revision}`) and copy the cache, or save the model to a folder and pass that folder's path "
        "(e.g. `--model /path/to/model`)."
    )


def hub_snapshot(hf_id: str, revision: str = "main", cache_dir=None, *, configs_only: bool = False) -> Path:
    """The local snapshot folder of ``hf_id@revision``, its files brought first when the Hub is reachable, its
    ``config.json`` (and ``tokenizer_config.json`` when the repository has one) checked for code.

    Online, what a loader needs (or only :data:`CONFIG_FILES`) comes through
    :func:`~replib.models.hub_fetch.fetch_hub_snapshot`: size cap, per-read and overall deadlines, checksums.
    Offline, the cached snapshot is used (:func:`check_hub_available`). Either way the folder is then found in
    the cache only, and the loaders read it with ``local_files_only=True``.

    Raises
    ------
    ModelUnavailableError
        As :func:`check_hub_available`, or the repository has no ``config.json``.
    UntrustedCodeError
        ``config.json`` or ``tokenizer_config.json`` has an ``auto_map`` (the model's own code would be needed;
        :func:`~replib.models.files.check_no_remote_code`).
    replib.data.download.DownloadTooLargeError, replib.data.download.DownloadTimeoutError
        The model is larger than the cap, or its download outlasts the deadline.
    """
    if not check_hub_available(hf_id, revision, cache_dir):
        fetch_hub_snapshot(hf_id, revision, cache_dir, select=CONFIG_FILES if configs_only else None)
    kw = dict(revision=revision, cache_dir=cache_dir, local_files_only=True)  # the cache only
    try:
        config = Path(hf_hub_download(hf_id, "config.json", **kw))
    except (EntryNotFoundError, LocalEntryNotFoundError) as exc:
        raise ModelUnavailableError(f"{hf_id}@{revision} has no config.json ({type(exc).__name__})") from None
    for name in CODE_CONFIGS[1:]:
        try:
            hf_hub_download(hf_id, name, **kw)
        except (EntryNotFoundError, LocalEntryNotFoundError):
            pass
    try:
        check_no_remote_code(config.parent)
    except UntrustedCodeError as exc:
        raise UntrustedCodeError(f"{hf_id}@{revision}: {exc}") from None
    return config.parent


def hub_pooling(hf_id: str, revision: str = "main", cache_dir=None) -> str | None:
    """The sentence-transformers pooling mode of a Hub repository (:func:`~replib.models.files.pooling_mode`),
    or None when the cached snapshot has no ``modules.json`` (a plain ``transformers`` model)."""
    kw = dict(revision=revision, cache_dir=cache_dir, local_files_only=True)  # the cache only
    try:
        mods = Path(hf_hub_download(hf_id, "modules.json", **kw))
        if (m := st_module(mods.parent, "Pooling")) is not None and m.get("path"):
            hf_hub_download(hf_id, f"{m['path']}/config.json", **kw)
    except (EntryNotFoundError, OSError, ValueError):
        return None
    return pooling_mode(mods.parent)
