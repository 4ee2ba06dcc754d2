"""Help text from the table (kvplan.options): every option with all its spellings, grouped as llama.cpp /
serving engines / hardware / output, readable at 80 columns with no option name ever cut (a name too long for the
option column gets a line of its own). Typer prints it (kvplan.cli.app); the README's command reference is it."""

from __future__ import annotations

import textwrap

from kvplan.options.commands import COMMANDS, Command
from kvplan.options.settings import GROUPS

HELP_WIDTH = 80
PASTED = (
    "A llama-server command line pastes in: its other arguments (-t, --port, --jinja, sampling, …) are accepted, "
    "noted as planning nothing and kept on the run line; those whose memory kvplan does not plan (--mmproj, "
    "--lora, --rpc, -dev, …) are refused (exit 4)."
)
_OPTION_COLUMN = 30
SUMMARY = "Byte-exact KV cache / state memory planning for LLM inference:\nllama.cpp, vLLM, SGLang and TensorRT-LLM."


def _entry(names: str, metavar: str | None, help: str, width: int) -> list[str]:
    head = f"  {names}" + (f" {metavar}" if metavar else "")
    if len(head) <= _OPTION_COLUMN - 2:
        body = textwrap.wrap(help, width - _OPTION_COLUMN)
        first = head.ljust(_OPTION_COLUMN) + (body[0] if body else "")
        return [first.rstrip(), *(" " * _OPTION_COLUMN + line for line in body[1:])]
    body = textwrap.wrap(help, width - 8)
    heads = textwrap.wrap(head.strip(), width - 2, initial_indent="  ", subsequent_indent="    ",
                          break_on_hyphens=False, break_long_words=False)  # fmt: skip
    return [*heads, *("        " + line for line in body)]


def help_text(command: Command, width: int = HELP_WIDTH) -> str:
    """``kvplan COMMAND --help``."""
    usage = " ".join(p.name if p.required else f"[{p.name}]" for p in command.positionals)
    lines = [f"Usage: kvplan {command.name}{' ' + usage if usage else ''} [options]", ""]
    lines += textwrap.wrap(command.summary, width)
    if command.positionals:
        lines += ["", "Arguments:"]
        for p in command.positionals:
            lines += _entry(p.name, None, p.help, width)
    settings = command.settings
    for group in dict.fromkeys(s.group for s in settings):
        lines += ["", f"{GROUPS.get(group, group.capitalize())}:"]
        for s in settings:
            if s.group == group:
                lines += _entry(", ".join(s.flags + s.negate), s.metavar, command.help_of(s), width)
    if "flash_attn" in command.dests:
        lines += ["", *textwrap.wrap(PASTED, width)]
    lines += ["", "Help:"]
    lines += _entry("-h, --help", None, "show this help and exit", width)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def top_help() -> str:
    """``kvplan --help``."""
    lines = ["Usage: kvplan COMMAND [ARGS] [options]", "", SUMMARY, "", "Commands:"]
    lines += [f"  {c.name:<10}{c.brief}" for c in COMMANDS.values()]
    lines += [
        "",
        "Options:",
        "  -h, --help             show this help, or a command's: kvplan COMMAND --help",
        "  --version              show kvplan's version",
        "  --install-completion   install completion for the current shell (bash, zsh,",
        "                         fish, PowerShell)",
        "  --show-completion      show the completion script, to copy or customise",
        "",
        "Exit codes: 0 yes, 1 no (does not fit, a budget fails), 2 usage error,",
        "3 bad input, 4 unsupported, 70 internal error, 74 output error.",
    ]
    return "\n".join(lines) + "\n"
