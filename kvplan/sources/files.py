"""Reading the text files people write: YAML (model specs, deployments files, GPU tables), with the line of every
value so that every error can name ``FILE:LINE: KEY``, and JSON (config.json). Bounded: regular files only (a FIFO
or a device is refused before it is opened), a size cap, a depth cap, a cap on the nodes that YAML aliases can
expand to, and finite numbers of sane size in JSON."""

from __future__ import annotations

import difflib
import errno
import json
import math
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO

from kvplan.errors import SpecError

MAX_TEXT_BYTES = 16 << 20  # a spec or deployments file is kilobytes
MAX_DEPTH = 64
MAX_NODES = 200_000  # what YAML aliases may expand to (a spec or deployments file has hundreds)


@dataclass
class Node:
    value: Any  # dict[str, Node] | list[Node] | a scalar
    line: int


def did_you_mean(key: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(key, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class NotRegularFile(OSError):
    """A path that is not a regular file (a folder, a FIFO, a device): refused, never waited on."""


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading if it is a regular file. A FIFO or a device is refused before it is opened (a
    FIFO nobody writes would block), and the opened file is checked again (it may have been swapped meanwhile:
    opened without blocking, so even then nothing waits)."""
    for _ in range(2):
        try:
            st = os.stat(path)
        except ValueError:  # a NUL, or a character the file system's encoding cannot take: no such file here
            raise FileNotFoundError(errno.ENOENT, "not a file name this system can open") from None
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise NotRegularFile(0, kind)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.set_blocking(fd, True)
                return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise NotRegularFile(0, "not a regular file")


def read_text(path: str, what: str, limit: int | None = None) -> str:
    """The text of a regular file of at most ``limit`` bytes (MAX_TEXT_BYTES), as UTF-8 (errors name the file)."""
    limit = MAX_TEXT_BYTES if limit is None else limit
    try:
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise SpecError(path, None, None, f"{size:,} bytes is too large for {what}")
            data = fh.read(limit + 1)
    except NotRegularFile as exc:
        raise SpecError(path, None, None, f"{exc.strerror}; expected {what}") from None
    except OSError as exc:
        raise SpecError(path, None, None, f"cannot read file: {exc.strerror or exc}") from None
    if data.startswith(b"GGUF"):
        raise SpecError(path, None, None, f"a GGUF model, not {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(path, None, None, f"not a UTF-8 text file; expected {what}") from None


class _Converter:
    """PyYAML nodes → Nodes with lines, counting what aliases expand to and how deep the document nests."""

    def __init__(self, text: str, path: str) -> None:
        import yaml

        self.yaml = yaml
        self.constructor = yaml.SafeLoader(text)
        self.path = path
        self.count = 0

    def convert(self, node: Any, depth: int) -> Node:
        self.count += 1
        line = node.start_mark.line + 1
        if self.count > MAX_NODES:
            raise SpecError(self.path, line, None, f"more than {MAX_NODES:,} values (aliases expanding?)")
        if depth > MAX_DEPTH:
            raise SpecError(self.path, line, None, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, self.yaml.MappingNode):
            return Node(self.mapping(node, depth), line)
        if isinstance(node, self.yaml.SequenceNode):
            return Node([self.convert(v, depth + 1) for v in node.value], line)
        return Node(self.constructor.construct_object(node), line)

    def mapping(self, node: Any, depth: int) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for k, v in node.value:
            key = self.constructor.construct_object(k)
            if not isinstance(key, str):
                raise SpecError(self.path, k.start_mark.line + 1, str(key), "keys must be strings")
            if key in out:
                raise SpecError(self.path, k.start_mark.line + 1, key, "duplicate key")
            out[key] = self.convert(v, depth + 1)
        return out


def load_nodes(text: str, path: str, empty: str) -> Node:
    """The YAML document as nodes carrying their line numbers; ``empty`` is the message for an empty file."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is None:
            raise SpecError(path, None, None, empty)
        return _Converter(text, path).convert(root, 0)
    except yaml.YAMLError as exc:  # bad syntax, or an unknown tag such as !!python/object
        raise _invalid(path, exc) from None
    except (ValueError, OverflowError) as exc:  # a scalar PyYAML cannot build (an integer of 5000 digits)
        raise SpecError(path, None, None, f"invalid YAML: {str(exc)[:120]}") from None
    except RecursionError:
        raise SpecError(path, None, None, f"invalid YAML: nested deeper than {MAX_DEPTH} levels") from None


def _invalid(path: str, exc: Exception) -> SpecError:
    """PyYAML's error as one line naming the file and line."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    return SpecError(path, line, None, f"invalid YAML: {problem}")


def plain(node: Node) -> Any:
    if isinstance(node.value, dict):
        return {k: plain(v) for k, v in node.value.items()}
    if isinstance(node.value, list):
        return [plain(v) for v in node.value]
    return node.value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def _depth(value: object, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests (raises ValueError past ``limit``)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    deepest = 0
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            raise ValueError(f"nested deeper than {limit} levels")
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return deepest


def read_json(path: str, what: str) -> object:
    """A JSON file: no NaN or Infinity, every float finite, integers of at most 30 digits, at most MAX_DEPTH deep."""
    return parse_json(read_text(path, what), path)


def parse_json(text: str, path: str) -> object:
    """JSON text with read_json's bounds (``path`` names it in errors)."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int)
        _depth(value)
    except RecursionError:
        raise SpecError(path, None, None, f"not valid JSON: nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise SpecError(path, exc.lineno, None, f"not valid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise SpecError(path, None, None, f"not valid JSON: {exc}") from None
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 30:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)
