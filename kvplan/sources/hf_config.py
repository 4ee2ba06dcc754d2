"""Hugging Face ``config.json`` (a file or a model folder) → the GGUF metadata llama.cpp's converter writes.

The mapping follows llama.cpp's conversion scripts (conversion/*.py of the llama-cpp-python 0.3.36 sources;
summarised in ../shared/reference/model-facts.md): the same keys a GGUF converted from this checkpoint would
carry, so a config goes through exactly the rules a GGUF file goes through. A field the mapping needs and
cannot read is an error naming it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kvplan.errors import BadInputError
from kvplan.model import ModelDescription, SwaType
from kvplan.sources.files import read_json
from kvplan.sources.gguf_reader import T_BOOL, T_I32, ArrayValue
from kvplan.sources.metadata import LLAMA_MAX_LAYERS, MAMBA_PLACEHOLDER_CTX, describe

U32_MAX = 0xFFFFFFFF

#: HF ``architectures[0]`` → GGUF architecture
ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "MixtralForCausalLM": "llama",
    "Llama4ForConditionalGeneration": "llama4",
    "Mistral3ForConditionalGeneration": "mistral3",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3moe",
    "Qwen3NextForCausalLM": "qwen3next",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Phi3ForCausalLM": "phi3",
    "DeepseekV2ForCausalLM": "deepseek2",
    "DeepseekV3ForCausalLM": "deepseek2",
    "DeepseekV32ForCausalLM": "deepseek32",
    "Glm4MoeForCausalLM": "glm4moe",
    "GptOssForCausalLM": "gpt-oss",
    "CohereForCausalLM": "command-r",
    "Cohere2ForCausalLM": "cohere2",
    "Olmo2ForCausalLM": "olmo2",
    "SmolLM3ForCausalLM": "smollm3",
    "JambaForCausalLM": "jamba",
    "MambaForCausalLM": "mamba",
    "FalconMambaForCausalLM": "mamba",
    "Mamba2ForCausalLM": "mamba2",
    "NemotronHForCausalLM": "nemotron_h",
    "GraniteMoeHybridForCausalLM": "granitehybrid",
    "FalconH1ForCausalLM": "falcon-h1",
    "Lfm2ForCausalLM": "lfm2",
    "KimiLinearForCausalLM": "kimi-linear",
    "MiniMaxM2ForCausalLM": "minimax-m2",
    "MiniMaxText01ForCausalLM": "minimax-01",
    "MiniMaxM1ForCausalLM": "minimax-01",
}


class _Config:
    def __init__(self, cfg: dict[str, Any], path: str) -> None:
        self.cfg = cfg
        self.path = path

    def first(self, *names: str, required: bool = True, default: Any = None) -> Any:
        """TextModel.find_hparam: the first of ``names`` present (and not null)."""
        for n in names:
            if self.cfg.get(n) is not None:
                return self.cfg[n]
        if required:
            raise BadInputError(f"{self.path}: none of {', '.join(names)} is set (needed for the KV layout)")
        return default

    def int(self, *names: str, required: bool = True, default: int | None = None, minimum: int = 0) -> Any:
        """An unsigned 32-bit count (what the converter writes as u32), at least ``minimum``."""
        v = self.first(*names, required=required, default=default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not minimum <= v <= U32_MAX or int(v) != v:
            raise BadInputError(f"{self.path}: {names[0]} must be an integer from {minimum} to {U32_MAX}, not {v!r}")
        return int(v)


def _common(c: _Config) -> dict[str, Any]:
    n_layers = c.int("n_layers", "num_hidden_layers", "n_layer", "num_layers", minimum=1)
    if n_layers > LLAMA_MAX_LAYERS:  # before any per-layer work
        raise BadInputError(f"{c.path}: num_hidden_layers = {n_layers} is more than llama.cpp's {LLAMA_MAX_LAYERS}")
    kv: dict[str, Any] = {
        "block_count": n_layers,
        "context_length": c.int(
            "max_position_embeddings",
            "n_ctx",
            "n_positions",
            "max_length",
            "max_sequence_length",
            "model_max_length",
            required=False,
        ),
        "embedding_length": c.int("hidden_size", "n_embd", "dim"),
        "attention.head_count": c.int("num_attention_heads", "n_head", "n_heads", required=False),
    }
    kv_heads = c.first("num_key_value_heads", "n_kv_heads", required=False)
    if kv_heads is not None:
        kv["attention.head_count_kv"] = c.int("num_key_value_heads", "n_kv_heads")
    head_dim = c.int("head_dim", required=False)
    if head_dim is not None:
        kv["attention.key_length"] = head_dim
        kv["attention.value_length"] = head_dim
    return kv


def _swa(c: _Config, kv: dict[str, Any]) -> None:
    window = c.int("sliding_window", required=False)
    if window:
        kv["attention.sliding_window"] = window


def _deepseek(c: _Config, kv: dict[str, Any]) -> None:
    lora, rope = c.int("kv_lora_rank"), c.int("qk_rope_head_dim")
    kv.update(
        {
            "attention.head_count_kv": 1,
            "attention.key_length": lora + rope,
            "attention.value_length": lora,
            "attention.key_length_mla": c.int("qk_nope_head_dim") + rope,
            "attention.value_length_mla": c.int("v_head_dim"),
            "attention.kv_lora_rank": lora,
        }
    )


def _deepseek32(c: _Config, kv: dict[str, Any]) -> None:
    _deepseek(c, kv)
    nextn = c.int("num_nextn_predict_layers", required=False, default=0)
    kv["block_count"] += nextn  # DeepseekV32 conversion keeps the MTP layers
    kv["nextn_predict_layers"] = nextn
    kv["attention.indexer.key_length"] = c.int("index_head_dim")
    kv["attention.indexer.head_count"] = c.int("index_n_heads")
    kv["attention.indexer.top_k"] = c.int("index_topk")


def _glm4moe(c: _Config, kv: dict[str, Any]) -> None:
    nextn = c.int("num_nextn_predict_layers", required=False, default=0)
    kv["block_count"] += nextn
    kv["nextn_predict_layers"] = nextn


def _qwen3next(c: _Config, kv: dict[str, Any]) -> None:
    v_heads = c.int("linear_num_value_heads")
    kv.update(
        {
            "ssm.conv_kernel": c.int("linear_conv_kernel_dim"),
            "ssm.state_size": c.int("linear_key_head_dim"),
            "ssm.group_count": c.int("linear_num_key_heads"),
            "ssm.time_step_rank": v_heads,
            "ssm.inner_size": c.int("linear_value_head_dim") * v_heads,
            "full_attention_interval": c.int("full_attention_interval", required=False, default=4),
        }
    )
    types = c.first("layer_types", required=False)
    if isinstance(types, list):
        flags = tuple(t == "linear_attention" for t in types)
        kv["attention.recurrent_layers"] = ArrayValue(T_BOOL, len(flags), flags)


def _jamba(c: _Config, kv: dict[str, Any]) -> None:
    n = kv["block_count"]
    period = c.int("attn_layer_period", default=8, minimum=1)
    offset = c.int("attn_layer_offset", default=4)
    heads = tuple(
        kv.get("attention.head_count_kv", kv["attention.head_count"]) if i % period == offset else 0 for i in range(n)
    )
    kv["attention.head_count_kv"] = ArrayValue(T_I32, n, heads)
    kv["ssm.conv_kernel"] = c.int("mamba_d_conv")
    kv["ssm.inner_size"] = c.int("mamba_expand") * kv["embedding_length"]
    kv["ssm.state_size"] = c.int("mamba_d_state")
    kv["ssm.time_step_rank"] = c.int("mamba_dt_rank")


def _mamba(c: _Config, kv: dict[str, Any]) -> None:
    kv["context_length"] = MAMBA_PLACEHOLDER_CTX  # conversion/mamba.py: "arbitrary value"
    kv["attention.head_count"] = 0
    kv.pop("attention.head_count_kv", None)
    d_inner = c.int("intermediate_size", "d_inner", required=False) or 2 * kv["embedding_length"]
    kv.update(
        {
            "ssm.conv_kernel": c.int("conv_kernel", "d_conv"),
            "ssm.inner_size": d_inner,
            "ssm.state_size": c.int("state_size", "d_state"),
            "ssm.time_step_rank": c.int("time_step_rank", "dt_rank"),
        }
    )


def _mamba2(c: _Config, kv: dict[str, Any]) -> None:
    kv["context_length"] = MAMBA_PLACEHOLDER_CTX
    kv["attention.head_count"] = 0
    kv.pop("attention.head_count_kv", None)
    kv.pop("attention.key_length", None)
    kv.pop("attention.value_length", None)
    d_inner = c.int("intermediate_size", "d_inner", required=False) or c.int("expand") * kv["embedding_length"]
    head_dim = c.int("mamba_d_head", "head_dim", required=False, default=64, minimum=1)
    kv.update(
        {
            "ssm.conv_kernel": c.int("conv_kernel", "d_conv", required=False, default=4),
            "ssm.inner_size": d_inner,
            "ssm.state_size": c.int("state_size", "d_state", required=False, default=128),
            "ssm.group_count": c.int("n_groups"),
            "ssm.time_step_rank": d_inner // head_dim,
        }
    )


def _per_layer_kv_heads(kv: dict[str, Any], attention: list[bool]) -> None:
    """head_count_kv as a per-layer array: the KV heads on attention layers, 0 on state layers."""
    heads = kv.get("attention.head_count_kv") or kv["attention.head_count"]
    flags = tuple(heads if a else 0 for a in attention)
    kv["attention.head_count_kv"] = ArrayValue(T_I32, len(flags), flags)


def _nemotron_h(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/nemotron.py NemotronHModel: M = Mamba-2, * = attention, - = MLP (per-layer n_ff)."""
    pattern = c.first("hybrid_override_pattern", "layers_block_type")
    if isinstance(pattern, str):
        kinds = ["mamba" if ch == "M" else "attention" if ch == "*" else "mlp" for ch in pattern]
    elif isinstance(pattern, list) and all(isinstance(t, str) for t in pattern):
        kinds = ["mamba" if t in ("mamba", "linear_attention") else
                 "attention" if t in ("attention", "full_attention") else "mlp" for t in pattern]  # fmt: skip
    else:
        raise BadInputError(f"{c.path}: hybrid_override_pattern must be a string such as 'M-M*-' or a list of types")
    if len(kinds) != kv["block_count"]:
        raise BadInputError(
            f"{c.path}: hybrid_override_pattern has {len(kinds)} layers, num_hidden_layers {kv['block_count']}"
        )
    _per_layer_kv_heads(kv, [k == "attention" for k in kinds])
    n_ff = c.int("intermediate_size", required=False, default=0)
    flags = tuple(n_ff if k == "mlp" else 0 for k in kinds)
    kv["feed_forward_length"] = ArrayValue(T_I32, len(flags), flags)
    head_dim = c.int("head_dim", "attention_head_dim")
    kv["attention.key_length"] = kv["attention.value_length"] = head_dim
    heads = c.int("mamba_num_heads", minimum=1)
    kv.update(
        {
            "ssm.conv_kernel": c.int("conv_kernel", "mamba_d_conv"),
            "ssm.state_size": c.int("ssm_state_size", "state_size", "mamba_d_state"),
            "ssm.group_count": c.int("n_groups", "mamba_n_groups"),
            "ssm.inner_size": heads * c.int("mamba_head_dim"),
            "ssm.time_step_rank": heads,
        }
    )


def _granitehybrid(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/granite.py GraniteHybridModel: attention where layer_types says so (or by index / period)."""
    n = kv["block_count"]
    types = c.first("layer_types", required=False)
    if isinstance(types, list):
        attention = [t == "attention" for t in types]
    elif isinstance(c.first("attn_layer_indices", required=False), list):
        indices = set(c.first("attn_layer_indices"))
        attention = [i in indices for i in range(n)]
    else:
        period, offset = c.int("attn_layer_period", minimum=1), c.int("attn_layer_offset")
        attention = [i % period == offset for i in range(n)]
    if len(attention) != n:
        raise BadInputError(f"{c.path}: layer_types has {len(attention)} entries, num_hidden_layers {n}")
    _per_layer_kv_heads(kv, attention)
    kv.pop("attention.key_length", None)  # llama.cpp's Granite ignores head_dim (hidden / heads)
    kv.pop("attention.value_length", None)
    kv.update(
        {
            "ssm.conv_kernel": c.int("mamba_d_conv", "conv_kernel"),
            "ssm.state_size": c.int("mamba_d_state", "state_size"),
            "ssm.group_count": c.int("mamba_n_groups", "n_groups"),
            "ssm.inner_size": c.int("mamba_expand", "expand") * kv["embedding_length"],
            "ssm.time_step_rank": c.int("mamba_n_heads", "mamba_num_heads"),
        }
    )


def _falcon_h1(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/falcon_h1.py: attention and Mamba-2 in every layer."""
    d_inner = c.int("mamba_d_ssm")
    kv.update(
        {
            "ssm.conv_kernel": c.int("mamba_d_conv", required=False, default=4),
            "ssm.state_size": c.int("mamba_d_state", required=False, default=128),
            "ssm.group_count": c.int("mamba_n_groups", required=False, default=1),
            "ssm.inner_size": d_inner,
            "ssm.time_step_rank": d_inner // c.int("mamba_d_head", required=False, default=64, minimum=1),
        }
    )


def _lfm2(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/lfm2.py: KV heads on full_attention layers only; the conv layers keep L_cache - 1 columns."""
    types = c.first("layer_types")
    if not isinstance(types, list) or len(types) != kv["block_count"]:
        raise BadInputError(f"{c.path}: layer_types must list num_hidden_layers entries")
    _per_layer_kv_heads(kv, [t != "conv" for t in types])
    kv["shortconv.l_cache"] = c.int("conv_L_cache")


def _kimi_linear(c: _Config, kv: dict[str, Any]) -> None:
    """conversion/kimi_linear.py: MLA (as one KV head) on linear_attn_config.full_attn_layers (1-based), KDA else."""
    la = c.first("linear_attn_config")
    if not isinstance(la, dict) or not isinstance(la.get("full_attn_layers"), list):
        raise BadInputError(f"{c.path}: linear_attn_config.full_attn_layers is not set (needed for the layer kinds)")
    full = set(la["full_attn_layers"])
    kv["attention.head_count_kv"] = 1
    _per_layer_kv_heads(kv, [i + 1 in full for i in range(kv["block_count"])])
    sub = _Config(la, f"{c.path}: linear_attn_config")
    kv["ssm.conv_kernel"] = sub.int("short_conv_kernel_size")
    kv["kda.head_dim"] = sub.int("head_dim")
    lora, rope = c.int("kv_lora_rank"), c.int("qk_rope_head_dim")
    kv["attention.kv_lora_rank"] = lora
    kv["attention.key_length"] = lora + rope
    kv["attention.key_length_mla"] = c.int("qk_nope_head_dim") + rope
    kv["attention.value_length_mla"] = c.int("v_head_dim")


def _gemma3(c: _Config, kv: dict[str, Any]) -> None:
    # conversion/gemma.py: official Gemma 3 configs omit these; the transformers defaults apply
    if kv.get("attention.head_count") is None:
        kv["attention.head_count"] = 8  # Gemma3TextConfig.num_attention_heads (gemma-3-4b's config omits it)
    kv.setdefault("attention.head_count_kv", c.int("num_key_value_heads", required=False, default=4))
    kv.setdefault("attention.key_length", 256)
    kv.setdefault("attention.value_length", 256)
    if kv.get("context_length") is None:
        kv["context_length"] = 131072
    if c.int("sliding_window_pattern", required=False) != 1:
        _swa(c, kv)


def _command_r(c: _Config, kv: dict[str, Any]) -> None:
    kv["context_length"] = c.int("model_max_length", "max_position_embeddings")


def _minimax01(c: _Config, kv: dict[str, Any]) -> None:
    types = c.first("attn_type_list", required=False)
    if isinstance(types, list):
        flags = tuple(t == 0 for t in types)  # 0 = lightning (linear), 1 = softmax
        kv["attention.recurrent_layers"] = ArrayValue(T_BOOL, len(flags), flags)


FAMILY_RULES: dict[str, Callable[[_Config, dict[str, Any]], None]] = {
    "gemma2": _swa,
    "gemma3": _gemma3,
    "gpt-oss": _swa,
    "cohere2": _swa,
    "phi3": _swa,
    "olmo2": _swa,
    "deepseek2": _deepseek,
    "deepseek32": _deepseek32,
    "glm4moe": _glm4moe,
    "qwen3next": _qwen3next,
    "jamba": _jamba,
    "mamba": _mamba,
    "mamba2": _mamba2,
    "command-r": _command_r,
    "minimax-01": _minimax01,
    "nemotron_h": _nemotron_h,
    "granitehybrid": _granitehybrid,
    "falcon-h1": _falcon_h1,
    "lfm2": _lfm2,
    "kimi-linear": _kimi_linear,
}

#: families whose checkpoints may declare one sliding window for every layer that llama.cpp does not apply
#: but vLLM's model classes do (Llama / Mistral, Phi-3; Qwen2 only with use_sliding_window)
_DECLARED_WINDOW_ARCHS = frozenset({"llama", "phi3", "qwen2"})


def declared_window(cfg: dict[str, Any], arch: str) -> int:
    """The checkpoint's sliding window for every layer (transformers' rule: Qwen2 only with use_sliding_window)."""
    if arch not in _DECLARED_WINDOW_ARCHS or cfg.get("use_sliding_window") is False:
        return 0
    window = cfg.get("sliding_window")
    if isinstance(window, bool) or not isinstance(window, int) or not 0 < window <= U32_MAX:
        return 0
    return window


def config_to_metadata(cfg: dict[str, Any], path: str) -> dict[str, Any]:
    """The GGUF key/values (``{arch}.`` prefixed) llama.cpp's converter would write for ``cfg``."""
    archs = cfg.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise BadInputError(f"{path}: 'architectures' is missing; cannot tell the model family")
    hf_arch = archs[0]
    arch = ARCHITECTURES.get(hf_arch)
    if arch is None:
        known = ", ".join(sorted(ARCHITECTURES))
        raise BadInputError(
            f"{path}: architectures[0] = {hf_arch!r} is not one kvplan maps yet (known: {known}); "
            "describe the model with a YAML spec"
        )
    text = cfg.get("text_config")
    if isinstance(text, dict):  # multimodal checkpoints keep the language model here (merged to the top level)
        cfg = {**cfg, **text}
    c = _Config(cfg, path)
    kv = _common(c)
    rule = FAMILY_RULES.get(arch)
    if rule:
        rule(c, kv)
    if kv.get("context_length") is None:
        raise BadInputError(f"{path}: max_position_embeddings (or n_ctx, n_positions, ...) is not set")
    if kv.get("attention.head_count") is None:
        raise BadInputError(f"{path}: num_attention_heads (or n_head, n_heads) is not set (needed for the KV layout)")
    out: dict[str, Any] = {"general.architecture": arch}
    name = cfg.get("_name_or_path")
    if isinstance(name, str) and name:
        out["general.name"] = name
    out.update({f"{arch}.{k}": v for k, v in kv.items()})
    return out


def load_hf_config(path: str) -> ModelDescription:
    """A ``config.json`` file, or a model folder that holds one."""
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    cfg = read_json(file, "a Hugging Face config.json")
    if not isinstance(cfg, dict):
        raise BadInputError(f"{file}: expected a JSON object")
    kv = config_to_metadata(cfg, file)
    model = describe(kv, source=file, source_kind="hf-config", name=kv.get("general.name"))
    return replace(model, **_serving_facts(cfg, model))


def _serving_facts(cfg: dict[str, Any], model: ModelDescription) -> dict[str, Any]:
    """What the serving engines read from the config that the GGUF metadata does not carry."""
    out: dict[str, Any] = {"hf_architecture": cfg["architectures"][0]}
    window = declared_window(cfg, model.arch)
    if window and model.swa_type == SwaType.NONE:
        out["declared_window"] = window
    vision = cfg.get("vision_config")
    if isinstance(vision, dict):
        layers, hidden = vision.get("num_hidden_layers", 24), vision.get("hidden_size", 1024)  # SGLang's defaults
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 20 for v in (layers, hidden)):
            out["vision_tower"] = (layers, hidden)
        if cfg.get("model_type") in ("gemma3", "paligemma"):
            out["mm_prefix_lm"] = True
    ssm_dtype = cfg.get("mamba_ssm_cache_dtype")
    if model.recurrent_params is not None and isinstance(ssm_dtype, str):
        out["recurrent_params"] = replace(model.recurrent_params, cache_dtype=ssm_dtype)
    return out
