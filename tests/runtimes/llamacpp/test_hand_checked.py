"""Hand-checked examples: each number is worked out in the comment next to it, not by kvplan's formulas."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.errors import RefusedConfigError
from kvplan.runtimes.llamacpp import LlamaCppSettings, plan
from kvplan.sources import load_model
from kvplan.sources.spec import load_spec_text

LLAMA_32L = """
name: hand-checked-llama
arch: llama
metadata:
  context_length: 8192
  embedding_length: 4096
  block_count: 32
  attention: {head_count: 32, head_count_kv: 8}
"""


def _llama(tmp_path: Path):
    return load_spec_text(LLAMA_32L, str(tmp_path / "x.yaml"))


def test_32_layers_8_kv_heads_128_f16(tmp_path: Path) -> None:
    # K and V: 8 heads × 128 × 2 bytes = 2048 bytes each, per layer per token; × 2 × 32 layers = 131072
    p = plan(_llama(tmp_path), LlamaCppSettings(n_ctx=4096))
    assert p.per_token_bytes == 131072
    assert p.total_bytes == 536870912  # 131072 × 4096 = 512 MiB
    assert p.caches[0].k_bytes == p.caches[0].v_bytes == 268435456


def test_q8_0_and_padding_and_streams(tmp_path: Path) -> None:
    m = _llama(tmp_path)
    # q8_0 row of 1024 values = 32 blocks × 34 bytes = 1088; 2 × 32 × 1088 × 4096
    assert plan(m, LlamaCppSettings(n_ctx=4096, type_k="q8_0", type_v="q8_0")).total_bytes == 285212672
    # 4000 tokens pad to 4096 cells
    assert plan(m, LlamaCppSettings(n_ctx=4000)).total_bytes == 536870912
    # 3 sequences: 4096/3 = 1365 → padded 1536 cells × 3 streams = 4608 cells
    p = plan(m, LlamaCppSettings(n_ctx=4096, n_seq=3))
    assert p.total_bytes == 603979776
    assert (p.context.n_ctx, p.context.n_ctx_seq) == (4608, 1536)


def test_quantized_v_without_flash_attention_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RefusedConfigError, match="requires flash attention"):
        plan(_llama(tmp_path), LlamaCppSettings(n_ctx=4096, type_v="q4_0", flash_attn="off"))


def test_gemma3_12b_sliding_window() -> None:
    m = load_model("gemma-3-12b")
    # 8 full layers × 2 (K,V) × 8 heads × 256 × 2 bytes × 8192 cells = 512 MiB
    # 40 SWA layers: cells = pad256(min(8192, 1024 + 512)) = 1536 → 40 × 2 × 4096 × 1536 = 480 MiB
    p = plan(m, LlamaCppSettings(n_ctx=8192))
    assert [c.buffer_bytes for c in p.caches] == [536870912, 503316480]
    assert plan(m, LlamaCppSettings(n_ctx=8192, swa_full=True)).total_bytes == 3221225472
    # 4 sequences, unified: SWA cells = pad256(min(8192, 4 × 1024 + 512)) = 4608 → 1440 MiB
    assert plan(m, LlamaCppSettings(n_ctx=8192, n_seq=4, kv_unified=True)).total_bytes == 2046820352


def test_deepseek_v2_lite_mla_is_k_only() -> None:
    # 27 layers × 576 (512 latent + 64 rope) × 2 bytes × 4096 cells, no V
    p = plan(load_model("deepseek-v2-lite"), LlamaCppSettings(n_ctx=4096))
    assert p.total_bytes == 127401984
    assert p.caches[0].v_bytes == 0 and p.caches[0].type_v is None
    with pytest.raises(RefusedConfigError, match="different K"):
        plan(load_model("deepseek-v2-lite"), LlamaCppSettings(n_ctx=4096, type_k="q8_0", type_v="f16"))


def test_plamo2_whose_first_layer_is_mamba_keeps_its_head_size() -> None:
    """PLaMo 2's loader reads attention.key_length itself, after llama.cpp's generic pass left it 0 (layer 0 has no
    heads: a Mamba layer). The shape's 4 attention layers × 4 KV heads × 128 × (K + V) × 2 B × 4,096 cells =
    33,554,432 B (it was planned as 0 B before; llama.cpp's own run agrees: compute_graph.json's context bytes)."""
    model = load_model(str(Path(__file__).parents[2] / "fixtures" / "oracle" / "real" / "plamo2-shape.gguf"))
    p = plan(model, LlamaCppSettings(n_ctx=4096))
    attention = next(c for c in p.caches if c.name == "attention")
    assert attention.k_bytes + attention.v_bytes == 4 * 4 * 128 * 2 * 2 * 4096 == 33_554_432
