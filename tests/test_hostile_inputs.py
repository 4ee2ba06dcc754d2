"""Arbitrary text as a spec, a deployments file or a config.json: a result or our error, never a traceback."""

from __future__ import annotations

import contextlib
import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.errors import KvplanError
from kvplan.sources.hf_config import config_to_metadata
from kvplan.sources.spec import load_spec_text

YAML_ATOMS = st.sampled_from(
    [
        "arch: llama",
        "arch: gemma3",
        "metadata:",
        "  block_count: 2",
        "  block_count: -3",
        "  context_length: 0",
        "  embedding_length: 64",
        "  attention:",
        "    head_count: [1, 2]",
        "    head_count_kv: x",
        "    head_count: 8",
        "    sliding_window: 4",
        "    sliding_window_pattern: [true, false]",
        "name: [a]",
        "params: 1e9",
        "- x",
        "{",
        "  nextn_predict_layers: 5",
        "  ssm: {conv_kernel: 4}",
        "  attention: {key_length: 0}",
        "\t",
        "!!python/object x",
    ]
)


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(YAML_ATOMS, max_size=12))
def test_specs_end_in_a_model_or_our_error(lines: list[str]) -> None:
    with contextlib.suppress(KvplanError):
        load_spec_text("\n".join(lines), "fuzz.yaml")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)
CONFIG_KEYS = st.sampled_from(
    [
        "architectures",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "text_config",
        "sliding_window",
        "layer_types",
    ]
)


@settings(max_examples=300, deadline=2000)
@given(st.dictionaries(CONFIG_KEYS, JSON_VALUES | st.just(["LlamaForCausalLM"]) | st.integers(1, 64), max_size=10))
def test_configs_end_in_metadata_or_our_error(cfg: dict) -> None:
    json.dumps(cfg)
    with contextlib.suppress(KvplanError):
        config_to_metadata(cfg, "config.json")


DEPLOY_ATOMS = st.sampled_from(
    [
        "deployments:",
        "  - model: llama-3.1-8b",
        "  - name: a",
        "    ctx_per_seq: 32k",
        "    ctx_size: -1",
        "    parallel: [1]",
        "    ctx: 4k",
        "    max_model_len: 8k",
        "    n_gpu_layers: all",
        "    memory: 24",
        "    gpu: RTX-4090",
        "    memory: [24GiB, x]",
        "    budgets:",
        "      max_kv: 8GiB",
        "      headroom: 150%",
        "      min_ctx: 4k",
        "    engine: vllm",
        "    tp: 0",
        "- x",
        "deployments: 3",
        "    rs_seq: two",
        "{",
        "    params: eight",
        "    flash_attn: on",
        "    flash_attn: maybe",
        "    tensor_split: a,b",
        "    kv_unified: 3",
        "    gpu_memory_utilization: 2",
    ]
)


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DEPLOY_ATOMS, max_size=12))
def test_deployment_files_end_in_a_list_or_our_error(tmp_path_factory, lines: list[str]) -> None:
    from kvplan.checks.deployments import load_deployments

    path = tmp_path_factory.mktemp("d") / "d.yaml"
    path.write_text("\n".join(lines))
    with contextlib.suppress(KvplanError):
        load_deployments(str(path))


ARGV_ATOMS = st.sampled_from(
    [
        "estimate",
        "fit",
        "compare",
        "curve",
        "check",
        "models",
        "gpus",
        "llama-3.1-8b",
        "gemma-3-27b",
        "-c",
        "32k",
        "--ctx-per-seq",
        "0",
        "-1",
        "-np",
        "300",
        "--gpu",
        "RTX4090",
        "H100-80GBx3",
        "",
        "--memory",
        "24",
        "1e400",
        "nan",
        "--engine",
        "VLLM",
        "--max-model-len",
        "-tp",
        "3",
        "-ts",
        "inf,1",
        "-ngl",
        "auto",
        "--params",
        "8",
        "-ctk",
        "q8",
        "-o",
        "json",
        "--units",
        "si",
        "--cache-types",
        "auto",
        "--max-total",
        "1GiB",
        "--min-ctx",
        "--headroom",
        "150%",
        "--weights",
        "fp4",
        "-fa",
        "maybe",
        "--kv-cache-dtype",
        "fp8",
        "--",
        "-h",
    ]
)


@settings(max_examples=300, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ARGV_ATOMS, max_size=10))
def test_any_command_line_ends_in_a_documented_exit_code(argv: list[str]) -> None:
    """Whatever is typed: a result or one line on stderr with a documented exit code; never a bug (70)."""
    import io

    from kvplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    code = run(argv, out, err)
    assert code in (0, 1, 2, 3, 4), (argv, err.getvalue())
    if code >= 2:
        assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue(), (argv, err.getvalue())


# --- crafted files: each ends in one line on stderr with a documented code, quickly ---------------------------

import os  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from helpers import ORACLE, kv  # noqa: E402

LLAMA = ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, '
         '"max_position_embeddings": 4096, "num_hidden_layers": %s}')  # fmt: skip


def _nested_yaml(depth: int) -> str:
    return "arch: llama\nmetadata:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(depth)) + "  " * depth + "x"


CRAFTED = [
    # (file name, content, command, exit code, words in the message)
    ("deep.yaml", _nested_yaml(500), "estimate", 3, "nested deeper than"),
    ("bomb.yaml", "a: &a [" + ",".join(["x"] * 50) + "]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 50) + "]\n" for i in range(6)),
     "estimate", 3, "aliases expanding"),
    ("big.yaml", "arch: llama\n" + "# " + "x" * (17 << 20) + "\n", "estimate", 3, "too large"),
    ("digits.yaml", "arch: llama\nmetadata:\n  block_count: " + "9" * 5000 + "\n", "estimate", 3, "invalid YAML"),
    ("deep.json", "[" * 2000 + "]" * 2000, "estimate", 3, "nested deeper"),
    ("nan.json", LLAMA % "NaN", "estimate", 3, "NaN is not a number JSON allows"),
    ("inf.json", LLAMA % "Infinity", "estimate", 3, "Infinity is not a number JSON allows"),
    ("huge.json", LLAMA % "1e400", "estimate", 3, "1e400 is out of range"),
    ("digits.json", LLAMA % ("9" * 5000), "estimate", 3, "an integer of 5000 digits"),
    ("layers.json", LLAMA % "1000000000", "estimate", 3, "more than llama.cpp's 512"),
    ("jamba.json", '{"architectures": ["JambaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, '
     '"num_key_value_heads": 2, "max_position_embeddings": 4096, "num_hidden_layers": 8, "attn_layer_period": 0, '
     '"attn_layer_offset": 1, "mamba_expand": 2}', "estimate", 3,
     "attn_layer_period must be an integer from 1"),
    ("mamba2.json", '{"architectures": ["Mamba2ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, '
     '"expand": 2, "n_groups": "one", "head_dim": 32}', "estimate", 3, "n_groups must be an integer from 0"),
    ("latin1.yaml", "deployments:\n  - model: caf\xe9\n", "check", 3, "not a UTF-8 text file"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "command", "code", "words"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_crafted_files(tmp_path: Path, name: str, content: str, command: str, code: int, words: str) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("latin-1") if name.startswith("latin1") else content.encode())
    started = time.monotonic()
    r = kv(command, str(path))
    assert r.exit_code == code and words in r.stderr and r.stderr.count("\n") == 1, r.stderr[:300]
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("command", "name"), [("estimate", "m.gguf"), ("estimate", "m.yaml"),
                                               ("estimate", "config.json"), ("check", "d.yaml")])  # fmt: skip
def test_fifos_and_devices_are_refused_without_reading(tmp_path: Path, command: str, name: str) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)  # opening it would block forever
    r = kv(command, str(fifo))
    assert r.exit_code == 3 and "not a regular file" in r.stderr
    zero = tmp_path / f"zero-{name}"
    zero.symlink_to("/dev/zero")  # a device that never ends, behind a name that looks right
    r = kv(command, str(zero))
    assert r.exit_code == 3 and "not a regular file" in r.stderr, r.stderr
    r = kv("fit", "llama-3.1-8b", "--gpus-file", "/dev/zero", "--gpu", "L4")
    assert r.exit_code == 3 and "not a regular file" in r.stderr


def test_a_big_sparse_gguf_under_an_address_space_limit(tmp_path: Path) -> None:
    """Headers are read, never mapped: a 4 GiB model is sized by a process limited to 1 GiB of address space."""
    import resource
    import subprocess
    import sys

    src = (ORACLE / "real" / "llama-3.1-8b.gguf").read_bytes()
    big = tmp_path / "big.gguf"
    big.write_bytes(src)
    with open(big, "r+b") as fh:
        fh.truncate(4 << 30)  # sparse: no disk used

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    out = subprocess.run([sys.executable, "-m", "kvplan", "estimate", str(big), "-c", "4k", "-o", "csv"],
                         capture_output=True, text=True, preexec_fn=limit, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].endswith(",536870912,131072")


JSON_TEXT = st.one_of(
    st.text(max_size=200),
    st.builds(lambda d: json.dumps(d), JSON_VALUES),
    st.sampled_from([LLAMA % "NaN", LLAMA % "-1", LLAMA % "1e400", LLAMA % "0", LLAMA % "3.5", "[" * 3000, "{}", "1"]),
)


@settings(max_examples=100, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_TEXT)
def test_any_config_json_ends_in_a_documented_exit_code(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.mktemp("c") / "config.json"
    path.write_text(text)
    r = kv("estimate", str(path), "-o", "json")
    assert r.exit_code in (0, 3, 4), r.stderr
    assert r.exit_code == 0 or r.stderr.count("\n") == 1


def _with_string_value(source: Path, path: Path, key: str, length: int) -> Path:
    """``source`` (a GGUF without tensors) with one more key whose string value is ``length`` zero bytes, written
    sparse (no disk used for them)."""
    data = source.read_bytes()
    n_kv = struct.unpack_from("<q", data, 16)[0]
    head = data[:16] + struct.pack("<q", n_kv + 1)
    entry = struct.pack("<Q", len(key)) + key.encode() + struct.pack("<iQ", 8, length)
    with open(path, "wb") as fh:
        fh.write(head + entry)
        fh.seek(len(head) + len(entry) + length)
        fh.write(data[24:])
    return path


def test_a_500_mib_string_value_under_a_1_gib_address_space_limit(tmp_path: Path) -> None:
    """A string value kvplan does not need is skipped unread (issue 26): a 500 MiB one costs no memory, and the
    answer is the file's without it."""
    import resource
    import subprocess
    import sys

    source = ORACLE / "tiny" / "llama-dense.gguf"
    big = _with_string_value(source, tmp_path / "big.gguf", "hostile.text", 500 << 20)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    cmd = [sys.executable, "-m", "kvplan", "estimate", "-c", "4k", "-o", "csv"]
    runs = [
        subprocess.run([*cmd, str(p)], capture_output=True, text=True, preexec_fn=limit, timeout=60)
        for p in (big, source)
    ]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout == runs[1].stdout


def test_a_needed_key_holding_a_skipped_string_is_refused(tmp_path: Path) -> None:
    source = ORACLE / "tiny" / "llama-dense.gguf"
    path = _with_string_value(source, tmp_path / "text.gguf", "hostile.text", 2 << 20)
    assert kv("estimate", str(path), "-c", "4k").exit_code == 0  # a value it can do without
    renamed = tmp_path / "renamed.gguf"  # the architecture's own key renamed away, then given a 2 MiB value
    renamed.write_bytes(source.read_bytes().replace(b"general.architecture", b"general.architecturX", 1))
    bad = _with_string_value(renamed, tmp_path / "bad.gguf", "general.architecture", 2 << 20)
    r = kv("estimate", str(bad), "-c", "4k")
    assert r.exit_code in (3, 4) and r.stderr.count("\n") == 1 and "general.architecture" in r.stderr, r.stderr


# --- issue 26, item 4: every flag of every command with a hostile number or text: a documented exit code -------

from kvplan.options.commands import COMMANDS  # noqa: E402
from kvplan.options.settings import SETTINGS  # noqa: E402

_FLAGS = {s.dest: s for s in SETTINGS}
HOSTILE_NUMBERS = st.sampled_from(
    [
        "inf",
        "-inf",
        "nan",
        "1e-300",
        "5e-324",
        "-0",
        "1e400",
        "0x10",
        "1_000",
        "9" * 40,
        "-1",
        "0",
        "2.5",
        "1e6",
        "\ud800",
        "\x1b[2J",
        "",
        " ",
        "１２",
        "1,inf",
        "1/0",
        "24GiB",
        "-5GiB",
        "1e-300GiB",
        "lognormal:inf:1",
        "uniform:1:1e9",
        "50%",
        "inf%",
        "0.0000001ms",
        "1e300s",
    ]
)
_POSITIONAL = {"MODEL": "llama-3.1-8b", "FILE": "deployments.yaml", "LOG": "x.log"}


@st.composite
def hostile_command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(["estimate", "fit", "compare", "curve", "simulate"]))
    spec = COMMANDS[command]
    dests = [d for d in spec.dests if _FLAGS[d].metavar is not None and d not in ("duration", "trace", "svg",
             "junit", "workload", "gpus_file", "log_model")]  # fmt: skip
    argv = [command, *(_POSITIONAL[p.name] for p in spec.positionals if p.required)]
    if command == "simulate":
        argv += ["--duration", "2", "--request-rate", "2"]
    for dest in draw(st.lists(st.sampled_from(dests), min_size=1, max_size=3)):
        argv += [_FLAGS[dest].flags[0], draw(HOSTILE_NUMBERS)]
    return argv


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_command_lines())
def test_every_flag_with_a_hostile_value_ends_in_a_documented_exit_code(argv: list[str]) -> None:
    import io

    from kvplan.cli import run

    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = run(argv, out, err)
    assert code in (0, 1, 2, 3, 4), (argv, err.getvalue())
    if code >= 2:
        assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue(), (argv, err.getvalue())
    assert time.monotonic() - started < 30, argv
