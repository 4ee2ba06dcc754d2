"""A checkpoint's parameters counted from its architecture: every tensor the model class declares, by shape.

The count follows each family's transformers model class (``modeling_<family>.py``: which projections, which
biases, which norms, tied or separate output) so that the sum is the checkpoint's own parameter count — the
figure its safetensors hold, embedding and output included. Proven against published counts and safetensors
sizes (tests/sources/test_param_count.py). Linear weights are kept apart (``Linear``): a quantized checkpoint
stores them in its own format, everything else stays in the checkpoint's dtype.

Families counted: Llama, Mistral, Qwen2 / Qwen2.5, Qwen3, Qwen3-MoE, Mixtral, OLMo-2, Phi-3, Gemma 2, Gemma 3
(text, and the SigLIP vision tower of the multimodal checkpoints), gpt-oss, DeepSeek-V2 / V3 / V3.2 (MLA, MoE, the
V3.2 indexer and the checkpoint's MTP layers), GLM-4.5 (DeepSeek's MoE layout under GQA attention with biases),
Qwen3-Next (gated delta-net and gated attention, its MTP block), MiniMax-M1 / MiniMax-Text-01 (lightning and
softmax attention over a Mixtral-style MoE).
Other families answer None (the caller says the count is not known).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    "MiniMaxM1ForCausalLM": "minimax_m1",
    "MiniMaxText01ForCausalLM": "minimax_text_01",
    "CohereForCausalLM": "cohere",
    "MambaForCausalLM": "mamba",
    "FalconMambaForCausalLM": "falcon_mamba",
    "Mamba2ForCausalLM": "mamba2",
    "FalconH1ForCausalLM": "falcon_h1",
    "GraniteMoeHybridForCausalLM": "granitemoehybrid",
    "JambaForCausalLM": "jamba",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4_text",
    "Mistral3ForConditionalGeneration": "mistral3",
}
_TIED_DEFAULT = {"gemma2": True, "gemma3_text": True}
#: a decoder layer's module path, as the checkpoint names its tensors
L = "model.layers.*"
#: a key no config.json has: the catalog states it for a checkpoint whose MTP layer ships without its own copies
#: of the embedding and the head (GLM-4.6: its GGUF has 1,759 tensors to GLM-4.5's 1,761)
MTP_SHARES_EMBEDDING = "kvplan_mtp_shares_embedding"


def count_params(config: Mapping[str, Any]) -> ParamCount | None:
    """The parameters of the checkpoint ``config`` (a config.json) describes, or None for a family not counted
    here or a config without the shapes (vocabulary, feed-forward width)."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        return None
    if model_type in _DENSE:
        count: Callable[[Mapping[str, Any]], ParamCount | None] = lambda cfg: _decoder(_Cfg(cfg), model_type)  # noqa: E731
    elif model_type in _COUNTERS:
        count = _COUNTERS[model_type]
    else:
        return None
    try:
        return count(config)
    except KeyError:
        return None


def _gemma3(config: Mapping[str, Any]) -> ParamCount | None:
    """Gemma3ForConditionalGeneration: the text decoder and, where the config has one, the SigLIP tower."""
    if not isinstance(config.get("text_config"), Mapping):
        return None
    text = dict(config["text_config"])
    text.setdefault("model_type", "gemma3_text")
    counted = _decoder(_Cfg(text), "gemma3_text")
    vision = config.get("vision_config")
    if counted is None or not isinstance(vision, Mapping):
        return counted
    return _with_siglip(counted, _Cfg(vision), _Cfg(text).int("hidden_size"))


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
        copies = 0 if c.flag(MTP_SHARES_EMBEDDING, False) else 2 * vocab * d
        k.add(n_mtp * (copies + 3 * d))
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
        + (" (sharing the embedding and head)" if n_mtp and c.flag(MTP_SHARES_EMBEDDING, False) else "")
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


_MINIMAX = {"minimax_m1": "MiniMaxM1ForCausalLM", "minimax_text_01": "MiniMaxText01ForCausalLM"}


def _minimax_m1(c: _Cfg, family: str) -> ParamCount:
    """MiniMaxM1ForCausalLM (the checkpoint's modeling_minimax_m1.py; MiniMax-Text-01's is the same): each layer
    either lightning attention (``attn_type_list`` 0: qkv_proj, output_gate, out_proj and an RMS norm over all
    heads) or softmax GQA attention (1: q/k/v/o without biases), then a Mixtral-style block_sparse_moe (w1, w3,
    w2 per expert; the gate, a router without bias); two norms a layer, the final norm, a separate head."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    n_head = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", n_head)
    hd = c.int("head_dim", 0) or d // n_head
    types = c.cfg.get("attn_type_list")
    if not isinstance(types, list) or len(types) != n_layer or any(t not in (0, 1) for t in types):
        raise KeyError("attn_type_list")
    if c.int("shared_intermediate_size", 0):
        raise KeyError("shared_intermediate_size")  # a shared expert: not in the checkpoints counted here
    n_soft = sum(1 for t in types if t == 1)
    n_lin = n_layer - n_soft
    q = n_head * hd
    k = _Counter()
    k.linear(f"{L}.self_attn.qkv_proj", 3 * q, d, n_lin)
    k.linear(f"{L}.self_attn.output_gate", q, d, n_lin)
    k.linear(f"{L}.self_attn.out_proj", d, q, n_lin)
    k.add(q * n_lin)  # the lightning attention's norm over all heads
    k.linear(f"{L}.self_attn.q_proj", q, d, n_soft)
    k.linear(f"{L}.self_attn.k_proj", n_kv * hd, d, n_soft)
    k.linear(f"{L}.self_attn.v_proj", n_kv * hd, d, n_soft)
    k.linear(f"{L}.self_attn.o_proj", d, q, n_soft)
    k.add(2 * d * n_layer)  # input, post-attention norms
    _minimax_experts(k, c, d, n_layer)
    k.add(d)  # the final norm
    tied = c.flag("tie_word_embeddings", False)
    if not tied:
        k.linear("lm_head", vocab, d, 1, quantized=False)
    basis = (
        f"{_MINIMAX[family]}'s tensors: {n_layer} layers ({n_lin} lightning, {n_soft} softmax attention), "
        f"vocabulary {vocab:,}, " + ("tied embeddings" if tied else "separate output head")
    )
    return k.result(vocab * d, 0 if tied else vocab * d, basis)


def _norms(k: _Counter, d: int, n: int) -> None:
    k.add(d * n)


def _attention(k: _Counter, c: _Cfg, d: int, n: int, prefix: str = L, *, bias: bool = False) -> tuple[int, int]:
    """q/k/v/o of GQA attention on ``n`` layers (biases on all four where ``bias``): (query width, KV width)."""
    n_head = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", n_head)
    hd = c.int("head_dim", 0) or d // n_head
    q, kv = n_head * hd, n_kv * hd
    k.linear(f"{prefix}.self_attn.q_proj", q, d, n)
    k.linear(f"{prefix}.self_attn.k_proj", kv, d, n)
    k.linear(f"{prefix}.self_attn.v_proj", kv, d, n)
    k.linear(f"{prefix}.self_attn.o_proj", d, q, n)
    if bias:
        k.add((q + 2 * kv + d) * n)
    return q, kv


def _gated_mlp(k: _Counter, name: str, d: int, ff: int, n: int, *, bias: bool = False) -> None:
    k.linear(f"{name}.gate_proj", ff, d, n)
    k.linear(f"{name}.up_proj", ff, d, n)
    k.linear(f"{name}.down_proj", d, ff, n)
    if bias:
        k.add((2 * ff + d) * n)


def _head(k: _Counter, c: _Cfg, d: int, vocab: int, tied_default: bool) -> bool:
    """The output head unless tied; True when tied."""
    tied = c.flag("tie_word_embeddings", tied_default)
    if not tied:
        k.linear("lm_head", vocab, d, 1, quantized=False)
    return tied


def _cohere(c: _Cfg) -> ParamCount:
    """CohereForCausalLM (modeling_cohere.py): attention and MLP in parallel behind one LayerNorm without bias,
    q/k LayerNorms per head where use_qk_norm (Command R+), tied embeddings by default."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    k = _Counter()
    _attention(k, c, d, n_layer, bias=c.flag("attention_bias", False))
    if c.flag("use_qk_norm", False):
        n_head = c.int("num_attention_heads")
        hd = c.int("head_dim", 0) or d // n_head
        k.add((n_head + c.int("num_key_value_heads", n_head)) * hd * n_layer)
    _gated_mlp(k, f"{L}.mlp", d, c.int("intermediate_size"), n_layer)
    _norms(k, d, n_layer + 1)  # input_layernorm (the only norm of a layer), the final norm
    return _closed(k, c, d, vocab, True, f"CohereForCausalLM's tensors: {n_layer} layers")


def _dt_rank(c: _Cfg, key: str, d: int) -> int:
    v = c.cfg.get(key, "auto")
    return -(-d // 16) if v == "auto" else c.int(key)


def _mamba1(k: _Counter, c: _Cfg, d: int, n: int, prefix: str, keys: dict[str, str], *, bc_norms: bool) -> None:
    """Mamba (S6) mixers on ``n`` layers (transformers' MambaMixer / JambaMambaMixer): in_proj, a depthwise conv
    with its bias, x_proj, dt_proj with its bias, A_log, D, out_proj; Jamba's dt / B / C RMS norms."""
    d_inner = c.int(keys["inner"], 0) or c.int(keys["expand"], 2) * d
    n_state, conv = c.int(keys["state"], 16), c.int(keys["conv"], 4)
    rank = _dt_rank(c, keys["rank"], d)
    proj_bias = c.flag(keys["bias"], False)
    k.linear(f"{prefix}.in_proj", 2 * d_inner, d, n)
    k.linear(f"{prefix}.x_proj", rank + 2 * n_state, d_inner, n)
    k.linear(f"{prefix}.dt_proj", d_inner, rank, n)
    k.linear(f"{prefix}.out_proj", d, d_inner, n)
    conv_bias = c.flag(keys["conv_bias"], True)
    k.add((d_inner * conv + (d_inner if conv_bias else 0)) * n)
    k.add((d_inner + d_inner * n_state + d_inner) * n)  # dt_proj bias, A_log, D
    if proj_bias:
        k.add((2 * d_inner + d) * n)
    if bc_norms:
        k.add((rank + 2 * n_state) * n)


_MAMBA_KEYS = {"inner": "intermediate_size", "expand": "expand", "state": "state_size", "conv": "conv_kernel",
               "rank": "time_step_rank", "bias": "use_bias", "conv_bias": "use_conv_bias"}  # fmt: skip


def _mamba(c: _Cfg, family: str) -> ParamCount:
    """MambaForCausalLM / FalconMambaForCausalLM (modeling_mamba.py, modeling_falcon_mamba.py): one Mamba mixer
    and one RMS norm a layer, the final norm, the head (tied unless the config says otherwise)."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    k = _Counter()
    _mamba1(k, c, d, n_layer, "backbone.layers.*.mixer", _MAMBA_KEYS, bc_norms=False)
    _norms(k, d, n_layer + 1)
    name = "FalconMambaForCausalLM" if family == "falcon_mamba" else "MambaForCausalLM"
    return _closed(k, c, d, vocab, True, f"{name}'s tensors: {n_layer} layers")


def _expand(c: _Cfg, key: str, d: int, default: int = 2) -> int:
    """``int(expand × hidden_size)``: the Mamba inner width (expand may be a float)."""
    v = c.cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1 << 10:
        raise KeyError(key)
    return int(v * d)


def _mamba2_mixer(
    k: _Counter, c: _Cfg, d: int, n: int, prefix: str, keys: dict[str, str], d_inner: int, *, gated_norm: bool
) -> None:
    """Mamba-2 (SSD) mixers on ``n`` layers: in_proj (z, x, B, C, dt), a depthwise conv over x, B, C with its
    bias, dt_bias, A_log, D per head, the gated RMS norm over the inner width (where the model has it),
    out_proj."""
    heads = c.int(keys["heads"])
    groups, n_state, conv = c.int(keys["groups"], 1), c.int(keys["state"]), c.int(keys["conv"], 4)
    conv_dim = d_inner + 2 * groups * n_state
    k.linear(f"{prefix}.in_proj", d_inner + conv_dim + heads, d, n)
    k.linear(f"{prefix}.out_proj", d, d_inner, n)
    k.add((conv_dim * conv + (conv_dim if c.flag(keys["conv_bias"], True) else 0)) * n)
    k.add(3 * heads * n)  # dt_bias, A_log, D
    if c.flag(keys["bias"], False):
        k.add((d_inner + conv_dim + heads) * n)
    if c.flag(keys["out_bias"], False):
        k.add(d * n)
    if gated_norm:
        k.add(d_inner * n)


_MAMBA2_KEYS = {"heads": "num_heads", "groups": "n_groups", "state": "state_size", "conv": "conv_kernel",
                "conv_bias": "use_conv_bias", "bias": "use_bias", "out_bias": "use_bias"}  # fmt: skip


def _mamba2(c: _Cfg) -> ParamCount:
    """Mamba2ForCausalLM (modeling_mamba2.py; Mamba-Codestral): one Mamba-2 mixer with its gated norm and one RMS
    norm a layer, the final norm, the head. The inner width is ``expand × hidden_size``."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    k = _Counter()
    _mamba2_mixer(k, c, d, n_layer, "backbone.layers.*.mixer", _MAMBA2_KEYS, _expand(c, "expand", d), gated_norm=True)
    _norms(k, d, n_layer + 1)
    return _closed(k, c, d, vocab, False, f"Mamba2ForCausalLM's tensors: {n_layer} layers")


#: Granite 4.0 H's mixer: mamba_proj_bias on in_proj and out_proj; Falcon-H1's: projectors_bias on out_proj
_GRANITE_KEYS = {"heads": "mamba_n_heads", "groups": "mamba_n_groups", "state": "mamba_d_state",
                 "conv": "mamba_d_conv", "conv_bias": "mamba_conv_bias", "bias": "mamba_proj_bias",
                 "out_bias": "mamba_proj_bias"}  # fmt: skip
_FALCON_H1_KEYS = {**_GRANITE_KEYS, "out_bias": "projectors_bias"}


def _falcon_h1(c: _Cfg) -> ParamCount:
    """FalconH1ForCausalLM (modeling_falcon_h1.py): every layer runs a Mamba-2 mixer (its gated norm where
    mamba_rms_norm) and GQA attention in parallel, then the MLP; two norms a layer, the final norm, the head."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    k = _Counter()
    inner = c.int("mamba_d_ssm", 0) or _expand(c, "mamba_expand", d)
    _mamba2_mixer(k, c, d, n_layer, f"{L}.mamba", _FALCON_H1_KEYS, inner, gated_norm=c.flag("mamba_rms_norm", False))
    _attention(k, c, d, n_layer, bias=c.flag("attention_bias", False))
    _gated_mlp(k, f"{L}.feed_forward", d, c.int("intermediate_size"), n_layer, bias=c.flag("mlp_bias", False))
    _norms(k, d, 2 * n_layer + 1)
    what = f"FalconH1ForCausalLM's tensors: {n_layer} layers (Mamba-2 and attention in each)"
    return _closed(k, c, d, vocab, False, what)


def _layer_kinds(c: _Cfg, n_layer: int, key: str) -> list[str]:
    listed = c.cfg.get(key)
    if not isinstance(listed, list) or len(listed) != n_layer or not all(isinstance(t, str) for t in listed):
        raise KeyError(key)
    return listed


def _granitemoehybrid(c: _Cfg) -> ParamCount:
    """GraniteMoeHybridForCausalLM (modeling_granitemoehybrid.py; Granite 4.0 H): ``layer_types`` says which
    layers are Mamba-2 (with the gated norm) and which attention; every layer has the shared MLP (input_linear
    gate+up, output_linear) and, where num_local_experts, routed experts with a router; two norms a layer."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    kinds = _layer_kinds(c, n_layer, "layer_types")
    n_attn = sum(1 for t in kinds if t == "attention")
    n_mamba = sum(1 for t in kinds if t == "mamba")
    if n_attn + n_mamba != n_layer:
        raise KeyError("layer_types")
    k = _Counter()
    _mamba2_mixer(k, c, d, n_mamba, f"{L}.mamba", _GRANITE_KEYS, _expand(c, "mamba_expand", d), gated_norm=True)
    _attention(k, c, d, n_attn, bias=c.flag("attention_bias", False))
    shared = c.int("shared_intermediate_size")
    k.linear(f"{L}.shared_mlp.input_linear", 2 * shared, d, n_layer)
    k.linear(f"{L}.shared_mlp.output_linear", d, shared, n_layer)
    n_exp = c.int("num_local_experts", 0)
    if n_exp:
        ff = c.int("intermediate_size")
        k.linear(f"{L}.block_sparse_moe.experts.gate_up_proj", 2 * ff, d, n_exp * n_layer, expert=True)
        k.linear(f"{L}.block_sparse_moe.experts.down_proj", d, ff, n_exp * n_layer, expert=True)
        k.linear(f"{L}.block_sparse_moe.router", n_exp, d, n_layer, quantized=False)
    _norms(k, d, 2 * n_layer + 1)
    experts = f"; {n_exp} experts" if n_exp else ""
    layers = f"{n_mamba} Mamba-2, {n_attn} attention{experts}"
    what = f"GraniteMoeHybridForCausalLM's tensors: {n_layer} layers ({layers})"
    return _closed(k, c, d, vocab, True, what)


_JAMBA_KEYS = {"inner": "", "expand": "mamba_expand", "state": "mamba_d_state", "conv": "mamba_d_conv",
               "rank": "mamba_dt_rank", "bias": "mamba_proj_bias", "conv_bias": "mamba_conv_bias"}  # fmt: skip


def _jamba(c: _Cfg) -> ParamCount:
    """JambaForCausalLM (modeling_jamba.py): attention where ``i % attn_layer_period == attn_layer_offset``, a
    Mamba mixer (with its dt / B / C norms) elsewhere; routed experts (gate+up, down; a router without bias)
    where ``i % expert_layer_period == expert_layer_offset``, a dense MLP elsewhere; two norms a layer."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    a_period, a_offset = c.int("attn_layer_period", 8), c.int("attn_layer_offset", 4)
    e_period, e_offset = c.int("expert_layer_period", 2), c.int("expert_layer_offset", 1)
    if not a_period or not e_period:
        raise KeyError("attn_layer_period")
    n_attn = sum(1 for i in range(n_layer) if i % a_period == a_offset)
    n_moe = sum(1 for i in range(n_layer) if i % e_period == e_offset)
    n_exp, ff = c.int("num_experts", 16), c.int("intermediate_size")
    k = _Counter()
    _mamba1(k, c, d, n_layer - n_attn, f"{L}.mamba", _JAMBA_KEYS, bc_norms=True)
    _attention(k, c, d, n_attn)
    _gated_mlp(k, f"{L}.feed_forward", d, ff, n_layer - n_moe)
    k.linear(f"{L}.feed_forward.experts.gate_up_proj", 2 * ff, d, n_exp * n_moe, expert=True)
    k.linear(f"{L}.feed_forward.experts.down_proj", d, ff, n_exp * n_moe, expert=True)
    k.linear(f"{L}.feed_forward.router", n_exp, d, n_moe, quantized=False)
    _norms(k, d, 2 * n_layer + 1)
    layers = f"{n_layer - n_attn} Mamba, {n_attn} attention; {n_moe} with {n_exp} experts"
    return _closed(k, c, d, vocab, False, f"JambaForCausalLM's tensors: {n_layer} layers ({layers})")


def _minimax_m2(c: _Cfg) -> ParamCount:
    """MiniMaxM2ForCausalLM (modeling_minimax_m2.py): GQA attention with q / k RMS norms over all heads
    (use_qk_norm), routed experts (w1, w3, w2; a router and its e_score_correction_bias), two norms a layer, the
    final norm, a separate head."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    k = _Counter()
    q, kv = _attention(k, c, d, n_layer)
    if c.flag("use_qk_norm", True):
        k.add((q + kv) * n_layer)
    n_exp = _minimax_experts(k, c, d, n_layer)
    k.add(n_exp * n_layer)  # e_score_correction_bias (transformers' class holds it whatever use_routing_bias says)
    _norms(k, d, 2 * n_layer + 1)
    return _closed(k, c, d, vocab, False, f"MiniMaxM2ForCausalLM's tensors: {n_layer} layers, {n_exp} experts")


def _llama4_text(c: _Cfg) -> tuple[_Counter, int, int, bool, str]:
    """Llama4ForCausalLM's text stack (modeling_llama4.py): GQA attention (its q/k L2 norm has no weights), on the
    layers moe_layers names (every interleave_moe_layer_step-th by default) 128 or 16 routed experts (fused
    gate_up_proj, down_proj), a router and a shared expert, elsewhere a dense MLP of intermediate_size_mlp."""
    d, vocab, n_layer = c.int("hidden_size"), c.int("vocab_size"), c.int("num_hidden_layers")
    listed = c.cfg.get("moe_layers")
    if isinstance(listed, list):
        n_moe = len({i for i in listed[: 1 << 16] if isinstance(i, int) and 0 <= i < n_layer})
    else:
        step = c.int("interleave_moe_layer_step", 1)
        n_moe = len(range(step - 1, n_layer, step)) if step else 0
    k = _Counter()
    _attention(k, c, d, n_layer, bias=c.flag("attention_bias", False))
    n_exp, ff = c.int("num_local_experts"), c.int("intermediate_size")
    ff_mlp = c.int("intermediate_size_mlp")
    _gated_mlp(k, f"{L}.feed_forward", d, ff_mlp, n_layer - n_moe)
    k.linear(f"{L}.feed_forward.experts.gate_up_proj", 2 * ff, d, n_exp * n_moe, expert=True)
    k.linear(f"{L}.feed_forward.experts.down_proj", d, ff, n_exp * n_moe, expert=True)
    k.linear(f"{L}.feed_forward.router", n_exp, d, n_moe, quantized=False)
    _gated_mlp(k, f"{L}.feed_forward.shared_expert", d, ff, n_moe)
    _norms(k, d, 2 * n_layer + 1)
    tied = _head(k, c, d, vocab, False)
    basis = f"{n_layer} layers ({n_moe} with {n_exp} experts), vocabulary {vocab:,}"
    return k, d, vocab, tied, basis


def _llama4(config: Mapping[str, Any]) -> ParamCount:
    """Llama4ForConditionalGeneration: the text stack, the vision encoder (a linear patch embedding, a class
    embedding and positions, LayerNorms with biases before and after, layers of attention and a GELU MLP with
    biases, the pixel-shuffle adapter) and the projector into the text width; or Llama4ForCausalLM (text only)."""
    text_cfg = config.get("text_config")
    if not isinstance(text_cfg, Mapping):
        k, d, vocab, tied, basis = _llama4_text(_Cfg(config))
        return k.result(vocab * d, 0 if tied else vocab * d, f"Llama4ForCausalLM's tensors: {basis}")
    k, d_text, vocab, tied, basis = _llama4_text(_Cfg(text_cfg))
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        raise KeyError("vision_config")
    v = _Cfg(vision)
    d, ff, n = v.int("hidden_size"), v.int("intermediate_size"), v.int("num_hidden_layers")
    patch, image, channels = v.int("patch_size"), v.int("image_size"), v.int("num_channels", 3)
    t = _Counter()
    t.add(channels * patch * patch * d)  # patch_embedding (a linear without bias)
    t.add(d + ((image // patch) ** 2 + 1) * d)  # class embedding, positions
    t.add(4 * d)  # layernorm_pre, layernorm_post (weight and bias)
    t.add(n * (4 * d * d + 4 * d + 2 * ff * d + ff + d + 4 * d))  # attention, MLP, two LayerNorms, with biases
    t.add(v.int("projector_input_dim") * ff + v.int("projector_output_dim") ** 2)  # the adapter's fc1, fc2
    t.add(d_text * v.int("vision_output_dim"))  # multi_modal_projector.linear_1
    vis = t.result(0, 0, "")
    text = k.result(vocab * d_text, 0 if tied else vocab * d_text, "")
    return ParamCount(
        text.total + vis.total,
        text.embed,
        text.output,
        text.linears,  # the vision encoder stays unquantized
        f"Llama4ForConditionalGeneration's tensors: {basis}; with the {n}-layer vision encoder ({vis.total:,})",
    )


def _mistral3(config: Mapping[str, Any]) -> ParamCount:
    """Mistral3ForConditionalGeneration (modeling_mistral3.py): the Mistral text decoder, the Pixtral vision
    encoder (a patch convolution without bias, RMS norms, layers of attention and a gated MLP without biases) and
    the projector (an RMS norm, the patch merger over spatial_merge_size², two linears with biases where
    multimodal_projector_bias)."""
    text_cfg, vision = config.get("text_config"), config.get("vision_config")
    if not isinstance(text_cfg, Mapping) or not isinstance(vision, Mapping):
        raise KeyError("text_config")
    # the output head: tied where the top level says so (Mistral3Config's own key), else as the text config says
    tied = config.get("tie_word_embeddings", text_cfg.get("tie_word_embeddings", False))
    text = _decoder(_Cfg({**text_cfg, "model_type": "mistral", "tie_word_embeddings": tied is True}), "mistral")
    if text is None:
        raise KeyError("text_config")
    d_text = _Cfg(text_cfg).int("hidden_size")
    v = _Cfg(vision)
    d, ff, n = v.int("hidden_size"), v.int("intermediate_size"), v.int("num_hidden_layers")
    patch, channels = v.int("patch_size"), v.int("num_channels", 3)
    merge = _Cfg(config).int("spatial_merge_size", 2)
    bias = _Cfg(config).flag("multimodal_projector_bias", True)
    t = _Counter()
    t.add(channels * patch * patch * d + d)  # patch_conv, ln_pre
    t.add(n * (4 * d * d + 3 * ff * d + 2 * d))  # attention, gated MLP, two norms
    t.add(d + d * d * merge * merge)  # the projector's norm and patch merger
    t.add(d_text * d + d_text * d_text + (2 * d_text if bias else 0))  # linear_1, linear_2
    vis = t.result(0, 0, "")
    return ParamCount(
        text.total + vis.total,
        text.embed,
        text.output,
        text.linears,
        "Mistral3ForConditionalGeneration's tensors: "
        + text.basis.split("'s tensors: ", 1)[1]
        + f"; with the {n}-layer Pixtral vision encoder and projector ({vis.total:,})",
    )


#: model_type → its counter (the families of _DENSE count through _decoder)
_COUNTERS: dict[str, Callable[[Mapping[str, Any]], ParamCount | None]] = {
    "gemma3": _gemma3,
    "deepseek_v2": lambda cfg: _deepseek(_Cfg(cfg), "deepseek_v2"),
    "deepseek_v3": lambda cfg: _deepseek(_Cfg(cfg), "deepseek_v3"),
    "deepseek_v32": lambda cfg: _deepseek(_Cfg(cfg), "deepseek_v32"),
    "qwen3_next": lambda cfg: _qwen3_next(_Cfg(cfg)),
    "glm4_moe": lambda cfg: _glm4_moe(_Cfg(cfg)),
    "minimax_m1": lambda cfg: _minimax_m1(_Cfg(cfg), "minimax_m1"),
    "minimax_text_01": lambda cfg: _minimax_m1(_Cfg(cfg), "minimax_text_01"),
    "minimax_m2": lambda cfg: _minimax_m2(_Cfg(cfg)),
    "llama4": _llama4,
    "llama4_text": _llama4,
    "mistral3": _mistral3,
    "mamba": lambda cfg: _mamba(_Cfg(cfg), "mamba"),
    "falcon_mamba": lambda cfg: _mamba(_Cfg(cfg), "falcon_mamba"),
    "mamba2": lambda cfg: _mamba2(_Cfg(cfg)),
    "cohere": lambda cfg: _cohere(_Cfg(cfg)),
    "falcon_h1": lambda cfg: _falcon_h1(_Cfg(cfg)),
    "granitemoehybrid": lambda cfg: _granitemoehybrid(_Cfg(cfg)),
    "jamba": lambda cfg: _jamba(_Cfg(cfg)),
}


def _closed(k: _Counter, c: _Cfg, d: int, vocab: int, tied_default: bool, what: str) -> ParamCount:
    """The output head unless tied, and the count: ``what`` it counted, the vocabulary, tied or separate head."""
    tied = _head(k, c, d, vocab, tied_default)
    basis = f"{what}, vocabulary {vocab:,}, " + ("tied embeddings" if tied else "separate output head")
    return k.result(vocab * d, 0 if tied else vocab * d, basis)


def _minimax_experts(k: _Counter, c: _Cfg, d: int, n_layer: int) -> int:
    """MiniMax's block_sparse_moe on every layer: w1, w3 (gate, up) and w2 (down) per expert, the router; the
    expert count."""
    n_exp, ff = c.int("num_local_experts"), c.int("intermediate_size")
    moe = f"{L}.block_sparse_moe"
    k.linear(f"{moe}.experts.w1", ff, d, n_exp * n_layer, expert=True)
    k.linear(f"{moe}.experts.w3", ff, d, n_exp * n_layer, expert=True)
    k.linear(f"{moe}.experts.w2", d, ff, n_exp * n_layer, expert=True)
    k.linear(f"{moe}.gate", n_exp, d, n_layer, quantized=False)
    return n_exp
