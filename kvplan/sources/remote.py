"""Remote GGUF headers over HTTP Range requests: read the metadata of a 40 GB model without downloading it.

``https://host/path/model.gguf`` is read with ``Range: bytes=…`` requests, starting with a 2 MiB window and
doubling until the key/values and tensor infos parse. ``hf://org/repo[@revision]/path/file.gguf`` resolves
the way the Hugging Face hub resolves files (``{HF_ENDPOINT}/{org}/{repo}/resolve/{revision}/{path}``,
``HF_ENDPOINT`` defaulting to https://huggingface.co, ``HF_TOKEN`` sent as a bearer token). Split models
fetch only the other shards' headers. Only the standard library is used.
"""

from __future__ import annotations

import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from kvplan.errors import GGUFError, ModelNotFoundError
from kvplan.sources.gguf_reader import GGUFFile, NeedMoreData, parse_gguf

FIRST_WINDOW_BYTES = 2 * 1024 * 1024
MAX_HEADER_BYTES = 512 * 1024 * 1024  # no real header comes near; a bound against hostile files
TIMEOUT_S = 30.0
_CONTENT_RANGE_RE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def is_remote(ref: str) -> bool:
    return ref.startswith(("http://", "https://", "hf://"))


def resolve(ref: str) -> str:
    """An http(s) URL for ``ref`` (hf:// references resolve through the hub's /resolve/ route)."""
    if not ref.startswith("hf://"):
        return ref
    rest = ref[len("hf://") :]
    parts = rest.split("/")
    if len(parts) < 3 or not all(parts):
        raise ModelNotFoundError(f"{ref}: expected hf://ORG/REPO[@REVISION]/PATH/FILE.gguf")
    org, repo, path = parts[0], parts[1], "/".join(parts[2:])
    revision = "main"
    if "@" in repo:
        repo, revision = repo.split("@", 1)
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    quoted = "/".join(urllib.parse.quote(p) for p in path.split("/"))
    return f"{endpoint}/{org}/{repo}/resolve/{urllib.parse.quote(revision, safe='')}/{quoted}"


@dataclass
class _Progress:
    url: str
    enabled: bool = field(default_factory=lambda: sys.stderr.isatty())

    def update(self, fetched: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\rkvplan: reading header of {self.url}: {fetched / 1048576:.1f} MiB")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


@dataclass
class RemoteReader:
    """Fetches byte ranges of one URL; counts the bytes transferred (for tests and the progress line)."""

    url: str
    timeout: float = TIMEOUT_S
    bytes_transferred: int = 0
    requests: int = 0
    size: int | None = None

    def _headers(self, start: int, end: int) -> dict[str, str]:
        headers = {"Range": f"bytes={start}-{end - 1}", "User-Agent": "kvplan", "Accept-Encoding": "identity"}
        token = os.environ.get("HF_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def fetch(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file (fewer only at the end of the file)."""
        req = urllib.request.Request(self.url, headers=self._headers(start, end))
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status = resp.status
                if status == 200:
                    length = resp.headers.get("Content-Length")
                    raise GGUFError(
                        self.url,
                        None,
                        "the server does not support HTTP Range requests (it answered "
                        f"200 with the whole file{f' of {length} bytes' if length else ''}); "
                        "download the file or use another mirror",
                    )
                if status != 206:
                    raise GGUFError(self.url, None, f"unexpected HTTP status {status} for a Range request")
                content_range = resp.headers.get("Content-Range", "")
                m = _CONTENT_RANGE_RE.fullmatch(content_range.strip())
                if not m or int(m.group(1)) != start:
                    raise GGUFError(self.url, None, f"bad Content-Range {content_range!r} for bytes {start}-{end - 1}")
                if m.group(3) != "*":
                    self.size = int(m.group(3))
                expected = int(m.group(2)) - start + 1
                data: bytes = resp.read(expected + 1)
        except GGUFError:
            raise
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and self.size is not None:
                return b""
            hint = " (set HF_TOKEN for a gated or private repository)" if exc.code in (401, 403) else ""
            raise GGUFError(self.url, None, f"HTTP {exc.code} {exc.reason}{hint}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if "timed out" in str(reason):
                raise GGUFError(self.url, None, f"timed out after {self.timeout:.0f} s") from None
            raise GGUFError(self.url, None, f"cannot fetch: {reason}") from None
        self.bytes_transferred += len(data)
        if len(data) != expected:
            raise GGUFError(self.url, start + len(data), f"short read: got {len(data)} of {expected} bytes")
        return data


def read_remote_gguf(url: str, display: str | None = None) -> tuple[GGUFFile, RemoteReader]:
    """Parse a remote GGUF's metadata, fetching only as many leading bytes as the header needs."""
    reader = RemoteReader(url)
    progress = _Progress(display or url)
    buf = bytearray(reader.fetch(0, FIRST_WINDOW_BYTES))
    size = reader.size if reader.size is not None else len(buf)
    try:
        while True:
            progress.update(len(buf))
            try:
                return parse_gguf(bytes(buf), display or url, size), reader
            except NeedMoreData as need:
                want = min(size, max(need.upto, 2 * len(buf)))
                if want > MAX_HEADER_BYTES:
                    raise GGUFError(
                        display or url,
                        len(buf),
                        f"header larger than {MAX_HEADER_BYTES >> 20} MiB; refusing to read more",
                    ) from None
                if want <= len(buf):
                    raise GGUFError(display or url, len(buf), "file truncated") from None
                buf += reader.fetch(len(buf), want)
    finally:
        progress.done()


def shard_urls(url: str) -> list[str]:
    """All shard URLs of a split GGUF named like ``…-00001-of-00003.gguf`` (else just ``url``)."""
    m = re.match(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf(?P<query>\?.*)?$", url)
    if not m:
        return [url]
    count = int(m.group("count"))
    query = m.group("query") or ""
    return [f"{m.group('prefix')}-{i:05d}-of-{count:05d}.gguf{query}" for i in range(1, count + 1)]


def read_remote_model_files(ref: str) -> tuple[list[GGUFFile], int]:
    """Every shard's header (first shard first) and the total bytes transferred."""
    url = resolve(ref)
    files, transferred = [], 0
    for i, shard in enumerate(shard_urls(url)):
        shown = ref if i == 0 else shard
        f, reader = read_remote_gguf(shard, shown)
        files.append(f)
        transferred += reader.bytes_transferred
    return files, transferred
