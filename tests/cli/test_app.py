"""The command line is Typer's, generated from the one table: every command and option, llama.cpp's exact flags
before Click's short-option rules, values kept as typed (no pydantic), Click's own errors in kvplan's words, shell
completion from the table's values."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer
import typer.core
from helpers import ROOT, kv

from kvplan.cli.app import COMPLETE_VAR, application, prepass
from kvplan.options.commands import COMMANDS
from kvplan.options.settings import SETTINGS, SETTINGS_BY_DEST


def test_every_command_and_option_is_a_typer_one() -> None:
    group = typer.main.get_command(application(COMMANDS))
    assert isinstance(group, typer.core.TyperGroup) and set(group.commands) == set(COMMANDS)  # type: ignore[attr-defined]
    for name, command in COMMANDS.items():
        click = group.commands[name]  # type: ignore[attr-defined]
        assert isinstance(click, typer.core.TyperCommand)
        declared = {
            o for p in click.params if isinstance(p, typer.core.TyperOption) for o in [*p.opts, *p.secondary_opts]
        }
        spellings = {f for s in command.settings for f in (*s.flags, *s.negate)}
        assert declared == spellings, name


def test_the_table_is_consistent() -> None:
    """Within a command every spelling means one setting; every setting is some command's and has its help;
    file keys are unique."""
    for command in COMMANDS.values():
        flags = [f for s in command.settings for f in (*s.flags, *s.negate)]
        assert len(flags) == len(set(flags)), command.name
    used = {d for c in COMMANDS.values() for d in c.dests}
    assert used == set(SETTINGS_BY_DEST)
    keys = [k for s in SETTINGS for k in (s.file_key, *s.aliases) if k is not None]
    assert len(keys) == len(set(keys)) and all(s.help for s in SETTINGS)


def test_typers_coercion_hook_is_there() -> None:
    """kvplan keeps values as typed through Typer 0.29's per-parameter coercion slot; a Typer that moves it must
    fail here, not import pydantic on every run."""
    assert typer.__version__.startswith("0.29.")
    assert "_runtime_param" in typer.core._TyperParameter.__annotations__
    assert callable(typer.core._TyperParameter.get_runtime_param)


def test_a_parse_imports_no_pydantic_and_no_rich() -> None:
    code = (
        "import io, sys\n"
        "from kvplan.cli.app import parse\n"
        "call = parse(['fit', 'm', '-c', '32k', '-ngl', '-1', '-fa', 'on', '-kvu', '--gpu', 'L4'], io.StringIO())\n"
        "print({k: v.value for k, v in call.raw.items()})\n"
        "print('pydantic' in sys.modules, 'rich' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    values, modules = out.splitlines()
    assert values == "{'gpu': 'L4', 'ctx_size': '32k', 'kv_unified': True, 'flash_attn': 'on', 'n_gpu_layers': '-1'}"
    assert modules == "False False"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # Click would read these by its short-option rules; llama.cpp refuses each
        (["estimate", "llama-3.1-8b", "-c4096"], "no such option: -c4096"),
        (["estimate", "llama-3.1-8b", "-cmoe"], "-cmoe is an option of `kvplan fit`, not of `kvplan estimate`"),
        (["estimate", "llama-3.1-8b", "-ngl", "3"], "-ngl is an option of `kvplan fit`, not of `kvplan estimate`"),
        (["estimate", "llama-3.1-8b", "-ctkk", "f16"], "no such option: -ctkk (did you mean -ctk?)"),
        (["estimate", "llama-3.1-8b", "-kvu=1"], "-kvu is a switch and takes no value"),
        (["estimate", "llama-3.1-8b", "-c"], "-c needs a value (N)"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "-tp", "2"], "-tp: is a serving-engine setting; for llama.cpp use -ts"),
        (["fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "L4", "-ctk", "q8_0"], "-ctk: is a llama.cpp setting"),
        (["simulate", "llama-3.1-8b", "--gpu", "L4", "--request-rate", "1", "--no-async-scheduling"],
         "--no-async-scheduling: is a serving-engine setting"),
    ],
)  # fmt: skip
def test_llama_cpp_spelling_is_exact(args: list[str], message: str) -> None:
    r = kv(*args)
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    j = kv(*args[:2], "-o", "json", *args[2:])
    assert j.json()["error"]["kind"] == "usage" and message in j.json()["error"]["message"]


def test_values_that_look_like_flags_and_equals_forms() -> None:
    base = ["fit", "llama-3.1-8b", "--gpu", "RTX-4090", "-c", "8k", "--fit", "off", "-o", "json"]
    auto = kv(*base, "-ngl", "-1").json()
    assert auto == kv(*base, "-ngl=-1").json() == kv(*base, "--n-gpu-layers=auto").json()
    a = kv("estimate", "llama-3.1-8b", "-c=4096", "-o", "json").json()
    b = kv("estimate", "llama-3.1-8b", "--ctx-size=4k", "-o=json").json()
    assert a == b and a["memory"]["total_bytes"] == 512 << 20
    # the spelling typed names the value in errors: -c, or --ctx
    assert "--ctx: 'x' is not a count" in kv("estimate", "llama-3.1-8b", "--ctx", "x").stderr
    # a switch's negations, beyond its spellings, each turn it off
    on = ["fit", "qwen3-next-80b-a3b", "--engine", "sglang", "--gpu", "H100-80GB", "-o", "json"]
    assert kv(*on, "--disable-radix-cache").json() == kv(*on, "--no-enable-prefix-caching").json()
    assert kv(*on, "--disable-radix-cache").json() != kv(*on).json()


def test_help_is_anywhere_and_the_command_is_required() -> None:
    assert kv("fit", "llama-3.1-8b", "-c", "4k", "--help").stdout == kv("fit", "-h").stdout
    assert kv("fit", "-h").stdout.startswith("Usage: kvplan fit MODEL [options]")
    r = kv("estimate", "a", "b")
    assert r.exit_code == 2 and "unexpected argument 'b'" in r.stderr


def _complete(words: str, env: dict[str, str] | None = None) -> list[str]:
    environ = {**os.environ, COMPLETE_VAR: "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "0", **(env or {})}
    environ["COMP_CWORD"] = str(len(words.split(" ")) - 1)
    out = subprocess.run([sys.executable, "-m", "kvplan"], capture_output=True, text=True, env=environ, cwd=ROOT)
    return out.stdout.split()


def test_shell_completion_from_the_table() -> None:
    assert _complete("kvplan fi") == ["fit"]
    assert _complete("kvplan estimate m -ct") == ["-ctk", "-ctv", "-ctkd", "-ctvd"]
    assert _complete("kvplan estimate m -fa ") == ["on", "off", "auto"]
    assert _complete("kvplan estimate m -ctk q8") == ["q8_0"]
    assert _complete("kvplan fit m --engine ") == ["llama.cpp", "vllm", "sglang", "trtllm"]
    assert "H100-80GB" in _complete("kvplan fit m --gpu H1")
    assert _complete("kvplan estimate llama-3.1-") == ["llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b"]
    assert _complete("kvplan models -o ") == ["table", "json", "markdown", "csv"]
    zsh = {COMPLETE_VAR: "complete_zsh", "_TYPER_COMPLETE_ARGS": "kvplan estimate m --units "}
    assert "si" in " ".join(_complete("", zsh))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_and_install_completion(shell: str, tmp_path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    show = subprocess.run([sys.executable, "-m", "kvplan", "--show-completion", shell], capture_output=True,
                          text=True, env=env, cwd=ROOT)  # fmt: skip
    assert show.returncode == 0 and "_KVPLAN_COMPLETE" in show.stdout, show.stderr
    done = subprocess.run([sys.executable, "-m", "kvplan", "--install-completion", shell], capture_output=True,
                          text=True, env=env, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0 and "completion installed" in done.stdout, done.stderr
    assert any("_KVPLAN_COMPLETE" in p.read_text() for p in tmp_path.rglob("*") if p.is_file())


def test_prepass_rewrites_for_click() -> None:
    """Options first, each with its value whatever it looks like, then the arguments after ``--`` (a model named
    like a flag is an argument there)."""
    args, line = prepass(COMMANDS["fit"], ["-c=32k", "-ngl", "-1", "-kvu", "--", "-odd.gguf"])
    assert args == ["-c", "32k", "-ngl", "-1", "-kvu", "--", "-odd.gguf"]
    assert line.spelled == {"ctx_size": "-c", "n_gpu_layers": "-ngl", "kv_unified": "-kvu"}


def test_the_groups_help_is_what_kvplan_help_prints() -> None:
    """`kvplan --help` is printed without building the eight commands; it is the Typer group's own help."""
    import io

    from kvplan.cli.app import _main

    out = io.StringIO()
    _main(application(COMMANDS), ["--help"], out)
    assert out.getvalue() == kv("--help").stdout == kv().stdout
