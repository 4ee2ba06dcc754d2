"""One exception hierarchy; every exit code kvplan uses is defined here and only here.

Exit codes (documented in the README, "Errors and exit codes"):

====  =========================================================================================
   0  success
   1  an answer that is "no": a budget fails, `fit` finds nothing that fits, `explain` cannot explain a figure
   2  usage error: an unknown option, a bad or missing value, options that contradict each other
   3  bad input: an unreadable or malformed model file, spec, deployments file or catalog name
   4  unsupported: an architecture or setting kvplan or the runtime does not support / refuses
  70  internal error (a bug in kvplan)
  74  output error: the output could not be written (disk full, a closed file)
 130  interrupted (Ctrl-C)
 141  the reader of kvplan's output went away (broken pipe; nothing more is printed)
====  =========================================================================================
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_NO = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_UNSUPPORTED = 4
EXIT_INTERNAL = 70
EXIT_OUTPUT = 74
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

#: the order in which a run of several results (kvplan check) picks the exit code it reports
EXIT_PRECEDENCE = (EXIT_BAD_INPUT, EXIT_UNSUPPORTED, EXIT_NO)


class KvplanError(Exception):
    """Base class. ``str(err)`` is the one line printed on stderr after ``kvplan: error: ``."""

    exit_code = EXIT_BAD_INPUT
    kind = "error"


class UsageError(KvplanError):
    """A bad option or value on the command line (or in a library call), named by ``param``."""

    exit_code = EXIT_USAGE
    kind = "usage"

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(f"{param}: {message}" if param else message)
        self.param = param
        self.detail = message


class BadInputError(KvplanError):
    """The input (file, spec, name) cannot be read or is malformed."""

    exit_code = EXIT_BAD_INPUT
    kind = "bad_input"


class GGUFError(BadInputError):
    """A GGUF file is malformed. Carries the file and byte offset."""

    def __init__(self, path: str, offset: int | None, message: str) -> None:
        where = f"{path}" if offset is None else f"{path}: offset {offset}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.offset = offset
        self.detail = message


class SpecError(BadInputError):
    """A YAML file (model spec, deployments file, GPU table) is malformed. Carries the file, line and key."""

    def __init__(self, path: str, line: int | None, key: str | None, message: str) -> None:
        where = path if line is None else f"{path}:{line}"
        what = f"{key}: {message}" if key else message
        super().__init__(f"{where}: {what}")
        self.path = path
        self.line = line
        self.key = key
        self.detail = message


class ModelNotFoundError(BadInputError):
    """A model reference is neither a readable file nor a catalog name."""


class HParamsError(BadInputError):
    """Model metadata is missing a key or has an impossible value (llama.cpp would fail to load it)."""


class UnsupportedError(KvplanError):
    """Something kvplan or the runtime does not support."""

    exit_code = EXIT_UNSUPPORTED
    kind = "unsupported"


class UnknownArchitectureError(UnsupportedError):
    """The architecture is not one llama.cpp knows."""


class RefusedConfigError(UnsupportedError):
    """The runtime refuses this configuration; the message gives the runtime's reason."""

    kind = "refused"


class OutputError(KvplanError):
    """kvplan's output (stdout, --svg, --junit) could not be written."""

    exit_code = EXIT_OUTPUT
    kind = "output"


def overall_exit(codes: list[int]) -> int:
    """The exit code of several results: bad input, then unsupported, then a failed answer, else 0."""
    for code in EXIT_PRECEDENCE:
        if code in codes:
            return code
    return EXIT_OK
