"""Remote GGUF headers over HTTP Range requests: the metadata of a 40 GB model without downloading it — safely.

``https://host/path/model.gguf`` is read with ``Range: bytes=…`` requests, a 2 MiB window first, then as much
more as the header needs (doubling, up to 512 MiB). ``hf://ORG/REPO[@REVISION]/PATH.gguf`` resolves the way the
Hugging Face hub resolves files (``{HF_ENDPOINT}/{org}/{repo}/resolve/{revision}/{path}``).

What is sent where (README, "Security"):
- a Hugging Face token (``HF_TOKEN``, else the file ``HF_TOKEN_PATH`` or ``$HF_HOME/token`` names, as
  huggingface_hub reads it) goes only with ``hf://`` sources, only to the endpoint's own scheme, host and port;
  a redirect elsewhere drops it; no header value ever appears in an error;
- redirects are followed by hand (at most 5): only to http(s), never from https down to http, and their bodies
  are not read;
- every read is bounded: a reply may carry at most what was asked for; each source has one deadline (120 s)
  for everything — the name lookup, connecting, status, headers, interim replies, chunk sizes, the body — kept
  by kvplan's own HTTP reader (``httpget``: every wait within the time left, caps on every part of a reply),
  each read a time-out (30 s), and at most 32 requests; ``HF_HUB_OFFLINE=1`` refuses ``hf://``;
- a URL's ``user:password@`` goes as HTTP Basic to that URL's scheme, host and port only, and shows as
  ``user:***@`` (``redact``).
Split models fetch the other shards' headers only after shard 1's ``split.count`` agrees with the name. Each
source is read once per process.
"""

from __future__ import annotations

import base64
import os
import re
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvplan.errors import GGUFError, ModelNotFoundError
from kvplan.model import ModelDescription
from kvplan.sources.gguf_reader import GGUFFile, parse_gguf

if TYPE_CHECKING:
    from kvplan.sources.httpget import Reply

FIRST_WINDOW_BYTES = 2 << 20
TIMEOUT_S = 30.0  # one read
DEADLINE_S = 120.0  # one source, all its requests
MAX_REQUESTS = 32  # one source (the header doubles from 2 MiB to 512 MiB in 9)
MAX_REDIRECTS = 5
MAX_SHARDS = 256
DEFAULT_ENDPOINT = "https://huggingface.co"
_CONTENT_RANGE_RE = re.compile(r"bytes (\d{1,15})-(\d{1,15})/(\d{1,15}|\*)")
_SPLIT_RE = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")
_SAFE_TOKEN_RE = re.compile(r"[\x21-\x7e]+")


def is_remote(ref: str) -> bool:
    return ref.startswith(("http://", "https://", "hf://"))


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, (parts.hostname or "").lower(), port)


def _check_url(url: str, shown: str) -> None:
    """A URL kvplan can send: http(s), a host, a valid port, no spaces or control characters."""
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ModelNotFoundError(f"{shown}: not a valid URL (spaces or control characters)")
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ModelNotFoundError(f"{shown}: not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelNotFoundError(f"{shown}: not a valid http(s) URL")


def hf_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def hf_token() -> str | None:
    """The token huggingface_hub would use: HF_TOKEN, else the token file (HF_TOKEN_PATH, or $HF_HOME/token with
    HF_HOME defaulting to ~/.cache/huggingface); None when there is none."""
    token = os.environ.get("HF_TOKEN")
    if token is None:
        home = os.environ.get("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface"))
        path = os.environ.get("HF_TOKEN_PATH", os.path.join(home, "token"))
        from kvplan.sources.files import NotRegularFile, open_regular

        try:
            with open_regular(path) as fh:
                token = fh.read(4096).decode("utf-8")
        except NotRegularFile as exc:  # a FIFO nobody writes would wait forever
            raise ModelNotFoundError(f"the Hugging Face token file {path}: {exc.strerror}") from None
        except (OSError, UnicodeDecodeError):
            return None
    token = token.strip()
    if not token:
        return None
    if not _SAFE_TOKEN_RE.fullmatch(token):
        raise ModelNotFoundError("the Hugging Face token has characters a header cannot carry (check HF_TOKEN)")
    return token


def resolve(ref: str) -> tuple[str, bool]:
    """An http(s) URL for ``ref``, and whether it is the Hugging Face endpoint's (and may carry the token)."""
    if not ref.startswith("hf://"):
        _check_url(ref, redact(ref))
        return ref, False
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise ModelNotFoundError(f"{ref}: HF_HUB_OFFLINE is set; download the file and give its path")
    parts = ref[len("hf://") :].split("/")
    if len(parts) == 2 and all(parts):  # a whole repository: its config.json
        parts.append("config.json")
    if len(parts) < 3 or not all(parts) or any(p in (".", "..") for p in parts):
        raise ModelNotFoundError(f"{ref}: expected hf://ORG/REPO[@REVISION][/PATH/FILE.gguf]")
    org, repo, path = parts[0], parts[1], parts[2:]
    revision = "main"
    if "@" in repo:
        repo, revision = repo.split("@", 1)
    if not revision or not repo or repo in (".", "..") or revision in (".", ".."):  # hf://org/..@main/…
        raise ModelNotFoundError(f"{ref}: expected hf://ORG/REPO[@REVISION][/PATH/FILE.gguf]")
    quote = urllib.parse.quote
    url = (f"{hf_endpoint()}/{quote(org, safe='')}/{quote(repo, safe='')}/resolve/{quote(revision, safe='')}/"
           + "/".join(quote(p, safe="") for p in path))  # fmt: skip
    _check_url(url, ref)
    return url, True


@dataclass
class RemoteReader:
    """Fetches byte ranges of one source, within its deadline and request budget; counts what it transferred."""

    url: str
    shown: str  # the reference as the user gave it (errors name it, never a header)
    authorization: str | None = None  # the header's value: "Bearer …" (the hub's token) or "Basic …" (user:pass@)
    auth_origin: Origin | None = None  # the one scheme, host and port it goes to
    hub: bool = False  # a Hugging Face source (401 / 403 mention the token)
    timeout: float = TIMEOUT_S
    deadline_s: float = DEADLINE_S
    max_requests: int = MAX_REQUESTS
    bytes_transferred: int = 0
    requests: int = 0
    size: int | None = None
    started: float = field(default_factory=time.monotonic)
    progress: Callable[[int], None] | None = None
    status: int = 0  # of the last reply

    def __post_init__(self) -> None:
        from kvplan.sources.httpget import Deadline

        self._deadline = Deadline(self.deadline_s, self.timeout, self.started)

    def _fail(self, message: str, offset: int | None = None) -> GGUFError:
        return GGUFError(self.shown, offset, message)

    def fetch(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file (fewer only at its end)."""
        url = self.url
        for _ in range(MAX_REDIRECTS + 1):
            data, url = self._request(url, start, end)
            if data is not None:
                return data
        raise self._fail(f"more than {MAX_REDIRECTS} redirects")

    def _request(self, url: str, start: int, end: int) -> tuple[bytes | None, str]:
        """One request: the bytes, or (None, where a redirect points)."""
        self.requests += 1
        if self.requests > self.max_requests:
            raise self._fail(f"more than {self.max_requests} requests for one header; giving up")
        headers = {"Range": f"bytes={start}-{end - 1}", "User-Agent": "kvplan", "Accept-Encoding": "identity"}
        if self.authorization and self.auth_origin == Origin.of(url):
            headers["Authorization"] = self.authorization
        from kvplan.sources import httpget

        sock = None
        try:
            resp, sock = httpget.get(url, headers, self._deadline)
            return self._reply(resp, url, start, end)
        except GGUFError:
            raise
        except httpget.HTTPFailure as exc:
            timed_out = isinstance(exc, httpget.TimedOut)
            raise self._fail(str(exc) if timed_out else f"malformed HTTP reply: {exc}") from None
        except OSError as exc:
            raise self._fail(httpget.os_error(exc)) from None
        finally:
            if sock is not None:
                sock.close()

    def _reply(self, resp: Reply, url: str, start: int, end: int) -> tuple[bytes | None, str]:
        status = self.status = resp.status
        if status in (301, 302, 303, 307, 308):
            return None, self._redirect(url, resp.header("Location"))  # its body is never read
        if status == 416 and self.size is not None and start >= self.size:
            return b"", url
        if status == 200:
            length = resp.header("Content-Length")
            raise self._fail("the server does not support HTTP Range requests (it answered 200 with the whole file"
                             f"{f' of {length} bytes' if length and length.isdigit() else ''}); download the file "
                             "or use another mirror")  # fmt: skip
        if status in (401, 403):
            hint = ""
            if self.hub:
                hint = (
                    " (the token has no access)"
                    if self.authorization
                    else " (set HF_TOKEN for a gated or private repository)"
                )
            raise self._fail(f"HTTP {status} {resp.reason}{hint}")
        if status != 206:
            raise self._fail(f"HTTP {status} {resp.reason} for a Range request")
        from kvplan.sources.httpget import printable

        content_range = resp.header("Content-Range").strip()
        m = _CONTENT_RANGE_RE.fullmatch(content_range)
        if not m or int(m.group(1)) != start or not start <= int(m.group(2)) < end:
            raise self._fail(f"bad Content-Range {printable(content_range)!r} for bytes {start}-{end - 1}")
        if m.group(3) != "*":
            self.size = int(m.group(3))
            if int(m.group(2)) + 1 != min(end, self.size):
                raise self._fail(f"short range: bytes {start}-{m.group(2)} of the {start}-{end - 1} asked for", start)
        expected = int(m.group(2)) - start + 1
        data = resp.body(expected + 1, self._count)
        if len(data) != expected:
            raise self._fail(f"short read: got {len(data)} of {expected} bytes", start + len(data))
        return data, url

    def _count(self, n: int) -> None:
        self.bytes_transferred += n
        if self.progress is not None:
            self.progress(self.bytes_transferred)

    def _redirect(self, url: str, location: str) -> str:
        if not location:
            raise self._fail("a redirect without a Location")
        target = urllib.parse.urljoin(url, location.strip())
        scheme = urllib.parse.urlsplit(target).scheme
        if scheme not in ("http", "https"):
            raise self._fail(f"refusing a redirect to a {scheme or 'non-http'} URL")
        if urllib.parse.urlsplit(url).scheme == "https" and scheme == "http":
            raise self._fail("refusing a redirect from https to plain http")
        _check_url(target, self.shown)
        return target


def redact(url: str) -> str:
    """``url`` as it may be shown (messages, JSON, run lines): a password in it replaced by ``***``."""
    if "@" not in url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password is None:
            return url
    except ValueError:
        return url.split("//", 1)[0] + "//***@" + url.rsplit("@", 1)[1]
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def _reader(url: str, shown: str, hub: bool, **kw: object) -> RemoteReader:
    """A reader of ``url`` with the credentials that belong to it: the hub's token for the hub endpoint, a URL's own
    ``user:password@`` as HTTP Basic for that URL's scheme, host and port (neither goes anywhere else); the
    module's time-out and deadline as they are when it is made."""
    auth = None
    if hub:
        tok = hf_token()
        auth = f"Bearer {tok}" if tok else None
    else:
        parts = urllib.parse.urlsplit(url)
        if parts.username is not None:
            pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            auth = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
            url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    kw = {"timeout": TIMEOUT_S, "deadline_s": DEADLINE_S, **kw}
    return RemoteReader(url, redact(shown), auth, Origin.of(url) if auth else None, hub, **kw)  # type: ignore[arg-type]


def read_remote_gguf(url: str, shown: str | None = None, token: bool = False,
                     progress: Callable[[int], None] | None = None) -> tuple[GGUFFile, RemoteReader]:  # fmt: skip
    """Parse a remote GGUF's metadata, fetching only as many leading bytes as the header needs."""
    reader = _reader(url, shown or url, token, progress=progress)
    first = reader.fetch(0, FIRST_WINDOW_BYTES)
    return parse_gguf(first, reader.shown, reader.size, source=reader.fetch), reader


def shard_urls(url: str) -> list[str]:
    """All shard URLs of a split GGUF named like ``…-00001-of-00003.gguf`` (else just ``url``)."""
    path = urllib.parse.urlsplit(url)
    m = _SPLIT_RE.match(path.path)
    if not m:
        return [url]
    count = int(m.group("count"))
    return [urllib.parse.urlunsplit(path._replace(path=f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf"))
            for i in range(1, count + 1)]  # fmt: skip


_CACHE: dict[str, tuple[list[GGUFFile], int]] = {}


def read_remote_model_files(ref: str, progress: Callable[[int], None] | None = None) -> tuple[list[GGUFFile], int]:
    """Every shard's header (first shard first) and the bytes transferred; each source once per process."""
    if ref in _CACHE:
        return _CACHE[ref]
    url, is_hub = resolve(ref)
    shown = redact(ref)
    shards = shard_urls(url)
    first, reader = read_remote_gguf(shards[0], shown, is_hub, progress)
    files, transferred = [first], reader.bytes_transferred
    if len(shards) > 1:
        declared = first.kv.get("split.count")
        if not isinstance(declared, int) or declared != len(shards) or len(shards) > MAX_SHARDS:
            raise GGUFError(shown, None, f"the name says {len(shards)} shards, shard 1 says split.count = {declared}")
        for shard in shards[1:]:
            f, r = read_remote_gguf(shard, shard, is_hub, progress)
            files.append(f)
            transferred += r.bytes_transferred
    _CACHE[ref] = (files, transferred)
    return files, transferred


MAX_JSON_BYTES = 16 << 20  # a config.json is kilobytes, a safetensors index at most a few MiB


def is_remote_config(ref: str) -> bool:
    """A remote Hugging Face checkpoint rather than a GGUF: hf://ORG/REPO[@REV], or a URL of a config.json."""
    lower = ref.lower()
    if lower.startswith("hf://"):
        return lower.endswith(".json") or len(ref[len("hf://") :].split("/")) == 2
    return lower.startswith(("http://", "https://")) and lower.split("?")[0].endswith(".json")


def _fetch_small(
    url: str, shown: str, hub: bool, limit: int, missing_ok: bool = False, prefix: bool = False
) -> bytes | None:
    """A whole small file (or its first ``limit`` bytes: ``prefix``) by one Range request (None for a 404 where
    that is allowed)."""
    reader = _reader(url, shown, hub, max_requests=8)
    try:
        data = reader.fetch(0, limit if prefix else limit + 1)
    except GGUFError:
        if missing_ok and reader.status == 404:
            return None
        raise
    if len(data) > limit:
        raise GGUFError(shown, None, f"larger than {limit:,} bytes; not a config or index")
    return data


def load_remote_config(ref: str) -> ModelDescription:
    """A checkpoint's config.json over HTTP (hf://ORG/REPO[@REVISION] reads the repository's), with the
    safetensors index beside it (tensor names, bytes) or, without one, a single model.safetensors' header."""
    from kvplan.sources.files import parse_json
    from kvplan.sources.hf_config import describe_config
    from kvplan.sources.safetensors import INDEX_FILE, SINGLE_FILE, Checkpoint, from_header, from_index, header_length

    url, hub = resolve(ref)
    ref = redact(ref)  # what messages and the answer show; ``url`` keeps the credentials for their own host
    data = _fetch_small(url, ref, hub, MAX_JSON_BYTES)
    assert data is not None
    cfg = parse_json(_utf8(data, ref), ref)
    base = url.rsplit("/", 1)[0]
    index = _fetch_small(f"{base}/{INDEX_FILE}", f"{ref} ({INDEX_FILE})", hub, MAX_JSON_BYTES, missing_ok=True)
    checkpoint = Checkpoint()
    if index is not None:
        shown = f"{ref} ({INDEX_FILE})"
        checkpoint = from_index(parse_json(_utf8(index, shown), shown), shown)
    else:
        shown = f"{ref} ({SINGLE_FILE})"
        first = _fetch_small(f"{base}/{SINGLE_FILE}", shown, hub, 8, missing_ok=True, prefix=True)
        if first is not None:
            n = header_length(first, shown)
            reader = _reader(f"{base}/{SINGLE_FILE}", shown, hub)
            checkpoint = from_header(reader.fetch(8, 8 + n), shown)
    return describe_config(cfg, ref, checkpoint)


def _utf8(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise GGUFError(shown, None, "not UTF-8 text") from None
