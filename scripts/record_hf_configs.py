"""Record what llama.cpp's own converter writes for a config.json of every text architecture it registers.

usage: python scripts/record_hf_configs.py LLAMA_CPP_DIR [--only SUBSTRING] [--debug]

Run it with a Python that has transformers==4.57.6 (the version the vendored converter pins in
requirements/requirements-convert_legacy_llama.txt), torch and numpy (scripts/engines/README.md says how).
Each case is a folder with a config.json; the converter reads it exactly as convert_hf_to_gguf.py does
(ModelBase.load_hparams: transformers' AutoConfig when it knows the model_type, with its defaults, else the
JSON as it is), builds the registered model class and runs its own ``set_gguf_parameters``; the GGUF keys it
writes are recorded (or the converter's error). Tensors are not read: where a converter
counts layers from tensor names (Qwen3-Next's MTP layers), the case's model.safetensors.index.json stands in.

Cases, all in tests/fixtures/hf_conversion.json ({case: {config, safetensors_index?, gguf_kv | error}}):
- ``defaults-ARCH``: every registered architecture transformers 4.57.6 has a config class for, with a
  config.json that names only the architecture and model_type: every other key is transformers' default;
- ``small-ARCH``: the same with a few sizes changed (layers, width, heads, context, window), to catch values
  transformers derives from others rather than keeping a default;
- ``synth-ARCH``: every registered architecture that needs remote code (no transformers config class), with a
  small config that states the keys its converter reads (SYNTH below);
- ``real-NAME``: the real checkpoints' configs other fixtures hold (tests/fixtures/engines/configs, hf).

Also writes kvplan/facts/hf_archs.py: every registered text architecture → the GGUF architecture its converter
class writes, and for every model_type transformers knows among them its config class's defaults (data: kvplan
never imports transformers). Never edit the outputs by hand: change this script and re-run it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "hf_conversion.json"
CASES = Path("/tmp/0/cases")
FACTS = ROOT / "kvplan" / "facts" / "hf_archs.py"
#: converted in a folder whose path names no model type (AutoConfig guesses a type from the path otherwise)
WORK = Path("/tmp/0/1")

#: keys of a config that never bear on memory and only bloat the recorded defaults
SKIP_KEYS = frozenset(
    """id2label label2id architectures model_type transformers_version _name_or_path torch_dtype dtype auto_map
    bos_token_id eos_token_id sep_token_id initializer_range
    output_hidden_states output_attentions return_dict torchscript use_cache tokenizer_class""".split()
)

#: the small variant: sizes changed where the config class has the key
SMALL = {
    "num_hidden_layers": 6,
    "n_layer": 6,
    "n_layers": 6,
    "num_layers": 6,
    "hidden_size": 1024,
    "n_embd": 1024,
    "d_model": 1024,
    "num_attention_heads": 16,
    "n_head": 16,
    "n_heads": 16,
    "num_key_value_heads": 4,
    "max_position_embeddings": 12288,
    "n_positions": 12288,
    "sliding_window": 1000,
}

#: the base of a synthesised config (remote-code architectures), and per converter class what it adds
SYNTH_BASE: dict[str, Any] = {
    "hidden_size": 1024,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "num_hidden_layers": 8,
    "intermediate_size": 2048,
    "vocab_size": 1000,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "head_dim": 64,
}
_MLA = {"kv_lora_rank": 512, "q_lora_rank": 384, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
_MOE = {
    "moe_intermediate_size": 512,
    "num_shared_experts": 1,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "routed_scaling_factor": 1.0,
    "norm_topk_prob": True,
    "num_experts": 8,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
}
_INDEXER = {"index_n_heads": 8, "index_head_dim": 128, "index_topk": 256}
_SWA8 = ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 2
_LFM2 = {
    "conv_L_cache": 3,
    "norm_eps": 1e-5,
    "block_auto_adjust_ff_dim": True,
    "block_ffn_dim_multiplier": 1.0,
    "block_multiple_of": 256,
}
_GEMMA4: dict[str, Any] = {
    "sliding_window": 512,
    "num_kv_shared_layers": 2,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"] * 2,
    "global_head_dim": 256,
    "moe_intermediate_size": None,
    "num_global_key_value_heads": 1,
    "rope_parameters": {
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    },
}
SYNTH: dict[str, dict[str, Any]] = {
    "BailingMoeModel": _MOE,
    "BailingMoeV2Model": _MOE,
    "BailingMoeV3Model": {
        **_MOE,
        **_MLA,
        "no_kda_lora": True,
        "layer_group_size": 4,
        "linear_attn_config": {"head_dim": 128, "short_conv_kernel_size": 4},
    },
    "BailingMoeV3VLModel": {**_MOE, **_MLA, "no_kda_lora": True, "layer_group_size": 4},
    "Cohere2MoeModel": {**_MOE, "logit_scale": 1.0, "sliding_window": 4096, "layer_types": _SWA8},
    "DeepseekModel": _MOE,
    "DeepseekV2Model": {**_MOE, **_MLA},
    "DeepseekV32Model": {**_MOE, **_MLA, **_INDEXER},
    "DeepseekV4Model": {
        **_MOE,
        **_MLA,
        **_INDEXER,
        "sliding_window": 128,
        "swiglu_limit": 10.0,
        "o_groups": 8,
        "o_lora_rank": 1024,
        "compress_ratios": [0, 4, 128, 4, 128, 4, 128, 0],
    },
    "Dots3NoteModel": {"layer_types": _SWA8, "sliding_window": 4096},
    "ExaoneModel": {"activation_function": "silu"},
    "ExaoneMoEModel": _MOE,
    "Glm4MoeLiteModel": {**_MOE, **_MLA},
    "GlmMoeDsaModel": {**_MOE, **_MLA, **_INDEXER},
    "Glm5NextModel": {**_MOE, **_MLA, **_INDEXER, "layer_types": _SWA8},
    "GrokModel": {"embedding_multiplier_scale": 1.0, "output_multiplier_scale": 1.0},
    "HrmTextModel": {"H_cycles": 2, "L_cycles": 2, "embedding_scale": 1.0},
    "HYV3Model": _MOE,
    "HYV4Model": {**_MOE},
    "KimiLinearModel": {
        **_MLA,
        **_MOE,
        "linear_attn_config": {
            "full_attn_layers": [4, 8],
            "kda_layers": [1, 2, 3, 5, 6, 7],
            "head_dim": 128,
            "num_heads": 16,
            "short_conv_kernel_size": 4,
        },
    },
    "KimiK3Model": {
        **_MLA,
        **_MOE,
        "linear_attn_config": {
            "full_attn_layers": [4, 8],
            "kda_layers": [1, 2, 3, 5, 6, 7],
            "head_dim": 128,
            "num_heads": 16,
            "short_conv_kernel_size": 4,
        },
    },
    "LFM2ColBertModel": {"layer_types": ["conv", "conv", "full_attention", "conv"] * 2, **_LFM2},
    "LFM25AudioTokenizer": {"layer_types": ["conv", "conv", "full_attention", "conv"] * 2, **_LFM2},
    "MiniCPM3Model": {"kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32},
    "MiniCPMModel": {"scale_emb": 12, "scale_depth": 1.4, "dim_model_base": 256},
    "MiniMaxText01Model": {
        **_MOE,
        "model_type": "minimax_text_01",
        "attn_type_list": [0, 0, 0, 1] * 2,
        "rotary_dim": 64,
        **{f"layernorm_{p}_{g}": 1.0 for p in ("full_attention", "linear_attention", "mlp") for g in ("alpha", "beta")},
    },
    "MiniMaxM2Model": {**_MOE, "rotary_dim": 64, "num_local_experts": 8},
    "MiniMaxM3Model": {**_MOE, "rotary_dim": 64, "num_local_experts": 8},
    "JaisModel": {
        "activation_function": "swiglu",
        "position_embedding_type": "alibi",
        "n_positions": 2048,
        "n_embd": 1024,
        "n_inner": 2048,
        "n_head": 16,
        "n_layer": 8,
        "layer_norm_epsilon": 1e-5,
        "embeddings_scale": 1.0,
        "width_scale": 1.0,
    },
    "Cohere2Model": {"rotary_pct": 1.0, "logit_scale": 0.25, "sliding_window": 4096, "sliding_window_pattern": 4},
    "Gemma4Model": _GEMMA4,
    "Gemma4AssistantModel": _GEMMA4,
    "Gemma4UnifiedModel": _GEMMA4,
    "Qwen3_5MoeTextModel": {
        **_MOE,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"],
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 8,
        "linear_num_value_heads": 16,
        "linear_value_head_dim": 128,
        "full_attention_interval": 4,
        "mtp_num_hidden_layers": 1,
        "shared_expert_intermediate_size": 512,
    },
    "MimoV2Model": {
        **_MOE,
        "head_dim": 128,
        "swa_head_dim": 128,
        "swa_num_attention_heads": 16,
        "swa_num_key_value_heads": 8,
        "swa_v_head_dim": 128,
        "v_head_dim": 128,
        "sliding_window": 128,
        "hybrid_layer_pattern": [0, 1, 1, 1, 0, 1, 1, 1],
        "topk_method": "noaux_tc",
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
    },
    "PhiMoeModel": {**_MOE, "original_max_position_embeddings": 4096, "num_local_experts": 8},
    "Phi3MiniModel": {"original_max_position_embeddings": 4096},
    "StableLMModel": {"partial_rotary_factor": 0.25, "layer_norm_eps": 1e-5},
    "HunYuanMoEModel": {**_MOE, "num_experts": 8, "moe_topk": 2},
    "LFM2Model": {"layer_types": ["conv", "conv", "full_attention", "conv"] * 2, **_LFM2},
    "LFM2MoeModel": {
        **_MOE,
        "layer_types": ["conv", "conv", "full_attention", "conv"] * 2,
        **_LFM2,
        "num_dense_layers": 2,
    },
    "MapleModel": {
        **_MOE,
        "hidden_act": "silu",
        "num_shared_experts": 0,
        "nope_on_global_attention": True,
        "sliding_window": 1024,
        "layer_types": _SWA8,
    },
    "Step35Model": {
        **_MOE,
        "num_attention_groups": 4,
        "sliding_window": 512,
        "moe_num_experts": 8,
        "moe_top_k": 2,
        "share_expert_dim": 512,
        "layer_types": _SWA8,
        "partial_rotary_factors": [1.0 if t == "sliding_attention" else 0.5 for t in _SWA8],
        "attention_other_setting": {"num_attention_heads": 8, "num_attention_groups": 2},
    },
    "MPTModel": {
        "max_seq_len": 4096,
        "d_model": 1024,
        "n_heads": 16,
        "n_layers": 8,
        "attn_config": {"kv_n_heads": 4, "clip_qkv": None, "alibi": False},
    },
    "OpenELMModel": {
        "num_transformer_layers": 4,
        "ffn_multipliers": [0.5, 1.0, 2.0, 4.0],
        "ffn_dim_divisor": 256,
        "model_dim": 1024,
        "num_kv_heads": [2, 2, 4, 4],
        "num_query_heads": [8, 8, 16, 16],
        "max_context_length": 2048,
        "rope_freq_constant": 10000,
    },
    "PLMModel": {"kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64},
    "Qwen3_5TextModel": {
        "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"],
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 8,
        "linear_num_value_heads": 16,
        "linear_value_head_dim": 128,
        "full_attention_interval": 4,
        "mtp_num_hidden_layers": 1,
    },
    "RefactModel": {"n_embd": 1024, "n_positions": 4096, "n_head": 16, "layer_norm_epsilon": 1e-5},
    "CodeShellModel": {
        "n_positions": 4096,
        "n_embd": 1024,
        "n_head": 16,
        "num_query_groups": 4,
        "layer_norm_epsilon": 1e-5,
    },
    "FalconModel": {"layer_norm_epsilon": 1e-5},
    "Rwkv6Model": {"head_size": 64, "layer_norm_epsilon": 1e-5, "rescale_every": 6},
    "Rwkv7Model": {
        "norm_eps": 1e-5,
        "decay_low_rank_dim": 64,
        "a_low_rank_dim": 64,
        "v_low_rank_dim": 32,
        "gate_low_rank_dim": 128,
    },
    "ARwkv7Model": {
        "head_size": 64,
        "wkv_has_gate": True,
        "wkv_version": 7,
        "decay_low_rank_dim": 64,
        "a_low_rank_dim": 64,
        "v_low_rank_dim": 32,
        "gate_low_rank_dim": 128,
    },
    "SarvamMoEModel": _MOE,
    "Spark2_5Model": {"layer_types": _SWA8, "sliding_window": 4096},
    "T5Model": {
        "d_model": 512,
        "d_ff": 2048,
        "num_heads": 8,
        "d_kv": 64,
        "layer_norm_epsilon": 1e-6,
        "relative_attention_num_buckets": 32,
        "decoder_start_token_id": 0,
    },
}
#: the synthesised config's converter class also depends on these per architecture
SYNTH_ARCH: dict[str, dict[str, Any]] = {
    "LagunaForCausalLM": {"gating": "per_head"},
    "HYV4ForCausalLM": {"first_k_dense_replace": 1},
    "Qwen4ExpForCausalLM": {},
}


#: configs for architectures whose transformers defaults the converter refuses (a key it requires has no
#: default), shaped as the checkpoints' configs are
EXTRA: dict[str, dict[str, Any]] = {
    # CohereForAI/c4ai-command-r7b-12-2024 as ../shared/reference/model-facts.yaml records it: no
    # max_position_embeddings and no head_dim (Cohere2Config gives 8192 and hidden / heads); other fields as the
    # published config names them, unverified
    "command-r7b": {
        "architectures": ["Cohere2ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 5,
        "cache_implementation": "hybrid",
        "eos_token_id": 255001,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 14336,
        "layer_norm_eps": 1e-05,
        "logit_scale": 0.25,
        "model_type": "cohere2",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "order_of_interleaved_layers": "local_attn_first",
        "pad_token_id": 0,
        "position_embedding_type": "rope_gptj",
        "rope_scaling": None,
        "rope_theta": 50000,
        "rotary_pct": 1.0,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.48.0.dev0",
        "use_cache": True,
        "use_embedding_sharing": True,
        "use_gated_activation": True,
        "vocab_size": 256000,
    },
    "hunyuan-a13b": {
        "architectures": ["HunYuanMoEV1ForCausalLM"],
        "model_type": "hunyuan_v1_moe",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "head_dim": 128,
        "intermediate_size": 3072,
        "moe_intermediate_size": [3072] * 32,
        "moe_topk": [8] * 32,
        "num_experts": 64,
        "num_shared_expert": [1] * 32,
        "max_position_embeddings": 32768,
        "rope_theta": 10000.0,
        "rope_scaling": {"alpha": 1000.0, "factor": 1.0, "type": "dynamic"},
        "vocab_size": 128167,
    },
    "hunyuan-moe-plain-rope": {
        "architectures": ["HunYuanMoEV1ForCausalLM"],
        "model_type": "hunyuan_v1_moe",
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "num_hidden_layers": 4,
        "intermediate_size": 2048,
        "moe_intermediate_size": [512] * 4,
        "moe_topk": [2] * 4,
        "num_experts": 8,
        "num_shared_expert": [1] * 4,
        "max_position_embeddings": 16384,
        "vocab_size": 1000,
    },
    "exaone-moe": {
        "architectures": ["ExaoneMoEForCausalLM"],
        **SYNTH_BASE,
        **_MOE,
        "sliding_window": 4096,
        "layer_types": _SWA8,
    },
}

#: Qwen3-Next checkpoints hold one MTP layer (mtp.layers.0.*), which the converter counts from the tensor names
#: (its config has no mtp_num_hidden_layers: conversion/qwen.py _QwenMtpMixin). A stand-in index naming tensors
#: as those checkpoints do (mtp.layers.0.*, mtp.fc, ...); the shard file names are illustrative
QWEN3_NEXT_INDEX = {
    "metadata": {},
    "weight_map": {
        "model.embed_tokens.weight": "model-00001-of-00041.safetensors",
        "mtp.fc.weight": "model-00041-of-00041.safetensors",
        "mtp.norm.weight": "model-00041-of-00041.safetensors",
        "mtp.pre_fc_norm_embedding.weight": "model-00041-of-00041.safetensors",
        "mtp.pre_fc_norm_hidden.weight": "model-00041-of-00041.safetensors",
        "mtp.layers.0.input_layernorm.weight": "model-00041-of-00041.safetensors",
        "mtp.layers.0.self_attn.q_proj.weight": "model-00041-of-00041.safetensors",
        "mtp.layers.0.mlp.gate.weight": "model-00041-of-00041.safetensors",
    },
}


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "value"):  # enums
        return jsonable(value.value)
    return str(value)


def class_defaults(config_cls: Any) -> dict[str, Any]:
    """A transformers config class's own defaults: the __init__ keywords whose default is a value (not None).

    A key transformers computes from others (Mistral's head_dim from hidden_size) has None there and is left to
    kvplan's rules; the instance's to_dict() shows which defaults the class keeps as they are."""
    inst = config_cls().to_dict()
    out: dict[str, Any] = {}
    for name, p in inspect.signature(config_cls.__init__).parameters.items():
        if name in SKIP_KEYS or p.default is inspect.Parameter.empty or p.default is None:
            continue
        value = jsonable(p.default)
        if inst.get(name) == value:  # kept as it is (not rewritten by __init__)
            out[name] = value
    if "max_length" in inst and "max_length" not in out:
        out["max_length"] = inst["max_length"]  # PretrainedConfig's generation default (a context fallback)
    return dict(sorted(out.items()))


def convert(case: Path, cls_of: Any, gguf: Any, ModelBase: Any) -> bool:
    """Run the converter on case/config.json; write gguf_kv.json or error.txt beside it. True when the
    converter class read the config through ModelBase.load_hparams (transformers' AutoConfig)."""
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    for f in case.iterdir():
        if f.name in ("config.json", "model.safetensors.index.json"):
            shutil.copy(f, WORK / f.name)
    for stale in ("gguf_kv.json", "error.txt"):
        (case / stale).unlink(missing_ok=True)
    LOADS.clear()
    try:
        arch = json.loads((WORK / "config.json").read_text())["architectures"][0]
        cls = cls_of(arch)
        model = cls(WORK, gguf.LlamaFileType.MOSTLY_F16, WORK / "out.gguf", dry_run=True)
        model.set_gguf_parameters()
        writer = getattr(model, "impl", model).gguf_writer  # Mistral3Model writes through its impl
        kv = {k: jsonable(f.value) for shard in writer.kv_data for k, f in shard.items()}
        kv.pop("general.file_type", None)
        (case / "gguf_kv.json").write_text(json.dumps(kv, indent=None, sort_keys=True) + "\n")
    except Exception as exc:
        line = f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if str(exc) else type(exc).__name__
        (case / "error.txt").write_text(line + "\n")
        if "--debug" in sys.argv:
            traceback.print_exc()
    return bool(LOADS)


LOADS: list[Path] = []
#: config class → keys its __init__ derives from others (reported: kvplan's rules must derive them too)
DERIVED: dict[str, list[str]] = {}
#: the config keys the converter's classes read for memory (derived ones are reported)
DERIVED_WATCH = frozenset(
    """num_key_value_heads head_dim layer_types sliding_window max_position_embeddings num_attention_heads
    hidden_size num_hidden_layers intermediate_size full_attn_idxs sliding_window_pattern mamba_dt_rank
    n_positions n_ctx d_model num_heads d_kv num_kv_heads""".split()
)


def main() -> None:  # noqa: C901 - one pass over the converter's registry, in order
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("llama_cpp", type=Path)
    ap.add_argument("--only", default="")
    ap.add_argument("--debug", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(args.llama_cpp / "gguf-py"))
    sys.path.insert(0, str(args.llama_cpp))
    import logging

    logging.disable(logging.WARNING)
    import gguf
    import transformers
    from conversion import TEXT_MODEL_MAP, ModelBase, get_model_class
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto

    def tensor_names(self: Any, remote_hf_model_id: str | None = None) -> dict[str, Any]:
        """Tensors are not read; the names of a model.safetensors.index.json pass the class's filter."""
        index = self.dir_model / "model.safetensors.index.json"
        if index.is_file():
            for name in json.loads(index.read_text())["weight_map"]:
                self.filter_tensors((name, lambda: None))
        return {}

    ModelBase.index_tensors = tensor_names  # type: ignore[method-assign]
    load_hparams = ModelBase.load_hparams

    def counted_load(dir_model: Path, is_mistral_format: bool) -> Any:
        LOADS.append(dir_model)
        return load_hparams(dir_model, is_mistral_format)

    ModelBase.load_hparams = staticmethod(counted_load)  # type: ignore[method-assign]
    # MiniMax-01 lists the tokens whose embedding rows are zero (read from the weights and the tokenizer) as
    # suppressed tokens: no memory key, and neither is here
    from conversion.minimax import MiniMaxText01Model

    MiniMaxText01Model._get_suppress_tokens = lambda self: None  # type: ignore[method-assign]
    model_types: dict[str, str] = {}
    for name in dir(modeling_auto):
        if name.startswith("MODEL_") and name.endswith("_MAPPING_NAMES"):
            for model_type, cls in getattr(modeling_auto, name).items():
                for c in cls if isinstance(cls, (list, tuple)) else [cls]:
                    model_types.setdefault(c, model_type)
    archs: dict[str, dict[str, Any]] = {}
    cases: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []  # name, config, safetensors index

    classes: dict[str, dict[str, Any]] = {}  # config class name → {defaults, sub, sub_absent}
    type_class: dict[str, str] = {}  # model_type → config class name

    def add_class(config_cls: Any) -> str | None:  # noqa: C901 - a config class and its parts
        name = config_cls.__name__
        if name in classes:
            return name
        try:
            entry: dict[str, Any] = {"defaults": class_defaults(config_cls)}
            inst = config_cls().to_dict()
        except Exception as exc:  # a class that cannot be built bare
            print(f"defaults of {name}: {type(exc).__name__}: {exc}")
            return None
        classes[name] = entry
        for key, sub in (getattr(config_cls, "sub_configs", None) or {}).items():
            if any(w in key for w in ("vision", "audio", "talker", "code2wav", "speech", "encoder", "decoder", "vq")):
                continue
            part = inst.get(key) if isinstance(inst.get(key), dict) else {}
            if sub.__name__ == "AutoConfig":  # the part's model_type picks its class; absent: the wrapper's default
                part_type = part.get("model_type", "")
                if part_type not in CONFIG_MAPPING:
                    continue
                sub = CONFIG_MAPPING[part_type]
            sub_name = add_class(sub)
            if sub_name is None:
                continue
            entry.setdefault("sub", {})[key] = sub_name
            # a config without this part gets the wrapper's own: where it differs from the part's defaults
            # (Mistral3 builds a Mistral-Small text config), those values
            base = classes[sub_name]["defaults"]
            sig = inspect.signature(sub.__init__).parameters
            own = {
                k: jsonable(v)
                for k, v in part.items()
                if k in sig
                and k not in SKIP_KEYS
                and v is not None
                and not isinstance(v, dict)
                and jsonable(v) != base.get(k)
            }
            if own:
                entry.setdefault("sub_absent", {})[key] = dict(sorted(own.items()))
            # a part the config gives: some wrappers (Voxtral) lay their own values under it
            try:
                given = config_cls(**{key: {"model_type": sub.model_type}}).to_dict().get(key) or {}
            except Exception:
                given = {}
            own = {
                k: jsonable(v)
                for k, v in given.items()
                if k in sig
                and k not in SKIP_KEYS
                and v is not None
                and not isinstance(v, dict)
                and jsonable(v) != base.get(k)
                and k in classes[sub_name]["defaults"]
            }
            if own:  # and what the part's class alone would not derive from those (Voxtral's head_dim)
                alone = sub(**own).to_dict()
                own.update(
                    {
                        k: jsonable(v)
                        for k, v in given.items()
                        if k in sig
                        and k not in SKIP_KEYS
                        and v is not None
                        and not isinstance(v, dict)
                        and jsonable(v) != jsonable(alone.get(k))
                    }
                )
            if own:
                entry.setdefault("sub_given", {})[key] = dict(sorted(own.items()))
        derived = sorted(
            k
            for k, v in inst.items()
            if k not in entry["defaults"]
            and k not in SKIP_KEYS
            and v is not None
            and not isinstance(v, dict)
            and k in DERIVED_WATCH
        )
        if derived:
            DERIVED[name] = derived
        return name

    def add_defaults(model_type: str) -> None:
        if model_type in type_class or model_type not in CONFIG_MAPPING:
            return
        name = add_class(CONFIG_MAPPING[model_type])
        if name is not None:
            type_class[model_type] = name

    for arch in sorted(TEXT_MODEL_MAP):
        entry: dict[str, Any] = {"module": TEXT_MODEL_MAP[arch]}
        try:
            cls = get_model_class(arch)
            entry["gguf_arch"] = gguf.MODEL_ARCH_NAMES[cls.model_arch]
            entry["converter"] = cls.__name__
            # the converter classes it inherits from, most specific first (kvplan's rules follow the same order)
            entry["bases"] = [
                c.__name__
                for c in cls.__mro__[1:]
                if c.__module__.startswith("conversion") and c.__name__ not in ("TextModel", "ModelBase")
            ]
        except Exception as exc:  # a module that does not import here
            entry["error"] = f"converter class: {type(exc).__name__}: {exc}"[:200]
            archs[arch] = entry
            continue
        model_type = model_types.get(arch)
        if model_type is not None and model_type in CONFIG_MAPPING:
            entry["model_type"] = model_type
            add_defaults(model_type)
            cases.append((f"defaults-{arch}", {"architectures": [arch], "model_type": model_type}, None))
            inst = CONFIG_MAPPING[model_type]().to_dict()
            text = inst.get("text_config") if isinstance(inst.get("text_config"), dict) else None
            sig = inspect.signature(CONFIG_MAPPING[model_type].__init__).parameters
            if text is None:
                small = {k: v for k, v in SMALL.items() if k in sig}
                cfg = {"architectures": [arch], "model_type": model_type, **small}
            else:
                sub_type = text.get("model_type", "")
                sub_cls = CONFIG_MAPPING[sub_type] if sub_type in CONFIG_MAPPING else None  # noqa: SIM401 - lazy mapping
                sub_sig = inspect.signature(sub_cls.__init__).parameters if sub_cls else {}
                small = {k: v for k, v in SMALL.items() if k in sub_sig}
                cfg = {
                    "architectures": [arch],
                    "model_type": model_type,
                    "text_config": {"model_type": text.get("model_type"), **small},
                }
            if small:
                cases.append((f"small-{arch}", cfg, None))
        else:
            cfg = {"architectures": [arch], **SYNTH_BASE, **SYNTH.get(cls.__name__, {}), **SYNTH_ARCH.get(arch, {})}
            cases.append((f"synth-{arch}", cfg, None))
        archs[arch] = entry
    cases.extend((f"extra-{name}", cfg, None) for name, cfg in EXTRA.items())
    for source in sorted(
        [
            *(ROOT / "tests/fixtures/engines/configs").glob("*/config.json"),
            *(ROOT / "tests/fixtures/hf").glob("*/config.json"),
        ]
    ):
        index = source.parent / "model.safetensors.index.json"
        if source.parent.name.startswith("qwen3-next") and not index.is_file():
            cases.append(
                (
                    f"real-{source.parent.parent.name}-{source.parent.name}",
                    json.loads(source.read_text()),
                    QWEN3_NEXT_INDEX,
                )
            )
            continue
        cases.append(
            (
                f"real-{source.parent.parent.name}-{source.parent.name}",
                json.loads(source.read_text()),
                json.loads(index.read_text()) if index.is_file() else None,
            )
        )
    summary = {"converted": 0, "converter refused": 0}
    recorded: dict[str, dict[str, Any]] = json.loads(OUT.read_text()) if args.only and OUT.exists() else {}
    for name, cfg, index in cases:
        if args.only and args.only not in name:
            continue
        case = CASES / name
        if case.exists():
            shutil.rmtree(case)
        case.mkdir(parents=True)
        (case / "config.json").write_text(json.dumps(cfg, indent=1, sort_keys=True) + "\n")
        record: dict[str, Any] = {"config": cfg}
        if index is not None:
            (case / "model.safetensors.index.json").write_text(json.dumps(index) + "\n")
            record["safetensors_index"] = index
        autoconfig = convert(case, get_model_class, gguf, ModelBase)
        if (case / "gguf_kv.json").exists():
            record["gguf_kv"] = json.loads((case / "gguf_kv.json").read_text())
            summary["converted"] += 1
        else:
            record["error"] = (case / "error.txt").read_text().strip()
            summary["converter refused"] += 1
        recorded[name] = record
        arch = cfg["architectures"][0]
        if name.startswith("defaults-") and not autoconfig:
            archs[arch]["raw_config"] = True  # the class reads config.json itself: no transformers defaults
    OUT.write_text(
        "{\n"
        + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(recorded.items()))
        + "\n}\n"
    )
    if args.only:
        print(summary)
        return
    for model_type, config_cls in CONFIG_MAPPING.items():  # the parts' model_types name their classes too
        if config_cls.__name__ in classes:
            type_class.setdefault(model_type, config_cls.__name__)
    converted_archs = sorted({r["gguf_kv"]["general.architecture"] for r in recorded.values() if "gguf_kv" in r})
    lines = [
        '"""Every text architecture llama.cpp\'s converter registers (vendored llama.cpp, conversion/*.py), with',
        "its GGUF architecture and converter class, and transformers' model_type where transformers has a config",
        f"class for it; and those classes' defaults (transformers {transformers.__version__}, the version the",
        "converter pins): the converter reads a config through transformers' AutoConfig, so a key a config.json",
        'leaves out has its class default. Generated by scripts/record_hf_configs.py; do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "#: HF architecture → {gguf_arch, converter, bases, module, model_type?, raw_config?, error?}",
        "HF_ARCHS: dict[str, dict[str, Any]] = {",
        *(f"    {json.dumps(k)}: {py(v)}," for k, v in sorted(archs.items())),
        "}",
        "",
        "#: the GGUF architectures with a recorded conversion (tests/sources/test_hf_conversion.py proves kvplan's",
        "#: reading of their config.json on it); a config.json of another one is read by the same rules, unproven",
        "CONVERTED_ARCHS: frozenset[str] = frozenset(",
        "    {",
        *(f"        {json.dumps(a)}," for a in converted_archs),
        "    }",
        ")",
        "",
        "#: transformers model_type → its config class",
        "MODEL_TYPES: dict[str, str] = {",
        *(f"    {json.dumps(k)}: {json.dumps(v)}," for k, v in sorted(type_class.items())),
        "}",
        "",
        "#: config class → its defaults, the classes of its parts (``sub``: text_config, thinker_config) and the",
        "#: values it gives a part the config leaves out where they differ from that part's defaults (``sub_absent``)",
        "CONFIG_CLASSES: dict[str, dict[str, Any]] = {",
        *(f"    {json.dumps(k)}: {py(v)}," for k, v in sorted(classes.items())),
        "}",
        "",
    ]
    FACTS.write_text("\n".join(lines))
    # the generated file is checked by `ruff format --check` in CI: format it as it is written
    subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(FACTS)], check=True)
    print(summary, f"{len(archs)} architectures, {len(classes)} config classes")
    print("derived by transformers (kvplan/sources/hf_conversion.py DERIVED must cover what the converter reads):")
    for name, keys in sorted(DERIVED.items()):
        print(f"  {name}: {', '.join(keys)}")


def py(value: Any) -> str:
    """JSON → a Python literal (true/false/null spelled as Python)."""
    return repr(json.loads(json.dumps(value, sort_keys=True)))


if __name__ == "__main__":
    main()
