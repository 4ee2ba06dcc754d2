"""Issue 26, items 4-6 at the command line: no input ends in exit 70, nothing hostile reaches a terminal or a
file as itself, and invalid counts are refused. Processes where the stream matters (a closed stdout, an encoding
that cannot carry a character), in-process runs elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest
from helpers import kv

HOSTILE = "bad\\ud800name\\x1b[31mred\\rX|pipe\\u202eevil"  # as YAML's double-quoted escapes write them


def _deployments(tmp_path: Path) -> Path:
    path = tmp_path / "deployments.yaml"
    path.write_text(f'deployments:\n  - name: "{HOSTILE}"\n    model: llama-3.1-8b\n    gpu: RTX-4090\n'
                    "    ctx_size: 4096\n")  # fmt: skip
    return path


def _unsafe(text: str) -> list[str]:
    """The characters that could drive a terminal or break a file."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF
            or 0x202A <= ord(c) <= 0x202E]  # fmt: skip


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_names_with_escapes_surrogates_and_overrides_are_escaped(tmp_path: Path, fmt: str) -> None:
    r = kv("check", str(_deployments(tmp_path)), "-o", fmt)
    assert r.exit_code == 0, r.stderr
    assert not _unsafe(r.stdout) and "\\x1b[31mred\\x0dX" in r.stdout and "\\ud800" in r.stdout, r.stdout
    assert "\\u202e" in r.stdout


def test_json_keeps_the_exact_name(tmp_path: Path) -> None:
    r = kv("check", str(_deployments(tmp_path)), "-o", "json")
    assert r.exit_code == 0 and not _unsafe(r.stdout)
    assert r.json()["deployments"][0]["name"] == "bad\ud800name\x1b[31mred\rX|pipe\u202eevil"


def test_junit_is_valid_xml_without_control_characters(tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    assert kv("check", str(_deployments(tmp_path)), "--junit", str(junit)).exit_code == 0
    text = junit.read_text(encoding="utf-8")
    assert not _unsafe(text) and "\\x1b[31mred" in text
    xml.dom.minidom.parseString(text.encode())


def test_an_error_naming_hostile_text_is_one_printable_line(tmp_path: Path) -> None:
    r = kv("estimate", "no\x1b]0;pwned\x07such\rmodel")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and not _unsafe(r.stderr), repr(r.stderr)


def test_a_closed_stdout_is_exit_74_and_a_closed_stderr_is_quiet() -> None:
    closed = subprocess.run([sys.executable, "-m", "kvplan", "models"], stderr=subprocess.PIPE, text=True,
                            timeout=60, preexec_fn=lambda: os.close(1))  # fmt: skip
    assert closed.returncode == 74 and "standard output is closed" in closed.stderr
    quiet = subprocess.run([sys.executable, "-m", "kvplan", "estimate", "no-such-model"], stdout=subprocess.PIPE,
                           text=True, timeout=60, preexec_fn=lambda: os.close(2))  # fmt: skip
    assert quiet.returncode == 3 and quiet.stdout == ""


def test_an_output_encoding_that_cannot_carry_a_character(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        'deployments:\n  - name: "café ☕"\n    model: llama-3.1-8b\n    gpu: RTX-4090\n    ctx_size: 4096\n'
    )
    r = subprocess.run([sys.executable, "-m", "kvplan", "check", str(path)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONIOENCODING": "ascii"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "caf\\xe9 \\u2615" in r.stdout


SIM = ("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "--request-rate", "1", "--duration", "10")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            (
                *SIM,
                "--prompt-len",
                "lognormal:inf:1",
            ),
            2,
            "tokens from 1 to 16,777,216",
        ),
        (
            (
                *SIM,
                "--output-len",
                "uniform:1:99999999999",
            ),
            2,
            "tokens from 1",
        ),
        (("fit", "llama-3.1-8b", "--gpu", "2xRTX-4090", "-fitt", "1,2,3"), 2, "3 margins for 2 GPU(s)"),
        (("fit", "llama-3.1-8b", "--gpu", "2xRTX-4090", "-fitt", ",".join(["1"] * 20_000)), 2, "20000 margins"),
        (("fit", "llama-3.1-8b", "--gpu", "2xRTX-4090", "-ts", "1,1,1"), 2, "3 proportions for 2 GPU(s)"),
        # Python's int() and float() take full-width digits and digit groups; llama.cpp and the engines do not
        (("compare", "llama-3.1-8b", "-np", "１２"), 2, "is not a count"),
        (("fit", "llama-3.1-8b", "--memory", "２４GiB"), 2, "is not a size"),
        (("fit", "llama-3.1-8b", "--gpu", "2xRTX-4090", "-ts", "1_0,1"), 2, "expected proportions"),
        (
            ("simulate", "llama-3.1-8b", "--gpu", "H100-80GB", "--request-rate", "１", "--duration", "5"),
            2,
            "expected a number",
        ),
        (
            (
                "simulate",
                "llama-3.1-8b",
                "--gpu",
                "H100-80GB",
                "--request-rate",
                "1",
                "--duration",
                "5",
                "--prompt-len",
                "1_024",
            ),
            2,
            "expected N",
        ),
    ],
)
def test_values_that_were_exit_70_or_accepted(args: tuple[str, ...], code: int, message: str) -> None:
    r = kv(*args)
    assert r.exit_code == code and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_split_that_rounds_to_zero_is_llama_cpp_default_split() -> None:
    """-ts 1e-300,1e-300 is 0,0 in llama.cpp's floats: its default split by free memory, as no -ts (was exit 70)."""
    tiny = kv("fit", "llama-3.1-8b", "--gpu", "2xRTX-4090", "-c", "8192", "-ts", "1e-300,1e-300", "-o", "json")
    none = kv("fit", "llama-3.1-8b", "--gpu", "2xRTX-4090", "-c", "8192", "-o", "json")
    assert tiny.exit_code == none.exit_code == 0, tiny.stderr
    assert json.loads(tiny.stdout)["devices"] == json.loads(none.stdout)["devices"]


@pytest.mark.parametrize("name", ["no\ud800such.gguf", "\ud800", "a\x00b", "a\x00b.gguf"])
def test_a_name_no_file_system_can_take_is_no_such_file(name: str) -> None:
    """A lone surrogate or a NUL in a path: the file system cannot be asked, so there is no such file (once a
    UnicodeEncodeError: the property test over library keywords found it through `model_draft`)."""
    r = kv("estimate", name)
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and not _unsafe(r.stderr), repr(r.stderr)
    r = kv("fit", "llama-3.1-8b", "--gpu", "RTX-4090", "-md", name)
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and not _unsafe(r.stderr), repr(r.stderr)
