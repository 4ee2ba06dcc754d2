"""Record what real llama.cpp allocates into test fixtures (regenerates tests/fixtures/oracle/).

usage: python scripts/record_oracle.py ORACLE_DIR [--shared ../shared]

ORACLE_DIR is a build of ../shared/oracle/build.sh (harness, test-llama-archs, venv with gguf).
Run it with ORACLE_DIR/venv/bin/python. It writes:
  tests/fixtures/oracle/tiny/ARCH.gguf       metadata of llama.cpp's own tiny model of every architecture
  tests/fixtures/oracle/real/NAME.gguf       realistic metadata-only GGUFs (as the converter writes them)
  tests/fixtures/oracle/nextn/ARCH.gguf      tiny models with one nextn/MTP layer appended
  tests/fixtures/oracle/cases.json           every (model, context settings) case and llama.cpp's answer
Never edit a recorded number by hand: change this script and re-run it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "oracle"
LLAMA_CPP_VERSION = "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01)"

# The realistic models: GGUF metadata as llama.cpp's converter writes it for the real checkpoint
# (key mapping: ../shared/reference/model-facts.md; values: model-facts.yaml).
_COMMON = {
    "{arch}.attention.layer_norm_rms_epsilon": 1e-5,
    "{arch}.rope.freq_base": 10000.0,
    "{arch}.vocab_size": 32000,
}


def _dense(
    arch: str,
    layers: int,
    embd: int,
    heads: int,
    kv_heads: int,
    ctx: int,
    head_dim: int | None = None,
    ff: int = 14336,
    **extra: object,
) -> dict:
    kv = dict(_COMMON)
    kv.update(
        {
            "{arch}.block_count": layers,
            "{arch}.embedding_length": embd,
            "{arch}.feed_forward_length": ff,
            "{arch}.attention.head_count": heads,
            "{arch}.attention.head_count_kv": kv_heads,
            "{arch}.context_length": ctx,
        }
    )
    if head_dim is not None:
        kv["{arch}.attention.key_length"] = head_dim
        kv["{arch}.attention.value_length"] = head_dim
    kv["{arch}.rope.dimension_count"] = head_dim or embd // heads
    kv.update(extra)
    return {"arch": arch, "kv": kv}


def _mla(layers: int, embd: int, heads: int, ctx: int, nextn: int = 0, arch: str = "deepseek2", **extra) -> dict:
    spec = _dense(arch, layers + nextn, embd, heads, 1, ctx, ff=18432, **extra)
    spec["kv"].update(
        {
            "{arch}.attention.key_length": 576,
            "{arch}.attention.value_length": 512,
            "{arch}.attention.key_length_mla": 192,
            "{arch}.attention.value_length_mla": 128,
            "{arch}.attention.kv_lora_rank": 512,
            "{arch}.rope.dimension_count": 64,
            "{arch}.leading_dense_block_count": 1,
            "{arch}.expert_count": 64,
            "{arch}.expert_used_count": 6,
            "{arch}.expert_shared_count": 2,
            "{arch}.expert_feed_forward_length": 1408,
            "{arch}.expert_weights_scale": 1.0,
        }
    )
    if layers != 27:  # DeepSeek-V2-Lite has no q LoRA; llama.cpp requires the key otherwise
        spec["kv"]["{arch}.attention.q_lora_rank"] = 1536
    if nextn:
        spec["kv"]["{arch}.nextn_predict_layers"] = nextn
    return spec


def _moe(spec: dict, experts: int, used: int, ff_exp: int) -> dict:
    spec["kv"].update(
        {
            "{arch}.expert_count": experts,
            "{arch}.expert_used_count": used,
            "{arch}.expert_feed_forward_length": ff_exp,
        }
    )
    return spec


def _override(spec: dict, **kv: object) -> dict:
    """The spec with these keys set last (over what _mla / _moe write)."""
    spec["kv"].update(kv)
    return spec


REAL_MODELS: dict[str, dict] = {
    "llama-3.1-8b": _dense("llama", 32, 4096, 32, 8, 131072),
    "llama-3.1-70b": _dense("llama", 80, 8192, 64, 8, 131072, ff=28672),
    "mistral-nemo-12b": _dense("llama", 40, 5120, 32, 8, 1024000, head_dim=128),
    "qwen3-8b": _dense("qwen3", 36, 4096, 32, 8, 40960, head_dim=128, ff=12288),
    "qwen3-32b": _dense("qwen3", 64, 5120, 64, 8, 40960, head_dim=128, ff=25600),
    "qwen3-30b-a3b": _moe(_dense("qwen3moe", 48, 2048, 32, 4, 40960, head_dim=128, ff=6144), 128, 8, 768),
    "gemma-2-9b": _dense(
        "gemma2",
        42,
        3584,
        16,
        8,
        8192,
        head_dim=256,
        **{
            "{arch}.attention.sliding_window": 4096,
            "{arch}.attn_logit_softcapping": 50.0,
            "{arch}.final_logit_softcapping": 30.0,
        },
    ),
    "gemma-3-12b": _dense("gemma3", 48, 3840, 16, 8, 131072, head_dim=256, **{"{arch}.attention.sliding_window": 1024}),
    "gemma-3-27b": _dense(
        "gemma3", 62, 5376, 32, 16, 131072, head_dim=128, **{"{arch}.attention.sliding_window": 1024}
    ),
    "gpt-oss-20b": _moe(
        _dense(
            "gpt-oss",
            24,
            2880,
            64,
            8,
            131072,
            head_dim=64,
            ff=2880,
            **{"{arch}.attention.sliding_window": 128},
        ),
        32,
        4,
        2880,
    ),
    # Gemma 3n E2B (its config.json's text_config: 30 layers, hidden 2048, 8 heads / 2 KV of 256, every fifth layer
    # global, a 512-token window, 8192-wide feed-forward; the last ten layers read layer 18's or 19's KV)
    "gemma-3n-e2b": _dense(
        "gemma3n",
        30,
        2048,
        8,
        2,
        32768,
        head_dim=256,
        ff=8192,
        **{"{arch}.attention.sliding_window": 512, "{arch}.vocab_size": 262144, "{arch}.final_logit_softcapping": 30.0},
    ),
    # Gemma 3n E4B: 35 layers, 16384-wide feed-forward, the last fifteen layers reading shared KV
    "gemma-3n-e4b": _dense(
        "gemma3n",
        35,
        2048,
        8,
        2,
        32768,
        head_dim=256,
        ff=16384,
        **{"{arch}.attention.sliding_window": 512, "{arch}.vocab_size": 262144, "{arch}.final_logit_softcapping": 30.0},
    ),
    # Granite 3.3 8B (config.json: 40 layers, hidden 4096, 32 heads / 8 KV, 12800-wide feed-forward, vocabulary
    # 49159, its embedding / residual / attention / logit multipliers)
    "granite-3.3-8b": _dense(
        "granite",
        40,
        4096,
        32,
        8,
        131072,
        ff=12800,
        **{
            "{arch}.vocab_size": 49159,
            "{arch}.embedding_scale": 12.0,
            "{arch}.residual_scale": 0.22,
            "{arch}.logit_scale": 16.0,
            "{arch}.attention.scale": 0.0078125,
        },
    ),
    # GLM-4-9B-0414 (config.json: 40 layers, hidden 4096, 32 heads / 2 KV of 128, half of each head rotated,
    # 13696-wide feed-forward, vocabulary 151552)
    "glm-4-9b-0414": _dense(
        "glm4",
        40,
        4096,
        32,
        2,
        32768,
        head_dim=128,
        ff=13696,
        **{"{arch}.vocab_size": 151552, "{arch}.rope.dimension_count": 64},
    ),
    # Seed-OSS-36B (config.json: 64 layers, hidden 5120, 80 heads / 8 KV of 128, 27648-wide feed-forward, vocabulary
    # 155136) and ERNIE-4.5-0.3B (18 layers, hidden 1024, 16 heads / 2 KV of 128, 3072-wide, vocabulary 103424)
    "seed-oss-36b": _dense(
        "seed_oss", 64, 5120, 80, 8, 524288, head_dim=128, ff=27648, **{"{arch}.vocab_size": 155136}
    ),
    "ernie-4.5-0.3b": _dense(
        "ernie4_5", 18, 1024, 16, 2, 131072, head_dim=128, ff=3072, **{"{arch}.vocab_size": 103424}
    ),
    # Qwen1.5-MoE-A2.7B (config.json: 24 layers, hidden 2048, 16 heads / 16 KV, 60 experts of 1408, 4 used, a
    # 5632-wide shared expert, vocabulary 151936)
    "qwen1.5-moe-a2.7b": _moe(
        _dense(
            "qwen2moe",
            24,
            2048,
            16,
            16,
            8192,
            ff=5632,
            **{"{arch}.vocab_size": 151936, "{arch}.expert_shared_feed_forward_length": 5632},
        ),
        60,
        4,
        1408,
    ),
    # OLMoE-1B-7B-0924 (config.json: 16 layers, hidden 2048, 16 heads / 16 KV, 64 experts of 1024, 8 used,
    # vocabulary 50304)
    "olmoe-1b-7b": _moe(
        _dense("olmoe", 16, 2048, 16, 16, 4096, ff=1024, **{"{arch}.vocab_size": 50304}),
        64,
        8,
        1024,
    ),
    # EXAONE-4.0-32B (config.json: 64 layers, hidden 5120, 40 heads / 8 KV of 128, 27392-wide feed-forward,
    # vocabulary 102400, a 4096-token window on three layers of four)
    "exaone-4.0-32b": _dense(
        "exaone4",
        64,
        5120,
        40,
        8,
        131072,
        head_dim=128,
        ff=27392,
        **{
            "{arch}.vocab_size": 102400,
            "{arch}.attention.sliding_window": 4096,
            "{arch}.attention.sliding_window_pattern": 4,
        },
    ),
    # StarCoder2-15B (config.json: 40 layers, hidden 6144, 48 heads / 4 KV, 24576-wide feed-forward, vocabulary
    # 49152)
    "starcoder2-15b": _dense(
        "starcoder2",
        40,
        6144,
        48,
        4,
        16384,
        ff=24576,
        **{"{arch}.vocab_size": 49152, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # Qwen2.5-VL-7B's language model (config.json: 28 layers, hidden 3584, 28 heads / 4 KV, 18944-wide, vocabulary
    # 152064, multi-section RoPE of 16 / 24 / 24)
    "qwen2.5-vl-7b": _dense(
        "qwen2vl",
        28,
        3584,
        28,
        4,
        128000,
        ff=18944,
        **{"{arch}.vocab_size": 152064, "{arch}.rope.dimension_sections": [16, 24, 24, 0]},
    ),
    # InternLM2.5-7B (config.json: 32 layers, hidden 4096, 32 heads / 8 KV, 14336-wide, vocabulary 92544) and
    # Arcee AFM-4.5B (36 layers, hidden 2560, 20 heads / 4 KV of 128, a 18432-wide ReLU² feed-forward, vocabulary
    # 128004)
    "internlm2.5-7b": _dense("internlm2", 32, 4096, 32, 8, 32768, ff=14336, **{"{arch}.vocab_size": 92544}),
    "afm-4.5b": _dense("arcee", 36, 2560, 20, 4, 65536, head_dim=128, ff=18432, **{"{arch}.vocab_size": 128004}),
    # ERNIE-4.5-21B-A3B (config.json: 28 layers, hidden 2560, 20 heads / 4 KV of 128, the first layer dense
    # (12288 wide), 64 experts of 1536, 6 used, on every layer after it, 2 shared ones; vocabulary 103424)
    "ernie-4.5-21b-a3b": _moe(
        _dense(
            "ernie4_5-moe",
            28,
            2560,
            20,
            4,
            131072,
            head_dim=128,
            ff=12288,
            **{
                "{arch}.vocab_size": 103424,
                "{arch}.leading_dense_block_count": 1,
                "{arch}.interleave_moe_layer_step": 1,
                "{arch}.expert_shared_feed_forward_length": 3072,
            },
        ),
        64,
        6,
        1536,
    ),
    # EXAONE-3.5-7.8B (config.json: 32 layers, hidden 4096, 32 heads / 8 KV, 14336-wide, vocabulary 102400)
    "exaone-3.5-7.8b": _dense("exaone", 32, 4096, 32, 8, 32768, ff=14336, **{"{arch}.vocab_size": 102400}),
    # XVERSE-7B (config.json: 32 layers, hidden 4096, 32 heads (MHA), 11008-wide, vocabulary 100534)
    "xverse-7b": _dense("xverse", 32, 4096, 32, 32, 8192, ff=11008, **{"{arch}.vocab_size": 100534}),
    # Orion-14B (config.json: 40 layers, hidden 5120, 40 heads (MHA), 15360-wide, vocabulary 84608)
    "orion-14b": _dense(
        "orion",
        40,
        5120,
        40,
        40,
        4096,
        ff=15360,
        **{"{arch}.vocab_size": 84608, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # Baichuan2-7B (32 layers: RoPE) and -13B (40 layers: ALiBi), vocabulary 125696
    "baichuan2-7b": _dense("baichuan", 32, 4096, 32, 32, 4096, ff=11008, **{"{arch}.vocab_size": 125696}),
    "baichuan2-13b": _dense("baichuan", 40, 5120, 40, 40, 4096, ff=13696, **{"{arch}.vocab_size": 125696}),
    # OLMo-7B (OLMo 1: 32 layers, hidden 4096, 32 heads (MHA), 11008-wide, weightless layer norms, vocabulary 50304)
    "olmo-7b": _dense(
        "olmo",
        32,
        4096,
        32,
        32,
        2048,
        ff=11008,
    ),
    # StableLM-2-1.6B (config.json: 24 layers, hidden 2048, 32 heads (MHA), 5632-wide, a quarter of each head
    # rotated (partial_rotary_factor 0.25), layer norms, vocabulary 100352)
    "stablelm-2-1.6b": _dense(
        "stablelm",
        24,
        2048,
        32,
        32,
        4096,
        ff=5632,
        **{"{arch}.vocab_size": 100352, "{arch}.rope.dimension_count": 16, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # Phi-2 (config.json: 32 layers, hidden 2560, 32 heads (MHA) of 80, 10240-wide, 40% of each head rotated,
    # vocabulary 51200)
    "phi-2": _dense(
        "phi2",
        32,
        2560,
        32,
        32,
        2048,
        ff=10240,
        **{"{arch}.vocab_size": 51200, "{arch}.rope.dimension_count": 32, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # StarCoderBase-1B (config.json: 24 layers, hidden 2048, 16 heads, one KV head (multi-query), 8192-wide,
    # learned positions for 8192 tokens, vocabulary 49152)
    "starcoderbase-1b": _dense(
        "starcoder",
        24,
        2048,
        16,
        1,
        8192,
        ff=8192,
        **{"{arch}.vocab_size": 49152, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # GPT-2 medium (config.json: 24 layers, hidden 1024, 16 heads, 4096-wide, 1024 learned positions,
    # vocabulary 50257)
    "gpt2-medium": _dense(
        "gpt2",
        24,
        1024,
        16,
        16,
        1024,
        ff=4096,
        **{"{arch}.vocab_size": 50257, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # Pythia-1.4B (GPT-NeoX; config.json: 24 layers, hidden 2048, 16 heads, 8192-wide, a quarter of each head
    # rotated, use_parallel_residual, vocabulary 50304)
    "pythia-1.4b": _dense(
        "gptneox",
        24,
        2048,
        16,
        16,
        2048,
        ff=8192,
        **{
            "{arch}.rope.dimension_count": 32,
            "{arch}.attention.layer_norm_epsilon": 1e-5,
            "{arch}.use_parallel_residual": True,
        },
    ),
    # Falcon-7B (config.json: 32 layers, hidden 4544, 71 heads of 64, one KV head (multi-query), 18176-wide,
    # vocabulary 65024)
    "falcon-7b": _dense(
        "falcon",
        32,
        4544,
        71,
        1,
        2048,
        ff=18176,
        **{"{arch}.vocab_size": 65024, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # BLOOM-560m (config.json: 24 layers, hidden 1024, 16 heads, 4096-wide, ALiBi, vocabulary 250880)
    "bloom-560m": _dense(
        "bloom",
        24,
        1024,
        16,
        16,
        2048,
        ff=4096,
        **{"{arch}.vocab_size": 250880, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # MPT-7B (config.json: 32 layers, hidden 4096, 32 heads, 16384-wide, ALiBi, vocabulary 50432)
    "mpt-7b": _dense(
        "mpt",
        32,
        4096,
        32,
        32,
        2048,
        ff=16384,
        **{
            "{arch}.vocab_size": 50432,
            "{arch}.attention.layer_norm_epsilon": 1e-5,
            "{arch}.attention.max_alibi_bias": 8.0,
        },
    ),
    # Refact-1.6B (config.json: 32 layers, hidden 2048, 32 heads, one KV head (MQA), 5632-wide, ALiBi,
    # vocabulary 49216)
    "refact-1.6b": _dense("refact", 32, 2048, 32, 1, 4096, ff=5632, **{"{arch}.vocab_size": 49216}),
    # dots.llm1 (config.json: 62 layers, hidden 4096, 32 heads / 32 KV of 128, the first layer dense (10944 wide),
    # 128 experts of 1408, 6 used, sigmoid-routed with the probability bias, 2 shared; vocabulary 152064)
    "dots.llm1": _moe(
        _dense(
            "dots1",
            62,
            4096,
            32,
            32,
            32768,
            head_dim=128,
            ff=10944,
            **{
                "{arch}.vocab_size": 152064,
                "{arch}.leading_dense_block_count": 1,
                "{arch}.expert_shared_count": 2,
                "{arch}.expert_weights_norm": True,
                "{arch}.expert_weights_scale": 2.5,
                "{arch}.expert_gating_func": 2,
            },
        ),
        128,
        6,
        1408,
    ),
    # Qwen3-VL-8B's language model (config.json: 36 layers, hidden 4096, 32 heads / 8 KV of 128, 12288-wide,
    # vocabulary 151936, multi-section RoPE of 24 / 20 / 20, three deepstack layers)
    "qwen3-vl-8b": _dense(
        "qwen3vl",
        36,
        4096,
        32,
        8,
        262144,
        head_dim=128,
        ff=12288,
        **{
            "{arch}.vocab_size": 151936,
            "{arch}.rope.dimension_sections": [24, 20, 20, 0],
            "{arch}.n_deepstack_layers": 3,
        },
    ),
    # Phi-3.5-MoE (config.json: 32 layers, hidden 4096, 32 heads / 8 KV, 16 experts of 6400, 2 used, vocabulary
    # 32064, layer norms)
    "phi-3.5-moe": _moe(
        _dense(
            "phimoe",
            32,
            4096,
            32,
            8,
            131072,
            ff=6400,
            **{"{arch}.vocab_size": 32064, "{arch}.attention.layer_norm_epsilon": 1e-5},
        ),
        16,
        2,
        6400,
    ),
    # Nemotron-Mini-4B (config.json: 32 layers, hidden 3072, 24 heads / 8 KV of 128, half of each head rotated,
    # a 9216-wide ReLU² feed-forward, vocabulary 256000, layer norms)
    "nemotron-mini-4b": _dense(
        "nemotron",
        32,
        3072,
        24,
        8,
        4096,
        head_dim=128,
        ff=9216,
        **{
            "{arch}.vocab_size": 256000,
            "{arch}.rope.dimension_count": 64,
            "{arch}.attention.layer_norm_epsilon": 1e-5,
        },
    ),
    # Gemma 7B (config.json: 28 layers, hidden 3072, 16 heads / 16 KV of 256, 24576-wide, vocabulary 256000)
    "gemma-7b": _dense("gemma", 28, 3072, 16, 16, 8192, head_dim=256, ff=24576, **{"{arch}.vocab_size": 256000}),
    # Hunyuan-7B (config.json: 32 layers, hidden 4096, 32 heads / 8 KV of 128, 14336-wide, vocabulary 128167)
    "hunyuan-7b": _dense(
        "hunyuan-dense", 32, 4096, 32, 8, 262144, head_dim=128, ff=14336, **{"{arch}.vocab_size": 128167}
    ),
    "phi-4": _dense("phi3", 40, 5120, 40, 10, 16384, ff=17920),
    "phi-3-mini-4k": _dense("phi3", 32, 3072, 32, 32, 4096, ff=8192, **{"{arch}.attention.sliding_window": 2047}),
    "command-r-v01": _dense(
        "command-r",
        40,
        8192,
        64,
        64,
        131072,  # the converter writes model_max_length for Command-R
        ff=22528,
        **{"{arch}.attention.layer_norm_epsilon": 1e-5, "{arch}.logit_scale": 0.0625},
    ),
    "command-r7b": _dense(
        "cohere2",
        32,
        4096,
        32,
        8,
        131072,
        ff=14336,
        **{
            "{arch}.attention.sliding_window": 4096,
            "{arch}.attention.layer_norm_epsilon": 1e-5,
            "{arch}.logit_scale": 0.25,
        },
    ),
    "deepseek-v2-lite": _mla(27, 2048, 16, 163840),
    "deepseek-v3": _mla(61, 7168, 128, 163840),
    "kimi-k2": _mla(61, 7168, 64, 131072),
    "deepseek-v3-mtp": _mla(61, 7168, 128, 163840, nextn=1),
    "glm-4.5-air": _moe(
        _dense(
            "glm4moe",
            47,
            4096,
            96,
            8,
            131072,
            head_dim=128,
            ff=10944,
            **{
                "{arch}.nextn_predict_layers": 1,
                "{arch}.leading_dense_block_count": 1,
                "{arch}.rope.dimension_count": 64,
                "{arch}.expert_shared_count": 1,
            },
        ),
        128,
        8,
        1408,
    ),
    "llama-4-scout": _moe(
        _dense(
            "llama4",
            48,
            5120,
            40,
            8,
            10485760,
            head_dim=128,
            ff=16384,
            **{"{arch}.interleave_moe_layer_step": 1},
        ),
        16,
        1,
        8192,
    ),
    # Qwen-7B (Qwen 1; config.json: 32 layers, hidden 4096, 32 heads, intermediate_size 22016 written as the
    # feed-forward length, which llama_model_qwen halves; vocabulary 151936, seq_length 8192)
    "qwen-7b": _dense("qwen", 32, 4096, 32, 32, 8192, ff=22016, **{"{arch}.vocab_size": 151936}),
    # CodeShell-7B (config.json: 42 layers, n_embd 4096, 32 heads, 8 query groups, n_inner 16384, vocabulary
    # 70144, n_positions 8192)
    "codeshell-7b": _dense(
        "codeshell",
        42,
        4096,
        32,
        8,
        8192,
        ff=16384,
        **{"{arch}.vocab_size": 70144, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # ChatGLM3-6B (config.json: 28 layers, hidden 4096, 32 heads, 2 multi-query groups, ffn_hidden_size 13696,
    # padded vocabulary 65024, seq_length 8192, rotary on half of each 128-wide head)
    "chatglm3-6b": _dense(
        "chatglm", 28, 4096, 32, 2, 8192, ff=13696, **{"{arch}.vocab_size": 65024, "{arch}.rope.dimension_count": 64}
    ),
    # MiniCPM-2B (config.json: 40 layers, hidden 2304, 36 heads, intermediate 5760, vocabulary 122753, scale_emb
    # 12, scale_depth 1.4, dim_model_base 256: the converter's embedding, residual and logit scales)
    "minicpm-2b": _dense(
        "minicpm",
        40,
        2304,
        36,
        36,
        4096,
        ff=5760,
        **{
            "{arch}.vocab_size": 122753,
            "{arch}.embedding_scale": 12.0,
            "{arch}.residual_scale": 1.4 / 40**0.5,
            "{arch}.logit_scale": 256 / 2304,
        },
    ),
    # DeepSeek-MoE-16B (config.json: 28 layers, hidden 2048, 16 heads, intermediate 10944, 64 routed experts of
    # 1408, 6 used, 2 shared, first_k_dense_replace 1, vocabulary 102400, 4096 positions)
    "deepseek-moe-16b": _moe(
        _dense(
            "deepseek",
            28,
            2048,
            16,
            16,
            4096,
            ff=10944,
            **{"{arch}.vocab_size": 102400, "{arch}.leading_dense_block_count": 1, "{arch}.expert_shared_count": 2},
        ),
        64,
        6,
        1408,
    ),
    # DBRX (config.json: 40 layers, d_model 6144, 48 heads, 8 KV heads, ffn_hidden_size 10752, 16 experts, top 4,
    # clip_qkv 8, vocabulary 100352, max_seq_len 32768)
    "dbrx": _moe(
        _dense(
            "dbrx",
            40,
            6144,
            48,
            8,
            32768,
            ff=10752,
            **{
                "{arch}.vocab_size": 100352,
                "{arch}.attention.clamp_kqv": 8.0,
                "{arch}.attention.layer_norm_epsilon": 1e-5,
            },
        ),
        16,
        4,
        10752,
    ),
    # Grok-1 (64 layers, hidden 6144, 48 heads, 8 KV heads of 128, widening 32768, 8 experts, 2 used, vocabulary
    # 131072, 8192 positions; no multiplier keys, so llama_model_grok's defaults apply)
    "grok-1": _moe(
        _dense("grok", 64, 6144, 48, 8, 8192, head_dim=128, ff=32768, **{"{arch}.vocab_size": 131072}), 8, 2, 32768
    ),
    # Snowflake Arctic (config.json: 35 layers, hidden 7168, 56 heads, 8 KV heads, intermediate 4864, 128 experts,
    # top 2, vocabulary 32000, 4096 positions)
    "arctic": _moe(_dense("arctic", 35, 7168, 56, 8, 4096, ff=4864), 128, 2, 4864),
    # Jais-13B (config.json: 40 layers, n_embd 5120, 40 heads, n_inner 13653, vocabulary 84992, ALiBi, 2048
    # positions)
    "jais-13b": _dense(
        "jais",
        40,
        5120,
        40,
        40,
        2048,
        ff=13653,
        **{"{arch}.vocab_size": 84992, "{arch}.attention.layer_norm_epsilon": 1e-5},
    ),
    # LLaDA-8B (config.json: 32 layers, d_model 4096, 32 heads, mlp_hidden_size 12288, vocabulary 126464, 4096
    # positions; a diffusion model: no KV cache)
    "llada-8b": _dense("llada", 32, 4096, 32, 32, 4096, ff=12288, **{"{arch}.vocab_size": 126464}),
    # Dream-v0-7B (Qwen2.5-7B's shape: 28 layers, hidden 3584, 28 heads, 4 KV heads, 18944-wide, vocabulary
    # 152064, 131072 positions; a diffusion model: no KV cache)
    "dream-7b": _dense("dream", 28, 3584, 28, 4, 131072, ff=18944, **{"{arch}.vocab_size": 152064}),
    # DeepSeek-V3.2-Exp (config.json: DeepSeek-V3's 61 layers, hidden 7168, 128 heads, q_lora_rank 1536, MLA, 256
    # experts of 2048 (8 used, 1 shared, sigmoid gating), 3 dense lead layers, vocabulary 129280; the lightning
    # indexer's 64 heads of 128, top-k 2048) - the whole trunk, which llama.cpp loads (the KV shape above is not)
    "deepseek-v3.2-exp-full": _override(
        _moe(
            _mla(
                61,
                7168,
                128,
                163840,
                arch="deepseek32",
                **{
                    "{arch}.vocab_size": 129280,
                    "{arch}.attention.indexer.head_count": 64,
                    "{arch}.attention.indexer.key_length": 128,
                    "{arch}.attention.indexer.top_k": 2048,
                    "{arch}.expert_gating_func": 2,
                    "{arch}.expert_weights_norm": True,
                },
            ),
            256,
            8,
            2048,
        ),
        **{"{arch}.leading_dense_block_count": 3, "{arch}.expert_shared_count": 1, "{arch}.expert_weights_scale": 2.5},
    ),
    # Hunyuan-A13B (config.json as tests/fixtures/hf_conversion.json records its conversion: 32 layers, hidden
    # 4096, 32 heads, 8 KV heads of 128, 64 experts of 3072, 8 used, one shared of 3072, 256K positions; vocabulary
    # 128167)
    "hunyuan-a13b": _override(
        _moe(
            _dense("hunyuan-moe", 32, 4096, 32, 8, 262144, head_dim=128, ff=3072, **{"{arch}.vocab_size": 128167}),
            64,
            8,
            3072,
        ),
        **{"{arch}.expert_shared_count": 1, "{arch}.expert_shared_feed_forward_length": 3072},
    ),
    # MiniCPM3-4B (config.json: 62 layers, hidden 2560, 40 heads, q_lora_rank 768, kv_lora_rank 256, heads of 64
    # without RoPE + 32 with, V heads of 64, intermediate 6400, vocabulary 73448, 32768 positions)
    "minicpm3-4b": _dense(
        "minicpm3",
        62,
        2560,
        40,
        40,
        32768,
        ff=6400,
        **{
            "{arch}.vocab_size": 73448,
            "{arch}.attention.key_length": 96,
            "{arch}.attention.value_length": 64,
            "{arch}.rope.dimension_count": 32,
            "{arch}.attention.q_lora_rank": 768,
            "{arch}.attention.kv_lora_rank": 256,
        },
    ),
}


def _every(n: int, pred) -> list:
    return [pred(i) for i in range(n)]


NEMOTRON_NANO_9B = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"
NEMOTRON_3_NANO = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"

# Recurrent / hybrid / sparse models: llama.cpp requires many family keys, so these start from the metadata
# of llama.cpp's own tiny model of the family, with the real dimensions written over it. "-shape" models
# have realistic dimensions where a source does not pin every number (see model_specs/ for sourced ones).
FROM_TINY: dict[str, tuple[str, dict]] = {
    "qwen3-next-80b-a3b": (
        "qwen3next-moe.gguf",
        {
            "{arch}.block_count": 48,
            "{arch}.embedding_length": 2048,
            "{arch}.context_length": 262144,
            "{arch}.attention.head_count": 16,
            "{arch}.attention.head_count_kv": 2,
            "{arch}.attention.key_length": 256,
            "{arch}.attention.value_length": 256,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 4096,
            "{arch}.ssm.state_size": 128,
            "{arch}.ssm.group_count": 16,
            "{arch}.ssm.time_step_rank": 32,
            "{arch}.full_attention_interval": 4,
            "{arch}.attention.recurrent_layers": _every(48, lambda i: (i + 1) % 4 != 0),
        },
    ),
    "jamba-1.5-mini": (
        "jamba-dense.gguf",
        {
            "{arch}.block_count": 32,
            "{arch}.embedding_length": 4096,
            "{arch}.context_length": 262144,
            "{arch}.attention.head_count": 32,
            "{arch}.attention.head_count_kv": _every(32, lambda i: 8 if i % 8 == 4 else 0),
            "{arch}.attention.key_length": 128,
            "{arch}.attention.value_length": 128,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 8192,
            "{arch}.ssm.state_size": 16,
            "{arch}.ssm.time_step_rank": 256,
        },
    ),
    "falcon-mamba-7b": (
        "mamba-dense.gguf",
        {
            "{arch}.block_count": 64,
            "{arch}.embedding_length": 4096,
            "{arch}.context_length": 2**20,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 8192,
            "{arch}.ssm.state_size": 16,
            "{arch}.ssm.time_step_rank": 256,
        },
    ),
    "mamba-codestral-7b": (
        "mamba2-dense.gguf",
        {
            "{arch}.block_count": 64,
            "{arch}.embedding_length": 4096,
            "{arch}.context_length": 2**20,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 8192,
            "{arch}.ssm.state_size": 128,
            "{arch}.ssm.group_count": 8,
            "{arch}.ssm.time_step_rank": 128,
        },
    ),
    "minimax-m1": (
        "minimax-01-moe.gguf",
        {
            "{arch}.block_count": 80,
            "{arch}.embedding_length": 6144,
            "{arch}.context_length": 10240000,
            "{arch}.attention.head_count": 64,
            "{arch}.attention.head_count_kv": 8,
            "{arch}.attention.key_length": 128,
            "{arch}.attention.value_length": 128,
            "{arch}.attention.recurrent_layers": _every(80, lambda i: (i + 1) % 8 != 0),
        },
    ),
    "deepseek-v3.2-exp": (
        "deepseek32-moe.gguf",
        {
            "{arch}.block_count": 62,
            "{arch}.nextn_predict_layers": 1,
            "{arch}.embedding_length": 7168,
            "{arch}.context_length": 163840,
            "{arch}.attention.head_count": 128,
            "{arch}.attention.head_count_kv": 1,
            "{arch}.attention.key_length": 576,
            "{arch}.attention.value_length": 512,
            "{arch}.attention.key_length_mla": 192,
            "{arch}.attention.value_length_mla": 128,
            "{arch}.attention.indexer.key_length": 128,
            "{arch}.attention.indexer.head_count": 64,
            "{arch}.attention.indexer.top_k": 2048,
        },
    ),
    "glm-5.2-shape": (
        "glm-dsa-moe.gguf",
        {
            "{arch}.block_count": 40,
            "{arch}.embedding_length": 6144,
            "{arch}.context_length": 1048576,
            "{arch}.attention.head_count": 64,
            "{arch}.attention.head_count_kv": 1,
        },
    ),
    # GLM-5.2's layer pattern of lightning indexers (GLM_5_2_DEFAULT_INDEXER_TYPES, from its config.json: the
    # first three layers and every fourth after run their own, the others reuse the last one's top-k)
    "glm-5.2-shared-indexers-shape": (
        "glm-dsa-moe.gguf",
        {
            "{arch}.block_count": 40,
            "{arch}.embedding_length": 6144,
            "{arch}.context_length": 1048576,
            "{arch}.attention.head_count": 64,
            "{arch}.attention.head_count_kv": 1,
            "{arch}.attention.indexer.types": _every(40, lambda i: int(i < 2 or (i - 2) % 4 == 0)),
        },
    ),
    "granite-4.0-h-small-shape": (
        "granitehybrid-dense.gguf",
        {
            "{arch}.block_count": 40,
            "{arch}.embedding_length": 4096,
            "{arch}.context_length": 2**20,
            "{arch}.attention.head_count": 32,
            "{arch}.attention.head_count_kv": _every(40, lambda i: 8 if i in (5, 15, 25, 35) else 0),
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 8192,
            "{arch}.ssm.state_size": 128,
            "{arch}.ssm.group_count": 1,
            "{arch}.ssm.time_step_rank": 128,
        },
    ),
    # NVIDIA-Nemotron-Nano-9B-v2's hybrid_override_pattern (M: Mamba-2, -: ReLU² MLP, *: attention), its
    # widths as its config.json states them (hidden 4480, 40 heads / 8 KV of 128, Mamba 128 heads × 80, 8 groups)
    "nemotron-nano-9b-v2-shape": (
        "nemotron_h-dense.gguf",
        {
            "{arch}.block_count": 56,
            "{arch}.embedding_length": 4480,
            "{arch}.context_length": 131072,
            "{arch}.feed_forward_length": [15680 if c == "-" else 0 for c in NEMOTRON_NANO_9B],
            "{arch}.attention.head_count": 40,  # (the converter writes one count; the KV heads per layer)
            "{arch}.attention.head_count_kv": [8 if c == "*" else 0 for c in NEMOTRON_NANO_9B],
            "{arch}.attention.recurrent_layers": [1 if c == "M" else 0 for c in NEMOTRON_NANO_9B],
            "{arch}.attention.key_length": 128,
            "{arch}.attention.value_length": 128,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 10240,
            "{arch}.ssm.state_size": 128,
            "{arch}.ssm.group_count": 8,
            "{arch}.ssm.time_step_rank": 128,
        },
    ),
    # Nemotron-3-Nano-30B-A3B's pattern (E: 128 ReLU² experts, 6 used, and a shared one), widths as its config
    # states them as far as recalled here (hidden 2688, 32 heads / 2 KV, Mamba 64 heads × 64, 8 groups): a shape
    "nemotron-3-nano-30b-a3b-shape": (
        "nemotron_h_moe-dense.gguf",
        {
            "{arch}.block_count": 52,
            "{arch}.embedding_length": 2688,
            "{arch}.context_length": 262144,
            "{arch}.feed_forward_length": [1856 if c == "E" else 0 for c in NEMOTRON_3_NANO],
            "{arch}.attention.head_count": 32,
            "{arch}.attention.head_count_kv": [2 if c == "*" else 0 for c in NEMOTRON_3_NANO],
            "{arch}.attention.recurrent_layers": [1 if c == "M" else 0 for c in NEMOTRON_3_NANO],
            "{arch}.attention.key_length": 128,
            "{arch}.attention.value_length": 128,
            "{arch}.expert_count": 128,
            "{arch}.expert_used_count": 6,
            "{arch}.expert_feed_forward_length": 1856,
            "{arch}.expert_shared_feed_forward_length": 3712,
            "{arch}.expert_shared_count": 1,
            "{arch}.expert_weights_norm": True,
            "{arch}.expert_weights_scale": 2.5,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 4096,
            "{arch}.ssm.state_size": 128,
            "{arch}.ssm.group_count": 8,
            "{arch}.ssm.time_step_rank": 64,
        },
    ),
    "falcon-h1-7b-shape": (
        "falcon-h1-dense.gguf",
        {
            "{arch}.block_count": 44,
            "{arch}.embedding_length": 3072,
            "{arch}.context_length": 262144,
            "{arch}.attention.head_count": 12,
            "{arch}.attention.head_count_kv": 2,
            "{arch}.attention.key_length": 128,
            "{arch}.attention.value_length": 128,
            "{arch}.ssm.conv_kernel": 4,
            "{arch}.ssm.inner_size": 3072,
            "{arch}.ssm.state_size": 256,
            "{arch}.ssm.group_count": 1,
            "{arch}.ssm.time_step_rank": 24,
        },
    ),
    "lfm2-1.2b-shape": (
        "lfm2-dense.gguf",
        {
            "{arch}.block_count": 16,
            "{arch}.embedding_length": 2048,
            "{arch}.context_length": 128000,
            "{arch}.attention.head_count": 32,
            "{arch}.attention.key_length": 64,
            "{arch}.attention.value_length": 64,
            "{arch}.attention.key_length_swa": 64,
            "{arch}.attention.value_length_swa": 64,
            "{arch}.rope.dimension_count": 64,
            "{arch}.rope.dimension_count_swa": 64,
            "{arch}.attention.sliding_window": 4096,
            "{arch}.attention.head_count_kv": _every(16, lambda i: 8 if i in (2, 5, 8, 10, 12, 14) else 0),
        },
    ),
}

# DeciLM / Nemotron-NAS (llama.cpp's deci): layers with their own query and KV heads and feed-forward widths — no
# attention (0 heads), "linear attention" (0 KV heads), no feed-forward (0 width) — a shape of those kinds, not a
# published checkpoint's (no Nemotron-51B config was found to cite)
FROM_TINY["deci-varied-shape"] = (
    "deci-dense.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 1024,
        "{arch}.attention.head_count": [16, 16, 0, 16, 16, 16, 16, 16, 16, 0, 16, 16],
        "{arch}.attention.head_count_kv": [4, 8, 0, 0, 4, 2, 4, 4, 0, 0, 8, 4],
        "{arch}.feed_forward_length": [2816, 0, 2816, 1408, 2816, 5632, 2816, 2816, 1408, 2816, 0, 2816],
        "{arch}.attention.key_length": 64,
        "{arch}.attention.value_length": 64,
        "{arch}.rope.dimension_count": 64,
        "{arch}.context_length": 131072,
    },
)
# HRM-Text (DFM Mimir 1B's width, 1,536; its other numbers are not published here; the tiny model's vocabulary,
# which its tokenizer fixes): 4 layers per stack, 2 high
# and 2 low cycles, so 24 cache slots over 8 blocks of weights
FROM_TINY["hrm-text-shape"] = (
    "hrm_text-dense.gguf",
    {
        "{arch}.block_count": 24,
        "{arch}.embedding_length": 1536,
        "{arch}.feed_forward_length": 4096,
        "{arch}.attention.head_count": 12,
        "{arch}.attention.head_count_kv": 4,
        "{arch}.attention.key_length": 128,
        "{arch}.attention.value_length": 128,
        "{arch}.rope.dimension_count": 128,
        "{arch}.context_length": 8192,
        "{arch}.hrm.layers_per_stack": 4,
        "{arch}.hrm.h_cycles": 2,
        "{arch}.hrm.l_cycles": 2,
    },
)
# Laguna (XS.2's kind: hybrid windows every three of four layers, full layers first; more heads on the full
# layers; a per-head softplus gate; its published numbers are not found here, so a shape of that kind)
FROM_TINY["laguna-shape"] = (
    "laguna-moe.gguf",
    {
        "{arch}.block_count": 16,
        "{arch}.embedding_length": 2048,
        "{arch}.feed_forward_length": 8192,
        "{arch}.attention.head_count": [32 if i % 4 == 0 else 16 for i in range(16)],
        "{arch}.attention.head_count_kv": [8 if i % 4 == 0 else 4 for i in range(16)],
        "{arch}.attention.key_length": 128,
        "{arch}.attention.value_length": 128,
        "{arch}.attention.key_length_swa": 128,
        "{arch}.attention.value_length_swa": 128,
        "{arch}.rope.dimension_count": 128,
        "{arch}.rope.dimension_count_swa": 128,
        "{arch}.attention.sliding_window": 4096,
        "{arch}.attention.sliding_window_pattern": [0 if i % 4 == 0 else 1 for i in range(16)],
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 1024,
        "{arch}.expert_shared_feed_forward_length": 1024,
        "{arch}.leading_dense_block_count": 1,
        "{arch}.context_length": 131072,
    },
)
# MiMo-V2 (Flash's kind: windows of 128 on five of six layers, K heads 192 and V heads 128 wide, more KV heads on
# the window layers, 256 experts, the attention output scaled; not a published config — none was found here)
FROM_TINY["mimo2-shape"] = (
    "mimo2-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 4096,
        "{arch}.feed_forward_length": 16384,
        "{arch}.attention.head_count": 64,
        "{arch}.attention.head_count_kv": [4 if i % 6 == 0 else 8 for i in range(12)],
        "{arch}.attention.key_length": 192,
        "{arch}.attention.value_length": 128,
        "{arch}.attention.key_length_swa": 192,
        "{arch}.attention.value_length_swa": 128,
        "{arch}.rope.dimension_count": 64,
        "{arch}.rope.dimension_count_swa": 64,
        "{arch}.attention.sliding_window": 128,
        "{arch}.attention.sliding_window_pattern": [0 if i % 6 == 0 else 1 for i in range(12)],
        "{arch}.attention.value_scale": 0.707,
        "{arch}.expert_count": 256,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 2048,
        "{arch}.context_length": 262144,
    },
)
# PLaMo 2 (its 1B's kind: Mamba layers with an attention layer every fourth, 2,048 wide; not a published config)
FROM_TINY["plamo2-shape"] = (
    "plamo2-dense.gguf",
    {
        "{arch}.block_count": 16,
        "{arch}.embedding_length": 2048,
        "{arch}.feed_forward_length": 8192,
        "{arch}.attention.head_count": [16 if i % 4 == 3 else 0 for i in range(16)],
        "{arch}.attention.head_count_kv": [4 if i % 4 == 3 else 0 for i in range(16)],
        "{arch}.ssm.inner_size": 4096,
        "{arch}.ssm.state_size": 64,
        "{arch}.ssm.time_step_rank": 32,
        "{arch}.ssm.conv_kernel": 4,
        "{arch}.context_length": 32768,
    },
)
# Hy V3 (a shape of its kind: Q/K norms, 64 sigmoid-routed experts with a shared one; no published config here)
FROM_TINY["hy-v3-shape"] = (
    "hy_v3-moe.gguf",
    {
        "{arch}.block_count": 16,
        "{arch}.embedding_length": 4096,
        "{arch}.feed_forward_length": 12288,
        "{arch}.attention.head_count": 32,
        "{arch}.attention.head_count_kv": 8,
        "{arch}.attention.key_length": 128,
        "{arch}.attention.value_length": 128,
        "{arch}.rope.dimension_count": 128,
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 1536,
        "{arch}.expert_shared_feed_forward_length": 1536,
        "{arch}.context_length": 131072,
    },
)
# BailingMoE 3 (its 7.9B-A1.3B's kind: 24 layers 1,536 wide, 128 experts, KDA layers with an MLA layer every
# fourth, clamped SwiGLUs after the first layer; the other numbers are not published here)
FROM_TINY["bailingmoe3-shape"] = (
    "bailingmoe3-moe.gguf",
    {
        "{arch}.block_count": 24,
        "{arch}.embedding_length": 1536,
        "{arch}.feed_forward_length": 4096,
        "{arch}.attention.head_count": 16,
        "{arch}.attention.head_count_kv": [1 if i % 4 == 3 else 0 for i in range(24)],  # (MLA: one latent head)
        "{arch}.attention.recurrent_layers": [0 if i % 4 == 3 else 1 for i in range(24)],
        "{arch}.expert_count": 128,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 512,
        "{arch}.expert_shared_feed_forward_length": 512,
        "{arch}.swiglu_clamp_exp": [0.0] + [7.0] * 23,
        "{arch}.swiglu_clamp_shexp": [0.0] + [7.0] * 23,
        "{arch}.context_length": 32768,
    },
)
# Kimi-Linear (48B-A3B's widths as llama.cpp's kimi-linear.cpp comments give them: 2,304 wide, 32 KDA heads of 128,
# the MLA latent 512 + 64; three KDA layers to each MLA layer, 12 layers here; 256 experts)
FROM_TINY["kimi-linear-shape"] = (
    "kimi-linear-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 2304,
        "{arch}.feed_forward_length": 9216,
        "{arch}.attention.head_count": 32,
        "{arch}.attention.head_count_kv": [1 if i % 4 == 3 else 0 for i in range(12)],
        "{arch}.attention.recurrent_layers": [0 if i % 4 == 3 else 1 for i in range(12)],
        "{arch}.expert_count": 256,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 1024,
        "{arch}.context_length": 131072,
    },
)
# dots.llm3-note (its kind as dots3note.cpp reads it: DSA-indexed MLA on the full layers, narrower MLA on the
# sliding-window layers, a head-wise output gate; the 288B-A19B's numbers are not published here): 12 layers, one
# full layer in four, the window layers with fewer query heads and a smaller latent, 64 experts
FROM_TINY["dots3note-shape"] = (
    "dots3note-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 2048,
        "{arch}.feed_forward_length": 8192,
        "{arch}.attention.head_count": [32 if i % 4 == 0 else 16 for i in range(12)],
        "{arch}.attention.head_count_kv": 1,
        "{arch}.attention.q_lora_rank": 1024,
        "{arch}.attention.kv_lora_rank": 512,
        "{arch}.attention.key_length": 576,
        "{arch}.attention.value_length": 512,
        "{arch}.attention.key_length_mla": 192,
        "{arch}.attention.value_length_mla": 128,
        "{arch}.attention.kv_lora_rank_swa": 256,
        "{arch}.attention.key_length_swa": 320,
        "{arch}.attention.value_length_swa": 256,
        "{arch}.attention.key_length_mla_swa": 128,
        "{arch}.attention.value_length_mla_swa": 96,
        "{arch}.attention.sliding_window": 1024,
        "{arch}.attention.sliding_window_pattern": [0 if i % 4 == 0 else 1 for i in range(12)],
        "{arch}.attention.indexer.types": [1 if i % 4 == 0 else 0 for i in range(12)],
        "{arch}.attention.indexer.head_count": 32,
        "{arch}.attention.indexer.key_length": 128,
        "{arch}.attention.indexer.top_k": 1024,
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 6,
        "{arch}.expert_feed_forward_length": 768,
        "{arch}.context_length": 131072,
    },
)
# Tencent Hy V4 (its kind as hy-v4.cpp reads it: 4 hyper-connection streams, absorbed MLA with sinks and an
# element-wise output gate, DSA whose indexer layer 0 owns and later layers share; the released sizes are not
# published here): 12 layers 4,096 wide, an indexer every third layer, top-k 2,048; and the same without DSA
# (indexer.top_k 0: the all-full-attention checkpoints)
FROM_TINY["hy-v4-shape"] = (
    "hy_v4-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 4096,
        "{arch}.feed_forward_length": 12288,
        "{arch}.attention.head_count": 32,
        "{arch}.attention.q_lora_rank": 1536,
        "{arch}.attention.indexer.head_count": 32,
        "{arch}.attention.indexer.top_k": 2048,
        "{arch}.attention.indexer.types": [1 if i % 3 == 0 else 0 for i in range(12)],
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 1024,
        "{arch}.context_length": 131072,
    },
)
FROM_TINY["hy-v4-dense-attention-shape"] = (
    "hy_v4-moe.gguf",
    {**FROM_TINY["hy-v4-shape"][1], "{arch}.attention.indexer.top_k": 0, "{arch}.attention.indexer.head_count": 0},
)
# Kimi K3 (its kind as kimi-k3.cpp reads it: Kimi-Linear's three KDA layers to one MLA layer, a cross-layer
# residual attention banking every block_size layers, situ activations, experts in a latent width; the 2.8T's
# numbers are not published here): 12 layers 2,048 wide, a bank every 4 layers, 64 experts with a 1,024 latent;
# and a variant without the residual attention, the latent, situ's up transform and the gate's lower bound
FROM_TINY["kimi-k3-shape"] = (
    "kimi-k3-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 2048,
        "{arch}.feed_forward_length": 8192,
        "{arch}.attention.head_count": 32,
        "{arch}.attention.head_count_kv": [1 if i % 4 == 3 else 0 for i in range(12)],
        "{arch}.attention.recurrent_layers": [0 if i % 4 == 3 else 1 for i in range(12)],
        "{arch}.attention.q_lora_rank": 1024,
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 512,
        "{arch}.expert_latent_length": 1024,
        "{arch}.attn_res.block_size": 4,
        "{arch}.context_length": 131072,
    },
)
FROM_TINY["kimi-k3-plain-shape"] = (
    "kimi-k3-moe.gguf",
    {
        **FROM_TINY["kimi-k3-shape"][1],
        "{arch}.expert_latent_length": 0,
        "{arch}.attn_res.block_size": 0,
        "{arch}.activation.situ_linear_beta": 0.0,
        "{arch}.kda.gate_lower_bound": float("-inf"),
    },
)
# MiniMax-M3 (its kind as minimax-m3.cpp reads it: MiniMax-M2's attention with sparse attention after the dense
# lead, one indexer head per KV group scoring blocks of positions; the 428B-A23B's numbers are not published
# here): 12 layers 3,072 wide, 32 heads over 4 KV groups, blocks of 32 positions, the top 4 blocks
FROM_TINY["minimax-m3-shape"] = (
    "minimax-m3-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 3072,
        "{arch}.feed_forward_length": 8192,
        "{arch}.leading_dense_block_count": 2,
        "{arch}.attention.head_count": 32,
        "{arch}.attention.head_count_kv": 4,
        "{arch}.attention.indexer.head_count": 4,
        "{arch}.attention.indexer.block_size": 32,
        "{arch}.attention.indexer.top_k": 4,
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 4,
        "{arch}.expert_feed_forward_length": 768,
        "{arch}.context_length": 131072,
    },
)
# GLM-5-Next (its kind as glm5-next.cpp reads it: three KDA layers to one MLA layer without RoPE, four mHC streams,
# a k-pool indexer pooling 4 tokens into a key, its selection shared by the next MLA layer; GLM-5.3-Flash's numbers
# are not published here): 12 layers 2,048 wide, the indexer full on layers 3 and 11, shared on 7, top-k 2,048
FROM_TINY["glm5-next-shape"] = (
    "glm5-next-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 2048,
        "{arch}.feed_forward_length": 8192,
        "{arch}.attention.head_count": 32,
        "{arch}.attention.head_count_kv": [1 if i % 4 == 3 else 0 for i in range(12)],
        "{arch}.attention.recurrent_layers": [0 if i % 4 == 3 else 1 for i in range(12)],
        "{arch}.attention.q_lora_rank": 1024,
        "{arch}.attention.indexer.head_count": 32,
        "{arch}.attention.indexer.top_k": 2048,
        "{arch}.attention.indexer.types": [0 if i == 7 else 1 for i in range(12)],
        "{arch}.expert_count": 64,
        "{arch}.expert_used_count": 8,
        "{arch}.expert_feed_forward_length": 512,
        "{arch}.context_length": 131072,
    },
)
FROM_TINY["qwen4exp-shape"] = (
    "qwen4exp-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 1024,
        "{arch}.embedding_length_per_layer_input": 256,
        "{arch}.feed_forward_length": 2048,
        "{arch}.attention.head_count": 8,
        "{arch}.attention.head_count_kv": 2,
        "{arch}.attention.recurrent_layers": [0 if i % 4 == 3 else 1 for i in range(12)],
        "{arch}.attention.compress_ratios": [{3: 4, 7: 0, 11: 8}.get(i, 0) for i in range(12)],
        "{arch}.attention.indexer.head_count": 16,
        "{arch}.attention.indexer.top_k": 256,
        "{arch}.hyper_connection.low_rank": 16,
        "{arch}.ssm.inner_size": 1024,
        "{arch}.ssm.time_step_rank": 8,
        "{arch}.ssm.group_count": 4,
        "{arch}.expert_count": 32,
        "{arch}.expert_used_count": 4,
        "{arch}.expert_feed_forward_length": 256,
        "{arch}.expert_shared_feed_forward_length": 512,
        "{arch}.context_length": 131072,
    },
)
FROM_TINY["deepseek4-shape"] = (
    "deepseek4-moe.gguf",
    {
        "{arch}.block_count": 12,
        "{arch}.embedding_length": 2048,
        "{arch}.attention.head_count": 16,
        "{arch}.attention.key_length": 512,
        "{arch}.attention.value_length": 512,
        "{arch}.attention.key_length_swa": 512,
        "{arch}.attention.value_length_swa": 512,
        "{arch}.rope.dimension_count": 64,
        "{arch}.attention.q_lora_rank": 512,
        "{arch}.attention.output_group_count": 4,
        "{arch}.attention.output_lora_rank": 256,
        "{arch}.attention.sliding_window": 128,
        "{arch}.attention.indexer.head_count": 32,
        "{arch}.attention.indexer.top_k": 512,
        "{arch}.attention.compress_ratios": [0, 0] + [4 if i % 2 == 0 else 128 for i in range(2, 12)],
        "{arch}.expert_count": 32,
        "{arch}.expert_used_count": 4,
        "{arch}.expert_feed_forward_length": 512,
        "{arch}.context_length": 1048576,
    },
)
FROM_TINY["qwen3-next-80b-a3b-mtp"] = (
    "qwen3next-moe.gguf",
    {
        **FROM_TINY["qwen3-next-80b-a3b"][1],
        "{arch}.block_count": 49,
        "{arch}.nextn_predict_layers": 1,
        "{arch}.attention.recurrent_layers": _every(49, lambda i: i < 48 and (i + 1) % 4 != 0),
    },
)

# llama.cpp's tiny models have no nextn/MTP layers; these variants append one (every per-layer array grows
# by one attention entry) so the main context's nextn handling and the MTP draft context are recorded for
# each family whose graph has an MTP head.
NEXTN_VARIANTS = [
    "deepseek2-moe.gguf",
    "glm4moe-moe.gguf",
    "qwen35moe-moe.gguf",
    "qwen3next-moe.gguf",
    "bailingmoe3-moe.gguf",
    "glm-dsa-moe.gguf",
    "deepseek32-moe.gguf",
]
_N_LAYER_ARRAYS = {"{arch}.attention.indexer.types", "{arch}.attention.sliding_window_pattern"}


def nextn_overrides(arch: str, kvs: list) -> dict:
    n = next(v for k, v, *_ in kvs if k == f"{arch}.block_count")
    out: dict = {"{arch}.block_count": n + 1, "{arch}.nextn_predict_layers": 1}
    for key, val, _vtype, _sub in kvs:
        tmpl = key.replace(arch + ".", "{arch}.", 1)
        if isinstance(val, list) and len(val) == n and tmpl not in _N_LAYER_ARRAYS:
            out[tmpl] = val + ([type(val[0])(0)] if "recurrent_layers" in tmpl else [max(val)])
    return out


TYPE_PAIRS = [
    ("f16", "f16"),
    ("q8_0", "q8_0"),
    ("q4_0", "q4_0"),
    ("f32", "f16"),
    ("bf16", "bf16"),
    ("q8_0", "f16"),
    ("f16", "q4_1"),
    ("q5_1", "q5_0"),
    ("iq4_nl", "iq4_nl"),
]


def grid(seed: str, n: int) -> list[dict]:
    """A fixed core of settings plus ``n`` seeded-random ones over the whole grid."""
    core = [
        {"n_ctx": 4096, "n_seq_max": 1, "kv_unified": 0, "type_k": "f16", "type_v": "f16", "fa": -1, "swa_full": 0},
        {"n_ctx": 1000, "n_seq_max": 1, "kv_unified": 0, "type_k": "f16", "type_v": "f16", "fa": 0, "swa_full": 0},
        {"n_ctx": 100, "n_seq_max": 1, "kv_unified": 0, "type_k": "f16", "type_v": "f16", "fa": 1, "swa_full": 0},
        {"n_ctx": 4096, "n_seq_max": 3, "kv_unified": 0, "type_k": "f16", "type_v": "f16", "fa": -1, "swa_full": 0},
        {"n_ctx": 4096, "n_seq_max": 4, "kv_unified": 1, "type_k": "f16", "type_v": "f16", "fa": -1, "swa_full": 0},
        {"n_ctx": 8192, "n_seq_max": 2, "kv_unified": 0, "type_k": "q8_0", "type_v": "q8_0", "fa": 1, "swa_full": 1},
        {"n_ctx": 3000, "n_seq_max": 1, "kv_unified": 0, "type_k": "q8_0", "type_v": "q4_0", "fa": 0, "swa_full": 0},
        {
            "n_ctx": 5000,
            "n_seq_max": 2,
            "kv_unified": 1,
            "type_k": "f16",
            "type_v": "f16",
            "fa": -1,
            "swa_full": 0,
            "n_ubatch": 2048,
        },
        {"n_ctx": 0, "n_seq_max": 1, "kv_unified": 0, "type_k": "f16", "type_v": "f16", "fa": -1, "swa_full": 0},
        {
            "n_ctx": 4096,
            "n_seq_max": 2,
            "kv_unified": 0,
            "type_k": "f16",
            "type_v": "f16",
            "fa": -1,
            "swa_full": 0,
            "n_rs_seq": 2,
        },
        {
            "n_ctx": 4096,
            "n_seq_max": 3,
            "kv_unified": 1,
            "type_k": "q8_0",
            "type_v": "q8_0",
            "fa": 1,
            "swa_full": 0,
            "n_rs_seq": 3,
        },
        # the MTP draft context (refused where the model has no nextn layers)
        {
            "n_ctx": 4096,
            "n_seq_max": 1,
            "kv_unified": 0,
            "type_k": "f16",
            "type_v": "f16",
            "fa": -1,
            "swa_full": 0,
            "mtp": 1,
        },
        {
            "n_ctx": 3000,
            "n_seq_max": 2,
            "kv_unified": 0,
            "type_k": "q8_0",
            "type_v": "q8_0",
            "fa": 1,
            "swa_full": 0,
            "mtp": 1,
        },
        {
            "n_ctx": 8192,
            "n_seq_max": 4,
            "kv_unified": 1,
            "type_k": "f16",
            "type_v": "f16",
            "fa": 0,
            "swa_full": 1,
            "mtp": 1,
        },
    ]
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    extra = []
    for _ in range(n):
        tk, tv = rng.choice(TYPE_PAIRS)
        p = {
            "n_ctx": rng.choice([1, 100, 255, 256, 257, 511, 1000, 2048, 3000, 4096, 6000, 8192, 20000]),
            "n_seq_max": rng.choice([1, 1, 2, 3, 4]),
            "kv_unified": rng.choice([0, 1]),
            "type_k": tk,
            "type_v": tv,
            "fa": rng.choice([-1, 0, 1]),
            "swa_full": rng.choice([0, 1]),
        }
        if rng.random() < 0.3:
            p["n_ubatch"] = rng.choice([64, 256, 1024, 2048])
        if rng.random() < 0.2:
            p["n_batch"] = rng.choice([128, 512, 4096])
        p["n_rs_seq"] = rng.choice([0, 0, 1, 2, 3])
        extra.append(p)
    out = []
    for p in core + extra:
        p.setdefault("n_batch", 2048)
        p.setdefault("n_ubatch", 512)
        p.setdefault("n_rs_seq", 0)
        p.setdefault("mtp", 0)
        out.append(p)
    return out


_REASON_RE = re.compile(
    r"(llama_init_from_model: .*|GGML_ASSERT\(.*\) failed|llama_context: .*(?:exception|error).*|"
    r".*error loading model.*|terminate called.*|what\(\): .*)"
)


_INFO_RE = re.compile(r"enabling flash_attn since|forcing off")  # llama.cpp notes, not refusals


def run_case(harness: str, gguf: str, params: dict) -> dict:
    """Like ../shared/oracle/run_cases.py's run(), keeping llama.cpp's own reason for a refusal."""
    keys = (
        "n_ctx",
        "n_seq_max",
        "kv_unified",
        "type_k",
        "type_v",
        "fa",
        "swa_full",
        "n_batch",
        "n_ubatch",
        "n_rs_seq",
        "mtp",
    )
    # load_mtp=1: llama.cpp's loader aborts on skipped virtual nextn weights; it does not change the cache
    argv = [harness, gguf, "no_alloc=1", "load_mtp=1"] + [f"{k}={params[k]}" for k in keys if k in params]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    ctx = [int(m.group(1)) for m in re.finditer(r"^BREAKDOWN \S+ model=\d+ context=(\d+)", out, re.M)]
    m = re.search(r"^N_CTX (\d+) N_CTX_SEQ (\d+) N_SEQ_MAX (\d+) N_UBATCH (\d+)", out, re.M)
    if p.returncode != 0 or not m:
        reasons = [
            r.group(1).strip()
            for line in out.splitlines()
            if (r := _REASON_RE.search(line)) and not _INFO_RE.search(line)
        ]
        reason = reasons[0] if reasons else f"exit {p.returncode}"
        reason = re.sub(r"^/\S+/(src|ggml)/", r"\1/", reason)  # no build paths in fixtures
        return {"error": reason[:300]}
    return {
        "context_bytes": sum(ctx),
        "n_ctx": int(m.group(1)),
        "n_ctx_seq": int(m.group(2)),
        "n_ubatch": int(m.group(4)),
    }


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("oracle_dir")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--per-model", type=int, default=40, help="random grid points per model")
    args = ap.parse_args()
    oracle = Path(args.oracle_dir).resolve()
    shared = Path(args.shared) / "oracle"
    strip = _load_module(shared / "strip.py", "strip")
    mkmeta = _load_module(shared / "mkmeta.py", "mkmeta")
    harness = str(oracle / "harness")

    (OUT / "tiny").mkdir(parents=True, exist_ok=True)
    (OUT / "real").mkdir(parents=True, exist_ok=True)
    (OUT / "nextn").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(oracle / "test-llama-archs"), "-o", tmp], check=True, capture_output=True)
        for f in sorted(os.listdir(tmp)):
            arch, kvs = strip.read_kv(os.path.join(tmp, f))
            strip.write(str(OUT / "tiny" / f), arch, kvs, {})
    for name, spec in REAL_MODELS.items():
        mkmeta.write(str(OUT / "real" / f"{name}.gguf"), spec["arch"], spec["kv"])
    for name, (tiny, overrides) in FROM_TINY.items():
        arch, kvs = strip.read_kv(str(OUT / "tiny" / tiny))
        n_tiny = next(v for k, v, *_ in kvs if k == f"{arch}.block_count")
        full = dict(overrides)
        for key, val, _vtype, _sub in kvs:
            tmpl = key.replace(arch + ".", "{arch}.", 1)
            if isinstance(val, list) and len(val) == n_tiny and tmpl not in full:
                full[tmpl] = val[0]  # a per-layer array of the tiny model: one value for every layer
        strip.write(str(OUT / "real" / f"{name}.gguf"), arch, kvs, full)
    for tiny in NEXTN_VARIANTS:
        arch, kvs = strip.read_kv(str(OUT / "tiny" / tiny))
        strip.write(str(OUT / "nextn" / tiny), arch, kvs, nextn_overrides(arch, kvs))

    cases = []
    for sub in ("tiny", "real", "nextn"):
        for f in sorted(os.listdir(OUT / sub)):
            rel = f"{sub}/{f}"
            for i, params in enumerate(grid(rel, args.per_model)):
                case = {"id": f"{rel}#{i}", "gguf": rel, "params": params}
                case.update(run_case(harness, str(OUT / rel), params))
                cases.append(case)
            print(
                f"{rel}: {sum(1 for c in cases if c['gguf'] == rel and 'error' in c)} refusals",
                file=sys.stderr,
            )
    doc = {
        "llama_cpp": LLAMA_CPP_VERSION,
        "backend": "CPU",
        "generator": "scripts/record_oracle.py",
        "cases": cases,
    }
    (OUT / "cases.json").write_text(json.dumps(doc, indent=0, sort_keys=False) + "\n")
    print(f"{len(cases)} cases, {sum(1 for c in cases if 'error' in c)} refused by llama.cpp")


if __name__ == "__main__":
    main()
