"""The CLI through Typer's CliRunner: output formats, numbers, exit codes, one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from helpers import kv, ORACLE




def run(*args: str):
    return kv(*args)


def test_estimate_catalog_json_schema() -> None:
    r = run("estimate", "llama-3.1-8b", "--ctx", "32k", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    assert set(doc) >= {"model", "runtime", "memory"}
    assert doc["runtime"]["n_ctx"] == 32768 and doc["runtime"]["engine"] == "llama.cpp"
    # 32 layers × 2 × 8 × 128 × 2 bytes = 131072 bytes per token × 32768
    assert doc["memory"]["per_token_bytes"] == 131072
    assert doc["memory"]["total_bytes"] == 131072 * 32768
    cache = doc["memory"]["caches"][0]
    assert set(cache) >= {
        "name",
        "kind",
        "layers",
        "cells",
        "streams",
        "type_k",
        "type_v",
        "k_bytes",
        "v_bytes",
        "bytes",
    }
    assert cache["k_bytes"] + cache["v_bytes"] == cache["bytes"]


def test_estimate_default_context_is_training_context() -> None:
    doc = json.loads(run("estimate", "qwen3-8b", "-o", "json").stdout)
    assert doc["runtime"]["n_ctx_asked"] == 40960 == doc["model"]["n_ctx_train"]


def test_estimate_gguf_with_llama_cpp_flags() -> None:
    gguf = str(ORACLE / "real" / "qwen3-32b.gguf")
    r = run(
        "estimate",
        gguf,
        "-c",
        "131072",
        "-np",
        "4",
        "-ctk",
        "q8_0",
        "-ctv",
        "q8_0",
        "-fa",
        "on",
        "-o",
        "json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # 64 layers × 2 × (8 × 128 values → 32 q8_0 blocks × 34 bytes = 1088) × 131072 cells
    assert doc["memory"]["total_bytes"] == 64 * 2 * 1088 * 131072
    assert doc["runtime"]["n_ctx_seq"] == 32768 and doc["runtime"]["n_stream"] == 4


def test_table_shows_padding_and_units() -> None:
    r = run("estimate", "llama-3.1-8b", "-c", "1000")
    assert r.exit_code == 0, r.output
    assert "1000 tokens asked → 1024 cells" in r.stdout
    assert "128.00 MiB" in r.stdout and "GB " not in r.stdout


def test_markdown_and_csv_carry_the_same_rows() -> None:
    md = run("estimate", "gemma-3-27b", "-c", "8192", "-o", "markdown").stdout
    assert md.startswith("**gemma-3-27b (gemma3) · llama.cpp · ctx 8192")
    assert "| sliding window |" in md and "| full attention |" in md
    rows = list(csv.DictReader(io.StringIO(run("estimate", "gemma-3-27b", "-c", "8192", "-o", "csv").stdout)))
    assert [r["cache"] for r in rows] == ["full attention", "sliding window", "total"]
    total = json.loads(run("estimate", "gemma-3-27b", "-c", "8192", "-o", "json").stdout)["memory"]["total_bytes"]
    assert int(rows[-1]["bytes"]) == total


def test_models_lists_catalog() -> None:
    r = run("models", "-o", "json")
    names = [m["name"] for m in json.loads(r.stdout)["models"]]
    assert len(names) >= 30 and "llama-3.1-8b" in names and "deepseek-v3" in names


def test_exit_codes_and_one_line_errors(tmp_path: Path) -> None:
    r = run("estimate", "no-such-model")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and "kvplan models" in r.stderr
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    r = run("estimate", str(bad))
    assert r.exit_code == 3 and "bad.gguf: offset 8" in r.stderr and "Traceback" not in r.output
    r = run("estimate", "deepseek-v3", "--mtp")
    assert r.exit_code == 4 and "MTP draft context needs nextn/MTP layers" in r.stderr
    r = run("estimate", "llama-3.1-8b", "-ctv", "q4_0", "-fa", "off")
    assert r.exit_code == 4 and "requires flash attention" in r.stderr
    r = run("estimate", "llama-3.1-8b", "-ctk", "q3_k")
    assert r.exit_code == 4 and "unknown cache type" in r.stderr
    r = run("estimate", "llama-3.1-8b", "-c", "lots")
    assert r.exit_code == 2
    r = run("estimate", "llama-3.1-8b", "-np", "300")
    assert r.exit_code == 4 and "n_seq_max must be <= 256" in r.stderr
    unknown = tmp_path / "u.yaml"
    unknown.write_text("arch: mystery\nmetadata:\n  context_length: 1\n  embedding_length: 1\n  block_count: 1\n")
    r = run("estimate", str(unknown))
    assert r.exit_code == 4 and "'mystery' is not one llama.cpp knows" in r.stderr


def test_no_kv_architecture_reports_zero() -> None:
    r = run("estimate", str(ORACLE / "tiny" / "dream-dense.gguf"), "-o", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["memory"]["total_bytes"] == 0 and doc["memory"]["caches"] == []
    assert any("no KV cache" in n for n in doc["notes"])


def test_python_dash_m_runs_the_cli() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "kvplan", "estimate", "llama-3.1-8b", "-c", "4096", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["memory"]["total_bytes"] == 536870912
    bad = subprocess.run([sys.executable, "-m", "kvplan", "estimate", "nope"], capture_output=True, text=True)
    assert bad.returncode == 3 and bad.stderr.startswith("kvplan: error: nope:") and "Traceback" not in bad.stderr
    # usage errors from the console entry point: one line, exit 2, naming the option
    for argv, expect in (
        (["estimate", "llama-3.1-8b", "-c", "lots"], "kvplan: usage error: Invalid value for --ctx: 'lots'"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "--bogus"], "kvplan: usage error: No such option: --bogus"),
        (["fit", "llama-3.1-8b", "--gpu", "L4", "--engine", "vllm", "--gpu-memory-utilization", "2"],
         "kvplan: usage error: Invalid value for --gpu-memory-utilization"),
        (["nosuchcmd"], "kvplan: usage error: No such command 'nosuchcmd'"),
    ):  # fmt: skip
        r = subprocess.run([sys.executable, "-m", "kvplan", *argv], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith(expect) and len(r.stderr.splitlines()) == 1, r.stderr
    r = subprocess.run([sys.executable, "-m", "kvplan"], capture_output=True, text=True)
    assert "Usage" in r.stdout and r.stderr == ""


def test_mtp_draft_and_rollback_snapshots_in_json() -> None:
    doc = json.loads(
        run(
            "estimate",
            "deepseek-v3.2-exp",
            "-c",
            "32k",
            "--mtp",
            "-ctkd",
            "q8_0",
            "-ctvd",
            "q8_0",
            "-o",
            "json",
        ).stdout
    )
    assert doc["runtime"]["context_type"] == "default" and doc["draft"]["runtime"]["context_type"] == "mtp"
    kinds = [c["kind"] for c in doc["memory"]["caches"]]
    assert kinds == ["attention", "indexer"]
    # the draft: the single nextn layer, 576-wide K latent in q8_0 (18 blocks × 34 bytes) × 32768 cells
    assert doc["draft"]["memory"]["total_bytes"] == 612 * 32768
    assert doc["combined_total_bytes"] == doc["memory"]["total_bytes"] + 612 * 32768
    csv_rows = run("estimate", "deepseek-v3.2-exp", "-c", "32k", "--mtp", "-o", "csv").stdout.splitlines()
    assert csv_rows[0].startswith("context,cache,kind") and any(r.startswith("mtp-draft,") for r in csv_rows)


def test_recurrent_rows_follow_parallel_and_rollback(tmp_path: Path) -> None:
    spec = tmp_path / "lfm.yaml"
    spec.write_text(
        "arch: lfm2\nmetadata:\n  context_length: 32768\n  embedding_length: 1024\n  block_count: 4\n"
        "  shortconv: {l_cache: 3}\n  attention: {head_count: 16, head_count_kv: [0, 8, 0, 0]}\n"
    )
    doc = json.loads(run("estimate", str(spec), "-c", "4096", "-np", "2", "--rs-seq", "3", "-o", "json").stdout)
    recurrent = next(c for c in doc["memory"]["caches"] if c["kind"] == "recurrent")
    # LFM2 keeps n_rs_seq: rows = 2 sequences × (1 + 3); r = 1024 × (3 - 1) f32 values, s = 0 (short conv)
    assert recurrent["cells"] == 8 and recurrent["layers"] == [0, 2, 3]
    assert recurrent["k_bytes"] == 3 * 4 * 2048 * 8 and recurrent["v_bytes"] == 0
    assert doc["runtime"]["n_rs_seq"] == 3 and doc["memory"]["per_token_bytes"] == 2 * 8 * 64 * 2
