"""Command-line parsing from the settings table: exact flags (no abbreviations), ``--flag value`` and
``--flag=value``, switches, one line of usage error naming the flag, and help text that fits 80 columns without
cutting an option name."""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.capacity.request import Origin, Raw
from kvplan.capacity.settings import GROUPS, Setting
from kvplan.errors import UsageError

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


def _flag_table(options: Sequence[Option]) -> dict[str, tuple[Option, bool]]:
    """Every spelling → its option and the value a switch takes (False for the negating spellings)."""
    flags: dict[str, tuple[Option, bool]] = {}
    for opt in options:
        for f in opt.flags:
            flags[f] = (opt, True)
        for f in opt.negate:
            flags[f] = (opt, False)
    return flags


def parse(argv: Sequence[str], options: Sequence[Option], positionals: Sequence[Positional], command: str,
          elsewhere: dict[str, str] | None = None) -> Parsed:  # fmt: skip
    """``argv`` (after the command name) into raw values; ``elsewhere`` maps flags other commands have to them."""
    flags = _flag_table(options)
    values: dict[str, Raw] = {}
    given: list[str] = []
    want_help = False
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            given += args[i:]
            break
        if not token.startswith("-") or token == "-" or _is_number(token):
            given.append(token)
        elif token in ("-h", "--help"):
            want_help = True
        else:
            i = _option(token, args, i, flags, values, command, elsewhere or {})
    out: dict[str, str] = {}
    for pos in positionals:
        if given:
            out[pos.name] = given.pop(0)
        elif pos.required and not want_help:
            raise UsageError(f"missing {pos.name} (see kvplan {command} --help)")
    if given:
        raise UsageError(f"unexpected argument {given[0]!r} (see kvplan {command} --help)")
    return Parsed(values, out, want_help)


def _option(token: str, args: list[str], i: int, flags: dict[str, tuple[Option, bool]], values: dict[str, Raw],
            command: str, elsewhere: dict[str, str]) -> int:  # fmt: skip
    """Read the option ``token`` (and its value) into ``values``; returns the index of the next argument."""
    name, eq, inline = token.partition("=")
    if name not in flags:
        raise UsageError(_unknown(name, flags, command, elsewhere))
    opt, on = flags[name]
    if opt.metavar is None:
        if eq:
            raise UsageError(f"{name} is a switch and takes no value")
        values[opt.dest] = Raw(on, Origin(name))
        return i
    if eq:
        values[opt.dest] = Raw(inline, Origin(name))
        return i
    if i >= len(args):
        raise UsageError(f"{name} needs a value ({opt.metavar})")
    values[opt.dest] = Raw(args[i], Origin(name))
    return i + 1


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
    heads = textwrap.wrap(head.strip(), width - 2, initial_indent="  ", subsequent_indent="    ",
                          break_on_hyphens=False, break_long_words=False)  # fmt: skip
    return [*heads, *("        " + line for line in body)]


def help_text(
    command: str,
    summary: str,
    positionals: Sequence[Positional],
    options: Sequence[Option],
    extra_groups: dict[str, str] | None = None,
    width: int = HELP_WIDTH,
) -> str:
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
