"""One HTTP/1.1 GET over a socket, bounded whatever the server does.

``http.client`` reads a reply line by line with a time-out per read, so a server that sends ``100 Continue``
forever, or its header one byte every 2 s, or a chunk-size line that trickles, keeps it reading past any deadline.
Here every ``recv`` waits at most the time left before the caller's deadline (and at most the per-read time-out),
and every part of a reply has a cap:

- the status line and each header line: ``MAX_LINE`` bytes; all header lines of one reply: ``MAX_HEADER_BYTES``
  and ``MAX_HEADERS`` lines; interim (1xx) replies: ``MAX_INTERIM``;
- the body: at most what the caller asks for (its ``limit``), by ``Content-Length``, chunks (a chunk-size line of
  at most ``MAX_LINE`` bytes) or until the server closes; trailers are never read (the connection closes after
  the last chunk), so trailers that never end cost nothing.

The caller (``remote.RemoteReader``) decides what is sent and what a reply means.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_LINE = 8192
MAX_HEADER_BYTES = 64 << 10
MAX_HEADERS = 100
MAX_INTERIM = 8
_RECV = 1 << 16


class HTTPFailure(Exception):
    """The reply cannot be read: the one-line reason (no header value, no body text)."""


class TimedOut(HTTPFailure):
    """The deadline passed, or one read waited its whole time-out."""


@dataclass
class Deadline:
    """The time one source may take (``seconds`` from ``started``) and the longest one read may wait."""

    seconds: float
    read_timeout: float
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def wait(self) -> float:
        """How long the next read may wait; raises once the deadline has passed."""
        left = self.left()
        if left <= 0:
            raise TimedOut(f"gave up after {self.seconds:.0f} s (the server is too slow)")
        return min(self.read_timeout, left)


def printable(text: str, limit: int = 80) -> str:
    """``text`` as it may appear in a message: printable ASCII, anything else escaped, at most ``limit`` long."""
    out = text.encode("ascii", "backslashreplace").decode("ascii")
    out = "".join(c if 0x20 <= ord(c) < 0x7F else f"\\x{ord(c):02x}" for c in out)
    return out if len(out) <= limit else out[: limit - 1] + "…"


class _Stream:
    """A socket read through a buffer, every wait bounded by the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buf = bytearray()
        self.eof = False

    def _fill(self) -> None:
        self.sock.settimeout(self.deadline.wait())
        try:
            data = self.sock.recv(_RECV)
        except TimeoutError:
            self.deadline.wait()  # the deadline's own message when that is what passed
            raise TimedOut(f"timed out after {self.deadline.read_timeout:.0f} s") from None
        if not data:
            self.eof = True
        self.buf += data

    def line(self, limit: int, what: str) -> bytes:
        """One line without its CRLF; an error past ``limit`` bytes or at the end of the stream."""
        start = 0
        while True:
            end = self.buf.find(b"\n", start)
            if end >= 0:
                if end + 1 > limit:
                    break
                out = bytes(self.buf[:end])
                del self.buf[: end + 1]
                return out.removesuffix(b"\r")
            if len(self.buf) > limit:
                break
            if self.eof:
                raise HTTPFailure(f"the connection closed in the {what}")
            start = len(self.buf)
            self._fill()
        raise HTTPFailure(f"a {what} line longer than {limit:,} bytes")

    def some(self, most: int) -> bytes:
        """Between 1 and ``most`` bytes, or b"" at the end of the stream."""
        if not self.buf and not self.eof:
            self._fill()
        out = bytes(self.buf[:most])
        del self.buf[:most]
        return out


@dataclass
class Reply:
    status: int
    reason: str  # printable, at most 80 characters
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    _stream: _Stream
    _chunked: bool
    _length: int | None

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)

    def body(self, limit: int, progress: Callable[[int], None] | None = None) -> bytes:
        """At most ``limit`` bytes of the body (fewer when it is shorter)."""
        want = limit if self._length is None else min(limit, self._length)
        chunks: list[bytes] = []
        got = 0
        if self._chunked:
            while got < want:
                size_line = self._stream.line(MAX_LINE, "chunk size")
                digits = size_line.split(b";", 1)[0].strip()
                if not digits or len(digits) > 15 or any(c not in b"0123456789abcdefABCDEF" for c in digits):
                    raise HTTPFailure("a malformed chunk size")
                left = int(digits, 16)
                if left == 0:
                    break  # the trailers are never read
                while left and got < want:
                    data = self._stream.some(min(left, want - got))
                    if not data:
                        raise HTTPFailure("the connection closed inside a chunk")
                    chunks.append(data)
                    got += len(data)
                    left -= len(data)
                    if progress is not None:
                        progress(len(data))
                if left == 0 and self._stream.line(MAX_LINE, "chunk end"):
                    raise HTTPFailure("a chunk longer than its size")
            return b"".join(chunks)
        while got < want:
            data = self._stream.some(want - got)
            if not data:
                break
            chunks.append(data)
            got += len(data)
            if progress is not None:
                progress(len(data))
        return b"".join(chunks)


def os_error(exc: OSError) -> str:
    """An OS or TLS error as a message: its reason, never the bytes the server sent."""
    reason = getattr(exc, "reason", None)
    if type(exc).__module__ == "ssl" and reason:
        return f"TLS failed ({printable(str(reason))})"
    return f"cannot fetch: {exc.strerror or type(exc).__name__}"


def _status(line: bytes) -> tuple[int, str]:
    text = line.decode("latin-1")
    version, _, rest = text.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise HTTPFailure("not an HTTP/1.x status line")
    return int(code), printable(reason.strip())


def _headers(stream: _Stream) -> dict[str, str]:
    out: dict[str, str] = {}
    total = count = 0
    while True:
        line = stream.line(MAX_LINE, "header")
        if not line:
            return out
        total += len(line) + 2
        count += 1
        if total > MAX_HEADER_BYTES or count > MAX_HEADERS:
            raise HTTPFailure(f"a header of more than {MAX_HEADER_BYTES:,} bytes or {MAX_HEADERS} lines")
        if line[:1] in (b" ", b"\t"):
            raise HTTPFailure("a folded header line")
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name or name != name.strip():
            raise HTTPFailure("a malformed header line")
        out[name.lower()] = value.strip()


def _resolve(host: str, port: int, deadline: Deadline) -> list[tuple[int, int, int, str, tuple[Any, ...]]]:
    """getaddrinfo within the deadline: the system resolver has no time-out of its own that kvplan sets, so it
    runs in a thread that is waited for at most the time left (and left behind if it never answers)."""
    found: list[Any] = []

    def resolve() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(deadline.wait())
    if not found:
        deadline.wait()
        raise TimedOut(f"timed out after {deadline.read_timeout:.0f} s looking up {printable(host)}")
    if isinstance(found[0], OSError):
        raise found[0]
    return list(found[0])


def _connect(host: str, port: int, deadline: Deadline) -> socket.socket:
    """A connected socket to the first address of ``host`` that answers, every wait within the deadline."""
    error: OSError | None = None
    for family, kind, proto, _, address in _resolve(host, port, deadline):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(deadline.wait())
            sock.connect(address)
            return sock
        except TimeoutError:
            sock.close()
            deadline.wait()
            raise TimedOut(f"timed out after {deadline.read_timeout:.0f} s") from None
        except OSError as exc:
            sock.close()
            error = exc
    raise error or OSError(0, f"no address for {printable(host)}")


def get(url: str, headers: dict[str, str], deadline: Deadline) -> tuple[Reply, socket.socket]:
    """Send ``GET url`` and read the reply's status and headers (interim replies skipped). The caller reads the
    body (``Reply.body``) and closes the socket."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sock = _connect(host, port, deadline)
    try:
        if parts.scheme == "https":
            import ssl

            sock.settimeout(deadline.wait())
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        default = 443 if parts.scheme == "https" else 80
        host_header = (f"[{host}]" if ":" in host else host) + ("" if port == default else f":{port}")
        lines = [f"GET {target} HTTP/1.1", f"Host: {host_header}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        sock.settimeout(deadline.wait())
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        stream = _Stream(sock, deadline)
        for _ in range(MAX_INTERIM + 1):
            status, reason = _status(stream.line(MAX_LINE, "status"))
            found = _headers(stream)
            if not 100 <= status < 200:
                break
            if status == 101:
                raise HTTPFailure("the server switched protocols")
        else:
            raise HTTPFailure(f"more than {MAX_INTERIM} interim (1xx) replies")
        encoding = found.get("transfer-encoding", "").lower()
        chunked = encoding.rsplit(",", 1)[-1].strip() == "chunked"
        if encoding and not chunked:
            raise HTTPFailure(f"an unknown Transfer-Encoding {printable(encoding, 40)!r}")
        coding = found.get("content-encoding", "identity").strip().lower()
        if coding not in ("", "identity"):
            raise HTTPFailure(f"a compressed reply (Content-Encoding {printable(coding, 40)!r}) though none was asked")
        length: int | None = None
        if not chunked and "content-length" in found:
            raw = found["content-length"].strip()
            if not raw.isdigit() or len(raw) > 18:
                raise HTTPFailure("a malformed Content-Length")
            length = int(raw)
        return Reply(status, reason, found, stream, chunked, length), sock
    except BaseException:
        sock.close()
        raise
