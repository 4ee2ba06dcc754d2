"""Reading llama.cpp startup logs (kvplan/sources/llamacpp_log.py): any prefix, ANSI colours, several runs (the last
kept), and hostile files — binary, empty, lines of megabytes — get one clear error or a bounded read."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.errors import BadInputError
from kvplan.sources.llamacpp_log import MAX_LINE, parse_lines, read_log

REAL = FIXTURES / "logs" / "llamacpp" / "gemma-3-270m-np4.log"


def test_prefixes_and_colours_do_not_matter(tmp_path: Path) -> None:
    lines = REAL.read_text().splitlines()
    plain = parse_lines(line.split(" I ", 1)[-1] for line in lines)  # llama-server's plain lines
    journald = parse_lines(f"Dec 04 17:00:01 gpu1 llama-server[812]: \x1b[32m{line}\x1b[0m" for line in lines)
    own = read_log(str(REAL))
    assert plain == journald == own
    assert [c.cells for c in own.caches] == [4096, 1024] and own.setting("n_seq_max") == 4


def test_several_runs_keep_the_last(tmp_path: Path) -> None:
    first = (FIXTURES / "logs" / "llamacpp" / "gemma-3-270m-default-c4096.log").read_text()
    path = tmp_path / "server.log"
    path.write_text(first + "some request lines\n" + REAL.read_text())
    log = read_log(str(path))
    assert log.runs == 2 and log.setting("n_seq_max") == 4 and len(log.caches) == 2


def test_a_line_of_megabytes_is_cut_not_held(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    path.write_bytes(b"x" * (5 * MAX_LINE) + b"\n" + REAL.read_bytes())
    assert read_log(str(path)).setting("n_ctx") == 16384


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a llama.cpp, vLLM or SGLang startup log"),
        (b"INFO vllm serving\n", "not a llama.cpp, vLLM or SGLang startup log"),
        (b"GGUF\x03\x00\x00\x00\x00", "binary data, not a log"),
    ],
)
def test_not_a_log_is_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(content)
    with pytest.raises(BadInputError, match=message):
        read_log(str(path))
    with pytest.raises(BadInputError, match="cannot read the log"):
        read_log(str(tmp_path / "missing.log"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=40))
def test_any_text_parses_or_is_empty(lines: list[str]) -> None:
    log = parse_lines(lines)  # never raises; a line that matches nothing is ignored
    assert log.runs >= 0 and all(c.cells >= 0 for c in log.caches)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=4000))
def test_any_bytes_are_a_log_or_one_clear_error(data: bytes) -> None:
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        error, log = "", None
        try:
            log = read_log(f.name)
        except BadInputError as exc:
            error = str(exc)
        if error:
            assert "not a llama.cpp, vLLM or SGLang startup log" in error or "binary data" in error
        else:  # read: it held a llama.cpp line
            assert log is not None and (log.model or log.caches or log.context)


def test_older_builds_names_are_read() -> None:
    """2025's builds printed the KV cache as llama_kv_cache_unified and n_ctx_seq as n_ctx_per_seq."""
    lines = [
        line.replace("llama_kv_cache:", "llama_kv_cache_unified:").replace("n_ctx_seq  ", "n_ctx_per_seq")
        for line in REAL.read_text().splitlines()
    ]
    old, new = parse_lines(lines), read_log(str(REAL))
    assert old.caches == new.caches and old.setting("n_ctx_seq") == new.setting("n_ctx_seq") == 4096
    assert [b.mib for b in old.buffers] == [b.mib for b in new.buffers]
