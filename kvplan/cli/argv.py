"""Command-line parsing from the settings table: exact flags (no abbreviations), ``--flag value`` and
``--flag=value``, switches, one line of usage error naming the flag, and help text that fits 80 columns without
cutting an option name."""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.errors import UsageError
from kvplan.request import GROUPS, Origin, Raw, Setting

HELP_WIDTH = 80
_OPTION_COLUMN = 30


@dataclass(frozen=True)
class Option:
    """A command-line option: a setting of the request, or one of the command line's own (output, help)."""

    dest: str
    flags: tuple[str, ...]
    help: str
    group: str
    metavar: str | None = "N"  # None: a switch
    negate: tuple[str, ...] = ()

    @classmethod
    def of(cls, s: Setting) -> Option:
        return cls(s.dest, s.flags, s.help, s.group, s.metavar, s.negate)


@dataclass(frozen=True)
class Positional:
    name: str
    help: str
    required: bool = True


@dataclass(frozen=True)
class Parsed:
    values: dict[str, Raw]  # dest → the raw value and the flag it came with
    positionals: dict[str, str]
    help: bool


def parse(argv: Sequence[str], options: Sequence[Option], positionals: Sequence[Positional], command: str,
          elsewhere: dict[str, str] | None = None) -> Parsed:  # fmt: skip
    """``argv`` (after the command name) into raw values; ``elsewhere`` maps flags other commands have to them."""
    flags: dict[str, tuple[Option, bool]] = {}
    for opt in options:
        for f in opt.flags:
            flags[f] = (opt, True)
        for f in opt.negate:
            flags[f] = (opt, False)
    values: dict[str, Raw] = {}
    given: list[str] = []
    want_help = False
    i = 0
    args = list(argv)
    only_positional = False
    while i < len(args):
        token = args[i]
        i += 1
        if only_positional or not token.startswith("-") or token == "-" or _is_number(token):
            given.append(token)
            continue
        if token == "--":
            only_positional = True
            continue
        if token in ("-h", "--help"):
            want_help = True
            continue
        name, eq, inline = token.partition("=")
        if name not in flags:
            raise UsageError(_unknown(name, flags, command, elsewhere or {}))
        opt, on = flags[name]
        if opt.metavar is None:
            if eq:
                raise UsageError(f"{name} is a switch and takes no value")
            values[opt.dest] = Raw(on, Origin(name))
            continue
        if eq:
            value = inline
        elif i < len(args):
            value = args[i]
            i += 1
        else:
            raise UsageError(f"{name} needs a value ({opt.metavar})")
        values[opt.dest] = Raw(value, Origin(name))
    out: dict[str, str] = {}
    for pos in positionals:
        if given:
            out[pos.name] = given.pop(0)
        elif pos.required and not want_help:
            raise UsageError(f"missing {pos.name} (see kvplan {command} --help)")
    if given:
        raise UsageError(f"unexpected argument {given[0]!r} (see kvplan {command} --help)")
    return Parsed(values, out, want_help)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _unknown(name: str, flags: dict[str, tuple[Option, bool]], command: str, elsewhere: dict[str, str]) -> str:
    if name in elsewhere:
        return f"{name} is an option of `kvplan {elsewhere[name]}`, not of `kvplan {command}`"
    close = difflib.get_close_matches(name, list(flags), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else f" (see kvplan {command} --help)"
    return f"no such option: {name}{hint}"


def _option_lines(opt: Option, width: int) -> list[str]:
    names = ", ".join(opt.flags + opt.negate) if opt.negate else ", ".join(opt.flags)
    head = f"  {names}" + (f" {opt.metavar}" if opt.metavar else "")
    if len(head) <= _OPTION_COLUMN - 2:
        body = textwrap.wrap(opt.help, width - _OPTION_COLUMN)
        first = head.ljust(_OPTION_COLUMN) + (body[0] if body else "")
        return [first.rstrip(), *(" " * _OPTION_COLUMN + line for line in body[1:])]
    body = textwrap.wrap(opt.help, width - 8)
    return [head, *("        " + line for line in body)]


def help_text(command: str, summary: str, positionals: Sequence[Positional], options: Sequence[Option],
              extra_groups: dict[str, str] | None = None, width: int = HELP_WIDTH) -> str:  # fmt: skip
    usage = " ".join(p.name if p.required else f"[{p.name}]" for p in positionals)
    lines = [f"Usage: kvplan {command}{' ' + usage if usage else ''} [options]", ""]
    lines += textwrap.wrap(summary, width)
    if positionals:
        lines += ["", "Arguments:"]
        for p in positionals:
            lines += _option_lines(Option(p.name, (p.name,), p.help, "", None), width)
    titles = {**GROUPS, **(extra_groups or {})}
    order = list(dict.fromkeys(opt.group for opt in options))
    for group in order:
        lines += ["", f"{titles.get(group, group.capitalize())}:"]
        for opt in options:
            if opt.group == group:
                lines += _option_lines(opt, width)
    lines += ["", "Help:"]
    lines += _option_lines(Option("help", ("-h", "--help"), "show this help and exit", "", None), width)
    return "\n".join(line.rstrip() for line in lines) + "\n"
