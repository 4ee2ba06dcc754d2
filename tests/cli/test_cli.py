"""The command line end to end: output formats carrying the same numbers, exit codes, one-line errors."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

from helpers import ORACLE, ROOT, kv


def test_estimate_catalog_json_schema() -> None:
    r = kv("estimate", "llama-3.1-8b", "--ctx-size", "32k", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = r.json()
    assert doc["schema_version"] == 2 and doc["kind"] == "estimate"
    assert doc["answer"] == "llama.cpp KV / state memory: 4.00 GiB (4,294,967,296 bytes)"
    assert doc["runtime"]["n_ctx"] == 32768 and doc["runtime"]["engine"] == "llama.cpp"
    # 32 layers × 2 × 8 × 128 × 2 bytes = 131072 bytes per token × 32768
    assert doc["memory"]["per_token_bytes"] == 131072
    assert doc["memory"]["total_bytes"] == 131072 * 32768
    cache = doc["memory"]["caches"][0]
    assert cache == {
        "name": "attention",
        "kind": "attention",
        "layers": list(range(32)),
        "cells": 32768,
        "streams": 1,
        "type_k": "f16",
        "type_v": "f16",
        "k_bytes": 2 << 30,
        "v_bytes": 2 << 30,
        "bytes": 4 << 30,
        "per_token_bytes": 131072,
        "why": "n_ctx 32,768 padded to 256 → 32,768; 32,768 cells × 1 stream(s), one per sequence",
    }
    assert doc["warnings"] == [] and doc["passed"] is True


def test_estimate_default_context_is_training_context() -> None:
    doc = kv("estimate", "qwen3-8b", "-o", "json").json()
    assert doc["runtime"]["n_ctx_asked"] == 40960 == doc["model"]["n_ctx_train"]


def test_estimate_gguf_with_llama_cpp_flags() -> None:
    gguf = str(ORACLE / "real" / "qwen3-32b.gguf")
    r = kv("estimate", gguf, "-c", "131072", "-np", "4", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on", "-o", "json")
    assert r.exit_code == 0, r.output
    doc = r.json()
    # 64 layers × 2 × (8 × 128 values → 32 q8_0 blocks × 34 bytes = 1088) × 131072 cells
    assert doc["memory"]["total_bytes"] == 64 * 2 * 1088 * 131072
    assert doc["runtime"]["n_ctx_seq"] == 32768 and doc["runtime"]["n_stream"] == 4


def test_table_shows_padding_and_units() -> None:
    r = kv("estimate", "llama-3.1-8b", "-c", "1000")
    assert r.exit_code == 0, r.output
    assert "1,000 tokens asked → 1,024 cells" in r.stdout
    assert "128.00 MiB" in r.stdout and "GB " not in r.stdout


def test_every_format_carries_the_same_answer() -> None:
    # gemma-3-27b: 10 full layers × 2 × 16 heads × 128 × 2 B × 8192 cells = 671,088,640
    #            + 52 window layers × 8192 B × 1536 cells (1024 + ubatch 512) = 654,311,424
    md = kv("estimate", "gemma-3-27b", "-c", "8192", "-o", "markdown").stdout
    assert md.startswith("**llama.cpp KV / state memory: 1.23 GiB (1,325,400,064 bytes)**")
    assert "| sliding window |" in md and "| full attention |" in md
    rows = list(csv.DictReader(io.StringIO(kv("estimate", "gemma-3-27b", "-c", "8192", "-o", "csv").stdout)))
    assert [r["cache"] for r in rows] == ["full attention", "sliding window", "total"]
    total = kv("estimate", "gemma-3-27b", "-c", "8192", "-o", "json").json()["memory"]["total_bytes"]
    table = kv("estimate", "gemma-3-27b", "-c", "8192", "--units", "bytes").stdout
    assert int(rows[-1]["bytes"]) == total == 1325400064 and f"{total:,}" in table


def test_models_lists_catalog() -> None:
    r = kv("models", "-o", "json")
    names = [m["name"] for m in r.json()["models"]]
    assert "llama-3.1-8b" in names and "deepseek-v3" in names and len(names) == 70
    gemma = kv("models", "--arch", "gemma3", "-o", "csv").stdout.splitlines()
    assert gemma[0].startswith("name,family,arch,layers") and all(",gemma3," in line for line in gemma[1:])
    granite = kv("models", "--family", "Granite", "-o", "json").json()["models"]
    assert [m["name"] for m in granite] == ["granite-4.0-h-micro", "granite-4.0-h-small", "granite-4.0-h-tiny"]
    assert {m["family"] for m in granite} == {"granite"}


def test_models_filter_that_matches_nothing_names_what_there_is() -> None:
    r = kv("models", "--family", "lama")
    assert r.exit_code == 2 and "--family: no catalog model of 'lama'; the catalog has: cohere," in r.stderr
    assert kv("models", "--arch", "qwen", "--family", "qwen").exit_code == 2  # qwen is a family, not an arch


def test_catalog_hybrids_match_their_checkpoint_configs() -> None:
    """The Granite-4.0-H and Falcon-H1 entries (facts + transformers' defaults through the converter port) size
    the state and KV as the checkpoints' config.json do (tests/fixtures/engines/configs)."""
    for name in ("granite-4.0-h-small", "granite-4.0-h-tiny", "falcon-h1-7b"):
        config = ROOT / "tests/fixtures/engines/configs" / name / "config.json"
        a = kv("estimate", name, "-c", "32768", "-np", "2", "-o", "json").json()["memory"]["total_bytes"]
        b = kv("estimate", str(config), "-c", "32768", "-np", "2", "-o", "json").json()["memory"]["total_bytes"]
        assert a == b, name
    # hand-checked: Falcon-H1-7B, 44 layers each with 2 KV heads x 128 x (K + V) f16 = 1 KiB per token and layer
    doc = kv("estimate", "falcon-h1-7b", "-c", "4096", "-o", "json").json()["memory"]
    kv_bytes = sum(c["bytes"] for c in doc["caches"] if c["kind"] == "attention")
    assert kv_bytes == 44 * 1024 * 4096


def test_no_kv_architecture_reports_zero() -> None:
    r = kv("estimate", str(ORACLE / "tiny" / "dream-dense.gguf"), "-o", "json")
    assert r.exit_code == 0, r.output
    doc = r.json()
    assert doc["memory"]["total_bytes"] == 0 and doc["memory"]["caches"] == []
    assert any("no KV cache" in n for n in doc["notes"])


def test_python_dash_m_and_the_console_entry_point() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kvplan", "estimate", "llama-3.1-8b", "-c", "4096", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"total_bytes": 536870912' in out.stdout
    bad = subprocess.run([sys.executable, "-m", "kvplan", "estimate", "nope"], capture_output=True, text=True)
    assert bad.returncode == 3 and bad.stderr.startswith("kvplan: error: nope:") and "Traceback" not in bad.stderr
    r = subprocess.run([sys.executable, "-m", "kvplan"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("Usage: kvplan COMMAND") and r.stderr == ""


def test_writing_to_a_full_disk_or_a_closed_pipe(tmp_path: Path) -> None:
    """Environment errors are not bugs: a full disk is exit 74 with one line; a reader that went away is 141."""
    full = subprocess.run(f"{sys.executable} -m kvplan models > /dev/full", shell=True, capture_output=True, text=True)
    assert full.returncode == 74 and full.stderr == "kvplan: error: cannot write the output: No space left on device\n"
    pipe = subprocess.run(
        f"{sys.executable} -m kvplan models -o csv | head -1", shell=True, capture_output=True, text=True
    )
    assert pipe.stdout.startswith("name,") and pipe.stderr == ""


def test_mtp_draft_and_rollback_snapshots_in_json() -> None:
    doc = kv(
        "estimate", "deepseek-v3.2-exp", "-c", "32k", "--mtp", "-ctkd", "q8_0", "-ctvd", "q8_0", "-o", "json"
    ).json()
    assert doc["runtime"]["context_type"] == "default" and doc["draft"]["runtime"]["context_type"] == "mtp"
    assert [c["kind"] for c in doc["memory"]["caches"]] == ["attention", "indexer"]
    # the draft: the single nextn layer, 576-wide K latent in q8_0 (18 blocks × 34 bytes) × 32768 cells
    assert doc["draft"]["memory"]["total_bytes"] == 612 * 32768
    assert doc["combined_total_bytes"] == doc["memory"]["total_bytes"] + 612 * 32768
    csv_rows = kv("estimate", "deepseek-v3.2-exp", "-c", "32k", "--mtp", "-o", "csv").stdout.splitlines()
    assert csv_rows[0].startswith("context,cache,kind") and any(r.startswith("mtp-draft,") for r in csv_rows)
    # the total row counts distinct layers: 61 trunk layers hold an attention and an indexer cache, + 1 nextn
    assert csv_rows[-1].startswith("main+mtp-draft,total,,62,")


def test_recurrent_rows_follow_parallel_and_rollback(tmp_path: Path) -> None:
    spec = tmp_path / "lfm.yaml"
    spec.write_text(
        "arch: lfm2\nmetadata:\n  context_length: 32768\n  embedding_length: 1024\n  block_count: 4\n"
        "  shortconv: {l_cache: 3}\n  attention: {head_count: 16, head_count_kv: [0, 8, 0, 0]}\n"
    )
    doc = kv("estimate", str(spec), "-c", "4096", "-np", "2", "--rs-seq", "3", "-o", "json").json()
    recurrent = next(c for c in doc["memory"]["caches"] if c["kind"] == "recurrent")
    # LFM2 keeps n_rs_seq: rows = 2 sequences × (1 + 3); r = 1024 × (3 - 1) f32 values, s = 0 (short conv)
    assert recurrent["cells"] == 8 and recurrent["layers"] == [0, 2, 3]
    assert recurrent["k_bytes"] == 3 * 4 * 2048 * 8 and recurrent["v_bytes"] == 0
    assert doc["runtime"]["n_rs_seq"] == 3 and doc["memory"]["per_token_bytes"] == 2 * 8 * 64 * 2


def test_pure_recurrent_models_have_no_cells() -> None:
    out = kv("estimate", "mamba-codestral-7b").stdout
    assert "Context       no KV cells: recurrent state only (1 row(s) per layer)" in out
    assert "1,048,576 cells" not in out


def test_help_fits_80_columns_and_names_the_arguments() -> None:
    from kvplan.options.commands import COMMANDS

    for args in [["--help"], *[[name, "--help"] for name in COMMANDS]]:
        r = kv(*args)
        assert r.exit_code == 0 and all(len(line) <= 80 for line in r.stdout.splitlines()), args
        assert "{" not in r.stdout.splitlines()[0], r.stdout.splitlines()[0]
    assert kv("fit", "--help").stdout.startswith("Usage: kvplan fit MODEL [options]")
    assert "-ngl, --n-gpu-layers, --gpu-layers N|auto|all" in kv("fit", "--help").stdout


def test_total_row_counts_distinct_layers() -> None:
    # DeepSeek-V3.2: 61 trunk layers, each with an MLA cache and an indexer cache: 61 layers, not 122
    rows = kv("estimate", "deepseek-v3.2-exp", "-c", "4k", "-o", "csv").stdout.splitlines()
    assert rows[1].startswith("main,attention,attention,61,") and rows[2].startswith("main,indexer,indexer,61,")
    assert rows[-1].startswith("main,total,,61,")


def test_check_reports_the_context_that_really_fits() -> None:
    """min_ctx reports the longest context that fits (searched up to the trained context), not the one asked."""
    from helpers import EXAMPLES

    doc = kv("check", str(EXAMPLES / "deployments.yaml"), "-o", "json").json()
    chat = next(d for d in doc["deployments"] if d["name"] == "chat-8b-llamacpp")
    min_ctx = next(b for b in chat["budgets"] if b["budget"] == "min_ctx")
    assert min_ctx["limit"] == 32768 and min_ctx["actual"] == 66560 and min_ctx["unit"] == "tokens"
    # the boundary: 4 sequences of 66,560 tokens fit on the RTX-4090, 66,816 do not (CUDA's flash attention holds
    # an f16 copy of one layer's q8_0 K and V in the compute buffer: 1.11 GiB)
    base = ["fit", "llama-3.1-8b", "--gpu", "RTX-4090", "--params", "8.03e9", "--weights", "q4_k_m", "-np", "4",
            "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on", "--fit", "off"]  # fmt: skip
    assert kv(*base, "--ctx-per-seq", "66560").exit_code == 0
    assert kv(*base, "--ctx-per-seq", "66816").exit_code == 1


def test_the_estimate_path_imports_nothing_heavy() -> None:
    """`kvplan estimate CATALOG-MODEL -o json` reads the compiled catalog and plans llama.cpp: no YAML, no
    gguf/numpy, no GGUF reader (the catalog's arrays are sources.values'), no serving-engine code, no simulation;
    of the framework, Typer without pydantic (kvplan.cli.app keeps values as typed), and no Rich (JSON is drawn
    by hand)."""
    code = (
        "import io, sys\n"
        "from kvplan.cli import run\n"
        "assert run(['estimate', 'llama-3.1-8b', '-o', 'json'], io.StringIO(), sys.stderr) == 0\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert "typer" in loaded  # the command line is Typer's
    heavy = {"yaml", "gguf", "numpy", "pydantic", "rich", "kvplan.sources.spec", "kvplan.runtimes.engines",
             "kvplan.simulation", "kvplan.capacity.engines", "kvplan.sources.remote",
             "kvplan.sources.gguf_reader", "kvplan.capacity.llamacpp"}  # fmt: skip
    assert not heavy & loaded, sorted(heavy & loaded)
