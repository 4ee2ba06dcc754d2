"""Servers that lie, stall and redirect, on loopback: the token stays with its host, every read is bounded in bytes,
requests and time, and every failure is one line with exit 3. Each server stops when its test ends."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gguf_files import big_vocab_model
from helpers import kv

from kvplan.errors import GGUFError, ModelNotFoundError
from kvplan.sources import remote
from kvplan.sources.remote import RemoteReader, read_remote_gguf, read_remote_model_files, resolve

#: servers that stall and time out: the full suite only (the fast lane keeps tests/sources/test_remote.py)
pytestmark = pytest.mark.slow

Reply = Callable[["Conn"], None]


class Conn(socketserver.StreamRequestHandler):
    """One request: the test's ``reply`` decides what goes back, byte for byte."""

    reply: Reply
    seen: list[dict[str, str]]
    sent: list[int]

    def handle(self) -> None:
        head = self.rfile.readline(65536).decode("latin-1")
        headers = {}
        while True:
            line = self.rfile.readline(65536).decode("latin-1").strip()
            if not line:
                break
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        headers["_path"] = head.split(" ")[1] if " " in head else ""
        self.headers = headers
        self.seen.append(headers)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            type(self).reply(self)

    def send(self, data: bytes) -> None:
        self.wfile.write(data)
        self.sent.append(len(data))

    @property
    def range(self) -> tuple[int, int]:
        a, b = self.headers.get("range", "bytes=0-0").removeprefix("bytes=").split("-")
        return int(a), int(b)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], tuple[str, type[Conn]]]]:
    servers: list[Server] = []

    def start(reply: Reply) -> tuple[str, type[Conn]]:
        handler = type("H", (Conn,), {"reply": staticmethod(reply), "seen": [], "sent": []})
        srv = Server(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}", handler

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def file_server(data: bytes, star: bool = False) -> Reply:
    """An honest Range server (``star``: it does not say the size)."""

    def reply(c: Conn) -> None:
        a, b = c.range
        b = min(b, len(data) - 1)
        body = data[a : b + 1]
        size = "*" if star else str(len(data))
        c.send(f"HTTP/1.1 206 Partial\r\nContent-Range: bytes {a}-{b}/{size}\r\nContent-Length: {len(body)}\r\n"
               f"Connection: close\r\n\r\n".encode() + body)  # fmt: skip

    return reply


def redirect_to(location: str) -> Reply:
    def reply(c: Conn) -> None:
        c.send(f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nConnection: close\r\n\r\n".encode())

    return reply


@pytest.fixture(autouse=True)
def _no_cache() -> Iterator[None]:
    remote._CACHE.clear()
    yield
    remote._CACHE.clear()


def _gguf(tmp_path: Path, vocab: int = 10) -> bytes:
    return big_vocab_model(tmp_path / "m.gguf", vocab=vocab, tensor_mib=1).read_bytes()


def test_the_token_goes_only_to_the_hub_endpoint(tmp_path: Path, serve, monkeypatch) -> None:
    data = _gguf(tmp_path)
    elsewhere, other = serve(file_server(data))
    hub, hub_conn = serve(redirect_to(f"{elsewhere}/m.gguf"))  # the hub redirects to another port (a CDN)
    monkeypatch.setenv("HF_TOKEN", "secret-token")
    monkeypatch.setenv("HF_ENDPOINT", hub)
    assert kv("estimate", "hf://org/repo/m.gguf", "-c", "4k").exit_code == 0
    assert hub_conn.seen and all(h.get("authorization") == "Bearer secret-token" for h in hub_conn.seen)
    assert other.seen and not any("authorization" in h for h in other.seen)
    # a plain URL never carries it, wherever it points
    remote._CACHE.clear()
    assert kv("estimate", f"{elsewhere}/m.gguf", "-c", "4k").exit_code == 0
    assert not any("authorization" in h for h in other.seen)


def test_the_token_file_and_offline_mode(tmp_path: Path, serve, monkeypatch) -> None:
    hub, conn = serve(file_server(_gguf(tmp_path)))
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "token").write_text("file-token\n")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", hub)
    assert kv("estimate", "hf://org/repo/m.gguf").exit_code == 0
    assert conn.seen[0]["authorization"] == "Bearer file-token"  # the trailing newline is not part of it
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = kv("estimate", "hf://org/repo/other.gguf")
    assert r.exit_code == 3 and "HF_HUB_OFFLINE" in r.stderr
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_TOKEN", "bad\x01token-value")
    r = kv("estimate", "hf://org/repo/third.gguf")
    assert r.exit_code == 3 and "token-value" not in r.stderr and "characters a header cannot carry" in r.stderr


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("hf://org/repo/sub/../../../../api/whoami-v2", "expected hf://ORG/REPO"),
        ("hf://org//file.gguf", "expected hf://ORG/REPO"),
        ("http://127.0.0.1:99999/x.gguf", "not a valid URL"),
        ("http://[::1/x.gguf", "not a valid URL"),
        ("http://host/a b.gguf", "not a valid URL (spaces or control characters)"),
        ("https:///x.gguf", "not a valid http(s) URL"),
    ],
)
def test_references_that_are_refused_before_anything_is_sent(ref: str, message: str) -> None:
    with pytest.raises(ModelNotFoundError, match=re.escape(message)):
        resolve(ref)
    r = kv("estimate", ref)
    assert r.exit_code == 3 and message in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("ftp://127.0.0.1/m.gguf", "refusing a redirect to a ftp URL"),
        ("file:///etc/passwd", "to a file URL"),
        ("", "a redirect without a Location"),
    ],
)
def test_redirects_go_only_to_http(serve, location: str, message: str) -> None:
    base, _ = serve(redirect_to(location))
    with pytest.raises(GGUFError, match=message):
        read_remote_gguf(f"{base}/m.gguf")


def test_no_downgrade_from_https() -> None:
    reader = RemoteReader("https://hub.example/m.gguf", "m.gguf")
    with pytest.raises(GGUFError, match="from https to plain http"):
        reader._redirect("https://hub.example/m.gguf", "http://cdn.example/m.gguf")
    assert reader._redirect("https://hub.example/a/m.gguf", "/b/m.gguf") == "https://hub.example/b/m.gguf"


def test_redirect_bodies_and_redirect_loops_are_not_followed_forever(serve) -> None:
    def big_redirect(c: Conn) -> None:
        c.send(b"HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 2000000000\r\n\r\n")
        c.send(b"x" * (1 << 20))  # a server that would send 2 GB

    base, conn = serve(big_redirect)
    started = time.monotonic()
    with pytest.raises(GGUFError, match="more than 5 redirects"):
        read_remote_gguf(f"{base}/m.gguf")
    assert len(conn.seen) == 6 and time.monotonic() - started < 10


def test_a_range_that_claims_more_than_was_asked_is_refused(serve) -> None:
    def liar(c: Conn) -> None:
        a, _ = c.range
        c.send(f"HTTP/1.1 206 Partial\r\nContent-Range: bytes {a}-{a + (2 << 30) - 1}/{4 << 30}\r\n"
               f"Content-Length: {2 << 30}\r\n\r\n".encode() + b"G" * (1 << 20))  # fmt: skip

    base, _ = serve(liar)
    with pytest.raises(GGUFError, match="bad Content-Range"):
        read_remote_gguf(f"{base}/m.gguf")


def test_a_server_sending_one_byte_at_a_time_or_nothing(tmp_path: Path, serve) -> None:
    data = _gguf(tmp_path, vocab=200_000)

    def one_byte(c: Conn) -> None:
        a, _ = c.range
        c.send(f"HTTP/1.1 206 Partial\r\nContent-Range: bytes {a}-{a}/{len(data)}\r\nContent-Length: 1\r\n\r\n"
               .encode() + data[a : a + 1])  # fmt: skip

    base, conn = serve(one_byte)
    with pytest.raises(GGUFError, match="short range"):
        read_remote_gguf(f"{base}/m.gguf")
    assert len(conn.seen) == 1

    calls = {"n": 0}

    def then_416(c: Conn) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            file_server(data)(c)
        else:
            c.send(b"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n")

    base, conn = serve(then_416)
    with pytest.raises(GGUFError):
        read_remote_gguf(f"{base}/m.gguf")
    assert len(conn.seen) <= 2


def test_a_slow_trickle_meets_the_deadline(tmp_path: Path, serve, monkeypatch) -> None:
    data = _gguf(tmp_path)

    def trickle(c: Conn) -> None:
        a, b = c.range
        b = min(b, len(data) - 1)
        c.send(f"HTTP/1.1 206 Partial\r\nContent-Range: bytes {a}-{b}/{len(data)}\r\nContent-Length: {b - a + 1}"
               "\r\n\r\n".encode())  # fmt: skip
        for i in range(a, b + 1):
            c.send(data[i : i + 1])
            time.sleep(0.05)

    base, _ = serve(trickle)
    monkeypatch.setattr(remote, "DEADLINE_S", 1.0)
    started = time.monotonic()
    with pytest.raises(GGUFError, match=r"gave up after 1 s|timed out"):
        read_remote_gguf(f"{base}/m.gguf")
    assert time.monotonic() - started < 5


def test_garbage_replies(serve) -> None:
    for reply in (b"NONSENSE\r\n\r\n", b"HTTP/1.1 206 OK\r\nX: " + b"a" * 100_000 + b"\r\n\r\n",
                  b"HTTP/1.1 999 Whatever\r\n\r\n", b""):  # fmt: skip
        base, _ = serve(lambda c, reply=reply: c.send(reply))
        r = kv("estimate", f"{base}/m.gguf")
        assert r.exit_code == 3 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, (reply[:20], r.stderr)


def test_an_unknown_size_is_read_as_far_as_the_header_goes(tmp_path: Path, serve) -> None:
    data = _gguf(tmp_path, vocab=300_000)  # a header longer than the first 2 MiB window
    base, _ = serve(file_server(data, star=True))
    f, reader = read_remote_gguf(f"{base}/m.gguf")
    assert f.kv["tokenizer.ggml.tokens"].count == 300_000 and reader.requests >= 2


def test_the_shard_count_is_checked_before_other_shards(tmp_path: Path, serve) -> None:
    data = _gguf(tmp_path)  # no split.count at all
    base, conn = serve(file_server(data))
    with pytest.raises(GGUFError, match="the name says 99999 shards"):
        read_remote_model_files(f"{base}/m-00001-of-99999.gguf")
    assert len(conn.seen) == 1


def test_each_source_is_read_once_per_process(tmp_path: Path, serve) -> None:
    base, conn = serve(file_server(_gguf(tmp_path)))
    for _ in range(3):
        read_remote_model_files(f"{base}/m.gguf")
    assert len(conn.seen) == 1


def test_a_server_that_closes_at_once(serve) -> None:
    def close(c: Conn) -> None:
        c.connection.shutdown(socket.SHUT_RDWR)

    base, _ = serve(close)
    r = kv("estimate", f"{base}/m.gguf")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1


# ---- issue 26: one deadline for the whole fetch, whatever the server does


def _stalls(monkeypatch, reply: Reply, serve, match: str) -> float:
    """Fetch from a server that stalls; the error is ``match`` and comes within the (shortened) deadline."""
    base, _ = serve(reply)
    monkeypatch.setattr(remote, "DEADLINE_S", 1.0)
    started = time.monotonic()
    with pytest.raises(GGUFError, match=match):
        read_remote_gguf(f"{base}/m.gguf")
    return time.monotonic() - started


def test_interim_replies_forever(serve, monkeypatch) -> None:
    def forever(c: Conn) -> None:
        while True:
            c.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.01)

    assert _stalls(monkeypatch, forever, serve, r"more than 8 interim \(1xx\) replies") < 2

    def slow_forever(c: Conn) -> None:
        while True:
            c.send(b"HTTP/1.1 102 Processing\r\n\r\n")
            time.sleep(0.3)

    # 8 interim replies take 2.4 s: the 1 s deadline ends it first
    assert _stalls(monkeypatch, slow_forever, serve, r"gave up after 1 s") < 2


def test_a_header_sent_one_byte_at_a_time(serve, monkeypatch) -> None:
    def trickle(c: Conn) -> None:
        for b in b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-9/10\r\nContent-Length: 10\r\n\r\n0123456789":
            c.send(bytes([b]))
            time.sleep(0.2)

    assert _stalls(monkeypatch, trickle, serve, r"gave up after 1 s") < 2


def test_a_chunk_size_that_trickles(serve, monkeypatch) -> None:
    def trickle(c: Conn) -> None:
        c.send(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-9/10\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:
            c.send(b"0")  # a chunk-size line of leading zeros that never ends
            time.sleep(0.1)

    assert _stalls(monkeypatch, trickle, serve, r"gave up after 1 s|chunk size") < 2


def test_trailers_that_never_end_are_never_read(tmp_path: Path, serve) -> None:
    data = _gguf(tmp_path)

    def trailers(c: Conn) -> None:
        a, b = c.range
        b = min(b, len(data) - 1)
        body = data[a : b + 1]
        c.send(f"HTTP/1.1 206 Partial\r\nContent-Range: bytes {a}-{b}/{len(data)}\r\nTransfer-Encoding: chunked"
               f"\r\n\r\n{len(body):x}\r\n".encode() + body + b"\r\n0\r\n")  # fmt: skip
        while True:
            c.send(b"X-Trailer: " + b"t" * 1000 + b"\r\n")
            time.sleep(0.01)

    base, _ = serve(trailers)
    started = time.monotonic()
    f, _ = read_remote_gguf(f"{base}/m.gguf")
    assert f.kv["tokenizer.ggml.tokens"].count == 10 and time.monotonic() - started < 2


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 206 Partial\r\n" + b"X-Many: 1\r\n" * 101 + b"\r\n",
        b"HTTP/1.1 206 Partial\r\n" + (b"X-Big: " + b"b" * 8000 + b"\r\n") * 9 + b"\r\n",
        b"HTTP/1.1 206 Partial\r\nX-Long: " + b"l" * 9000 + b"\r\n\r\n",
        b"HTTP/1.1 206 " + b"r" * 9000 + b"\r\n\r\n",
        b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-9/10\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-9/10\r\nContent-Encoding: br\r\n\r\n",
        b"HTTP/1.1 206 Partial\r\n folded: line\r\n\r\n",
    ],
)
def test_header_caps(serve, head: bytes) -> None:
    def reply(c: Conn) -> None:
        c.send(head)
        time.sleep(5)  # and then nothing: the caps, not a time-out, end it

    base, _ = serve(reply)
    started = time.monotonic()
    with pytest.raises(GGUFError, match="malformed HTTP reply"):
        read_remote_gguf(f"{base}/m.gguf")
    assert time.monotonic() - started < 2


def test_a_token_file_that_is_a_fifo(tmp_path: Path, monkeypatch) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(fifo))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    started = time.monotonic()
    r = kv("estimate", "hf://org/repo/m.gguf")
    assert r.exit_code == 3 and "token file" in r.stderr and "not a regular file" in r.stderr
    assert time.monotonic() - started < 5


def test_a_password_in_a_url_goes_only_to_its_host_and_is_never_shown(tmp_path: Path, serve) -> None:
    data = _gguf(tmp_path)
    elsewhere, other = serve(file_server(data))
    base, conn = serve(redirect_to(f"{elsewhere}/m.gguf"))
    url = base.replace("http://", "http://alice:s3cret%21@") + "/m.gguf"
    r = kv("estimate", url, "-c", "4k", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert conn.seen[0]["authorization"] == "Basic " + base64.b64encode(b"alice:s3cret!").decode()
    assert other.seen and not any("authorization" in h for h in other.seen)  # another port: not its host
    assert "s3cret" not in r.stdout and "alice:***@" in r.stdout
    remote._CACHE.clear()
    missing, _ = serve(lambda c: c.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
    for fmt in ("table", "json"):
        r = kv("estimate", missing.replace("http://", "http://alice:s3cret@") + "/m.gguf", "-o", fmt)
        assert r.exit_code == 3 and "s3cret" not in r.stderr + r.stdout and "alice:***@" in r.stderr


def test_a_reason_phrase_cannot_drive_the_terminal(serve) -> None:
    base, _ = serve(lambda c: c.send(b"HTTP/1.1 404 \x1b[2J\x1b]0;pwned\x07\rOK \xff\r\nContent-Length: 0\r\n\r\n"))
    r = kv("estimate", f"{base}/m.gguf")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1
    assert not any((ord(c) < 0x20 and c != "\n") or ord(c) == 0x7F for c in r.stderr), repr(r.stderr)
    assert "\\x1b[2J" in r.stderr


def test_a_parent_segment_before_the_revision_is_refused() -> None:
    for ref in ("hf://org/..@main/file.gguf", "hf://org/repo@../file.gguf", "hf://org/.@main/x.gguf"):
        with pytest.raises(ModelNotFoundError, match="expected hf://ORG/REPO"):
            resolve(ref)


def test_a_name_lookup_that_never_answers_meets_the_deadline(monkeypatch) -> None:
    """The system resolver takes no time-out from kvplan: it runs in a thread waited for at most the time left."""
    import socket as socket_module

    def stall(*args: object, **kw: object) -> list[object]:
        time.sleep(5)
        return []

    monkeypatch.setattr(socket_module, "getaddrinfo", stall)
    monkeypatch.setattr(remote, "DEADLINE_S", 1.0)
    started = time.monotonic()
    with pytest.raises(GGUFError, match=r"gave up after 1 s|looking up"):
        read_remote_gguf("http://stalling-resolver.example/m.gguf")
    assert time.monotonic() - started < 2
