"""Write scripts/checkpoints.yaml: each catalog checkpoint's weight-shaping config.json fields, storage format and
published parameter count, from sources read here (make_catalog.py merges it into model_specs/).

usage: python scripts/extract_checkpoints.py MAXTEXT_REPO MLC_REPO KERAS_HUB_REPO TORCHTUNE_REPO THUNDER_REPO
       MBRIDGE_REPO

The six are git checkouts (or bare mirrors) of AI-Hypercomputer/maxtext, mlc-ai/mlc-llm, keras-team/keras-hub and
pytorch/torchtune (its model builders: the checkpoints' shapes as keyword arguments) and
kevinstephano/thunder_model_blocks (a verbatim config.json of Mistral-Nemo) and NVIDIA-NeMo/Megatron-Bridge (its unit
tests' HF config dicts: Qwen3-Next-80B-A3B's);
the files read and the commits recorded are below. Configs are HF config.json copies: MaxText's
``hf_model_configs.py`` (``transformers.*Config(...)`` literals; the class defaults a literal leaves out are
transformers', from kvplan/facts/hf_archs.py) and MLC's ``MODEL_PRESETS``. Keras Hub's presets state each
checkpoint's parameter count; tests/sources/test_param_count.py checks kvplan's count against them.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvplan.facts.hf_archs import CONFIG_CLASSES  # noqa: E402
from kvplan.sources.param_count import count_params  # noqa: E402

MAXTEXT_FILE = "src/maxtext/checkpoint_conversion/utils/hf_model_configs.py"
MLC_FILE = "python/mlc_llm/model/model_preset.py"
#: catalog name → MaxText variable
MAXTEXT = {
    "gemma-2-2b": "gemma2_2b_config", "gemma-2-9b": "gemma2_9b_config", "gemma-2-27b": "gemma2_27b_config",
    "gemma-3-4b": "gemma3_4b_config", "gemma-3-12b": "gemma3_12b_config", "gemma-3-27b": "gemma3_27b_config",
    "qwen2.5-7b": "qwen25_7b_config", "qwen2.5-14b": "qwen25_14b_config", "qwen3-0.6b": "qwen3_0_6b_config",
    "qwen3-4b": "qwen3_4b_config", "qwen3-8b": "qwen3_8b_config", "qwen3-14b": "qwen3_14b_config",
    "qwen3-32b": "qwen3_32b_config", "llama-3.1-8b": "llama31_8b_config", "llama-3.1-70b": "llama31_70b_config",
    "llama-3.1-405b": "llama31_405b_config", "qwen3-30b-a3b": "qwen3_30b_a3b_base_config",
    "qwen3-235b-a22b": "qwen3_235b_a22b_thinking_2507_config", "deepseek-v2-lite": "deepseek2_16b_dict",
    "deepseek-v3": "deepseek3_671b_dict", "deepseek-r1": "deepseek3_671b_dict",
    "deepseek-v3.2-exp": "deepseek32_671b_dict", "gpt-oss-20b": "gpt_oss_20b_dict",
    "gpt-oss-120b": "gpt_oss_120b_dict", "mixtral-8x7b": "mixtral_8x7b_dict", "mixtral-8x22b": "mixtral_8x22b_dict",
}  # fmt: skip
#: catalog name → MLC preset
MLC = {
    "llama-2-7b": "llama2_7b", "llama-2-13b": "llama2_13b", "llama-2-70b": "llama2_70b",
    "mistral-7b-v0.3": "mistral_7b_v03", "gemma-3-1b": "gemma3_1b_it", "llama-3.2-1b": "llama3_2_1b",
    "llama-3.2-3b": "llama3_2_3b", "smollm2-135m": "smollm2_135m", "smollm2-360m": "smollm2_360m",
    "olmo-2-7b": "olmo2_7b", "olmo-2-13b": "olmo2_13b", "olmo-2-32b": "olmo2_32b",
}  # fmt: skip
#: catalog name → (torchtune builder file, builder, model_type, tied output): the builder's shapes
TORCHTUNE = {
    "qwen2.5-0.5b": ("torchtune/models/qwen2_5/_model_builders.py", "qwen2_5_0_5b", "qwen2", True),
    "qwen2.5-32b": ("torchtune/models/qwen2_5/_model_builders.py", "qwen2_5_32b_instruct", "qwen2", False),
    "qwen2.5-72b": ("torchtune/models/qwen2_5/_model_builders.py", "qwen2_5_72b_instruct", "qwen2", False),
    "phi-4": ("torchtune/models/phi4/_model_builders.py", "phi4_14b", "phi3", False),
}
#: SmolLM2's builders pass the shapes positionally to smollm2(num_layers, num_heads, num_kv_heads, embed_dim,
#: intermediate_dim), whose defaults are vocabulary 49,152 and tied embeddings (_component_builders.py)
SMOLLM2 = {"smollm2-1.7b": "smollm2_1_7b"}
THUNDER = {"mistral-nemo-12b": "thunder_model_blocks/mistral/mistral_config.py"}
#: catalog name → a checkpoint's config.json copied verbatim into tests/fixtures/checkpoints/NAME/ (SOURCES.md there
#: says from where; read from there, so the extraction needs no further checkout)
VERBATIM = {
    "phi-3-medium-4k": "dotnet/machinelearning:src/Microsoft.ML.GenAI.Phi/Resource/Config/"
    "phi-3-medium-4k-instruct-config.json@17b689af7715 (Microsoft's ML.NET: the checkpoint's config.json)",
    "minimax-m1": "MiniMax-AI/MiniMax-M1:config.json@2abb4f45a9df (the model's official repository)",
    "falcon-mamba-7b": "sdpython/experimental-experiment:experimental_experiment/torch_models/llm_model_helper.py"
    "@04097e304004 (get_falcon_mamba_7b: tiiuae/falcon-mamba-7b's config.json as a dict; NX-AI/mlstm_kernels' "
    "copy agrees on every key but _name_or_path)",
    "mamba-codestral-7b": "NX-AI/mlstm_kernels:mlstm_kernels/utils/benchmark/benchmarks/huggingface_model_configs.py"
    "@39d3c61741e5 (codestral_mamba_config: mistralai/Mamba-Codestral-7B-v0.1's config.json as a dict)",
    "jamba-1.5-mini": "sdpython/experimental-experiment:experimental_experiment/torch_models/llm_model_helper.py"
    "@04097e304004 (get_ai21_jamba_15_mini: ai21labs/AI21-Jamba-1.5-Mini's config.json as a dict)",
    "falcon-h1-7b": "written from the fields a public fact sheet quotes from tiiuae/Falcon-H1-7B-Instruct's "
    "config.json (revision 41e72f27), the family's switches from Falcon-H1-34B's; its count is the Hub's safetensors "
    "count, 7,585,654,880, as two public records give it - tests/fixtures/checkpoints/falcon-h1-7b/SOURCES.md",
    "mistral-small-3.1-24b": "NVIDIA/TensorRT-LLM:tests/unittest/_torch/modeling/test_modeling_mistral.py"
    "@0373e5a1d2d9 (mistral_small_3_1_24b_config, its 40 text layers restored as its comment states)",
    "llama-4-maverick": "NVIDIA/TensorRT-LLM:tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py"
    "@0074a2241768 (LLAMA_4_MAVERICK_TWO_LAYER_CONFIG with its 48 text layers restored as its comment states) and "
    "AI-Hypercomputer/maxtext:src/maxtext/configs/models/llama4-17b-128e.yml@e591f30cbbf2 (the 34 vision layers)",
    "llama-4-scout": "ai-dynamo/aiconfigurator:aic-core/src/aiconfigurator_core/model_configs/"
    "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json@0b077da5e017 (its text config) with the vision encoder "
    "Scout shares with Maverick (TensorRT-LLM's copy above; MaxText's llama4-17b-16e.yml states the same)",
    "falcon-h1-34b": "Sahil170595/Chimeraforge:tests/fixtures/hybrid_configs/tiiuae_Falcon-H1-34B-Instruct.json"
    "@01db3697504580e6 (tiiuae/Falcon-H1-34B-Instruct's config.json, fetched from the Hub on 2026-09-05 by its "
    "MANIFEST.json) - tests/fixtures/checkpoints/falcon-h1-34b/SOURCES.md",
    "granite-4.0-h-tiny": "written from a gguf-dump of llama.cpp's conversion of the checkpoint, quoted in "
    "danbev/learning-ai:notes/granite-model.md@33b65916c661 (shapes, 64 experts, 40 layers; 666 tensors: 4 attention "
    "layers, tied head) - tests/fixtures/checkpoints/granite-4.0-h-tiny/SOURCES.md",
    "granite-4.0-h-micro": "written from the fields a public test quotes from ibm-granite/granite-4.0-h-micro's "
    "config.json (fetched 2026-08-19) and IBM's architecture table, vocabulary and tied head the family's; its count "
    "is the official GGUF's general.parameter_count, 3,191,396,096, as two public records give it - "
    "tests/fixtures/checkpoints/granite-4.0-h-micro/SOURCES.md",
    "granite-4.0-h-small": "written from IBM's architecture table (DocDBrown/IBMGranite4Tiny:README.md@60d949f9a1b5), "
    "the attention layers and vocabulary a GGUF header states; its count is the GGUF tensor table's, 32,207,337,984, "
    "as three public records give it - tests/fixtures/checkpoints/granite-4.0-h-small/SOURCES.md",
    "minimax-m2": "ModelCloud/GPTQModel:gptqmodel/hf_minimax_m2/configuration_minimax_m2.py@3d14511523cc "
    "(MiniMaxM2Config's defaults, the checkpoint's remote code) without MTP tensors: llama.cpp counts 228,689,764,864 "
    "for the family's converted M2.7, and M2.5's Hub count is that plus exactly its FP8 block scales - "
    "tests/fixtures/checkpoints/minimax-m2/SOURCES.md",
    "jamba-1.5-large": "written from the structure a public study states for ai21labs/AI21-Jamba-Large-1.5 at "
    "revision bdf8d19ae6e1, the rest Jamba 1.5 Mini's; its count is the exact one that study gives, "
    "398,555,145,696 - tests/fixtures/checkpoints/jamba-1.5-large/SOURCES.md",
    "command-r-v01": "ggml-org/llama.cpp:models/ggml-vocab-command-r.gguf (llama.cpp's conversion of "
    "CohereForAI/c4ai-command-r-v01: 40 blocks, width 8,192, FFN 22,528, 64 / 64 heads, 256,000 tokens) and "
    "the F16 conversion's 322 tensors, https://github.com/ggml-org/llama.cpp/pull/6033 (40 blocks of 8, token_embd, "
    "output_norm: no output head, so tied; no q/k norms)",
}
#: catalog name → MaxText's own model config (src/maxtext/configs/models/*.yml) and the HF model_type it describes
MAXTEXT_YML = {"kimi-k2": ("src/maxtext/configs/models/kimi-k2-1t.yml", "deepseek_v3")}
#: catalog name → (Megatron-Bridge test file, the fixture function returning the checkpoint's HF config dict)
_QWEN_MTP = (
    "the checkpoint's MTP block (mtp.*), which the config does not state, counted as one layer: llama.cpp's "
    "converter finds it in the checkpoint (_QwenMtpMixin) and its Qwen3-Next MTP graph takes exactly one"
)
_GLM = "tests/unit_tests/models/glm/test_glm45_bridge.py"
_GLM_NOTE = (
    "model_type glm4_moe as its architecture Glm4MoeForCausalLM names it (the fixture writes 'glm'); "
    "num_nextn_predict_layers 1 and norm_topk_prob true as the converted GGUFs state them "
    "(glm4moe.nextn_predict_layers, expert_weights_norm), and their tensors include the MTP layer's embedding "
    "and head copies: {gguf}"
)
MBRIDGE = {
    "qwen3-next-80b-a3b": (
        "tests/unit_tests/models/qwen/test_qwen3_next_bridge.py",
        "qwen3_next_80b_a3b_config_dict",
        {},
        _QWEN_MTP,
    ),
    "glm-4.5": (
        _GLM,
        "glm45_355b_config",
        {"model_type": "glm4_moe", "num_nextn_predict_layers": 1, "norm_topk_prob": True},
        _GLM_NOTE.format(
            gguf="1,761 tensors and llama.cpp's count 358.338 B for the BF16 conversion of "
            "zai-org/GLM-4.5, https://github.com/ikawrakow/ik_llama.cpp/pull/668"
        ),
    ),
    "glm-4.6": (
        _GLM,
        "glm45_355b_config",
        {
            "model_type": "glm4_moe",
            "num_nextn_predict_layers": 1,
            "norm_topk_prob": True,
            "kvplan_mtp_shares_embedding": True,
        },
        "GLM-4.6 keeps GLM-4.5's architecture (zai-org/GLM-4.5 README; the shapes of its GGUF below equal the "
        "fixture's: 93 blocks with the MTP layer, width 5,120, 96 / 8 heads of 128, 160 experts of 1,536, 3 dense "
        "layers of 12,288, vocabulary 151,552); its MTP layer ships without its own embedding and head copies: the "
        "GGUF converted from zai-org/GLM-4.6 has 1,759 tensors to GLM-4.5's 1,761 and llama.cpp counts 356.786 B, "
        "https://github.com/ikawrakow/ik_llama.cpp/discussions/816",
    ),
    "glm-4.5-air": (
        _GLM,
        "glm45_air_106b_config",
        {"model_type": "glm4_moe", "num_nextn_predict_layers": 1, "norm_topk_prob": True, "routed_scaling_factor": 1.0},
        _GLM_NOTE.format(
            gguf="803 tensors and llama.cpp's count 110.469 B, "
            "https://github.com/ikawrakow/ik_llama.cpp/pull/677; routed_scaling_factor 1.0 "
            "as that GGUF's glm4moe.expert_weights_scale (the fixture writes 2.5)"
        ),
    ),
}
#: keys kept from Megatron-Bridge's configs beyond KEYS (the MoE routing the converter writes for GLM)
MBRIDGE_KEYS = ("use_qk_norm", "norm_topk_prob", "routed_scaling_factor", "kvplan_mtp_shares_embedding")
#: MaxText's config keys → config.json's (its DeepSeek decoder: MLA, dense then MoE layers, no MTP layer)
_MAXTEXT_KEYS = {"base_emb_dim": "hidden_size", "base_num_query_heads": "num_attention_heads",
                 "base_num_kv_heads": "num_key_value_heads", "base_mlp_dim": "intermediate_size",
                 "base_moe_mlp_dim": "moe_intermediate_size", "base_num_decoder_layers": "num_hidden_layers",
                 "first_num_dense_layers": "first_k_dense_replace", "vocab_size": "vocab_size",
                 "num_experts": "n_routed_experts", "shared_experts": "n_shared_experts", "q_lora_rank": "q_lora_rank",
                 "kv_lora_rank": "kv_lora_rank", "qk_nope_head_dim": "qk_nope_head_dim",
                 "qk_rope_head_dim": "qk_rope_head_dim", "v_head_dim": "v_head_dim"}  # fmt: skip
#: torchtune's keyword → config.json's
_TORCHTUNE_KEYS = {"vocab_size": "vocab_size", "num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
                   "num_kv_heads": "num_key_value_heads", "embed_dim": "hidden_size",
                   "intermediate_dim": "intermediate_size"}  # fmt: skip
_CLASS = {"llama": "LlamaConfig", "mistral": "MistralConfig", "gemma3_text": "Gemma3TextConfig", "olmo2": "Olmo2Config"}
_MODEL_TYPE = {"Qwen2Config": "qwen2", "Qwen3Config": "qwen3", "LlamaConfig": "llama", "Gemma2Config": "gemma2",
               "Gemma3Config": "gemma3", "Qwen3MoeConfig": "qwen3_moe", "MixtralConfig": "mixtral"}  # fmt: skip
#: catalog name → (Keras Hub preset file, preset): its published parameter count
KERAS = {
    # Keras's qwen2.5_7b_en ties the output (6.99 B); Qwen2.5-Math-7B is the same architecture, untied
    "qwen2.5-0.5b": ("qwen", "qwen2.5_0.5b_en"), "qwen2.5-7b": ("qwen", "qwen2.5_math_7b_en"),
    "qwen2.5-32b": ("qwen", "qwen2.5_instruct_32b_en"), "qwen2.5-72b": ("qwen", "qwen2.5_instruct_72b_en"),
    "qwen3-0.6b": ("qwen3", "qwen3_0.6b_en"), "qwen3-4b": ("qwen3", "qwen3_4b_en"),
    "qwen3-8b": ("qwen3", "qwen3_8b_en"),
    "qwen3-14b": ("qwen3", "qwen3_14b_en"), "qwen3-32b": ("qwen3", "qwen3_32b_en"),
    "llama-2-7b": ("llama", "llama2_7b_en"), "llama-3.1-8b": ("llama3", "llama3.1_8b"),
    "mistral-7b-v0.3": ("mistral", "mistral_0.3_7b_en"), "mixtral-8x7b": ("mixtral", "mixtral_8_7b_en"),
    "gemma-2-2b": ("gemma", "gemma2_2b_en"), "gemma-2-9b": ("gemma", "gemma2_9b_en"),
    "gemma-2-27b": ("gemma", "gemma2_27b_en"), "gemma-3-1b": ("gemma3", "gemma3_1b"),
    "gemma-3-4b": ("gemma3", "medgemma_instruct_4b"), "gemma-3-27b": ("gemma3", "medgemma_instruct_27b"),
    "gpt-oss-20b": ("gpt_oss", "gpt_oss_20b_en"), "gpt-oss-120b": ("gpt_oss", "gpt_oss_120b_en"),
    "smollm3-3b": ("smollm3", "smollm3_3b_en"), "phi-3-mini-4k": ("phi3", "phi3_mini_4k_instruct_en"),
    "phi-3-mini-128k": ("phi3", "phi3_mini_128k_instruct_en"),
    # Gemma 3n: the multimodal checkpoints (text, vision and audio towers), as Keras Hub's presets count them
    "gemma-3n-e2b": ("gemma3n", "gemma3n_e2b_it"), "gemma-3n-e4b": ("gemma3n", "gemma3n_e4b_it"),
}  # fmt: skip
#: the checkpoint's storage format where it is not its torch_dtype (sources: model-facts.yaml's torch_dtype notes)
FORMATS = {
    "gpt-oss-20b": {"format": "mxfp4", "source": "openai/gpt-oss-20b config.json: quantization_config quant_method "
                    "mxfp4 (the MoE experts; attention, router, embedding and head bf16), per model-facts.yaml"},
    "gpt-oss-120b": {"format": "mxfp4", "source": "openai/gpt-oss-120b config.json: quantization_config quant_method "
                     "mxfp4 (the MoE experts), per model-facts.yaml"},
    "deepseek-v3": {"format": "fp8", "block": [128, 128], "source": "deepseek-ai/DeepSeek-V3 config.json: "
                    "quantization_config fp8 e4m3, 128×128 block scales, per model-facts.yaml"},
    "deepseek-r1": {"format": "fp8", "block": [128, 128], "source": "deepseek-ai/DeepSeek-R1: FP8 weights, per "
                    "model-facts.yaml (DeepSeek-V3's format)"},
    "deepseek-v3.2-exp": {"format": "fp8", "block": [128, 128], "source": "deepseek-ai/DeepSeek-V3.2-Exp: FP8 "
                          "weights, per model-facts.yaml (DeepSeek-V3's format)"},
    "kimi-k2": {"format": "fp8", "block": [128, 128], "source": "moonshotai/Kimi-K2-Instruct: 'Our model checkpoints "
                "are stored in the block-fp8 format' (MoonshotAI/Kimi-K2 README.md, the spec's kimi_repo source); "
                "a DeepseekV3ForCausalLM checkpoint, DeepSeek-V3's 128×128 block scales"},
    "minimax-m2": {"format": "fp8", "block": [128, 128], "source": "MiniMaxAI/MiniMax-M2: FP8 weights — its Hugging "
                   "Face card is tagged fp8 and its docs/vllm_deploy_guide.md states '220 GB for weights' for 230 B "
                   "parameters (a byte each); float8_e4m3fn with 128×128 block scales as the same family's "
                   "MiniMax-M2.5 config states (quant_method fp8), which shares M2's architecture"},
}  # fmt: skip
KEYS = (
    "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "tie_word_embeddings", "attention_bias", "moe_intermediate_size",
    "num_experts", "num_local_experts", "decoder_sparse_step", "mlp_only_layers", "first_k_dense_replace",
    "n_routed_experts", "n_shared_experts", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "num_nextn_predict_layers", "topk_method", "index_n_heads", "index_head_dim",
    "num_experts_per_tok", "shared_expert_intermediate_size", "full_attention_interval", "linear_conv_kernel_dim",
    "linear_key_head_dim", "linear_num_key_heads", "linear_num_value_heads", "linear_value_head_dim",
    "attn_type_list", "shared_intermediate_size",
)  # fmt: skip
_MAMBA2 = ("mamba_d_ssm", "mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups", "mamba_d_conv",
           "mamba_expand", "mamba_conv_bias", "mamba_proj_bias")  # fmt: skip
#: the keys a family's weights depend on beyond KEYS (and the SSM kernel's chunk, which SGLang's Mamba cache keeps
#: states on)
FAMILY_KEYS = {
    "falcon_mamba": ("expand", "state_size", "conv_kernel", "time_step_rank", "use_bias", "use_conv_bias"),
    "mamba2": ("expand", "state_size", "conv_kernel", "use_bias", "use_conv_bias", "num_heads", "n_groups",
               "chunk_size"),
    "falcon_h1": (*_MAMBA2, "mamba_rms_norm", "projectors_bias", "mlp_bias", "mamba_chunk_size"),
    "granitemoehybrid": (*_MAMBA2, "layer_types", "mamba_chunk_size"),
    "jamba": ("mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_dt_rank", "mamba_conv_bias", "mamba_proj_bias",
              "attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset"),
    "cohere": ("use_qk_norm",),
    "minimax_m2": ("use_qk_norm", "use_routing_bias"),
    "llama4_text": ("use_qk_norm", "intermediate_size_mlp", "interleave_moe_layer_step", "moe_layers"),
}  # fmt: skip
VISION_KEYS = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "patch_size",
    "image_size",
    "num_channels",
    "projector_input_dim",
    "projector_output_dim",
    "vision_output_dim",
)
#: a multimodal config's own keys that shape its weights
MULTIMODAL_KEYS = ("spatial_merge_size", "multimodal_projector_bias", "tie_word_embeddings")


def git_show(repo: str, path: str) -> tuple[str, str]:
    commit = subprocess.check_output(["git", "-C", repo, "rev-parse", "HEAD"], text=True).strip()
    return subprocess.check_output(["git", "-C", repo, "show", f"HEAD:{path}"], text=True), commit[:12]


class _Transformers:
    """Stands in for transformers: ``XConfig(**kw)`` → the class defaults updated with kw."""

    __version__ = "4"

    def __getattr__(self, name: str) -> Any:
        def make(**kw: Any) -> dict[str, Any]:
            out = dict(CONFIG_CLASSES.get(name, {}).get("defaults", {}))
            out.update(kw)
            if "model_type" not in out and name in _MODEL_TYPE:
                out["model_type"] = _MODEL_TYPE[name]
            return out

        return make


class _PT(dict):  # type: ignore[type-arg]
    def __init__(self, **kw: Any) -> None:
        dict.__init__(self, **kw)


def maxtext_configs(text: str) -> dict[str, Any]:
    text = text.replace("import transformers\n", "").replace('if transformers.__version__ >= "5.0.0":', "if False:")
    text = re.sub(r"\n  from transformers[^\n]*", "\n  pass", text)
    text = re.sub(r"\nfrom [^\n]*import[^\n]*", "\n", text)
    scope: dict[str, Any] = {"transformers": _Transformers(), "PTConfig": _PT}
    exec(compile(text, MAXTEXT_FILE, "exec"), scope)
    return scope


def mlc_presets(text: str) -> dict[str, Any]:
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            return dict(ast.literal_eval(node.value))
    raise SystemExit("MODEL_PRESETS not found")


def keras_counts(repo: str) -> dict[str, tuple[int, str]]:
    out = {}
    for name, (family, preset) in KERAS.items():
        path = f"keras_hub/src/models/{family}/{family}_presets.py"
        text, commit = git_show(repo, path)
        m = re.search(r'"' + re.escape(preset) + r'":\s*\{.*?"params":\s*([\d_]+)', text, re.S)
        if m is None:
            raise SystemExit(f"{path}: preset {preset} has no params")
        out[name] = (int(m.group(1).replace("_", "")), f"keras-team/keras-hub:{path}@{commit} ({preset})")
    return out


def torchtune_config(repo: str, path: str, builder: str, model_type: str, tied: bool) -> tuple[dict[str, Any], str]:
    text, commit = git_show(repo, path)
    body = re.search(rf"def {builder}\(.*?\n(?=def |\Z)", text, re.S)
    if body is None:
        raise SystemExit(f"{path}: no builder {builder}")
    cfg: dict[str, Any] = {"model_type": model_type, "tie_word_embeddings": tied}
    for key, name in _TORCHTUNE_KEYS.items():
        m = re.search(rf"\b{key}=([\d_]+)", body.group(0))
        if m is None:
            raise SystemExit(f"{path}: {builder} has no {key}")
        cfg[name] = int(m.group(1).replace("_", ""))
    return cfg, f"pytorch/torchtune:{path}@{commit} ({builder})"


def subset(cfg: dict[str, Any]) -> dict[str, Any]:
    if cfg.get("model_type") == "gemma3":
        text = dict(CONFIG_CLASSES["Gemma3TextConfig"]["defaults"])
        text.update(cfg["text_config"])
        vision = {k: cfg["vision_config"][k] for k in VISION_KEYS if k in cfg["vision_config"]}
        vision.setdefault("num_channels", 3)
        # Gemma 3's SigLIP tower has no pooling head (its config.json: vision_use_head false), where
        # SiglipVisionConfig's default builds one
        vision["vision_use_head"] = False
        return {"model_type": "gemma3", "text_config": {**subset(text), "model_type": "gemma3_text"},
                "vision_config": vision}  # fmt: skip
    if isinstance(cfg.get("text_config"), dict) and isinstance(cfg.get("vision_config"), dict):
        vision = {k: cfg["vision_config"][k] for k in VISION_KEYS if k in cfg["vision_config"]}
        top = {k: cfg[k] for k in MULTIMODAL_KEYS if k in cfg}
        return {"model_type": cfg["model_type"], **top, "text_config": subset(cfg["text_config"]),
                "vision_config": vision}  # fmt: skip
    keys = KEYS + FAMILY_KEYS.get(cfg.get("model_type", ""), ())
    out = {k: cfg[k] for k in keys if cfg.get(k) not in (None, [])}
    if "q_lora_rank" in cfg and cfg["q_lora_rank"] is None:
        out["q_lora_rank"] = None  # DeepSeek-V2-Lite: no query compression (the class default is 1536)
    return out


def mbridge_config(repo: str, path: str, fixture: str) -> tuple[dict[str, Any], str]:
    """The dict literal a Megatron-Bridge test fixture returns."""
    text, commit = git_show(repo, path)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name == fixture:
            ret = next(n for n in ast.walk(node) if isinstance(n, ast.Return))
            assert ret.value is not None
            return dict(ast.literal_eval(ret.value)), f"NVIDIA-NeMo/Megatron-Bridge:{path}@{commit} ({fixture})"
    raise SystemExit(f"{path}: no fixture {fixture}")


def main() -> None:  # noqa: C901 - one loop per source
    maxtext_repo, mlc_repo, keras_repo, torchtune_repo, thunder_repo, mbridge_repo = sys.argv[1:7]
    mx_text, mx_commit = git_show(maxtext_repo, MAXTEXT_FILE)
    mlc_text, mlc_commit = git_show(mlc_repo, MLC_FILE)
    mx, mlc, keras = maxtext_configs(mx_text), mlc_presets(mlc_text), keras_counts(keras_repo)
    out: dict[str, dict[str, Any]] = {}
    for name, var in MAXTEXT.items():
        out[name] = {
            "config": subset(mx[var]),
            "config_source": f"AI-Hypercomputer/maxtext:{MAXTEXT_FILE}@{mx_commit} ({var})",
        }
    for name, preset in MLC.items():
        cfg = dict(CONFIG_CLASSES.get(_CLASS.get(mlc[preset].get("model_type", ""), ""), {}).get("defaults", {}))
        cfg.update(mlc[preset])
        out[name] = {"config": subset(cfg), "config_source": f"mlc-ai/mlc-llm:{MLC_FILE}@{mlc_commit} ({preset})"}
    for name, (path, builder, model_type, tied) in TORCHTUNE.items():
        cfg, where = torchtune_config(torchtune_repo, path, builder, model_type, tied)
        out[name] = {"config": cfg, "config_source": where}
    smol, smol_commit = git_show(torchtune_repo, "torchtune/models/smol/_model_builders.py")
    comp, _ = git_show(torchtune_repo, "torchtune/models/smol/_component_builders.py")
    vocab = int(re.search(r"vocab_size: int = (\d+)", comp).group(1))  # type: ignore[union-attr]
    tied = re.search(r"tie_word_embeddings: bool = (\w+)", comp).group(1) == "True"  # type: ignore[union-attr]
    for name, builder in SMOLLM2.items():
        args = re.search(rf"def {builder}\(\).*?smollm2\(([^)]*)\)", smol, re.S).group(1)  # type: ignore[union-attr]
        layers, heads, kv, embd, ff = (int(a) for a in args.split(",")[:5])
        out[name] = {
            "config": {"model_type": "llama", "num_hidden_layers": layers, "num_attention_heads": heads,
                       "num_key_value_heads": kv, "hidden_size": embd, "intermediate_size": ff,
                       "vocab_size": vocab, "tie_word_embeddings": tied},
            "config_source": f"pytorch/torchtune:torchtune/models/smol/_model_builders.py@{smol_commit} ({builder}; "
            "vocabulary and tied output from _component_builders.py)",
        }  # fmt: skip
    for name, (path, model_type) in MAXTEXT_YML.items():
        text, commit = git_show(maxtext_repo, path)
        raw = yaml.safe_load(text)
        cfg = {"model_type": model_type, "num_nextn_predict_layers": 0,
               **{ours: raw[theirs] for theirs, ours in _MAXTEXT_KEYS.items()}}  # fmt: skip
        out[name] = {"config": cfg, "config_source": f"AI-Hypercomputer/maxtext:{path}@{commit} (its DeepSeek "
                     "decoder's shapes; no MTP layer)"}  # fmt: skip
    for name, path in THUNDER.items():
        text, commit = git_show(thunder_repo, path)
        cfg = json.loads(re.search(r"r" + "'''" + r"(.*?)" + "'''", text, re.S).group(1))  # type: ignore[union-attr]
        out[name] = {"config": subset(cfg), "config_source": f"kevinstephano/thunder_model_blocks:{path}@{commit} "
                     f"({cfg.get('_name_or_path')}'s config.json)"}  # fmt: skip
    for name, where in VERBATIM.items():
        cfg = json.loads((ROOT / "tests" / "fixtures" / "checkpoints" / name / "config.json").read_text())
        out[name] = {"config": subset(cfg), "config_source": where}
    for name, (path, fixture, overrides, note) in MBRIDGE.items():
        cfg, where = mbridge_config(mbridge_repo, path, fixture)
        cfg.update(overrides)
        kept = {**subset(cfg), **{k: cfg[k] for k in MBRIDGE_KEYS if k in cfg}}
        out[name] = {"config": kept, "config_source": f"{where} — {note}"}
    for name in ("gemma-3-4b", "gemma-3-12b", "gemma-3-27b"):
        out[name]["config"]["text_config"]["vocab_size"] = 262208
        out[name]["config_source"] += (
            "; vocab_size 262,208: the official config.json leaves it to Gemma3TextConfig's default "
            "(tests/fixtures/engines/configs/gemma-3-4b), where MaxText writes 262,144"
        )
    for name, entry in out.items():
        counted = count_params(entry["config"])
        if counted is None:
            raise SystemExit(f"{name}: kvplan does not count this config")
        entry["params"] = counted.total
        entry["params_source"] = f"counted from checkpoint.config ({counted.basis})"
        if name in keras:
            n, src = keras[name]
            entry["published"] = {"params": n, "source": src}
    for name, (n, src) in keras.items():
        if name not in out:
            out[name] = {"params": n, "params_source": f"published: {src}"}
    for name, fmt in FORMATS.items():
        out.setdefault(name, {})["format"] = fmt
    (ROOT / "scripts" / "checkpoints.yaml").write_text(
        "# Generated by scripts/extract_checkpoints.py; make_catalog.py merges it into model_specs/.\n"
        + yaml.safe_dump(out, sort_keys=True, width=120, allow_unicode=True)
    )
    print(f"wrote {len(out)} checkpoints")


if __name__ == "__main__":
    main()
