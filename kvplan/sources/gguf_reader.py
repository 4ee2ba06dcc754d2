"""A fast, validating GGUF metadata reader (GGUF v2 and v3, either byte order).

Reads the header, every key/value and every tensor info. Large arrays (tokenizer tokens, merges,
scores) are skipped, never materialised: only their element type and count are kept. Every length
and count is checked against the bytes that remain before anything is allocated, so a hostile file
ends in a :class:`~kvplan.errors.GGUFError` naming the file, the byte offset and what was wrong.

The checks follow llama.cpp's ``gguf_init_from_file`` (ggml/src/gguf.cpp); see the README.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvplan.errors import GGUFError
from kvplan.facts.ggml_types import GGML_TYPES_BY_ID
from kvplan.sources.values import (
    T_ARRAY,
    T_BOOL,
    T_F32,
    T_F64,
    T_I8,
    T_I16,
    T_I32,
    T_I64,
    T_STRING,
    T_U8,
    T_U16,
    T_U32,
    T_U64,
    VALUE_TYPE_NAMES,
    ArrayValue,
    SkippedString,
)

GGUF_MAGIC = b"GGUF"
MAX_STRING_BYTES = 1 << 30  # GGUF_MAX_STRING_LENGTH
MAX_ARRAY_ELEMENTS = 1 << 30  # GGUF_MAX_ARRAY_ELEMENTS
MAX_TENSOR_NAME_BYTES = 63  # GGML_MAX_NAME - 1
MAX_DIMS = 4
DEFAULT_ALIGNMENT = 32
#: arrays with at most this many elements are decoded; longer ones keep only their count
SMALL_ARRAY_ELEMENTS = 4096
MAX_NAME_BYTES = 1 << 16  # a key (kvplan keeps every key; llama.cpp's are tens of bytes)
MAX_KEPT_STRING_BYTES = 1 << 20  # a string value kept (a chat template is kilobytes); longer ones are skipped
MAX_KEPT_STRINGS_BYTES = 32 << 20  # all string values kept, together
_SKIP_FROM = 1 << 20  # a skip this far past the bytes read starts the buffer again after it
_INT64_MAX = (1 << 63) - 1
#: no real header comes near this: a bound against hostile files and servers
MAX_HEADER_BYTES = 512 << 20
#: the first read of a local file; the buffer then doubles as the header needs
FIRST_READ_BYTES = 1 << 20
#: the size of a file whose size a server does not say (``Content-Range: bytes a-b/*``)
UNKNOWN_SIZE = 1 << 62
#: bytes [start, end) of the file, fewer only at its end
Source = Callable[[int, int], bytes]

_SCALAR_FORMATS = {
    T_U8: "B",
    T_I8: "b",
    T_U16: "H",
    T_I16: "h",
    T_U32: "I",
    T_I32: "i",
    T_F32: "f",
    T_BOOL: "b",
    T_U64: "Q",
    T_I64: "q",
    T_F64: "d",
}


@dataclass(frozen=True)
class TensorInfo:
    name: str
    ggml_type: int
    shape: tuple[int, ...]
    offset: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def n_bytes(self) -> int:
        """ggml_nbytes for a contiguous tensor (0 if any dimension is 0)."""
        t = GGML_TYPES_BY_ID[self.ggml_type]
        if not self.shape:
            return t.block_bytes  # a 0-dim tensor is one element
        rows = self.n_elements // self.shape[0] if self.shape[0] else 0
        return t.row_bytes(self.shape[0]) * rows


@dataclass
class GGUFFile:
    path: str
    version: int
    big_endian: bool
    kv: dict[str, Any]
    kv_types: dict[str, int]
    tensors: list[TensorInfo]
    alignment: int
    header_bytes: int  # where the tensor data section starts (== bytes of metadata incl. padding)
    file_bytes: int
    n_tensors: int = field(default=0)

    @property
    def architecture(self) -> str | None:
        arch = self.kv.get("general.architecture")
        return arch if isinstance(arch, str) else None

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)


#: string arrays of at least _RUNS_FROM elements are skipped in runs of _RUN strings by one regular expression
#: for strings shorter than _RUN_MAX_LEN bytes (compiling it costs ~2 ms, so a small array is walked in Python
#: instead; a run holding a longer string is walked too: vocabularies have a few dozen)
_RUNS_FROM, _RUN, _RUN_MAX_LEN = 50_000, 256, 128


@functools.cache
def _string_runs() -> re.Pattern[bytes]:
    """_RUN little-endian length-prefixed strings, each shorter than _RUN_MAX_LEN bytes: a u64 length L (one
    byte, then seven zeros) and L bytes of any value. The engine tries the alternatives shortest first and takes
    the one whose length byte matches; possessive, so nothing is kept for backtracking. Compiled once."""
    one = b"|".join(re.escape(bytes([n])) + b"\\x00{7}" + (b".{%d}" % n if n else b"") for n in range(_RUN_MAX_LEN))
    return re.compile(b"(?s)(?:" + one + b"){%d}+" % _RUN)


class NeedMoreData(Exception):
    """The buffer holds only the start of the file and parsing needs bytes up to ``upto`` (remote reads)."""

    def __init__(self, upto: int) -> None:
        super().__init__(upto)
        self.upto = upto


class _Cursor:
    """Bounds-checked reads over a buffer; every failure is a GGUFError with the offset.

    ``end`` is the size of the file (what lengths and counts are checked against); the buffer holds its first
    ``avail`` bytes. A read past them grows the buffer from ``source`` (doubling, up to MAX_HEADER_BYTES), or
    without a source raises NeedMoreData.
    """

    __slots__ = ("avail", "base", "buf", "end", "kept", "path", "pos", "prefix", "source")

    def __init__(self, buf: Any, end: int, path: str, source: Source | None = None) -> None:
        self.buf = buf if source is None or isinstance(buf, bytearray) else bytearray(buf)
        self.end = end
        self.base = 0  # the file offset of buf[0]: a long value skipped is never read (skip)
        self.avail = min(len(buf), end)  # file offsets below this are read (from base on)
        self.path = path
        self.pos = 0
        self.prefix = "<"
        self.source = source
        self.kept = 0  # bytes of string values kept

    def grow(self, upto: int) -> None:
        """Make the bytes before ``upto`` available, reading at least twice what is there."""
        if self.source is None:
            raise NeedMoreData(upto)
        if upto > MAX_HEADER_BYTES:
            raise self.fail(f"header larger than {MAX_HEADER_BYTES >> 20} MiB; refusing to read more", self.avail)
        want = min(self.end, MAX_HEADER_BYTES, max(upto, self.avail + max(self.avail - self.base, _SKIP_FROM)))
        chunk = self.source(self.avail, want)
        if len(chunk) < upto - self.avail:
            raise self.fail(f"file truncated: {self.avail + len(chunk)} bytes, the header needs {upto}", self.avail)
        self.buf += chunk
        self.avail = self.base + len(self.buf)

    def skip(self, n: int, what: str) -> None:
        """Move past ``n`` bytes. Bytes not read yet stay unread where a source reads on (the buffer starts again
        after them): a 500 MiB value costs no memory."""
        self._within(n, what)
        self.pos += n
        if self.pos > self.avail + _SKIP_FROM and self.source is not None:
            if self.pos > MAX_HEADER_BYTES:
                raise self.fail(f"header larger than {MAX_HEADER_BYTES >> 20} MiB; refusing to read more")
            self.buf = bytearray()
            self.base = self.avail = self.pos

    def fail(self, message: str, offset: int | None = None) -> GGUFError:
        return GGUFError(self.path, self.pos if offset is None else offset, message)

    def remaining(self) -> int:
        return self.end - self.pos

    def _within(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(f"file truncated: {what} needs {n} bytes, {self.end - self.pos} remain")

    def need(self, n: int, what: str) -> None:
        self._within(n, what)
        if self.pos + n > self.avail:
            self.grow(self.pos + n)

    def unpack(self, fmt: str, size: int, what: str) -> Any:
        self.need(size, what)
        value = struct.unpack_from(self.prefix + fmt, self.buf, self.pos - self.base)[0]
        self.pos += size
        return value

    def u32(self, what: str) -> int:
        return int(self.unpack("I", 4, what))

    def i32(self, what: str) -> int:
        return int(self.unpack("i", 4, what))

    def u64(self, what: str) -> int:
        return int(self.unpack("Q", 8, what))

    def i64(self, what: str) -> int:
        return int(self.unpack("q", 8, what))

    def string(self, what: str, most: int = MAX_NAME_BYTES) -> str:
        """A key or a name: at most ``most`` bytes (longer is an error)."""
        start = self.pos
        n = self.u64(f"{what} length")
        if n > min(most, MAX_STRING_BYTES):
            raise self.fail(f"{what}: a string of {n:,} bytes (at most {min(most, MAX_STRING_BYTES):,})", start)
        return self._decode(n, what, start)

    def value_string(self, what: str) -> str | SkippedString:
        """A string value: kept when short (MAX_KEPT_STRING_BYTES) and while the values kept stay under
        MAX_KEPT_STRINGS_BYTES, else skipped unread (its length kept): a header of huge strings costs no memory."""
        start = self.pos
        n = self.u64(f"{what} length")
        if n > MAX_STRING_BYTES:
            raise self.fail(f"{what}: string length {n} exceeds the 1 GiB limit", start)
        if n > MAX_KEPT_STRING_BYTES or self.kept + n > MAX_KEPT_STRINGS_BYTES:
            self.skip(n, what)
            return SkippedString(n)
        self.kept += n
        return self._decode(n, what, start)

    def _decode(self, n: int, what: str, start: int) -> str:
        self.need(n, what)
        at = self.pos - self.base
        raw = bytes(self.buf[at : at + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what}: string is not valid UTF-8", start) from None

    def _read_ahead(self, count: int) -> None:
        """The buffer grown, where a source can grow it, to hold ``count`` typical strings (16 bytes each): one
        read, few copies."""
        ahead = min(self.end, MAX_HEADER_BYTES, self.pos + 16 * count)
        if ahead > self.avail and self.source is not None:
            self.grow(ahead)

    def skip_strings(self, count: int, what: str) -> None:
        """Skip ``count`` length-prefixed strings without decoding them (the hot loop). A long array (a
        vocabulary) goes in runs of _RUN strings matched by one regular expression in C (_string_runs: every
        string shorter than 128 bytes); a run it cannot match — a longer string, the buffer's end, a truncated
        file — is walked string by string by the exact path below, which grows the buffer and reports errors."""
        done = 0
        if count >= _RUNS_FROM and self.prefix == "<":
            self._read_ahead(count)
            match = _string_runs().match
            while count - done >= _RUN:
                m = match(self.buf, self.pos - self.base, self.avail - self.base)
                if m is None:
                    self._skip_strings_walk(_RUN, what, done)
                else:
                    self.pos = self.base + m.end()
                done += _RUN
        self._skip_strings_walk(count - done, what, done)

    def _skip_strings_walk(self, count: int, what: str, first: int) -> None:
        """Skip ``count`` strings, ``first`` the index of the first in the array (for messages). Fast path:
        lengths read straight from the buffer through memoryviews of it as u64 at each of the 8 alignments,
        unchecked: a read past the buffer raises IndexError, the buffer grows and the walk goes on; a last string
        that runs past it, a truncated file or a length that exceeds it are left to the checked loop, which
        reports the exact element."""
        remaining = count
        self._read_ahead(count)
        while remaining > 64 and self.prefix == "<" and sys.byteorder == "little":
            base = self.base  # positions below are the buffer's (file offset - base)
            buf, pos, done, held = self.buf, self.pos - base, 0, self.avail - base
            views = tuple(memoryview(buf)[k : k + (held - k) // 8 * 8].cast("Q") for k in range(8))
            try:
                # eight strings a turn; pos moves only when all eight were read, so on IndexError it is the
                # start of string `done`
                for done in range(0, remaining - 7, 8):  # noqa: B007 - done counts the strings walked
                    x = pos + 8 + views[pos & 7][pos >> 3]
                    x += 8 + views[x & 7][x >> 3]
                    x += 8 + views[x & 7][x >> 3]
                    x += 8 + views[x & 7][x >> 3]
                    x += 8 + views[x & 7][x >> 3]
                    x += 8 + views[x & 7][x >> 3]
                    x += 8 + views[x & 7][x >> 3]
                    pos = x + 8 + views[x & 7][x >> 3]
                done = remaining - remaining % 8
                for done in range(done, remaining):  # noqa: B007, B020
                    pos += 8 + views[pos & 7][pos >> 3]
                done = remaining
            except IndexError:  # string `done` starts at pos; its length is past the buffer
                pass
            finally:
                for view in views:
                    view.release()
            if done == remaining:
                if pos <= held:
                    self.pos = base + pos
                    return
                break  # the last string ends past the buffer: the checked loop walks these again
            self.pos, remaining = base + pos, remaining - done
            if self.pos + 8 > self.end or self.avail >= self.end:
                break  # truncated (a read in this group of eight ran past the file): the checked loop says where
            self.grow(self.pos + 8)
        self._skip_strings_checked(remaining, what, first + count - remaining)

    def _skip_strings_checked(self, count: int, what: str, first: int = 0) -> None:
        unpack = struct.Struct(self.prefix + "Q").unpack_from
        base = self.base  # positions below are the buffer's (file offset - base); grow keeps base
        buf, pos, end, avail = self.buf, self.pos - base, self.end - base, self.avail - base
        for i in range(count):
            if pos + 8 > avail:
                self.pos = base + pos
                if pos + 8 > end:
                    raise self.fail(f"file truncated: {what} element {first + i} length")
                self.grow(base + pos + 8)
                buf, avail = self.buf, self.avail - base
            n = unpack(buf, pos)[0]
            pos += 8
            if n > end - pos:
                self.pos = base + pos - 8
                raise self.fail(
                    f"{what} element {first + i}: string length {n} exceeds the {end - pos} bytes that remain"
                )
            pos += n
        self.pos = base + pos


def _read_value(cur: _Cursor, vtype: int, key: str) -> Any:
    if vtype == T_STRING:
        return cur.value_string(f"value of {key!r}")
    fmt = _SCALAR_FORMATS.get(vtype)
    if fmt is None:
        raise cur.fail(f"key {key!r}: invalid value type {vtype}")
    size = struct.calcsize(fmt)
    value = cur.unpack(fmt, size, f"value of {key!r}")
    return bool(value) if vtype == T_BOOL else value


def _read_array(cur: _Cursor, key: str) -> ArrayValue:
    start = cur.pos
    etype = cur.i32(f"array type of {key!r}")
    if etype == T_ARRAY:
        raise cur.fail(f"key {key!r}: nested arrays are not supported (llama.cpp refuses them)", start)
    if not 0 <= etype < len(VALUE_TYPE_NAMES):
        raise cur.fail(f"key {key!r}: invalid array element type {etype}", start)
    count = cur.u64(f"array length of {key!r}")
    if count > MAX_ARRAY_ELEMENTS:
        raise cur.fail(f"key {key!r}: array of {count} elements exceeds the 2^30 limit", start)
    if etype == T_STRING:
        if count * 8 > cur.remaining():
            raise cur.fail(
                f"key {key!r}: array of {count} strings cannot fit in the {cur.remaining()} bytes that remain"
            )
        if count <= SMALL_ARRAY_ELEMENTS:
            return ArrayValue(etype, count, tuple(cur.value_string(f"{key!r}[{i}]") for i in range(count)))
        cur.skip_strings(count, repr(key))
        return ArrayValue(etype, count, None)
    fmt = _SCALAR_FORMATS[etype]
    size = struct.calcsize(fmt)
    total = count * size
    if total > cur.remaining():
        raise cur.fail(
            f"key {key!r}: array of {count} x {VALUE_TYPE_NAMES[etype]} needs {total} bytes, {cur.remaining()} remain"
        )
    if count <= SMALL_ARRAY_ELEMENTS:
        cur.need(total, f"array {key!r}")
        values = struct.unpack_from(f"{cur.prefix}{count}{fmt}", cur.buf, cur.pos - cur.base)
        if etype == T_BOOL:
            values = tuple(bool(v) for v in values)
        cur.pos += total
        return ArrayValue(etype, count, tuple(values))
    cur.skip(total, f"array {key!r}")
    return ArrayValue(etype, count, None)


def parse_gguf(  # noqa: C901 - gguf_init_from_file's checks, in its order
    buf: Any, path: str, size: int | None = None, check_data_bounds: bool = True, source: Source | None = None
) -> GGUFFile:
    """Parse GGUF metadata from a bytes-like object holding the start of the file (``size`` bytes in all; without
    a size, the buffer is the file, or with a ``source`` the size is unknown). ``source`` reads more as needed."""
    end = (UNKNOWN_SIZE if source is not None else len(buf)) if size is None else size
    cur = _Cursor(buf, end, path, source)
    if cur.avail < min(8, end):
        cur.grow(min(8, end))
    head = bytes(cur.buf[:8])
    if end < 4 or head[:4] != GGUF_MAGIC:
        raise GGUFError(path, 0, f"not a GGUF file (magic {head[:4]!r}, expected b'GGUF')")
    if end < 8:
        raise GGUFError(path, 4, "file truncated: version needs 4 bytes")
    (version_le,) = struct.unpack_from("<I", head, 4)
    big_endian = (version_le & 0xFFFF) == 0 and version_le != 0
    cur.prefix = ">" if big_endian else "<"
    cur.pos = 4
    version = cur.u32("version")
    if version == 1:
        raise cur.fail("GGUF version 1 is no longer supported (llama.cpp refuses it); re-convert the model", 4)
    if version not in (2, 3):
        raise cur.fail(f"unsupported GGUF version {version} (expected 2 or 3)", 4)
    n_tensors = cur.i64("tensor count")
    n_kv = cur.i64("key/value count")
    if n_tensors < 0 or n_tensors * 24 > cur.remaining():
        raise cur.fail(f"tensor count {n_tensors} is impossible for the {cur.remaining()} bytes that remain", 8)
    if n_kv < 0 or n_kv * 14 > cur.remaining():
        raise cur.fail(f"key/value count {n_kv} is impossible for the {cur.remaining()} bytes that remain", 16)

    kv: dict[str, Any] = {}
    kv_types: dict[str, int] = {}
    for i in range(n_kv):
        key_at = cur.pos
        key = cur.string(f"key #{i}")
        if not key:
            raise cur.fail(f"key #{i} is empty", key_at)
        if key in kv:
            raise cur.fail(f"duplicate key {key!r}", key_at)
        type_at = cur.pos
        vtype = cur.i32(f"type of {key!r}")
        if vtype == T_ARRAY:
            kv[key] = _read_array(cur, key)
        elif 0 <= vtype < len(VALUE_TYPE_NAMES):
            kv[key] = _read_value(cur, vtype, key)
        else:
            raise cur.fail(f"key {key!r}: invalid value type {vtype}", type_at)
        kv_types[key] = vtype

    alignment = DEFAULT_ALIGNMENT
    if "general.alignment" in kv:
        if kv_types["general.alignment"] != T_U32:
            raise GGUFError(
                path,
                None,
                f"general.alignment must be of type u32, found {VALUE_TYPE_NAMES[kv_types['general.alignment']]}",
            )
        alignment = kv["general.alignment"]
        if alignment == 0 or alignment & (alignment - 1):
            raise GGUFError(path, None, f"general.alignment = {alignment} is not a power of two")

    tensors: list[TensorInfo] = []
    names: set[str] = set()
    expected_offset = 0
    for i in range(n_tensors):
        at = cur.pos
        name = cur.string(f"tensor #{i} name", 1 << 20)
        if len(name.encode()) > MAX_TENSOR_NAME_BYTES:
            raise cur.fail(f"tensor #{i} name is longer than {MAX_TENSOR_NAME_BYTES} bytes", at)
        if name in names:
            raise cur.fail(f"duplicate tensor name {name!r}", at)
        names.add(name)
        n_dims = cur.u32(f"tensor {name!r} dimension count")
        if n_dims > MAX_DIMS:
            raise cur.fail(f"tensor {name!r} has {n_dims} dimensions (at most {MAX_DIMS})", cur.pos - 4)
        shape = []
        n_elements = 1
        for d in range(n_dims):
            ne = cur.i64(f"tensor {name!r} dimension {d}")
            if ne < 0:
                raise cur.fail(f"tensor {name!r} dimension {d} is negative ({ne})", cur.pos - 8)
            if ne and n_elements > _INT64_MAX // ne:
                raise cur.fail(f"tensor {name!r} element count overflows int64", cur.pos - 8)
            n_elements *= ne
            shape.append(ne)
        type_at = cur.pos
        ggml_type = cur.i32(f"tensor {name!r} type")
        t = GGML_TYPES_BY_ID.get(ggml_type)
        if t is None:
            raise cur.fail(f"tensor {name!r} has unknown GGML type {ggml_type}", type_at)
        if shape and shape[0] % t.block_elements:
            raise cur.fail(
                f"tensor {name!r}: row length {shape[0]} is not a multiple of the {t.name} "
                f"block size {t.block_elements}",
                type_at,
            )
        offset = cur.u64(f"tensor {name!r} offset")
        info = TensorInfo(name, ggml_type, tuple(shape), offset)
        nbytes = info.n_bytes
        if nbytes > _INT64_MAX - alignment:
            raise cur.fail(f"tensor {name!r} byte size {nbytes} is too large", type_at)
        if offset != expected_offset:
            raise cur.fail(f"tensor {name!r} has data offset {offset}, expected {expected_offset}", cur.pos - 8)
        expected_offset += -(-nbytes // alignment) * alignment
        tensors.append(info)

    header_bytes = cur.pos
    if n_tensors > 0:
        header_bytes = -(-cur.pos // alignment) * alignment
        if header_bytes > end:
            raise GGUFError(path, cur.pos, "file truncated: the tensor data section starts past the end of the file")
        if check_data_bounds and end != UNKNOWN_SIZE:
            for t_info in tensors:
                if header_bytes + t_info.offset + t_info.n_bytes > end:
                    raise GGUFError(
                        path,
                        header_bytes + t_info.offset,
                        f"tensor {t_info.name!r} data is not within the file bounds "
                        "(file truncated or incomplete download)",
                    )
    file_size = cur.avail if end == UNKNOWN_SIZE else end
    return GGUFFile(path, version, big_endian, kv, kv_types, tensors, alignment, header_bytes, file_size, n_tensors)


def read_gguf(path: str | os.PathLike[str], check_data_bounds: bool = True) -> GGUFFile:
    """Read the metadata of a local GGUF file: the header only, read as it is needed (never mapped, so a file
    truncated underneath is an error, not a crash); tensor data is never read."""
    spath = os.fspath(path)
    try:
        st = os.stat(spath)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise GGUFError(spath, None, f"{kind}; expected a GGUF file")
        if st.st_size == 0:
            raise GGUFError(spath, 0, "file is empty")
        fd = os.open(spath, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # swapped for a FIFO since: no wait
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise GGUFError(spath, None, "not a regular file; expected a GGUF file")
    except OSError as exc:
        raise GGUFError(spath, None, f"cannot read file: {exc.strerror or exc}") from None
    try:

        def source(start: int, stop: int) -> bytes:
            try:
                return os.pread(fd, stop - start, start)
            except OSError as exc:
                raise GGUFError(spath, start, f"cannot read file: {exc.strerror or exc}") from None

        first = bytearray(min(st.st_size, FIRST_READ_BYTES))
        got = os.preadv(fd, [first], 0)
        return parse_gguf(first[:got], spath, st.st_size, check_data_bounds, source)
    finally:
        os.close(fd)
