"""The facts a GGUF gives llama.cpp's compute graph (kvplan.model.GraphFacts): from its metadata and tensor
infos."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from kvplan.model import GraphFacts
from kvplan.sources.values import ArrayValue


def _int(kv: Mapping[str, object], key: str, default: int | None = None) -> int:
    v = kv.get(key, default)
    if isinstance(v, ArrayValue):
        v = v.values[0] if v.values else None
    if not isinstance(v, int):
        raise NotImplementedError(f"{key} missing")
    return v


def _float(kv: Mapping[str, object], key: str) -> float:
    """A float key (-inf where absent: llama.cpp's default for the bounds and betas read here)."""
    v = kv.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("-inf")


def graph_facts(kv: Mapping[str, object], tensor_shapes: Mapping[str, tuple[int, ...]]) -> GraphFacts | None:
    """The compute graph's facts from a GGUF's metadata and tensor infos (None without an embedding length)."""
    arch = kv.get("general.architecture")
    if not isinstance(arch, str):
        return None
    try:
        tokens = kv.get("tokenizer.ggml.tokens")
        if "token_embd.weight" in tensor_shapes:
            n_vocab = tensor_shapes["token_embd.weight"][1]
        elif isinstance(tokens, ArrayValue) and kv.get("tokenizer.ggml.model") not in (None, "no_vocab"):
            n_vocab = tokens.count  # llama_vocab::load reads vocab_size only for a "no_vocab" tokenizer
        elif f"{arch}.vocab_size" in kv:
            n_vocab = _int(kv, f"{arch}.vocab_size")
        else:
            n_vocab = tokens.count if isinstance(tokens, ArrayValue) else 0
        lead = _int(kv, f"{arch}.leading_dense_block_count", 0)
        present = set()
        for name in tensor_shapes:
            if name.startswith("blk."):
                block, _, rest = name.removeprefix("blk.").partition(".")
                if block not in ("0", str(lead)):  # the first layer, and the first MoE layer after dense ones
                    continue
                name = rest
            present.add(name.removesuffix(".weight"))
        softcap = kv.get(f"{arch}.final_logit_softcapping")
        norm = kv.get(f"{arch}.expert_weights_norm", False)
        sections = kv.get(f"{arch}.rope.dimension_sections")
        secs = list(sections.values or ()) if isinstance(sections, ArrayValue) else []
        return GraphFacts(
            n_vocab=n_vocab,
            n_ff=_int(kv, f"{arch}.feed_forward_length", 0),
            n_expert=_int(kv, f"{arch}.expert_count", 0),
            n_expert_used=_int(kv, f"{arch}.expert_used_count", 0),
            n_ff_exp=_int(kv, f"{arch}.expert_feed_forward_length", 0),
            expert_weights_scale=float(kv.get(f"{arch}.expert_weights_scale", 0.0) or 0.0),  # type: ignore[arg-type]
            final_logit_softcap=isinstance(softcap, float) and softcap != 0.0,
            n_layer_dense_lead=lead,
            n_expert_shared=_int(kv, f"{arch}.expert_shared_count", 0),
            expert_weights_norm=norm is True,
            expert_gating=_int(kv, f"{arch}.expert_gating_func", 0),
            mrope=len(secs) >= 2 and all(isinstance(x, int) and x > 0 for x in secs[:2]),
            n_rot=_int(kv, f"{arch}.rope.dimension_count", 0),
            kv_lora_rank=_int(kv, f"{arch}.attention.kv_lora_rank", 0),
            head_k_mla=_int(kv, f"{arch}.attention.key_length_mla", 0),
            head_v_mla=_int(kv, f"{arch}.attention.value_length_mla", 0),
            q_lora_rank=_int(kv, f"{arch}.attention.q_lora_rank", 0),
            hc_count=_int(kv, f"{arch}.hyper_connection.count", 0),
            attn_res_block=_int(kv, f"{arch}.attn_res.block_size", 0),
            indexer_block=_int(kv, f"{arch}.attention.indexer.block_size", 0),
            kpool=_int(kv, f"{arch}.attention.indexer.kpool", 0),
            kpool_tail=kv.get(f"{arch}.attention.indexer.kpool_select_tail") is True,
            hc_low_rank=_int(kv, f"{arch}.hyper_connection.low_rank", 0),
            ple=_ple(kv, arch),
            dsv4=(
                _int(kv, f"{arch}.attention.output_group_count", 0),
                _int(kv, f"{arch}.attention.output_lora_rank", 0),
                _int(kv, f"{arch}.hash_layer_count", 0),
            ),
            situ_linear=_float(kv, f"{arch}.activation.situ_linear_beta") > 0.0,
            kda_lower_bound=_float(kv, f"{arch}.kda.gate_lower_bound") > float("-inf"),
            expert_latent=_int(kv, f"{arch}.expert_latent_length", 0),
            mla_swa=(
                _int(kv, f"{arch}.attention.kv_lora_rank_swa", 0),
                _int(kv, f"{arch}.attention.key_length_mla_swa", 0),
                _int(kv, f"{arch}.attention.value_length_mla_swa", 0),
            ),
            expert_groups=(_int(kv, f"{arch}.expert_group_count", 0), _int(kv, f"{arch}.expert_group_used_count", 0)),
            n_ff_shexp=_int(kv, f"{arch}.expert_shared_feed_forward_length", 0),
            n_ctx_orig=_int(kv, f"{arch}.rope.scaling.original_context_length", 0),
            attn_temp_scale=kv.get(f"{arch}.attention.temperature_scale") not in (None, 0, 0.0),
            logit_scale=_scale(kv, arch, "logit_scale"),
            embedding_scale=_scale(kv, arch, "embedding_scale"),
            residual_scale=_scale(kv, arch, "residual_scale"),
            rope_finetuned=kv.get(f"{arch}.rope.scaling.finetuned", True) is not False,
            ssm_dt_b_c_rms=kv.get(f"{arch}.ssm.dt_b_c_rms") is True,
            dense_layers=_dense_layers(kv, tensor_shapes, arch),
            moe_layer_step=_int(kv, f"{arch}.interleave_moe_layer_step", 0),
            moe_latent=_int(kv, f"{arch}.moe_latent_size", 0),
            n_deepstack=_int(kv, f"{arch}.n_deepstack_layers", 0),
            parallel_residual=kv.get(f"{arch}.use_parallel_residual") is True,
            indexer_heads=_int(kv, f"{arch}.attention.indexer.head_count", 0),
            indexer_top_k=_int(kv, f"{arch}.attention.indexer.top_k", 0),
            experts_per_group=_int(kv, f"{arch}.experts_per_group", 0),
            n_ff_chexp=_int(kv, f"{arch}.expert_chunk_feed_forward_length", 0),
            hrm=(
                _int(kv, f"{arch}.hrm.layers_per_stack", 0),
                _int(kv, f"{arch}.hrm.h_cycles", 0),
                _int(kv, f"{arch}.hrm.l_cycles", 0),
            ),
            gate_width=_dim(tensor_shapes.get("blk.0.attn_gate.weight"), 1),
            attn_value_scale=kv.get(f"{arch}.attention.value_scale") not in (None, 0, 0.0, 1, 1.0),
            clamp_exp=_clamped(kv.get(f"{arch}.swiglu_clamp_exp")),
            clamp_shexp=_clamped(kv.get(f"{arch}.swiglu_clamp_shexp")),
            rms_eps_missing=f"{arch}.attention.layer_norm_rms_epsilon" not in kv,
            rope_pattern_off=_has_zero(kv.get(f"{arch}.attention.rope_pattern")),
            tensors=frozenset(present),
            all_optional=not tensor_shapes,
        )
    except (NotImplementedError, TypeError, ValueError):
        return None


#: the multipliers a model class sets before it reads the file's keys (load_arch_hparams: MiniCPM's 12, 1.4/sqrt
#: n_layer and 256/n_embd; Grok-1's embedding 78.38): absent from the file, they are on; a key of 0 turns one off
_SCALE_DEFAULTS = {"minicpm": {"logit_scale", "embedding_scale", "residual_scale"}, "grok": {"embedding_scale"}}


def _ple(kv: Mapping[str, object], arch: str) -> tuple[int, int, int, int]:
    """Qwen4exp's PLE shape: heads, head width, conv kernel, n-gram size (load_arch_hparams; zeros without
    ple.layers)."""
    layers = kv.get(f"{arch}.ple.layers")
    if not isinstance(layers, ArrayValue) or not layers.count:
        return (0, 0, 0, 0)
    ngram = _int(kv, f"{arch}.ple.ngram_size")
    heads = (ngram - 1) * _int(kv, f"{arch}.ple.heads_per_ngram")
    return (heads, _int(kv, f"{arch}.embedding_length_per_layer_input"), _int(kv, f"{arch}.ple.conv_kernel"), ngram)


def _scale(kv: Mapping[str, object], arch: str, name: str) -> bool:
    on = name in _SCALE_DEFAULTS.get(arch, ())
    return kv.get(f"{arch}.{name}", 1.0 if on else None) not in (None, 0, 0.0)


def _clamped(v: object) -> frozenset[int]:
    """The layers a swiglu_clamp_* key clamps (above llama.cpp's 1e-6; one value: every layer, up to 4,096)."""
    if isinstance(v, ArrayValue):
        return frozenset(i for i, x in enumerate(v.values or ()) if isinstance(x, (int, float)) and x > 1e-6)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 1e-6:
        return frozenset(range(4096))
    return frozenset()


def _dim(shape: tuple[int, ...] | None, i: int) -> int:
    """A tensor's dimension i, 0 without the tensor or the dimension."""
    return shape[i] if shape is not None and len(shape) > i else 0


def _has_zero(v: object) -> bool:
    """A per-layer array with a 0 in it."""
    return isinstance(v, ArrayValue) and any(x == 0 for x in v.values or ())


def _dense_layers(kv: Mapping[str, object], tensor_shapes: Mapping[str, tuple[int, ...]], arch: str) -> frozenset[int]:
    """Jamba's, MiMo-V2's and Hy V3's layers without a router, where the file's tensors say (a metadata-only file:
    none)."""
    if arch not in ("jamba", "mimo2", "hy_v3") or not tensor_shapes or not _int(kv, f"{arch}.expert_count", 0):
        return frozenset()
    n = min(_int(kv, f"{arch}.block_count", 0), 1 << 16)
    return frozenset(i for i in range(n) if f"blk.{i}.ffn_gate_inp.weight" not in tensor_shapes)


#: config.json model types whose conversion writes Q/K/V biases (llama.cpp's convert_hf_to_gguf.py: Qwen2's
#: attention always has them; others when attention_bias is true)
_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe"})
_OWN_WIDTH_ARCHS = frozenset({"GptOssForCausalLM", "MiniMaxM2ForCausalLM"})
_MAMBA_ARCHS = frozenset({"MambaForCausalLM", "MambaLMHeadModel", "FalconMambaForCausalLM", "Mamba2ForCausalLM"})
_NORM_TYPES = ("glm4_moe", "glm4v_moe", "deepseek_v2", "deepseek_v3")


def _jamba_dense(c: Mapping[str, object]) -> frozenset[int]:
    """JambaConfig's layers without experts: those off expert_layer_period / expert_layer_offset (2, 1)."""
    n, period, offset = c.get("num_hidden_layers"), c.get("expert_layer_period", 2), c.get("expert_layer_offset", 1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, period, offset)) or not period:
        return frozenset()
    assert isinstance(n, int) and isinstance(period, int) and isinstance(offset, int)
    return frozenset(i for i in range(min(n, 1 << 16)) if i % period != offset)


#: architectures whose converter derives widths this port does not follow yet (LFM2's block_auto_adjust_ff_dim,
#: ERNIE 4.5 MoE's, Qwen3-Omni's and PhiMoE's expert widths, dots.llm1's and MiniMax-01's MoE keys): from their
#: config.json no graph is built — "widths not known" rather than a wrong compute buffer (a GGUF gives them)
WIDTHS_NOT_PORTED = frozenset({
    "Lfm2ForCausalLM", "LFM2ForCausalLM", "Lfm2Model", "Lfm2BidirectionalModel", "Lfm2MoeForCausalLM",
    "Dots1ForCausalLM", "Ernie4_5_MoeForCausalLM", "MiniMaxM1ForCausalLM", "MiniMaxText01ForCausalLM",
    "Qwen3OmniMoeForConditionalGeneration", "PhiMoEForCausalLM",
})  # fmt: skip


def graph_facts_from_config(cfg: Mapping[str, object]) -> GraphFacts | None:
    """The graph facts of the GGUF llama.cpp's converter makes from a config.json (a multimodal checkpoint's
    text_config): vocabulary, feed-forward and expert widths, and the biases the conversion writes; None for the
    architectures in WIDTHS_NOT_PORTED."""
    named = cfg.get("architectures")
    if isinstance(named, list) and WIDTHS_NOT_PORTED & {str(a) for a in named}:
        return None
    return _from_config(cfg)


def _intermediate(c: Mapping[str, object]) -> object:
    """intermediate_size; one width per layer (Gemma 3n): the converter writes the array, read as its first."""
    ff = c.get("intermediate_size")
    return ff[0] if isinstance(ff, list) and ff and isinstance(ff[0], int) else ff


def _from_config(cfg: Mapping[str, object]) -> GraphFacts | None:
    text = cfg.get("text_config")
    c: Mapping[str, object] = text if isinstance(text, Mapping) else cfg
    vocab = c.get("vocab_size")
    converted = _converter_widths(c, cfg)
    ff = converted[0] if converted is not None else _intermediate(c)
    if not isinstance(ff, int):
        return None
    if not isinstance(vocab, int):
        vocab = 0  # no vocabulary: the widths stand, no graph is built (compute.dims_of)

    def num(*keys: str) -> int:
        for k in keys:
            v = c.get(k)
            if isinstance(v, int):
                return v
        return 0

    model_type = str(c.get("model_type") or cfg.get("model_type") or "")
    named = cfg.get("architectures")
    archs = [str(a) for a in named] if isinstance(named, list) else []
    tensors = set()
    if c.get("attention_bias") is True or model_type in _QKV_BIAS_TYPES:
        tensors |= {"attn_q.bias", "attn_k.bias", "attn_v.bias"}
    if model_type == "qwen3_next":  # the converter splits in_proj_qkvz into attn_qkv and attn_gate (Qwen3NextModel)
        tensors |= {"attn_qkv", "attn_gate"}
    softcap = c.get("final_logit_softcapping")
    scale = c.get("routed_scaling_factor")
    # the DeepSeek-style MoE configs (DeepSeek-V2/V3, GLM-4.5, Kimi, Youtu: n_routed_experts), whose converters
    # write the weight norm and scale; Qwen's norm_topk_prob is not written (its graph always normalises)
    # gpt-oss's and MiniMax-M2's intermediate_size is their experts' width (their converters write
    # expert_feed_forward_length from it)
    own_width = model_type in ("gpt_oss", "minimax_m2") or bool(_OWN_WIDTH_ARCHS & set(archs))
    # Qwen's, MiniMax's and Maple's converters read num_experts and write no dense lead, whatever else a config
    # carries
    not_deepseek = model_type.startswith(("qwen", "minimax", "maple")) or any(
        a.startswith(("Qwen", "MiniMax", "Maple")) for a in archs
    )
    deepseek_like = ("n_routed_experts" in c or model_type.startswith(_NORM_TYPES)) and not not_deepseek
    if model_type in ("mamba", "falcon_mamba", "mamba2") or set(archs) & _MAMBA_ARCHS:
        ff = 0  # no feed-forward block: the converter writes feed_forward_length 0 (conversion/mamba.py)
    if model_type == "nemotron_h" or "NemotronHForCausalLM" in archs:
        ff = 0  # the converter writes one width per layer (an array; the graph reads each layer's)
    mlp = c.get("intermediate_size_mlp")  # Llama 4: the dense layers' width; intermediate_size is the experts'
    if isinstance(mlp, int) and not isinstance(mlp, bool) and mlp > 0:
        ff, expert_ff = mlp, ff
    else:
        expert_ff = ff if own_width else num("moe_intermediate_size")
    experts, used = converted[1:] if converted is not None else (0, 0)
    # DeepseekModel (DeepSeek-MoE) writes expert_weights_scale 1.0 and no weight norm, whatever the config says
    deepseek_v1 = model_type == "deepseek" or "DeepseekForCausalLM" in archs
    scale = 1.0 if deepseek_v1 else scale
    facts = GraphFacts(
        n_vocab=vocab,
        n_ff=ff,
        n_expert=experts or num("num_local_experts", "num_experts", "n_routed_experts"),
        n_expert_used=used or num("num_experts_per_tok", "num_experts_per_token", "top_k_experts"),
        # gpt-oss's intermediate_size is its experts' width (the converter writes expert_feed_forward_length)
        n_ff_exp=expert_ff,
        expert_weights_scale=float(scale) if isinstance(scale, (int, float)) and deepseek_like else 0.0,
        final_logit_softcap=isinstance(softcap, (int, float)) and softcap != 0,
        n_layer_dense_lead=_dense_lead(c, archs, deepseek_like),
        n_expert_shared=num("n_shared_experts") if deepseek_like else 0,
        # written only by the converters of the architectures that read them (DeepSeek-V2/V3, GLM-4.5)
        expert_weights_norm=c.get("norm_topk_prob") is True and deepseek_like and not deepseek_v1,
        n_ff_shexp=num("shared_expert_intermediate_size"),
        n_ctx_orig=num("original_max_position_embeddings"),
        logit_scale=c.get("logit_scale") not in (None, 0, 0.0),
        ssm_dt_b_c_rms=model_type == "falcon_mamba"
        or "FalconMambaForCausalLM" in archs,  # the converter's use_dt_b_c_norm (conversion/mamba.py)
        tensors=frozenset(tensors),
        n_deepstack=_deepstack(cfg),
        # GPTNeoXModel writes use_parallel_residual, True where the config does not say
        parallel_residual=model_type == "gpt_neox" and c.get("use_parallel_residual", True) is True,
        # DeepSeek-V3.2's and GLM-5's lightning indexer (the converters write index_n_heads and index_topk)
        indexer_heads=num("index_n_heads"),
        indexer_top_k=num("index_topk"),
    )
    return _class_keys(facts, c, model_type, archs)


def _class_keys(facts: GraphFacts, c: Mapping[str, object], model_type: str, archs: list[str]) -> GraphFacts:
    """The converter classes that write their MoE keys their own way."""
    if model_type == "hunyuan_v1_moe" or "HunYuanMoEV1ForCausalLM" in archs:
        return _hunyuan_moe(facts, c)
    if "Cohere2MoeForCausalLM" in archs:
        return _cohere2_moe(facts, c)
    if any(a.startswith("MiMoV2") for a in archs):
        return _mimo2(facts, c)
    if "HYV3ForCausalLM" in archs:
        return _hy_v3(facts, c)
    if "KimiLinearForCausalLM" in archs or "KimiLinearModel" in archs:
        return _kimi_linear(facts, c)
    return facts


def _kimi_linear(facts: GraphFacts, c: Mapping[str, object]) -> GraphFacts:
    """KimiLinearModel's keys (conversion/kimi_linear.py): the shared experts' count, the dense lead from
    first_k_dense_replace and the scale from routed_scaling_factor, whatever else the config says; no weight norm."""

    def whole(key: str) -> int:
        v = c.get(key, 0)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    scale = c.get("routed_scaling_factor", 0.0)
    return dataclasses.replace(
        facts, n_expert_shared=whole("num_shared_experts"), n_layer_dense_lead=whole("first_k_dense_replace"),
        expert_weights_scale=float(scale) if isinstance(scale, (int, float)) and not isinstance(scale, bool) else 0.0,
        expert_weights_norm=False,
    )  # fmt: skip


def _hy_v3(facts: GraphFacts, c: Mapping[str, object]) -> GraphFacts:
    """HYV3Model's keys (conversion/hunyuan.py): the shared expert moe_intermediate_size × num_shared_experts wide
    (no count written), the weight norm from route_norm (true unless it says), the scale from router_scaling_factor
    (1.0 unless it says), no dense lead — the first first_k_dense_replace layers are stored without a router."""
    n = c.get("num_hidden_layers", 0)
    n = n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1 << 16 else 0
    lead = c.get("first_k_dense_replace", 0)
    lead = lead if isinstance(lead, int) and not isinstance(lead, bool) else 0
    shared = c.get("num_shared_experts", 1)
    shared = shared if isinstance(shared, int) and not isinstance(shared, bool) and shared >= 0 else 1
    scale = c.get("router_scaling_factor", 1.0)
    return dataclasses.replace(
        facts, n_layer_dense_lead=0, n_expert_shared=0, n_ff_shexp=facts.n_ff_exp * shared,
        expert_weights_norm=c.get("route_norm", True) is True,
        expert_weights_scale=float(scale) if isinstance(scale, (int, float)) and not isinstance(scale, bool) else 1.0,
        dense_layers=frozenset(range(min(max(lead, 0), n))) if facts.n_expert else frozenset(),
    )  # fmt: skip


def _mimo2(facts: GraphFacts, c: Mapping[str, object]) -> GraphFacts:
    """MiMoV2Model's keys (conversion/mimo.py): the experts' count, use and width only — no dense lead, shared
    experts, weight norm or scale — and attention_value_scale; the layers the checkpoint builds without experts
    (moe_layer_freq's zeros, else the first first_k_dense_replace) are stored without a router, which is how
    llama.cpp's graph tells them."""
    n = c.get("num_hidden_layers", 0)
    n = n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1 << 16 else 0
    freq, lead = c.get("moe_layer_freq"), c.get("first_k_dense_replace", 0)
    if isinstance(freq, list):
        dense = frozenset(i for i, f in enumerate(freq[:n]) if f in (0, False))
    else:
        k = lead if isinstance(lead, int) and not isinstance(lead, bool) else 0
        dense = frozenset(range(min(max(k, 0), n)))
    scale = c.get("attention_value_scale")
    return dataclasses.replace(
        facts, n_layer_dense_lead=0, n_expert_shared=0, expert_weights_norm=False, expert_weights_scale=0.0,
        dense_layers=dense if facts.n_expert else frozenset(),
        attn_value_scale=isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale not in (0, 1),
    )  # fmt: skip


def _cohere2_moe(facts: GraphFacts, c: Mapping[str, object]) -> GraphFacts:
    """Cohere2MoeModel's keys (conversion/command_r.py): the experts as wide as intermediate_size, the dense lead
    from first_k_dense_replace or mlp_layer_types, the weight norm from norm_topk_prob and no weight scale, the
    shared experts num_shared_experts times intermediate_size wide."""
    ff = facts.n_ff
    lead = c.get("first_k_dense_replace", 0)
    types = c.get("mlp_layer_types")
    if isinstance(types, list):
        lead = next((i for i, t in enumerate(types) if t != "dense"), len(types))
    shared = c.get("num_shared_experts", 0)
    shared = shared if isinstance(shared, int) and not isinstance(shared, bool) and shared > 0 else 0
    return dataclasses.replace(
        facts,
        n_ff_exp=ff,
        n_layer_dense_lead=lead if isinstance(lead, int) and not isinstance(lead, bool) else 0,
        expert_weights_norm=c.get("norm_topk_prob") is True,
        expert_weights_scale=0.0,
        n_expert_shared=shared,
        n_ff_shexp=ff * shared,
    )


def _dense_lead(c: Mapping[str, object], archs: list[str], deepseek_like: bool) -> int:
    """leading_dense_block_count as the converters write it: first_k_dense_replace (the DeepSeek-style MoE
    configs); DeepseekV2Model and its subclasses write every layer without n_routed_experts (conversion/deepseek.py:
    "if no MoE, all layers are dense")."""
    lead = c.get("first_k_dense_replace")
    if isinstance(lead, int) and not isinstance(lead, bool):
        return lead if deepseek_like or _deepseek_v2_converted(archs) else 0
    n = c.get("num_hidden_layers")
    if "n_routed_experts" not in c and _deepseek_v2_converted(archs) and isinstance(n, int):
        return n
    return 0


def _deepseek_v2_converted(archs: list[str]) -> bool:
    from kvplan.facts.hf_archs import HF_ARCHS

    return any(
        (e := HF_ARCHS.get(a)) is not None and "DeepseekV2Model" in (e.get("converter"), *e.get("bases", ()))
        for a in archs
    )


def _hunyuan_moe(facts: GraphFacts, c: Mapping[str, object]) -> GraphFacts:
    """HunYuanMoEModel's keys (conversion/hunyuan.py): per-layer lists read as their first value, the shared
    expert as wide as intermediate_size."""

    def first(key: str) -> int:
        v = c.get(key)
        v = v[0] if isinstance(v, list) and v else v
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    return dataclasses.replace(
        facts,
        n_ff_exp=first("moe_intermediate_size"),
        n_expert_used=first("moe_topk"),
        n_expert_shared=first("num_shared_expert"),
        n_ff_shexp=first("intermediate_size"),
    )


#: the converters that write a feed-forward width of their own (conversion/*.py): 4 × the embedding for BLOOM,
#: Falcon, GPT-BigCode (StarCoder), Phi-1/2, MPT and CodeShell; Refact's SwiGLU rounding
_FOUR_TIMES = {"bloom": ("n_embed", "hidden_size"), "falcon": ("hidden_size",), "RefinedWeb": ("hidden_size",),
               "RefinedWebModel": ("hidden_size",), "gpt_bigcode": ("n_embd",), "phi": ("hidden_size", "n_embd"),
               "mpt": ("d_model",), "codeshell": ("n_embd",)}  # fmt: skip
_FOUR_TIMES_ARCHS = {"RWForCausalLM": "falcon", "FalconForCausalLM": "falcon", "CodeShellForCausalLM": "codeshell",
                     "MPTForCausalLM": "mpt", "BloomForCausalLM": "bloom", "BloomModel": "bloom",
                     "GPTBigCodeForCausalLM": "gpt_bigcode", "PhiForCausalLM": "phi"}  # fmt: skip


def _converter_widths(c: Mapping[str, object], cfg: Mapping[str, object]) -> tuple[int, int, int] | None:
    """(feed-forward width, experts, experts used) where the architecture's converter does not take
    intermediate_size / num_local_experts (bloom.py, falcon.py, starcoder.py, phi.py, mpt.py, codeshell.py:
    4 × the embedding; refact.py: 256-rounded 8/3 × it; dbrx.py: ffn_config), else None."""
    named = cfg.get("architectures")
    archs = [str(a) for a in named] if isinstance(named, list) else []
    model_type = str(c.get("model_type") or cfg.get("model_type") or "")
    if "GPTRefactForCausalLM" in archs:
        n = c.get("n_embd")
        if isinstance(n, int) and not isinstance(n, bool):
            return 256 * ((int(2 * (4 * n) / 3) + 255) // 256), 0, 0
        return None
    if model_type == "openelm" or "OpenELMForCausalLM" in archs:  # openelm.py: layer 0's _make_divisible width
        mults, divisor, n = c.get("ffn_multipliers"), c.get("ffn_dim_divisor"), c.get("model_dim")
        first = mults[0] if isinstance(mults, list) and mults else None
        if (
            isinstance(first, (int, float))
            and not isinstance(first, bool)
            and 0 < first < 1e6
            and (isinstance(divisor, int) and divisor > 0 and isinstance(n, int))
        ):
            from kvplan.sources.hf_conversion import openelm_ffn

            return openelm_ffn(float(first), n, divisor), 0, 0
        return None
    if model_type == "llada" or "LLaDAModelLM" in archs:  # llada.py: mlp_hidden_size, 12288 where not given
        mlp = c.get("mlp_hidden_size", 12288)
        return (mlp, 0, 0) if isinstance(mlp, int) and not isinstance(mlp, bool) else None
    if model_type == "dbrx":
        ffn = c.get("ffn_config")
        if not isinstance(ffn, Mapping):
            return None
        vals = ffn.get("ffn_hidden_size"), ffn.get("moe_num_experts"), ffn.get("moe_top_k")
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            return vals  # type: ignore[return-value]
        return None
    keys = _FOUR_TIMES.get(model_type) or _FOUR_TIMES.get(next((_FOUR_TIMES_ARCHS[a] for a in archs
                                                                 if a in _FOUR_TIMES_ARCHS), ""))  # fmt: skip
    for k in keys or ():
        v = c.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return 4 * v, 0, 0
    return None


def _deepstack(cfg: Mapping[str, object]) -> int:
    """Qwen3-VL's converter: n_deepstack_layers = len(vision_config.deepstack_visual_indexes)."""
    vision = cfg.get("vision_config")
    idx = vision.get("deepstack_visual_indexes") if isinstance(vision, Mapping) else None
    return len(idx) if isinstance(idx, list) else 0
