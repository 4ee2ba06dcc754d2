"""Serving engines: the worked examples of ../shared/reference/serving-engines-kv.md §5, reproduced exactly."""

from __future__ import annotations

import pytest

from kvplan.errors import RefusedConfigError
from kvplan.layout.serving import EngineSettings, capacity, layout, sglang_mem_fraction
from kvplan.sources import load_model

GIB = 1 << 30
T = 80 * GIB
W = 8_030_261_248 * 2  # Llama-3-8B bf16 weights
X = 3 * GIB  # assumed profiled activations + graphs


def test_llama3_8b_unit_sizes_and_tp_split() -> None:
    m = load_model("llama-3.1-8b")
    for engine in ("vllm", "sglang", "trtllm"):
        assert layout(m, EngineSettings(engine=engine)).bytes_per_token == 131072
    assert layout(m, EngineSettings(cache_dtype="fp8")).bytes_per_token == 65536
    v = layout(m, EngineSettings(engine="vllm"))
    assert v.block_tokens == 16 and v.block_bytes == 2 * 1024 * 1024
    assert layout(m, EngineSettings(engine="trtllm")).block_bytes == 4 * 1024 * 1024
    # 8 KV heads: tp 2/4/8 split them, tp 16 replicates (1 head per rank)
    assert [layout(m, EngineSettings(tp=tp)).bytes_per_token for tp in (2, 4, 8, 16)] == [65536, 32768, 16384, 16384]
    assert layout(m, EngineSettings(tp=16)).replicated


def test_llama3_8b_capacity_per_engine() -> None:
    m = load_model("llama-3.1-8b")
    v = capacity(m, EngineSettings(engine="vllm", max_model_len=8192), T, W, X)
    assert v.kv_budget_bytes == 59_745_650_279 and v.blocks == 28_488 and v.tokens == 455_808
    assert round(v.concurrency, 2) == 55.64
    assert round(capacity(m, EngineSettings(engine="vllm", max_model_len=131072), T, W, X).concurrency, 2) == 3.48
    assert sglang_mem_fraction(T) == 0.836
    s = capacity(m, EngineSettings(engine="sglang"), T, W, 0)
    assert s.tokens == 421_924
    t = capacity(m, EngineSettings(engine="trtllm"), T, W, X)
    assert t.kv_budget_bytes == 59_472_654_336 and t.blocks == 14_179 and t.tokens == 453_728


@pytest.mark.parametrize(
    ("name", "engine", "dtype", "per_token", "tokens_in_40gib"),
    [
        ("deepseek-v3", "vllm", "auto", 70272, 611_136),
        ("deepseek-v3", "sglang", "auto", 70272, 611_191),
        ("deepseek-v3", "trtllm", "auto", 70272, 611_168),
        ("deepseek-v3", "vllm", "fp8", 35136, 1_222_336),
        ("deepseek-v3", "trtllm", "fp8", 35136, 1_222_368),
        ("deepseek-v3.2-exp", "vllm", "fp8", 48068, 893_504),
        ("deepseek-v3.2-exp", "sglang", "fp8", 48068, 893_504),
        ("deepseek-v3.2-exp", "trtllm", "fp8", 43188, 994_464),
    ],
)
def test_deepseek_mla_in_a_40gib_budget(
    name: str, engine: str, dtype: str, per_token: int, tokens_in_40gib: int
) -> None:
    lay = layout(load_model(name), EngineSettings(engine=engine, cache_dtype=dtype, tp=8))
    assert lay.bytes_per_token == per_token and lay.kv_heads_per_rank is None and lay.replicated
    budget = 40 * GIB
    tokens = budget // lay.block_bytes * lay.block_tokens
    assert tokens == tokens_in_40gib


def test_unsupported_layouts_are_refused() -> None:
    for name in ("gemma-3-27b", "qwen3-next-80b-a3b"):
        with pytest.raises(RefusedConfigError, match="full-attention models"):
            layout(load_model(name), EngineSettings())


def test_fit_with_an_engine_through_the_cli() -> None:
    import json

    from typer.testing import CliRunner

    from kvplan.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["fit", "llama-3.1-70b", "--engine", "vllm", "--gpu", "H100-80GBx4", "--tp", "4",
                            "--ctx", "32k", "-o", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # 8 KV heads / tp 4 = 2 per rank: 2 × 256 × 2 B × 80 layers
    assert doc["bytes_per_token"] == 81920 and doc["fits"] and len(doc["rows"]) == 4
    # the boundary: the reported concurrency is exactly blocks ÷ blocks per request
    blocks = doc["rows"][0]["blocks"]
    assert doc["answer"].startswith(f"vllm fits: {blocks // 2048} × 32,768-token")
    r = runner.invoke(app, ["fit", "llama-3.1-70b", "--engine", "vllm", "--gpu", "H100-80GBx2", "--tp", "4"])
    assert r.exit_code == 3 and "2 GPU(s) given for --tp 4" in r.stderr
    r = runner.invoke(app, ["fit", "llama-3.1-70b", "--engine", "sglang", "--gpu", "L4", "--params", "70B"])
    assert r.exit_code == 1 and "does NOT fit" in r.stdout
