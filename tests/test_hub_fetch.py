"""Hugging Face Hub downloads through the book's downloader (issue 28, item 5, and the Hub snapshot of the
sentence-transformers route): the size cap on a whole model, the overall deadline, checksums of every file,
only the files a loader reads, and the code check on a snapshot before sentence-transformers reads it.

The Hub is a loopback HTTP server started by the test that answers the two requests a download makes: the
model's file listing (``/api/models/<repo>/revision/<rev>?blobs=true``) and a file (``/<repo>/resolve/<commit>/
<path>``). Every model is a tiny one built from a configuration.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
import urllib.parse
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest

from replib.data import ChecksumError
from replib.data.download import DownloadTimeoutError, DownloadTooLargeError
from replib.embeddings import embed_sentences
from replib.methods.classifiers.sbert import _sbert_model
from replib.models import ModelUnavailableError, UntrustedCodeError, resolve_model, tiny_model
from replib.models import hub as hub_module
from replib.models.hub_fetch import MAX_MODEL_BYTES_ENV, HubFile, fetch_hub_snapshot, needed_files

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"
TEXTS = ["A man is playing a guitar.", "Isotropy of embedding spaces."]


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub(http.server.ThreadingHTTPServer):
    """Repositories ``{repo: {path: bytes}}`` at :data:`COMMIT`; ``.safetensors`` and ``.bin`` files listed as
    LFS files (with their sha256); ``modes`` make one path misbehave (``drip``, ``lie``, ``flood``)."""

    daemon_threads = True

    def __init__(self, repos: dict[str, dict[str, bytes]]):
        super().__init__(("127.0.0.1", 0), _HubHandler)
        self.repos, self.modes, self.fetched, self.auth = repos, {}, [], {}
        self.sha = COMMIT  # the commit the listing names
        self.blobs: dict[str, bytes] = {}  # LFS files, served from /storage/<sha256> after a redirect
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.endpoint = "http://127.0.0.1:%d" % self.server_address[1]

    def listing(self, repo: str) -> dict:
        siblings = []
        for path, data in sorted(self.repos[repo].items()):
            s = {"rfilename": path, "size": len(data), "blobId": _git_blob_id(data)}
            if path.endswith((".safetensors", ".bin", ".h5")):
                s["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
            siblings.append(s)
        return {"id": repo, "modelId": repo, "sha": self.sha, "siblings": siblings, "private": False}


class _HubHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _reply(self, code: int, body: bytes, length: int | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def do_GET(self):
        srv, path = self.server, urllib.parse.urlsplit(self.path).path
        srv.auth[path] = self.headers.get("Authorization")
        if path.startswith("/storage/"):
            return self._reply(200, srv.blobs[path[len("/storage/") :]])
        if path.startswith("/api/models/"):
            repo = path[len("/api/models/") :].split("/revision/")[0]
            if repo not in srv.repos:
                return self._reply(404, b'{"error": "Repository not found"}')
            body = json.dumps(srv.listing(repo)).encode()
            if srv.modes.get("@listing") == "drip":  # the listing, one byte every 0.05 s
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for i in range(len(body)):
                    try:
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                    except OSError:
                        return
                    time.sleep(0.05)
                return
            return self._reply(200, body)
        repo, _, rest = path.lstrip("/").partition("/resolve/")
        fname = urllib.parse.unquote(rest.partition("/")[2])
        data = srv.repos.get(repo, {}).get(fname)
        if data is None:
            return self._reply(404, b"")
        srv.fetched.append(fname)
        mode = srv.modes.get(fname)
        if mode == "redirect":  # as the Hub sends LFS files to its storage
            sha = hashlib.sha256(data).hexdigest()
            srv.blobs[sha] = data
            self.send_response(302)
            self.send_header("Location", f"/storage/{sha}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "drip":  # announce the whole file, then one byte every 0.05 s
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for i in range(len(data)):
                try:
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.05)
            return
        if mode == "lie":  # other bytes of the same length
            return self._reply(200, bytes(255 - b for b in data))
        if mode == "flood":  # more bytes than listed, without a length
            self.send_response(200)
            self.end_headers()
            try:
                self.wfile.write(data + b"\0" * 100_000)
            except OSError:
                pass
            return
        self._reply(200, data)


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _tiny_repo(tmp_path: Path, extra: dict[str, bytes] | None = None) -> dict[str, bytes]:
    lm = tiny_model("bert", seed=0)
    folder = tmp_path / "src"
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    return {**_folder_bytes(folder), **(extra or {})}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A fake Hub that ``huggingface_hub`` and the book both talk to, reachable, with an empty cache."""
    server = FakeHub({})
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", server.endpoint)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(hub_module, "offline_mode", lambda: False)
    yield server
    server.shutdown()
    server.server_close()


def test_a_hub_model_comes_through_the_books_downloader_and_loads_from_the_cache(hub, tmp_path, monkeypatch):
    repo = _tiny_repo(tmp_path, {"tf_model.h5": b"x" * 5000, "pytorch_model.bin": b"y" * 5000})
    hub.repos["someone/tiny-enc"] = repo
    lm = resolve_model("someone/tiny-enc", device="cpu")
    assert lm.identity["hub"] == "someone/tiny-enc" and lm.identity["commit"] == COMMIT
    # only what a loader reads: no TensorFlow weights, no PyTorch pickle beside the safetensors
    assert "tf_model.h5" not in hub.fetched and "pytorch_model.bin" not in hub.fetched
    assert "model.safetensors" in hub.fetched and "config.json" in hub.fetched
    root = tmp_path / "hf-cache" / "models--someone--tiny-enc"
    assert (root / "refs" / "main").read_text() == COMMIT
    assert (root / "snapshots" / COMMIT / "model.safetensors").resolve().parent.name == "blobs"
    first = embed_sentences(lm, TEXTS, progress=False).means
    # the same model again, offline: read from the cache, nothing fetched
    n = len(hub.fetched)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_module, "offline_mode", lambda: True)
    again = resolve_model("someone/tiny-enc", device="cpu")
    assert len(hub.fetched) == n
    np.testing.assert_array_equal(embed_sentences(again, TEXTS, progress=False).means, first)


@pytest.mark.probe(
    "a Hub model larger than the cap, a Hub server that drips bytes, sends other bytes than it lists or more of them",
    "`DownloadTooLargeError` before any file is fetched (the whole model against "
    "`REPLIB_HUB_MAX_BYTES`, default 10 GiB), `DownloadTimeoutError` at the model's overall "
    "deadline, `ChecksumError` (LFS sha256, git blob hash) or `DownloadTooLargeError`; nothing "
    "reaches the snapshot",
)
def test_a_model_over_the_size_cap_is_refused_before_any_file_is_fetched(hub, tmp_path, monkeypatch):
    hub.repos["someone/big"] = _tiny_repo(tmp_path)
    monkeypatch.setenv(MAX_MODEL_BYTES_ENV, "10000")
    with pytest.raises(DownloadTooLargeError, match=rf"someone/big@main would download .* {MAX_MODEL_BYTES_ENV}"):
        resolve_model("someone/big", device="cpu")
    assert hub.fetched == []
    monkeypatch.setenv(MAX_MODEL_BYTES_ENV, "ten")
    with pytest.raises(ValueError, match=f"{MAX_MODEL_BYTES_ENV}='ten' is not a number of bytes"):
        fetch_hub_snapshot("someone/big", "main")


def test_a_dripping_server_is_stopped_at_the_models_overall_deadline(hub, tmp_path):
    hub.repos["someone/slow"] = {"config.json": b"{}" * 2000}
    hub.modes["config.json"] = "drip"
    t0 = time.monotonic()
    with pytest.raises(DownloadTimeoutError):
        fetch_hub_snapshot("someone/slow", "main", deadline=1.5)
    assert time.monotonic() - t0 < 10
    assert not (tmp_path / "hf-cache" / "models--someone--slow" / "snapshots" / COMMIT / "config.json").exists()


@pytest.mark.parametrize(
    ("path", "mode", "error"),
    [
        ("config.json", "lie", ChecksumError),  # a git file: its blob hash
        ("model.safetensors", "lie", ChecksumError),  # an LFS file: its sha256
        ("model.safetensors", "flood", DownloadTooLargeError),  # more bytes than listed
    ],
)
def test_bytes_other_than_listed_are_refused_and_never_reach_the_snapshot(hub, tmp_path, path, mode, error):
    hub.repos["someone/bad"] = _tiny_repo(tmp_path)
    hub.modes[path] = mode
    with pytest.raises(error):
        fetch_hub_snapshot("someone/bad", "main")
    snap = tmp_path / "hf-cache" / "models--someone--bad" / "snapshots" / COMMIT
    assert not (snap / path).exists()
    blobs = tmp_path / "hf-cache" / "models--someone--bad" / "blobs"
    assert all(not p.name.startswith(".") or p.name.endswith(".lock") for p in blobs.iterdir())


@pytest.mark.probe(
    "a Hub sentence-transformers model whose snapshot has code (downloaded now or already cached, offline)",
    "`UntrustedCodeError` naming the file, from the book's check of the snapshot folder, before "
    "sentence-transformers reads it",
)
def test_a_hub_sentence_transformers_model_with_code_is_refused_by_the_books_check(hub, tmp_path):
    """The classifiers chapter's route (sentence-transformers): a Hub snapshot whose modules.json names a module
    of its own is refused naming the file, before sentence-transformers reads the snapshot."""
    marker = tmp_path / "marker.txt"
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "", "type": "evil_module.Mod"},
    ]
    hub.repos["someone/evil-sbert"] = _tiny_repo(
        tmp_path,
        {
            "modules.json": json.dumps(modules).encode(),
            "evil_module.py": f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n".encode(),
        },
    )
    with pytest.raises(UntrustedCodeError, match=r"modules.json names the module 'evil_module.Mod'"):
        _sbert_model("someone/evil-sbert")
    assert not marker.exists()


def test_needed_files_keep_one_weight_format_and_no_exports():
    def f(path):
        return HubFile(path, 1, None, None)

    files = [
        f(p)
        for p in (
            "config.json",
            "model.safetensors",
            "pytorch_model.bin",
            "tf_model.h5",
            "onnx/model.onnx",
            "flax_model.msgpack",
            "vocab.txt",
            "1_Pooling/config.json",
        )
    ]
    assert [x.path for x in needed_files(files)] == [
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "1_Pooling/config.json",
    ]
    pickles_only = [f("config.json"), f("pytorch_model.bin"), f("tf_model.h5")]
    assert [x.path for x in needed_files(pickles_only)] == ["config.json", "pytorch_model.bin"]


def test_a_cached_hub_snapshot_with_code_is_refused_offline_on_the_sentence_transformers_route(
    hub, tmp_path, monkeypatch
):
    """A snapshot already in the cache (brought earlier, or copied from another machine) is checked as a
    reader's folder is: an ``auto_map`` in its configuration is refused with the book's message naming the file
    (before: transformers' own 'contains custom code' message, from inside sentence-transformers)."""
    marker = tmp_path / "marker.txt"
    repo = _tiny_repo(tmp_path)
    config = json.loads(repo["config.json"])
    config["auto_map"] = {"AutoModel": "evil.EvilModel"}
    repo["config.json"] = json.dumps(config).encode()
    repo["evil.py"] = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n".encode()
    hub.repos["someone/evil-cached"] = repo
    fetch_hub_snapshot("someone/evil-cached", "main")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_module, "offline_mode", lambda: True)
    with pytest.raises(UntrustedCodeError, match=r"someone/evil-cached@main: .*config.json has an 'auto_map'"):
        _sbert_model("someone/evil-cached")
    assert not marker.exists()


def test_a_token_goes_to_the_hub_only_never_to_the_storage_it_redirects_to(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    hub.repos["someone/gated"] = _tiny_repo(tmp_path)
    hub.modes["model.safetensors"] = "redirect"
    snap = fetch_hub_snapshot("someone/gated", "main")
    assert (snap / "model.safetensors").read_bytes() == hub.repos["someone/gated"]["model.safetensors"]
    assert hub.auth[f"/someone/gated/resolve/{COMMIT}/model.safetensors"] == "Bearer hf_secret"
    storage = [p for p in hub.auth if p.startswith("/storage/")]
    assert storage and all(hub.auth[p] is None for p in storage)


# ------------------------------------------------------------------ paths from the listing stay in the cache
def _outside_untouched(tmp_path: Path, victim: Path, before: bytes) -> None:
    assert victim.read_bytes() == before and not victim.is_symlink()
    cache = (tmp_path / "hf-cache").resolve()
    written = {p for p in tmp_path.rglob("*") if p.is_file() and cache not in p.resolve().parents}
    assert written <= {victim} | {p for p in tmp_path.rglob("*") if "src" in p.parts}


@pytest.mark.probe(
    "a Hub listing whose file name, revision or commit climbs out of the cache (`../`, an absolute path, "
    "a commit that is not 40 hex digits)",
    "refused naming the name (`ModelUnavailableError`) before a file is fetched; nothing is written outside the cache",
)
@pytest.mark.parametrize(
    ("name", "revision", "sha"),
    [
        ("../../../victim.txt", "main", COMMIT),  # a file name that climbs to the victim
        ("sub/../../../../victim.txt", "main", COMMIT),
        ("/abs/victim.txt", "main", COMMIT),
        ("config.json", "../../../victim.txt", COMMIT),  # a revision that climbs: the ref file
        ("config.json", "main", "../../../victim.txt"),  # a commit that is a path
        ("config.json", "main", "0123"),  # a commit that is not a sha
    ],
)
def test_a_listing_or_revision_that_climbs_out_of_the_cache_writes_nothing_outside_it(
    hub, tmp_path, name, revision, sha
):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    hub.repos["someone/evil"] = {"config.json": b"{}", name: b"overwritten"}
    hub.sha = sha
    with pytest.raises(ModelUnavailableError, match=r"someone/evil.*refused"):
        fetch_hub_snapshot("someone/evil", revision)
    _outside_untouched(tmp_path, victim, b"precious")
    assert hub.fetched == []


@pytest.mark.probe(
    "a Hub listing whose LFS sha256 or git blob id is a path (they name the cached blob)",
    "refused naming the value before a file is fetched",
)
def test_a_listing_whose_hash_is_a_path_is_refused(hub, tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    hub.repos["someone/evil"] = {"model.safetensors": b"weights"}
    listing = hub.listing

    def evil(repo):
        out = listing(repo)
        out["siblings"][0]["lfs"]["sha256"] = "../../../victim.txt"
        return out

    monkeypatch.setattr(hub, "listing", evil)
    with pytest.raises(ModelUnavailableError, match=r"not a sha256; refused"):
        fetch_hub_snapshot("someone/evil", "main")
    _outside_untouched(tmp_path, victim, b"precious")


@pytest.mark.slow
@pytest.mark.probe(
    "a Hub whose file listing (`/api/models/...`) drips its answer",
    "`DownloadTimeoutError` at the model's overall deadline, the listing included",
)
def test_a_dripping_listing_is_stopped_at_the_overall_deadline(hub, tmp_path):
    hub.repos["someone/slow-listing"] = _tiny_repo(tmp_path)
    hub.modes["@listing"] = "drip"
    t0 = time.monotonic()
    with pytest.raises(DownloadTimeoutError, match="overall deadline"):
        fetch_hub_snapshot("someone/slow-listing", "main", deadline=1.5, timeout=2)
    assert time.monotonic() - t0 < 1.5 + 2 + 3
    assert hub.fetched == []


@pytest.mark.probe(
    "a Hub id the Hub does not know (404)",
    "`ModelUnavailableError` with the answer and what to check, no traceback",
)
def test_an_unknown_hub_repository_is_one_clear_error(hub):
    with pytest.raises(
        ModelUnavailableError, match=r"someone/nothing@main: the Hub answered 404 .* check the model id"
    ):
        fetch_hub_snapshot("someone/nothing", "main")
