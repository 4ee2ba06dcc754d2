"""Rich draws the terminal format: colour and emphasis on a terminal (NO_COLOR drops the colours), never an ANSI
code in a pipe or a file whatever FORCE_COLOR says, cells printed as typed, progress only on a terminal."""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys

import pytest
from helpers import EXAMPLES, ROOT

from kvplan.cli import run
from kvplan.render.terminal import Grid, Line, Piece, draw

ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(*args: str) -> str:
    out = Terminal()
    run(list(args), out, io.StringIO(), 100)
    return out.getvalue()


def test_a_terminal_gets_emphasis_and_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = _run("check", str(EXAMPLES / "deployments.yaml"))
    assert text.startswith("\x1b[1mkvplan check: 6 deployment(s)")  # the answer, bold
    assert "\x1b[32mPASS" in text  # a status, green
    bad = _run("fit", "qwen3-32b", "--gpu", "RTX-4090", "-c", "128k", "--fit", "off")
    assert bad.startswith("\x1b[1;31mllama.cpp: does not fit")  # a "no", bold red
    assert "\x1b[1;33mwarning:" in bad  # a warning's label, yellow
    # the same text, with the codes taken out, as a pipe gets it (cut for 100 columns)
    plain = io.StringIO()
    run(["fit", "qwen3-32b", "--gpu", "RTX-4090", "-c", "128k", "--fit", "off"], plain, io.StringIO(), 100)
    assert ANSI.sub("", bad) == plain.getvalue()


def test_no_color_keeps_the_emphasis_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    text = _run("check", str(EXAMPLES / "deployments.yaml"))
    assert "\x1b[1m" in text and not COLOUR.search(text)


def test_never_an_escape_code_in_a_pipe() -> None:
    env = {"PATH": "/usr/bin:/bin", "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "CLICOLOR_FORCE": "1", "TERM": "xterm"}
    for args in (["check", str(EXAMPLES / "deployments.yaml")], ["curve", "gemma-3-27b"]):
        r = subprocess.run([sys.executable, "-m", "kvplan", *args], capture_output=True, text=True, cwd=ROOT, env=env)
        assert "\x1b" not in r.stdout and "\x1b" not in r.stderr, args
        assert all(line == line.rstrip() for line in r.stdout.splitlines())


def test_cells_are_data_and_lines_end_clean() -> None:
    grid = Grid("  ", ("Name", "Count"), (10, 5), (False, True), (("[bold]x", "1"), (":x: [1]", "22")), ("total", "23"))
    for colour in (False, True):
        text = ANSI.sub("", draw([Line(Piece("[red]a :x:", "bold")), grid], colour))
        assert text.splitlines() == [
            "[red]a :x:",
            "  Name        Count",
            "  ─────────────────",
            "  [bold]x         1",
            "  :x: [1]        22",
            "  ─────────────────",
            "  total          23",
        ]


def test_progress_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long simulation shows its progress on a terminal's stderr, cleared when it ends; a pipe gets none."""
    from kvplan.cli import progress

    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    args = ["simulate", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB", "--request-rate", "10",
            "--duration", "20", "-o", "json"]  # fmt: skip
    err = Terminal()
    assert run(args, io.StringIO(), err) == 0
    assert "simulating" in err.getvalue() and "requests" in err.getvalue()
    quiet = io.StringIO()
    assert run(args, io.StringIO(), quiet) == 0 and quiet.getvalue() == ""


def test_the_library_reports_progress_to_a_callback_and_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    import kvplan
    from kvplan.commands import simulate
    from kvplan.options.build import build
    from kvplan.progress import Step

    steps: list[Step] = []
    raw = {"engine": "vllm", "gpu": "H100-80GB", "request_rate": "10", "duration": "20"}
    from kvplan.capacity.request import Origin, Raw

    req = build("simulate", {"MODEL": "llama-3.1-8b"}, {k: Raw(v, Origin(k)) for k, v in raw.items()})
    doc = simulate(req, progress=steps.append)  # type: ignore[arg-type]
    assert steps and steps[-1].task == "simulating" and steps[-1].unit == "s" and steps[-1].total == 20
    assert all(a.done <= b.done for a, b in itertools.pairwise(steps))
    assert doc.to_dict() == kvplan.simulate("llama-3.1-8b", **raw).to_dict()
    assert capfd.readouterr() == ("", "")
