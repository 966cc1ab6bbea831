"""Fault injection on the data layer and the weight loader: corrupted, truncated, missing files, checksum
mismatches, unreachable and hanging servers, plain-http sources without a checksum, tampered pickles.

Every test builds its own synthetic files (a registry entry is monkeypatched in), so none needs the mirror.
A "hanging" server is a loopback socket that accepts connections and never sends a byte.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import pickle
import socket
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import replib.data.store as store
from replib.data import DATASETS, ChecksumError, DataNotFoundError, fetch
from replib.data.__main__ import main as data_cli
from replib.data.registry import Archive, DataFile
from replib.data.store import DownloadTimeoutError, download, verify_all


# ---------------------------------------------------------------------------------------------- helpers
@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.delenv("REPLIB_DATA_MIRROR", raising=False)
    monkeypatch.delenv("REPLIB_VERIFY", raising=False)
    monkeypatch.delenv("REPLIB_DATA_OFFLINE", raising=False)
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "_verified_memory", {})


def _register(monkeypatch, name: str, data: bytes | None = None, **kw) -> DataFile:
    """A synthetic registry entry ``stsb/<name>`` (sha256 and size of ``data`` unless given in ``kw``)."""
    if data is not None:
        kw.setdefault("sha256", hashlib.sha256(data).hexdigest())
        kw.setdefault("size", len(data))
    entry = DataFile("stsb/" + name, kw.pop("sha256", None), canonical="test", **kw)
    monkeypatch.setitem(DATASETS["stsb"].files, name, entry)
    return entry


def _mirror_file(tmp_path: Path, entry: DataFile, data: bytes) -> Path:
    p = tmp_path / "mirror" / entry.path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def _corrupt_in_place_keep_mtime(p: Path) -> None:
    """Flip one byte without changing the size, then restore atime and mtime (what `touch -d` can do)."""
    st = p.stat()
    with open(p, "r+b") as fh:
        fh.seek(st.st_size // 2)
        b = fh.read(1)
        fh.seek(st.st_size // 2)
        fh.write(bytes([b[0] ^ 0x01]))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns


class _Hanging:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.conns, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]

    def _accept(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self):
        self.stop.set()
        self.thread.join(2)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.fixture
def hanging():
    srv = _Hanging()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def served(tmp_path):
    """A loopback http server of a temporary folder: (folder, base URL)."""
    root = tmp_path / "served"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield root, "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connection refused
    return "http://127.0.0.1:%d" % port


# ------------------------------------------------------------------------------ verified files re-hashed
def test_same_size_corruption_with_restored_mtime_is_detected(monkeypatch, tmp_path):
    data = b"sentence one\t4.0\n" * 300
    entry = _register(monkeypatch, "inplace.txt", data)
    p = _mirror_file(tmp_path, entry, data)
    mirror = tmp_path / "mirror"
    assert fetch("stsb", "inplace.txt", mirror=mirror) == p  # verified, stamp remembered
    _corrupt_in_place_keep_mtime(p)
    with pytest.raises(ChecksumError, match=str(p)):
        fetch("stsb", "inplace.txt", mirror=mirror)
    store._verified_memory.clear()  # the on-disk record alone must not vouch for it either
    with pytest.raises(ChecksumError, match="inplace.txt"):
        fetch("stsb", "inplace.txt", mirror=mirror)


def test_unchanged_file_is_not_rehashed_unless_asked(monkeypatch, tmp_path):
    data = b"abc\n" * 1000
    entry = _register(monkeypatch, "stamp.txt", data)
    _mirror_file(tmp_path, entry, data)
    mirror = tmp_path / "mirror"
    fetch("stsb", "stamp.txt", mirror=mirror)
    calls = []
    real = store.hash_file
    monkeypatch.setattr(store, "hash_file", lambda p, algorithm="sha256": calls.append(p) or real(p, algorithm))
    fetch("stsb", "stamp.txt", mirror=mirror)
    assert calls == []
    fetch("stsb", "stamp.txt", mirror=mirror, verify=True)
    assert len(calls) == 1
    monkeypatch.setenv("REPLIB_VERIFY", "1")
    fetch("stsb", "stamp.txt", mirror=mirror)
    assert len(calls) == 2


def test_verify_command_reports_the_corrupted_file(monkeypatch, tmp_path, capsys):
    good, bad = b"good\n" * 50, b"bad file\n" * 50
    e1 = _register(monkeypatch, "good.txt", good)
    e2 = _register(monkeypatch, "bad.txt", bad)
    _mirror_file(tmp_path, e1, good)
    p = _mirror_file(tmp_path, e2, bad)
    mirror = tmp_path / "mirror"
    fetch("stsb", "bad.txt", mirror=mirror)
    _corrupt_in_place_keep_mtime(p)
    rows = {str(path): status for path, status, _ in verify_all(mirror, datasets=["stsb"])}
    assert rows[str(p)] == "FAILED" and rows[str(tmp_path / "mirror" / e1.path)] == "ok"
    assert data_cli(["verify", "--dataset", "stsb", "--mirror", str(mirror)]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_truncated_mirror_file_names_the_file(monkeypatch, tmp_path):
    data = b"0123456789\n" * 100
    entry = _register(monkeypatch, "trunc.txt", data)
    p = _mirror_file(tmp_path, entry, data[:-7])
    with pytest.raises(ChecksumError, match=r"trunc\.txt has 1093 bytes, expected 1100"):
        fetch("stsb", "trunc.txt", mirror=tmp_path / "mirror")
    assert p.exists()  # a mirror is read-only to us: reported, never deleted


def test_checksum_mismatch_names_file_and_both_digests(monkeypatch, tmp_path):
    data = b"x" * 64
    entry = _register(monkeypatch, "mismatch.txt", data, sha256="0" * 64)
    _mirror_file(tmp_path, entry, data)
    with pytest.raises(ChecksumError) as exc:
        fetch("stsb", "mismatch.txt", mirror=tmp_path / "mirror")
    msg = str(exc.value)
    assert "mismatch.txt" in msg and "0" * 64 in msg and hashlib.sha256(data).hexdigest() in msg


def test_missing_mirror_file_offline_names_file_and_mirror(monkeypatch, tmp_path):
    _register(monkeypatch, "absent.txt", b"zzz\n")
    (tmp_path / "mirror").mkdir()
    with pytest.raises(DataNotFoundError) as exc:
        fetch("stsb", "absent.txt", mirror=tmp_path / "mirror", download_ok=False)
    assert "stsb/absent.txt" in str(exc.value) and "has no stsb/absent.txt" in str(exc.value)


def test_corrupted_cached_copy_is_refused(monkeypatch, tmp_path, served):
    root, url = served
    data = b"cached bytes\n" * 40
    entry = _register(monkeypatch, "cached.txt", data)
    (root / "stsb").mkdir()
    (root / entry.path).write_bytes(data)
    p = fetch("stsb", "cached.txt", mirror=url)
    _corrupt_in_place_keep_mtime(p)
    with pytest.raises(ChecksumError, match="cached.txt"):
        fetch("stsb", "cached.txt", mirror=url)


# ------------------------------------------------------------------------- unreachable and hanging servers
def test_hanging_server_times_out_with_a_clear_error(tmp_path, hanging):
    t = time.perf_counter()
    with pytest.raises(DownloadTimeoutError, match="did not answer|no answer"):
        download(hanging.url + "/file.bin", tmp_path / "file.bin", "0" * 64, timeout=0.5)
    assert time.perf_counter() - t < 30
    assert [p.name for p in tmp_path.iterdir()] == [".file.bin.lock"]  # no partial file left, only the lock


def test_hanging_mirror_url_fails_naming_the_file(monkeypatch, tmp_path, hanging):
    _register(monkeypatch, "slow.txt", b"never\n")
    with pytest.raises(DataNotFoundError) as exc:
        fetch("stsb", "slow.txt", mirror=hanging.url, download_ok=False, timeout=0.5)
    assert "stsb/slow.txt" in str(exc.value) and "0.5 s" in str(exc.value)


def test_unreachable_source_fails_naming_the_file(monkeypatch, tmp_path):
    url = _closed_port_url()
    _register(monkeypatch, "gone.txt", b"gone\n", urls=(url + "/gone.txt",))
    with pytest.raises(DataNotFoundError) as exc:
        fetch("stsb", "gone.txt", timeout=2)
    assert "stsb/gone.txt" in str(exc.value) and url in str(exc.value)


# ------------------------------------------------------------------------------- checksums on every route
def test_plain_http_without_any_checksum_is_refused(monkeypatch, tmp_path, served):
    root, url = served
    (root / "u.txt").write_bytes(b"unpinned\n")
    _register(monkeypatch, "unpinned.txt", None, urls=(url + "/u.txt",))
    with pytest.raises(DataNotFoundError, match="refusing a plain-http download"):
        fetch("stsb", "unpinned.txt")
    assert not (tmp_path / "cache" / "data" / "stsb" / "unpinned.txt").exists()


def test_http_archive_without_any_checksum_is_refused(monkeypatch, tmp_path, served):
    import io
    import zipfile

    root, url = served
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("a/m.txt", b"member\n")
    (root / "a.zip").write_bytes(buf.getvalue())
    _register(monkeypatch, "arch.txt", None, archive=Archive(url + "/a.zip", "a/m.txt", True))
    with pytest.raises(DataNotFoundError, match="refusing a plain-http archive"):
        fetch("stsb", "arch.txt")


def test_archive_pinned_by_its_published_md5(monkeypatch, tmp_path, served):
    import io
    import zipfile

    root, url = served
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("w/train.tokens", b"the train split\n")
    (root / "w.zip").write_bytes(buf.getvalue())
    good = hashlib.md5(buf.getvalue()).hexdigest()
    _register(monkeypatch, "wgood.txt", None, archive=Archive(url + "/w.zip", "w/train.tokens", True, md5=good))
    p = fetch("stsb", "wgood.txt")
    assert p.read_bytes() == b"the train split\n" and good in p.with_name(p.name + ".sha256.json").read_text()
    monkeypatch.setenv("REPLIB_CACHE_DIR", str(tmp_path / "cache2"))
    _register(monkeypatch, "wbad.txt", None, archive=Archive(url + "/w.zip", "w/train.tokens", True, md5="0" * 32))
    with pytest.raises(DataNotFoundError, match="md5"):
        fetch("stsb", "wbad.txt")


def test_published_md5_pins_an_http_download(monkeypatch, tmp_path, served):
    root, url = served
    data = b"the pinned train file\n" * 100
    (root / "t.txt").write_bytes(data)
    (root / "t_bad.txt").write_bytes(data.replace(b"pinned", b"tamper"))
    md5 = hashlib.md5(data).hexdigest()
    _register(monkeypatch, "md5ok.txt", None, md5=md5, urls=(url + "/t.txt",))
    _register(monkeypatch, "md5bad.txt", None, md5=md5, urls=(url + "/t_bad.txt",))
    p = fetch("stsb", "md5ok.txt")
    assert p.read_bytes() == data
    side = p.with_name(p.name + ".sha256.json").read_text()
    assert md5 in side and hashlib.sha256(data).hexdigest() in side
    with pytest.raises(DataNotFoundError, match="md5"):
        fetch("stsb", "md5bad.txt")
    assert not (tmp_path / "cache" / "data" / "stsb" / "md5bad.txt").exists()
    _corrupt_in_place_keep_mtime(p)  # the cached copy is re-checked against the published md5
    with pytest.raises(ChecksumError, match="md5"):
        fetch("stsb", "md5ok.txt")


def test_ptb_train_is_pinned_and_has_no_unverified_http_route():
    entry = DATASETS["ptb"].files["mikolov/ptb.train.txt"]
    assert entry.md5 == "f26c4b92c5fdc7b3f8c7cdcb991d8420"  # torchtext's published md5 (see the note)
    for f in (DATASETS[name].files[k] for name in DATASETS for k in DATASETS[name].files):
        sources = list(f.urls) + ([f.archive.url] if f.archive else [])
        pinned = f.sha256 or f.md5 or (f.archive is not None and f.archive.md5)
        assert pinned or all(u.startswith("https://") for u in sources), f.path


# ------------------------------------------------------------------------------------------- permissions
def test_downloads_and_verification_records_respect_the_umask(monkeypatch, tmp_path, served):
    root, url = served
    data = b"shared with the group\n"
    entry = _register(monkeypatch, "mode.txt", data)
    (root / "stsb").mkdir()
    (root / entry.path).write_bytes(data)
    old = os.umask(0o002)
    try:
        p = fetch("stsb", "mode.txt", mirror=url)
        assert stat.S_IMODE(p.stat().st_mode) == 0o664
        _mirror_file(tmp_path, entry, data)
        fetch("stsb", "mode.txt", mirror=tmp_path / "mirror")
        db = tmp_path / "cache" / "data" / ".verified.json"
        assert stat.S_IMODE(db.stat().st_mode) == 0o664
    finally:
        os.umask(old)


# ------------------------------------------------------------------------------------ ProteinBERT pickles
class _Payload:
    """A pickle that runs code when loaded (touches a marker file)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _weights_dir(tmp_path, obj) -> tuple[Path, str]:
    from replib.models.registry import PROTEINBERT_WEIGHTS

    d = tmp_path / "pb"
    d.mkdir(exist_ok=True)
    f = d / PROTEINBERT_WEIGHTS["filename"]
    f.write_bytes(pickle.dumps(obj))
    return d, hashlib.sha256(f.read_bytes()).hexdigest()


def test_unregistered_pickle_is_refused_before_unpickling(tmp_path):
    from replib.models import load_model
    from replib.models.proteinbert import UntrustedWeightsError

    marker = tmp_path / "code-ran"
    d, digest = _weights_dir(tmp_path, (8943, _Payload(marker), None))
    with pytest.raises(UntrustedWeightsError, match="not the registered sha256") as exc:
        load_model("proteinbert", local_dir=d, device="cpu")
    assert digest in str(exc.value) and "sha256=" in str(exc.value)
    assert not marker.exists()
    with pytest.raises(UntrustedWeightsError, match="differs from the sha256 you gave"):
        load_model("proteinbert", local_dir=d, device="cpu", sha256="f" * 64)
    assert not marker.exists()


def test_vouched_pickle_may_hold_arrays_only(tmp_path):
    from replib.models import load_model
    from replib.models.proteinbert import ProteinBERT, random_weights

    marker = tmp_path / "code-ran"
    d, digest = _weights_dir(tmp_path, (8943, _Payload(marker), None))
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        load_model("proteinbert", local_dir=d, device="cpu", sha256=digest)
    assert not marker.exists()
    w = random_weights(ProteinBERT(n_annotations=4), seed=1)
    d, digest = _weights_dir(tmp_path, (4, w, [np.zeros(2)]))
    lm = load_model("proteinbert", local_dir=d, device="cpu", sha256=digest)
    got = [p.detach().numpy() for p in lm.model.ordered_parameters()]
    assert all(np.array_equal(a, b) for a, b in zip(got, w))


def test_weight_download_times_out_and_rejects_wrong_bytes(tmp_path, hanging, served):
    from replib.models.proteinbert import fetch_weights
    from replib.models.registry import PROTEINBERT_WEIGHTS

    t = time.perf_counter()
    with pytest.raises(DownloadTimeoutError):
        fetch_weights(tmp_path / "c1", url=hanging.url + "/w.pkl", timeout=0.5)
    assert time.perf_counter() - t < 30
    root, url = served
    (root / "w.pkl").write_bytes(b"not the weights")
    with pytest.raises(ValueError, match="sha256|bytes"):
        fetch_weights(tmp_path / "c2", url=url + "/w.pkl", size=15)
    assert not (tmp_path / "c2" / "proteinbert" / PROTEINBERT_WEIGHTS["filename"]).exists()
