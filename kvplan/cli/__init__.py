"""The ``kvplan`` command line: parse, call the library, render, exit. Errors become one line on stderr and an
exit code here and only here (codes in kvplan.errors); with ``-o json`` the error is JSON on stdout too."""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Sequence
from typing import TextIO

from kvplan import __version__
from kvplan.cli.argv import help_text, parse
from kvplan.cli.commands import COMMANDS, Invocation
from kvplan.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    KvplanError,
    UsageError,
)
from kvplan.report.document import Document, Format
from kvplan.units import Units

SUMMARY = "Byte-exact KV cache / state memory planning for LLM inference:\nllama.cpp, vLLM, SGLang and TensorRT-LLM."


def top_help() -> str:
    lines = ["Usage: kvplan COMMAND [ARGS] [options]", "", SUMMARY, "", "Commands:"]
    lines += [f"  {c.name:<10}{c.brief}" for c in COMMANDS.values()]
    lines += [
        "",
        "Options:",
        "  -h, --help    show this help, or a command's: kvplan COMMAND --help",
        "  --version     show kvplan's version",
        "",
        "Exit codes: 0 yes, 1 no (does not fit, a budget fails), 2 usage error,",
        "3 bad input, 4 unsupported, 70 internal error, 74 output error.",
    ]
    return "\n".join(lines) + "\n"


def _format_of(argv: Sequence[str]) -> Format:
    """The output format asked for, read before parsing, so that errors can be JSON too."""
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if name in ("-o", "--format"):
            value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            try:
                return Format(value.strip().lower())
            except ValueError:
                return Format.TABLE
    return Format.TABLE


def _output_choices(parsed_format: str | None, parsed_units: str | None) -> tuple[Format, Units]:
    try:
        fmt = Format((parsed_format or "table").strip().lower())
    except ValueError:
        raise UsageError(
            f"expected one of {', '.join(f.value for f in Format)}, not {parsed_format!r}", "--format"
        ) from None
    try:
        units = Units((parsed_units or "iec").strip().lower())
    except ValueError:
        raise UsageError(
            f"expected one of {', '.join(u.value for u in Units)}, not {parsed_units!r}", "--units"
        ) from None
    return fmt, units


def terminal_width(out: TextIO) -> int | None:
    """The terminal's width when writing to one; None (no limit) when piped."""
    try:
        if not out.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size().columns


def run(argv: Sequence[str], out: TextIO, err: TextIO, width: int | None = None) -> int:
    """Run one command line; returns the exit code. ``width`` limits terminal tables (None: no limit)."""
    from kvplan.render import render

    fmt = _format_of(argv)
    try:
        result = _dispatch(list(argv), out)
        if result is None:
            return EXIT_OK
        doc, fmt, units = result
        text = render(doc, fmt, units, width)
    except KvplanError as exc:
        label = "usage error" if isinstance(exc, UsageError) else "error"
        err.write(f"kvplan: {label}: {exc}\n")
        if fmt is Format.JSON:
            from kvplan.report.error import error_document

            out.write(render(error_document(str(exc), exc.kind, exc.exit_code), fmt))
        return exc.exit_code
    out.write(text)
    for line in _stderr_lines(doc, units):
        err.write(line + "\n")
    return doc.exit_code


def _stderr_lines(doc: Document, units: Units) -> list[str]:
    """What CI logs should show besides the report: failed budgets, and deployments that could not be read."""
    from kvplan.report import budgets as budget_report

    lines = []
    for finding in doc.data.get("budgets", []) if doc.kind in ("estimate", "fit", "simulate") else []:
        if not finding["passed"] and finding["budget"] != "fits":
            from kvplan.capacity.budgets import Finding

            lines.append("kvplan: budget failed: " + budget_report.line(Finding(**finding), units))
    if doc.kind == "check":
        for dep in doc.data["deployments"]:
            if dep["status"] == "error":
                lines.append(f"kvplan: error: deployment {dep['name']!r}: {dep['error']}")
    return lines


def _dispatch(argv: list[str], out: TextIO) -> tuple[Document, Format, Units] | None:
    if not argv or argv[0] in ("-h", "--help"):
        out.write(top_help())
        return None
    if argv[0] == "--version":
        out.write(f"kvplan {__version__}\n")
        return None
    name = argv[0]
    command = COMMANDS.get(name)
    if command is None:
        import difflib

        close = difflib.get_close_matches(name, list(COMMANDS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else f"; commands: {', '.join(COMMANDS)}"
        raise UsageError(f"no such command {name!r}{hint}")
    elsewhere: dict[str, str] = {}  # a flag → the first command that has it
    for c in COMMANDS.values():
        if c is not command:
            for o in c.options:
                for f in o.flags:
                    elsewhere.setdefault(f, c.name)
    parsed = parse(argv[1:], command.options, command.positionals, name, elsewhere)
    if parsed.help:
        out.write(help_text(name, command.summary, command.positionals, command.options, command.extra_groups))
        return None
    fmt_item, units_item = parsed.values.get("format"), parsed.values.get("units")
    fmt, units = _output_choices(
        None if fmt_item is None else str(fmt_item.value), None if units_item is None else str(units_item.value)
    )
    return command.body(Invocation(parsed, fmt, units)), fmt, units


def main() -> None:
    """The console entry point."""
    try:
        code = run(sys.argv[1:], sys.stdout, sys.stderr, terminal_width(sys.stdout))
        sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stderr.write("kvplan: interrupted\n")
        code = EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (kvplan … | head): say nothing more, as other command-line tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT):
            _quiet_stdout()
            sys.stderr.write(f"kvplan: error: cannot write the output: {exc.strerror}\n")
            code = EXIT_OUTPUT
        else:
            code = _internal(exc)
    except Exception as exc:  # a bug in kvplan: one line, a code, and how to see more
        code = _internal(exc)
    sys.exit(code)


def _quiet_stdout() -> None:
    """Drop what is still buffered for a stdout that cannot be written, so that exiting does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def _internal(exc: BaseException) -> int:
    if os.environ.get("KVPLAN_DEBUG"):
        raise exc
    sys.stderr.write(f"kvplan: internal error: {type(exc).__name__}: {exc} (set KVPLAN_DEBUG=1 for a traceback)\n")
    return EXIT_INTERNAL
