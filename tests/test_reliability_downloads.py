"""Downloads and the data cache under faults (issue 28, items 5 and 7): a server that drips bytes, one that
sends more than it may, an interrupted download resumed, and two runs that start together on one cache.

Every server is a loopback HTTP server on 127.0.0.1 started by the test; every registry entry is synthetic.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from replib._io import CacheLockTimeout, cache_lock
from replib.data import ChecksumError
from replib.data.download import DownloadTimeoutError, DownloadTooLargeError, download, partial_path

ROOT = Path(__file__).resolve().parents[1]
DATA = bytes(range(256)) * 400  # 102,400 bytes
SHA = hashlib.sha256(DATA).hexdigest()


class _Server(http.server.ThreadingHTTPServer):
    """One loopback server whose handler behaves as ``mode`` says, and that logs what it was asked and sent."""

    daemon_threads = True

    def __init__(self, mode: str, data: bytes = DATA, **opts):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode, self.data, self.opts = mode, data, opts
        self.requests: list[dict] = []
        self.sent = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/file.bin" % self.server_address[1]

    def close(self):
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, payload: bytes) -> bool:
        try:
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:  # the client hung up
            return False
        self.server.sent += len(payload)
        return True

    def do_GET(self):
        srv, data = self.server, self.server.data
        srv.requests.append({"range": self.headers.get("Range")})
        getattr(self, "_" + srv.mode)(srv, data)

    def _drip(self, srv, data):
        """Announce the whole file, then send one byte every ``every`` seconds (for at most ``for_s``)."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        t_end = time.monotonic() + srv.opts.get("for_s", 20)
        for i in range(len(data)):
            if time.monotonic() > t_end or not self._send(data[i : i + 1]):
                return
            time.sleep(srv.opts.get("every", 0.05))

    def _flood(self, srv, data):
        """No Content-Length (the body ends when the connection closes); up to ``total`` bytes."""
        self.send_response(200)
        self.end_headers()
        chunk = b"x" * 65536
        for _ in range(srv.opts.get("total", 200 * 2**20) // len(chunk)):
            if not self._send(chunk):
                return
        self.close_connection = True

    def _drip_unannounced(self, srv, data):
        """No Content-Length, then one byte every ``every`` seconds (for at most ``for_s``)."""
        self.send_response(200)
        self.end_headers()
        t_end = time.monotonic() + srv.opts.get("for_s", 20)
        for i in range(len(data)):
            if time.monotonic() > t_end or not self._send(data[i : i + 1]):
                break
            time.sleep(srv.opts.get("every", 0.05))
        self.close_connection = True

    def _huge(self, srv, data):
        """Announce a terabyte, send a little."""
        self.send_response(200)
        self.send_header("Content-Length", str(10**12))
        self.end_headers()
        self._send(data[:1000])
        self.close_connection = True

    def _ranges(self, srv, data):
        """Honour ``Range: bytes=N-``; the first ``cut`` requests stop after ``cut_at`` bytes of the body."""
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].rstrip("-"))
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if len(srv.requests) <= srv.opts.get("cut", 0):
            body = body[: srv.opts["cut_at"]]
            self.close_connection = True
        self._send(body)

    def _slow(self, srv, data):
        """The whole file in 20 pieces over about one second."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        step = -(-len(data) // 20)
        for i in range(0, len(data), step):
            self._send(data[i : i + step])
            time.sleep(0.05)


@pytest.fixture
def server(request):
    servers = []

    def start(mode, **kw):
        servers.append(_Server(mode, **kw))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


# ------------------------------------------------------------------------------- deadlines and the cap
@pytest.mark.probe(
    "a server that never answers, drips bytes or sends too much",
    "`DownloadTimeoutError` at the overall deadline, `DownloadTooLargeError` at the cap; an "
    "interrupted download resumes",
)
def test_a_server_that_drips_bytes_is_stopped_at_the_overall_deadline(tmp_path, server):
    srv = server("drip", every=0.05, for_s=30)
    dest = tmp_path / "file.bin"
    t = time.monotonic()
    with pytest.raises(DownloadTimeoutError, match="overall deadline"):
        download(srv.url, dest, SHA, size=len(DATA), timeout=2, deadline=1.5)
    assert time.monotonic() - t < 1.5 + 2 + 2  # the deadline, at most one read timeout, slack
    assert not dest.exists()
    kept = partial_path(dest)
    assert 0 < kept.stat().st_size < len(DATA)  # a pinned download keeps its bytes to resume


@pytest.mark.slow
@pytest.mark.probe(
    "a mirror that answers without a Content-Length and drips bytes",
    "`DownloadTimeoutError` at the deadline sized from the registered size (not the 1-hour one for files of "
    "unknown size)",
)
def test_a_response_without_length_gets_the_deadline_of_the_registered_size(tmp_path, server, monkeypatch):
    import replib.data.download as dl

    monkeypatch.setattr(dl, "BASE_DEADLINE", 1.0)  # the deadline of the registered size: about 1 s
    monkeypatch.setattr(dl, "UNKNOWN_LENGTH_DEADLINE", 60.0)  # the one of an unknown size: longer than the drip
    srv = server("drip_unannounced", every=0.05, for_s=12)
    t = time.monotonic()
    with pytest.raises(DownloadTimeoutError, match="overall deadline"):
        download(srv.url, tmp_path / "file.bin", SHA, size=len(DATA), timeout=2)
    assert time.monotonic() - t < 1.0 + len(DATA) / dl.MIN_RATE + 2 + 2


def test_default_deadline_grows_with_the_length():
    from replib.data.download import BASE_DEADLINE, MIN_RATE, UNKNOWN_LENGTH_DEADLINE, default_deadline

    assert default_deadline(None) == UNKNOWN_LENGTH_DEADLINE
    assert default_deadline(10**9) == BASE_DEADLINE + 10**9 / MIN_RATE


def test_a_body_longer_than_the_registered_size_is_cut_off(tmp_path, server):
    srv = server("flood", total=200 * 2**20)
    dest = tmp_path / "file.bin"
    with pytest.raises(DownloadTooLargeError, match="more than the 1000 bytes"):
        download(srv.url, dest, "0" * 64, size=1000, timeout=5)
    time.sleep(0.2)  # let the server notice the closed connection
    assert srv.sent < 32 * 2**20  # stopped after the first read past the size, not after 200 MB
    assert list(tmp_path.iterdir()) == [tmp_path / ".file.bin.lock"]  # no partial, no file


def test_the_general_cap_applies_without_a_registered_size(tmp_path, server):
    srv = server("flood", total=8 * 2**20)
    with pytest.raises(DownloadTooLargeError):
        download(srv.url, tmp_path / "file.bin", timeout=5, max_bytes=2**20)
    assert not partial_path(tmp_path / "file.bin").exists()


def test_an_announced_length_over_the_size_is_refused_before_the_body(tmp_path, server):
    srv = server("huge")
    with pytest.raises(DownloadTooLargeError, match="announces 1000000000000 bytes"):
        download(srv.url, tmp_path / "file.bin", SHA, size=len(DATA), timeout=5)
    assert not partial_path(tmp_path / "file.bin").exists()


# ------------------------------------------------------------------------------------------ resumption
def test_an_interrupted_download_resumes_where_it_stopped(tmp_path, server):
    srv = server("ranges", cut=1, cut_at=40_000)
    dest = tmp_path / "file.bin"
    with pytest.raises(OSError):  # the connection closed after 40,000 bytes
        download(srv.url, dest, SHA, size=len(DATA), timeout=5)
    assert partial_path(dest).stat().st_size == 40_000 and not dest.exists()
    assert download(srv.url, dest, SHA, size=len(DATA), timeout=5) == SHA
    assert dest.read_bytes() == DATA and not partial_path(dest).exists()
    assert [r["range"] for r in srv.requests] == [None, "bytes=40000-"]
    assert srv.sent == len(DATA)  # no byte was sent twice


def test_corrupted_kept_bytes_fail_the_checksum_and_the_next_try_starts_over(tmp_path, server):
    srv = server("ranges", cut=1, cut_at=40_000)
    dest = tmp_path / "file.bin"
    with pytest.raises(OSError):
        download(srv.url, dest, SHA, size=len(DATA), timeout=5)
    part = partial_path(dest)
    part.write_bytes(b"\xff" + part.read_bytes()[1:])  # one kept byte changed on disk (it was 0)
    with pytest.raises(ChecksumError):
        download(srv.url, dest, SHA, size=len(DATA), timeout=5)
    assert not part.exists() and not dest.exists()
    assert download(srv.url, dest, SHA, size=len(DATA), timeout=5) == SHA
    assert srv.requests[-1]["range"] is None and dest.read_bytes() == DATA


def test_without_a_checksum_nothing_is_kept_or_resumed(tmp_path, server):
    srv = server("ranges", cut=1, cut_at=40_000)
    dest = tmp_path / "file.bin"
    with pytest.raises(OSError):
        download(srv.url, dest, None, timeout=5)
    assert not partial_path(dest).exists()


# ---------------------------------------------------------------------------- two runs on one cache
_FETCH_CHILD = """
import json, sys, time
from replib.data import DATASETS, fetch
from replib.data.registry import DataFile
entry = DataFile("stsb/shared.bin", sys.argv[2], int(sys.argv[3]), 0, canonical="test", urls=(sys.argv[1],))
DATASETS["stsb"].files["shared.bin"] = entry
while time.time() < float(sys.argv[4]):  # start together
    time.sleep(0.001)
print(json.dumps({"path": str(fetch("stsb", "shared.bin", timeout=10))}))
"""


def _children(script: str, args: list[list[str]], cache: Path) -> list[subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), REPLIB_CACHE_DIR=str(cache), TQDM_DISABLE="1")
    env.pop("REPLIB_DATA_MIRROR", None)
    procs = [
        subprocess.Popen([sys.executable, "-c", script, *a], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for a in args
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout.decode(), stderr.decode()))
    return out


@pytest.mark.probe(
    "two runs starting together on one cache",
    "they take turns (`filelock`); a file is downloaded once, no record lost",
)
def test_two_runs_starting_together_download_a_file_once(tmp_path, server):
    srv = server("slow")
    start = str(time.time() + 8.0)  # both children are importing by then
    done = _children(_FETCH_CHILD, [[srv.url, SHA, str(len(DATA)), start]] * 2, tmp_path / "cache")
    assert [p.returncode for p in done] == [0, 0], [p.stderr[-2000:] for p in done]
    paths = {json.loads(p.stdout.strip().splitlines()[-1])["path"] for p in done}
    assert len(paths) == 1 and Path(paths.pop()).read_bytes() == DATA
    assert len(srv.requests) == 1  # the second run waited for the lock and found the file


_VERIFY_CHILD = """
import hashlib, sys, time
from pathlib import Path
import replib.data.store as store
from replib.data.registry import DataFile
mirror, cache, tag, n = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
while time.time() < float(sys.argv[5]):
    time.sleep(0.001)
for i in range(n):
    p = mirror / f"{tag}-{i}.txt"
    entry = DataFile(p.name, hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_size, 1, canonical="test")
    store._verify_in_place(p, entry, cache)
"""


def test_two_runs_verifying_files_together_lose_no_record(tmp_path):
    mirror, cache, n = tmp_path / "mirror", tmp_path / "cache", 60
    mirror.mkdir()
    for tag in "ab":
        for i in range(n):
            (mirror / f"{tag}-{i}.txt").write_text(f"{tag} {i}\n")
    start = str(time.time() + 6.0)
    done = _children(_VERIFY_CHILD, [[str(mirror), str(cache), tag, str(n), start] for tag in "ab"], cache)
    assert [p.returncode for p in done] == [0, 0], [p.stderr[-2000:] for p in done]
    db = json.loads((cache / ".verified.json").read_text())
    assert len(db) == 2 * n  # every verification of both runs is remembered


_HOLD_CHILD = """
import sys, time
from replib._io import cache_lock
with cache_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_lock_held_too_long_is_a_clear_error_and_dies_with_its_process(tmp_path):
    dest = tmp_path / "stsb" / "held.txt"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_CHILD, str(dest)],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        with pytest.raises(CacheLockTimeout, match="in use by another run"):
            with cache_lock(dest, timeout=0.3):
                pass
    finally:
        holder.kill()
        holder.wait()
    with cache_lock(dest, timeout=5):  # the killed holder's lock died with it
        pass
