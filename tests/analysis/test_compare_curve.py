"""`compare` and `curve`: hand-checked ratios, llama.cpp's refusals, agreement with `estimate`, golden files."""

from __future__ import annotations

from helpers import kv

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kvplan.analysis.compare import compare
from kvplan.analysis.curve import curve, parse_contexts
from kvplan.facts.ggml_types import cache_type
from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.sources import load_model

GOLDEN = Path(__file__).parent / "golden"


def _rows(report) -> dict[str, dict]:
    return {r["variant"]: r for r in report.rows}


def test_llama_mha_gqa_mqa_ratios() -> None:
    rows = _rows(compare(load_model("llama-3.1-8b"), LlamaCppSettings(), [8192, 32768]))
    gqa = rows["GQA-8 (model)"]
    # 32 layers × 2 × 8 heads × 128 × 2 bytes = 128 KiB per token; MHA has 32 KV heads (4×), MQA 1 (1/8)
    assert gqa["per_token_bytes"] == 131072 and gqa["bytes_at_8192"] == 131072 * 8192
    assert rows["MHA"]["bytes_at_32768"] == 4 * gqa["bytes_at_32768"]
    assert rows["MQA"]["bytes_at_32768"] * 8 == gqa["bytes_at_32768"]
    assert [label for label in rows if label.startswith(("MHA", "GQA", "MQA"))] == [
        "MHA", "GQA-16", "GQA-8 (model)", "GQA-4", "GQA-2", "MQA"]  # fmt: skip
    assert rows["K q8_0 / V q8_0"]["ratio"] == pytest.approx(34 / 64)
    assert rows["K fp8_e4m3 / V fp8_e4m3"]["bytes_at_8192"] == gqa["bytes_at_8192"] // 2


def test_refused_rows_follow_llama_cpp_rules() -> None:
    off = compare(load_model("llama-3.1-8b"), LlamaCppSettings(flash_attn="off"), [4096])
    for row in off.rows:
        if row["section"] != "cache type":
            continue
        quantized_v = cache_type(row["type_v"]).is_quantized
        assert (row["status"] == "refused") == quantized_v, row
    mla = compare(load_model("deepseek-v3"), LlamaCppSettings(), [4096])
    for row in mla.rows:
        if row["section"] == "cache type":
            assert (row["status"] == "refused") == (row["type_k"] != row["type_v"]), row
    assert any("no MHA/GQA/MQA what-ifs" in n for n in mla.notes)


def test_hybrid_what_ifs_keep_the_recurrent_state() -> None:
    m = load_model("jamba-1.5-mini")
    rows = _rows(compare(m, LlamaCppSettings(), [8192]))
    state = next(c.buffer_bytes for c in plan(m, LlamaCppSettings(n_ctx=8192)).caches if c.kind == "recurrent")
    # 4 attention layers: MHA has 32 KV heads instead of 8
    assert rows["MHA"]["bytes_at_8192"] - state == 4 * (rows["GQA-8 (model)"]["bytes_at_8192"] - state)


def test_curve_equals_estimate_at_every_point() -> None:
    m = load_model("gemma-3-27b")
    s = LlamaCppSettings(n_seq=2)
    report = curve(m, s, parse_contexts("1k:128k"))
    for row in report.rows:
        p = plan(m, LlamaCppSettings(n_seq=2, n_ctx=row["n_ctx"]))
        assert row["total_bytes"] == p.total_bytes and row["per_token_bytes"] == p.per_token_bytes
    assert any("sliding window: stops growing" in n for n in report.notes)


def test_parse_contexts() -> None:
    assert parse_contexts("1k:8k") == [1024, 2048, 4096, 8192]
    assert parse_contexts("1000:3000:1000") == [1000, 2000, 3000]
    assert parse_contexts("8k,4k,8k") == [4096, 8192]
    assert parse_contexts("3000:5000") == [3000, 5000]
    for bad in ("8k:1k", "0:1k", "1k:2k:0", "x", "1:1000000:1"):
        with pytest.raises(ValueError):
            parse_contexts(bad)


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KVPLAN_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs; regenerate with KVPLAN_UPDATE_GOLDEN=1 if intended"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("compare-llama-3.1-8b.md", ["compare", "llama-3.1-8b", "--ctx", "8k,32k,128k", "-o", "markdown"]),
        ("compare-llama-3.1-8b.csv", ["compare", "llama-3.1-8b", "--ctx", "8k,32k,128k", "-o", "csv"]),
        ("curve-gemma-3-27b.md", ["curve", "gemma-3-27b", "--ctx", "1k:128k", "-o", "markdown"]),
        ("curve-gemma-3-27b.csv", ["curve", "gemma-3-27b", "--ctx", "1k:128k", "-o", "csv"]),
        ("estimate-qwen3-next.md", ["estimate", "qwen3-next-80b-a3b", "-c", "128k", "-np", "2", "-o", "markdown"]),
    ],
)
def test_golden_outputs(name: str, args: list[str]) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    _golden(name, r.stdout)


def test_units_and_svg(tmp_path: Path) -> None:
    si = kv(*["estimate", "llama-3.1-8b", "-c", "4096", "--units", "si", "-o", "markdown"]).stdout
    assert "536.87 MB" in si and "MiB" not in si
    raw = kv(*["compare", "llama-3.1-8b", "-c", "4k", "--units", "bytes", "-o", "markdown"]).stdout
    assert "536,870,912" in raw and "MiB" not in raw
    svg = tmp_path / "c.svg"
    r = kv(*["curve", "gemma-3-27b", "-c", "1k:32k", "--svg", str(svg)])
    assert r.exit_code == 0 and "│" in r.stdout
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3
    doc = json.loads(kv(*["curve", "gemma-3-27b", "-c", "4k,8k", "-o", "json"]).stdout)
    assert doc["kind"] == "curve" and [r["n_ctx"] for r in doc["rows"]] == [4096, 8192]
    assert kv(*["curve", "gemma-3-27b", "-c", "8k:1k"]).exit_code == 2
