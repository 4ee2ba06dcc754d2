"""The Typer application: one Typer command per command of the table (kvplan.options.commands), its options
generated from the settings (kvplan.options.settings): every spelling, the help group, the values a shell
completes. Typer parses, prints help and completes; what it does not do as the runtimes do is done before it:

- **Exact flags, as llama.cpp reads them** (:func:`prepass`). Click reads an unknown single-dash token by its
  short-option rules (``-c4096`` as ``-c 4096``, ``-cmoe`` as ``-c moe``, ``-ngl`` on a command without it as
  "No such option: -n"); llama.cpp refuses each. The pre-pass checks every flag against the command's own
  spellings first — an unknown one is kvplan's one-line usage error, with the command that has it or the nearest
  spelling — splits ``-c=4096`` (Click would read the value ``=4096``), takes the next argument as the value
  whatever it looks like (``-ngl -1``), and records the spelling typed, which Click does not keep and every
  message names.
- **Values as typed** (:class:`_AsTyped`). Every value stays the text given (a switch: True / False), read by
  kvplan's parsers, so ``32k``, ``24GiB`` and llama.cpp's ``on|enabled|1|true`` mean what they mean and errors
  are kvplan's. Typer 0.29 would instead build a pydantic TypeAdapter for every declared option on every run
  (+~100 ms of start-up, measured); kvplan sets the parameters' coercion to :data:`_AS_TYPED` through Typer's
  private ``_runtime_param`` — pinned to Typer 0.29 (pyproject.toml) and asserted by tests/cli/test_app.py, so
  that an upgrade that moves it fails loudly rather than importing pydantic.
- **One line for every error**: ``standalone_mode=False`` and Click's exceptions (``typer.TyperException``) are
  mapped to kvplan's usage errors (kvplan.cli.run prints them, as JSON too with ``-o json``).
- **kvplan's help text** (kvplan.cli.help): Typer's Rich help cuts option names at 80 columns.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TextIO

import typer
import typer.core

from kvplan.capacity.request import Origin, Raw, ServerFlag
from kvplan.cli.help import help_text, top_help
from kvplan.errors import UnsupportedError, UsageError
from kvplan.facts.llama_server_args import BY_FLAG, Effect, ServerArg
from kvplan.options.commands import COMMANDS, Command
from kvplan.options.settings import Setting, catalog_names
from kvplan.options.values import close_match

COMPLETE_VAR = "_KVPLAN_COMPLETE"


@dataclass(frozen=True)
class Call:
    """A command line, parsed: the command, its arguments, each setting given with the spelling typed, and
    llama-server's arguments that kvplan does not plan (a pasted llama-server line)."""

    command: str
    positionals: dict[str, str]
    raw: dict[str, Raw]
    server_flags: tuple[ServerFlag, ...] = ()


@dataclass
class _Line:
    """What the pre-pass has read so far."""

    options: list[str] = field(default_factory=list)  # for Click
    given: list[str] = field(default_factory=list)  # the arguments
    spelled: dict[str, str] = field(default_factory=dict)  # setting → the spelling typed
    server: list[ServerFlag] = field(default_factory=list)
    model: str | None = None  # -m / --model


class _AsTyped:
    """Typer's coercion of a parameter's value, replaced: the value as typed."""

    def coerce(self, value: object, param: object, ctx: object) -> object:
        return value


_AS_TYPED = _AsTyped()


def _as_typed(params: list[Any]) -> list[Any]:
    for p in params:
        if hasattr(p, "_runtime_param"):
            p._runtime_param = _AS_TYPED
    return params


class _Command(typer.core.TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _as_typed(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(help_text(COMMANDS[str(self.name)]))


class _Group(typer.core.TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _as_typed(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(top_help())


def _completer(values: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    def complete(incomplete: str) -> list[str]:
        return [v for v in values() if v.startswith(incomplete)]

    return complete


def _option(s: Setting, help: str) -> inspect.Parameter:
    complete = _completer(s.completions) if s.choices else None
    if s.metavar is None:  # a switch: -kvu/-no-kvu pairs; negations beyond the spellings as " /NAME"
        decls = [f"{f}/{n}" for f, n in zip(s.flags, s.negate, strict=False)]
        decls += list(s.flags[len(s.negate) :]) + [f" /{n}" for n in s.negate[len(s.flags) :]]
        info: Any = typer.Option(*decls, help=help, show_default=False)
        annotation: Any = Annotated[bool | None, info]
    else:
        info = typer.Option(*s.flags, help=help, metavar=s.metavar, show_default=False, autocompletion=complete)
        annotation = Annotated[str | None, info]
    return inspect.Parameter(s.dest, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def _command(app: typer.Typer, command: Command) -> None:
    def body(**values: Any) -> dict[str, Any]:
        return values

    params = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=Annotated[
                str,
                typer.Argument(
                    metavar=p.name,
                    help=p.help,
                    autocompletion=_completer(catalog_names) if p.name == "MODEL" else None,
                ),
            ],
        )
        for p in command.positionals
    ]
    params += [_option(s, command.help_of(s)) for s in command.settings]
    body.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    body.__annotations__ = {}
    app.command(command.name, help=command.summary, short_help=command.brief, cls=_Command)(body)


def application(names: Iterable[str]) -> typer.Typer:
    """The Typer app with the commands ``names`` registered (all of them for the group's help and completion; a
    command line registers the one it runs)."""
    app = typer.Typer(
        name="kvplan",
        cls=_Group,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(lambda: None)  # a group, even with one command registered
    for name in names:
        _command(app, COMMANDS[name])
    return app


# --- the pre-pass: llama.cpp's exact flags -----------------------------------------------------------------


def _flags(command: Command) -> dict[str, tuple[Setting, bool]]:
    """Every spelling → its setting and the value a switch takes (False for the negating spellings)."""
    out: dict[str, tuple[Setting, bool]] = {}
    for s in command.settings:
        out.update(dict.fromkeys(s.flags, (s, True)))
        out.update(dict.fromkeys(s.negate, (s, False)))
    return out


def _unknown(flag: str, command: Command, flags: Iterable[str]) -> str:
    for other in COMMANDS.values():
        if other is not command and any(flag in s.flags or flag in s.negate for s in other.settings):
            return f"{flag} is an option of `kvplan {other.name}`, not of `kvplan {command.name}`"
    hint = close_match(flag, list(flags), cutoff=0.6) or f" (see kvplan {command.name} --help)"
    return f"no such option: {flag}{hint}"


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _takes_llamacpp(command: Command) -> bool:
    """Whether the command plans llama.cpp's context, so that a pasted llama-server line belongs to it."""
    return "flash_attn" in command.dests


def _server_arg(flag: str) -> ServerArg | None:
    """llama-server's argument of that spelling (llama.cpp reads ``--a_b`` as ``--a-b``)."""
    return BY_FLAG.get(flag.replace("_", "-") if flag.startswith("--") else flag)


def _values(flag: str, arg: ServerArg, eq: bool, inline: str, args: list[str]) -> list[str]:
    if arg.values == 0:
        if eq:
            raise UsageError(f"{flag} is a switch and takes no value")
        return []
    taken = [inline] if eq else []
    while len(taken) < arg.values:
        if not args:
            raise UsageError(f"{flag} needs {'a value' if arg.values == 1 else f'{arg.values} values'}")
        taken.append(args.pop(0))
    return taken


def _server(flag: str, eq: str, inline: str, args: list[str], command: Command, line: _Line) -> bool:
    """A llama-server argument kvplan does not plan: read as llama-server reads it (kvplan.facts.llama_server_args).
    False when ``flag`` is not one."""
    arg = _server_arg(flag) if _takes_llamacpp(command) else None
    if arg is None:
        return False
    values = _values(flag, arg, bool(eq), inline, args)
    if arg.effect is Effect.MODEL:
        if line.model is not None:
            raise UsageError(f"{flag}: the model is given twice")
        line.model = values[0]
    elif arg.effect is Effect.REMOVED:
        raise UsageError(f"{flag}: the argument has been removed. {arg.hint} (as llama.cpp says)")
    elif arg.effect is Effect.UNSUPPORTED:
        raise UnsupportedError(
            f"{flag}{' ' + ' '.join(values) if values else ''}: changes memory in a way kvplan does not plan yet; "
            "leave it out to plan the rest"
        )
    else:  # nothing planned, or host memory
        line.server.append(ServerFlag((flag, *values), Effect.HOST if arg.effect is Effect.HOST else Effect.NONE))
    return True


def _take(token: str, args: list[str], command: Command, flags: dict[str, tuple[Setting, bool]], line: _Line) -> None:
    """The option ``token`` (and its value, taken from ``args``): kvplan's, as Click is to read it, or
    llama-server's."""
    flag, eq, inline = token.partition("=")
    dashed = flag.replace("_", "-") if flag.startswith("--") else flag  # llama.cpp reads --ctx_size as --ctx-size
    if flag not in flags and dashed in flags and flags[dashed][0].runtime == "llama.cpp":
        flag = dashed
    if flag not in flags:
        if _server(flag, eq, inline, args, command, line):
            return
        raise UsageError(_unknown(flag, command, flags))
    setting, _ = flags[flag]
    if setting.once and setting.dest in line.spelled:
        raise UsageError(f"{flag} given twice; give the GPUs once: NAME[xN], or --memory SIZE,SIZE for a mixed rig")
    line.spelled[setting.dest] = flag
    if setting.metavar is None:
        if eq:
            raise UsageError(f"{flag} is a switch and takes no value")
        line.options.append(flag)
    elif eq:
        line.options += [flag, inline]
    elif not args:
        raise UsageError(f"{flag} needs a value ({setting.metavar})")
    else:
        line.options += [flag, args.pop(0)]


def prepass(command: Command, argv: Sequence[str]) -> tuple[list[str], _Line]:
    """``argv`` (after the command name) checked flag by flag against the command's spellings and rewritten for
    Click: options first, each as ``FLAG VALUE`` or ``SWITCH``, then ``--`` and the arguments. Returns it and
    what was read (the spelling typed of each setting, llama-server's other arguments, a -m model)."""
    flags = _flags(command)
    line = _Line()
    want_help = False
    args = list(argv)
    while args:
        token = args.pop(0)
        if token == "--":
            line.given += args
            break
        if not token.startswith("-") or token == "-" or _is_number(token):
            line.given.append(token)
        elif token in ("-h", "--help"):
            want_help = True
        else:
            _take(token, args, command, flags, line)
    if want_help:
        return ["--help"], line
    if line.model is not None:
        if line.given:
            raise UsageError(f"give the model once: {line.given[0]!r} or -m {line.model!r}")
        line.given.append(line.model)
    missing = [p.name for p in command.positionals[len(line.given) :] if p.required]
    if missing:
        raise UsageError(f"missing {missing[0]} (see kvplan {command.name} --help)")
    if len(line.given) > len(command.positionals):
        extra = line.given[len(command.positionals)]
        raise UsageError(f"unexpected argument {extra!r} (see kvplan {command.name} --help)")
    return [*line.options, "--", *line.given], line


# --- running Typer -----------------------------------------------------------------------------------------


def _click_message(exc: typer.TyperException) -> str:
    """Click's own usage errors (none should get past the pre-pass), in kvplan's words."""
    message = exc.format_message()
    return message[:1].lower() + message[1:].rstrip(".")


def _main(app: typer.Typer, argv: list[str], out: TextIO) -> Any:
    command = typer.main.get_command(app)
    try:
        with contextlib.redirect_stdout(out):  # Click writes help and completion scripts to sys.stdout
            return command.main(args=argv, prog_name="kvplan", standalone_mode=False, complete_var=COMPLETE_VAR)
    except typer.TyperException as exc:
        raise UsageError(_click_message(exc)) from None


def parse(argv: Sequence[str], out: TextIO) -> Call | None:
    """A command line into a Call; None when it was answered here (help, completion)."""
    if os.environ.get(COMPLETE_VAR):  # the shell asks for completions: every command, Typer answers and exits
        _main(application(COMMANDS), [], out)
        return None
    if not argv or argv[0] in ("-h", "--help"):
        out.write(top_help())
        return None
    name = argv[0]
    if name.startswith("--") and name.split("=")[0] in ("--install-completion", "--show-completion"):
        _main(application(COMMANDS), list(argv), out)
        return None
    command = COMMANDS.get(name)
    if command is None:
        hint = close_match(name, list(COMMANDS), cutoff=0.6) or f"; commands: {', '.join(COMMANDS)}"
        raise UsageError(f"no such command {name!r}{hint}")
    args, line = prepass(command, argv[1:])
    values = _main(application([name]), [name, *args], out)
    if not isinstance(values, dict):  # --help: printed
        return None
    positionals = {p.name: values.pop(p.name) for p in command.positionals if values.get(p.name) is not None}
    raw = {dest: Raw(v, Origin(line.spelled[dest])) for dest, v in values.items() if v is not None}
    return Call(name, positionals, raw, tuple(line.server))
