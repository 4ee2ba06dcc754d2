"""Reading the YAML files people write (model specs, deployments files, GPU tables) with the line of every value,
so that every error can name ``FILE:LINE: KEY``. Bounded: regular files only, a size cap, a depth cap, and a cap
on the nodes that aliases can expand to."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kvplan.errors import SpecError

MAX_TEXT_BYTES = 16 << 20  # a spec or deployments file is kilobytes
MAX_DEPTH = 64
MAX_NODES = 1_000_000  # what aliases may expand to


@dataclass
class Node:
    value: Any  # dict[str, Node] | list[Node] | a scalar
    line: int


def did_you_mean(key: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(key, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def read_text(path: str, what: str) -> str:
    """The text of a regular file of at most MAX_TEXT_BYTES, as UTF-8 (errors name the file)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise SpecError(path, None, None, f"{kind}; expected {what}")
        if st.st_size > MAX_TEXT_BYTES:
            raise SpecError(path, None, None, f"{st.st_size:,} bytes is too large for {what}")
        with open(path, "rb") as fh:
            data = fh.read(MAX_TEXT_BYTES + 1)
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
    except RecursionError:
        raise SpecError(path, None, None, "invalid YAML: nested too deeply") from None


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
