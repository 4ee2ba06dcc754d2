"""One exception hierarchy; every error maps to a documented exit code here and only here.

Exit codes (documented in the README):
  0  success
  1  a budget or check failed
  2  usage error (bad flag or value; Click's own code)
  3  bad input: unreadable or malformed model file, spec or catalog entry
  4  unsupported: an architecture or setting kvplan or llama.cpp does not support / refuses
 70  internal error (a bug in kvplan), set in kvplan.cli
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_UNSUPPORTED = 4


class KvplanError(Exception):
    """Base class. ``str(err)`` is the one line printed on stderr."""

    exit_code = EXIT_BAD_INPUT


class BadInputError(KvplanError):
    """The input (file, spec, name) cannot be read or is malformed."""

    exit_code = EXIT_BAD_INPUT


class GGUFError(BadInputError):
    """A GGUF file is malformed. Carries the file and byte offset."""

    def __init__(self, path: str, offset: int | None, message: str) -> None:
        where = f"{path}" if offset is None else f"{path}: offset {offset}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.offset = offset
        self.detail = message


class SpecError(BadInputError):
    """A YAML model spec is malformed. Carries the file, line and key."""

    def __init__(self, path: str, line: int | None, key: str | None, message: str) -> None:
        where = path if line is None else f"{path}:{line}"
        what = f"{key}: {message}" if key else message
        super().__init__(f"{where}: {what}")
        self.path = path
        self.line = line
        self.key = key


class ModelNotFoundError(BadInputError):
    """A model reference is neither a readable file nor a catalog name."""


class HParamsError(BadInputError):
    """Model metadata is missing a key or has an impossible value (llama.cpp would fail to load it)."""


class UnsupportedError(KvplanError):
    """Something kvplan or the runtime does not support."""

    exit_code = EXIT_UNSUPPORTED


class UnknownArchitectureError(UnsupportedError):
    """The architecture is not one llama.cpp knows."""


class RefusedConfigError(UnsupportedError):
    """llama.cpp refuses this context configuration; the message gives llama.cpp's reason."""
