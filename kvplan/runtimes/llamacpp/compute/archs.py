"""The worst-case graphs of the architectures whose compute buffer kvplan reproduces, one builder per llama.cpp
model class (src/models/*.cpp), each a transcription of that class's graph constructor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kvplan.runtimes.llamacpp.compute import ggml
from kvplan.runtimes.llamacpp.compute.context import (
    OUTPUT_LAYER,
    GraphContext,
    KVInputs,
    Reserve,
    RSInputs,
    Weights,
    top_k_mask,
)
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.tensor import INPUT_LAYER, USAGE_CACHE, USAGE_WEIGHTS, Tensor


@dataclass(frozen=True, slots=True)
class Dims:
    """The hyperparameters a graph's shapes come from."""

    n_embd: int
    n_vocab: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_k: int
    head_v: int
    n_ff: int
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    expert_weights_scale: float = 0.0
    swa: tuple[bool, ...] = ()  # per layer: attends through the window (iSWA models)
    final_softcap: bool = False
    n_layer_dense_lead: int = 0
    n_expert_shared: int = 0
    expert_weights_norm: bool = False
    expert_gating: int = 0  # llama_expert_gating_func_type (0: the architecture's default)
    mrope: bool = False
    n_rot: int = 0
    kv_lora_rank: int = 0
    head_k_mla: int = 0
    head_v_mla: int = 0
    q_lora_rank: int = 0
    #: the sliding-window layers' kv_lora_rank, key_length_mla and value_length_mla (dots.llm3-note; 0: as full)
    mla_swa: tuple[int, int, int] = (0, 0, 0)
    hc: int = 0  # hyper-connection residual streams (Hy V4)
    hc_low_rank: int = 0  # Qwen4exp: the hyper-connection mixers' low rank (hyper_connection.low_rank)
    #: Qwen4exp's PLE n-gram embeddings: heads, head width, conv kernel, n-gram size (all 0: none)
    ple: tuple[int, int, int, int] = (0, 0, 0, 0)
    ple_layers: tuple[bool, ...] = ()  # per layer: mixes the PLE embeddings in (is_ple)
    #: per layer: Qwen4exp's QSA block size, DeepSeek-V4's CSA (4) / HCA (128) ratio (attention.compress_ratios)
    compress: tuple[int, ...] = ()
    dsv4: tuple[int, int, int] = (0, 0, 0)  # DeepSeek-V4: output groups, output low rank, hash-routed layers
    n_swa: int = 0  # the sliding window (DeepSeek-V4 bounds its sparse attention's cells by it)
    #: Kimi K3: attn_res.block_size, situ's up transform, the KDA gate's lower bound, the experts' latent width
    attn_res_block: int = 0
    indexer_block: int = 0  # MiniMax-M3's MSA: the tokens of a scored block
    kpool: int = 0  # GLM-5-Next: the tokens its indexer pools into one key (attention.indexer.kpool)
    kpool_tail: bool = False  # ... and whether the incomplete tail is selected too (kpool_select_tail)
    situ_linear: bool = False
    kda_lower_bound: bool = False
    expert_latent: int = 0
    expert_groups: tuple[int, int] = (0, 0)
    recurrent: tuple[bool, ...] = ()  # per layer: a recurrent (state) layer of a hybrid
    #: the recurrent layers' hparams: ssm_d_conv, ssm_d_inner, ssm_d_state, ssm_n_group, ssm_dt_rank
    ssm: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    n_ff_shexp: int = 0
    n_ctx_orig: int = 0  # the trained context (n_ctx_orig_yarn): Phi-3 picks its long or short RoPE factors by it
    logit_scale: bool = False  # the logits scaled (Command-R's logit_scale)
    embedding_scale: bool = False  # Granite's multipliers
    residual_scale: bool = False
    rope: bool = True  # Granite's rope.scaling.finetuned switch
    ssm_dt_b_c_rms: bool = False  # Falcon-Mamba: dt, B and C RMS-normed without weights
    dense_layers: frozenset[int] = frozenset()  # Jamba's layers without experts (known from a file or a config)
    moe_layer_step: int = 0  # Llama 4: the experts on every n-th layer
    n_ff_layers: tuple[int, ...] = ()  # each layer's feed-forward width (Nemotron-H: a layer is one block kind)
    moe_latent: int = 0  # the experts' narrower width (Nemotron 3 Super's latent projections)
    kv_source: tuple[int, ...] = ()  # each layer's KV owner (-1: its own; Gemma 3n's later layers reuse a cache)
    shortconv_l_cache: int = 0  # LFM2's short convolution width (shortconv.l_cache)
    n_deepstack: int = 0  # Qwen3-VL's deepstack layers (n_deepstack_layers)
    parallel_residual: bool = False  # GPT-NeoX's use_parallel_residual
    indexer: tuple[int, int, int] = (0, 0, 0)  # the lightning indexer's heads, head size and top-k (DeepSeek-V3.2)
    indexer_layers: tuple[bool, ...] = ()  # per layer: runs its own indexer (is_indexer_full; GLM-DSA shares some)
    chexp: tuple[int, int] = (0, 0)  # GroveMoE: experts per group, the adjugate experts' width (0: head_k)
    layer_norm: bool = False  # LLM_NORM where the class reads either epsilon and the file has no RMS one
    #: each layer's query and KV heads where they differ by layer (DeciLM / Nemotron-NAS: 0 query heads is a layer
    #: without attention, 0 KV heads its "linear attention")
    layer_heads: tuple[tuple[int, int], ...] = ()
    hrm: tuple[int, int, int] = (0, 0, 0)  # HRM-Text: layers per stack, high cycles, low cycles
    gate_width: int = 0  # layer 0's attn_gate width in the file (0: none stored; Laguna's gate per head or element)
    attn_value_scale: bool = False  # MiMo-V2: the attention output scaled (attention.value_scale)
    kda_head: int = 0  # the KDA linear attention's head size (kda.head_dim: BailingMoE 3, Kimi-Linear)
    clamp_exp: frozenset[int] = frozenset()  # layers whose experts' SwiGLU is clamped (swiglu_clamp_exp)
    clamp_shexp: frozenset[int] = frozenset()  # ... and whose shared experts' is (swiglu_clamp_shexp)


@dataclass(frozen=True, slots=True)
class Decoder:
    """How one llama-like model class differs from llama_model_llama::graph."""

    rope_factors: bool = False  # rope_freqs (llama)
    qk_norm: bool = False  # attn_q_norm / attn_k_norm before RoPE (qwen3)
    wo_bias: bool = False  # the loader creates attn_output.bias
    ffn_bias: bool = False  # build_ffn gets the biases
    ffn_scale: bool = True  # build_ffn gets the scales
    output_bias: bool = False  # output.bias (qwen2)
    no_rope_step: int = 0  # every n-th layer attends without RoPE (SmolLM3: n_no_rope_layer_step 4)
    relu_sqr: bool = False  # the feed-forward is up and down only with ReLU² (arcee.cpp)
    mrope: bool = False  # multi-section RoPE whatever the file says (the arch's rope type: qwen2vl), four positions
    deepstack: bool = False  # the first n_deepstack_layers add a slice of the wide input embedding (qwen3vl.cpp)
    moe_scales: bool = True  # build_moe_ffn gets the experts' scales
    layer_norm: bool = False  # layer norms with their biases (LLM_NORM) instead of RMS norms (orion.cpp)
    rope: bool = True  # RoPE and its positions input; False: ALiBi in the softmax, no positions (refact.cpp)
    norm_weights: bool = True  # False: the layer norms have no weights or biases at all (olmo.cpp)
    #: the class's graph calls build_ffn on dense tensors the file does not have (refact.cpp over a file with
    #: experts): no up, gate or down, so the feed-forward is SiLU of its input
    ffn_missing: bool = False
    fused_qkv: bool = False  # the loader creates only the fused attn_qkv (qwen.cpp, dbrx.cpp)
    #: the order of the per-head Q/K norms and RoPE: "interleaved" (norm Q, RoPE Q, norm K, RoPE K: qwen3.cpp),
    #: "norms_first" (both norms, then both RoPEs: mellum.cpp), "rope_first" (both RoPEs, then both norms:
    #: maincoder.cpp)
    qk_order: str = "interleaved"
    norm_bias: bool = True  # with layer_norm: the norms have biases (False: dbrx.cpp's LLM_NORM without them)
    ffn_norm: str = "ffn_norm"  # the feed-forward's norm tensor (dbrx.cpp: attn_output_norm)
    gelu_seq: bool = False  # the feed-forward is up, GELU, down (codeshell.cpp)
    moe_norm_w: bool = True  # build_moe_ffn normalises the selected experts' weights
    iswa: bool = False  # the class builds build_attn_inp_kv_iswa when the model has window layers (mellum.cpp)
    swiglu_seq: bool = False  # the feed-forward is one up projection twice n_ff wide, split in halves (chatglm.cpp)


LLAMA = Decoder(rope_factors=True, wo_bias=True, ffn_bias=True)
QWEN2 = Decoder(ffn_scale=False, output_bias=True)
QWEN3 = Decoder(qk_norm=True)
SMOLLM3 = Decoder(wo_bias=False, ffn_bias=False, ffn_scale=False, no_rope_step=4)
#: qwen3vl.cpp / qwen3vl-moe.cpp: Qwen3's layers without the feed-forward's scales, multi-section RoPE, the
#: deepstack embeddings added after the first layers
QWEN3VL = Decoder(qk_norm=True, ffn_scale=False, mrope=True, deepstack=True, moe_scales=False)
#: qwen2vl.cpp: Qwen2's layers, its output bias created but never added
QWEN2VL = Decoder(ffn_scale=False, mrope=True)
#: seed-oss.cpp, ernie4-5.cpp and internlm2.cpp: neither the output bias nor the feed-forward's biases and
#: scales passed
SEED_OSS = ERNIE4_5 = INTERNLM2 = Decoder(ffn_scale=False)
#: exaone.cpp (EXAONE 3.x): each layer's RoPE factors, no output bias, no feed-forward biases or scales
EXAONE = Decoder(rope_factors=True, ffn_scale=False)
#: arcee.cpp (AFM): each layer's RoPE factors, a ReLU² feed-forward of up and down
ARCEE = Decoder(rope_factors=True, ffn_scale=False, relu_sqr=True)
#: orion.cpp: xverse's layers (INTERNLM2's) with layer norms and their biases, the output's too
ORION = Decoder(ffn_scale=False, layer_norm=True)
#: olmo.cpp (OLMo 1): xverse's layers with weightless layer norms, the output's too
OLMO = Decoder(ffn_scale=False, layer_norm=True, norm_weights=False)
#: refact.cpp, and baichuan.cpp but for its 7B (32 layers, RoPE): xverse's layers with ALiBi instead of RoPE
ALIBI = Decoder(ffn_scale=False, rope=False)
#: qwen.cpp (Qwen 1): the fused QKV with its bias, a SwiGLU feed-forward half the file's n_ff wide
QWEN = Decoder(ffn_scale=False, fused_qkv=True)
#: codeshell.cpp: layer norms with biases, RoPE, the output projection's bias, a GELU feed-forward with biases
CODESHELL = Decoder(ffn_scale=False, layer_norm=True, wo_bias=True, ffn_bias=True, gelu_seq=True)
#: maincoder.cpp: per-head Q/K norms after RoPE; mellum.cpp: both norms before both RoPEs
MAINCODER = Decoder(ffn_scale=False, qk_norm=True, qk_order="rope_first")
MELLUM = Decoder(qk_norm=True, qk_order="norms_first", iswa=True)
#: nanbeige.cpp: llama's layers without the output-projection bias (its looped layers are not built here:
#: num_loops 1)
NANBEIGE = Decoder(rope_factors=True)
#: pangu-embed.cpp: the output projection's bias, no feed-forward biases or scales
PANGU_EMBEDDED = Decoder(wo_bias=True, ffn_scale=False)
#: chatglm.cpp: no output-projection bias, a SwiGLU feed-forward of one up projection split in halves
CHATGLM = Decoder(ffn_scale=False, swiglu_seq=True)
#: jais.cpp: layer norms with biases, ALiBi (no positions), the fused QKV, every bias, SwiGLU with biases;
#: jais2.cpp: RoPE, separate Q/K/V, a ReLU² feed-forward of up and down with biases
JAIS = Decoder(ffn_scale=False, layer_norm=True, rope=False, fused_qkv=True, wo_bias=True, ffn_bias=True)
JAIS2 = Decoder(ffn_scale=False, layer_norm=True, wo_bias=True, ffn_bias=True, relu_sqr=True)
#: paddleocr.cpp (PaddleOCR-VL's ERNIE 4.5 language model): multi-section RoPE always, the output projection's
#: bias where the file has one, no feed-forward scales, never the experts
PADDLEOCR = Decoder(ffn_scale=False, wo_bias=True, mrope=True)
#: pockettts.cpp: codeshell's layers without the output-projection or feed-forward biases
POCKETTTS = Decoder(ffn_scale=False, layer_norm=True, gelu_seq=True)
#: dbrx.cpp: layer norms without biases, the fused QKV, experts routed by softmax without scales
DBRX = Decoder(ffn_scale=False, layer_norm=True, norm_bias=False, fused_qkv=True, ffn_norm="attn_output_norm",
               moe_scales=False)  # fmt: skip


def _kv_inputs(g: GraphContext, d: Dims, iswa: bool, rot: bool = True) -> tuple[KVInputs, KVInputs]:
    """build_attn_inp_kv, or build_attn_inp_kv_iswa's pair (the full cache's inputs, then the window cache's);
    `rot` off: without the Hadamard rotation inputs (a hybrid iSWA memory's)."""
    n_v = d.head_v * max((kv for _, kv in d.layer_heads), default=d.n_head_kv)  # (n_embd_v_gqa_max)
    kv = g.attn_inp_kv(g.r.kv_size, d.head_k, d.head_v, n_v, rot)
    return kv, (g.attn_inp_kv(g.r.kv_size_swa, d.head_k, d.head_v, n_v, rot) if iswa else kv)


def _last_outputs(d: Dims, il: int, out_ids: Tensor, cur: Tensor, residual: Tensor) -> tuple[Tensor, Tensor]:
    """After the last layer's attention, llama.cpp keeps only the rows that produce outputs (`inp_out_ids`) of the
    layer's output and of its residual; other layers pass both through."""
    if il != d.n_layer - 1:
        return cur, residual
    return ggml.get_rows(cur, out_ids), ggml.get_rows(residual, out_ids)


def _inputs(g: GraphContext, d: Dims, iswa: bool) -> tuple[Tensor, Tensor, tuple[KVInputs, KVInputs], Tensor]:
    """The inputs of a transformer graph in llama.cpp's order: token embeddings, positions, the KV cache's inputs
    (the window cache's too under iSWA), the output rows."""
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv = _kv_inputs(g, d, iswa)
    return inp_l, pos, kv, g.inp_out_ids()


def _lm_head(
    g: GraphContext,
    d: Dims,
    inp_l: Tensor,
    rms: bool = True,
    scale: bool = False,
    norm_bias: bool = False,
    output_bias: bool = False,
    softcap: bool = False,
    norm_weight: bool = True,
    out_ids: Tensor | None = None,
    output_scale: bool = True,
) -> Graph:
    """The output layer most model classes end with: the final norm (res->t_embd; with its bias where the file has
    one and the class reads it; `out_ids`: the classes that keep every token through the last layer and take the
    output rows after the norm, res->t_h_nextn then res->t_embd), the LM head (res->t_logits; with output.scale
    where the class passes it), its bias where read (qwen2, phi3), the logits scaled where the model says so
    (Granite, Command-R) or soft-capped (Gemma 2, 3 and 3n: cap · tanh(logits / cap))."""
    g.il = OUTPUT_LAYER
    nb = g.opt("output_norm.bias", d.n_embd) if norm_bias else None
    cur = g.norm(inp_l, g.wt(d.n_embd, name="output_norm") if norm_weight else None, nb, rms=rms)
    ggml.set_output(cur)
    if out_ids is not None:  # (embeddings_nextn_masked is false)
        cur = ggml.get_rows(cur, out_ids)
        ggml.set_output(cur)
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale() if output_scale else None)
    if scale:
        cur = ggml.unary(cur, "SCALE")
    if softcap:
        cur = ggml.unary(ggml.unary(ggml.unary(cur, "SCALE")), "SCALE")
    b = g.opt("output.bias", d.n_vocab) if output_bias else None
    if b is not None:  # (llm_graph_result::set_outputs marks t_logits, the last of these)
        cur = ggml.binary("ADD", cur, b)
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def _attention(
    g: GraphContext, d: Dims, kv: KVInputs, cur: Tensor, pos: Tensor, il: int, qk_norm: bool = False,
    wo_bias: bool = False, softcap: bool = False,
) -> Tensor:  # fmt: skip
    """The llama-like classes' attention block: build_qkv, per-head Q/K norms where the class has them, RoPE,
    build_attn through the KV cache (with the output bias where the class passes it; Grok's logits soft-capped)."""
    q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
    if qk_norm:
        q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
        k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
    q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
    wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
    wo_b = g.opt("attn_output.bias", d.n_embd) if wo_bias else None
    return g.attn_kv(kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v,
                     softcap=softcap)  # fmt: skip


def _attention_block(
    g: GraphContext, d: Dims, kv: KVInputs, inp_l: Tensor, pos: Tensor, il: int, out_ids: Tensor, qk_norm: bool = False
) -> tuple[Tensor, Tensor]:
    """A pre-norm layer's first half: the norm, _attention, the last layer's output rows, the residual; returns
    the feed-forward's input (the residual stream) and its pre-norm."""
    cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
    cur = _attention(g, d, kv, cur, pos, il, qk_norm=qk_norm)
    cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
    ffn_inp = ggml.binary("ADD", cur, inp_sa)
    return ffn_inp, g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))


def build_decoder(d: Dims, r: Reserve, w: Weights, o: Decoder) -> Graph:
    """llama_model_llama::graph (src/models/llama.cpp) and the classes that differ from it only as `o` says
    (qwen2.cpp, qwen3.cpp, qwen3moe.cpp, smollm3.cpp, qwen2vl.cpp: multi-section RoPE's four positions per
    token); MoE layers as build_moe_ffn with softmax gating."""
    g = GraphContext(r, w)
    n_embd_inp = d.n_embd * (1 + d.n_deepstack) if o.deepstack else 0
    inp_l = g.inp_embd(d.n_embd, d.n_vocab, n_embd_inp=n_embd_inp)
    pos = g.inp_pos(4 if o.mrope else 1) if o.rope else None
    iswa = o.iswa and any(d.swa)
    kv, kv_swa = _kv_inputs(g, d, iswa)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        rope_factors = g.opt("rope_freqs", d.head_k // 2) if o.rope_factors else None  # each layer's own
        inp_sa = inp_l
        cur = _decoder_norm(g, d, o, inp_l, "attn_norm")
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v, fused=o.fused_qkv)
        use_rope = pos is not None and (not o.no_rope_step or (il + 1) % o.no_rope_step != 0)
        q, k = _qk_norm_rope(g, d, o, q, k, pos if use_rope else None, rope_factors)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        wo_b = g.opt("attn_output.bias", d.n_embd) if o.wo_bias else None
        cur = g.attn_kv(kv_swa if iswa and d.swa[il] else kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v,
                        d.n_head_kv, d.head_k, d.head_v, iswa=iswa)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = _decoder_norm(g, d, o, ffn_inp, o.ffn_norm)
        if o.ffn_missing:
            cur = ggml.unary(cur, "UNARY", "silu")  # ggml_silu
        elif d.n_expert:
            cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, w_scale=d.expert_weights_scale,
                            scales=o.moe_scales, norm_w=o.moe_norm_w)  # fmt: skip
        elif o.swiglu_seq:
            cur = ggml.glu(ggml.mul_mat(g.wt(d.n_embd, 2 * d.n_ff, name="ffn_up"), cur))
            cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), cur)
        elif o.gelu_seq:
            cur = g.ffn_seq(cur, d.n_embd, d.n_ff, bias=o.ffn_bias, scale=o.ffn_scale)
        elif o.relu_sqr:
            cur = g.ffn_relu_sqr(cur, d.n_embd, d.n_ff, bias=o.ffn_bias, scale=o.ffn_scale)
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=o.ffn_bias, scale=o.ffn_scale)
        cur = ggml.binary("ADD", cur, ffn_inp)
        if o.deepstack and il < d.n_deepstack and g.t_inp_embd is not None:
            t = g.t_inp_embd
            ds = ggml.view(t, (d.n_embd, t.ne[1]), (t.nb[1],), (il + 1) * ggml.row_size("f32", d.n_embd))
            cur = ggml.binary("ADD", cur, ds)
        inp_l = cur
    return _lm_head(g, d, inp_l, rms=not o.layer_norm, norm_bias=o.layer_norm and o.norm_weights and o.norm_bias,
                    output_bias=o.output_bias, norm_weight=o.norm_weights)  # fmt: skip


def _qk_norm_rope(
    g: GraphContext, d: Dims, o: Decoder, q: Tensor, k: Tensor, pos: Tensor | None, factors: Tensor | None
) -> tuple[Tensor, Tensor]:
    """The per-head Q/K norms (where the class has them) and RoPE (where the layer uses it), in the class's order."""

    def norm(t: Tensor, name: str) -> Tensor:
        return g.norm(t, g.wt(d.head_k, name=name)) if o.qk_norm else t

    def rope(t: Tensor) -> Tensor:
        return ggml.rope(t, pos, factors) if pos is not None else t

    if o.qk_order == "norms_first":
        q, k = norm(q, "attn_q_norm"), norm(k, "attn_k_norm")
        return rope(q), rope(k)
    if o.qk_order == "rope_first":
        q, k = rope(q), rope(k)
        return norm(q, "attn_q_norm"), norm(k, "attn_k_norm")
    q = rope(norm(q, "attn_q_norm"))
    return q, rope(norm(k, "attn_k_norm"))


def _decoder_norm(g: GraphContext, d: Dims, o: Decoder, cur: Tensor, name: str) -> Tensor:
    """build_norm of a llama-like layer: RMS, or a layer norm (with its bias where the class has one)."""
    if o.layer_norm and not o.norm_weights:
        return g.norm(cur, None, None, rms=False)
    if o.layer_norm:
        b = g.wt(d.n_embd, name=f"{name}.bias") if o.norm_bias else None
        return g.norm(cur, g.wt(d.n_embd, name=name), b, rms=False)
    return g.norm(cur, g.wt(d.n_embd, name=name))


def build_gemma3(d: Dims, r: Reserve, w: Weights, gemma2: bool = False) -> Graph:
    """llama_model_gemma3::graph<iswa> (src/models/gemma3.cpp); with `gemma2`, llama_model_gemma2::graph
    (gemma2.cpp): no Q/K norms, GELU, the attention logits soft-capped (attn_soft_cap) and the final logits
    always, every layer through the iSWA input."""
    g = GraphContext(r, w)
    iswa = gemma2 or any(d.swa)
    inp_l = ggml.unary(g.inp_embd(d.n_embd, d.n_vocab), "SCALE")
    pos = g.inp_pos()
    kv, kv_swa = _kv_inputs(g, d, iswa)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        if not gemma2:
            q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
        q = ggml.rope(q, pos, None)
        if not gemma2:
            k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
        k = ggml.rope(k, pos, None)
        q = ggml.unary(q, "SCALE")
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        layer_kv = kv_swa if iswa and d.swa[il] else kv
        cur = g.attn_kv(layer_kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k,
                        d.head_v, iswa=iswa, softcap=gemma2)  # fmt: skip
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        cur = g.norm(cur, g.wt(d.n_embd, name="attn_post_norm"))
        sa_out = ggml.binary("ADD", cur, inp_l)
        cur = g.norm(sa_out, g.wt(d.n_embd, name="ffn_norm"))
        cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        cur = g.norm(cur, g.wt(d.n_embd, name="ffn_post_norm"), with_il=False)  # build_norm(..., -1)
        inp_l = ggml.binary("ADD", cur, sa_out)
    return _lm_head(g, d, inp_l, softcap=gemma2 or d.final_softcap)


def build_phi3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_phi3::graph<false> (src/models/phi3.cpp; its SWA is disabled at load): the fused QKV where the
    file has it, RoPE with the long / short factors where the model has them, Q scaled, the output projection's
    bias, and the SwiGLU feed-forward as one up projection split in halves (LLM_FFN_SWIGLU, LLM_FFN_SEQ)."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv)
    out_ids = g.inp_out_ids()
    factors = "rope_factors_long" if r.n_ctx_seq > d.n_ctx_orig else "rope_factors_short"
    for il in g.layers(d.n_layer):
        g.il = il
        residual = inp_l
        rope_factors = g.opt(factors, d.n_rot // 2 if d.n_rot else d.head_k // 2)
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.opt("attn_norm.bias", d.n_embd))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = ggml.rope(q, pos, rope_factors)
        k = ggml.rope(k, pos, rope_factors)
        q = ggml.unary(q, "SCALE")
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, g.opt("attn_output.bias", d.n_embd), g.opt("attn_output.scale", 1), q, k, v,
                        d.n_head_kv, d.head_k, d.head_v)  # fmt: skip
        cur, residual = _last_outputs(d, il, out_ids, cur, residual)
        cur = ggml.binary("ADD", cur, residual)
        residual = cur
        cur = g.norm(cur, g.wt(d.n_embd, name="ffn_norm"), g.opt("ffn_norm.bias", d.n_embd))
        if d.n_expert:
            cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, w_scale=d.expert_weights_scale)
        else:
            cur = ggml.glu(ggml.mul_mat(g.wt(d.n_embd, 2 * d.n_ff, name="ffn_up"), cur))
            cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), cur)
        inp_l = ggml.binary("ADD", residual, cur)
    return _lm_head(g, d, inp_l, norm_bias=True, output_bias=True)


def _qkv_normed_over_heads(g: GraphContext, d: Dims, cur: Tensor, pos: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Separate Q/K/V projections, Q and K RMS-normed over all their heads (one weight of head × heads), then
    RoPE on Q and K — olmo2.cpp's and minimax-m2.cpp's shared opening of the attention."""
    n_tok = g.r.n_tokens
    outs = g.projections(cur, d.n_embd, (("attn_q", d.head_k * d.n_head), ("attn_k", d.head_k * d.n_head_kv),
                                         ("attn_v", d.head_v * d.n_head_kv)))  # fmt: skip
    q = g.norm(outs[0], g.wt(d.head_k * d.n_head, name="attn_q_norm"))
    k = g.norm(outs[1], g.wt(d.head_k * d.n_head_kv, name="attn_k_norm"))
    q = ggml.rope(ggml.reshape(q, d.head_k, d.n_head, n_tok), pos, None)
    k = ggml.rope(ggml.reshape(k, d.head_k, d.n_head_kv, n_tok), pos, None)
    return q, k, ggml.reshape(outs[2], d.head_v, d.n_head_kv, n_tok)


def _post_normed_ffn(g: GraphContext, d: Dims, cur: Tensor, inp_sa: Tensor) -> Tensor:
    """olmo2.cpp's and exaone4.cpp's second half: the attention's post-norm and residual, the SwiGLU feed-forward
    without a pre-norm, its post-norm (build_norm(..., -1): not pinned) and residual."""
    cur = g.norm(cur, g.wt(d.n_embd, name="attn_post_norm"))
    ffn_inp = ggml.binary("ADD", cur, inp_sa)
    cur = g.ffn_par(ffn_inp, d.n_embd, d.n_ff, bias=False, scale=False)
    cur = g.norm(cur, g.wt(d.n_embd, name="ffn_post_norm"), with_il=False)
    return ggml.binary("ADD", cur, ffn_inp)


def build_olmo2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_olmo2::graph<iswa> (src/models/olmo2.cpp): no pre-norms; Q and K normed over all their heads
    before RoPE; a norm after the attention and after the SwiGLU feed-forward."""
    g = GraphContext(r, w)
    iswa = any(d.swa)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, iswa)
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        q, k, v = _qkv_normed_over_heads(g, d, inp_l, pos)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        layer_kv = kv_swa if iswa and d.swa[il] else kv
        cur = g.attn_kv(layer_kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k,
                        d.head_v, iswa=iswa)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        inp_l = _post_normed_ffn(g, d, cur, inp_sa)
    return _lm_head(g, d, inp_l)


def build_minimax_m2(d: Dims, r: Reserve, w: Weights, olmoe: bool = False) -> Graph:
    """llama_model_minimax_m2::graph (src/models/minimax-m2.cpp): Q and K normed over all their heads before a
    partial RoPE, every layer's experts routed by the model's gating function with the probability bias; with
    `olmoe`, llama_model_olmoe::graph (olmoe.cpp): the same layers, softmax routing without normalised weights."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    gating = "softmax" if olmoe else _GATING.get(d.expert_gating, "softmax")
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = _qkv_normed_over_heads(g, d, cur, pos)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, gating=gating, norm_w=not olmoe,
                        w_scale=d.expert_weights_scale, exp_probs_b=not olmoe and w.has("exp_probs_b.bias"),
                        scales=False)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_openai_moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_openai_moe::graph (src/models/openai-moe.cpp): gpt-oss, iSWA attention with sinks, experts
    with biases, softmax over the selected experts, SwiGLU-OAI."""
    g = GraphContext(r, w)
    iswa = any(d.swa)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, iswa)
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = ggml.rope(q, pos, None)
        k = ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        layer_kv = kv_swa if iswa and d.swa[il] else kv
        wo_b, wo_s, sinks = (
            g.wt(d.n_embd, name="attn_output.bias"),
            g.opt("attn_output.scale", 1),
            g.wt(d.n_head, name="attn_sinks"),
        )
        cur = g.attn_kv(layer_kv, il, wo, wo_b, wo_s, q, k, v, d.n_head_kv, d.head_k, d.head_v, sinks=sinks, iswa=iswa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="attn_post_norm"))
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, gating="softmax_weight", norm_w=False,
                        w_scale=d.expert_weights_scale, act="swiglu_oai", gate_inp_b=True, expert_bias=True,
                        scales=False)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    g.il = OUTPUT_LAYER
    ggml.set_output(inp_l)  # res->t_h_nextn (set_outputs marks it)
    cur = ggml.get_rows(inp_l, out_ids)
    cur = g.norm(cur, g.wt(d.n_embd, name="output_norm"))
    ggml.set_output(cur)
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


_GATING = {1: "softmax", 2: "sigmoid", 3: "softmax_weight"}


def _dense_or_shared_moe(
    g: GraphContext, d: Dims, il: int, cur: Tensor, n_ff_exp: int, ffn_scales: bool = False, **moe: Any
) -> Tensor:
    """The FFN of GLM-4.5 and DeepSeek: a dense FFN in the leading layers, else the routed experts (build_moe_ffn
    with the weight norm and scale the model has) plus its shared experts on the same input (`ffn_scales`: the
    dense and shared FFNs get their projections' scales, DeepSeek-V3.2)."""
    if il < d.n_layer_dense_lead:
        return g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=ffn_scales)
    routed = g.moe_ffn(cur, d.n_expert, d.n_expert_used, n_ff_exp, norm_w=d.expert_weights_norm,
                       w_scale=d.expert_weights_scale, **moe)  # fmt: skip
    shared = g.ffn_par(cur, d.n_embd, n_ff_exp * d.n_expert_shared, bias=False, scale=ffn_scales, suffix="_shexp")
    return ggml.binary("ADD", routed, shared)


def build_glm4_moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_glm4_moe::graph (src/models/glm4-moe.cpp): GLM-4.5 — the leading dense layers, then routed
    experts (sigmoid gating with the expert-probability bias) plus the shared experts; Q/K norms where the model
    has them; the trunk's layers only (the nextn block is the MTP graph's)."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos(4 if d.mrope else 1)
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        qn, kn = g.opt("attn_q_norm", d.head_k), g.opt("attn_k_norm", d.head_k)
        if qn is not None:
            q = g.norm(q, qn)
        if kn is not None:
            k = g.norm(k, kn)
        q = ggml.rope(q, pos, None)
        k = ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="attn_post_norm"))
        n_ff_exp = d.n_ff_exp or d.n_ff // d.n_expert_used
        cur = _dense_or_shared_moe(g, d, il, cur, n_ff_exp, gating=_GATING.get(d.expert_gating, "sigmoid"),
                                   exp_probs_b=True, scales=False)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    g.il = OUTPUT_LAYER
    cur = g.norm(inp_l, g.wt(d.n_embd, name="output_norm"))
    ggml.set_output(cur)  # res->t_h_nextn and res->t_embd
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def build_deepseek2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_deepseek2::graph (src/models/deepseek2.cpp), MLA with the absorption optimisation: Q through
    its low-rank pair (or one matrix, the lite models), the compressed KV and its rotary part concatenated into
    a K-only cache, attention as MQA and decompressed by wv_b; dense lead layers, then sigmoid-routed experts
    (expert groups where the model has them) plus the shared experts; the trunk without its nextn block."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    mla = d.head_k_mla > 0 and d.head_v_mla > 0  # hparams.is_mla(): early conversions have no *_length_mla keys
    kv = g.attn_inp_k(r.kv_size) if mla else g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv)
    out_ids = g.inp_out_ids()
    hk, rope, rank = (d.head_k_mla if mla else d.head_k), d.n_rot, d.kv_lora_rank
    hv = d.head_v_mla if mla else d.head_v
    nope = hk - rope
    n_tok = r.n_tokens
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.q_lora_rank:
            q = ggml.mul_mat(g.wt(d.n_embd, d.q_lora_rank, name="attn_q_a"), cur)
            q = g.norm(q, g.wt(d.q_lora_rank, name="attn_q_a_norm"))
            q = ggml.mul_mat(g.wt(d.q_lora_rank, hk * d.n_head, name="attn_q_b"), q)
        else:
            q = ggml.mul_mat(g.wt(d.n_embd, hk * d.n_head, name="attn_q"), cur)
        q = ggml.reshape(q, hk, d.n_head, n_tok)
        kv_pe = ggml.mul_mat(g.wt(d.n_embd, rank + rope, name="attn_kv_a_mqa"), cur)
        row = ggml.row_size(kv_pe.type, rank + rope)
        kv_c = ggml.view(kv_pe, (rank, n_tok), (row,), 0)
        k_pe = ggml.view(kv_pe, (rope, 1, n_tok), (row, row), ggml.row_size(kv_pe.type, rank))
        k_pe = ggml.rope(k_pe, pos, None)
        kv_c = g.norm(kv_c, g.wt(rank, name="attn_kv_a_norm"))
        if not mla:  # MLA without the absorption: K and V decompressed by wkv_b, attention as MHA
            kv_full = ggml.mul_mat(g.wt(rank, d.n_head * (nope + hv), name="attn_kv_b"), kv_c)
            row = ggml.row_size(kv_full.type, nope + hv)
            k_nope = ggml.view(kv_full, (nope, d.n_head, n_tok), (row, row * d.n_head), 0)
            v_cur = ggml.view(kv_full, (hv, d.n_head, n_tok), (row, row * d.n_head), ggml.row_size(kv_full.type, nope))
            v_cur = ggml.cont(v_cur)
            q_cur = ggml.rope(q, pos, None)  # (ggml_rope_set_offset: RoPE on the trailing dims, no new tensor)
            k_cur = ggml.concat(k_nope, ggml.repeat(k_pe, rope, d.n_head, n_tok, 1), 0)
            wo = g.wt(hv * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q_cur, k_cur, v_cur, d.n_head_kv,
                            d.head_k, d.head_v)  # fmt: skip
        else:
            cur = _mla_attention(g, d, kv, il, q, kv_c, k_pe, pos)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        cur = _dense_or_shared_moe(g, d, il, cur, d.n_ff_exp or d.n_ff, gating=_GATING.get(d.expert_gating, "softmax"),
                                   exp_probs_b=w.has("exp_probs_b.bias"), expert_groups=d.expert_groups,
                                   scales=False, gate_up=w.has("ffn_gate_up_exps"))  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _deepseek_lm_head(g, d, inp_l)


def _deepseek_lm_head(g: GraphContext, d: Dims, inp_l: Tensor) -> Graph:
    """deepseek2.cpp's and deepseek32.cpp's output: the final norm (res->t_h_nextn and res->t_embd), then the LM head
    as a plain ggml_mul_mat."""
    g.il = OUTPUT_LAYER
    cur = g.norm(inp_l, g.wt(d.n_embd, name="output_norm"))
    ggml.set_output(cur)
    cur = ggml.mul_mat(g.wt(d.n_embd, d.n_vocab, name="output"), cur)
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def _mla_attention(
    g: GraphContext, d: Dims, kv: KVInputs, il: int, q: Tensor, kv_c: Tensor, k_pe: Tensor, pos: Tensor
) -> Tensor:
    """deepseek2's MLA with the absorption optimisation: Q's no-RoPE part through wk_b, a K-only cache of the
    compressed KV and its RoPE part, attention as MQA decompressed by wv_b."""
    hk, rope, rank, n_tok = d.head_k_mla, d.n_rot, d.kv_lora_rank, g.r.n_tokens
    nope = hk - rope
    q_nope = ggml.view(q, (nope, d.n_head, n_tok), (q.nb[1], q.nb[2]), 0)
    q_pe = ggml.view(q, (rope, d.n_head, n_tok), (q.nb[1], q.nb[2]), ggml.row_size(q.type, nope))
    q_pe = ggml.rope(q_pe, pos, None)
    q_nope = ggml.permute(q_nope, 0, 2, 1, 3)
    q_abs = ggml.mul_mat(g.wt(nope, rank, d.n_head, name="attn_k_b"), q_nope)
    q_abs = ggml.permute(q_abs, 0, 2, 1, 3)
    q_cur = ggml.concat(q_abs, q_pe, 0)
    kv_c = ggml.reshape(kv_c, rank, 1, n_tok)
    k_cur = ggml.concat(kv_c, k_pe, 0)
    wo = g.wt(d.head_v_mla * d.n_head, d.n_embd, name="attn_output")
    v_mla = g.wt(rank, d.head_v_mla, d.n_head, name="attn_v_b")
    return g.attn_k(kv, il, wo, g.opt("attn_output.scale", 1), q_cur, k_cur, kv_c, v_mla, d.head_k, d.n_head_kv)


def build_stablelm(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_stablelm::graph (src/models/stablelm.cpp): layer norms with biases, optional per-head Q/K layer
    norms, the feed-forward on the attention input's norm where the layer has no norm of its own (StableLM 2's
    parallel residual), the residual taken from the layer's input."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.wt(d.n_embd, name="attn_norm.bias"), rms=False)
        inp_sa = cur
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q_norm, k_norm = g.opt("attn_q_norm", d.head_k, d.n_head), g.opt("attn_k_norm", d.head_k, d.n_head_kv)
        if q_norm is not None:
            q = g.norm(q, q_norm, rms=False)
        if k_norm is not None:
            k = g.norm(k, k_norm, rms=False)
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        if il == d.n_layer - 1:
            cur, inp_l, inp_sa = (ggml.get_rows(t, out_ids) for t in (cur, inp_l, inp_sa))
        ffn_inp = ggml.binary("ADD", cur, inp_l)
        ffn_norm = g.opt("ffn_norm", d.n_embd)
        bias = g.opt("ffn_norm.bias", d.n_embd)
        normed = g.norm(ffn_inp, ffn_norm, bias, rms=False) if ffn_norm is not None else None
        cur = g.ffn_par(inp_sa if normed is None else normed, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, rms=False, norm_bias=True)


def build_phi2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_phi2::graph (src/models/phi2.cpp): one layer norm (with its bias) feeding attention and the
    feed-forward in parallel, Q scaled after RoPE, the output projection's bias, a GELU feed-forward of up and down
    with their biases, both added to the layer's input; the output norm's bias and the LM head's."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        normed = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.wt(d.n_embd, name="attn_norm.bias"), rms=False)
        q, k, v = g.qkv(normed, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q, k = ggml.unary(ggml.rope(q, pos, None), "SCALE"), ggml.rope(k, pos, None)
        wo, wo_b = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output"), g.wt(d.n_embd, name="attn_output.bias")
        cur = g.attn_kv(kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        if il == d.n_layer - 1:
            cur, inp_l, normed = (ggml.get_rows(t, out_ids) for t in (cur, inp_l, normed))
        ffn = g.ffn_seq(normed, d.n_embd, d.n_ff, scale=False)
        inp_l = ggml.binary("ADD", ggml.binary("ADD", cur, ffn), inp_l)
    g.il = OUTPUT_LAYER
    cur = g.norm(inp_l, g.wt(d.n_embd, name="output_norm"), g.wt(d.n_embd, name="output_norm.bias"), rms=False)
    ggml.set_output(cur)
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
    cur = ggml.binary("ADD", cur, g.wt(d.n_vocab, name="output.bias"))
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def build_starcoder(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_starcoder::graph (src/models/starcoder.cpp; gpt2.cpp's is the same): learned position
    embeddings added to the token embeddings, layer norms with biases, the fused QKV with its bias, no RoPE, the
    output projection's bias, a GELU feed-forward of up and down with their biases."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    inp_l = ggml.binary("ADD", inp_l, ggml.get_rows(g.wt(d.n_embd, d.n_ctx_orig, name="position_embd"), pos))
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.wt(d.n_embd, name="attn_norm.bias"), rms=False)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v, fused=True)
        wo, wo_b = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output"), g.wt(d.n_embd, name="attn_output.bias")
        cur = g.attn_kv(kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_l)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"), g.wt(d.n_embd, name="ffn_norm.bias"), rms=False)
        inp_l = ggml.binary("ADD", g.ffn_seq(cur, d.n_embd, d.n_ff, scale=False), ffn_inp)
    return _lm_head(g, d, inp_l, rms=False, norm_bias=True)


def build_gptneox(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_gptneox::graph (src/models/gptneox.cpp): StarCoder's layers with RoPE and without learned
    positions; with use_parallel_residual the feed-forward reads the layer's input beside the attention."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.wt(d.n_embd, name="attn_norm.bias"), rms=False)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v, fused=True)
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo, wo_b = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output"), g.wt(d.n_embd, name="attn_output.bias")
        cur = g.attn_kv(kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = inp_l if d.parallel_residual else ggml.binary("ADD", cur, inp_l)
        normed = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"), g.wt(d.n_embd, name="ffn_norm.bias"), rms=False)
        ffn = g.ffn_seq(normed, d.n_embd, d.n_ff, scale=False)
        if d.parallel_residual:
            inp_l = ggml.binary("ADD", ggml.binary("ADD", ffn, inp_l), cur)
        else:
            inp_l = ggml.binary("ADD", ffn, ffn_inp)
    return _lm_head(g, d, inp_l, rms=False, norm_bias=True)


def build_falcon(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_falcon::graph (src/models/falcon.cpp): attention and a GELU feed-forward in parallel on the
    layer's norm (the attention on a second norm where the layer has one: Falcon-40B), the fused QKV without biases,
    both outputs added to the layer's input."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        attn_norm = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.wt(d.n_embd, name="attn_norm.bias"), rms=False)
        norm_2 = g.opt("attn_norm_2", d.n_embd)
        cur = attn_norm if norm_2 is None else g.norm(inp_l, norm_2, g.opt("attn_norm_2.bias", d.n_embd), rms=False)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v, fused=True)
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        if il == d.n_layer - 1:
            cur, inp_l, attn_norm = (ggml.get_rows(t, out_ids) for t in (cur, inp_l, attn_norm))
        ffn = g.ffn_seq(attn_norm, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", ggml.binary("ADD", ffn, cur), inp_l)
    return _lm_head(g, d, inp_l, rms=False, norm_bias=True)


def build_bloom(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_bloom::graph (src/models/bloom.cpp): the token embeddings layer-normed (the norm pinned to layer
    0), ALiBi without positions, layer norms, the fused QKV and every projection's bias, a GELU feed-forward."""
    return _bloom_mpt(d, r, w, mpt=False)


def build_mpt(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_mpt::graph (src/models/mpt.cpp): BLOOM's layers without the embedding norm, learned positions
    where the file has them (else ALiBi), Q/K layer norms where the file has them (not for a metadata-only model:
    the loader skips attn_q_norm), GELU's output divided by the ffn_act scales where present."""
    return _bloom_mpt(d, r, w, mpt=True)


def _bloom_mpt(d: Dims, r: Reserve, w: Weights, mpt: bool) -> Graph:
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    kv, _ = _kv_inputs(g, d, False)
    pos_embd = g.opt("position_embd", d.n_embd, d.n_ctx_orig) if mpt else None
    if pos_embd is not None:
        inp_l = ggml.binary("ADD", inp_l, ggml.get_rows(pos_embd, g.inp_pos()))
    if not mpt:
        norm_w, norm_b = g.wt(d.n_embd, name="token_embd_norm"), g.wt(d.n_embd, name="token_embd_norm.bias")
        g.il = 0  # build_norm(..., il 0): pinned to the first layer's device
        inp_l = g.norm(inp_l, norm_w, norm_b, rms=False)
        g.il = INPUT_LAYER
    out_ids = g.inp_out_ids()
    qk_norm = mpt and "attn_q_norm" in w.present and not w.all_optional
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.opt("attn_norm.bias", d.n_embd), rms=False)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v, fused=True)
        if qk_norm:
            q = g.norm(ggml.reshape(q, d.head_k * d.n_head, r.n_tokens), g.wt(d.n_embd, name="attn_q_norm"),
                       g.opt("attn_q_norm.bias", d.n_embd), rms=False)  # fmt: skip
            k = g.norm(ggml.reshape(k, d.head_k * d.n_head_kv, r.n_tokens), g.wt(d.n_embd, name="attn_k_norm"),
                       g.opt("attn_k_norm.bias", d.n_embd), rms=False)  # fmt: skip
            q = ggml.reshape(q, d.head_k, d.n_head, r.n_tokens)
            k = ggml.reshape(k, d.head_k, d.n_head_kv, r.n_tokens)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        wo_b = g.opt("attn_output.bias", d.n_embd)
        cur = g.attn_kv(kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_l)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"), g.opt("ffn_norm.bias", d.n_embd), rms=False)
        cur = g.ffn_seq(cur, d.n_embd, d.n_ff, scale=False, act_scales=mpt)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, rms=False, norm_bias=True)


def build_command_r(d: Dims, r: Reserve, w: Weights, cohere2: bool = False) -> Graph:
    """llama_model_command_r::graph (src/models/command-r.cpp): layer norms (not RMS), attention and the
    feed-forward in parallel on the same normed input, both added to the residual; Q/K norms from 64 layers up
    (the loader's condition); the logits scaled by logit_scale. With `cohere2` (cohere2.cpp, Command R7B): the
    iSWA caches, RoPE on the window layers only, no Q/K norms, the feed-forward's scales."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, cohere2)
    qk_norm = d.n_layer >= 64 and not cohere2
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), rms=False)
        ffn_inp = cur
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        use_rope = not cohere2 or d.swa[il]
        if qk_norm:
            q = g.norm(q, g.wt(d.head_k, d.n_head, name="attn_q_norm"), rms=False)
        if use_rope:
            q = ggml.rope(q, pos, None)
        if qk_norm:
            k = g.norm(k, g.wt(d.head_k, d.n_head_kv, name="attn_k_norm"), rms=False)
        if use_rope:
            k = ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        layer_kv = kv_swa if cohere2 and d.swa[il] else kv
        cur = g.attn_kv(layer_kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k,
                        d.head_v, iswa=cohere2)  # fmt: skip
        if il == d.n_layer - 1:  # three row sets kept: the attention's, the residual's and the parallel FFN's input
            cur = ggml.get_rows(cur, out_ids)
            inp_l = ggml.get_rows(inp_l, out_ids)
            ffn_inp = ggml.get_rows(ffn_inp, out_ids)
        attn_out = cur
        cur = g.ffn_par(ffn_inp, d.n_embd, d.n_ff, bias=False, scale=cohere2)
        cur = ggml.binary("ADD", cur, inp_l)
        inp_l = ggml.binary("ADD", cur, attn_out)
    return _lm_head(g, d, inp_l, rms=False, scale=d.logit_scale)


def _mamba2_layer(g: GraphContext, d: Dims, rs: RSInputs, cur: Tensor, il: int) -> Tensor:
    """llm_build_mamba_base::build_mamba2_layer (src/models/mamba-base.cpp) without kept snapshots: the conv state,
    the projections split into z, xBC and dt, the depthwise conv, the scan reading the states itself, the new
    state stored, D skip, the gate, the grouped RMS norm and the output projection."""
    r = g.r
    d_conv, d_inner, d_state, n_group, n_head = d.ssm
    head_dim = d_inner // n_head
    ns, nst = r.n_seqs, r.n_tokens // r.n_seqs
    conv_dim = d_inner + 2 * n_group * d_state
    n_embd_r, n_embd_s = (d_conv - 1) * conv_dim, d_state * d_inner
    conv_all = g.rs_cache(r.type_r, n_embd_r, f"cache_r_l{il}", il)
    ssm_all = g.rs_cache(r.type_s, n_embd_s, f"cache_s_l{il}", il)
    conv = g.rs(rs, conv_all, n_embd_r)
    conv = ggml.reshape(conv, d_conv - 1, conv_dim, ns)
    zxbcdt = g.lora_mm(g.wt(d.n_embd, d_inner + conv_dim + n_head, name="ssm_in"), cur, g.opt("ssm_in.scale", 1))
    zxbcdt = ggml.reshape(zxbcdt, zxbcdt.ne[0], nst, ns)
    nb = (zxbcdt.nb[1], zxbcdt.nb[2])
    z = ggml.view(zxbcdt, (head_dim, n_head, nst, ns), (head_dim * 4, *nb), 0)
    xbc = ggml.view(zxbcdt, (conv_dim, nst, ns), nb, d_inner * 4)
    dt = ggml.view(zxbcdt, (n_head, nst, ns), nb, (2 * d_inner + 2 * n_group * d_state) * 4)
    conv_x = ggml.concat(conv, ggml.transpose(xbc), 0)
    last = ggml.view(conv_x, (d_conv - 1, conv_dim, ns), (conv_x.nb[1], conv_x.nb[2]), nst * conv_x.nb[0])
    g.gf.expand(ggml.cpy(last, ggml.view(conv_all, (n_embd_r, ns), (conv_all.nb[1],), 0)))
    xbc = ggml.ssm_conv(conv_x, g.wt(d_conv, conv_dim, name="ssm_conv1d"))
    xbc = ggml.unary(ggml.binary("ADD", xbc, g.wt(conv_dim, name="ssm_conv1d.bias")))
    x = ggml.view(xbc, (head_dim, n_head, nst, ns), (head_dim * 4, xbc.nb[1], xbc.nb[2]), 0)
    b = ggml.view(xbc, (d_state, n_group, nst, ns), (d_state * 4, xbc.nb[1], xbc.nb[2]), d_inner * 4)
    c = ggml.view(
        xbc, (d_state, n_group, nst, ns), (d_state * 4, xbc.nb[1], xbc.nb[2]), (d_inner + n_group * d_state) * 4
    )
    dt = ggml.binary("ADD", ggml.cont(dt), g.wt(n_head, name="ssm_dt.bias"))
    a = g.wt(1, n_head, name="ssm_a")
    slots = ssm_all.ne[1]

    def scan(states: Tensor, ids: Tensor) -> Tensor:
        return ggml.ssm_scan(ggml.reshape(states, d_state, head_dim, n_head, slots), x, dt, a, b, c, ids, 1)

    y_ssm = g.rs(rs, ssm_all, n_embd_s, scan)
    row = n_embd_s * 4
    x_bytes = x.ne[0] * x.ne[1] * x.ne[2] * x.ne[3] * 4
    src = ggml.view(y_ssm, (n_embd_s, ns, 1), (row, row * ns), x_bytes)
    dst = ggml.view(ssm_all, (n_embd_s, ns, 1), (ssm_all.nb[1], r.rs_size * ssm_all.nb[1]), 0)
    g.gf.expand(ggml.cpy(src, dst))
    y = ggml.view(y_ssm, (head_dim, n_head, nst, ns), (x.nb[1], n_head * x.nb[1], nst * n_head * x.nb[1]), 0)
    y = ggml.binary("ADD", y, ggml.binary("MUL", x, g.wt(1, n_head, name="ssm_d")))
    y = ggml.glu_split(ggml.cont(z), y)
    if g.w.has("ssm_norm"):
        y = ggml.reshape(y, d_inner // n_group, n_group, nst, ns)
        y = g.norm(y, g.wt(d_inner // n_group, n_group, name="ssm_norm"))
    y = ggml.reshape(y, d_inner, nst * ns)
    return g.lora_mm(g.wt(d_inner, d.n_embd, name="ssm_out"), y, g.opt("ssm_out.scale", 1))


def _mamba_layer(g: GraphContext, d: Dims, rs: RSInputs, cur: Tensor, il: int, normed: bool = False) -> Tensor:
    """llm_build_mamba_base::build_mamba_layer (src/models/mamba-base.cpp): Mamba-1 — the conv state, x and z, the
    depthwise conv, x_proj into dt, B and C (RMS-normed for Falcon-Mamba or with Jamba's norm weights), dt_proj,
    the scan with a decay per state and channel, the new state stored, D skip, the gate, out_proj."""
    r = g.r
    d_conv, d_inner, d_state, _n_group, dt_rank = d.ssm
    ns, nst = r.n_seqs, r.n_tokens // r.n_seqs
    n_embd_r, n_embd_s = (d_conv - 1) * d_inner, d_state * d_inner
    conv_all = g.rs_cache(r.type_r, n_embd_r, f"cache_r_l{il}", il)
    ssm_all = g.rs_cache(r.type_s, n_embd_s, f"cache_s_l{il}", il)
    conv = ggml.reshape(g.rs(rs, conv_all, n_embd_r), d_conv - 1, d_inner, ns)
    cur = ggml.reshape(cur, cur.ne[0], nst, ns)
    xz = g.lora_mm(g.wt(d.n_embd, 2 * d_inner, name="ssm_in"), cur, g.opt("ssm_in.scale", 1))
    x = ggml.view(xz, (d_inner, xz.ne[1], xz.ne[2]), (xz.nb[1], xz.nb[2]), 0)
    z = ggml.view(xz, (d_inner, xz.ne[1], xz.ne[2]), (xz.nb[1], xz.nb[2]), d_inner * 4)
    conv_x = ggml.concat(conv, ggml.transpose(x), 0)
    last = ggml.view(conv_x, (d_conv - 1, d_inner, ns), (conv_x.nb[1], conv_x.nb[2]), nst * conv_x.nb[0])
    g.gf.expand(ggml.cpy(last, ggml.view(conv_all, ((d_conv - 1) * d_inner * ns,), (), 0)))
    x = ggml.ssm_conv(conv_x, g.wt(d_conv, d_inner, name="ssm_conv1d"))
    x = ggml.unary(ggml.binary("ADD", x, g.wt(d_inner, name="ssm_conv1d.bias")))
    x_db = ggml.mul_mat(g.wt(d_inner, dt_rank + 2 * d_state, name="ssm_x"), x)
    dt = ggml.view(x_db, (dt_rank, nst, ns), (x_db.nb[1], x_db.nb[2]), 0)
    b = ggml.view(x_db, (d_state, 1, nst, ns), (d_state * 4, x_db.nb[1], x_db.nb[2]), dt_rank * 4)
    c = ggml.view(x_db, (d_state, 1, nst, ns), (d_state * 4, x_db.nb[1], x_db.nb[2]), (dt_rank + d_state) * 4)
    if normed:  # Jamba's loader creates the three norms' weights
        dt, b, c = (g.norm(t, g.wt(t.ne[0], name=name)) for t, name in ((dt, "ssm_dt_norm"), (b, "ssm_b_norm"),
                                                                        (c, "ssm_c_norm")))  # fmt: skip
    elif d.ssm_dt_b_c_rms:
        dt, b, c = (g.norm(t, None) for t in (dt, b, c))
    else:
        dt = ggml.cont(dt)
    dt = ggml.mul_mat(g.wt(dt_rank, d_inner, name="ssm_dt"), dt)
    dt = ggml.binary("ADD", dt, g.wt(d_inner, name="ssm_dt.bias"))
    cur = x
    x = ggml.reshape(x, 1, d_inner, nst, ns)
    a = g.wt(d_state, d_inner, name="ssm_a")

    def scan(states: Tensor, ids: Tensor) -> Tensor:
        return ggml.ssm_scan(ggml.reshape(states, d_state, 1, d_inner, r.rs_size), x, dt, a, b, c, ids, 1)

    y_ssm = g.rs(rs, ssm_all, n_embd_s, scan)
    g.gf.expand(ggml.cpy(ggml.view(y_ssm, (n_embd_s * ns,), (), x.nb[3] * x.ne[3]),
                         ggml.view(ssm_all, (n_embd_s * ns,), (), 0)))  # fmt: skip
    y = ggml.view(y_ssm, (d_inner, nst, ns), (x.nb[2], x.nb[3]), 0)
    y = ggml.binary("ADD", y, ggml.binary("MUL", cur, g.wt(d_inner, name="ssm_d")))
    y = ggml.glu_split(ggml.cont(z), y)
    cur = g.lora_mm(g.wt(d_inner, d.n_embd, name="ssm_out"), y, g.opt("ssm_out.scale", 1))
    return ggml.reshape(cur, cur.ne[0], nst * ns)


def build_mamba2(d: Dims, r: Reserve, w: Weights, mamba1: bool = False) -> Graph:
    """llama_model_mamba::graph (src/models/mamba.cpp): every layer a Mamba-2 mixer (or, `mamba1`, a Mamba-1
    mixer) and a residual."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        cur = (_mamba_layer if mamba1 else _mamba2_layer)(g, d, rs, cur, il)
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        inp_l = ggml.binary("ADD", cur, inp_l)
    return _lm_head(g, d, inp_l)


def build_granite_hybrid(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_granite_hybrid::graph (src/models/granite-hybrid.cpp): Mamba-2 layers and attention layers
    (RoPE unless the file switches it off), each followed by the SwiGLU or MoE feed-forward (with a shared expert
    where the model has one), Granite's embedding, residual and logit multipliers."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab, scale=1.0 if d.embedding_scale else 0.0)
    rs = g.rs_inp()
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv) if not all(d.recurrent) else None
    out_ids = g.inp_out_ids()
    pos = g.inp_pos() if d.rope else None
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.recurrent[il] or kv is None:
            cur = _mamba2_layer(g, d, rs, cur, il)
        else:
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
            if pos is not None:
                factors = g.opt("rope_freqs", d.head_k // 2)
                q = ggml.rope(q, pos, factors)
                k = ggml.rope(k, pos, factors)
            wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv, il, wo, g.opt("attn_output.bias", d.n_embd), g.opt("attn_output.scale", 1), q, k, v,
                            d.n_head_kv, d.head_k, d.head_v)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        if d.residual_scale:
            cur = ggml.unary(cur, "SCALE")
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if d.n_expert:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, w_scale=d.expert_weights_scale,
                            scales=False)  # fmt: skip
            if d.n_ff_shexp:
                shexp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp, bias=False, scale=False, suffix="_shexp")
                cur = ggml.binary("ADD", moe, shexp)
            else:
                cur = moe
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=True, scale=False)
        if d.residual_scale:
            cur = ggml.unary(cur, "SCALE")
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, scale=d.logit_scale)


def build_falcon_h1(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_falcon_h1::graph (src/models/falcon-h1.cpp): in every layer attention and a Mamba-2 mixer side by
    side on the same norm (built twice), their sum added to the residual, then the SwiGLU feed-forward."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    rs = g.rs_inp()
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        norm_w = g.wt(d.n_embd, name="attn_norm")
        cur = g.norm(inp_l, norm_w)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = ggml.rope(q, pos, None)
        k = ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        attn_out = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur = g.norm(inp_l, norm_w)
        ssm_out = _mamba2_layer(g, d, rs, cur, il)
        cur = ggml.binary("ADD", attn_out, ssm_out)
        inp_sa = ggml.binary("ADD", cur, inp_sa)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        cur = g.norm(inp_sa, g.wt(d.n_embd, name="ffn_norm"))
        cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=True, scale=False)
        inp_l = ggml.binary("ADD", cur, inp_sa)
    return _lm_head(g, d, inp_l)


def build_jamba(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_jamba::graph (src/models/jamba.cpp): Mamba-1 layers (with the dt / B / C norm weights) and
    attention layers without RoPE; the experts (softmax, not renormalised) where a layer has its router, else a
    SwiGLU feed-forward."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv) if not all(d.recurrent) else None
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.recurrent[il] or kv is None:
            cur = _mamba_layer(g, d, rs, cur, il, normed=True)
        else:
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
            wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k,
                            d.head_v)  # fmt: skip
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", inp_l, cur)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if d.n_expert and il not in d.dense_layers:
            cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, norm_w=False,
                            w_scale=d.expert_weights_scale, scales=False)  # fmt: skip
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", ffn_inp, cur)
    return _lm_head(g, d, inp_l)


def build_llama4(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_llama4::graph<iswa> (src/models/llama4.cpp): chunked attention on three layers of four (the
    fourth without RoPE, Q scaled by the temperature input instead), the L2 norm of Q and K on RoPE layers (not
    for the 128-expert model), sigmoid-gated experts on every interleave_moe_layer_step-th layer plus a shared
    expert, a plain SwiGLU elsewhere."""
    g = GraphContext(r, w)
    iswa = any(d.swa)
    no_rope_step = 4 if iswa else d.n_layer
    kq_norm = d.n_expert != 128
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    attn_scale = ggml.inp("f32", (1, 1, r.n_tokens), "attn_scale")  # build_inp_attn_scale
    kv, kv_swa = _kv_inputs(g, d, iswa)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        use_rope = no_rope_step > 0 and (il + 1) % no_rope_step != 0
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        factors = g.opt("rope_freqs", d.head_k // 2)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        if use_rope:
            q = ggml.rope(q, pos, factors)
            k = ggml.rope(k, pos, factors)
        else:
            q = ggml.binary("MUL", q, attn_scale)
        if use_rope and kq_norm:
            q = ggml.unary(q, "RMS_NORM")
            k = ggml.unary(k, "RMS_NORM")
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        layer_kv = kv_swa if iswa and d.swa[il] else kv
        cur = g.attn_kv(layer_kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k,
                        d.head_v, iswa=iswa)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if d.moe_layer_step > 0 and (il + 1) % d.moe_layer_step == 0:
            n_ff_exp = d.n_ff_exp or d.n_ff
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, n_ff_exp, gating="sigmoid", norm_w=False,
                            w_scale=d.expert_weights_scale, scales=False, weight_before=True,
                            select_logits=True)  # fmt: skip
            shexp = g.ffn_par(cur, d.n_embd, n_ff_exp, bias=False, scale=False, suffix="_shexp")
            cur = ggml.binary("ADD", moe, shexp)
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def _delta_net(g: GraphContext, ssm_all: Tensor, n_embd_s: int, q: Tensor, k: Tensor, v: Tensor, gate: Tensor,
               beta: Tensor, state: Tensor, flat: bool = False) -> Tensor:  # fmt: skip
    """build_recurrent_attn without kept snapshots (delta-net-base.cpp): the fused delta net (a gate per head:
    Gated DeltaNet; per channel: KDA), its new state stored (`flat`: into a 1-d view, as kimi-linear.cpp does)."""
    s_v, h_v, n_tok, ns = v.ne
    res = ggml.gated_delta_net(q, k, v, gate, beta, state, 1)
    f = 4
    out = ggml.view(res, (s_v, h_v, n_tok, ns), (f * s_v, f * s_v * h_v, f * s_v * h_v * n_tok), 0)
    new_state = ggml.view(res, (s_v, s_v, h_v, ns), (f * s_v, f * s_v * s_v, f * s_v * s_v * h_v),
                          f * s_v * h_v * n_tok * ns)  # fmt: skip
    dst = (
        ggml.view(ssm_all, (n_embd_s * ns,), (), 0) if flat else ggml.view(ssm_all, (n_embd_s, ns), (ssm_all.nb[1],), 0)
    )
    g.gf.expand(ggml.cpy(new_state, dst))
    return out


def _l2_norm(x: Tensor) -> Tensor:
    """build_gdn_l2_norm: a scaled RMS norm (no weight, no callback)."""
    return ggml.unary(ggml.unary(x, "RMS_NORM"), "SCALE")


class _Qwen3Next:
    """llama_model_qwen3next::graph (src/models/qwen3next.cpp over delta-net-base.cpp): gated delta-net layers
    (the fused GATED_DELTA_NET op, which llama.cpp's probe keeps on where the layer's device runs it) and gated
    full-attention layers, each followed by the routed experts plus a sigmoid-gated shared expert."""

    def __init__(self, d: Dims, r: Reserve, w: Weights) -> None:
        self.d, self.r, self.w = d, r, w
        self.g = GraphContext(r, w)
        d_conv, d_inner, d_state, n_group, dt_rank = d.ssm
        self.head_k, self.nk, self.nv = d_state, n_group, dt_rank
        self.head_v = d_inner // dt_rank
        self.n_seqs = r.n_seqs
        self.n_seq_tokens = r.n_tokens // r.n_seqs
        self.conv_channels = d_inner + 2 * n_group * d_state
        self.n_embd_r = (d_conv - 1) * self.conv_channels
        self.n_embd_s = d_state * d_inner
        self.d_conv = d_conv

    def build(self) -> Graph:
        d, g = self.d, self.g
        inp_l = g.inp_embd(d.n_embd, d.n_vocab)
        rs = g.rs_inp()
        kv = g.attn_inp_kv(self.r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv)
        pos = g.inp_pos(4 if d.mrope else 1)
        out_ids = g.inp_out_ids()
        for il in g.layers(d.n_layer):
            g.il = il
            inp_sa = inp_l
            cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
            g.gf.expand(cur)
            cur = self.linear_attn(rs, cur, il) if d.recurrent[il] else self.attn(kv, cur, pos, il)
            cur = ggml.binary("ADD", cur, inp_sa)
            ffn_residual = cur
            cur = g.norm(cur, g.wt(d.n_embd, name="attn_post_norm"))
            cur = self.ffn(cur)
            inp_l = ggml.binary("ADD", cur, ffn_residual)
        return _lm_head(g, d, inp_l, out_ids=out_ids)

    def attn(self, kv: KVInputs, cur: Tensor, pos: Tensor, il: int) -> Tensor:
        """build_layer_attn: Q and its gate from one projection, Q/K norms, RoPE, attention, the sigmoid gate."""
        d, g = self.d, self.g
        hd, n_tok = d.head_k, self.r.n_tokens
        outs = g.projections(cur, d.n_embd, (("attn_q", 2 * hd * d.n_head), ("attn_k", hd * d.n_head_kv),
                                             ("attn_v", hd * d.n_head_kv)))  # fmt: skip
        q_full = ggml.reshape(outs[0], 2 * hd, d.n_head, n_tok, 1)
        strides = (q_full.nb[1], q_full.nb[2], q_full.nb[3])
        q = ggml.view(q_full, (hd, d.n_head, n_tok, 1), strides, 0)
        gate = ggml.view(q_full, (hd, d.n_head, n_tok, 1), strides, hd * 4)
        k = ggml.reshape(outs[1], hd, d.n_head_kv, n_tok)
        v = ggml.reshape(outs[2], hd, d.n_head_kv, n_tok)
        q = g.norm(q, g.wt(hd, name="attn_q_norm"))
        k = g.norm(k, g.wt(hd, name="attn_k_norm"))
        q = ggml.rope(q, pos, None)
        k = ggml.rope(k, pos, None)
        cur = g.attn_kv(kv, il, None, None, None, q, k, v, d.n_head_kv, hd, hd)
        gate = ggml.unary(ggml.cont(gate, hd * d.n_head, n_tok))
        cur = ggml.binary("MUL", cur, gate)
        return g.lora_mm(g.wt(hd * d.n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))

    def qkvz(self, cur: Tensor) -> tuple[Tensor, Tensor]:
        """build_qkvz: the fused attn_qkv / attn_gate pair, or the legacy ssm_in split into its four parts."""
        d, g = self.d, self.g
        hk, hv, nk, nv = self.head_k, self.head_v, self.nk, self.nv
        nst, ns = self.n_seq_tokens, self.n_seqs
        key_dim, value_dim = hk * nk, hv * nv
        if self.w.has("attn_qkv"):
            mixed = ggml.mul_mat(g.wt(d.n_embd, 2 * key_dim + value_dim, name="attn_qkv"), cur)
            mixed = ggml.reshape(mixed, mixed.ne[0], nst, ns)
            z = ggml.mul_mat(g.wt(d.n_embd, value_dim, name="attn_gate"), cur)
            return mixed, z
        qkvz = ggml.mul_mat(g.wt(d.n_embd, 2 * key_dim + 2 * value_dim, name="ssm_in"), cur)
        per = hv * nv // nk
        qkvz = ggml.reshape(qkvz, 2 * hk + 2 * per, nk, nst, ns)
        strides = (qkvz.nb[1], qkvz.nb[2], qkvz.nb[3])
        query = ggml.view(qkvz, (hk, nk, nst, ns), strides, 0)
        key = ggml.view(qkvz, (hk, nk, nst, ns), strides, hk * 4)
        value = ggml.view(qkvz, (per, nk, nst, ns), strides, 2 * hk * 4)
        z = ggml.cont(ggml.view(qkvz, (per, nk, nst, ns), strides, (2 * hk + per) * 4))
        q_flat = ggml.cont(query, key_dim, nst, ns)
        k_flat = ggml.cont(key, key_dim, nst, ns)
        v_flat = ggml.cont(value, value_dim, nst, ns)
        return ggml.concat(ggml.concat(q_flat, k_flat, 0), v_flat, 0), z

    def linear_attn(self, rs: RSInputs, cur: Tensor, il: int) -> Tensor:
        """build_layer_attn_linear: projections, beta and the decay gate, the conv state, the delta net, the
        gated norm and the output projection."""
        d, g, r = self.d, self.g, self.r
        hk, hv, nk, nv = self.head_k, self.head_v, self.nk, self.nv
        nst, ns = self.n_seq_tokens, self.n_seqs
        qkv_mixed, z = self.qkvz(cur)
        ba = ggml.mul_mat(g.wt(d.n_embd, 2 * nv, name="ssm_ba"), cur)
        ba = ggml.reshape(ba, 2 * nv // nk, nk, nst, ns)
        strides = (ba.nb[1], ba.nb[2], ba.nb[3])
        b = ggml.view(ba, (nv // nk, nk, nst, ns), strides, 0)
        a = ggml.view(ba, (nv // nk, nk, nst, ns), strides, nv // nk * 4)
        beta = ggml.unary(ggml.cont(b))
        alpha = ggml.cont(a, nv, nst, ns)
        alpha = ggml.binary("ADD", alpha, g.wt(nv, name="ssm_dt.bias"))
        gate = ggml.binary("MUL", ggml.unary(alpha), g.wt(nv, name="ssm_a"))
        beta = ggml.reshape(beta, 1, nv, nst, ns)
        gate = ggml.reshape(gate, 1, nv, nst, ns)
        conv_all = g.rs_cache(r.type_r, self.n_embd_r, f"cache_r_l{il}", il)
        ssm_all = g.rs_cache(r.type_s, self.n_embd_s, f"cache_s_l{il}", il)
        conv_input = self.conv_state(rs, conv_all, qkv_mixed)
        state = g.rs(rs, ssm_all, self.n_embd_s)
        state = ggml.reshape(state, hv, hv, nv, ns)
        conv = ggml.unary(ggml.ssm_conv(conv_input, g.wt(self.d_conv, self.conv_channels, name="ssm_conv1d")))
        row = ggml.row_size("f32", self.conv_channels)
        strides4 = (hk * 4, row, row * nst)
        q = ggml.view(conv, (hk, nk, nst, ns), strides4, 0)
        k = ggml.view(conv, (hk, nk, nst, ns), strides4, hk * nk * 4)
        v = ggml.view(conv, (hv, nv, nst, ns), (hv * 4, row, row * nst), 2 * hk * nk * 4)
        q, k = _l2_norm(q), _l2_norm(k)
        if nk != nv:
            rf = nv // nk
            q = ggml.repeat(ggml.reshape(q, hk, 1, nk, nst * ns), hk, rf, nk, nst * ns)
            k = ggml.repeat(ggml.reshape(k, hk, 1, nk, nst * ns), hk, rf, nk, nst * ns)
            q = ggml.reshape(q, hk, nk * rf, nst, ns)
            k = ggml.reshape(k, hk, nk * rf, nst, ns)
        out = self.recurrent_attn(ssm_all, q, k, v, gate, beta, state)
        z = ggml.reshape(z, hv, nv, nst, ns)
        normed = g.norm(out, g.wt(hv, name="ssm_norm"))
        out = ggml.binary("MUL", normed, ggml.unary(z))
        out = ggml.reshape(out, hv * nv, nst, ns)
        cur = ggml.mul_mat(g.wt(hv * nv, d.n_embd, name="ssm_out"), out)
        return ggml.reshape(cur, d.n_embd, nst * ns)

    def conv_state(self, rs: RSInputs, conv_all: Tensor, qkv_mixed: Tensor) -> Tensor:
        """build_conv_state (n_rs_seq 0): the conv states before the batch, its last d_conv - 1 columns stored."""
        g, ns = self.g, self.n_seqs
        states = g.rs(rs, conv_all, self.n_embd_r)
        states = ggml.reshape(states, self.d_conv - 1, self.conv_channels, ns)
        conv_input = ggml.concat(states, ggml.transpose(qkv_mixed), 0)
        last = ggml.view(conv_input, (self.d_conv - 1, self.conv_channels, ns), (conv_input.nb[1], conv_input.nb[2]),
                         ggml.row_size(conv_input.type, conv_input.ne[0] - states.ne[0]))  # fmt: skip
        update = ggml.view(conv_all, (self.n_embd_r, ns), (conv_all.nb[1],), 0)
        g.gf.expand(ggml.cpy(last, update))
        return conv_input

    def recurrent_attn(self, ssm_all: Tensor, q: Tensor, k: Tensor, v: Tensor, gate: Tensor, beta: Tensor,
                       state: Tensor) -> Tensor:  # fmt: skip
        return _delta_net(self.g, ssm_all, self.n_embd_s, q, k, v, gate, beta, state)

    def ffn(self, cur: Tensor) -> Tensor:
        """build_layer_ffn: the routed experts plus the shared expert gated by a sigmoid."""
        d, g = self.d, self.g
        if not d.n_expert:  # Qwen3.5 dense
            return g.ffn_par(cur, d.n_embd, d.n_ff, bias=False)
        moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff // d.n_expert_used,
                        w_scale=d.expert_weights_scale, gate_up=self.w.has("ffn_gate_up_exps"))  # fmt: skip
        shexp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp or d.n_ff, bias=False, suffix="_shexp")
        shared_gate = ggml.unary(g.lora_mm(g.wt(d.n_embd, name="ffn_gate_inp_shexp"), cur))
        shexp = ggml.binary("MUL", shexp, shared_gate)
        return ggml.binary("ADD", moe, shexp)


class _Qwen35(_Qwen3Next):
    """llama_model_qwen35 / qwen35moe::graph (src/models/qwen35.cpp, qwen35moe.cpp): Qwen3-Next's layout with
    Q and its gate viewed in place, multi-section RoPE, the fused projections always (with their scales), beta and
    alpha from projections of their own, no repeat of Q / K for the fused delta net, and a dense SwiGLU (qwen35)."""

    beta_kind = ""  # the unary functions of beta and of the output gate, where a backend's rules read them
    gate_kind = ""

    def attn(self, kv: KVInputs, cur: Tensor, pos: Tensor, il: int) -> Tensor:
        d, g = self.d, self.g
        hd, n_tok = d.head_k, self.r.n_tokens
        outs = g.projections(cur, d.n_embd, (("attn_q", 2 * hd * d.n_head), ("attn_k", hd * d.n_head_kv),
                                             ("attn_v", hd * d.n_head_kv)))  # fmt: skip
        q_full = outs[0]
        strides = (4 * hd * 2, 4 * hd * 2 * d.n_head)
        q = g.norm(ggml.view(q_full, (hd, d.n_head, n_tok), strides, 0), g.wt(hd, name="attn_q_norm"))
        k = g.norm(ggml.reshape(outs[1], hd, d.n_head_kv, n_tok), g.wt(hd, name="attn_k_norm"))
        gate = ggml.cont(ggml.view(q_full, (hd, d.n_head, n_tok), strides, 4 * hd), hd * d.n_head, n_tok)
        v = ggml.reshape(outs[2], hd, d.n_head_kv, n_tok)
        q = ggml.rope(q, pos, None)
        k = ggml.rope(k, pos, None)
        cur = g.attn_kv(kv, il, None, None, None, q, k, v, d.n_head_kv, hd, hd)
        cur = ggml.binary("MUL", cur, ggml.unary(gate))
        return g.lora_mm(g.wt(hd * d.n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))

    def linear_attn(self, rs: RSInputs, cur: Tensor, il: int) -> Tensor:
        d, g, r = self.d, self.g, self.r
        hk, hv, nk, nv = self.head_k, self.head_v, self.nk, self.nv
        nst, ns = self.n_seq_tokens, self.n_seqs
        mixed = g.lora_mm(g.wt(d.n_embd, 2 * hk * nk + hv * nv, name="attn_qkv"), cur, g.opt("attn_qkv.scale", 1))
        mixed = ggml.reshape(mixed, mixed.ne[0], nst, ns)
        z = g.lora_mm(g.wt(d.n_embd, hv * nv, name="attn_gate"), cur, g.opt("attn_gate.scale", 1))
        beta = g.lora_mm(g.wt(d.n_embd, nv, name="ssm_beta"), cur, g.opt("ssm_beta.scale", 1))
        beta = ggml.unary(ggml.reshape(beta, 1, nv, nst, ns), kind=self.beta_kind)
        alpha = g.lora_mm(g.wt(d.n_embd, nv, name="ssm_alpha"), cur, g.opt("ssm_alpha.scale", 1))
        alpha = ggml.binary("ADD", ggml.reshape(alpha, nv, nst, ns), g.wt(nv, name="ssm_dt.bias"))
        gate = ggml.binary("MUL", ggml.unary(alpha), g.wt(nv, name="ssm_a"))
        gate = ggml.reshape(gate, 1, nv, nst, ns)
        conv_all = g.rs_cache(r.type_r, self.n_embd_r, f"cache_r_l{il}", il)
        ssm_all = g.rs_cache(r.type_s, self.n_embd_s, f"cache_s_l{il}", il)
        conv_input = self.conv_state(rs, conv_all, mixed)
        state = ggml.reshape(g.rs(rs, ssm_all, self.n_embd_s), hv, hv, nv, ns)
        conv = ggml.unary(ggml.ssm_conv(conv_input, g.wt(self.d_conv, self.conv_channels, name="ssm_conv1d")))
        row = ggml.row_size("f32", self.conv_channels)
        q = ggml.view(conv, (hk, nk, nst, ns), (hk * 4, row, row * nst), 0)
        k = ggml.view(conv, (hk, nk, nst, ns), (hk * 4, row, row * nst), hk * nk * 4)
        v = ggml.view(conv, (hv, nv, nst, ns), (hv * 4, row, row * nst), 2 * hk * nk * 4)
        q, k = _l2_norm(q), _l2_norm(k)
        out = self.recurrent_attn(ssm_all, q, k, v, gate, beta, state)
        normed = g.norm(out, g.wt(hv, name="ssm_norm"))
        out = ggml.binary("MUL", normed, ggml.unary(ggml.reshape(z, hv, nv, nst, ns), kind=self.gate_kind))
        out = ggml.reshape(out, hv * nv, nst, ns)
        cur = g.lora_mm(g.wt(hv * nv, d.n_embd, name="ssm_out"), out, g.opt("ssm_out.scale", 1))
        return ggml.reshape(cur, d.n_embd, nst * ns)


class _Qwen4Exp(_Qwen35):
    """llama_model_qwen4exp::graph (src/models/qwen4exp.cpp, marked there for reimplementation): hc residual
    streams mixed by low-rank sigmoid gates (the fused DSV4_HC_PRE / DSV4_HC_POST ops on the CPU; the output's mixer
    op by op), PLE n-gram embeddings gated into the streams with a dilated causal conv over a recurrent history,
    Qwen3.5's gated delta net with a sigmoid output gate, gated full attention restricted by QSA (each layer with a
    compress ratio scores mean-pooled blocks of its indexer cache and attends the top blocks and the tail), and
    Qwen3-Next's experts."""

    beta_kind = "sigmoid"  # build_layer_attn_linear: Qwen3.5's gated delta net, the output gated by a sigmoid
    gate_kind = "sigmoid"

    def __init__(self, d: Dims, r: Reserve, w: Weights) -> None:
        super().__init__(d, r, w)
        self.rows: dict[int, Tensor] = {}
        self.qsa: dict[int, tuple[Tensor, Tensor, Tensor, Tensor, Tensor, bool]] = {}

    def build(self) -> Graph:
        d, g, r = self.d, self.g, self.r
        hc, n_tok = d.hc, r.n_tokens
        inp = g.inp_embd(d.n_embd, d.n_vocab)
        g.gf.expand(inp)
        rs = g.rs_inp()
        kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv)
        pos = g.inp_pos(4)
        out_ids = g.inp_out_ids()
        n_heads, head_dim = d.ple[0], d.ple[1]
        ple_emb: Tensor | None = None
        if n_heads:
            rows = ggml.inp("i32", (n_heads * n_tok,), "ple_rows")
            table = g.wt(head_dim, 1, name="per_layer_token_embd")
            ple_emb = ggml.reshape(ggml.get_rows(table, rows), head_dim * n_heads, n_tok)
            g.gf.expand(ple_emb)
        res = ggml.repeat(ggml.reshape(inp, d.n_embd, 1, n_tok), d.n_embd, hc, n_tok, 1)
        for il in g.layers(d.n_layer):
            g.il = il
            if ple_emb is not None and d.ple_layers[il]:
                res = self.ple(rs, ple_emb, res, il)
            cur, inject = self.hc_mix(res, "attn", il)
            g.gf.expand(cur)
            cur = self.linear_attn(rs, cur, il) if d.recurrent[il] else self.qsa_attn(kv, cur, pos, il)
            if il == d.n_layer - 1:
                cur = ggml.get_rows(cur, out_ids)
                inject = ggml.get_rows(inject, out_ids)
                flat = ggml.get_rows(ggml.reshape(res, d.n_embd * hc, res.ne[2]), out_ids)
                res = ggml.reshape(flat, d.n_embd, hc, flat.ne[1])
            res = self.hc_combine(res, cur, inject)
            cur, inject = self.hc_mix(res, "ffn", il)
            res = self.hc_combine(res, self.ffn(cur), inject)
        g.il = OUTPUT_LAYER
        cur, _ = self.hc_mix(res, "head", -1)
        ggml.set_output(cur)
        cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
        ggml.set_output(cur)
        g.gf.expand(cur)
        return g.gf

    def hc_mix(self, x: Tensor, stage: str, il: int) -> tuple[Tensor, Tensor]:
        """build_hc_mix: the streams RMS-normed by a gamma per stream, a low-rank SiLU gate, the gated streams'
        mean (fused where il >= 0) and the scatter weights for the combine (not for the output's mixer)."""
        g, d = self.g, self.d
        hc, n_embd, nt = d.hc, d.n_embd, x.ne[2]
        dim, prefix = hc * n_embd, ("output_" if il < 0 else "") + f"hc_{stage}"
        xn = ggml.binary("MUL", ggml.unary(x, "RMS_NORM"), g.wt(n_embd, hc, name=f"{prefix}_norm"))
        xn = ggml.reshape(xn, dim, nt)
        lo = ggml.mul_mat(g.wt(dim, d.hc_low_rank, name=f"{prefix}_down"), xn)
        lo = ggml.unary(ggml.unary(lo, "SCALE"))
        gate = ggml.mul_mat(g.wt(d.hc_low_rank, dim, name=f"{prefix}_up"), lo)
        if il >= 0:
            mixed = ggml.new("f32", (n_embd, nt), "DSV4_HC_PRE",
                             (ggml.reshape(xn, n_embd, hc, nt), ggml.reshape(gate, n_embd, hc, nt)))  # fmt: skip
            inject = ggml.mul_mat(g.wt(dim, hc, name=f"{prefix}_inject"), xn)
            return mixed, inject
        gated = ggml.reshape(ggml.binary("MUL", xn, ggml.unary(gate, kind="sigmoid")), n_embd, hc, nt)
        row = ggml.row_size(gated.type, n_embd)
        mixed = ggml.cont(ggml.view(gated, (n_embd, nt), (row * hc,), 0))
        for c in range(1, hc):
            mixed = ggml.binary("ADD", mixed, ggml.view(gated, (n_embd, nt), (row * hc,), row * c))
        return ggml.unary(mixed, "SCALE"), xn

    def hc_combine(self, residual: Tensor, block_out: Tensor, inject: Tensor) -> Tensor:
        """build_hc_combine (fused): each stream adds the block's output by its 2·sigmoid scatter weight."""
        w = ggml.unary(ggml.unary(ggml.unary(inject, "SCALE"), kind="sigmoid"), "SCALE")
        return ggml.new("f32", (self.d.n_embd, self.d.hc, residual.ne[2]), "DSV4_HC_POST", (block_out, residual, w))

    def conv_state_at(self, rs: RSInputs, states_all: Tensor, x: Tensor, cols: int, channels: int) -> Tensor:
        """build_conv_state_at (n_rs_seq 0: one rollback slot): the row's history gathered once per cache
        tensor, the batch appended, its last columns stored back."""
        g, ns = self.g, self.n_seqs
        row_total = states_all.ne[0]
        rows = self.rows.get(id(states_all))
        if rows is None:
            rows = self.rows[id(states_all)] = g.rs(rs, states_all, row_total)
        state = ggml.reshape(rows, cols, channels, ns)
        conv_input = ggml.concat(state, ggml.transpose(x), 0)
        s_idx = max(0, conv_input.ne[0] - cols)
        tail = ggml.view(conv_input, (cols, channels, ns), (conv_input.nb[1], conv_input.nb[2]),
                         ggml.row_size(conv_input.type, s_idx))  # fmt: skip
        dst = ggml.view(states_all, (cols * channels, ns), (states_all.nb[1],), 0)
        g.gf.expand(ggml.cpy(ggml.cont(tail), dst))
        return conv_input

    def conv_state(self, rs: RSInputs, conv_all: Tensor, qkv_mixed: Tensor) -> Tensor:
        return self.conv_state_at(rs, conv_all, qkv_mixed, self.d_conv - 1, self.conv_channels)

    def qsa_attn(self, kv: KVInputs, cur: Tensor, pos: Tensor, il: int) -> Tensor:
        """build_layer_attn: the QSA top-k first (the layers with a compress ratio, over the indexer cache), then
        Qwen3.5's gated attention, restricted to the selected cells where there is a top-k."""
        d, g = self.d, self.g
        hd, n_tok = d.head_k, self.r.n_tokens
        ratio = d.compress[il] if d.compress else 0
        top_k = self.qsa_top_k(kv, cur, pos, il, ratio) if ratio > 0 and d.indexer[1] else None
        q_full = g.lora_mm(g.wt(d.n_embd, 2 * hd * d.n_head, name="attn_q"), cur, g.opt("attn_q.scale", 1))
        strides = (4 * hd * 2, 4 * hd * 2 * d.n_head)
        q = g.norm(ggml.view(q_full, (hd, d.n_head, n_tok), strides, 0), g.wt(hd, name="attn_q_norm"))
        k = g.lora_mm(g.wt(d.n_embd, hd * d.n_head_kv, name="attn_k"), cur, g.opt("attn_k.scale", 1))
        v = g.lora_mm(g.wt(d.n_embd, hd * d.n_head_kv, name="attn_v"), cur, g.opt("attn_v.scale", 1))
        k = g.norm(ggml.reshape(k, hd, d.n_head_kv, n_tok), g.wt(hd, name="attn_k_norm"))
        gate = ggml.cont(ggml.view(q_full, (hd, d.n_head, n_tok), strides, 4 * hd), hd * d.n_head, n_tok)
        v = ggml.reshape(v, hd, d.n_head_kv, n_tok)
        q = ggml.rope(q, pos, None)
        k = ggml.rope(k, pos, None)
        if top_k is None:
            cur = g.attn_kv(kv, il, None, None, None, q, k, v, d.n_head_kv, hd, hd)
        else:
            cur = self.attn_qsa(kv, il, q, k, v, top_k)
        cur = ggml.binary("MUL", cur, ggml.unary(gate, kind="sigmoid"))
        return g.lora_mm(g.wt(hd * d.n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))

    def qsa_top_k(self, kv: KVInputs, cur: Tensor, pos: Tensor, il: int, ratio: int) -> Tensor:
        """build_qsa_top_k: each token's raw indexer key cached, every block of `ratio` cells mean-pooled,
        normed and rotated, scored by the rectified heads of the indexer query, the per-block bias and the mask
        added per cell, and the top indexer_top_k + ratio - 1 cells kept."""
        d, g, r = self.d, self.g, self.r
        n_ih, idx_dim, top = d.indexer
        n_kv, n_stream, n_tok = r.kv_size, r.n_stream, r.n_tokens
        n_blocks = -(-n_kv // ratio)
        n_tps = n_tok // n_stream
        mask = kv.mask
        blk_bias = mask.ne[0] == n_kv and mask.ne[1] == n_tps and mask.ne[3] == n_stream
        inputs = self.qsa.get(ratio)
        if inputs is None:
            inputs = self.qsa[ratio] = (
                ggml.inp("i64", (n_tok,), "qsa_k_idxs"),
                ggml.inp("i32", (n_kv, n_stream), "qsa_cell_blk"),
                ggml.inp("i32", (ratio * n_blocks, n_stream), "qsa_blk_cells"),
                ggml.inp("i32", (4 * n_blocks * n_stream,), "qsa_blk_pos"),
                ggml.inp("f32", (n_blocks if blk_bias else n_kv, n_tps, n_stream), "qsa_bias"),
                blk_bias,
            )
        k_idxs, cell_blk, blk_cells, blk_pos, bias, blk_bias = inputs
        k_raw = ggml.reshape(ggml.mul_mat(g.wt(d.n_embd, idx_dim, name="indexer.k_proj"), cur), idx_dim, 1, n_tok)
        cache = g.kv_cache(r.type_k, idx_dim, n_kv, f"cache_idx_k_l{il}", il)
        g.gf.expand(g.cpy_k(cache, k_raw, k_idxs))
        k_all = g.get_k(cache, idx_dim, 1)
        k_all = ggml.view(k_all, (idx_dim, n_kv, n_stream), (k_all.nb[2], k_all.nb[3]), 0)
        members = ggml.reshape(ggml.get_rows(k_all, blk_cells), idx_dim, ratio, n_blocks, n_stream)
        pooled: Tensor | None = None
        for i in range(ratio):
            piece = ggml.cont(ggml.view(members, (idx_dim, n_blocks, n_stream), (members.nb[2], members.nb[3]),
                                        i * members.nb[1]))  # fmt: skip
            pooled = piece if pooled is None else ggml.binary("ADD", pooled, piece)
        assert pooled is not None
        pooled = ggml.reshape(ggml.unary(pooled, "SCALE"), idx_dim, n_blocks * n_stream, 1)
        pooled = g.norm(pooled, g.wt(idx_dim, name="indexer.k_norm"))
        pooled = ggml.rope(ggml.reshape(pooled, idx_dim, 1, n_blocks * n_stream), blk_pos, None)
        pooled = ggml.reshape(pooled, idx_dim, n_blocks, n_stream)
        q = ggml.mul_mat(g.wt(d.n_embd, n_ih * idx_dim, name="indexer.q_proj"), cur)
        q = g.norm(ggml.reshape(q, idx_dim, n_ih, n_tok), g.wt(idx_dim, name="indexer.q_norm"))
        q = ggml.rope(q, pos, None)
        score = ggml.mul_mat(pooled, ggml.reshape(q, idx_dim, n_ih * n_tps, n_stream))
        score = ggml.unary(ggml.reshape(score, n_blocks, n_ih, n_tps, n_stream))
        summed: Tensor | None = None
        for h in range(n_ih):
            piece = ggml.view(score, (n_blocks, n_tps, n_stream), (score.nb[2], score.nb[3]), h * score.nb[1])
            summed = ggml.cont(piece) if summed is None else ggml.binary("ADD", summed, piece)
        assert summed is not None
        score = ggml.binary("ADD", summed, bias) if blk_bias else summed
        expanded = ggml.get_rows(ggml.cont(ggml.permute(score, 1, 0, 2, 3)), cell_blk)
        expanded = ggml.cont(ggml.permute(expanded, 1, 0, 2, 3))
        if blk_bias:
            m = mask if mask.type == "f32" else ggml.cast(mask, "f32")
            expanded = ggml.binary("ADD", expanded, ggml.reshape(m, n_kv, n_tps, n_stream))
        else:
            expanded = ggml.binary("ADD", expanded, bias)
        width = min(n_kv, top + ratio - 1)
        top_k = ggml.cont(ggml.top_k(expanded, width))
        return ggml.reshape(top_k, width, n_tps, 1, n_stream)

    def attn_qsa(self, kv: KVInputs, il: int, q: Tensor, k: Tensor, v: Tensor, top_k: Tensor) -> Tensor:
        """build_attn_qsa: the rotations of a quantized cache, Q / V / K expanded, K and V stored, the KQ mask
        opened on the top-k cells only (the DSA path's mask), attention over the cache."""
        d, g, r = self.d, self.g, self.r
        hd = d.head_k
        if kv.k_rot is not None:
            q, k = g.hadamard(q, kv.k_rot), g.hadamard(k, kv.k_rot)
        if kv.v_rot is not None:
            v = g.hadamard(v, kv.v_rot)
        for t in (q, v, k):
            g.gf.expand(t)
        cache_k = g.kv_cache(r.type_k, hd * d.n_head_kv, kv.kv_size, f"cache_k_l{il}", il)
        cache_v = g.kv_cache(r.type_v, hd * d.n_head_kv, kv.kv_size, f"cache_v_l{il}", il)
        g.gf.expand(g.cpy_k(cache_k, k, kv.k_idxs))
        g.gf.expand(g._cpy_v(cache_v, v, kv.v_idxs, hd * d.n_head_kv))
        mask = top_k_mask(kv.mask, top_k)
        kk = g.get_k(cache_k, hd, d.n_head_kv)
        if r.layout_fa:
            vv = g.get_k(cache_v, hd, d.n_head_kv)
        else:
            vv = ggml.view(cache_v, (kv.kv_size, d.n_head_kv, hd, r.n_stream),
                           (ggml.row_size(r.type_v, kv.kv_size * hd), ggml.row_size(r.type_v, kv.kv_size),
                            ggml.row_size(r.type_v, kv.kv_size * hd * d.n_head_kv)), 0)  # fmt: skip
        cur = g.attn_mha(q, kk, vv, None, mask, None, n_kv_max=top_k.ne[0])
        if kv.v_rot is not None:
            cur = g.hadamard(cur, kv.v_rot)
        return cur

    def ple(self, rs: RSInputs, emb: Tensor, hidden: Tensor, il: int) -> Tensor:
        """build_ple: the n-gram embeddings' key and value, a signed-square-root sigmoid gate per stream from the
        key against the streams, the gated value normed, then a depthwise causal conv dilated by the n-gram size
        over the layer's PLE history (its own recurrent row), SiLU, both added to the streams."""
        d, g, r = self.d, self.g, self.r
        hc, n_embd, n_tok = d.hc, d.n_embd, r.n_tokens
        dim = hc * n_embd
        _, _, kern, dil = d.ple
        key = ggml.mul_mat(g.wt(n_embd, dim, name="ple_key"), emb)
        value = ggml.mul_mat(g.wt(n_embd, n_embd, name="ple_value"), emb)

        def grouped_norm(x: Tensor, name: str) -> Tensor:
            t = ggml.reshape(x, n_embd, hc, n_tok)
            return ggml.binary("MUL", ggml.unary(t, "RMS_NORM"), g.wt(n_embd, hc, name=name))

        key = grouped_norm(key, "ple_norm_key")
        query = grouped_norm(hidden, "ple_norm_query")
        s = ggml.unary(ggml.sum_rows(ggml.binary("MUL", key, query)), "SCALE")
        mag = ggml.unary(ggml.unary(ggml.unary(s, kind="abs"), "CLAMP"), "SQRT")
        gate = ggml.unary(ggml.binary("MUL", ggml.unary(s, kind="sgn"), mag), kind="sigmoid")
        v3 = ggml.repeat(ggml.reshape(value, n_embd, 1, n_tok), n_embd, hc, n_tok, 1)
        gated = ggml.binary("MUL", v3, gate)
        normalized = ggml.reshape(grouped_norm(ggml.reshape(gated, dim, n_tok), "ple_norm_conv"), dim, n_tok)
        hist = (kern - 1) * dil
        nst, ns = self.n_seq_tokens, self.n_seqs
        ple_all = g.rs_cache(r.type_r, hist * dim, f"cache_ple_r_l{il}", il)
        padded = self.conv_state_at(rs, ple_all, ggml.reshape(normalized, dim, nst, ns), hist, dim)
        conv1d = g.wt(kern, dim, name="ple_conv1d", type_="f32")
        conv: Tensor | None = None
        for k in range(kern):
            start = hist - (kern - 1 - k) * dil
            shifted = ggml.cont(ggml.transpose(ggml.view(padded, (nst, dim, ns), (padded.nb[1], padded.nb[2]),
                                                         ggml.row_size(padded.type, start))))  # fmt: skip
            wk = ggml.cont(ggml.view(conv1d, (1, dim), (conv1d.nb[1],), k * conv1d.nb[0]))
            wk = ggml.reshape(wk, dim)
            if wk.type != "f32":
                wk = ggml.cast(wk, "f32")
            term = ggml.binary("MUL", shifted, wk)
            conv = term if conv is None else ggml.binary("ADD", conv, term)
        assert conv is not None
        conv = ggml.reshape(ggml.cont(ggml.unary(conv)), n_embd, hc, n_tok)
        return ggml.binary("ADD", hidden, ggml.binary("ADD", gated, conv))


def _nemotron_moe(g: GraphContext, d: Dims, cur: Tensor, il: int) -> Tensor:
    """build_ffn_layer's experts (nemotron-h.cpp): the router's logits from the layer's input, sigmoid-gated
    ReLU² experts (up and down only) on the input projected to the latent width where the model has one, projected
    back, plus a ReLU² shared expert."""
    inp_latent = cur
    latent = d.moe_latent or d.n_embd
    if g.w.has("ffn_latent_down"):
        inp_latent = ggml.mul_mat(g.wt(d.n_embd, latent, name="ffn_latent_down"), cur)
    logits = g.lora_mm(g.wt(d.n_embd, d.n_expert, name="ffn_gate_inp"), cur)
    n_ff_exp = d.n_ff_exp or d.n_ff_layers[il] // d.n_expert_used
    moe = g.moe_ffn(inp_latent, d.n_expert, d.n_expert_used, n_ff_exp, gating="sigmoid", norm_w=d.expert_weights_norm,
                    w_scale=d.expert_weights_scale, exp_probs_b=True, act="relu_sqr", logits=logits)  # fmt: skip
    if g.w.has("ffn_latent_up"):
        moe = ggml.mul_mat(g.wt(latent, d.n_embd, name="ffn_latent_up"), moe)
    shexp = g.ffn_relu_sqr(cur, d.n_embd, d.n_ff_shexp, suffix="_shexp", bias=False)
    return ggml.binary("ADD", moe, shexp)


def build_nemotron_h(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_nemotron_h::graph (src/models/nemotron-h.cpp; nemotron_h_moe's trunk is the same class): each
    layer is one block — a Mamba-2 mixer (recurrent), attention without RoPE (no feed-forward width), or a
    feed-forward block (ReLU² up and down, or experts: _nemotron_moe) — after its norm, with the residual; the
    output rows are taken after the final norm (embeddings_nextn_masked off: the norm is the MTP head's seed,
    res->t_h_nextn)."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    g.gf.expand(inp_l)
    rs = g.rs_inp()
    attends = [il for il in range(d.n_layer) if not d.recurrent[il] and not d.n_ff_layers[il]]
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv) if attends else None
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.recurrent[il]:
            cur = _mamba2_layer(g, d, rs, cur, il)
        elif not d.n_ff_layers[il] and kv is not None:
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
            wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv, il, wo, g.opt("attn_output.bias", d.n_embd), g.opt("attn_output.scale", 1), q, k, v,
                            d.n_head_kv, d.head_k, d.head_v)  # fmt: skip
        elif d.n_expert:
            cur = _nemotron_moe(g, d, cur, il)
        else:
            cur = g.ffn_relu_sqr(cur, d.n_embd, d.n_ff_layers[il])
        inp_l = ggml.binary("ADD", cur, inp_sa)
    return _lm_head(g, d, inp_l, out_ids=out_ids)


def _lightning(g: GraphContext, d: Dims, rs: RSInputs, la: tuple[Tensor, Tensor, Tensor, Tensor], cur: Tensor,
               il: int) -> Tensor:  # fmt: skip
    """minimax-01.cpp's lightning attention layer: the unused conv state gathered (n_embd_r 0), Q/K/V from one
    SiLU'd projection, the decayed linear attention over the previous state and within the batch, the new state
    stored, the output RMS-normed and gated by a sigmoid."""
    slopes, q_decay_exp, k_decay_exp, diag_decay_exp = la
    head, n_head, n_seqs = d.head_k, d.n_head, g.r.n_seqs
    n_seq_tokens = g.r.n_tokens // n_seqs
    conv_all = g.rs_cache(g.r.type_r, 0, f"cache_r_l{il}", il)
    g.gf.expand(g.rs(rs, conv_all, 0))
    states_all = g.rs_cache(g.r.type_s, head * head * n_head, f"cache_s_l{il}", il)
    slope_rate = ggml.unary(slopes, "SCALE")
    cur = ggml.reshape(cur, cur.ne[0], n_seq_tokens, 1, n_seqs)
    qkv_all = ggml.unary(g.lora_mm(g.wt(d.n_embd, 3 * head * n_head, name="attn_qkv"), cur))
    qkv_all = ggml.reshape(qkv_all, head * 3, n_head, n_seq_tokens, n_seqs)
    strides = (qkv_all.nb[1], qkv_all.nb[2], qkv_all.nb[3])
    q, k, v = (ggml.view(qkv_all, (head, n_head, n_seq_tokens, n_seqs), strides, i * ggml.row_size(qkv_all.type, head))
               for i in range(3))  # fmt: skip
    state = g.rs(rs, states_all, head * head * n_head)
    kv_old = ggml.reshape(state, head, head, n_head, n_seqs)
    q_decay = ggml.unary(ggml.unary(q_decay_exp, "SCALE"))
    k_decay = ggml.unary(ggml.unary(k_decay_exp, "SCALE"))
    diag_decay = ggml.unary(ggml.unary(diag_decay_exp, "SCALE"))
    q_s = ggml.binary("MUL", q, q_decay)
    qkv_none_diag = ggml.mul_mat(kv_old, ggml.permute(q_s, 0, 2, 1, 3))
    qk = ggml.mul_mat(ggml.permute(k, 0, 2, 1, 3), ggml.permute(q, 0, 2, 1, 3))
    qk = ggml.binary("MUL", qk, diag_decay)
    v_trans = ggml.cont(ggml.permute(v, 1, 2, 0, 3))
    qkv = ggml.binary("ADD", qkv_none_diag, ggml.mul_mat(v_trans, qk))
    g.gf.expand(qkv)
    block_decay = ggml.reshape(ggml.unary(ggml.unary(slope_rate, "SCALE")), 1, 1, n_head)
    kv_old_s = ggml.binary("MUL", kv_old, block_decay)
    k_after = ggml.cont(ggml.permute(ggml.binary("MUL", k, k_decay), 1, 2, 0, 3))
    kv_new = ggml.binary("ADD", kv_old_s, ggml.mul_mat(k_after, v_trans))
    n_s = head * head * n_head
    g.gf.expand(ggml.cpy(kv_new, ggml.view(states_all, (n_s * n_seqs,), (), 0)))
    qkv = ggml.cont(ggml.permute(qkv, 0, 2, 1, 3))
    qkv = ggml.reshape(qkv, qkv.ne[0] * qkv.ne[1], qkv.ne[2], 1, qkv.ne[3])
    qkv_norm = g.norm(qkv, g.wt(head * n_head, name="attn_norm_2"))
    gate = ggml.unary(g.lora_mm(g.wt(d.n_embd, head * n_head, name="attn_gate"), cur))
    cur = g.lora_mm(g.wt(head * n_head, d.n_embd, name="attn_output"), ggml.binary("MUL", gate, qkv_norm))
    return ggml.reshape(cur, cur.ne[0], n_seq_tokens * n_seqs)


def build_minimax_01(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_minimax_01::graph (src/models/minimax-01.cpp): lightning-attention layers (_lightning) and,
    every few layers, softmax attention with partial RoPE; the residual taken after the norm and scaled; experts
    with softmax routing."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv) if not all(d.recurrent) else None
    pos = g.inp_pos()
    out_ids = g.inp_out_ids()
    n_seqs = r.n_seqs
    t = r.n_tokens // n_seqs
    la = (ggml.inp("f32", (d.n_head,), "slopes"), ggml.inp("f32", (1, d.n_head, t, n_seqs), "q_decay_exp"),
          ggml.inp("f32", (1, d.n_head, t, n_seqs), "k_decay_exp"),
          ggml.inp("f32", (t, t, d.n_head, n_seqs), "diag_decay_exp"))  # fmt: skip
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        residual = cur
        if d.recurrent[il] or kv is None:
            cur = _lightning(g, d, rs, la, cur, il)
        else:
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
            q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
            wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k,
                            d.head_v)  # fmt: skip
        cur, residual = _last_outputs(d, il, out_ids, cur, residual)
        ffn_inp = ggml.binary("ADD", cur, ggml.unary(residual, "SCALE"))
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        residual = cur
        # (softmax routing without a probability bias: its loader creates no ffn_exp_probs_b)
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, w_scale=d.expert_weights_scale,
                        scales=False)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ggml.unary(residual, "SCALE"))
    return _lm_head(g, d, inp_l)


def _shortconv(g: GraphContext, d: Dims, rs: RSInputs, cur: Tensor, il: int) -> Tensor:
    """lfm2.cpp's build_shortconv_block (causal, no kept snapshots): B, C and x from one projection, B·x
    transposed behind the conv state, the last d_conv columns stored back, the short convolution gated by C."""
    n_seqs = g.r.n_seqs
    n_seq_tokens = g.r.n_tokens // n_seqs
    d_conv = d.shortconv_l_cache - 1
    cur = ggml.reshape(cur, cur.ne[0], n_seq_tokens, n_seqs)
    bcx = g.lora_mm(g.wt(d.n_embd, 3 * d.n_embd, name="shortconv.in_proj"), cur)
    chunk = bcx.ne[0] // 3
    b, c, x = (ggml.view(bcx, (chunk, bcx.ne[1], bcx.ne[2]), (bcx.nb[1], bcx.nb[2]), i * ggml.row_size(bcx.type, chunk))
               for i in range(3))  # fmt: skip
    bx = ggml.transpose(ggml.binary("MUL", b, x))
    conv_state = g.rs_cache(g.r.type_r, d_conv * d.n_embd, f"cache_r_l{il}", il)
    conv = ggml.reshape(g.rs(rs, conv_state, d_conv * d.n_embd), d_conv, d.n_embd, n_seqs)
    bx = ggml.concat(conv, bx, 0)
    snap = ggml.view(bx, (d_conv, bx.ne[1], bx.ne[2]), (bx.nb[1], bx.nb[2]), ggml.row_size(bx.type, bx.ne[0] - d_conv))
    g.gf.expand(ggml.cpy(snap, ggml.view(conv_state, (d_conv * d.n_embd, n_seqs), (conv_state.nb[1],), 0)))
    conv_out = ggml.ssm_conv(bx, g.wt(d.shortconv_l_cache, d.n_embd, name="shortconv.conv"))
    y = g.lora_mm(g.wt(d.n_embd, d.n_embd, name="shortconv.out_proj"), ggml.binary("MUL", c, conv_out))
    return ggml.reshape(y, y.ne[0], n_seq_tokens * n_seqs)


def build_lfm2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_lfm2::graph<iswa> (src/models/lfm2.cpp; lfm2moe's is the same class): short-convolution layers
    (_shortconv) and attention layers with Q/K norms (through the window cache where the file sets one), each
    followed by the SwiGLU feed-forward, or from n_layer_dense_lead on the experts (LFM2-MoE)."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    g.gf.expand(inp_l)
    iswa = any(d.swa)
    rs = g.rs_inp()
    # (build_inp_mem_hybrid_iswa builds no Hadamard rotation inputs)
    attn = _kv_inputs(g, d, iswa, rot=not iswa) if not all(d.recurrent) else None
    pos = g.inp_pos()
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        prev = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.recurrent[il] or attn is None:
            cur = _shortconv(g, d, rs, cur, il)
        else:
            kv, kv_swa = attn
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
            q = ggml.rope(g.norm(q, g.wt(d.head_k, name="attn_q_norm")), pos, None)
            k = ggml.rope(g.norm(k, g.wt(d.head_k, name="attn_k_norm")), pos, None)
            wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv_swa if iswa and d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v,
                            d.n_head_kv, d.head_k, d.head_v, iswa=iswa)  # fmt: skip
        cur, prev = _last_outputs(d, il, out_ids, cur, prev)
        cur = ggml.binary("ADD", prev, cur)
        ffn = g.norm(cur, g.wt(d.n_embd, name="ffn_norm"))
        if d.n_expert and il >= d.n_layer_dense_lead:
            ffn = g.moe_ffn(ffn, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff,
                            gating=_GATING.get(d.expert_gating, "softmax"), w_scale=d.expert_weights_scale,
                            exp_probs_b=True, scales=False)  # fmt: skip
        else:
            ffn = g.ffn_par(ffn, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn)
    g.il = OUTPUT_LAYER
    cur = g.norm(inp_l, g.wt(d.n_embd, name="token_embd_norm"))
    ggml.set_output(cur)
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def build_glm4(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_glm4::graph (src/models/glm4.cpp): GLM-4-0414's post-attention and post-MLP norms around a
    fused up/gate projection (SwiGLU over its halves), multi-section RoPE where the file sets sections."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos(4 if d.mrope else 1)  # (four positions per token for multi-section RoPE)
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        cur = _attention(g, d, kv, cur, pos, il)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        cur = g.norm(cur, g.wt(d.n_embd, name="attn_post_norm"))
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        cur = ggml.glu(ggml.mul_mat(g.wt(d.n_embd, 2 * d.n_ff, name="ffn_up"), cur))
        cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), cur)
        cur = g.norm(cur, g.wt(d.n_embd, name="ffn_post_norm"))
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_qwen2moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_qwen2moe::graph (src/models/qwen2moe.cpp): Qwen2's attention, softmax-routed experts without
    normalised weights, and a shared expert gated by a sigmoid written as silu(x) / x."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    n_ff_exp = d.n_ff_exp or d.n_ff // d.n_expert_used
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _attention_block(g, d, kv, inp_l, pos, il, out_ids)
        moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, n_ff_exp, norm_w=False, w_scale=d.expert_weights_scale,
                        scales=False)  # fmt: skip
        gate_inp = g.lora_mm(g.wt(d.n_embd, name="ffn_gate_inp_shexp"), cur)
        gate = ggml.binary("DIV", ggml.unary(gate_inp), gate_inp)
        shexp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp or d.n_ff, bias=False, scale=False, suffix="_shexp")
        cur = ggml.binary("ADD", moe, ggml.binary("MUL", shexp, gate))
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_exaone4(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_exaone4::graph<iswa> (src/models/exaone4.cpp): no pre-norms; Q/K normed per head, RoPE on the
    window layers only (every layer without windows), post-attention and post-MLP norms."""
    g = GraphContext(r, w)
    iswa = any(d.swa)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, iswa)
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        factors = g.opt("rope_freqs", d.head_k // 2)
        q, k, v = g.qkv(inp_l, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
        k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
        if d.swa[il] or not iswa:
            q, k = ggml.rope(q, pos, factors), ggml.rope(k, pos, factors)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv_swa if iswa and d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v,
                        d.n_head_kv, d.head_k, d.head_v, iswa=iswa)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        inp_l = _post_normed_ffn(g, d, cur, inp_sa)
    return _lm_head(g, d, inp_l)


def build_starcoder2(d: Dims, r: Reserve, w: Weights, relu_sqr: bool = False) -> Graph:
    """llama_model_starcoder2::graph (src/models/starcoder2.cpp): layer norms with biases, attention with its output
    bias, a GELU feed-forward (up and down, with biases); with `relu_sqr`, llama_model_nemotron::graph
    (nemotron.cpp): the same with ReLU²."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), g.opt("attn_norm.bias", d.n_embd), rms=False)
        cur = _attention(g, d, kv, cur, pos, il, wo_bias=True)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"), g.opt("ffn_norm.bias", d.n_embd), rms=False)
        cur = ggml.mul_mat(g.wt(d.n_embd, d.n_ff, name="ffn_up"), cur)
        b = g.opt("ffn_up.bias", d.n_ff)
        cur = ggml.unary(ggml.binary("ADD", cur, b) if b is not None else cur)
        if relu_sqr:
            cur = ggml.unary(cur, "SQR")
        cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), cur)
        b = g.opt("ffn_down.bias", d.n_embd)
        cur = ggml.binary("ADD", cur, b) if b is not None else cur
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, rms=False, norm_bias=True)


def build_ernie4_5_moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_ernie4_5_moe::graph (src/models/ernie4-5-moe.cpp): ERNIE 4.5's layers, experts (with the
    probability bias where the file has it, and a shared expert where it declares one) on every
    interleave_moe_layer_step-th layer after the dense lead, SwiGLU elsewhere."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    step = d.moe_layer_step or 1
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _attention_block(g, d, kv, inp_l, pos, il, out_ids)
        if il >= d.n_layer_dense_lead and (il + 1) % step == 0:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, w_scale=d.expert_weights_scale,
                            exp_probs_b=w.has("exp_probs_b.bias"), scales=False)  # fmt: skip
            if d.n_ff_shexp:
                shexp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp, bias=False, scale=False, suffix="_shexp")
                moe = ggml.binary("ADD", moe, shexp)
            cur = moe
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_dots1(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_dots1::graph (src/models/dots1.cpp): per-head Q/K norms, dense lead layers, then experts
    routed by the file's gating function (with the probability bias where it has one) plus n_expert_shared
    experts' worth of shared expert."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _attention_block(g, d, kv, inp_l, pos, il, out_ids, qk_norm=True)
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        else:
            gating, bias = _GATING.get(d.expert_gating, "softmax"), w.has("exp_probs_b.bias")
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=gating, norm_w=d.expert_weights_norm,
                            w_scale=d.expert_weights_scale, exp_probs_b=bias, scales=False)  # fmt: skip
            shexp = g.ffn_par(cur, d.n_embd, d.n_ff_exp * d.n_expert_shared, bias=False, scale=False, suffix="_shexp")
            cur = ggml.binary("ADD", moe, shexp)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_gemma(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_gemma::graph (src/models/gemma.cpp): Gemma 1, the embeddings scaled, Q scaled after RoPE, a
    GELU-gated feed-forward, no post norms or soft-capping."""
    g = GraphContext(r, w)
    inp_l = ggml.unary(g.inp_embd(d.n_embd, d.n_vocab), "SCALE")
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = ggml.unary(ggml.rope(q, pos, None), "SCALE")
        k = ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_l = _last_outputs(d, il, out_ids, cur, inp_l)
        sa_out = ggml.binary("ADD", cur, inp_l)
        cur = g.norm(sa_out, g.wt(d.n_embd, name="ffn_norm"))
        cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, sa_out)
    return _lm_head(g, d, inp_l)


def build_deepseek(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_deepseek::graph (src/models/deepseek.cpp, DeepSeek-MoE 16B): llama's attention, dense lead
    layers, then softmax-routed experts (weights not normalised, no scales) plus n_expert_shared experts' worth of
    shared expert."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _attention_block(g, d, kv, inp_l, pos, il, out_ids)
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        else:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, norm_w=False, w_scale=d.expert_weights_scale,
                            scales=False)  # fmt: skip
            shexp = g.ffn_par(cur, d.n_embd, d.n_ff_exp * d.n_expert_shared, bias=False, scale=False, suffix="_shexp")
            cur = ggml.binary("ADD", moe, shexp)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_grok(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_grok::graph (src/models/grok.cpp): the embeddings scaled (unless the file sets the scale to 0),
    the attention logits scaled and soft-capped without flash attention (build_attn_mha's LLM_ARCH_GROK branch),
    the attention output normed before the residual, GELU experts plus the dense feed-forward where the file has
    one (their sum scaled by 1/sqrt 2), a post norm (weightless where the file has none), the logits scaled and
    soft-capped where the model says."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab, scale=1.0 if d.embedding_scale else 0.0)
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = _attention(g, d, kv, g.norm(inp_l, g.wt(d.n_embd, name="attn_norm")), pos, il, softcap=True)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        cur = g.norm(cur, g.wt(d.n_embd, name="attn_output_norm"))
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, act="gelu",
                        w_scale=d.expert_weights_scale, scales=False)  # fmt: skip
        if w.has("ffn_up"):
            ffn = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
            cur = ggml.unary(ggml.binary("ADD", ffn, moe), "SCALE")
        else:
            cur = moe
        cur = g.norm(cur, g.opt("layer_output_norm", d.n_embd))
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, scale=True, softcap=d.final_softcap)


def build_arctic(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_arctic::graph (src/models/arctic.cpp): llama's attention, a dense SwiGLU feed-forward n_embd
    wide (its loader's shapes) on the residual, and beside it softmax-routed experts on the layer's input under
    their own norm."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        cur = _attention(g, d, kv, cur, pos, il)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        ffn_out = ggml.binary("ADD", g.ffn_par(cur, d.n_embd, d.n_embd, bias=False, scale=False), ffn_inp)
        cur = g.norm(inp_sa, g.wt(d.n_embd, name="ffn_norm_exps"))
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff, w_scale=d.expert_weights_scale, scales=False)
        inp_l = ggml.binary("ADD", cur, ffn_out)
    return _lm_head(g, d, inp_l)


def _hunyuan_attention_block(
    g: GraphContext, d: Dims, kv: KVInputs, inp_l: Tensor, pos: Tensor, il: int, out_ids: Tensor,
    factors: Tensor | None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """hunyuan-vl.cpp's and hunyuan-moe.cpp's attention half of a layer: RoPE (with `factors`), then K and Q normed
    per head, attention, the last layer's output rows, the residual; returns the feed-forward's input and its norm."""
    cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
    q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
    q, k = ggml.rope(q, pos, factors), ggml.rope(k, pos, factors)
    k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
    q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
    wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
    cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
    cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
    ffn_inp = ggml.binary("ADD", cur, inp_sa)
    return ffn_inp, g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))


def build_hunyuan_moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_hunyuan_moe::graph (src/models/hunyuan-moe.cpp): hunyuan_dense's attention (K and Q normed after
    RoPE), a shared SwiGLU expert (expert_shared_feed_forward_length wide, else n_ff) beside softmax-routed experts."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _hunyuan_attention_block(g, d, kv, inp_l, pos, il, out_ids, None)
        mlp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp or d.n_ff, bias=False, scale=False, suffix="_shexp")
        moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff, w_scale=d.expert_weights_scale, scales=False)
        inp_l = ggml.binary("ADD", ggml.binary("ADD", moe, mlp), ffn_inp)
    return _lm_head(g, d, inp_l)


def build_smallthinker(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_smallthinker::graph<iswa> (src/models/smallthinker.cpp): the router's logits from the layer's
    input before its norm (kept to the output rows with the rest at the last layer), RoPE except on every 4th layer
    from the first where the model has window layers, ReLU experts gated by the file's function."""
    g = GraphContext(r, w)
    iswa = any(d.swa)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv, kv_swa = _kv_inputs(g, d, iswa)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        logits = g.lora_mm(g.wt(d.n_embd, d.n_expert, name="ffn_gate_inp"), inp_l)
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        if not iswa or il % 4 != 0:  # n_no_rope_layer_step: n_layer without windows, else its default 4
            q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv_swa if iswa and d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v,
                        d.n_head_kv, d.head_k, d.head_v, iswa=iswa)  # fmt: skip
        inp_sa = inp_l
        if il == d.n_layer - 1:
            cur, inp_sa, logits = (ggml.get_rows(t, out_ids) for t in (cur, inp_sa, logits))
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        gating = _GATING.get(d.expert_gating, "softmax")
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, gating=gating, act="relu",
                        w_scale=d.expert_weights_scale, scales=False, logits=logits)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_bailingmoe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_bailingmoe::graph (src/models/bailingmoe.cpp, Ling): llama's attention, softmax-routed experts
    (normalised as the file says, no scales) plus n_expert_shared experts' worth of shared expert, every layer."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _attention_block(g, d, kv, inp_l, pos, il, out_ids)
        moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, norm_w=d.expert_weights_norm,
                        w_scale=d.expert_weights_scale, scales=False)  # fmt: skip
        shexp = g.ffn_par(cur, d.n_embd, d.n_ff_exp * d.n_expert_shared, bias=False, scale=False, suffix="_shexp")
        inp_l = ggml.binary("ADD", ggml.binary("ADD", moe, shexp), ffn_inp)
    return _lm_head(g, d, inp_l)


def build_plamo(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_plamo::graph (src/models/plamo.cpp, PLaMo 1): attention and the SwiGLU feed-forward side by side
    on the layer's one norm, both added to the layer's input."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        sa_inp = cur
        cur = _attention(g, d, kv, cur, pos, il)
        if il == d.n_layer - 1:
            cur, sa_inp, inp_l = (ggml.get_rows(t, out_ids) for t in (cur, sa_inp, inp_l))
        ffn = g.ffn_par(sa_inp, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", ggml.binary("ADD", ffn, cur), inp_l)
    return _lm_head(g, d, inp_l)


def build_talkie(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_talkie::graph (src/models/talkie.cpp): the embeddings RMS-normed and kept as a skip input that
    every layer adds scaled by its out_scale; weightless norms, Q normed by a per-head weight after RoPE, K by
    none; the logits scaled."""
    g = GraphContext(r, w)
    inp_l = g.norm(g.inp_embd(d.n_embd, d.n_vocab), None, with_il=False)
    embd_skip = inp_l
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa, inp_skip = inp_l, embd_skip
        cur = g.norm(inp_l, None)
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        q = g.norm(q, g.wt(1, d.n_head, name="attn_q_norm"))
        k = g.norm(k, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        if il == d.n_layer - 1:
            cur, inp_sa, inp_skip = (ggml.get_rows(t, out_ids) for t in (cur, inp_sa, inp_skip))
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, None)
        up = ggml.mul_mat(g.wt(d.n_embd, d.n_ff, name="ffn_up"), cur)
        cur = ggml.glu_split(ggml.mul_mat(g.wt(d.n_embd, d.n_ff, name="ffn_gate"), cur), up)
        cur = g.ffn_tail(ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), cur), "ffn_down", d.n_embd, False, True)
        cur = ggml.binary("ADD", cur, ffn_inp)
        skip = ggml.binary("MUL", inp_skip, g.wt(1, name="layer_out_scale"))
        inp_l = ggml.binary("ADD", cur, skip)
    return _lm_head(g, d, inp_l, scale=True, norm_weight=False)


def build_spark2_5(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_spark2_5::graph (src/models/spark2-5.cpp): iSWA attention whose output each head gates by a
    sigmoid of a projection of the layer's norm before the output projection, a GELU-gated feed-forward."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, True)
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        attn_inp = cur
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        cur = g.attn_kv(kv_swa if d.swa[il] else kv, il, None, None, None, q, k, v, d.n_head_kv, d.head_k,
                        d.head_v, iswa=True)  # fmt: skip
        gate = ggml.unary(g.lora_mm(g.wt(d.n_embd, d.n_head, name="attn_gate"), attn_inp), kind="sigmoid")
        n_tok = cur.ne[1]
        cur = ggml.binary("MUL", ggml.reshape(cur, d.head_v, d.n_head, n_tok), ggml.reshape(gate, 1, d.n_head, n_tok))
        cur = ggml.reshape(cur, d.head_v * d.n_head, n_tok)
        cur = g.lora_mm(g.wt(d.head_v * d.n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def _window_rope_block(
    g: GraphContext, d: Dims, kvs: tuple[KVInputs, KVInputs], inp_l: Tensor, pos: Tensor, il: int, out_ids: Tensor,
    factors: Tensor | None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """exaone-moe.cpp's and maple.cpp's attention half of a layer: the norm, Q/K normed per head, RoPE (with
    `factors`) on the window layers only, attention through the iSWA pair, the last layer's output rows, the
    residual; returns the feed-forward's input and its norm."""
    kv, kv_swa = kvs
    cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
    q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
    q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
    k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
    if d.swa[il]:
        q, k = ggml.rope(q, pos, factors), ggml.rope(k, pos, factors)
    wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
    cur = g.attn_kv(kv_swa if d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv,
                    d.head_k, d.head_v, iswa=True)  # fmt: skip
    cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
    ffn_inp = ggml.binary("ADD", cur, inp_sa)
    return ffn_inp, g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))


def build_exaone_moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_exaone_moe::graph (src/models/exaone-moe.cpp, K-EXAONE): iSWA inputs always, Q/K normed per
    head, RoPE (with the RoPE factors the file has) on the window layers only, dense lead layers, then experts
    routed by the file's gating function (with the probability bias where it has one) plus a shared expert."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, True)
    for il in g.layers(d.n_layer):
        g.il = il
        factors = g.opt("rope_freqs", d.head_k // 2)
        ffn_inp, cur = _window_rope_block(g, d, (kv, kv_swa), inp_l, pos, il, out_ids, factors)
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        else:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING.get(d.expert_gating,
                            "softmax"), norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale,
                            exp_probs_b=w.has("exp_probs_b.bias"), scales=False)  # fmt: skip
            shexp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp or d.n_ff_exp, bias=False, scale=False, suffix="_shexp")
            cur = ggml.binary("ADD", moe, shexp)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_bailingmoe2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_bailingmoe2::graph (src/models/bailingmoe2.cpp, Ling 2.0): the fused QKV, Q/K normed per head
    before RoPE, dense lead layers, then experts routed by the file's gating function (with the probability bias
    where it has one) plus n_expert_shared shared experts (each expert_shared_feed_forward_length wide, else the
    experts' width)."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    o = Decoder(qk_norm=True)
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v, fused=True)
        q, k = _qk_norm_rope(g, d, o, q, k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        sa_out = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(sa_out, g.wt(d.n_embd, name="ffn_norm"))
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        else:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING.get(d.expert_gating,
                            "softmax"), norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale,
                            exp_probs_b=w.has("exp_probs_b.bias"), scales=False)  # fmt: skip
            n_shexp = (d.n_ff_shexp or d.n_ff_exp) * d.n_expert_shared
            cur = ggml.binary("ADD", moe, g.ffn_par(cur, d.n_embd, n_shexp, bias=False, scale=False, suffix="_shexp"))
        inp_l = ggml.binary("ADD", cur, sa_out)
    return _lm_head(g, d, inp_l)


def _gated_attention(
    g: GraphContext, d: Dims, kvs: tuple[KVInputs, KVInputs], inp_l: Tensor, pos: Tensor, il: int, rope: bool,
    pinned: bool,
) -> Tensor:  # fmt: skip
    """afmoe.cpp's and muse-glimmer.cpp's attention: the norm, Q/K normed per head, RoPE where `rope`, attention
    through the iSWA pair without its output projection, gated by a sigmoid of a projection of the norm, then the
    output projection and the post-attention norm (`pinned`: build_norm's, else ggml_rms_norm and ggml_mul)."""
    kv, kv_swa = kvs
    cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
    q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
    gate = g.lora_mm(g.wt(d.n_embd, d.head_k * d.n_head, name="attn_gate"), cur)
    q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
    k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
    if rope:
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
    cur = g.attn_kv(kv_swa if d.swa[il] else kv, il, None, None, None, q, k, v, d.n_head_kv, d.head_k, d.head_v,
                    iswa=True)  # fmt: skip
    cur = ggml.binary("MUL", cur, ggml.unary(gate, kind="sigmoid"))
    cur = g.lora_mm(g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))
    return g.norm(cur, g.wt(d.n_embd, name="post_attention_norm"), with_il=pinned)


def build_afmoe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_afmoe::graph (src/models/afmoe.cpp, Arcee Trinity): embeddings scaled, iSWA inputs, Q/K normed
    per head, RoPE except on every 4th layer (n_no_rope_layer_step's default), the attention output gated by a
    sigmoid of a projection of the layer's norm before the output projection, post-attention and post-FFN norms,
    dense lead layers, then experts routed by the file's gating function (sigmoid where it says none) with their
    probability bias, plus the shared experts."""
    g = GraphContext(r, w)
    inp_l = ggml.unary(g.inp_embd(d.n_embd, d.n_vocab), "SCALE")
    pos = g.inp_pos()
    kv, kv_swa = _kv_inputs(g, d, True)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = _gated_attention(g, d, (kv, kv_swa), inp_l, pos, il, (il + 1) % 4 != 0, pinned=True)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il >= d.n_layer_dense_lead:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING.get(d.expert_gating or 2,
                            "softmax"), norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale,
                            exp_probs_b=True, scales=False)  # fmt: skip
            if d.n_expert_shared:
                shexp = g.ffn_par(cur, d.n_embd, d.n_ff_exp * d.n_expert_shared, bias=False, scale=False,
                                  suffix="_shexp")  # fmt: skip
                moe = ggml.binary("ADD", moe, shexp)
            cur = moe
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        cur = g.norm(cur, g.wt(d.n_embd, name="post_ffw_norm"))
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


#: the diffusion models' differences: llada-moe.cpp normalises Q and K before RoPE and its experts' weights not at
#: all; rnd1.cpp interleaves norm and RoPE and normalises the weights
LLADA_MOE = Decoder(qk_norm=True, qk_order="norms_first", moe_norm_w=False)
RND1 = Decoder(qk_norm=True)


def build_llada(d: Dims, r: Reserve, w: Weights, o: Decoder = Decoder()) -> Graph:
    """llama_model_llada::graph (src/models/llada.cpp, LLaDA; dream.cpp's is the same; llada-moe.cpp and rnd1.cpp
    as `o` says): a diffusion model's llama layers without a KV cache (build_attn_inp_no_cache: the batch attends to
    itself), no output-projection bias, SwiGLU or softmax-routed experts without scales."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    mask = g.attn_inp_no_cache()
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q, k = _qk_norm_rope(g, d, o, q, k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_no_cache(mask, wo, None, g.opt("attn_output.scale", 1), q, k, v)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if d.n_expert:
            cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff // d.n_expert_used,
                            norm_w=o.moe_norm_w, w_scale=d.expert_weights_scale, scales=False)  # fmt: skip
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_minicpm3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_minicpm3::graph (src/models/minicpm3.cpp): embeddings scaled; DeepSeek-V2's low-rank Q and
    compressed KV decompressed into full heads (K: the no-RoPE part from kv_b and the shared RoPE part repeated
    over the heads; RoPE over the whole Q from the no-RoPE width on) through an ordinary KV cache; the residual
    branches scaled; the final norm scaled before the LM head."""
    g = GraphContext(r, w)
    inp_l = ggml.unary(g.inp_embd(d.n_embd, d.n_vocab), "SCALE")
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    n_tok, rope, kvr, qr, hv = r.n_tokens, d.n_rot, d.kv_lora_rank, d.q_lora_rank, d.head_v
    nope = d.head_k - rope
    factors = "rope_factors_long" if r.n_ctx_seq > d.n_ctx_orig else "rope_factors_short"
    for il in g.layers(d.n_layer):
        g.il = il
        f = g.opt(factors, rope // 2)
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q = ggml.mul_mat(g.wt(d.n_embd, qr, name="attn_q_a"), cur)
        q = g.norm(q, g.wt(qr, name="attn_q_a_norm"))
        q = ggml.reshape(ggml.mul_mat(g.wt(qr, d.n_head * d.head_k, name="attn_q_b"), q), d.head_k, d.n_head, n_tok)
        kv_pe = ggml.mul_mat(g.wt(d.n_embd, kvr + rope, name="attn_kv_a_mqa"), cur)
        kv_c = ggml.view(kv_pe, (kvr, n_tok), (kv_pe.nb[1],), 0)
        k_pe = ggml.view(kv_pe, (rope, 1, n_tok), (kv_pe.nb[1], kv_pe.nb[1]), ggml.row_size(kv_pe.type, kvr))
        kv_c = g.norm(kv_c, g.wt(kvr, name="attn_kv_a_norm"))
        kvb = ggml.mul_mat(g.wt(kvr, d.n_head * (nope + hv), name="attn_kv_b"), kv_c)
        row = ggml.row_size(kvb.type, nope + hv)
        k_nope = ggml.view(kvb, (nope, d.n_head, n_tok), (row, row * d.n_head), 0)
        v = ggml.cont(ggml.view(kvb, (hv, d.n_head, n_tok), (row, row * d.n_head), ggml.row_size(kvb.type, nope)))
        q = ggml.rope(q, pos, f)
        k_pe = ggml.rope(k_pe, pos, f)
        k = ggml.concat(k_nope, ggml.repeat(k_pe, rope, d.n_head, n_tok, 1), 0)
        wo = g.wt(d.n_head * hv, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, hv)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", ggml.unary(cur, "SCALE"), inp_sa)
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", ggml.unary(cur, "SCALE"), ffn_inp)
    g.il = OUTPUT_LAYER
    cur = g.norm(inp_l, g.wt(d.n_embd, name="output_norm"))
    ggml.set_output(cur)
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), ggml.unary(cur, "SCALE"), g.output_scale())
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def _lightning_indexer(
    g: GraphContext, d: Dims, lid: KVInputs, pos: Tensor, cur: Tensor, qr: Tensor, il: int, rotate: bool = True
) -> Tensor:
    """deepseek32.cpp's lightning indexer of one layer: the indexer's Q (from the low-rank Q) and one K head
    (layer-normed), both RoPEd and Hadamard-rotated (not `rotate`: hy-v4.cpp skips the rotation), the K stored in
    the indexer's own cache, the score (ggml_lightning_indexer: the CPU supports it, so llama.cpp fuses it) and
    its top-k cells per query."""
    n_ih, ihead, top = d.indexer
    n_tok, qr_rank = g.r.n_tokens, d.q_lora_rank
    iq = ggml.mul_mat(g.wt(qr_rank, n_ih * ihead, name="indexer.attn_q_b"), qr)
    iq = ggml.rope(ggml.reshape(iq, ihead, n_ih, n_tok), pos, None)
    ik = ggml.mul_mat(g.wt(d.n_embd, ihead, name="indexer.attn_k"), cur)
    ik = g.norm(ik, g.wt(ihead, name="indexer.k_norm"), g.wt(ihead, name="indexer.k_norm.bias"), rms=False)
    ik = ggml.rope(ggml.reshape(ik, ihead, 1, n_tok), pos, None)
    if rotate:
        assert lid.k_rot is not None
        iq, ik = ggml.mul_mat(lid.k_rot, iq), ggml.mul_mat(lid.k_rot, ik)
    cache_lid = g.lid_cache(ihead, g.r.kv_size, il)
    g.gf.expand(g.cpy_k(cache_lid, ik, lid.k_idxs))
    weights = ggml.mul_mat(g.wt(d.n_embd, n_ih, name="indexer.proj"), cur)
    ik = g.get_k(cache_lid, ihead, 1)
    ns = ik.ne[3]
    iq = ggml.view(iq, (iq.ne[0], iq.ne[1], iq.ne[2] // ns, ns), (iq.nb[1], iq.nb[2], iq.nb[3] // ns), 0)
    weights = ggml.view(weights, (weights.ne[0], weights.ne[1] // ns, weights.ne[2], ns),
                        (weights.nb[1], weights.nb[2] // ns, weights.nb[3] // ns), 0)  # fmt: skip
    weights = ggml.unary(weights, "SCALE")
    score = ggml.new("f32", (ik.ne[2], iq.ne[2], 1, iq.ne[3]), "LIGHTNING_INDEXER", (iq, ik, weights, lid.mask))
    return ggml.cont(ggml.new("i32", (min(score.ne[0], top), *score.ne[1:]), "TOP_K", (score,)))


def _absorbed_mla(
    g: GraphContext, d: Dims, cur: Tensor, qr: Tensor, pos: Tensor, n_head: int, rank: int, hk: int, k_norm: bool
) -> tuple[Tensor, Tensor, Tensor]:
    """DeepSeek-V3.2's absorbed MLA from the normed low-rank Q (`qr`) and the layer's input: Q's no-RoPE part
    through wk_b beside its RoPEd part, K the normed latent beside the shared RoPE key (`k_norm`: that key RMS-normed
    first, dots3note.cpp); (Q, K, the latent that V is read from)."""
    n_tok, rope = g.n_tokens, d.n_rot
    nope = hk - rope
    q = ggml.mul_mat(g.wt(d.q_lora_rank, n_head * hk, name="attn_q_b"), qr)
    row_q = ggml.row_size(q.type, hk)
    q_nope = ggml.view(q, (nope, n_head, n_tok), (row_q, row_q * n_head), 0)
    q_pe = ggml.view(q, (rope, n_head, n_tok), (row_q, row_q * n_head), ggml.row_size(q.type, nope))
    kv_pe = ggml.mul_mat(g.wt(d.n_embd, rank + rope, name="attn_kv_a_mqa"), cur)
    row = ggml.row_size(kv_pe.type, rank + rope)
    kv_c = ggml.view(kv_pe, (rank, n_tok), (row,), 0)
    k_pe = ggml.view(kv_pe, (rope, 1, n_tok), (row, row), ggml.row_size(kv_pe.type, rank))
    if k_norm:
        k_pe = g.norm(k_pe, g.wt(rope, name="attn_k_norm"))
    q_pe, k_pe = ggml.rope(q_pe, pos, None), ggml.rope(k_pe, pos, None)
    kv_c = g.norm(kv_c, g.wt(rank, name="attn_kv_a_norm"))
    q_abs = ggml.mul_mat(g.wt(nope, rank, n_head, name="attn_k_b"), ggml.permute(q_nope, 0, 2, 1, 3))
    q_cur = ggml.concat(ggml.permute(q_abs, 0, 2, 1, 3), q_pe, 0)
    kv_c = ggml.reshape(kv_c, rank, 1, n_tok)
    return q_cur, ggml.concat(kv_c, k_pe, 0), kv_c


def build_deepseek32(d: Dims, r: Reserve, w: Weights, glm: bool = False) -> Graph:
    """llama_model_deepseek32::graph (src/models/deepseek32.cpp, DeepSeek-V3.2): DeepSeek-V2's MLA where each query
    keeps only the top-k keys its lightning indexer scores (_lightning_indexer): they unmask a -inf copy of the KQ
    mask for the MLA attention; then DeepSeek's dense lead and routed plus shared experts, with their scales. With
    `glm` (llama_model_glm_dsa::graph, src/models/glm-dsa.cpp): only the layers whose indexer is full run one, the
    others reuse the last one's top-k."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv = g.attn_inp_k(r.kv_size)
    lid = g.attn_inp_lid(r.kv_size, d.indexer[1])
    out_ids = g.inp_out_ids()
    hk, rank, qr_rank = d.head_k_mla, d.kv_lora_rank, d.q_lora_rank
    prev_top_k: Tensor | None = None
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        qr = g.norm(ggml.mul_mat(g.wt(d.n_embd, qr_rank, name="attn_q_a"), cur), g.wt(qr_rank, name="attn_q_a_norm"))
        if glm and prev_top_k is not None and not d.indexer_layers[il]:
            top_k = prev_top_k
        else:
            top_k = prev_top_k = _lightning_indexer(g, d, lid, pos, cur, qr, il)
        q_cur, k_cur, kv_c = _absorbed_mla(g, d, cur, qr, pos, d.n_head, rank, hk, k_norm=False)
        wo = g.wt(d.head_v_mla * d.n_head, d.n_embd, name="attn_output")
        v_mla = g.wt(rank, d.head_v_mla, d.n_head, name="attn_v_b")
        cur = g.attn_k(kv, il, wo, g.opt("attn_output.scale", 1), q_cur, k_cur, kv_c, v_mla, d.head_k, d.n_head_kv,
                       top_k=top_k)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        gating = _GATING.get(d.expert_gating, "softmax")
        cur = _dense_or_shared_moe(g, d, il, cur, d.n_ff_exp or d.n_ff, ffn_scales=True, gating=gating,
                                   exp_probs_b=w.has("exp_probs_b.bias"), scales=True)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _deepseek_lm_head(g, d, inp_l)


def build_dots3note(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_dots3note::graph (src/models/dots3note.cpp, dots.llm3-note): DeepSeek-V3.2's absorbed MLA with
    sliding windows (build_attn_inp_k_dsa_iswa: the DSA cache's inputs and the indexer's, then the window cache's).
    The full layers run the lightning indexer and attend to its top-k keys; the window layers have their own MLA
    widths (kv_lora_rank_swa, key/value_length_mla_swa) and no indexer. The shared RoPE key is RMS-normed before
    RoPE; the attention leaves build_attn undecompressed by wo and is gated per head by a sigmoid of a projection
    of the layer's norm, then wo (with its scale); DeepSeek's dense lead and routed plus shared experts."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv = g.attn_inp_k(r.kv_size)
    lid = g.attn_inp_lid(r.kv_size, d.indexer[1])
    kv_swa = g.attn_inp_k(r.kv_size_swa)
    out_ids = g.inp_out_ids()
    rope, qr_rank, n_tok = d.n_rot, d.q_lora_rank, r.n_tokens
    for il in g.layers(d.n_layer):
        g.il = il
        swa = bool(d.swa) and d.swa[il]
        n_head = d.layer_heads[il][0] if d.layer_heads else d.n_head
        rank, hk, hv = d.mla_swa if swa and d.mla_swa[0] else (d.kv_lora_rank, d.head_k_mla, d.head_v_mla)
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        attn_inp = cur
        qr = g.norm(ggml.mul_mat(g.wt(d.n_embd, qr_rank, name="attn_q_a"), cur), g.wt(qr_rank, name="attn_q_a_norm"))
        top_k = None if swa else _lightning_indexer(g, d, lid, pos, cur, qr, il)
        q_cur, k_cur, kv_c = _absorbed_mla(g, d, cur, qr, pos, n_head, rank, hk, k_norm=True)
        v_mla = g.wt(rank, hv, n_head, name="attn_v_b")
        cur = g.attn_k(kv_swa if swa else kv, il, None, None, q_cur, k_cur, kv_c, v_mla, rank + rope, 1, top_k=top_k)
        gate = ggml.unary(g.lora_mm(g.wt(d.n_embd, n_head, name="attn_gate"), attn_inp), kind="sigmoid")
        cur = ggml.binary("MUL", ggml.reshape(cur, hv, n_head, n_tok), ggml.reshape(gate, 1, n_head, n_tok))
        cur = ggml.reshape(cur, hv * n_head, n_tok)
        cur = g.lora_mm(g.wt(hv * n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        gating = _GATING.get(d.expert_gating, "softmax")
        cur = _dense_or_shared_moe(g, d, il, cur, d.n_ff_exp or d.n_ff, ffn_scales=True, gating=gating,
                                   exp_probs_b=w.has("exp_probs_b.bias"), scales=True)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _deepseek_lm_head(g, d, inp_l)


def _hc_reduce(x: Tensor, w: Tensor, hc: int, out_type: str) -> Tensor:
    """hy_v4_hc_reduce: the hc streams of x ([n_embd, hc, n_tokens]) summed weighted by w's rows, in f32."""
    n_embd, nt = x.ne[0], x.ne[2]
    x32 = ggml.cast(x, "f32")
    out: Tensor | None = None
    for ih in range(hc):
        xh = ggml.view(x32, (n_embd, nt), (x32.nb[2],), ih * x32.nb[1])
        wh = ggml.view(w, (1, nt), (w.nb[1],), ih * w.nb[0])
        cur = ggml.binary("MUL", xh, wh)
        out = cur if out is None else ggml.binary("ADD", out, cur)
    assert out is not None
    return ggml.cast(out, out_type)


def _hc_pre(g: GraphContext, d: Dims, x: Tensor, stage: str) -> tuple[Tensor, Tensor]:
    """llama_model_hy_v4::graph::build_hc_pre: the streams flattened and RMS-normed, 2·hc mixes, the pre weights
    (sigmoid of scaled and biased mixes, plus eps) reducing the streams, and the post gate for build_hc_post."""
    hc, nt = d.hc, x.ne[2]
    flat = ggml.unary(ggml.reshape(x, hc * d.n_embd, nt), "RMS_NORM")
    mixes = ggml.mul_mat(g.wt(hc * d.n_embd, 2 * hc, name=f"hc_{stage}_fn"), flat)
    scale, base = g.wt(2, name=f"hc_{stage}_scale", type_="f32"), g.wt(2 * hc, name=f"hc_{stage}_base", type_="f32")
    row = ggml.row_size(scale.type, 1)
    scale_pre, scale_post = ggml.view(scale, (1,), (), 0), ggml.view(scale, (1,), (), row)
    base_pre, base_post = ggml.view(base, (hc,), (), 0), ggml.view(base, (hc,), (), hc * row)
    pre = ggml.view(mixes, (hc, nt), (mixes.nb[1],), 0)
    pre = ggml.unary(ggml.binary("ADD", ggml.binary("MUL", pre, scale_pre), base_pre), kind="sigmoid")
    pre = ggml.unary(pre, "SCALE")  # ggml_scale_bias: + eps
    post = ggml.view(mixes, (hc, nt), (mixes.nb[1],), ggml.row_size(mixes.type, hc))
    post = ggml.unary(ggml.binary("ADD", ggml.binary("MUL", post, scale_post), base_post), kind="sigmoid")
    post = ggml.unary(ggml.unary(post, "SCALE"), "SCALE")  # × magnitude, + eps
    return _hc_reduce(x, pre, hc, x.type), post


def _hc_post(d: Dims, x: Tensor, residual: Tensor, post: Tensor) -> Tensor:
    """llama_model_hy_v4::graph::build_hc_post: each stream's residual plus x weighted by its post gate, in f32,
    concatenated back into [n_embd, hc, n_tokens]."""
    nt = x.ne[1]
    x32, post32, res32 = ggml.cast(x, "f32"), ggml.cast(post, "f32"), ggml.cast(residual, "f32")
    out: Tensor | None = None
    for i in range(d.hc):
        res_i = ggml.view(res32, (d.n_embd, nt), (res32.nb[2],), i * res32.nb[1])
        post_i = ggml.view(post32, (1, nt), (post32.nb[1],), i * post32.nb[0])
        cur = ggml.reshape(ggml.binary("ADD", res_i, ggml.binary("MUL", x32, post_i)), d.n_embd, 1, nt)
        out = cur if out is None else ggml.concat(out, cur, 1)
    assert out is not None
    return ggml.cast(out, residual.type)


def build_hy_v4(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_hy_v4::graph (src/models/hy-v4.cpp, Tencent Hy V4): hc parallel residual streams (independent
    hyper-connections: each block's input a weighted reduce of the streams, its output distributed back by a
    post gate, all in f32); DeepSeek's absorbed MLA with attention sinks, where the file has an indexer
    (indexer.top_k > 0) through the DSA cache — the layers whose indexer is full run it without the Hadamard
    rotation, the others reuse the last top-k; the attention gated element-wise by a sigmoid before its output
    projection; DeepSeek's dense lead and routed plus shared experts without scales; the output rows kept once
    after the last layer, the streams reduced by the head's own weights before the final norm."""
    g = GraphContext(r, w)
    dsa = d.indexer[2] > 0
    inp = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv = g.attn_inp_k(r.kv_size)
    lid = g.attn_inp_lid(r.kv_size, d.indexer[1]) if dsa else None
    out_ids = g.inp_out_ids()
    hk, hv, rank, qr_rank, n_tok = d.head_k_mla, d.head_v_mla, d.kv_lora_rank, d.q_lora_rank, r.n_tokens
    inp_l = ggml.repeat(ggml.reshape(inp, d.n_embd, 1, n_tok), d.n_embd, d.hc, n_tok, 1)
    top_k: Tensor | None = None
    for il in g.layers(d.n_layer):
        g.il = il
        residual = inp_l
        cur, post = _hc_pre(g, d, inp_l, "attn")
        cur = g.norm(cur, g.wt(d.n_embd, name="attn_norm"))
        qr = g.norm(ggml.mul_mat(g.wt(d.n_embd, qr_rank, name="attn_q_a"), cur), g.wt(qr_rank, name="attn_q_a_norm"))
        if lid is not None and (not d.indexer_layers or d.indexer_layers[il] or top_k is None):
            top_k = _lightning_indexer(g, d, lid, pos, cur, qr, il, rotate=False)
        q_cur, k_cur, kv_c = _absorbed_mla(g, d, cur, qr, pos, d.n_head, rank, hk, k_norm=False)
        sinks = g.wt(d.n_head, name="attn_sinks", type_="f32")
        v_mla = g.wt(rank, hv, d.n_head, name="attn_v_b")
        attn = g.attn_k(kv, il, None, None, q_cur, k_cur, kv_c, v_mla, d.head_k, d.n_head_kv,
                        top_k=top_k if dsa else None, sinks=sinks)  # fmt: skip
        gate = ggml.unary(ggml.mul_mat(g.wt(d.n_embd, d.n_head * hv, name="attn_gate"), cur), kind="sigmoid")
        cur = ggml.mul_mat(g.wt(d.n_head * hv, d.n_embd, name="attn_output"), ggml.binary("MUL", attn, gate))
        inp_l = _hc_post(d, cur, residual, post)
        residual = inp_l
        cur, post = _hc_pre(g, d, inp_l, "ffn")
        cur = g.norm(cur, g.wt(d.n_embd, name="ffn_norm"))
        gating = _GATING.get(d.expert_gating, "softmax")
        cur = _dense_or_shared_moe(g, d, il, cur, d.n_ff_exp or d.n_ff, gating=gating,
                                   exp_probs_b=w.has("exp_probs_b.bias"), scales=False)  # fmt: skip
        inp_l = _hc_post(d, cur, residual, post)
    g.il = OUTPUT_LAYER
    flat = ggml.get_rows(ggml.reshape(inp_l, d.n_embd * d.hc, n_tok), out_ids)
    inp_l = ggml.reshape(flat, d.n_embd, d.hc, r.n_outputs)
    flat = ggml.unary(ggml.reshape(inp_l, d.hc * d.n_embd, inp_l.ne[2]), "RMS_NORM")
    mixes = ggml.mul_mat(g.wt(d.hc * d.n_embd, d.hc, name="hc_head_fn"), flat)
    pre = ggml.binary("MUL", mixes, g.wt(1, name="hc_head_scale", type_="f32"))
    pre = ggml.unary(ggml.binary("ADD", pre, g.wt(d.hc, name="hc_head_base", type_="f32")), kind="sigmoid")
    cur = _hc_reduce(inp_l, ggml.unary(pre, "SCALE"), d.hc, inp_l.type)
    return _deepseek_lm_head(g, d, cur)


def _msa_stream(
    d: Dims, st: int, q: Tensor, iq: Tensor, ik_kv: Tensor, k: Tensor, v: Tensor, msa: dict[str, Tensor]
) -> Tensor:
    """minimax-m3.cpp's batch path for one stream: the indexer keys gathered by position, block scores max-pooled
    and biased towards the local blocks, the top-k blocks turned into a block mask, expanded to cells and added to
    the causal mask, then one flash attention over every GQA group (build_attn_msa_fa)."""
    n_idx, hd_idx = iq.ne[0], iq.ne[1]
    n_kv, n_tps, n_ps = k.ne[2], q.ne[2] // k.ne[3], msa["pos_slot"].ne[0]
    d_head, hkv, n_head = k.ne[0], k.ne[1], q.ne[1]
    bias, pos_mask, cell_blk, mf = msa["bias"], msa["pos_mask"], msa["cell_blk"], msa["mf"]
    nblk = bias.ne[0]
    top = min(d.indexer[2], nblk)
    iq_s = ggml.view(iq, (n_idx, hd_idx, n_tps), (iq.nb[1], iq.nb[2]), st * n_tps * iq.nb[2])
    ik_s = ggml.view(ik_kv, (n_idx, n_kv), (ik_kv.nb[2],), st * ik_kv.nb[3])
    psl_s = ggml.view(msa["pos_slot"], (n_ps,), (), st * msa["pos_slot"].nb[1])
    pm_s = ggml.view(pos_mask, (n_ps, 1, n_tps), (pos_mask.nb[1], pos_mask.nb[1]), st * n_tps * pos_mask.nb[1])
    cb_s = ggml.view(cell_blk, (n_kv,), (), st * cell_blk.nb[1])
    mf_s = ggml.view(mf, (n_kv, n_tps, 1), (mf.nb[1], mf.nb[3]), st * mf.nb[3])
    bias_s = ggml.view(bias, (nblk, 1, n_tps), (bias.nb[1], bias.nb[1]), st * n_tps * bias.nb[1])
    q_s = ggml.view(q, (d_head, n_head, n_tps), (q.nb[1], q.nb[2]), st * n_tps * q.nb[2])
    k_s = ggml.view(k, (d_head, hkv, n_kv, 1), (k.nb[1], k.nb[2], k.nb[3]), st * k.nb[3])
    v_s = ggml.view(v, (d_head, hkv, n_kv, 1), (v.nb[1], v.nb[2], v.nb[3]), st * v.nb[3])
    ikp = ggml.get_rows(ik_s, psl_s)
    sc = ggml.mul_mat(ikp, ggml.reshape(iq_s, n_idx, hd_idx * n_tps))
    sc = ggml.add_inplace(ggml.reshape(sc, n_ps, hd_idx, n_tps), pm_s)
    bsf = ggml.binary("ADD", ggml.pool_2d_blocks(sc, d.indexer_block), bias_s)
    idx = ggml.top_k(bsf, top)
    ninf = ggml.cast(ggml.unary(bias_s, "SCALE"), "f16")
    ninf = ggml.repeat(ninf, nblk, hd_idx, n_tps, 1)
    zero = ggml.unary(ggml.cast(idx, "f32"), "SCALE")
    bm = ggml.set_rows(ggml.reshape(ninf, 1, nblk, hd_idx * n_tps), ggml.reshape(zero, 1, top, hd_idx * n_tps),
                       ggml.reshape(idx, top, hd_idx * n_tps))  # fmt: skip
    bm = ggml.cont(ggml.permute(ggml.reshape(bm, nblk, hd_idx, n_tps), 0, 2, 1, 3))
    bm2 = ggml.cont(ggml.transpose(ggml.reshape(bm, nblk, n_tps * hd_idx)))
    bmx = ggml.cont(ggml.transpose(ggml.get_rows(bm2, cb_s)))
    mask4 = ggml.add_inplace(ggml.reshape(bmx, n_kv, n_tps, hd_idx), mf_s)
    mask4 = ggml.cast(ggml.reshape(mask4, n_kv, n_tps, 1, hd_idx), "f16")
    kfa, vfa = ggml.permute(k_s, 0, 3, 1, 2), ggml.permute(v_s, 0, 3, 1, 2)
    gp = n_head // hkv
    c = kfa.ne[3]
    qq = ggml.permute(ggml.reshape(q_s, d_head, gp, c, n_head * n_tps // (gp * c)), 0, 2, 3, 1)
    o = ggml.permute(ggml.flash_attn_ext(qq, kfa, vfa, mask4), 0, 1, 3, 2)
    if not ggml.is_contiguous(o):
        o = ggml.cont(o)
    return ggml.reshape(o, d_head * n_head, n_tps)


def build_minimax_m3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_minimax_m3::graph (src/models/minimax-m3.cpp, MiniMax-M3): MiniMax-M2's attention (Q/K normed
    per head) through the MSA cache; with flash attention and per-sequence streams (MSA on) the layers after the
    dense lead attend sparsely — an indexer head per KV group, its keys in the indexer cache, block scores pooled
    over attention.indexer.block_size positions, the top-k blocks (_msa_stream) — the others densely; the leading
    dense layers' and the shared expert's SwiGLU-OAI, routed experts gated by the file's function with their bias."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    msa_on = r.flash_attn and (r.n_seqs == 1 or not r.kv_unified)
    n_v = d.head_v * d.n_head_kv
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, n_v)
    k_idxs_idx = ggml.inp("i64", (r.n_tokens,), "attn_inp_k_idxs_idx") if msa_on else None
    msa: dict[str, Tensor] = {}
    if msa_on:
        blk = d.indexer_block
        n_ps = -(-256 // blk) * blk  # get_n_pos at reserve (an empty cache): max(n_pad, 256), padded to blocks
        ns = kv.mask.ne[3]
        msa["bias"] = ggml.inp("f32", (n_ps // blk, r.n_tokens), "msa_bias")
        msa["pos_mask"] = ggml.inp("f32", (n_ps, r.n_tokens), "msa_pos_mask")
        msa["pos_slot"] = ggml.inp("i32", (n_ps, ns), "msa_pos_slot")
        msa["cell_blk"] = ggml.inp("i32", (r.kv_size, ns), "msa_cell_blk")
        msa["mf"] = ggml.cast(kv.mask, "f32")
    out_ids = g.inp_out_ids()
    n_idx, hd_idx = d.indexer[1], d.indexer[0]
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
        k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        if not (msa_on and il >= d.n_layer_dense_lead):
            cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        else:
            n_tok = r.n_tokens
            iq = ggml.reshape(g.lora_mm(g.wt(d.n_embd, hd_idx * n_idx, name="index_q_proj"), cur), n_idx, hd_idx, n_tok)
            ik = ggml.reshape(g.lora_mm(g.wt(d.n_embd, n_idx, name="index_k_proj"), cur), n_idx, 1, n_tok)
            iq = ggml.rope(g.norm(iq, g.wt(n_idx, name="index_q_norm")), pos, None)
            ik = ggml.rope(g.norm(ik, g.wt(n_idx, name="index_k_norm")), pos, None)
            assert k_idxs_idx is not None
            cache_idx = g.lid_cache(n_idx, r.kv_size, il)
            g.gf.expand(g.cpy_k(cache_idx, ik, k_idxs_idx))
            ik_kv = g.get_k(cache_idx, n_idx, 1)
            if kv.k_rot is not None:
                q, k = g.hadamard(q, kv.k_rot), g.hadamard(k, kv.k_rot)
            if kv.v_rot is not None:
                v = g.hadamard(v, kv.v_rot)
            for t in (q, k, v):
                g.gf.expand(t)
            cache_k = g.kv_cache(r.type_k, d.head_k * d.n_head_kv, r.kv_size, f"cache_k_l{il}", il)
            cache_v = g.kv_cache(r.type_v, n_v, r.kv_size, f"cache_v_l{il}", il)
            g.gf.expand(g.cpy_k(cache_k, k, kv.k_idxs))
            g.gf.expand(g.cpy_k(cache_v, v, kv.v_idxs))
            kk, vv = g.get_k(cache_k, d.head_k, d.n_head_kv), g.get_k(cache_v, d.head_v, d.n_head_kv)
            outs = [_msa_stream(d, st, q, iq, ik_kv, kk, vv, msa) for st in range(kk.ne[3])]
            cur = outs[0]
            for o in outs[1:]:
                cur = ggml.concat(cur, o, 1)
            if kv.v_rot is not None:
                cur = g.hadamard(cur, kv.v_rot)
            cur = g.lora_mm(wo, cur, g.opt("attn_output.scale", 1))
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        else:
            gating = _GATING.get(d.expert_gating, "softmax")
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=gating, norm_w=d.expert_weights_norm,
                            w_scale=d.expert_weights_scale, exp_probs_b=True,
                            act="swiglu_oai", scales=False)  # fmt: skip
            shexp = g.ffn_par(cur, d.n_embd, d.n_ff_exp * d.n_expert_shared, bias=False, scale=False, suffix="_shexp")
            cur = ggml.binary("ADD", moe, shexp)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


class _Glm5Next:
    """llama_model_glm5_next::graph (src/models/glm5-next.cpp): its inputs (build_inp_kpool's at reserve, from the
    full cache context: every pool the cache can hold, kv_size / kpool per sequence, all of them new, the cache
    safe), mHC and the k-pool indexer."""

    def __init__(self, g: GraphContext, d: Dims, kv: KVInputs) -> None:
        r = g.r
        self.g, self.d, self.kv = g, d, kv
        n_tok = r.n_tokens
        kpool = d.kpool
        n_pool_real = r.kv_size // kpool * r.n_seqs
        self.n_new = max(n_pool_real, 1)
        self.n_pool = max(64, -(-(n_pool_real + 1) // 64) * 64)  # kpool_pad
        n_top_pool = min(self.n_pool, d.indexer[2] // kpool)
        self.n_sel = kpool * n_top_pool + (kpool - 1 if d.kpool_tail else 0)
        self.k_idxs = ggml.inp("i64", (n_tok,), "kpool_k_idxs")
        self.pool_cells = ggml.inp("i32", (self.n_pool,), "kpool_pool_cells")
        self.pool_idxs = ggml.inp("i32", (kpool, self.n_pool), "kpool_pool_idxs")
        self.pool_mask = ggml.inp("f16", (self.n_pool, n_tok), "kpool_pool_mask")
        self.tail_idxs = ggml.inp("i32", (kpool - 1, n_tok), "kpool_tail_idxs")
        for t in (self.pool_cells, self.pool_idxs, self.pool_mask, self.tail_idxs):
            g.gf.expand(t)
        self.gather_mask = ggml.inp("f32", (self.n_sel, 1, 1, n_tok), "kpool_gather_mask")
        g.gf.expand(self.gather_mask)
        self.new_pool_idxs = ggml.inp("i32", (kpool, self.n_new), "kpool_new_pool_idxs")
        self.new_pool_rep = ggml.inp("i64", (self.n_new,), "kpool_new_pool_rep")

    def hc_pre(self, x: Tensor, stage: str) -> tuple[Tensor, Tensor, Tensor]:
        """build_hc_pre: DeepSeek-V4's (_mhc_pre)."""
        return _mhc_pre(self.g, self.d, x, stage)

    def kpool_select(self, cur: Tensor, qr: Tensor, il: int) -> Tensor:
        """build_kpool_select's scatter path: each token's key and pool gate cached with a zeroed pooled slot, the
        pool this ubatch completes pooled by a softmax over its members and scattered, every pool's key gathered,
        scored by the fused lightning indexer, the top pools (ordered by score) and the incomplete tail expanded
        to cells, each dead slot sent to its own dump row, and the selection turned into a mask with the causal
        one added."""
        g, d, r = self.g, self.d, self.g.r
        n_ih, ihead, top = d.indexer
        kpool, n_tok, n_pool = d.kpool, r.n_tokens, self.n_pool
        iq = ggml.reshape(ggml.mul_mat(g.wt(d.q_lora_rank, n_ih * ihead, name="indexer.attn_q_b"), qr), ihead, n_ih,
                          n_tok)  # fmt: skip
        ik = ggml.mul_mat(g.wt(d.n_embd, ihead, name="indexer.attn_k"), cur)
        ik = g.norm(ik, g.wt(ihead, name="indexer.k_norm"), g.wt(ihead, name="indexer.k_norm.bias"), rms=False)
        ig = ggml.mul_mat(g.wt(d.n_embd, ihead, name="indexer.kpool_gate"), cur)
        pzero = ggml.fill(ggml.new("f32", (ihead, n_tok)))
        packed = ggml.reshape(ggml.concat(ggml.concat(ik, ig, 0), pzero, 0), 3 * ihead, 1, n_tok)
        cache = g.lid_cache(3 * ihead, r.kv_size, il)
        g.gf.expand(g.cpy_k(cache, packed, self.k_idxs))
        n_cells = cache.ne[1] * cache.ne[2]
        key_gate = ggml.view(cache, (2 * ihead, n_cells), (cache.nb[1],), 0)
        pooled_v = ggml.view(cache, (ihead, n_cells), (cache.nb[1],), ggml.row_size(cache.type, 2 * ihead))
        n_new = self.n_new
        rows = ggml.get_rows(key_gate, ggml.reshape(self.new_pool_idxs, kpool * n_new))
        rows = ggml.reshape(rows, 2 * ihead, kpool, n_new)
        pk = ggml.view(rows, (ihead, kpool, n_new), (rows.nb[1], rows.nb[2]), 0)
        pg = ggml.view(rows, (ihead, kpool, n_new), (rows.nb[1], rows.nb[2]), ggml.row_size(rows.type, ihead))
        logits = ggml.binary("ADD", pg, g.wt(ihead, kpool, name="indexer.kpool_ape", type_="f32"))
        logits = ggml.cont(ggml.permute(logits, 1, 0, 2, 3))
        probs = ggml.reshape(ggml.soft_max(ggml.reshape(logits, kpool, ihead * n_new), None), kpool, ihead, n_new)
        pk = ggml.cont(ggml.permute(pk, 1, 0, 2, 3))
        pooled_new = ggml.reshape(ggml.sum_rows(ggml.binary("MUL", probs, pk)), ihead, n_new)
        g.gf.expand(ggml.set_rows(pooled_v, pooled_new, self.new_pool_rep))
        pooled = ggml.reshape(ggml.get_rows(pooled_v, self.pool_cells), ihead, 1, n_pool)
        weights = ggml.unary(ggml.mul_mat(g.wt(d.n_embd, n_ih, name="indexer.proj"), cur), "SCALE")
        score = ggml.new("f32", (n_pool, n_tok, 1, 1), "LIGHTNING_INDEXER", (iq, pooled, weights, self.pool_mask))
        n_top_pool = min(n_pool, top // kpool)
        top_k = ggml.top_k(score, n_top_pool)
        sel_score = ggml.get_rows(ggml.reshape(score, 1, n_pool, n_tok), top_k)
        order = ggml.argsort(ggml.reshape(sel_score, n_top_pool, n_tok))
        top_k = ggml.get_rows(ggml.reshape(ggml.cast(top_k, "f32"), 1, n_top_pool, n_tok), order)
        top_k = ggml.cast(ggml.cont(ggml.reshape(top_k, n_top_pool, n_tok)), "i32")
        sel_idx = ggml.get_rows(self.pool_idxs, ggml.reshape(top_k, n_top_pool * n_tok))
        sel_idx = ggml.reshape(sel_idx, kpool * n_top_pool, n_tok)
        if d.kpool_tail:
            sel_idx = ggml.concat(sel_idx, self.tail_idxs, 0)
        n_sel, n_kv, mask = self.n_sel, r.kv_size, self.kv.mask
        seed = ggml.cast(ggml.view(sel_idx, (1,), (), 0), "f32")
        mask_seed = ggml.fill(seed if mask.type == "f32" else ggml.cast(seed, mask.type))
        mask_all = ggml.reshape(ggml.repeat(mask_seed, 1, n_kv + n_sel, n_tok, 1), 1, n_kv + n_sel, n_tok)
        zeros = ggml.reshape(ggml.repeat(ggml.fill(seed), 1, n_sel, n_tok, 1), 1, n_sel, n_tok)
        live = ggml.unary(ggml.reshape(self.gather_mask, n_sel, n_tok), kind="exp")
        dump = ggml.arange(n_sel)
        idx_f = ggml.cast(sel_idx, "f32")
        idx_f = ggml.binary("ADD", ggml.binary("MUL", ggml.binary("SUB", idx_f, dump), live), dump)
        sel_idx = ggml.cast(idx_f, "i32")
        sel = ggml.set_rows(mask_all, zeros, ggml.reshape(sel_idx, n_sel, n_tok, 1))
        sel = ggml.view(sel, (n_kv, n_tok), (sel.nb[2],), 0)
        return ggml.binary("ADD", sel, ggml.reshape(mask, n_kv, n_tok))


class _Deepseek4:
    """llama_model_deepseek4::graph (src/models/deepseek4.cpp): mHC streams (the fused pre / Sinkhorn-comb / post
    ops), a low-rank Q and one shared RoPE'd KV head per layer over the raw window cache; the CSA layers (ratio 4)
    compress overlapping blocks of their per-token compressor state (restored from its f32 state rows, scored by a
    softmax, normed, rotated) into a compressed cache and attend it beside the window through the cells their
    lightning indexer (itself compressed the same way) selects; the HCA layers (ratio 128) compress whole blocks
    and attend every compressed cell; attention sinks; the output de-rotated and projected through grouped low-rank
    outputs; sqrt-softplus experts (picked by token on the hash layers) with clamped SwiGLU plus shared experts;
    the streams' output rows mixed by the head's weights. The reserve's compressor inputs are sized as
    dsv4_build_reserve_comp_plan sizes them (no kept snapshots: n_rs_seq 0)."""

    def __init__(self, d: Dims, r: Reserve, w: Weights) -> None:
        self.d, self.r, self.w = d, r, w
        self.g = GraphContext(r, w)
        self.ns = r.n_seqs  # every DeepSeek-V4 cache keeps a stream per sequence, whatever -kvu says
        self.comp: dict[str, dict[str, Tensor | None]] = {}

    def comp_inputs(self, kind: str) -> dict[str, Tensor | None]:
        """dsv4_build_comp_inputs over dsv4_build_reserve_comp_plan: state positions, persist rows, reads and
        writes for the worst case over any split of the ubatch into sequences, and the KQ mask over the cache."""
        got = self.comp.get(kind)
        if got is not None:
            return got
        r, ns = self.r, self.ns
        ratio = 128 if kind == "hca" else 4
        overlap = kind != "hca"
        state_size = (2 if overlap else 1) * ratio
        n_tok = r.n_tokens
        n_blocks = n_tok // ratio + max(1, r.n_seqs)
        n_persist = min(n_tok, state_size * ns)
        n_kv = r.comp_cells[1] if kind == "hca" else r.comp_cells[0]
        pre = f"dsv4_{kind}_"
        got = {
            "state_pos": ggml.inp("i32", (n_tok,), pre + "state_pos"),
            "persist_src": ggml.inp("i32", (n_persist,), pre + "state_persist_src_idxs") if n_persist else None,
            "persist_dst": ggml.inp("i32", (n_persist,), pre + "state_persist_dst_idxs") if n_persist else None,
            "read": ggml.inp("i32", ((2 if overlap else 1) * ratio * n_blocks,), pre + "state_read_idxs"),
            "write_idxs": ggml.inp("i64", (n_blocks,), pre + "state_write_idxs"),
            "write_pos": ggml.inp("i32", (n_blocks,), pre + "state_write_pos"),
            "kq_mask": None,
        }
        if n_kv > 0:
            f16 = kind == "lid" or r.flash_attn  # the CPU fuses the lightning indexer, whose mask is f16
            got["kq_mask"] = ggml.inp("f16" if f16 else "f32", (n_kv, n_tok // ns, 1, ns), pre + "kq_mask")
        self.comp[kind] = got
        return got

    def build(self) -> Graph:
        d, g, r = self.d, self.g, self.r
        n_tok, hc = r.n_tokens, d.hc
        inp = g.inp_embd(d.n_embd, d.n_vocab)
        pos = g.inp_pos()
        out_ids = g.inp_out_ids()
        ns = self.ns
        self.raw_k_idxs = ggml.inp("i64", (n_tok,), "attn_inp_k_idxs")
        self.raw_mask = ggml.inp("f16" if r.flash_attn else "f32", (r.kv_size_swa, n_tok // ns, 1, ns),
                                 "attn_inp_kq_mask")  # fmt: skip
        self.raw_rot = g._rot(r.type_k, d.head_k, True)
        self.comp_rot = {kind: g._rot(r.type_k, d.head_k, True) for kind in ("csa", "hca")}
        self.lid_rot = g.attn_inp_lid(1, d.indexer[1]).k_rot
        g.gf.expand(self.raw_mask)
        inp_l = ggml.repeat(ggml.reshape(inp, d.n_embd, 1, n_tok), d.n_embd, hc, n_tok, 1)
        for il in g.layers(d.n_layer):
            g.il = il
            residual = inp_l
            cur, post, comb = _mhc_pre(g, d, inp_l, "attn")
            cur = g.norm(cur, g.wt(d.n_embd, name="attn_norm"))
            cur = self.attention(cur, pos, il)
            inp_l = ggml.new("f32", (d.n_embd, hc, n_tok), "DSV4_HC_POST", (cur, residual, post, comb))
            residual = inp_l
            cur, post, comb = _mhc_pre(g, d, inp_l, "ffn")
            for t in (residual, post, comb):
                g.gf.expand(t)
            cur = g.norm(cur, g.wt(d.n_embd, name="ffn_norm"))
            shexp = g.ffn_par(cur, d.n_embd, d.n_ff_exp * d.n_expert_shared, bias=False, scale=False, suffix="_shexp")
            cur = ggml.binary("ADD", self.moe(cur, il), shexp)
            inp_l = ggml.new("f32", (d.n_embd, hc, n_tok), "DSV4_HC_POST", (cur, residual, post, comb))
        g.il = OUTPUT_LAYER
        flat = ggml.get_rows(ggml.reshape(inp_l, d.n_embd * hc, n_tok), out_ids)
        x = ggml.reshape(flat, d.n_embd, hc, r.n_outputs)
        nt = x.ne[2]
        mixes = ggml.mul_mat(g.wt(hc * d.n_embd, hc, name="hc_head_fn"),
                             ggml.unary(ggml.reshape(x, hc * d.n_embd, nt), "RMS_NORM"))  # fmt: skip
        pre = ggml.binary("ADD", ggml.binary("MUL", mixes, g.wt(1, name="hc_head_scale", type_="f32")),
                          g.wt(hc, name="hc_head_base", type_="f32"))  # fmt: skip
        pre = ggml.unary(ggml.unary(pre, kind="sigmoid"), "SCALE")
        mix: Tensor | None = None
        for ih in range(hc):
            xh = ggml.view(x, (d.n_embd, nt), (x.nb[2],), ih * x.nb[1])
            wh = ggml.view(pre, (1, nt), (pre.nb[1],), ih * pre.nb[0])
            term = ggml.binary("MUL", xh, wh)
            mix = term if mix is None else ggml.binary("ADD", mix, term)
        assert mix is not None
        cur = g.norm(mix, g.wt(d.n_embd, name="output_norm"))
        ggml.set_output(cur)
        cur = ggml.mul_mat(g.wt(d.n_embd, d.n_vocab, name="output"), cur)
        ggml.set_output(cur)
        g.gf.expand(cur)
        return g.gf

    def moe(self, cur: Tensor, il: int) -> Tensor:
        """build_moe_ffn with sqrt-softplus scores, the selection bias (the hash layers: the experts the token's
        row of ffn_gate_tid2eid names, no bias) and the clamped SwiGLU (ggml_swiglu_clamp: one op)."""
        d, g = self.d, self.g
        hashed = il < d.dsv4[2]
        selected = None
        if hashed:
            assert g.t_inp_tokens is not None
            table = g.wt(d.n_expert_used, d.n_vocab, name="ffn_gate_tid2eid", type_="i32")
            selected = ggml.get_rows(table, g.t_inp_tokens)
        return g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating="sqrtsoftplus",
                         norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale, exp_probs_b=not hashed,
                         scales=False, selected=selected)  # fmt: skip

    def state(self, kind: str, il: int, width: int) -> tuple[Tensor, Tensor]:
        """llama_dsv4_comp_state's kv and score tensors of a layer (f32, a row per state slot and stream), as
        get_kv_all / get_score_all view them."""
        ratio = 128 if kind == "hca" else 4
        rows = (1 if kind == "hca" else 2) * ratio * self.ns
        out = []
        for part in ("kv", "score"):
            t = ggml.weight("f32", (width, rows), f"dsv4_{kind}_state_{part}_l{il}")
            t.usage, t.layer = USAGE_CACHE, il
            out.append(t)
        return out[0], out[1]

    def compress(self, kind: str, il: int, cur: Tensor, head: int, prefix: str, cache: Tensor,
                 rot: Tensor | None) -> None:  # fmt: skip
        """One compressor of a layer: this batch's state rows (kv, and score with the positional bias), joined
        after the restored state, compressed into the cache at the written blocks, and the newest rows
        persisted into the state."""
        g = self.g
        inp = self.comp_inputs(kind)
        overlap = kind != "hca"
        ratio = 4 if overlap else 128
        width = (2 if overlap else 1) * head
        state_kv = ggml.mul_mat(g.wt(self.d.n_embd, width, name=f"{prefix}_kv"), cur)
        state_score = ggml.mul_mat(g.wt(self.d.n_embd, width, name=f"{prefix}_gate"), cur)
        assert inp["state_pos"] is not None
        ape = ggml.get_rows(g.wt(width, ratio, name=f"{prefix}_ape", type_="f32"), inp["state_pos"])
        state_score = ggml.binary("ADD", state_score, ape)
        kv_t, score_t = self.state(kind, il, width)
        n_rows = kv_t.ne[1]

        def whole(t: Tensor) -> Tensor:  # get_kv_all / get_score_all: a view of every state row
            return ggml.view(t, (width, n_rows), (t.nb[1],), 0)

        base_kv = ggml.view(whole(kv_t), (width, n_rows), (kv_t.nb[1],), 0)
        base_score = ggml.view(whole(score_t), (width, n_rows), (score_t.nb[1],), 0)
        source_kv = ggml.concat(base_kv, state_kv, 1)
        source_score = ggml.concat(base_score, state_score, 1)
        comp = self.compressed(source_kv, source_score, inp, g.wt(head, name=f"{prefix}_norm"), ratio, head, overlap)
        if rot is not None:
            comp = g.hadamard(comp, rot)
        assert inp["write_idxs"] is not None
        g.gf.expand(g.cpy_k(cache, comp, inp["write_idxs"]))
        if inp["persist_src"] is not None and inp["persist_dst"] is not None:
            for rows, t in ((state_kv, kv_t), (state_score, score_t)):
                kept = ggml.get_rows(rows, inp["persist_src"])
                g.gf.expand(ggml.set_rows(whole(t), kept, inp["persist_dst"]))

    def compressed(self, kv: Tensor, score: Tensor, inp: dict[str, Tensor | None], norm: Tensor, ratio: int,
                   head: int, overlap: bool) -> Tensor:  # fmt: skip
        """build_overlap_compressed_kv_from_state (CSA, the indexer: each block's previous and current halves,
        a zero / -inf row appended for the reads before the start) or build_hca_compressed_kv_from_state: the
        rows read per block, a softmax of the scores over them weighting the values, summed, normed and RoPE'd."""
        g = self.g
        read, write_pos = inp["read"], inp["write_pos"]
        assert read is not None and write_pos is not None
        n_blocks = write_pos.ne[0]
        if overlap:

            def zero_row(t: Tensor) -> Tensor:
                row = ggml.reshape(ggml.unary(ggml.view(t, (t.ne[0],), (), 0), "SCALE"), t.ne[0], 1)
                return ggml.concat(t, row, 1)

            kv_rows = ggml.get_rows(zero_row(kv), read)
            score_rows = ggml.get_rows(zero_row(score), read)
            n_read = ratio * n_blocks

            def halves(rows: Tensor) -> tuple[Tensor, Tensor]:
                prev = ggml.cont(ggml.view(rows, (head, n_read), (rows.nb[1],), 0))
                cur = ggml.cont(ggml.view(rows, (head, n_read), (rows.nb[1],),
                                          n_read * rows.nb[1] + ggml.row_size(rows.type, head)))  # fmt: skip
                return ggml.reshape(prev, head, ratio, n_blocks), ggml.reshape(cur, head, ratio, n_blocks)

            values = ggml.concat(*halves(kv_rows), 1)
            scores = ggml.concat(*halves(score_rows), 1)
        else:
            values = ggml.reshape(ggml.get_rows(kv, read), head, ratio, n_blocks)
            scores = ggml.reshape(ggml.get_rows(score, read), head, ratio, n_blocks)
        values = ggml.cont(ggml.permute(values, 1, 0, 2, 3))
        scores = ggml.cont(ggml.permute(scores, 1, 0, 2, 3))
        comp = ggml.sum_rows(ggml.binary("MUL", values, ggml.soft_max(scores, None)))
        comp = ggml.cont(ggml.permute(comp, 1, 0, 2, 3))
        comp = g.norm(comp, norm)
        return ggml.rope(comp, write_pos, None)

    def attention(self, cur: Tensor, pos: Tensor, il: int) -> Tensor:
        """build_attention_impl: Q and the shared KV head, the layer's compressors, then the raw window, CSA or
        HCA attention, de-rotated and projected out by groups."""
        d, g, r = self.d, self.g, self.r
        hd, n_tok, ns = d.head_k, r.n_tokens, self.ns
        ratio = d.compress[il] if d.compress else 0
        qr = g.norm(ggml.mul_mat(g.wt(d.n_embd, d.q_lora_rank, name="attn_q_a"), cur),
                    g.wt(d.q_lora_rank, name="attn_q_a_norm"))  # fmt: skip
        q = ggml.mul_mat(g.wt(d.q_lora_rank, d.n_head * hd, name="attn_q_b"), qr)
        q = ggml.rope(ggml.unary(ggml.reshape(q, hd, d.n_head, n_tok), "RMS_NORM"), pos, None)
        kv = g.norm(ggml.mul_mat(g.wt(d.n_embd, hd, name="attn_kv"), cur), g.wt(hd, name="attn_kv_a_norm"))
        kv = ggml.rope(ggml.reshape(kv, hd, 1, n_tok), pos, None)
        raw = g.kv_cache(r.type_k, hd, r.kv_size_swa, f"cache_k_l{il}", il, ns)
        if ratio == 4:
            csa_cache = g.kv_cache(r.type_k, hd, r.comp_cells[0], f"cache_k_l{il}", il, ns)
            self.compress("csa", il, cur, hd, "attn_compressor", csa_cache, self.comp_rot["csa"])
            ihead = d.indexer[1]
            lid_cache = g.kv_cache(r.type_k, ihead, r.comp_cells[0], f"cache_k_l{il}", il, ns)
            self.compress("lid", il, cur, ihead, "indexer_compressor", lid_cache, self.lid_rot)
        elif ratio == 128:
            hca_cache = g.kv_cache(r.type_k, hd, r.comp_cells[1], f"cache_k_l{il}", il, ns)
            self.compress("hca", il, cur, hd, "attn_compressor", hca_cache, self.comp_rot["hca"])
        sinks = g.wt(d.n_head, name="attn_sinks", type_="f32")
        rot = self.raw_rot
        extra: Tensor | None = None
        mask = self.raw_mask
        n_kv_max = 0
        if ratio == 4 and self.comp_inputs("csa")["kq_mask"] is not None:
            top_k = self.lid_top_k(qr, cur, pos, lid_cache)
            csa_mask = self.comp_inputs("csa")["kq_mask"]
            assert csa_mask is not None
            extra = csa_cache
            comp_mask = top_k_mask(csa_mask, top_k, "f16" if r.flash_attn else "f32")
            n_kv_max = min(self.raw_mask.ne[0], d.n_swa) + top_k.ne[0]
        elif ratio == 128 and self.comp_inputs("hca")["kq_mask"] is not None:
            extra = hca_cache
            comp_mask = self.comp_inputs("hca")["kq_mask"]  # type: ignore[assignment]
        if rot is not None:
            q, kv = g.hadamard(q, rot), g.hadamard(kv, rot)
        g.gf.expand(q)
        g.gf.expand(kv)
        g.gf.expand(g.cpy_k(raw, kv, self.raw_k_idxs))
        k = g.get_k(raw, hd, 1)
        if extra is not None:
            ck = g.get_k(extra, hd, 1)
            n_c = comp_mask.ne[0]
            ck = ggml.view(ck, (ck.ne[0], ck.ne[1], n_c, ck.ne[3]), (ck.nb[1], ck.nb[2], ck.nb[3]), 0)
            k = ggml.concat(k, ck, 2)
            mask = ggml.concat(mask, comp_mask, 0)
        out = g.attn_mha(q, k, k, None, mask, sinks, n_kv_max=n_kv_max)
        if rot is not None:
            out = g.hadamard(out, rot)
        out = ggml.reshape(out, hd, d.n_head, n_tok)
        out = ggml.dup(out, "ROPE_BACK", (out, pos))
        n_groups, o_rank, _ = d.dsv4
        out = ggml.permute(ggml.reshape(out, d.n_head * hd // n_groups, n_groups, n_tok), 0, 2, 1, 3)
        oa = ggml.mul_mat(g.wt(d.n_head * hd // n_groups, o_rank, n_groups, name="attn_output_a"), out)
        oa = ggml.cont(ggml.permute(oa, 0, 2, 1, 3), o_rank * n_groups, n_tok)
        return ggml.mul_mat(g.wt(o_rank * n_groups, d.n_embd, name="attn_output_b"), oa)

    def lid_top_k(self, qr: Tensor, cur: Tensor, pos: Tensor, lid_cache: Tensor) -> Tensor:
        """build_lid_top_k: the indexer's RoPE'd, rotated queries and scaled head weights against its
        compressed keys (the fused lightning indexer), the top indexer_top_k cells."""
        d, g = self.d, self.g
        n_ih, ihead, top = d.indexer
        n_tok = self.r.n_tokens
        iq = ggml.mul_mat(g.wt(d.q_lora_rank, n_ih * ihead, name="indexer.attn_q_b"), qr)
        iq = ggml.rope(ggml.reshape(iq, ihead, n_ih, n_tok), pos, None)
        assert self.lid_rot is not None
        iq = g.hadamard(iq, self.lid_rot)
        weights = ggml.unary(ggml.mul_mat(g.wt(d.n_embd, n_ih, name="indexer.proj"), cur), "SCALE")
        lid_mask = self.comp_inputs("lid")["kq_mask"]
        assert lid_mask is not None
        ik = g.get_k(lid_cache, ihead, 1)
        ik = ggml.view(ik, (ik.ne[0], ik.ne[1], lid_mask.ne[0], ik.ne[3]), (ik.nb[1], ik.nb[2], ik.nb[3]), 0)
        ns = ik.ne[3]
        iq = ggml.view(iq, (iq.ne[0], iq.ne[1], iq.ne[2] // ns, ns), (iq.nb[1], iq.nb[2], iq.nb[3] // ns), 0)
        weights = ggml.view(weights, (weights.ne[0], weights.ne[1] // ns, weights.ne[2], ns),
                            (weights.nb[1], weights.nb[2] // ns, weights.nb[3] // ns), 0)  # fmt: skip
        score = ggml.new("f32", (ik.ne[2], iq.ne[2], 1, iq.ne[3]), "LIGHTNING_INDEXER", (iq, ik, weights, lid_mask))
        return ggml.cont(ggml.top_k(score, min(score.ne[0], top)))


def _mhc_pre(g: GraphContext, d: Dims, x: Tensor, stage: str) -> tuple[Tensor, Tensor, Tensor]:
    """DeepSeek-V4's build_hc_pre with the fused ops (the CPU backend runs DSV4_HC_PRE and DSV4_HC_COMB; GLM-5-Next
    reuses it): the streams' 2·hc + hc² mixes, the pre weights reducing the streams, the post gate, the
    Sinkhorn-normalised comb."""
    hc, nt = d.hc, x.ne[2]
    flat = ggml.unary(ggml.reshape(x, hc * d.n_embd, nt), "RMS_NORM")
    mixes = ggml.mul_mat(g.wt(hc * d.n_embd, (2 + hc) * hc, name=f"hc_{stage}_fn"), flat)
    scale = g.wt(3, name=f"hc_{stage}_scale", type_="f32")
    base = g.wt((2 + hc) * hc, name=f"hc_{stage}_base", type_="f32")
    row = ggml.row_size(scale.type, 1)
    pre = ggml.view(mixes, (hc, nt), (mixes.nb[1],), 0)
    pre = ggml.binary("ADD", ggml.binary("MUL", pre, ggml.view(scale, (1,), (), 0)), ggml.view(base, (hc,), (), 0))
    pre = ggml.unary(ggml.unary(pre, kind="sigmoid"), "SCALE")
    post = ggml.view(mixes, (hc, nt), (mixes.nb[1],), ggml.row_size(mixes.type, hc))
    post = ggml.binary("ADD", ggml.binary("MUL", post, ggml.view(scale, (1,), (), row)),
                       ggml.view(base, (hc,), (), hc * row))  # fmt: skip
    post = ggml.unary(ggml.unary(post, kind="sigmoid"), "SCALE")
    comb = ggml.new("f32", (hc, hc, nt), "DSV4_HC_COMB", (mixes, scale, base))
    return ggml.new("f32", (d.n_embd, nt), "DSV4_HC_PRE", (x, pre)), post, comb


def build_glm5_next(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_glm5_next::graph (src/models/glm5-next.cpp, GLM-5-Next): four mHC residual streams (fused
    pre / Sinkhorn comb / post ops), KDA layers (K3's bounded gate, Kimi-Linear's low-rank output gate) and MLA
    layers without RoPE whose attention is restricted to the cells its k-pool indexer selects (the layers whose
    indexer is shared reuse the last selection); DeepSeek's dense lead and routed plus shared experts; the output
    rows kept before the streams are averaged. Only the scatter selection is built: a ubatch of at most 16 tokens
    over more cells than it selects takes llama.cpp's gather path, which has no graph here (_not_built)."""
    g = GraphContext(r, w)
    inp = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    kv = g.attn_inp_k(r.kv_size)
    gn = _Glm5Next(g, d, kv)
    out_ids = g.inp_out_ids()
    n_tok, rank, qr_rank, hk = r.n_tokens, d.kv_lora_rank, d.q_lora_rank, d.head_k_mla
    inp_l = ggml.repeat(ggml.reshape(inp, d.n_embd, 1, n_tok), d.n_embd, d.hc, n_tok, 1)
    prev_sel: Tensor | None = None
    for il in g.layers(d.n_layer):
        g.il = il
        residual = inp_l
        cur, post, comb = gn.hc_pre(inp_l, "attn")
        cur = g.norm(cur, g.wt(d.n_embd, name="attn_norm"))
        g.gf.expand(cur)
        if d.recurrent[il]:
            cur = _kda_layer(g, d, rs, il, cur, k3=False, glm5=True)
        else:
            qr = ggml.mul_mat(g.wt(d.n_embd, qr_rank, name="attn_q_a"), cur)
            qr = g.norm(qr, g.wt(qr_rank, name="attn_q_a_norm"))
            q = ggml.reshape(ggml.mul_mat(g.wt(qr_rank, d.n_head * hk, name="attn_q_b"), qr), hk, d.n_head, n_tok)
            kv_c = ggml.mul_mat(g.wt(d.n_embd, rank, name="attn_kv_a_mqa"), cur)
            kv_c = g.norm(kv_c, g.wt(rank, name="attn_kv_a_norm"))
            kv_c = ggml.reshape(kv_c, rank, 1, n_tok)
            q_abs = ggml.mul_mat(g.wt(hk, rank, d.n_head, name="attn_k_b"), ggml.permute(q, 0, 2, 1, 3))
            q_abs = ggml.permute(q_abs, 0, 2, 1, 3)
            if prev_sel is None or not d.indexer_layers or d.indexer_layers[il]:
                prev_sel = gn.kpool_select(cur, qr, il)
            g.gf.expand(q_abs)
            g.gf.expand(kv_c)
            cache = g.kv_cache(r.type_k, rank, r.kv_size, f"cache_k_l{il}", il)
            g.gf.expand(g.cpy_k(cache, kv_c, kv.k_idxs))
            mask = ggml.reshape(prev_sel, *kv.mask.ne)
            kk = g.get_k(cache, rank, 1)
            vv = ggml.view(kk, (rank, kk.ne[1], kk.ne[2], kk.ne[3]), (kk.nb[1], kk.nb[2], kk.nb[3]), 0)
            v_mla = g.wt(rank, d.head_v_mla, d.n_head, name="attn_v_b")
            cur = g.attn_mha(q_abs, kk, vv, None, mask, None, v_mla, n_kv_max=gn.n_sel)
            cur = ggml.mul_mat(g.wt(d.head_v_mla * d.n_head, d.n_embd, name="attn_output"), cur)
        inp_l = ggml.new("f32", (d.n_embd, d.hc, n_tok), "DSV4_HC_POST", (cur, residual, post, comb))
        residual = inp_l
        cur, post, comb = gn.hc_pre(inp_l, "ffn")
        cur = g.norm(cur, g.wt(d.n_embd, name="ffn_norm"))
        gating = _GATING.get(d.expert_gating, "softmax")
        cur = _dense_or_shared_moe(g, d, il, cur, d.n_ff_exp or d.n_ff, gating=gating,
                                   exp_probs_b=w.has("exp_probs_b.bias"), scales=False)  # fmt: skip
        inp_l = ggml.new("f32", (d.n_embd, d.hc, n_tok), "DSV4_HC_POST", (cur, residual, post, comb))
    g.il = OUTPUT_LAYER
    flat = ggml.get_rows(ggml.reshape(inp_l, d.n_embd * d.hc, n_tok), out_ids)
    x = ggml.reshape(flat, d.n_embd, d.hc, r.n_outputs)
    acc = ggml.view(x, (x.ne[0], x.ne[2]), (x.nb[2],), 0)
    for s_ in range(1, d.hc):
        acc = ggml.binary("ADD", acc, ggml.view(x, (x.ne[0], x.ne[2]), (x.nb[2],), s_ * x.nb[1]))
    return _deepseek_lm_head(g, d, ggml.unary(acc, "SCALE"))


def build_maple(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_maple::graph (src/models/maple.cpp): iSWA inputs, Q/K normed per head, RoPE on the window
    layers only, softmax-routed experts (normalised, no scales) in every layer."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, True)
    for il in g.layers(d.n_layer):
        g.il = il
        ffn_inp, cur = _window_rope_block(g, d, (kv, kv_swa), inp_l, pos, il, out_ids, None)
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff, w_scale=1.0, scales=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_plamo3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_plamo3::graph<iswa> (src/models/plamo3.cpp): the fused QKV without bias or scale, viewed per
    head; Q/K normed per head before RoPE; post-attention and post-FFN norms; a SwiGLU of one up projection split
    in halves."""
    g = GraphContext(r, w)
    iswa = any(d.swa)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv, kv_swa = _kv_inputs(g, d, iswa)
    out_ids = g.inp_out_ids()
    hq, hv, n_tok = d.head_k, d.head_v, r.n_tokens
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        width = hq * d.n_head + hq * d.n_head_kv + hv * d.n_head_kv
        qkv = ggml.mul_mat(g.wt(d.n_embd, width, name="attn_qkv"), cur)
        q = ggml.view(qkv, (hq, d.n_head, n_tok), (hq * 4, qkv.nb[1]), 0)
        k = ggml.view(qkv, (hq, d.n_head_kv, n_tok), (hq * 4, qkv.nb[1]), hq * d.n_head * 4)
        v = ggml.view(qkv, (hv, d.n_head_kv, n_tok), (hv * 4, qkv.nb[1]), (hq * d.n_head + hq * d.n_head_kv) * 4)
        q = ggml.rope(g.norm(q, g.wt(hq, name="attn_q_norm")), pos, None)
        k = ggml.rope(g.norm(k, g.wt(hq, name="attn_k_norm")), pos, None)
        wo = g.wt(hv * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv_swa if iswa and d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v,
                        d.n_head_kv, hq, hv, iswa=iswa)  # fmt: skip
        cur, residual = _last_outputs(d, il, out_ids, cur, inp_l)
        residual = ggml.binary("ADD", g.norm(cur, g.wt(d.n_embd, name="post_attention_norm")), residual)
        cur = g.norm(residual, g.wt(d.n_embd, name="ffn_norm"))
        cur = ggml.glu(ggml.mul_mat(g.wt(d.n_embd, 2 * d.n_ff, name="ffn_up"), cur))
        cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), cur)
        inp_l = ggml.binary("ADD", g.norm(cur, g.wt(d.n_embd, name="post_ffw_norm")), residual)
    return _lm_head(g, d, inp_l)


def build_cogvlm(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_cogvlm::graph (src/models/cogvlm.cpp), text tokens (the reserve's batch): the fused QKV without
    bias or scale viewed per head, ggml_rope, SwiGLU; no output rows kept (no inp_out_ids): the LM head runs on
    every token of the batch."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    h, n_tok = d.head_k, r.n_tokens
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        qkv = ggml.mul_mat(g.wt(d.n_embd, 3 * h * d.n_head, name="attn_qkv"), cur)
        q = ggml.view(qkv, (h, d.n_head, n_tok), (h * 4, qkv.nb[1]), 0)
        k = ggml.view(qkv, (h, d.n_head_kv, n_tok), (h * 4, qkv.nb[1]), d.n_embd * 4)
        v = ggml.view(qkv, (h, d.n_head_kv, n_tok), (h * 4, qkv.nb[1]), 2 * d.n_embd * 4)
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(h * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, h, d.head_v)
        ffn_inp = ggml.binary("ADD", cur, inp_l)
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_muse_glimmer(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_muse_glimmer::graph (src/models/muse-glimmer.cpp): the embeddings RMS-normed without weight,
    iSWA inputs, Q/K normed per head, RoPE on the window layers only, the attention output gated by a sigmoid of a
    projection of the layer's norm before the output projection, post-attention and post-FFN RMS norms (unpinned:
    ggml_rms_norm and ggml_mul, not build_norm), the logits scaled and soft-capped where the model says."""
    g = GraphContext(r, w)
    inp_l = g.norm(g.inp_embd(d.n_embd, d.n_vocab), None, with_il=False)
    pos = g.inp_pos()
    kv, kv_swa = _kv_inputs(g, d, True)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = _gated_attention(g, d, (kv, kv_swa), inp_l, pos, il, d.swa[il], pinned=False)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, d.n_ff, bias=False, scale=False)
        cur = g.norm(cur, g.wt(d.n_embd, name="post_ffw_norm"), with_il=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, scale=True, softcap=d.final_softcap)


def build_deci(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_deci::graph (src/models/deci.cpp; DeciLM, Llama-3.1-Nemotron-51B / Ultra-253B): llama's layer with
    each layer's own heads and feed-forward width — no query heads: no attention (the layer's input passes on);
    no KV heads: the "linear attention", the norm times attn_output; no feed-forward: the layer ends before its
    residual and the next layer reads this one's input (llama.cpp `continue`s before inpL = cur). The
    feed-forward's biases where the file has them, no scales."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    for il in g.layers(d.n_layer):
        g.il = il
        n_head, n_head_kv = d.layer_heads[il] if d.layer_heads else (d.n_head, d.n_head_kv)
        n_ff = d.n_ff_layers[il] if d.n_ff_layers and any(d.n_ff_layers) else d.n_ff
        inp_sa = inp_l
        cur = inp_l if n_head == 0 else g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if n_head > 0 and n_head_kv == 0:
            cur = g.lora_mm(g.wt(d.n_embd, d.n_embd, name="attn_output"), cur, None)
        elif n_head > 0:
            factors = g.opt("rope_freqs", d.head_k // 2)
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, n_head, n_head_kv, d.head_v)
            q, k = ggml.rope(q, pos, factors), ggml.rope(k, pos, factors)
            wo = g.wt(d.head_k * n_head, d.n_embd, name="attn_output")
            wo_b = g.opt("attn_output.bias", d.n_embd)
            cur = g.attn_kv(kv, il, wo, wo_b, g.opt("attn_output.scale", 1), q, k, v, n_head_kv, d.head_k, d.head_v)
        if il == d.n_layer - 1:
            cur, inp_sa = ggml.get_rows(cur, out_ids), ggml.get_rows(inp_sa, out_ids)
        if n_ff == 0:
            continue
        ffn_inp = ggml.binary("ADD", cur, inp_sa) if n_head > 0 else cur
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, n_ff, bias=True, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_hrm_text(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_hrm_text::graph (src/models/hrm-text.cpp): recursive stacks over one token stream — for each
    high cycle, the low stack run l_cycles times on zH + zL (zL starting from the learned hrm.z_l_init), then the
    high stack on zH + zL; every pass has its own cache slots (the file's blocks) but the low passes share the
    first stack's weights (blocks 0 … lps − 1) and the high passes the second's (lps … 2·lps − 1). A stack's layer:
    weightless RMS norms, a sigmoid gate on the attention output (as Qwen3-Next's), a SwiGLU feed-forward without
    biases or scales; a weightless norm after each stack; no output norm."""
    g = GraphContext(r, w)
    lps, h_cycles, l_cycles = d.hrm
    zh = g.inp_embd(d.n_embd, d.n_vocab, scale=1.0 if d.embedding_scale else 0.0)
    pos = g.inp_pos()
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    weights: dict[tuple[int, str], Tensor] = {}  # the aliased layers' tensors, made once (llama.cpp's loader)
    n_q = d.head_k * d.n_head

    def wt(bid: int, name: str, ne0: int, ne1: int = 1) -> Tensor:
        t = weights.get((bid, name))
        if t is None:
            building = g.il
            g.il = bid
            t = weights[(bid, name)] = g.wt(ne0, ne1, name=name)
            g.il = building
        return t

    def opt(bid: int, name: str, ne0: int) -> Tensor | None:
        return wt(bid, name, ne0) if w.has(name) else None

    def stack(cur: Tensor, slot_base: int, bid_base: int) -> Tensor:
        for i in range(lps):
            s, bid = slot_base + i, bid_base + i
            g.il = s
            inp_sa = cur
            cur = g.norm(cur, None)
            gate = ggml.mul_mat(wt(bid, "attn_gate", d.n_embd, n_q), cur)
            qkv = []
            for name, heads, head in (("attn_q", d.n_head, d.head_k), ("attn_k", d.n_head_kv, d.head_k),
                                      ("attn_v", d.n_head_kv, d.head_v)):  # fmt: skip
                t = g.lora_mm(wt(bid, name, d.n_embd, heads * head), cur, opt(bid, name + ".scale", 1))
                b = opt(bid, name + ".bias", heads * head)
                qkv.append(ggml.reshape(ggml.binary("ADD", t, b) if b is not None else t, head, heads, r.n_tokens))
            q, k, v = qkv
            q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
            cur = g.attn_kv(kv, s, None, None, None, q, k, v, d.n_head_kv, d.head_k, d.head_v)
            cur = ggml.binary("MUL", cur, ggml.unary(gate, kind="sigmoid"))
            cur = g.lora_mm(wt(bid, "attn_output", n_q, d.n_embd), cur, opt(bid, "attn_output.scale", 1))
            cur = ggml.binary("ADD", cur, inp_sa)
            inp_sa = cur
            cur = g.norm(cur, None)
            up = ggml.mul_mat(wt(bid, "ffn_up", d.n_embd, d.n_ff), cur)
            gt = ggml.mul_mat(wt(bid, "ffn_gate", d.n_embd, d.n_ff), cur)
            cur = ggml.mul_mat(wt(bid, "ffn_down", d.n_ff, d.n_embd), ggml.glu_split(gt, up))
            cur = ggml.binary("ADD", cur, inp_sa)
        g.il = slot_base
        return g.norm(cur, None)

    g.il = 0
    zl = wt(0, "hrm.z_l_init", d.n_embd)
    for h in range(h_cycles):
        for low in range(l_cycles):
            zl = stack(ggml.binary("ADD", zh, zl), (h * (l_cycles + 1) + low) * lps, 0)
        zh = stack(ggml.binary("ADD", zh, zl), (h * (l_cycles + 1) + l_cycles) * lps, lps)
    g.il = OUTPUT_LAYER
    cur = ggml.get_rows(zh, out_ids)
    ggml.set_output(cur)  # (res->t_embd)
    cur = g.lora_mm(g.wt(d.n_embd, d.n_vocab, name="output"), cur, g.output_scale())
    ggml.set_output(cur)
    g.gf.expand(cur)
    return g.gf


def build_laguna(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_laguna::graph (src/models/laguna.cpp, Poolside Laguna): afmoe's shape without its scalings —
    each layer's own heads, Q/K normed per head, RoPE, attention through the iSWA pair where the file has a window
    (else one cache) without its output projection, gated by the softplus of a projection of the layer's norm —
    per head (the gate one value per head, as a file without the tensor has it) or per element (the stored gate
    as wide as the attention) — then the output projection; dense lead layers, then experts routed by the file's
    gating function with their probability bias, plus one always-on shared expert; no post norms."""
    g = GraphContext(r, w)
    has_swa = any(d.swa)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, has_swa)
    n_shexp = d.n_ff_shexp or d.n_ff_exp * max(d.n_expert_shared, 1)
    for il in g.layers(d.n_layer):
        g.il = il
        n_head, n_head_kv = d.layer_heads[il] if d.layer_heads else (d.n_head, d.n_head_kv)
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, n_head, n_head_kv, d.head_v)
        per_head = d.gate_width in (0, n_head)
        gate = g.lora_mm(g.wt(d.n_embd, n_head if per_head else d.head_k * n_head, name="attn_gate"), cur)
        q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
        k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        cache = kv_swa if has_swa and d.swa[il] else kv
        cur = g.attn_kv(cache, il, None, None, None, q, k, v, n_head_kv, d.head_k, d.head_v, iswa=has_swa)
        gate = ggml.unary(gate, kind="softplus")
        if per_head:
            cur = ggml.reshape(cur, d.head_k, n_head, r.n_tokens)
            cur = ggml.binary("MUL", cur, ggml.reshape(gate, 1, n_head, r.n_tokens))
            cur = ggml.reshape(cur, d.head_k * n_head, r.n_tokens)
        else:
            cur = ggml.binary("MUL", cur, gate)
        cur = g.lora_mm(g.wt(d.head_k * n_head, d.n_embd, name="attn_output"), cur, g.opt("attn_output.scale", 1))
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il >= d.n_layer_dense_lead:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING[d.expert_gating],
                            norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale, exp_probs_b=True,
                            scales=False)  # fmt: skip
            cur = ggml.binary("ADD", moe, g.ffn_par(cur, d.n_embd, n_shexp, bias=False, scale=False, suffix="_shexp"))
        else:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_mimo2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_mimo2::graph (src/models/mimo2.cpp, Xiaomi MiMo-V2): iSWA attention with each layer's own heads,
    the projections without biases or scales (the fused QKV where the file has one), K and V heads of their own
    widths, attention sinks where the file has them, the output scaled by attention.value_scale where it says;
    then a dense SwiGLU (with biases) on the layers without a router, else sigmoid-routed experts with their bias
    and normalised weights; the trunk only (the MTP block is the draft's)."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, True)
    for il in g.layers(d.n_layer):
        g.il = il
        n_head, n_head_kv = d.layer_heads[il] if d.layer_heads else (d.n_head, d.n_head_kv)
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if "attn_qkv" in w.present and not w.all_optional:
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, n_head, n_head_kv, d.head_v)
        else:
            q, k, v = (
                ggml.reshape(ggml.mul_mat(g.wt(d.n_embd, head * heads, name=name), cur), head, heads, r.n_tokens)
                for name, heads, head in (("attn_q", n_head, d.head_k), ("attn_k", n_head_kv, d.head_k),
                                          ("attn_v", n_head_kv, d.head_v))
            )  # fmt: skip
        q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(d.head_v * n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv_swa if d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, n_head_kv,
                        d.head_k, d.head_v, sinks=g.opt("attn_sinks", n_head), iswa=True)  # fmt: skip
        if d.attn_value_scale:
            cur = ggml.unary(cur, "SCALE")
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il in d.dense_layers:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=True, scale=False)
        else:
            cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating="sigmoid", norm_w=True,
                            w_scale=d.expert_weights_scale, exp_probs_b=True, scales=False)  # fmt: skip
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def _plamo2_mamba(g: GraphContext, d: Dims, rs: RSInputs, cur: Tensor, il: int) -> Tensor:
    """llama_model_plamo2::graph::build_plamo2_mamba_layer (src/models/plamo2.cpp): Mamba-2's heads without groups —
    in_proj's z and x interleaved per head (permuted, made contiguous, split), the conv state and depthwise conv
    with SiLU and no bias, x_proj into B, C and dt (max(64, n_embd / 16) wide), each RMS-normed by its own weight,
    dt_proj with its bias, the scan over head_dim-wide heads, the new state stored, D skip, the gate, out_proj."""
    r = g.r
    d_conv, d_inner, d_state, _n_group, n_heads = d.ssm
    head_dim = d_inner // n_heads
    ns, nst = r.n_seqs, r.n_tokens // r.n_seqs
    dt_dim = max(64, d.n_embd // 16)
    n_embd_r, n_embd_s = (d_conv - 1) * d_inner, d_state * d_inner
    conv_all = g.rs_cache(r.type_r, n_embd_r, f"cache_r_l{il}", il)
    ssm_all = g.rs_cache(r.type_s, n_embd_s, f"cache_s_l{il}", il)
    conv = ggml.reshape(g.rs(rs, conv_all, n_embd_r), d_conv - 1, d_inner, ns)
    cur = ggml.reshape(cur, cur.ne[0], nst, ns)
    zx = ggml.mul_mat(g.wt(d.n_embd, 2 * d_inner, name="ssm_in"), cur)
    zx = ggml.cont(ggml.permute(zx, 0, 2, 1, 3), head_dim * 2, n_heads, nst, ns)
    nb = (zx.nb[1], zx.nb[2], zx.nb[3])
    x = ggml.cont(ggml.view(zx, (head_dim, n_heads, nst, ns), nb, head_dim * 4), head_dim * n_heads, nst, ns)
    z = ggml.view(zx, (head_dim, n_heads, nst, ns), nb, 0)
    conv_x = ggml.concat(conv, ggml.transpose(x), 0)
    last = ggml.view(conv_x, (d_conv - 1, d_inner, ns), (conv_x.nb[1], conv_x.nb[2]), nst * conv_x.nb[0])
    g.gf.expand(ggml.cpy(last, ggml.view(conv_all, ((d_conv - 1) * d_inner * ns,), (), 0)))
    x = ggml.unary(ggml.ssm_conv(conv_x, g.wt(d_conv, d_inner, name="ssm_conv1d")), kind="silu")
    x_bcdt = ggml.mul_mat(g.wt(d_inner, dt_dim + 2 * d_state, name="ssm_x"), x)
    nb2 = (x_bcdt.nb[1], x_bcdt.nb[2])
    b = ggml.view(x_bcdt, (d_state, nst, ns), nb2, 0)
    c = ggml.view(x_bcdt, (d_state, nst, ns), nb2, 4 * d_state)
    dt = ggml.view(x_bcdt, (dt_dim, nst, ns), nb2, 4 * 2 * d_state)
    b = g.norm(b, g.wt(d_state, name="ssm_b_norm"))
    c = g.norm(c, g.wt(d_state, name="ssm_c_norm"))
    dt = g.norm(dt, g.wt(dt_dim, name="ssm_dt_norm"))
    dt = ggml.binary("ADD", ggml.mul_mat(g.wt(dt_dim, n_heads, name="ssm_dt"), dt), g.wt(n_heads, name="ssm_dt.bias"))
    a = ggml.reshape(g.wt(n_heads, name="ssm_a", type_="f32"), 1, n_heads)
    x = ggml.view(x, (head_dim, n_heads, nst, ns), (head_dim * 4, d_inner * 4, d_inner * nst * 4), 0)
    b = ggml.view(b, (d_state, 1, nst, ns), (d_state * b.nb[0], b.nb[1], b.nb[2]), 0)
    c = ggml.view(c, (d_state, 1, nst, ns), (d_state * c.nb[0], c.nb[1], c.nb[2]), 0)

    def scan(states: Tensor, ids: Tensor) -> Tensor:
        return ggml.ssm_scan(ggml.reshape(states, d_state, head_dim, n_heads, r.rs_size), x, dt, a, b, c, ids, 1)

    y_ssm = g.rs(rs, ssm_all, n_embd_s, scan)
    g.gf.expand(ggml.cpy(ggml.view(y_ssm, (n_embd_s * ns,), (), d_inner * nst * ns * 4),
                         ggml.view(ssm_all, (n_embd_s * ns,), (), 0)))  # fmt: skip
    y = ggml.view(y_ssm, (head_dim, n_heads, nst, ns), (head_dim * 4, d_inner * 4, d_inner * nst * 4), 0)
    y = ggml.binary("ADD", y, ggml.binary("MUL", x, ggml.reshape(g.wt(n_heads, name="ssm_d", type_="f32"), 1, n_heads)))
    y = ggml.glu_split(ggml.cont(z), y)
    y = ggml.view(y, (d_inner, nst, ns), (y.nb[2], y.nb[3]), 0)
    cur = ggml.mul_mat(g.wt(d_inner, d.n_embd, name="ssm_out"), y)
    return ggml.reshape(cur, cur.ne[0], nst * ns)


def build_plamo2(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_plamo2::graph (src/models/plamo2.cpp, PLaMo 2): a hybrid — the layers without KV heads are its
    Mamba mixer (_plamo2_mamba), the others attention over the fused QKV viewed per head, Q and K each normed per
    head by a [head, heads] weight before RoPE; every layer's mixer and feed-forward (up → SwiGLU → down, n_ff wide)
    framed by pre and post norms."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos()
    rs = g.rs_inp()
    kv = g.attn_inp_kv(r.kv_size, d.head_k, d.head_v, d.head_v * d.n_head_kv) if not all(d.recurrent) else None
    out_ids = g.inp_out_ids()
    h, hv = d.head_k, d.head_v
    for il in g.layers(d.n_layer):
        g.il = il
        residual = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.recurrent[il] or kv is None:
            cur = _plamo2_mamba(g, d, rs, cur, il)
        else:
            n_q, n_k = h * d.n_head, h * d.n_head_kv
            qkv = ggml.mul_mat(g.wt(d.n_embd, n_q + n_k + hv * d.n_head_kv, name="attn_qkv"), cur)
            q = ggml.view(qkv, (h, d.n_head, r.n_tokens), (h * 4, qkv.nb[1]), 0)
            k = ggml.view(qkv, (h, d.n_head_kv, r.n_tokens), (h * 4, qkv.nb[1]), n_q * 4)
            v = ggml.view(qkv, (hv, d.n_head_kv, r.n_tokens), (hv * 4, qkv.nb[1]), (n_q + n_k) * 4)
            q = ggml.rope(g.norm(q, g.wt(h, d.n_head, name="attn_q_norm")), pos, None)
            k = ggml.rope(g.norm(k, g.wt(h, d.n_head_kv, name="attn_k_norm")), pos, None)
            wo = g.wt(hv * d.n_head, d.n_embd, name="attn_output")
            cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, h, hv)
        cur, residual = _last_outputs(d, il, out_ids, cur, residual)
        cur = g.norm(cur, g.wt(d.n_embd, name="post_attention_norm"))
        residual = ggml.binary("ADD", cur, residual)
        cur = g.norm(residual, g.wt(d.n_embd, name="ffn_norm"))
        cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"),
                           ggml.glu(ggml.mul_mat(g.wt(d.n_embd, 2 * d.n_ff, name="ffn_up"), cur)))  # fmt: skip
        cur = g.norm(cur, g.wt(d.n_embd, name="post_ffw_norm"))
        inp_l = ggml.binary("ADD", cur, residual)
    return _lm_head(g, d, inp_l)


def build_hy_v3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_hy_v3::graph (src/models/hy-v3.cpp, Tencent Hy V3): llama's attention with Q and K normed per head
    (both norms, then both RoPEs); a dense SwiGLU with biases and scales on the layers stored without a router,
    else experts routed by the file's gating function (sigmoid where it says none) with their bias, scales and the
    merged gate_up where the file has it, plus the always-on shared expert; every token through the last layer,
    the output rows taken after the final norm (embeddings_nextn_masked off); the trunk only."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    o = Decoder(qk_norm=True, qk_order="norms_first")
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q, k = _qk_norm_rope(g, d, o, q, k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il in d.dense_layers:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=True, scale=True)
        else:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING.get(d.expert_gating or 2,
                            "sigmoid"), norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale,
                            exp_probs_b=True, gate_up=w.has("ffn_gate_up_exps"))  # fmt: skip
            shexp = g.ffn_par(cur, d.n_embd, d.n_ff_shexp, bias=False, scale=True, suffix="_shexp")
            cur = ggml.binary("ADD", moe, shexp)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, out_ids=out_ids)


def build_bailingmoe3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_bailingmoe3::graph (src/models/bailingmoe3.cpp, Ling / Ring 3): a hybrid of KDA linear attention
    — Q, K and V each projected and run through its own short causal conv (one conv state of the three, the new
    one stored), a gate per channel (sigmoid of the projection plus bias times A, scaled), beta, Q and K L2-normed,
    the fused delta net, the output normed per head and gated — and MLA attention over a K-only cache (the low-rank
    Q where the file has it, K absorbed by wk_b, V decompressed by wv_b) gated per head by a sigmoid; dense lead
    layers, then routed experts with their bias plus the shared experts; the output rows after the final norm."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    kv = g.attn_inp_k(r.kv_size)
    pos = g.inp_pos(4 if d.mrope else 1)
    out_ids = g.inp_out_ids()
    n_head, hd, d_conv = d.n_head, d.kda_head, d.ssm[0]
    d_inner, ns, nst = n_head * hd, r.n_seqs, r.n_tokens // r.n_seqs
    conv_size = (d_conv - 1) * d_inner
    n_embd_r, n_embd_s = 3 * conv_size, hd * hd * n_head
    hk, hv, n_rot, rank = d.head_k_mla, d.head_v_mla, d.n_rot, d.kv_lora_rank
    nope = hk - n_rot
    n_tok = r.n_tokens
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        if d.recurrent[il]:
            conv_all = g.rs_cache(r.type_r, n_embd_r, f"cache_r_l{il}", il)
            conv_state_all = g.rs(rs, conv_all, n_embd_r)

            def conv1d(which: int, name: str, x: Tensor, conv_all: Tensor = conv_all,
                       conv_state_all: Tensor = conv_state_all) -> Tensor:  # fmt: skip
                f = 4
                state = ggml.view(conv_state_all, (d_conv - 1, d_inner, ns), ((d_conv - 1) * f, n_embd_r * f),
                                  which * conv_size * f)  # fmt: skip
                proj = ggml.reshape(ggml.mul_mat(g.wt(d.n_embd, d_inner, name=name), x), d_inner, nst, ns)
                conv_x = ggml.concat(state, ggml.transpose(proj), 0)
                snap = ggml.view(conv_x, (d_conv - 1, d_inner, ns), (conv_x.nb[1], conv_x.nb[2]),
                                 (conv_x.ne[0] - (d_conv - 1)) * conv_x.nb[0])  # fmt: skip
                dst = ggml.view(conv_all, (d_conv - 1, d_inner, ns), ((d_conv - 1) * f, n_embd_r * f),
                                which * conv_size * f)  # fmt: skip
                g.gf.expand(ggml.cpy(snap, dst))
                weight = ggml.reshape(
                    g.wt(d_conv, 1, d_inner, name=f"ssm_conv1d_{'qkv'[which]}", type_="f32"), d_conv, d_inner
                )
                out = ggml.unary(ggml.reshape(ggml.ssm_conv(conv_x, weight), d_inner, n_tok), kind="silu")
                return ggml.reshape(out, hd, n_head, nst, ns)

            q = conv1d(0, "attn_q", cur)
            k = conv1d(1, "attn_k", cur)
            v = conv1d(2, "attn_v", cur)
            gate = ggml.binary("ADD", ggml.mul_mat(g.wt(d.n_embd, d_inner, name="ssm_f_a"), cur),
                               g.wt(d_inner, name="ssm_dt.bias"))  # fmt: skip
            gate = ggml.reshape(gate, hd, n_head, n_tok)
            a = ggml.reshape(g.wt(1, n_head, name="ssm_a", type_="f32"), 1, n_head, 1)
            gate = ggml.unary(ggml.unary(ggml.binary("MUL", gate, a), kind="sigmoid"), "SCALE")
            gate = ggml.reshape(gate, hd, n_head, nst, ns)
            beta = ggml.mul_mat(g.wt(d.n_embd, n_head, name="ssm_beta"), cur)
            beta = ggml.unary(ggml.reshape(beta, 1, n_head, nst, ns), kind="sigmoid")
            q, k = _l2_norm(q), _l2_norm(k)
            ssm_all = g.rs_cache(r.type_s, n_embd_s, f"cache_s_l{il}", il)
            state = ggml.reshape(g.rs(rs, ssm_all, n_embd_s), hd, hd, n_head, ns)
            out = ggml.cont(_delta_net(g, ssm_all, n_embd_s, q, k, v, gate, beta, state))
            out_gate = ggml.reshape(ggml.mul_mat(g.wt(d.n_embd, d_inner, name="ssm_g_a"), cur), hd, n_head, n_tok)
            out = g.norm(ggml.reshape(out, hd, n_head, n_tok), g.wt(hd, name="ssm_norm"))
            out = ggml.binary("MUL", out, ggml.unary(out_gate, kind="sigmoid"))
            cur = ggml.mul_mat(g.wt(d_inner, d.n_embd, name="attn_output"), ggml.cont(out, d_inner, n_tok))
        else:
            attn_inp = cur
            if d.q_lora_rank:
                q_all = g.norm(ggml.mul_mat(g.wt(d.n_embd, d.q_lora_rank, name="attn_q_a"), cur),
                               g.wt(d.q_lora_rank, name="attn_q_a_norm"))  # fmt: skip
                q_all = ggml.mul_mat(g.wt(d.q_lora_rank, n_head * hk, name="attn_q_b"), q_all)
            else:
                q_all = ggml.mul_mat(g.wt(d.n_embd, n_head * hk, name="attn_q"), cur)
            row = ggml.row_size(q_all.type, hk)
            q_nope = ggml.view(q_all, (nope, n_head, n_tok), (row, row * n_head), 0)
            q_pe = ggml.view(q_all, (n_rot, n_head, n_tok), (row, row * n_head), ggml.row_size(q_all.type, nope))
            kv_all = ggml.mul_mat(g.wt(d.n_embd, rank + n_rot, name="attn_kv_a_mqa"), cur)
            krow = ggml.row_size(kv_all.type, rank + n_rot)
            kv_c = ggml.view(kv_all, (rank, n_tok), (krow,), 0)
            k_pe = ggml.view(kv_all, (n_rot, 1, n_tok), (krow, krow), ggml.row_size(kv_all.type, rank))
            q_pe, k_pe = ggml.rope(q_pe, pos, None), ggml.rope(k_pe, pos, None)
            kv_c = g.norm(kv_c, g.wt(rank, name="attn_kv_a_norm"))
            q_nope = ggml.permute(ggml.mul_mat(g.wt(nope, rank, n_head, name="attn_k_b"),
                                               ggml.permute(q_nope, 0, 2, 1, 3)), 0, 2, 1, 3)  # fmt: skip
            q = ggml.concat(q_nope, q_pe, 0)
            kv_c = ggml.reshape(kv_c, rank, 1, n_tok)
            k = ggml.concat(kv_c, k_pe, 0)
            v_mla = g.wt(rank, hv, n_head, name="attn_v_b")
            cur = g.attn_k(kv, il, None, None, q, k, kv_c, v_mla, rank + n_rot, 1)
            gate = ggml.mul_mat(g.wt(d.n_embd, n_head, name="attn_gate"), attn_inp)
            gate = ggml.unary(ggml.reshape(gate, 1, n_head, n_tok), kind="sigmoid")
            cur = ggml.binary("MUL", ggml.reshape(cur, hv, n_head, n_tok), gate)
            cur = ggml.mul_mat(g.wt(hv * n_head, d.n_embd, name="attn_output"), ggml.cont(cur, hv * n_head, n_tok))
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il < d.n_layer_dense_lead:  # (build_ffn clamps by swiglu_clamp_shexp whichever FFN it builds)
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False, clamp=il in d.clamp_shexp)
        else:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING[d.expert_gating],
                            norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale, exp_probs_b=True,
                            scales=False, clamp=il in d.clamp_exp)  # fmt: skip
            n_shexp = d.n_ff_shexp or d.n_ff_exp * max(d.n_expert_shared, 1)
            shexp = g.ffn_par(cur, d.n_embd, n_shexp, bias=False, scale=False, suffix="_shexp",
                              clamp=il in d.clamp_shexp)  # fmt: skip
            cur = ggml.binary("ADD", moe, shexp)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, out_ids=out_ids, output_scale=False)


def _kda_conv(
    g: GraphContext, d: Dims, conv_all: Tensor, conv_state_all: Tensor, which: int, x: Tensor, proj: str | None,
    n_head: int, n_embd_r: int,
) -> Tensor:  # fmt: skip
    """kimi-linear.cpp's and bailingmoe3.cpp's causal_conv1d: one of Q, K, V (`which`) projected (`proj`; None: the
    input already is, a fused QKV's view), concatenated to its part of the conv state, the last d_conv − 1 columns
    stored back, the depthwise conv over it, SiLU, viewed as heads."""
    r, f = g.r, 4
    hd, d_conv = d.kda_head, d.ssm[0]
    d_inner, ns, nst = hd * n_head, r.n_seqs, r.n_tokens // r.n_seqs
    conv_size = (d_conv - 1) * d_inner
    state = ggml.view(
        conv_state_all, (d_conv - 1, d_inner, ns), ((d_conv - 1) * f, n_embd_r * f), which * conv_size * f
    )
    if proj is not None:
        x = ggml.mul_mat(g.wt(d.n_embd, d_inner, name=proj), x)
    conv_x = ggml.concat(state, ggml.transpose(ggml.reshape(x, d_inner, nst, ns)), 0)
    snap = ggml.view(conv_x, (d_conv - 1, d_inner, ns), (conv_x.nb[1], conv_x.nb[2]), nst * conv_x.nb[0])
    dst = ggml.view(conv_all, (d_conv - 1, d_inner, ns), ((d_conv - 1) * f, n_embd_r * f), which * conv_size * f)
    g.gf.expand(ggml.cpy(snap, dst))
    weight = ggml.reshape(g.wt(d_conv, 1, d_inner, name=f"ssm_conv1d_{'qkv'[which]}", type_="f32"), d_conv, d_inner)
    out = ggml.unary(ggml.reshape(ggml.ssm_conv(conv_x, weight), d_inner, r.n_tokens), kind="silu")
    return ggml.reshape(out, hd, n_head, nst, ns)


def _kda_layer(g: GraphContext, d: Dims, rs: RSInputs, il: int, cur: Tensor, k3: bool, glm5: bool = False) -> Tensor:
    """kimi-linear.cpp's KDA layer: Q, K and V through their own short causal convs (the fused QKV's views where the
    file has one), the gate from the low-rank f_a · f_b plus bias through softplus times A, beta, Q and K L2-normed,
    the fused delta net (its new state stored flat), the output normed and gated by the sigmoid of the low-rank
    g_a · g_b. `k3` (kimi-k3.cpp): separate projections only, the gate a bounded sigmoid where the file sets
    kda.gate_lower_bound, the new state stored as build_recurrent_attn does, one full-rank output gate. `glm5`
    (glm5-next.cpp): K3's gate, Kimi-Linear's low-rank output gate read from the layer's input as it is, the state
    stored as build_recurrent_attn does."""
    r = g.r
    n_head, hd = d.n_head, d.kda_head
    d_inner, ns, nst, n_tok = n_head * hd, r.n_seqs, r.n_tokens // r.n_seqs, r.n_tokens
    n_embd_r, n_embd_s = 3 * (d.ssm[0] - 1) * d_inner, hd * hd * n_head
    conv_all = g.rs_cache(r.type_r, n_embd_r, f"cache_r_l{il}", il)
    conv_state_all = g.rs(rs, conv_all, n_embd_r)
    if not k3 and "attn_qkv" in g.w.present and not g.w.all_optional:
        qkv = ggml.mul_mat(g.wt(d.n_embd, 3 * d_inner, name="attn_qkv"), cur)
        ins = [ggml.cont(ggml.view(qkv, (d_inner, n_tok), (qkv.nb[1],), i * d_inner * 4)) for i in range(3)]
        q, k, v = (_kda_conv(g, d, conv_all, conv_state_all, i, ins[i], None, n_head, n_embd_r) for i in range(3))
    else:
        q, k, v = (_kda_conv(g, d, conv_all, conv_state_all, i, cur, name, n_head, n_embd_r)
                   for i, name in enumerate(("attn_q", "attn_k", "attn_v")))  # fmt: skip
    g1 = ggml.mul_mat(g.wt(hd, d_inner, name="ssm_f_b"), ggml.mul_mat(g.wt(d.n_embd, hd, name="ssm_f_a"), cur))
    g1 = ggml.binary("ADD", g1, g.wt(d_inner, name="ssm_dt.bias"))
    a_log = g.wt(n_head, name="ssm_a", type_="f32") if k3 or glm5 else g.wt(1, n_head, name="ssm_a", type_="f32")
    a = ggml.reshape(a_log, 1, n_head, 1)
    if (k3 or glm5) and d.kda_lower_bound:
        g1 = ggml.binary("MUL", ggml.reshape(g1, hd, n_head, n_tok), a)
        g1 = ggml.unary(ggml.unary(ggml.unary(g1, "SCALE"), kind="sigmoid"), "SCALE")
    else:
        g1 = ggml.binary("MUL", ggml.reshape(ggml.unary(g1, kind="softplus"), hd, n_head, n_tok), a)
    g1 = ggml.reshape(g1, hd, n_head, nst, ns)
    beta = ggml.mul_mat(g.wt(d.n_embd, n_head, name="ssm_beta"), cur)
    beta = ggml.unary(ggml.reshape(beta, 1, n_head, nst, ns), kind="sigmoid")
    cur3 = cur if glm5 else ggml.reshape(cur, cur.ne[0], nst, ns)
    ssm_all = g.rs_cache(r.type_s, n_embd_s, f"cache_s_l{il}", il)
    state = ggml.reshape(g.rs(rs, ssm_all, n_embd_s), hd, hd, n_head, ns)
    q, k = _l2_norm(q), _l2_norm(k)
    out = ggml.cont(_delta_net(g, ssm_all, n_embd_s, q, k, v, g1, beta, state, flat=not (k3 or glm5)))
    cur2 = cur if glm5 else ggml.reshape(cur3, cur3.ne[0], nst * ns)
    if k3:
        g2 = ggml.mul_mat(g.wt(d.n_embd, d_inner, name="ssm_g"), cur2)
    else:
        g2 = ggml.mul_mat(g.wt(hd, d_inner, name="ssm_g_b"), ggml.mul_mat(g.wt(d.n_embd, hd, name="ssm_g_a"), cur2))
    g2 = ggml.reshape(g2, hd, n_head, nst * ns)
    normed = g.norm(ggml.reshape(out, hd, n_head, nst * ns), g.wt(hd, name="ssm_norm"))
    gated = ggml.binary("MUL", normed, ggml.unary(g2, kind="sigmoid"))
    return ggml.mul_mat(g.wt(d_inner, d.n_embd, name="attn_output"), ggml.cont(gated, d_inner, n_tok))


def _kimi_mla(g: GraphContext, d: Dims, kv: KVInputs, il: int, cur: Tensor, q_all: Tensor) -> Tensor:
    """kimi-linear.cpp's and kimi-k3.cpp's MLA without RoPE over a K-only cache, absorbed through wk_b and
    decompressed by wv_b (q_all: the layer's query projection): the attention before its output projection."""
    n_head, hk, hv, n_rot, rank, n_tok = d.n_head, d.head_k_mla, d.head_v_mla, d.n_rot, d.kv_lora_rank, g.n_tokens
    nope = hk - n_rot
    kv_all = ggml.mul_mat(g.wt(d.n_embd, rank + n_rot, name="attn_kv_a_mqa"), cur)
    krow = ggml.row_size(kv_all.type, rank + n_rot)
    kv_c = ggml.view(kv_all, (rank, n_tok), (krow,), 0)
    k_pe = ggml.view(kv_all, (n_rot, 1, n_tok), (krow, krow), ggml.row_size(kv_all.type, rank))
    kv_c = g.norm(kv_c, g.wt(rank, name="attn_kv_a_norm"))
    row = ggml.row_size(q_all.type, hk)
    q_nope = ggml.view(q_all, (nope, n_head, n_tok), (row, row * n_head), 0)
    q_pe = ggml.view(q_all, (n_rot, n_head, n_tok), (row, row * n_head), ggml.row_size(q_all.type, nope))
    q_nope = ggml.permute(ggml.mul_mat(g.wt(nope, rank, n_head, name="attn_k_b"),
                                       ggml.permute(q_nope, 0, 2, 1, 3)), 0, 2, 1, 3)  # fmt: skip
    q = ggml.concat(q_nope, q_pe, 0)
    kv_c = ggml.reshape(kv_c, rank, 1, n_tok)
    k = ggml.concat(kv_c, k_pe, 0)
    return g.attn_k(kv, il, None, None, q, k, kv_c, g.wt(rank, hv, n_head, name="attn_v_b"), rank + n_rot, 1)


def build_kimi_linear(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_kimi_linear::graph (src/models/kimi-linear.cpp, Kimi-Linear): KDA layers — Q, K and V through
    their own short causal convs (the fused QKV's views where the file has one), the gate from the low-rank f_a · f_b
    plus bias through softplus times A, beta, Q and K L2-normed, the fused delta net (its new state stored flat),
    the output normed and gated by the sigmoid of the low-rank g_a · g_b — and MLA layers over a K-only cache without
    RoPE (no positions at all); dense lead layers, then experts routed by the file's gating function with their
    bias and normalised weights, plus the shared experts."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    kv = g.attn_inp_k(r.kv_size)
    out_ids = g.inp_out_ids()
    n_head = d.n_head
    n_shexp = d.n_ff_exp * (d.n_expert_shared if d.n_expert_shared > 0 else 1)
    for il in g.layers(d.n_layer):
        g.il = il
        inp_sa = inp_l
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        g.gf.expand(cur)
        if d.recurrent[il]:
            cur = _kda_layer(g, d, rs, il, cur, k3=False)
        else:
            q_all = ggml.mul_mat(g.wt(d.n_embd, n_head * d.head_k_mla, name="attn_q"), cur)
            cur = _kimi_mla(g, d, kv, il, cur, q_all)
            wo = g.wt(d.head_v_mla * n_head, d.n_embd, name="attn_output")
            cur = g.lora_mm(wo, cur, g.opt("attn_output.scale", 1))
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_sa)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        else:
            moe = g.moe_ffn(cur, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING[d.expert_gating],
                            norm_w=True, w_scale=d.expert_weights_scale, exp_probs_b=True, scales=False)  # fmt: skip
            cur = ggml.binary("ADD", moe, g.ffn_par(cur, d.n_embd, n_shexp, bias=False, scale=False, suffix="_shexp"))
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, output_scale=False)


def _situ(g_: Tensor, up: Tensor, linear: bool) -> Tensor:
    """kimi_k3_situ / build_moe_ffn's LLM_FFN_SITU: β·tanh(gate/β)·sigmoid(gate) times the up branch (through its
    own scaled tanh where situ_linear_beta > 0)."""
    act = ggml.unary(ggml.unary(ggml.unary(g_, "SCALE"), kind="tanh"), "SCALE")
    act = ggml.binary("MUL", act, ggml.unary(g_, kind="sigmoid"))
    if linear:
        up = ggml.unary(ggml.unary(ggml.unary(up, "SCALE"), kind="tanh"), "SCALE")
    return ggml.binary("MUL", act, up)


class _KimiK3:
    """llama_model_kimi_k3::graph (src/models/kimi-k3.cpp): the cross-layer residual attention's checkpoint stack
    (res_push / res_mix) and the layers of one graph."""

    def __init__(self, g: GraphContext, d: Dims) -> None:
        self.g, self.d = g, d
        self.stack: Tensor | None = None

    def push(self, cur: Tensor) -> None:
        ckpt = ggml.reshape(cur, self.d.n_embd, 1, cur.ne[1])
        self.stack = ckpt if self.stack is None else ggml.concat(self.stack, ckpt, 1)

    def mix(self, cur: Tensor, score: str) -> Tensor:
        """res_mix: the banked checkpoints and the current stream scored by one RMS norm each against the score
        weight, softmaxed together, the stack summed by ggml_dsv4_hc_pre and the stream added by its share."""
        if self.stack is None:
            return cur
        src, n_tok = self.stack, cur.ne[1]
        n_ckpt = src.ne[1]
        w = self.g.wt(self.d.n_embd, name=score, type_="f32")
        sc_src = ggml.sum_rows(ggml.binary("MUL", ggml.unary(src, "RMS_NORM"), w))
        sc_src = ggml.reshape(sc_src, n_ckpt, n_tok)
        sc_cur = ggml.sum_rows(ggml.binary("MUL", ggml.unary(cur, "RMS_NORM"), w))
        probs = ggml.soft_max(ggml.concat(sc_src, sc_cur, 0), None)
        p_src = ggml.cont(ggml.view(probs, (n_ckpt, n_tok), (probs.nb[1],), 0))
        p_cur = ggml.cont(ggml.view(probs, (1, n_tok), (probs.nb[1],), probs.nb[0] * n_ckpt))
        out = ggml.new("f32", (src.ne[0], src.ne[2]), "DSV4_HC_PRE", (src, p_src))
        return ggml.binary("ADD", out, ggml.binary("MUL", cur, p_cur))


def build_kimi_k3(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_kimi_k3::graph (src/models/kimi-k3.cpp, Kimi K3): Kimi-Linear's KDA layers with one full-rank
    output gate and, where the file sets kda.gate_lower_bound, a bounded sigmoid decay gate; MLA layers without RoPE
    absorbed through wk_b / wv_b and gated by a sigmoid before wo; a cross-layer residual attention (every
    attn_res.block_size layers the raw layer input is banked, and each block's input mixes the bank with the stream:
    _KimiK3); the situ activation in every feed-forward; routed experts in a latent width (down-projected, normed,
    up-projected) scored on the full-width input, plus shared experts; the output rows kept after the final mix."""
    g = GraphContext(r, w)
    k3 = _KimiK3(g, d)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    rs = g.rs_inp()
    kv = g.attn_inp_k(r.kv_size)
    out_ids = g.inp_out_ids()
    n_head, qr_rank = d.n_head, d.q_lora_rank
    latent = d.expert_latent or d.n_embd
    use_res = d.attn_res_block > 0
    for il in g.layers(d.n_layer):
        g.il = il
        prefix = inp_l
        cur = k3.mix(prefix, "attn_res_score") if use_res else prefix
        banked = use_res and il % d.attn_res_block == 0
        if banked:
            k3.push(prefix)
        cur = g.norm(cur, g.wt(d.n_embd, name="attn_norm"))
        g.gf.expand(cur)
        if d.recurrent[il]:
            cur = _kda_layer(g, d, rs, il, cur, k3=True)
        else:
            inp_gate = cur
            if w.has("attn_q_a_norm"):
                q_all = ggml.mul_mat(g.wt(d.n_embd, qr_rank, name="attn_q_a"), cur)
                q_all = g.norm(q_all, g.wt(qr_rank, name="attn_q_a_norm"))
                q_all = ggml.mul_mat(g.wt(qr_rank, n_head * d.head_k_mla, name="attn_q_b"), q_all)
            else:
                q_all = ggml.mul_mat(g.wt(d.n_embd, n_head * d.head_k_mla, name="attn_q"), cur)
            cur = _kimi_mla(g, d, kv, il, cur, q_all)
            if w.has("attn_gate"):
                gate = ggml.mul_mat(g.wt(d.n_embd, n_head * d.head_v_mla, name="attn_gate"), inp_gate)
                cur = ggml.binary("MUL", cur, ggml.unary(gate, kind="sigmoid"))
            cur = ggml.mul_mat(g.wt(d.head_v_mla * n_head, d.n_embd, name="attn_output"), cur)
        prefix = cur if banked else ggml.binary("ADD", prefix, cur)
        cur = k3.mix(prefix, "ffn_res_score") if use_res else prefix
        cur = g.norm(cur, g.wt(d.n_embd, name="ffn_norm"))
        if il < d.n_layer_dense_lead:
            gate_, up = (ggml.mul_mat(g.wt(d.n_embd, d.n_ff, name=n), cur) for n in ("ffn_gate", "ffn_up"))
            cur = ggml.mul_mat(g.wt(d.n_ff, d.n_embd, name="ffn_down"), _situ(gate_, up, d.situ_linear))
        else:
            identity = cur
            routed = ggml.mul_mat(g.wt(d.n_embd, latent, name="ffn_routed_down"), cur) if d.expert_latent else cur
            logits = ggml.mul_mat(g.wt(d.n_embd, d.n_expert, name="ffn_gate_inp"), identity)
            moe = g.moe_ffn(routed, d.n_expert, d.n_expert_used, d.n_ff_exp, gating=_GATING[d.expert_gating],
                            norm_w=d.expert_weights_norm, w_scale=d.expert_weights_scale, exp_probs_b=True,
                            scales=False, logits=logits, act="situ", situ_linear=d.situ_linear)  # fmt: skip
            if d.expert_latent and w.has("ffn_routed_norm"):
                moe = g.norm(moe, g.wt(latent, name="ffn_routed_norm"))
            if d.expert_latent:
                moe = ggml.mul_mat(g.wt(latent, d.n_embd, name="ffn_routed_up"), moe)
            if w.has("ffn_gate_shexp"):
                n_shexp = d.n_ff_exp * (d.n_expert_shared if d.n_expert_shared > 0 else 1)
                gate_, up = (ggml.mul_mat(g.wt(d.n_embd, n_shexp, name=n), identity)
                             for n in ("ffn_gate_shexp", "ffn_up_shexp"))  # fmt: skip
                shared = ggml.mul_mat(g.wt(n_shexp, d.n_embd, name="ffn_down_shexp"), _situ(gate_, up, d.situ_linear))
                moe = ggml.binary("ADD", moe, shared)
            cur = moe
        inp_l = ggml.binary("ADD", prefix, cur)
    g.il = OUTPUT_LAYER
    cur = k3.mix(inp_l, "output_res_score") if use_res else inp_l
    cur = ggml.get_rows(cur, out_ids)
    return _deepseek_lm_head(g, d, cur)


def build_openelm(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_openelm::graph (src/models/openelm.cpp): the fused QKV without bias or scale reshaped to heads
    and viewed as Q, K and V, Q/K normed per head before RoPE, each layer's own feed-forward width (a model whose
    layers differ in heads has no graph here: Dims holds one head count)."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    h, n_tok = d.head_k, r.n_tokens
    for il in g.layers(d.n_layer):
        g.il = il
        n_qkv = d.n_head + 2 * d.n_head_kv
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        cur = ggml.reshape(ggml.mul_mat(g.wt(d.n_embd, n_qkv * h, name="attn_qkv"), cur), h, n_qkv, n_tok)
        q = ggml.view(cur, (h, d.n_head, n_tok), (cur.nb[1], cur.nb[2]), 0)
        k = ggml.view(cur, (h, d.n_head_kv, n_tok), (cur.nb[1], cur.nb[2]), cur.nb[1] * d.n_head)
        v = ggml.view(cur, (h, d.n_head_kv, n_tok), (cur.nb[1], cur.nb[2]), cur.nb[1] * (d.n_head + d.n_head_kv))
        q = ggml.rope(g.norm(q, g.wt(h, name="attn_q_norm")), pos, None)
        k = ggml.rope(g.norm(k, g.wt(h, name="attn_k_norm")), pos, None)
        wo = g.wt(h * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, h, d.head_v)
        residual = inp_l
        if il == d.n_layer - 1:
            residual, cur = ggml.get_rows(residual, out_ids), ggml.get_rows(cur, out_ids)
        ffn_inp = ggml.binary("ADD", residual, cur)
        n_ff = d.n_ff_layers[il] if d.n_ff_layers and d.n_ff_layers[il] else d.n_ff
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_grovemoe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_grovemoe::graph (src/models/grovemoe.cpp): Qwen3's attention (Q/K norms interleaved with RoPE),
    one router's logits feeding the experts and the adjugate ("chunk") experts — n_expert / experts_per_group of
    them, expert_chunk_feed_forward_length wide (else head_k), their output scaled and added — both picking their
    experts by the sigmoid of the logits."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, _), out_ids = _inputs(g, d, False)
    per_group, n_ff_ch = d.chexp
    n_chunk = d.n_expert // per_group
    o = Decoder(qk_norm=True)
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        q, k = _qk_norm_rope(g, d, o, q, k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v)
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm"))
        probs = g.lora_mm(g.wt(d.n_embd, d.n_expert, name="ffn_gate_inp"), cur)
        n_ff_exp = d.n_ff_exp or d.n_ff // d.n_expert_used
        cur = g.moe_ffn(cur, d.n_expert, d.n_expert_used, n_ff_exp, w_scale=d.expert_weights_scale, scales=False,
                        logits=probs, select_sigmoid=True)  # fmt: skip
        chunk = g.moe_ffn(cur, n_chunk, min(d.n_expert_used, n_chunk), n_ff_ch or d.head_k,
                          w_scale=d.expert_weights_scale, scales=False, logits=probs, select_sigmoid=True)  # fmt: skip
        cur = ggml.binary("ADD", cur, ggml.unary(chunk, "SCALE"))
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


def build_cohere2moe(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_cohere2moe::graph (src/models/cohere2moe.cpp), embeddings_nextn_masked off (llama.cpp's
    default): Command R7B's parallel block on one norm (RMS, or a layer norm without bias where the file has no RMS
    epsilon) with iSWA, RoPE on the window layers and the dense lead; the dense lead's SwiGLU, then experts routed
    by the file's gating function (sigmoid where it says none) plus the shared experts, their sum halved; the rows
    kept for the outputs only after the final norm; the logits scaled where the model says."""
    g = GraphContext(r, w)
    inp_l, pos, (kv, kv_swa), out_ids = _inputs(g, d, True)
    rms = not d.layer_norm
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"), rms=rms)
        ffn_inp = cur
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        if d.swa[il] or il < d.n_layer_dense_lead:
            q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        attn_out = g.attn_kv(kv_swa if d.swa[il] else kv, il, wo, None, g.opt("attn_output.scale", 1), q, k, v,
                             d.n_head_kv, d.head_k, d.head_v, iswa=True)  # fmt: skip
        if il < d.n_layer_dense_lead:
            cur = g.ffn_par(ffn_inp, d.n_embd, d.n_ff, bias=False, scale=True)
        else:
            cur = g.moe_ffn(ffn_inp, d.n_expert, d.n_expert_used, d.n_ff_exp or d.n_ff,
                            gating=_GATING.get(d.expert_gating or 2, "softmax"), norm_w=d.expert_weights_norm,
                            w_scale=d.expert_weights_scale, gate_up=w.has("ffn_gate_up_exps"))  # fmt: skip
            if d.n_expert_shared:
                shexp = g.ffn_par(ffn_inp, d.n_embd, d.n_ff_shexp, bias=False, scale=True, suffix="_shexp")
                cur = ggml.unary(ggml.binary("ADD", cur, shexp), "SCALE")
        inp_l = ggml.binary("ADD", ggml.binary("ADD", cur, inp_l), attn_out)
    return _lm_head(g, d, inp_l, rms=rms, scale=d.logit_scale, out_ids=out_ids, output_scale=False)


def build_granite_swa(d: Dims, r: Reserve, w: Weights) -> Graph:
    """llama_model_granite_swa::graph (src/models/granite-swa.cpp), dense, without deepstack inputs and with RoPE
    on every layer (the file's rope_pattern unset): Granite's multipliers (embedding where set, residual, the logits
    divided by logit_scale) over iSWA attention with each head's sink, the output projection's bias and the
    feed-forward's biases where the file has them."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab, scale=1.0 if d.embedding_scale else 0.0)
    pos = g.inp_pos()
    kv, kv_swa = _kv_inputs(g, d, True)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        cur = g.norm(inp_l, g.wt(d.n_embd, name="attn_norm"))
        q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
        factors = g.opt("rope_freqs", d.head_k // 2)
        q, k = ggml.rope(q, pos, factors), ggml.rope(k, pos, factors)
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        cur = g.attn_kv(kv_swa if d.swa[il] else kv, il, wo, g.opt("attn_output.bias", d.n_embd),
                        g.opt("attn_output.scale", 1), q, k, v, d.n_head_kv, d.head_k, d.head_v,
                        sinks=g.wt(d.n_head, name="attn_sinks"), iswa=True)  # fmt: skip
        cur, inp_sa = _last_outputs(d, il, out_ids, cur, inp_l)
        if d.residual_scale:
            cur = ggml.unary(cur, "SCALE")
        ffn_inp = ggml.binary("ADD", cur, inp_sa)
        cur = g.ffn_par(g.norm(ffn_inp, g.wt(d.n_embd, name="ffn_norm")), d.n_embd, d.n_ff, bias=True, scale=False)
        if d.residual_scale:
            cur = ggml.unary(cur, "SCALE")
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l, scale=True)


def build_hunyuan_dense(d: Dims, r: Reserve, w: Weights, vl: bool = False) -> Graph:
    """llama_model_hunyuan_vl::graph (src/models/hunyuan-vl.cpp; hunyuan_dense's is the same class): each layer's
    RoPE factors, Q and K normed after RoPE, SwiGLU; for hunyuan_dense one position per token even where the file
    sets RoPE sections (its n_pos_per_embd is 1, as recorded on its tiny model, which sets them), for hunyuan_vl
    (`vl`) four where they are set."""
    g = GraphContext(r, w)
    inp_l = g.inp_embd(d.n_embd, d.n_vocab)
    pos = g.inp_pos(4 if vl and d.mrope else 1)
    kv, _ = _kv_inputs(g, d, False)
    out_ids = g.inp_out_ids()
    for il in g.layers(d.n_layer):
        g.il = il
        factors = g.opt("rope_freqs", d.head_k // 2)
        ffn_inp, cur = _hunyuan_attention_block(g, d, kv, inp_l, pos, il, out_ids, factors)
        cur = g.ffn_par(cur, d.n_embd, d.n_ff, bias=False, scale=False)
        inp_l = ggml.binary("ADD", cur, ffn_inp)
    return _lm_head(g, d, inp_l)


#: llama_model_gemma3n's constants (src/llama-hparams.h: n_altup, i_altup_act, laurel_rank, n_embd_altup, not read
#: from the file; src/models/models.h: n_layer_sparsity)
_ALTUP, _ALTUP_ACT, _LAUREL_RANK, _EMBD_ALTUP, _SPARSE_LAYERS = 4, 0, 64, 256, 10


class _Gemma3n:
    """llama_model_gemma3n::graph (src/models/gemma3n.cpp): AltUp's four streams predicted and corrected around
    each layer, LAuReL's low-rank residual, per-layer token embeddings projected into every layer, Gaussian top-k
    sparsity on the first layers' gate, the later layers reading the KV of earlier ones, final logits soft-capped."""

    def __init__(self, d: Dims, r: Reserve, w: Weights) -> None:
        self.d, self.r, self.g = d, r, GraphContext(r, w)
        self.n_tok = r.n_tokens

    def _wt_at(self, layer: int, *ne: int, name: str) -> Tensor:
        """A model-level weight placed with `layer` (LLM_TENSOR_LAYER_INPUT / REPEATING with bid 0 / OUTPUT)."""
        t = ggml.weight("f16", ne, name)
        t.usage, t.layer = USAGE_WEIGHTS, layer
        return t

    @staticmethod
    def _slice(x: Tensor, idx: int) -> Tensor:
        """gemma3n_view_2d_slice: the idx-th [ne0, ne1] plane."""
        return ggml.view(x, (x.ne[0], x.ne[1]), (ggml.row_size(x.type, x.ne[0]),),
                         idx * ggml.row_size(x.type, x.ne[0] * x.ne[1]))  # fmt: skip

    @staticmethod
    def _rest(x: Tensor) -> Tensor:
        """The planes after the first (ggml_view_3d from plane 1)."""
        row = ggml.row_size(x.type, x.ne[0])
        return ggml.view(x, (x.ne[0], x.ne[1], x.ne[2] - 1), (row, ggml.row_size(x.type, x.ne[0] * x.ne[1])),
                         ggml.row_size(x.type, x.ne[0] * x.ne[1]))  # fmt: skip

    @staticmethod
    def _magnitude(x: Tensor) -> Tensor:
        """calc_magnitude: sqrt(sum_rows(sqr(x)))."""
        return ggml.unary(ggml.sum_rows(ggml.unary(x, "SQR")), "SQRT")

    def _router(self, x: Tensor) -> Tensor:
        """altup_compute_router_modalities: [n_altup, n_tokens]."""
        g = self.g
        cur = ggml.unary(g.norm(x, g.wt(self.d.n_embd, name="altup_router_norm")), "SCALE")
        return ggml.unary(ggml.mul_mat(g.wt(self.d.n_embd, _ALTUP, name="altup_router"), cur))

    def _predict(self, cur: Tensor) -> Tensor:
        g = self.g
        modalities = self._router(self._slice(cur, _ALTUP_ACT))
        coefs = g.lora_mm(g.wt(_ALTUP, _ALTUP * _ALTUP, name="altup_predict_coef"), modalities)
        coefs = ggml.reshape(coefs, _ALTUP, _ALTUP, self.n_tok)
        permuted = ggml.cont(ggml.permute(cur, 1, 2, 0, 3))
        predictions = ggml.cont(ggml.permute(ggml.mul_mat(permuted, coefs), 0, 2, 1, 3))
        return ggml.binary("ADD", predictions, cur)

    def _correct(self, predictions: Tensor, activated: Tensor) -> Tensor:
        g, n_embd = self.g, self.d.n_embd
        modalities = self._router(activated)
        innovation = ggml.binary("SUB", activated, self._slice(predictions, _ALTUP_ACT))
        coefs = g.lora_mm(g.wt(_ALTUP, _ALTUP, name="altup_correct_coef"), modalities)
        coefs = ggml.unary(coefs, "SCALE")  # ggml_scale_bias: + 1.0
        coefs = ggml.cont(ggml.transpose(coefs), 1, self.n_tok, _ALTUP)
        innovation = ggml.repeat(innovation, n_embd, self.n_tok, _ALTUP, 1)
        return ggml.binary("ADD", ggml.binary("MUL", innovation, coefs), predictions)

    def _gaussian_topk(self, x: Tensor) -> Tensor:
        m = ggml.mean(x)
        std = ggml.unary(ggml.unary(ggml.sum_rows(ggml.unary(ggml.binary("SUB", x, m), "SQR")), "SCALE"), "SQRT")
        cutoff = ggml.binary("ADD", m, ggml.unary(std, "SCALE"))
        return ggml.unary(ggml.binary("SUB", x, cutoff))

    def _per_layer_inputs(self, inp_l: Tensor) -> Tensor:
        """build_inp_per_layer and project_per_layer_inputs: [n_embd_altup, n_tokens, n_layer]."""
        g, d, n_tok = self.g, self.d, self.n_tok
        tokens = ggml.inp("i32", (n_tok,), "inp_tokens_per_layer")
        table = self._wt_at(INPUT_LAYER, _EMBD_ALTUP * d.n_layer, d.n_vocab, name="per_layer_token_embd")
        per_layer = ggml.get_rows(table, tokens)
        per_layer = ggml.unary(ggml.reshape(per_layer, _EMBD_ALTUP, d.n_layer, n_tok), "SCALE")
        g.gf.expand(per_layer)
        proj = ggml.mul_mat(self._wt_at(0, d.n_embd, _EMBD_ALTUP * d.n_layer, name="per_layer_model_proj"), inp_l)
        proj = ggml.reshape(ggml.unary(proj, "SCALE"), _EMBD_ALTUP, d.n_layer, n_tok)
        proj = g.norm(proj, self._wt_at(0, _EMBD_ALTUP, name="per_layer_proj_norm"), with_il=False)
        per_layer = ggml.unary(ggml.binary("ADD", proj, per_layer), "SCALE")
        return ggml.cont(ggml.permute(per_layer, 0, 2, 1, 3))

    def _stack(self, inp_l: Tensor) -> Tensor:
        """The other AltUp streams projected from the first, scaled to its magnitude, stacked: [n_embd, n_tok, 4]."""
        d = self.d
        target = self._magnitude(inp_l)
        repeated = ggml.repeat(inp_l, d.n_embd, self.n_tok, _ALTUP - 1, 1)
        added = ggml.mul_mat(self._wt_at(OUTPUT_LAYER, d.n_embd, d.n_embd, _ALTUP - 1, name="altup_proj"), repeated)
        added = ggml.binary("DIV", ggml.binary("MUL", added, target), self._magnitude(added))
        return ggml.concat(inp_l, added, 2)

    def _attention(self, kv: KVInputs, cur: Tensor, pos: Tensor, il: int) -> Tensor:
        g, d = self.g, self.d
        source = d.kv_source[il] if d.kv_source else -1
        wo = g.wt(d.head_k * d.n_head, d.n_embd, name="attn_output")
        wo_s = g.opt("attn_output.scale", 1)
        if source < 0:
            q, k, v = g.qkv(cur, d.n_embd, d.head_k, d.n_head, d.n_head_kv, d.head_v)
            q = g.norm(q, g.wt(d.head_k, name="attn_q_norm"))
            k = g.norm(k, g.wt(d.head_k, name="attn_k_norm"))
            v = ggml.unary(v, "RMS_NORM")
            q, k = ggml.rope(q, pos, None), ggml.rope(k, pos, None)
            return g.attn_kv(kv, il, wo, None, wo_s, q, k, v, d.n_head_kv, d.head_k, d.head_v, iswa=True)
        q = g.lora_mm(g.wt(d.n_embd, d.head_k * d.n_head, name="attn_q"), cur, g.opt("attn_q.scale", 1))
        q = g.norm(ggml.reshape(q, d.head_k, d.n_head, self.n_tok), g.wt(d.head_k, name="attn_q_norm"))
        q = ggml.rope(q, pos, None)
        return g.attn_kv(kv, il, wo, None, wo_s, q, None, None, d.n_head_kv, d.head_k, d.head_v, iswa=True,
                         source=source)  # fmt: skip

    def build(self) -> Graph:
        g, d = self.g, self.d
        inp_l = ggml.unary(g.inp_embd(d.n_embd, d.n_vocab), "SCALE")
        pos = g.inp_pos()
        kv, kv_swa = _kv_inputs(g, d, True)
        per_layer = self._per_layer_inputs(inp_l)
        inp_l = self._stack(inp_l)
        for il in g.layers(d.n_layer):
            g.il = il
            predictions = self._predict(inp_l)
            active = self._slice(predictions, _ALTUP_ACT)
            cur = g.norm(active, g.wt(d.n_embd, name="attn_norm"))
            laurel = g.lora_mm(g.wt(d.n_embd, _LAUREL_RANK, name="laurel_l"), cur)
            laurel = g.lora_mm(g.wt(_LAUREL_RANK, d.n_embd, name="laurel_r"), laurel)
            laurel = ggml.binary("ADD", g.norm(laurel, g.wt(d.n_embd, name="laurel_post_norm")), cur)
            cur = self._attention(kv_swa if d.swa[il] else kv, cur, pos, il)
            cur = g.norm(cur, g.wt(d.n_embd, name="attn_post_norm"))
            cur = ggml.binary("ADD", cur, active)
            attn_laurel = ggml.unary(ggml.binary("ADD", cur, laurel), "SCALE")
            cur = g.norm(attn_laurel, g.wt(d.n_embd, name="ffn_norm"))
            n_ff = d.n_ff_layers[il] if d.n_ff_layers and d.n_ff_layers[il] else d.n_ff
            up = g.lora_mm(g.wt(d.n_embd, n_ff, name="ffn_up"), cur)
            gate = g.lora_mm(g.wt(d.n_embd, n_ff, name="ffn_gate"), cur)
            if il < _SPARSE_LAYERS:
                gate = self._gaussian_topk(gate)
            cur = ggml.binary("MUL", up, ggml.unary(gate))
            cur = g.lora_mm(g.wt(n_ff, d.n_embd, name="ffn_down"), cur)
            cur = g.norm(cur, g.wt(d.n_embd, name="ffn_post_norm"), with_il=False)
            gated = ggml.binary("ADD", cur, attn_laurel)
            corrected = self._correct(predictions, gated)
            first = ggml.binary("MUL", self._slice(corrected, _ALTUP_ACT), g.wt(d.n_embd, name="altup_correct_scale"))
            first = ggml.unary(g.lora_mm(g.wt(d.n_embd, _EMBD_ALTUP, name="per_layer_inp_gate"), first))
            first = ggml.binary("MUL", first, self._slice(per_layer, il))
            first = g.lora_mm(g.wt(_EMBD_ALTUP, d.n_embd, name="per_layer_proj"), first)
            first = g.norm(first, g.wt(d.n_embd, name="per_layer_post_norm"))
            rest = ggml.binary("ADD", self._rest(corrected), first)
            inp_l = ggml.concat(self._slice(corrected, 0), rest, 2)
        g.il = OUTPUT_LAYER
        target = self._magnitude(self._slice(inp_l, _ALTUP_ACT))
        unembd = ggml.mul_mat(g.wt(d.n_embd, d.n_embd, _ALTUP - 1, name="altup_unembd_proj"), self._rest(inp_l))
        unembd = ggml.binary("DIV", ggml.binary("MUL", unembd, target), self._magnitude(unembd))
        cur = self._slice(inp_l, 0)
        for i in range(_ALTUP - 1):
            cur = ggml.binary("ADD", cur, self._slice(unembd, i))
        cur = ggml.unary(cur, "SCALE")
        cur = ggml.get_rows(cur, g.inp_out_ids())
        return _lm_head(g, d, cur, softcap=True)


BUILDERS: dict[str, Callable[[Dims, Reserve, Weights], Graph]] = {
    "llama": lambda d, r, w: build_decoder(d, r, w, LLAMA),
    "qwen2": lambda d, r, w: build_decoder(d, r, w, QWEN2),
    "qwen3": lambda d, r, w: build_decoder(d, r, w, QWEN3),
    "qwen3moe": lambda d, r, w: build_decoder(d, r, w, QWEN3),
    "smollm3": lambda d, r, w: build_decoder(d, r, w, SMOLLM3),
    "seed_oss": lambda d, r, w: build_decoder(d, r, w, SEED_OSS),
    "qwen2vl": lambda d, r, w: build_decoder(d, r, w, QWEN2VL),
    "qwen3vl": lambda d, r, w: build_decoder(d, r, w, QWEN3VL),
    "qwen3vlmoe": lambda d, r, w: build_decoder(d, r, w, QWEN3VL),
    "internlm2": lambda d, r, w: build_decoder(d, r, w, INTERNLM2),
    "arcee": lambda d, r, w: build_decoder(d, r, w, ARCEE),
    "exaone": lambda d, r, w: build_decoder(d, r, w, EXAONE),
    # ernie4-5.cpp's graph is dense whatever experts the file declares
    "ernie4_5": lambda d, r, w: build_decoder(replace(d, n_expert=0), r, w, ERNIE4_5),
    "mistral3": lambda d, r, w: build_decoder(d, r, w, LLAMA),
    # xverse.cpp: llama's layers without RoPE factors, the output bias or the feed-forward's biases and scales
    "xverse": lambda d, r, w: build_decoder(d, r, w, INTERNLM2),
    "orion": lambda d, r, w: build_decoder(d, r, w, ORION),
    "olmo": lambda d, r, w: build_decoder(d, r, w, OLMO),
    "stablelm": build_stablelm,
    "phi2": build_phi2,
    "starcoder": build_starcoder,
    "gpt2": build_starcoder,
    "gptneox": build_gptneox,
    "falcon": build_falcon,
    "bloom": build_bloom,
    "mpt": build_mpt,
    "qwen": lambda d, r, w: build_decoder(replace(d, n_ff=d.n_ff // 2), r, w, QWEN),
    "codeshell": lambda d, r, w: build_decoder(d, r, w, CODESHELL),
    "maincoder": lambda d, r, w: build_decoder(d, r, w, MAINCODER),
    "mellum": lambda d, r, w: build_decoder(d, r, w, MELLUM),
    "nanbeige": lambda d, r, w: build_decoder(d, r, w, NANBEIGE),
    "pangu-embedded": lambda d, r, w: build_decoder(d, r, w, PANGU_EMBEDDED),
    "dbrx": lambda d, r, w: build_decoder(d, r, w, DBRX),
    "chatglm": lambda d, r, w: build_decoder(d, r, w, CHATGLM),
    "deepseek": build_deepseek,
    "grok": build_grok,
    "arctic": build_arctic,
    # llama_model_minicpm's graph is llama_model_granite::graph, with rope_finetuned forced on and the experts as
    # wide as the dense feed-forward
    "minicpm": lambda d, r, w: build_granite_hybrid(replace(d, rope=True, n_ff_exp=0), r, w),
    "jais": lambda d, r, w: build_decoder(d, r, w, JAIS),
    "jais2": lambda d, r, w: build_decoder(d, r, w, JAIS2),
    "hunyuan-moe": build_hunyuan_moe,
    "smallthinker": build_smallthinker,
    "bailingmoe": build_bailingmoe,
    "mistral4": build_deepseek2,  # llama_model_mistral4::graph is llama_model_deepseek2::graph
    "plamo": build_plamo,
    "talkie": build_talkie,
    "spark2_5": build_spark2_5,
    "exaone-moe": build_exaone_moe,
    "bailingmoe2": build_bailingmoe2,
    "hunyuan_vl": lambda d, r, w: build_hunyuan_dense(d, r, w, vl=True),
    # llama_model_qwen3tts is llama_model_qwen3vl: its loader, hparams and graph
    "qwen3tts": lambda d, r, w: build_decoder(d, r, w, QWEN3VL),
    "afmoe": build_afmoe,
    "llada": build_llada,
    "dream": build_llada,
    "llada-moe": lambda d, r, w: build_llada(d, r, w, LLADA_MOE),
    "rnd1": lambda d, r, w: build_llada(d, r, w, RND1),
    "minicpm3": build_minicpm3,
    "deepseek32": build_deepseek32,
    "glm-dsa": lambda d, r, w: build_deepseek32(d, r, w, glm=True),
    "dots3note": build_dots3note,
    "hy_v4": build_hy_v4,
    "kimi-k3": build_kimi_k3,
    "minimax-m3": build_minimax_m3,
    "glm5-next": build_glm5_next,
    "paddleocr": lambda d, r, w: build_decoder(replace(d, n_expert=0), r, w, PADDLEOCR),
    "maple": build_maple,
    "plamo3": build_plamo3,
    "cogvlm": build_cogvlm,
    "muse-glimmer": build_muse_glimmer,
    "pockettts": lambda d, r, w: build_decoder(d, r, w, POCKETTTS),
    "openelm": build_openelm,
    "deci": build_deci,
    "hrm_text": build_hrm_text,
    "laguna": build_laguna,
    "mimo2": build_mimo2,
    "plamo2": build_plamo2,
    "hy_v3": build_hy_v3,
    "bailingmoe3": build_bailingmoe3,
    "kimi-linear": build_kimi_linear,
    "grovemoe": build_grovemoe,
    "cohere2moe": build_cohere2moe,
    # granite-swa.cpp's dense graph; with experts, deepstack inputs or a RoPE pattern there is no graph (_not_built)
    "granite_swa": build_granite_swa,
    "refact": lambda d, r, w: build_decoder(d, r, w, replace(ALIBI, ffn_missing=bool(d.n_expert))),
    # baichuan.cpp: RoPE for its 7B only (llm_type by 32 layers), ALiBi for the 13B and any other depth
    "baichuan": lambda d, r, w: build_decoder(d, r, w, INTERNLM2 if d.n_layer == 32 else ALIBI),
    "command-r": build_command_r,
    "cohere2": lambda d, r, w: build_command_r(d, r, w, cohere2=True),
    "mamba2": build_mamba2,
    "nemotron_h": build_nemotron_h,
    "nemotron_h_moe": build_nemotron_h,
    "mamba": lambda d, r, w: build_mamba2(d, r, w, mamba1=True),
    "granitehybrid": build_granite_hybrid,
    # llama_model_granite::graph (src/models/granite.cpp; granite_moe's is the same class): granite-hybrid.cpp's
    # attention layers, feed-forward and multipliers without its Mamba-2 layers
    "granite": build_granite_hybrid,
    # granite-moe.cpp never reads the rope_finetuned switch: RoPE on every layer
    "granitemoe": lambda d, r, w: build_granite_hybrid(replace(d, rope=True), r, w),
    "falcon-h1": build_falcon_h1,
    "jamba": build_jamba,
    "llama4": build_llama4,
    "minimax-m2": build_minimax_m2,
    "minimax-01": build_minimax_01,
    "lfm2": build_lfm2,
    "glm4": build_glm4,
    "qwen2moe": build_qwen2moe,
    "olmoe": lambda d, r, w: build_minimax_m2(d, r, w, olmoe=True),
    "exaone4": build_exaone4,
    "ernie4_5-moe": build_ernie4_5_moe,
    "dots1": build_dots1,
    "starcoder2": build_starcoder2,
    "nemotron": lambda d, r, w: build_starcoder2(d, r, w, relu_sqr=True),
    "lfm2moe": build_lfm2,
    "gemma3": build_gemma3,
    "gemma": build_gemma,
    "hunyuan-dense": build_hunyuan_dense,
    "gemma3n": lambda d, r, w: _Gemma3n(d, r, w).build(),
    "gemma2": lambda d, r, w: build_gemma3(d, r, w, gemma2=True),
    "phi3": build_phi3,
    "phimoe": build_phi3,  # llama_model_phimoe's graph is llama_model_phi3::graph
    "olmo2": build_olmo2,
    "gpt-oss": build_openai_moe,
    "glm4moe": build_glm4_moe,
    "deepseek2": build_deepseek2,
    "qwen3next": lambda d, r, w: _Qwen3Next(d, r, w).build(),
    "qwen35": lambda d, r, w: _Qwen35(d, r, w).build(),
    "qwen35moe": lambda d, r, w: _Qwen35(d, r, w).build(),
    "qwen4exp": lambda d, r, w: _Qwen4Exp(d, r, w).build(),
    "deepseek4": lambda d, r, w: _Deepseek4(d, r, w).build(),
}
