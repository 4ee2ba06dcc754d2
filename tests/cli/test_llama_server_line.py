"""A llama-server command line pastes in: -m is MODEL, llama-server's arguments that plan nothing are accepted,
named in a note and kept on the run line, host-memory ones are said to be left out, and the ones whose memory
kvplan does not plan are refused (exit 4) — as llama.cpp's own argument list (common/arg.cpp) has them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import ORACLE, kv

from kvplan.facts.llama_server_args import BY_FLAG, PLANNED, SERVER_ARGS, Effect
from kvplan.options.commands import COMMANDS
from kvplan.options.settings import SETTINGS_BY_DEST

GGUF = str(ORACLE / "real" / "qwen3-32b.gguf")
#: a llama-server line as users paste it (the flags kvplan plans, and others)
PASTED = ["-m", GGUF, "-c", "32768", "-np", "2", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0", "--host", "0.0.0.0",
          "--port", "8080", "-t", "8", "--jinja", "--no-mmap", "--mlock", "--temp", "0.7", "-cb", "--metrics",
          "--chat-template-file", "t.jinja", "--cache-ram", "8192", "--threads_http", "4"]  # fmt: skip


def test_a_pasted_line_plans_what_its_memory_flags_say() -> None:
    pasted = kv("estimate", *PASTED, "-o", "json")
    plain = kv("estimate", GGUF, "-c", "32768", "-np", "2", "-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0", "-o", "json")
    assert pasted.exit_code == 0 and plain.exit_code == 0, pasted.output
    a, b = pasted.json(), plain.json()
    assert a["memory"] == b["memory"] and a["runtime"] == b["runtime"]
    # 64 layers × 2 × 1088 B (8 heads × 128 in q8_0: 32 blocks × 34 B) × 32,768 cells
    assert a["memory"]["total_bytes"] == 64 * 2 * 1088 * 32768
    assert a["notes"][-2] == (
        "llama-server's --host 0.0.0.0, --port 8080, -t 8, --jinja, --no-mmap, --mlock, --temp 0.7, -cb, --metrics, "
        "--chat-template-file t.jinja, --threads_http 4: no memory kvplan plans depends on them (kept on the run line)"
    )
    assert a["notes"][-1].startswith("llama-server's --cache-ram 8192: host memory kvplan does not plan")


def test_the_fit_keeps_them_on_the_run_line() -> None:
    r = kv("fit", *PASTED, "--gpu", "RTX-4090", "--params", "32.8B", "--weights", "q4_k_m", "-o", "json")
    assert r.exit_code == 0, r.output
    args = r.json()["run_args"]
    assert args[-19:] == ["--host", "0.0.0.0", "--port", "8080", "-t", "8", "--jinja", "--no-mmap", "--mlock",
                          "--temp", "0.7", "-cb", "--metrics", "--chat-template-file", "t.jinja", "--cache-ram",
                          "8192", "--threads_http", "4"]  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "code", "message"),
    [
        (["--mmproj", "mm.gguf"], 4, "--mmproj mm.gguf: changes memory in a way kvplan does not plan yet"),
        (["--lora", "a.gguf"], 4, "--lora a.gguf: changes memory"),
        (["--rpc", "host:50052"], 4, "--rpc host:50052: changes memory"),
        (["-dev", "CUDA1"], 4, "-dev CUDA1: changes memory"),
        (["-hf", "org/repo:Q4_K_M"], 4, "-hf org/repo:Q4_K_M: changes memory"),
        (["--control-vector-layer-range", "1", "4"], 4, "--control-vector-layer-range 1 4: changes memory"),
        (["--draft", "16"], 2, "--draft: the argument has been removed. use --spec-draft-n-max"),
        (["--jinja=1"], 2, "--jinja is a switch and takes no value"),
        (["--port"], 2, "--port needs a value"),
        (["-m", GGUF], 2, "give the model once"),
    ],
)
def test_what_kvplan_cannot_plan_is_refused(flags: list[str], code: int, message: str) -> None:
    r = kv("estimate", GGUF, *flags)
    assert r.exit_code == code and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_model_spellings_split_layer_and_the_engines() -> None:
    a = kv("estimate", "--model", GGUF, "-c", "4096", "-o", "json").json()
    assert a == kv("estimate", GGUF, "-c", "4096", "-o", "json").json() | {"notes": a["notes"]}
    w = ("--weight-bytes", "18GiB")  # a metadata-only GGUF: no tensor sizes
    layer = kv("fit", GGUF, *w, "--gpu", "L4x2", "-c", "4096", "-o", "json").json()
    same = kv("fit", GGUF, *w, "--gpu", "L4x2", "-c", "4096", "-sm", "layer", "-mg", "1", "-o", "json").json()
    assert same["devices"] == layer["devices"]  # -mg places nothing with -sm layer
    # llama.cpp reads --ctx_size as --ctx-size (its parser turns _ into - in long flags)
    assert kv("estimate", GGUF, "--ctx_size", "4096", "-o", "json").json()["memory"] == a["memory"]
    vllm = kv("fit", "llama-3.1-8b", "--engine", "vllm", "--gpu", "H100-80GB", "--port", "8000")
    assert vllm.exit_code == 2 and "--port: read as llama-server's argument; with --engine vllm" in vllm.stderr
    # a command without llama.cpp's context has no llama-server line to paste
    assert "no such option: --port" in kv("models", "--port", "1").stderr


def test_a_gguf_is_a_gguf_whatever_its_name(tmp_path: Path) -> None:
    blob = tmp_path / "sha256-6a0746a1ec1a"  # how Ollama stores its models
    shutil.copyfile(GGUF, blob)
    a = kv("estimate", str(blob), "-c", "4096", "-o", "json").json()["memory"]
    assert a == kv("estimate", GGUF, "-c", "4096", "-o", "json").json()["memory"]
    text = tmp_path / "notes"
    text.write_text("GGU")
    assert "not a GGUF (no GGUF magic)" in kv("estimate", str(text)).stderr
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = kv("estimate", str(fifo))  # never opened: a FIFO nobody writes would hang the read
    assert r.exit_code == 3 and "not a GGUF" in r.stderr


def test_the_argument_list_agrees_with_the_settings() -> None:
    """Every spelling llama-server declares for a setting kvplan plans is that setting's; no argument kvplan
    passes through shadows one of them; the two tables share no spelling."""
    for dest, spellings in PLANNED.items():
        s = SETTINGS_BY_DEST[dest]
        assert set(spellings) <= set(s.flags + s.negate), (dest, spellings)
    planned = {f for c in COMMANDS.values() if "flash_attn" in c.dests for s in c.settings for f in s.flags + s.negate
               if s.runtime == "llama.cpp"}  # fmt: skip
    assert not planned & set(BY_FLAG), sorted(planned & set(BY_FLAG))
    assert len(BY_FLAG) == sum(len(a.flags) + len(a.negate) for a in SERVER_ARGS)
    assert {a.effect for a in SERVER_ARGS} == set(Effect)


def test_split_mode_none_puts_everything_on_the_main_gpu() -> None:
    """llama_model_load_from_file_impl with LLAMA_SPLIT_MODE_NONE keeps only devices[main_gpu]: every offloaded
    layer, its KV and the output on that GPU; the others hold nothing. -mg past the GPUs is llama.cpp's error."""
    W = ("--weight-bytes", "18GiB")  # a metadata-only GGUF: no tensor sizes
    two = kv("fit", GGUF, *W, "--gpu", "L4x2", "-c", "4096", "--fit", "off", "-o", "json").json()
    one = kv("fit", GGUF, *W, "--gpu", "L4x2", "-c", "4096", "--fit", "off", "-sm", "none", "-mg", "1", "-o", "json")
    assert one.exit_code == 0, one.output
    doc = one.json()
    assert [d["device"] for d in doc["devices"] if d["device"] != "host"] == ["GPU1"]
    gpu1 = doc["devices"][0]
    assert gpu1["weight_bytes"] == sum(d["weight_bytes"] for d in two["devices"] if d["device"] != "host")
    assert gpu1["kv_bytes"] == sum(d["kv_bytes"] for d in two["devices"] if d["device"] != "host")
    assert doc["run_args"][doc["run_args"].index("-sm") :][:4] == ["-sm", "none", "-mg", "1"]
    again = kv("fit", GGUF, *W, "--gpu", "L4x2", *doc["run_args"], "-o", "json").json()
    assert again["devices"] == doc["devices"]
    bad = kv("fit", GGUF, *W, "--gpu", "L4x2", "-sm", "none", "-mg", "2")
    assert bad.exit_code == 4 and "invalid value for main_gpu: 2 (available devices: 2)" in bad.stderr
    # llama.cpp 2026-10-01: CUDA's backend registers no split buffer type, so make_gpu_buft_list throws
    row = kv("fit", GGUF, *W, "--gpu", "L4x2", "-sm", "row")
    assert row.exit_code == 4 and "device CUDA0 does not support split buffers" in row.stderr
    tensor = kv("fit", GGUF, *W, "--gpu", "L4x2", "-sm", "tensor")
    assert tensor.exit_code == 4 and "-sm tensor: llama.cpp's experimental tensor parallelism" in tensor.stderr
    assert kv("fit", GGUF, *W, "--gpu", "L4x2", "-sm", "rows").exit_code == 2
