"""`compare` and `curve`: hand-checked ratios, llama.cpp's refusals, contexts and ranges, golden files."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import GOLDEN, kv

from kvplan.analysis.compare import CompareRow, compare
from kvplan.analysis.curve import parse_contexts
from kvplan.facts.ggml_types import cache_type
from kvplan.runtimes.llamacpp import CacheKind, FlashAttn, LlamaCppSettings, plan
from kvplan.sources import load_model


def _rows(report) -> dict[str, CompareRow]:
    return {r.variant: r for r in report.rows}


def test_llama_mha_gqa_mqa_ratios() -> None:
    rows = _rows(compare(load_model("llama-3.1-8b"), LlamaCppSettings(), [8192, 32768]))
    gqa = rows["GQA-8 (model)"]
    # 32 layers × 2 × 8 heads × 128 × 2 bytes = 128 KiB per token; MHA has 32 KV heads (4×), MQA 1 (1/8)
    assert gqa.per_token_bytes == 131072 and gqa.totals == (131072 * 8192, 131072 * 32768)
    assert rows["MHA"].totals[1] == 4 * gqa.totals[1]
    assert rows["MQA"].totals[1] * 8 == gqa.totals[1]
    assert [label for label in rows if label.startswith(("MHA", "GQA", "MQA"))] == [
        "MHA",
        "GQA-16",
        "GQA-8 (model)",
        "GQA-4",
        "GQA-2",
        "MQA",
    ]
    assert rows["K q8_0 / V q8_0"].ratio == pytest.approx(34 / 64)  # q8_0: 34 bytes per 32 values
    assert rows["K fp8_e4m3 / V fp8_e4m3"].totals[0] == gqa.totals[0] // 2


def test_refused_rows_follow_llama_cpp_rules() -> None:
    off = compare(load_model("llama-3.1-8b"), LlamaCppSettings(flash_attn=FlashAttn.OFF), [4096])
    for row in off.rows:
        if row.section == "cache type":
            assert (row.refused is not None) == cache_type(row.type_v).is_quantized, row
    mla = compare(load_model("deepseek-v3"), LlamaCppSettings(), [4096])
    for row in mla.rows:
        if row.section == "cache type":
            assert (row.refused is not None) == (row.type_k != row.type_v), row
    assert any("no MHA/GQA/MQA what-ifs" in n for n in mla.notes)


def test_hybrid_what_ifs_keep_the_recurrent_state() -> None:
    m = load_model("jamba-1.5-mini")
    rows = _rows(compare(m, LlamaCppSettings(), [8192]))
    p = plan(m, LlamaCppSettings(n_ctx=8192))
    state = next(c.buffer_bytes for c in p.caches if c.kind is CacheKind.RECURRENT)
    # 4 attention layers: MHA has 32 KV heads instead of 8
    assert rows["MHA"].totals[0] - state == 4 * (rows["GQA-8 (model)"].totals[0] - state)


def test_parse_contexts() -> None:
    assert parse_contexts("1k:8k").points == (1024, 2048, 4096, 8192) and parse_contexts("1k:8k").log_axis
    assert parse_contexts("1000:3000:1000").points == (1000, 2000, 3000)
    assert parse_contexts("8k,4k,8k").points == (4096, 8192)
    assert parse_contexts("3000:5000").points == (3000, 5000)
    # a stepped range ends at its end, on a linear axis: 1k, 5k, …, 61k, then 64k
    stepped = parse_contexts("1k:64k:4k")
    assert stepped.points[-2:] == (62464, 65536) and len(stepped.points) == 17 and not stepped.log_axis
    for bad, why in (("8k:1k", "up to its end"), ("0:1k", "below the minimum 1"), ("1k:2k:0", "below the minimum"),
                     ("x", "not a count"), ("1:1000000:1", "more than 512 points")):  # fmt: skip
        with pytest.raises(ValueError, match=why):
            parse_contexts(bad)


def test_curve_beyond_the_trained_context_warns() -> None:
    r = kv("curve", "phi-3-mini-4k", "-c", "2k:16k", "-o", "json")
    assert r.exit_code == 0 and r.json()["warnings"] == [
        "from 8,192 tokens on, each sequence's context exceeds the model's trained context 4,096 (llama.cpp warns: "
        "possible training context overflow)"
    ]


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
    r = kv(*args)
    assert r.exit_code == 0, r.output
    _golden(name, r.stdout)


def test_units_and_svg(tmp_path: Path) -> None:
    si = kv("estimate", "llama-3.1-8b", "-c", "4096", "--units", "si", "-o", "markdown").stdout
    assert "536.87 MB" in si and "MiB" not in si
    raw = kv("compare", "llama-3.1-8b", "-c", "4k", "--units", "bytes", "-o", "markdown").stdout
    assert "536,870,912" in raw and "MiB" not in raw
    svg = tmp_path / "c.svg"
    r = kv("curve", "gemma-3-27b", "-c", "1k:32k", "--svg", str(svg))
    assert r.exit_code == 0 and "│" in r.stdout
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3
    doc = kv("curve", "gemma-3-27b", "-c", "4k,8k", "-o", "json").json()
    assert doc["kind"] == "curve" and [r["n_ctx"] for r in doc["rows"]] == [4096, 8192]
    assert kv("curve", "gemma-3-27b", "-c", "8k:1k").exit_code == 2
