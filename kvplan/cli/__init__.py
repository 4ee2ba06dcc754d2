"""The ``kvplan`` command line: parse, call the library, render, exit. Errors become one line on stderr and an
exit code here and only here (codes in kvplan.errors); with ``-o json`` the error is JSON on stdout too."""

from __future__ import annotations

import errno
import os
import shutil
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from kvplan import __version__
from kvplan.cli.progress import is_terminal, showing
from kvplan.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    KvplanError,
    OutputError,
    UsageError,
)
from kvplan.report.document import Document, Format
from kvplan.units import Units

if TYPE_CHECKING:
    from kvplan.cli.app import Call


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


def terminal_width(out: TextIO) -> int | None:
    """The terminal's width when writing to one; None (no limit) when piped."""
    return shutil.get_terminal_size().columns if is_terminal(out) else None


def run(argv: Sequence[str], out: TextIO, err: TextIO, width: int | None = None) -> int:
    """Run one command line; returns the exit code. ``width`` limits terminal tables (None: no limit)."""
    from kvplan.render import render

    fmt = _format_of(argv)
    try:
        if argv[:1] == ["--version"]:
            out.write(f"kvplan {__version__}\n")
            return EXIT_OK
        from kvplan.cli.app import parse

        call = parse(argv, out)
        if call is None:  # help, completion
            return EXIT_OK
        doc, fmt, units = _execute(call, err)
        text = render(doc, fmt, units, width, colour=is_terminal(out))
    except KvplanError as exc:
        from kvplan.render.cells import printable

        label = "usage error" if isinstance(exc, UsageError) else "error"
        err.write(f"kvplan: {label}: {printable(str(exc))}\n")
        if fmt is Format.JSON:
            from kvplan.report.error import error_document

            out.write(render(error_document(str(exc), exc.kind, exc.exit_code), fmt))
        return exc.exit_code
    out.write(text)
    from kvplan.render.cells import printable

    for line in _stderr_lines(doc, units):
        err.write(printable(line) + "\n")
    return doc.exit_code


#: the files a command writes besides its output (--svg, --junit): setting → the writer of the document
def _svg_chart(doc: Document, units: Units) -> str:
    from kvplan.render.chart import svg

    assert doc.chart is not None
    return svg(doc.chart, units)


def _svg_simulation(doc: Document, units: Units) -> str:
    from kvplan.render.simulate_svg import render

    return render(doc)


def _junit(doc: Document, units: Units) -> str:
    from kvplan.render.junit import junit

    return junit(doc)


FILES = {("curve", "svg"): _svg_chart, ("simulate", "svg"): _svg_simulation, ("check", "junit"): _junit}


def _execute(call: Call, err: TextIO) -> tuple[Document, Format, Units]:
    """The library's command on the typed request built from the call; the files it asks for written."""
    from kvplan.commands import run as run_command
    from kvplan.options.build import build, parse
    from kvplan.options.settings import SETTINGS

    # the output settings: the command line's own (format, the files) and the units every report is written in
    output = [s.dest for s in SETTINGS if not s.library or s.dest == "units"]
    chosen = parse({d: call.raw.pop(d) for d in output if d in call.raw})
    fmt, units = Format(chosen.get("format", "table")), Units(chosen.get("units", "iec"))
    req = build(call.command, call.positionals, call.raw, call.server_flags)
    with showing(err) as progress:
        doc = run_command(call.command, req, units, progress)
    for dest in ("svg", "junit"):
        if dest in chosen:
            write_file(chosen[dest], FILES[call.command, dest](doc, units))
    return doc, fmt, units


def write_file(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


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


def main() -> None:
    """The console entry point."""
    if sys.stderr is None:  # started with stderr closed: its lines go nowhere, the exit code still tells
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    if sys.stdout is None:  # started with stdout closed (kvplan … >&-): nothing can carry the answer
        sys.stderr.write("kvplan: error: cannot write the output: standard output is closed\n")
        sys.exit(EXIT_OUTPUT)
    for stream in (sys.stdout, sys.stderr):  # a character no encoding can write is escaped, never an error
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
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
