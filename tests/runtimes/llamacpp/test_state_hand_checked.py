"""Hand-checked recurrent, hybrid and sparse examples, worked out in the comments."""

from __future__ import annotations

import pytest

from kvplan.errors import RefusedConfigError
from kvplan.runtimes.llamacpp import LlamaCppSettings, plan, plan_mtp_draft
from kvplan.sources import load_model
from kvplan.sources.spec import load_spec_text

MAMBA2_27B = """
arch: mamba2
metadata:
  context_length: 1048576
  embedding_length: 2560
  block_count: 64
  attention: {head_count: 0}
  ssm: {conv_kernel: 4, inner_size: 5120, state_size: 128, group_count: 1, time_step_rank: 80}
"""


def test_mamba2_state_is_independent_of_context() -> None:
    m = load_spec_text(MAMBA2_27B, "mamba2.yaml")
    # r = 3 × (5120 + 2 × 1 × 128) = 16128, s = 128 × 5120 = 655360 floats; × 4 bytes × 64 layers
    one = plan(m, LlamaCppSettings(n_ctx=4096))
    assert one.total_bytes == 171900928 == 64 * 4 * (16128 + 655360)
    assert plan(m, LlamaCppSettings(n_ctx=131072)).total_bytes == 171900928
    assert plan(m, LlamaCppSettings(n_ctx=4096, n_seq=4)).total_bytes == 687603712
    assert one.per_token_bytes == 0
    # Mamba cannot roll back: --rs-seq is ignored, with a note
    p = plan(m, LlamaCppSettings(n_ctx=4096, n_rs_seq=3))
    assert p.total_bytes == 171900928 and any("ignored" in n for n in p.notes)


def test_qwen3_next_hybrid_routing() -> None:
    m = load_model("qwen3-next-80b-a3b")
    p = plan(m, LlamaCppSettings(n_ctx=4096))
    attn, recr = p.caches
    # 12 attention layers (every 4th) × K,V of 2 × 256 × 2 bytes × 4096 cells
    assert len(attn.layers) == 12 and attn.buffer_bytes == 100663296
    # 36 gated-delta-net layers: r = 3 × (4096 + 2 × 16 × 128) = 24576, s = 128 × 4096 = 524288 floats
    assert len(recr.layers) == 36 and recr.buffer_bytes == 36 * 4 * (24576 + 524288) == 79036416
    assert p.total_bytes == 179699712


def test_deepseek_v32_indexer_and_mtp_draft() -> None:
    m = load_model("deepseek-v3.2-exp")
    p = plan(m, LlamaCppSettings(n_ctx=32768))
    # 61 trunk layers: MLA 576 × 2 B × 32768 and indexer 128 × 2 B × 32768 (the nextn layer is left out)
    assert [c.buffer_bytes for c in p.caches] == [2302672896, 511705088]
    assert p.total_bytes == 2814377984
    draft = plan_mtp_draft(m, LlamaCppSettings(n_ctx=32768))
    assert draft.total_bytes == 576 * 2 * 32768  # the one nextn layer, K only, f16
    with pytest.raises(RefusedConfigError, match="different K"):
        plan(m, LlamaCppSettings(n_ctx=4096, type_k="q8_0", type_v="f16"))


def test_jamba_state_plus_attention() -> None:
    m = load_model("jamba-1.5-mini")
    p = plan(m, LlamaCppSettings(n_ctx=8192))
    attn, recr = p.caches
    # 4 attention layers (4, 12, 20, 28) × 2 × 8 × 128 × 2 bytes × 8192
    assert attn.layers == (4, 12, 20, 28) and attn.buffer_bytes == 4 * 2 * 8 * 128 * 2 * 8192
    # 28 Mamba-1 layers: r = 3 × 8192, s = 16 × 8192 floats (Mamba-1 reads no group count)
    assert recr.buffer_bytes == 28 * 4 * (3 * 8192 + 16 * 8192)


def test_mtp_draft_needs_an_mtp_graph() -> None:
    llama_with_nextn = load_spec_text(
        "arch: llama\nmetadata:\n  context_length: 4096\n  embedding_length: 4096\n  block_count: 33\n"
        "  nextn_predict_layers: 1\n  attention: {head_count: 32, head_count_kv: 8}\n",
        "l.yaml",
    )
    # the main context leaves the nextn layer out: 32 layers × 2 × 8 × 128 × 2 bytes × 4096
    assert plan(llama_with_nextn, LlamaCppSettings(n_ctx=4096)).total_bytes == 536870912
    with pytest.raises(RefusedConfigError, match="no MTP graph"):
        plan_mtp_draft(llama_with_nextn, LlamaCppSettings(n_ctx=4096))
