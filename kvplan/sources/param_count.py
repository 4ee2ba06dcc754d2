"""A checkpoint's parameters counted from its architecture: every tensor the model class declares, by shape.

The count follows each family's transformers model class (``modeling_<family>.py``: which projections, which
biases, which norms, tied or separate output) so that the sum is the checkpoint's own parameter count — the
figure its safetensors hold, embedding and output included. Proven against published counts and safetensors
sizes (tests/sources/test_param_count.py). Linear weights are kept apart (``Linear``): a quantized checkpoint
stores them in its own format, everything else stays in the checkpoint's dtype.

Families counted: Llama, Mistral, Qwen2 / Qwen2.5, Qwen3, Qwen3-MoE, Mixtral, OLMo-2, Phi-3, Gemma 2, Gemma 3
(text, and the SigLIP vision tower of the multimodal checkpoints), gpt-oss, DeepSeek-V2 / V3 / V3.2 (MLA, MoE, the
V3.2 indexer and the checkpoint's MTP layers), GLM-4.5 (DeepSeek's MoE layout under GQA attention with biases),
Qwen3-Next (gated delta-net and gated attention, its MTP block).
Other families answer None (the caller says the count is not known).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.model import Linear, ParamCount

#: the largest value a count key may take (layers, experts: a loop runs over them) — others up to 2^40
_SMALL = {"num_hidden_layers": 1 << 16, "num_nextn_predict_layers": 1 << 10, "first_k_dense_replace": 1 << 16,
          "decoder_sparse_step": 1 << 16}  # fmt: skip


class _Cfg:
    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.cfg = cfg

    def int(self, key: str, default: int | None = None) -> int:
        v = self.cfg.get(key)
        if v is None:
            if default is None:
                raise KeyError(key)
            return default
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < _SMALL.get(key, 1 << 40):
            raise KeyError(key)
        return v

    def flag(self, key: str, default: bool) -> bool:
        v = self.cfg.get(key)
        return v if isinstance(v, bool) else default


class _Counter:
    def __init__(self) -> None:
        self.linears: list[Linear] = []
        self.other = 0

    def linear(
        self, name: str, out_f: int, in_f: int, count: int, *, expert: bool = False, quantized: bool = True
    ) -> None:
        """``count`` weights of module ``name`` (a path as the checkpoint names it, ``*`` for the layer index)."""
        if out_f and in_f and count:
            self.linears.append(Linear(name, out_f, in_f, count, expert, quantized))

    def add(self, n: int) -> None:
        self.other += n

    def result(self, embed: int, output: int, basis: str) -> ParamCount:
        total = embed + self.other + sum(x.params for x in self.linears)
        return ParamCount(total, embed, output, tuple(self.linears), basis)


#: families whose attention is q/k/v/o with optional biases and optional per-head q/k norms
_DENSE = {
    "llama": "LlamaForCausalLM",
    "mistral": "MistralForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "mixtral": "MixtralForCausalLM",
    "olmo2": "Olmo2ForCausalLM",
    "phi3": "Phi3ForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
}
#: the HF architecture → the model_type its class counts as (a config that names no model_type)
ARCH_MODEL_TYPES = {
    **{arch: family for family, arch in _DENSE.items()},
    "Gemma3ForConditionalGeneration": "gemma3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Glm4MoeForCausalLM": "glm4_moe",
}
_TIED_DEFAULT = {"gemma2": True, "gemma3_text": True}
#: a decoder layer's module path, as the checkpoint names its tensors
L = "model.layers.*"


def count_params(config: Mapping[str, Any]) -> ParamCount | None:
    """The parameters of the checkpoint ``config`` (a config.json) describes, or None for a family not counted
    here or a config without the shapes (vocabulary, feed-forward width)."""
    model_type = config.get("model_type")
    try:
        if model_type == "gemma3" and isinstance(config.get("text_config"), Mapping):
            text = dict(config["text_config"])
            text.setdefault("model_type", "gemma3_text")
            counted = _decoder(_Cfg(text), "gemma3_text")
            vision = config.get("vision_config")
            if counted is None or not isinstance(vision, Mapping):
                return counted
            return _with_siglip(counted, _Cfg(vision), _Cfg(text).int("hidden_size"))
        if model_type in ("deepseek_v2", "deepseek_v3", "deepseek_v32"):
            return _deepseek(_Cfg(config), model_type)
        if model_type == "qwen3_next":
            return _qwen3_next(_Cfg(config))
        if model_type == "glm4_moe":
            return _glm4_moe(_Cfg(config))
        if isinstance(model_type, str) and model_type in _DENSE:
            return _decoder(_Cfg(config), model_type)
    except KeyError:
        return None
    return None


def _decoder(c: _Cfg, family: str) -> ParamCount | None:
    d, n_layer, vocab = c.int("hidden_size"), c.int("num_hidden_layers"), c.int("vocab_size")
    n_head = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", n_head)
    head = c.int("head_dim", 0) or d // n_head
    q, kv = n_head * head, n_kv * head
    k = _Counter()
    # attention (Phi-3 fuses q/k/v into qkv_proj: the same parameters)
    k.linear(f"{L}.self_attn.q_proj", q, d, n_layer)
    k.linear(f"{L}.self_attn.k_proj", kv, d, n_layer)
    k.linear(f"{L}.self_attn.v_proj", kv, d, n_layer)
    k.linear(f"{L}.self_attn.o_proj", d, q, n_layer)
    if family == "qwen2" or (family in ("llama", "mistral", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "olmo2")
                             and c.flag("attention_bias", False)):  # fmt: skip
        k.add((q + 2 * kv) * n_layer)  # q/k/v biases (Qwen2Attention always has them)
    if family == "gpt_oss":
        k.add((q + 2 * kv + d) * n_layer + n_head * n_layer)  # q/k/v/o biases and the attention sinks
    if family in ("qwen3", "qwen3_moe", "gemma3_text"):
        k.add(2 * head * n_layer)  # q_norm, k_norm over a head
    if family == "olmo2":
        k.add((q + kv) * n_layer)  # q_norm, k_norm over all heads
    # the layer norms: input + post-attention; Gemma 2 / 3 also pre- and post-feed-forward
    k.add((4 if family in ("gemma2", "gemma3_text") else 2) * d * n_layer)
    # feed-forward
    if family in ("mixtral", "gpt_oss", "qwen3_moe"):
        n_exp = c.int("num_local_experts" if family != "qwen3_moe" else "num_experts")
        ff = c.int("moe_intermediate_size") if family == "qwen3_moe" else c.int("intermediate_size")
        sparse = n_layer
        if family == "qwen3_moe":
            step = c.int("decoder_sparse_step", 1)
            listed = c.cfg.get("mlp_only_layers")
            only = {i for i in listed[: 1 << 16] if isinstance(i, int)} if isinstance(listed, list) else set()
            sparse = sum(1 for i in range(n_layer) if i not in only and step > 0 and (i + 1) % step == 0)
            k.linear(f"{L}.mlp.gate_proj", c.int("intermediate_size"), d, n_layer - sparse)
            k.linear(f"{L}.mlp.up_proj", c.int("intermediate_size"), d, n_layer - sparse)
            k.linear(f"{L}.mlp.down_proj", d, c.int("intermediate_size"), n_layer - sparse)
        moe = f"{L}.block_sparse_moe" if family == "mixtral" else f"{L}.mlp"
        k.linear(f"{moe}.experts.gate_proj", ff, d, n_exp * sparse, expert=True)
        k.linear(f"{moe}.experts.up_proj", ff, d, n_exp * sparse, expert=True)
        k.linear(f"{moe}.experts.down_proj", d, ff, n_exp * sparse, expert=True)
        # the router: left unquantized by every quantizer this tool reads
        k.linear(f"{moe}.router" if family == "gpt_oss" else f"{moe}.gate", n_exp, d, sparse, quantized=False)
        if family == "gpt_oss":
            k.add((n_exp + n_exp * (2 * ff + d)) * sparse)  # router bias; expert gate_up / down biases
    else:
        ff = c.int("intermediate_size")
        k.linear(f"{L}.mlp.gate_proj", ff, d, n_layer)
        k.linear(f"{L}.mlp.up_proj", ff, d, n_layer)
        k.linear(f"{L}.mlp.down_proj", d, ff, n_layer)
    k.add(d)  # the final norm
    tied = c.flag("tie_word_embeddings", _TIED_DEFAULT.get(family, False))
    if not tied:
        k.linear("lm_head", vocab, d, 1, quantized=False)
    basis = f"{_DENSE[family]}'s tensors: {n_layer} layers, vocabulary {vocab:,}, " + (
        "tied embeddings" if tied else "separate output head"
    )
    return k.result(vocab * d, 0 if tied else vocab * d, basis)


def _with_siglip(text: ParamCount, v: _Cfg, d_text: int) -> ParamCount:
    """Gemma 3's SigLIP vision tower (SiglipVisionModel without its head) and multimodal projector."""
    d, ff, n_layer = v.int("hidden_size"), v.int("intermediate_size"), v.int("num_hidden_layers")
    patch, image, channels = v.int("patch_size"), v.int("image_size"), v.int("num_channels", 3)
    k = _Counter()
    k.add(channels * patch * patch * d + d)  # patch embedding (a convolution with bias)
    k.add((image // patch) ** 2 * d)  # position embedding
    k.linear("vision_tower.*.self_attn", d, d, 4 * n_layer, quantized=False)  # q, k, v, out
    k.linear("vision_tower.*.mlp.fc1", ff, d, n_layer, quantized=False)
    k.linear("vision_tower.*.mlp.fc2", d, ff, n_layer, quantized=False)
    k.add((4 * d + ff + d + 4 * d) * n_layer)  # q/k/v/out biases, fc1/fc2 biases, two layer norms (weight, bias)
    k.add(2 * d)  # post layer norm
    k.add(d * d_text + d)  # mm_input_projection_weight, mm_soft_emb_norm
    vision = k.result(0, 0, "")
    return ParamCount(
        text.total + vision.total,
        text.embed,
        text.output,
        text.linears,  # the vision tower stays unquantized in every format this tool reads
        text.basis + f"; with the {n_layer}-layer SigLIP vision tower ({vision.total:,})",
    )


def _moe_mlps(
    k: _Counter, d: int, ff: int, n_dense: int, moe_ff: int, n_exp: int, shared_ff: int, n_moe: int, shared: str
) -> None:
    """The gated MLPs of a mixed dense / MoE stack: `n_dense` dense MLPs of width `ff`, then on each of `n_moe`
    layers `n_exp` experts of width `moe_ff` and one shared MLP of width `shared_ff` under `mlp.{shared}`."""
    for name, out_f, in_f in (("gate_proj", ff, d), ("up_proj", ff, d), ("down_proj", d, ff)):
        k.linear(f"{L}.mlp.{name}", out_f, in_f, n_dense)
    for name, out_f, in_f, s_out, s_in in (
        ("gate_proj", moe_ff, d, shared_ff, d),
        ("up_proj", moe_ff, d, shared_ff, d),
        ("down_proj", d, moe_ff, d, shared_ff),
    ):
        k.linear(f"{L}.mlp.experts.{name}", out_f, in_f, n_exp * n_moe, expert=True)
        k.linear(f"{L}.mlp.{shared}.{name}", s_out, s_in, n_moe)


def _moe_and_mtp(k: _Counter, c: _Cfg, d: int, vocab: int, n_trunk: int, n_mtp: int, score_bias: bool) -> None:
    """The DeepSeek-style feed-forward (DeepSeek-V2/V3, GLM-4.5): first_k_dense_replace dense layers, then routed
    experts plus n_shared_experts (one MLP n_shared × the expert width) and the router (with its
    e_score_correction_bias under noaux_tc routing); the final norm and the head; and each MTP layer's extras: its
    embedding and head copies, enorm, hnorm, eh_proj and shared_head.norm (its decoder layer is counted with the
    others, as an MoE layer)."""
    n_layer = n_trunk + n_mtp
    n_dense = min(c.int("first_k_dense_replace", 0), n_trunk)
    ff, moe_ff = c.int("intermediate_size"), c.int("moe_intermediate_size")
    n_exp, n_shared = c.int("n_routed_experts"), c.int("n_shared_experts", 0)
    n_moe = n_layer - n_dense  # the MTP layers are MoE layers
    # the shared experts are one MLP of n_shared × the expert width
    _moe_mlps(k, d, ff, n_dense, moe_ff, n_exp, moe_ff * n_shared, n_moe, "shared_experts")
    k.add(n_exp * d * n_moe)  # the router (MoEGate.weight, kept in the checkpoint's dtype)
    if score_bias:
        k.add(n_exp * n_moe)  # e_score_correction_bias
    k.add(d)  # the final norm
    k.linear("lm_head", vocab, d, 1, quantized=False)
    if n_mtp:  # each MTP layer: its embedding and head copies, enorm, hnorm, eh_proj, shared_head.norm
        k.add(n_mtp * (2 * vocab * d + 3 * d))
        k.linear(f"{L}.eh_proj", d, 2 * d, n_mtp, quantized=False)


def _glm4_moe(c: _Cfg) -> ParamCount:
    """Glm4MoeForCausalLM (modeling_glm4_moe.py): GQA attention with q/k/v biases (attention_bias), per-head q/k
    norms where use_qk_norm, then DeepSeek's MoE layout (dense lead layers, routed experts with the router's
    e_score_correction_bias, one shared expert) and its MTP layers. GLM-4.5's and GLM-4.5-Air's checkpoints carry
    the MTP layer's embedding and head copies (their GGUFs: 1,761 and 803 tensors)."""
    d, vocab = c.int("hidden_size"), c.int("vocab_size")
    n_trunk = c.int("num_hidden_layers")
    n_mtp = c.int("num_nextn_predict_layers", 0)
    n_layer = n_trunk + n_mtp
    n_head = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", n_head)
    hd = c.int("head_dim", 0) or d // n_head
    k = _Counter()
    k.linear(f"{L}.self_attn.q_proj", n_head * hd, d, n_layer)
    k.linear(f"{L}.self_attn.k_proj", n_kv * hd, d, n_layer)
    k.linear(f"{L}.self_attn.v_proj", n_kv * hd, d, n_layer)
    k.linear(f"{L}.self_attn.o_proj", d, n_head * hd, n_layer)
    if c.flag("attention_bias", False):
        k.add((n_head + 2 * n_kv) * hd * n_layer)
    if c.flag("use_qk_norm", False):
        k.add(2 * hd * n_layer)
    k.add(2 * d * n_layer)  # input, post-attention norms
    _moe_and_mtp(k, c, d, vocab, n_trunk, n_mtp, True)
    basis = (
        f"Glm4MoeForCausalLM's tensors: {n_trunk} layers"
        + (f" + {n_mtp} MTP layer{'s' if n_mtp > 1 else ''}" if n_mtp else "")
        + f", vocabulary {vocab:,}"
    )
    return k.result(vocab * d, vocab * d, basis)


_DEEPSEEK = {"deepseek_v2": "DeepseekV2", "deepseek_v3": "DeepseekV3", "deepseek_v32": "DeepseekV32"}


def _deepseek(c: _Cfg, family: str) -> ParamCount:
    """DeepseekV2/V3ForCausalLM: MLA attention, dense then MoE feed-forward, and the checkpoint's nextn (MTP)
    layers (DeepSeek-V3 ships one: a whole decoder layer plus its embedding, norms, projection and head)."""
    d, vocab = c.int("hidden_size"), c.int("vocab_size")
    n_trunk = c.int("num_hidden_layers")
    n_mtp = c.int("num_nextn_predict_layers", 0)
    n_layer = n_trunk + n_mtp
    n_head = c.int("num_attention_heads")
    nope, rope, v_head = c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim"), c.int("v_head_dim")
    q_lora, kv_lora = c.int("q_lora_rank", 0), c.int("kv_lora_rank")
    k = _Counter()
    if q_lora:
        k.linear(f"{L}.self_attn.q_a_proj", q_lora, d, n_layer)
        k.add(q_lora * n_layer)  # q_a_layernorm
        k.linear(f"{L}.self_attn.q_b_proj", n_head * (nope + rope), q_lora, n_layer)
    else:
        k.linear(f"{L}.self_attn.q_proj", n_head * (nope + rope), d, n_layer)
    k.linear(f"{L}.self_attn.kv_a_proj_with_mqa", kv_lora + rope, d, n_layer)
    k.add(kv_lora * n_layer)  # kv_a_layernorm
    k.linear(f"{L}.self_attn.kv_b_proj", n_head * (nope + v_head), kv_lora, n_layer)
    k.linear(f"{L}.self_attn.o_proj", d, n_head * v_head, n_layer)
    k.add(2 * d * n_layer)  # input, post-attention norms
    if family == "deepseek_v32":  # the lightning indexer of every layer (DeepSeek-V3.2's model.py Indexer)
        idx_heads, idx_dim = c.int("index_n_heads"), c.int("index_head_dim")
        k.linear(f"{L}.self_attn.indexer.wq_b", idx_heads * idx_dim, q_lora or d, n_layer)
        k.linear(f"{L}.self_attn.indexer.wk", idx_dim, d, n_layer)
        k.linear(f"{L}.self_attn.indexer.weights_proj", idx_heads, d, n_layer, quantized=False)  # kept in bf16
        k.add(2 * idx_dim * n_layer)  # k_norm: a LayerNorm (weight and bias)
    _moe_and_mtp(k, c, d, vocab, n_trunk, n_mtp, family in ("deepseek_v3", "deepseek_v32")
                 or c.cfg.get("topk_method") == "noaux_tc")  # fmt: skip
    basis = (
        f"{_DEEPSEEK[family]}ForCausalLM's tensors: {n_trunk} layers"
        + (f" + {n_mtp} MTP layer{'s' if n_mtp > 1 else ''}" if n_mtp else "")
        + f", vocabulary {vocab:,}"
    )
    return k.result(vocab * d, vocab * d, basis)


def _qwen3_next(c: _Cfg) -> ParamCount:
    """Qwen3NextForCausalLM (modeling_qwen3_next.py) and the checkpoint's ``mtp.*`` block: gated delta-net layers
    (in_proj_qkvz, in_proj_ba, a depthwise conv1d, dt_bias, A_log, a gated norm over a value head, out_proj) and
    every full_attention_interval-th layer gated attention (q_proj twice as wide: the query and its gate; per-head
    q/k norms); each layer's sparse MoE with a shared expert and its one-output sigmoid gate. The MTP block (as
    llama.cpp's converter reads the checkpoint, _QwenMtpMixin: mtp.fc, mtp.pre_fc_norm_embedding / _hidden,
    mtp.norm and mtp.layers.N, a full-attention layer with the MoE; it shares the embedding and the head) counts
    mtp_num_hidden_layers, 1 where the config leaves it out as Qwen3-Next's does."""
    d, vocab = c.int("hidden_size"), c.int("vocab_size")
    n_trunk = c.int("num_hidden_layers")
    n_mtp = c.int("mtp_num_hidden_layers", 1)
    n_head = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", n_head)
    hd = c.int("head_dim", 0) or d // n_head
    interval = c.int("full_attention_interval", 4)
    listed = c.cfg.get("layer_types")
    if isinstance(listed, list) and len(listed) == n_trunk:
        n_full = sum(1 for t in listed if t == "full_attention")
    else:
        n_full = sum(1 for i in range(n_trunk) if interval and (i + 1) % interval == 0)
    n_linear = n_trunk - n_full
    n_attn = n_full + n_mtp  # the MTP layers attend in full
    n_layer = n_trunk + n_mtp
    nk, nv = c.int("linear_num_key_heads"), c.int("linear_num_value_heads")
    kd, vd = nk * c.int("linear_key_head_dim"), nv * c.int("linear_value_head_dim")
    k = _Counter()
    k.linear(f"{L}.linear_attn.in_proj_qkvz", 2 * kd + 2 * vd, d, n_linear)
    k.linear(f"{L}.linear_attn.in_proj_ba", 2 * nv, d, n_linear)
    k.linear(f"{L}.linear_attn.out_proj", d, vd, n_linear)
    conv = 2 * kd + vd
    k.add((conv * c.int("linear_conv_kernel_dim") + 2 * nv + c.int("linear_value_head_dim")) * n_linear)
    k.linear(f"{L}.self_attn.q_proj", 2 * n_head * hd, d, n_attn)
    k.linear(f"{L}.self_attn.k_proj", n_kv * hd, d, n_attn)
    k.linear(f"{L}.self_attn.v_proj", n_kv * hd, d, n_attn)
    k.linear(f"{L}.self_attn.o_proj", d, n_head * hd, n_attn)
    if c.flag("attention_bias", False):
        k.add((2 * n_head * hd + 2 * n_kv * hd) * n_attn)
    k.add(2 * hd * n_attn)  # q_norm, k_norm
    k.add(2 * d * n_layer)  # input, post-attention norms
    step = c.int("decoder_sparse_step", 1)
    only_listed = c.cfg.get("mlp_only_layers")
    only = {i for i in only_listed[: 1 << 16] if isinstance(i, int)} if isinstance(only_listed, list) else set()
    n_sparse = sum(1 for i in range(n_trunk) if i not in only and step > 0 and (i + 1) % step == 0) + n_mtp
    n_dense = n_layer - n_sparse
    ff, moe_ff, sh_ff = (
        c.int("intermediate_size"),
        c.int("moe_intermediate_size"),
        c.int("shared_expert_intermediate_size"),
    )
    n_exp = c.int("num_experts")
    _moe_mlps(k, d, ff, n_dense, moe_ff, n_exp, sh_ff, n_sparse, "shared_expert")
    k.linear(f"{L}.mlp.gate", n_exp, d, n_sparse, quantized=False)
    k.linear(f"{L}.mlp.shared_expert_gate", 1, d, n_sparse, quantized=False)
    k.add(d)  # the final norm
    tied = c.flag("tie_word_embeddings", False)
    if not tied:
        k.linear("lm_head", vocab, d, 1, quantized=False)
    if n_mtp:
        k.linear("mtp.fc", d, 2 * d, n_mtp, quantized=False)
        k.add(3 * d * n_mtp)  # pre_fc_norm_embedding, pre_fc_norm_hidden, norm
    basis = (
        f"Qwen3NextForCausalLM's tensors: {n_trunk} layers ({n_linear} gated delta-net, {n_full} gated attention)"
        + (f" + {n_mtp} MTP layer{'s' if n_mtp > 1 else ''}" if n_mtp else "")
        + f", vocabulary {vocab:,}"
    )
    return k.result(vocab * d, 0 if tied else vocab * d, basis)
