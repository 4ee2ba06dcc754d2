"""The one normalised model description every source produces and every runtime layout reads.

It holds what a runtime needs to decide memory, per layer and in elements (never bytes): head
counts, head sizes, whether the layer uses a sliding window, whether it is a nextn/MTP layer, whether
it owns KV tensors or reuses another layer's. Byte arithmetic belongs to the runtime layouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property


class SwaType(str, Enum):
    NONE = "none"
    STANDARD = "standard"
    CHUNKED = "chunked"
    SYMMETRIC = "symmetric"


class MemoryKind(str, Enum):
    """Which llama.cpp memory module the architecture creates (llama_model::create_memory)."""

    NONE = "none"  # encoders, diffusion LMs: no memory at all
    KV = "kv"  # llama_kv_cache, or llama_kv_cache_iswa when swa_type != none
    RECURRENT = "recurrent"
    HYBRID = "hybrid"
    DSA = "dsa"
    DSA_ISWA = "dsa_iswa"
    MSA = "msa"
    DSV4 = "dsv4"
    HYBRID_IDX = "hybrid_idx"


@dataclass(frozen=True)
class Layer:
    """One block of the model, as the runtime sees it (all widths in elements)."""

    index: int
    n_head: int
    n_head_kv: int
    head_k: int  # K elements per head on this layer (SWA layers may differ)
    head_v: int
    swa: bool = False  # the layer attends through a sliding (or chunked) window
    nextn: bool = False  # a nextn / MTP block (one of the last n_layer_nextn)
    has_kv: bool = True  # owns KV tensors (False: reuses kv_source's, gemma3n/gemma4)
    kv_source: int | None = None
    recurrent: bool = False  # keeps recurrent state (is_recr)
    n_ff: int = 0  # feed-forward width (Nemotron-H routes blocks by it)
    indexer: bool = False  # owns a lightning-indexer row (is_indexer_full)
    compress_ratio: int = 0  # DeepSeek-V4: 4 = CSA, 128 = HCA
    ple: bool = False  # keeps the PLE conv history (Qwen4exp)

    @property
    def k_width(self) -> int:
        """K elements per token on this layer (n_embd_k_gqa)."""
        return self.head_k * self.n_head_kv

    @property
    def v_width(self) -> int:
        """V elements per token on this layer (n_embd_v_gqa)."""
        return self.head_v * self.n_head_kv


@dataclass(frozen=True)
class RecurrentParams:
    """The recurrent-state hparams behind a model's state layers, in elements, as the GGUF keys carry them
    (``ssm.*``, ``kda.head_dim``, ``shortconv.l_cache``, ``wkv.head_size``). llama.cpp folds them into
    n_embd_r / n_embd_s; the serving engines shape their state pages from them (one shape per mixer kind)."""

    d_conv: int = 0  # ssm.conv_kernel: the conv state keeps d_conv - 1 columns
    d_inner: int = 0  # ssm.inner_size (Mamba d_inner; gated delta-net: value heads x value head size)
    d_state: int = 0  # ssm.state_size (Mamba d_state; gated delta-net: key head size)
    n_group: int = 0  # ssm.group_count (Mamba-2 groups; gated delta-net: key heads)
    n_head: int = 0  # ssm.time_step_rank (Mamba-2 heads; gated delta-net: value heads; Mamba-1: dt rank)
    kda_head: int = 0  # kda.head_dim (Kimi delta attention)
    l_cache: int = 0  # shortconv.l_cache (LFM2 short convolution)
    wkv_head: int = 0  # wkv.head_size (RWKV)
    cache_dtype: str = ""  # the checkpoint's own mamba_ssm_cache_dtype (Nemotron-H configs name one)
    chunk: int = 0  # the SSM kernel's chunk a config states (chunk_size, mamba_chunk_size); 0: not stated


@dataclass(frozen=True)
class TensorWeights:
    """A GGUF's tensor bytes by llama.cpp's placement unit (load_tensors): the input layer (token embeddings,
    kept in host memory), each repeating layer, and the output layer (with tied embeddings: a copy of them)."""

    input_bytes: int
    layer_bytes: tuple[int, ...]  # index = layer (n_layer_all entries)
    output_bytes: int
    #: of each layer's bytes, its MoE expert tensors' (ffn_{up,down,gate,gate_up}_exps / _chexps: what llama.cpp's
    #: --cpu-moe / --n-cpu-moe keep in host memory); () for a model without experts
    expert_bytes: tuple[int, ...] = ()
    #: every tensor: (name, layer: -1 the input layer, -2 the output layer; bytes), for -ot overrides
    tensors: tuple[tuple[str, int, int], ...] = ()
    #: (name, layer, bytes) of what a CUDA buffer allocates for a tensor beyond its bytes: a quantized tensor's last
    #: row padded to a multiple of 512 values (ggml_backend_cuda_buffer_type_get_alloc_size), then each tensor
    #: 128-byte aligned in the buffer (ggml-alloc.c alloc_tensor_range); only the tensors where that is not 0
    cuda_extra: tuple[tuple[str, int, int], ...] = ()

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + sum(self.layer_bytes) + self.output_bytes


@dataclass(frozen=True)
class Linear:
    """``count`` linear weights of ``out_features × in_features`` in module ``name`` (a checkpoint path, ``*`` for
    the layer index); biases count with the other parameters. ``expert``: a routed MoE expert's; ``quantized``:
    stored in a quantized checkpoint's format (the embedding, output head, routers and vision tower are not)."""

    name: str
    out_features: int
    in_features: int
    count: int
    expert: bool = False
    quantized: bool = True

    @property
    def params(self) -> int:
        return self.out_features * self.in_features * self.count


@dataclass(frozen=True)
class ParamCount:
    """A checkpoint's parameters counted from its architecture (kvplan.sources.param_count)."""

    total: int
    embed: int  # token embeddings (with tied embeddings: also the output)
    output: int  # the output head's (0 when tied)
    linears: tuple[Linear, ...]  # the linear weights, by module
    basis: str  # how it was counted

    @property
    def expert_params(self) -> int:
        return sum(x.params for x in self.linears if x.expert)


@dataclass(frozen=True)
class WeightFormat:
    """How a checkpoint stores its weights, as its config.json (or the catalog) says.

    ``kind``: bf16 / fp16 / fp32 (unquantized), mxfp4, fp8 (``block``: its scale block, () per-tensor or
    per-channel), awq, gptq (``bits``, ``group_size``), nvfp4, bnb-4bit, bnb-8bit, int8; ``keep``: the module
    patterns the quantizer left unquantized; ``dtype``: the unquantized tensors' type; ``source``: where it was read.
    """

    kind: str
    source: str
    dtype: str = "bf16"
    bits: int = 0
    group_size: int = 0
    block: tuple[int, ...] = ()
    keep: tuple[str, ...] = ()
    assumed: bool = False  # the checkpoint states no dtype: bf16 is assumed
    scale: str = ""  # fp8: "block", "channel" (a float32 scale per output row) or "tensor" (one float32)
    extra: int = 0  # bytes each quantized linear adds besides its weights and scales (static input scales)
    refused: str = ""  # why the serving engine refuses the format (vLLM's message)


@dataclass(frozen=True)
class ContextKeys:
    """What a config.json says about its context, as vLLM reads it (ModelConfig._get_and_verify_max_len over
    ModelArchConfigConvertor.derive_max_model_len_and_key): the length keys present in its text config, in vLLM's
    order; model_max_length; each RoPE parameter set's (rope_type, factor); original_max_position_embeddings."""

    keys: tuple[tuple[str, int], ...] = ()
    model_max_length: int | None = None
    rope: tuple[tuple[str, float | None], ...] = ()
    original_max_position_embeddings: int | None = None
    model_type: str = ""


@dataclass(frozen=True)
class GraphFacts:
    """What llama.cpp's compute graph is shaped by besides the attention layout: the vocabulary (the logits),
    the feed-forward widths, the experts, and which optional tensors the model has (llama.cpp builds an op for
    each bias or scale it loads). From a GGUF's metadata and tensor infos."""

    n_vocab: int
    n_ff: int
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0
    expert_weights_scale: float = 0.0
    final_logit_softcap: bool = False
    #: MoE layout beyond the widths: the leading dense layers, the shared experts (each n_ff_exp wide), whether
    #: the selected experts' weights are normalised, and the gating function (llama_expert_gating_func_type:
    #: 0 the architecture's default, 1 softmax, 2 sigmoid, 3 softmax over the selected)
    n_layer_dense_lead: int = 0
    n_expert_shared: int = 0
    expert_weights_norm: bool = False
    expert_gating: int = 0
    #: multi-section RoPE (rope.dimension_sections): positions n_tokens × 4 (n_pos_per_embd)
    mrope: bool = False
    #: MLA (DeepSeek-V2/V3): the rotary width, the compressed KV rank and the heads' widths once decompressed
    n_rot: int = 0
    kv_lora_rank: int = 0
    head_k_mla: int = 0
    head_v_mla: int = 0
    #: the sliding-window layers' MLA shape where it differs (dots.llm3-note): kv_lora_rank_swa, key_length_mla_swa,
    #: value_length_mla_swa (0: the full layers')
    mla_swa: tuple[int, int, int] = (0, 0, 0)
    #: the residual streams of a hyper-connection model (hyper_connection.count: Hy V4; 0: none)
    hc_count: int = 0
    #: Kimi K3: the cross-layer residual attention's block (attn_res.block_size; 0: none), the situ activation's
    #: transform of the up branch (activation.situ_linear_beta > 0), the KDA gate's lower bound (kda.gate_lower_bound
    #: set: a sigmoid gate instead of softplus) and the experts' latent width (expert_latent_length)
    attn_res_block: int = 0
    #: MiniMax-M3's sparse attention: the tokens of a block its indexer scores (attention.indexer.block_size)
    indexer_block: int = 0
    #: GLM-5-Next's k-pool indexer: the tokens pooled into one key, whether the incomplete tail is selected too
    kpool: int = 0
    kpool_tail: bool = False
    #: Qwen4exp: the hyper-connection mixers' low rank (hyper_connection.low_rank) and the PLE n-gram embeddings'
    #: heads ((ngram_size - 1) × heads_per_ngram), head width (embedding_length_per_layer_input), conv kernel and
    #: n-gram size (all 0 without ple.layers)
    hc_low_rank: int = 0
    ple: tuple[int, int, int, int] = (0, 0, 0, 0)
    #: DeepSeek-V4: the grouped output projection's groups and low rank (attention.output_group_count,
    #: .output_lora_rank) and the leading layers whose experts are picked by token (hash_layer_count)
    dsv4: tuple[int, int, int] = (0, 0, 0)
    situ_linear: bool = False
    kda_lower_bound: bool = False
    expert_latent: int = 0
    q_lora_rank: int = 0
    #: expert groups (n_expert_groups, n_group_used: DeepSeek-V3's node-limited routing)
    expert_groups: tuple[int, int] = (0, 0)
    #: the shared expert's width where the model states one (expert_shared_feed_forward_length: Qwen3-Next)
    n_ff_shexp: int = 0
    #: rope.scaling.original_context_length (hparams.n_ctx_orig_yarn; 0: the trained context)
    n_ctx_orig: int = 0
    #: llama 4's attention temperature tuning (attention.temperature_scale: an input scales Q)
    attn_temp_scale: bool = False
    #: logit_scale: the logits scaled (Command-R)
    logit_scale: bool = False
    #: Granite's embedding and residual multipliers (embedding_scale, residual_scale: SCALE ops where non-zero) and
    #: its RoPE switch (rope.scaling.finetuned, true unless the file says otherwise)
    embedding_scale: bool = False
    residual_scale: bool = False
    rope_finetuned: bool = True
    #: Falcon-Mamba's weightless RMS norms of dt, B and C (ssm.dt_b_c_rms)
    ssm_dt_b_c_rms: bool = False
    #: the layers without a router in a model whose experts are on some layers only (Jamba: every other one), from
    #: a file's tensors or the config's expert_layer_period / offset; empty: every layer has the experts
    dense_layers: frozenset[int] = frozenset()
    #: Llama 4's interleave_moe_layer_step: every n-th layer has the experts
    moe_layer_step: int = 0
    #: moe_latent_size: the experts work in a narrower width, projected down and up (Nemotron 3 Super)
    moe_latent: int = 0
    #: n_deepstack_layers: the vision tower's extra embeddings added after the first layers (Qwen3-VL); the input
    #: embedding is (1 + n) × n_embd wide
    n_deepstack: int = 0
    #: the attention and the feed-forward both read the layer's input (use_parallel_residual: GPT-NeoX)
    parallel_residual: bool = False
    #: DeepSeek-V3.2's lightning indexer: its heads and the keys each query keeps (indexer.head_count, .top_k)
    indexer_heads: int = 0
    indexer_top_k: int = 0
    #: GroveMoE's adjugate experts: experts_per_group and their width (expert_chunk_feed_forward_length)
    experts_per_group: int = 0
    n_ff_chexp: int = 0
    #: HRM-Text's recursive stacks: layers per stack, high and low cycles (hrm.layers_per_stack, .h_cycles,
    #: .l_cycles); the file's blocks are the cache slots of every pass
    hrm: tuple[int, int, int] = (0, 0, 0)
    #: layer 0's attention gate width as stored (blk.0.attn_gate.weight's second dimension; 0 without one): Laguna
    #: gates per head or per element by it
    gate_width: int = 0
    #: the attention output scaled by the file's attention.value_scale (MiMo-V2: a value other than 0 and 1)
    attn_value_scale: bool = False
    #: the layers whose experts' / shared experts' SwiGLU is clamped (swiglu_clamp_exp / _shexp above 1e-6)
    clamp_exp: frozenset[int] = frozenset()
    clamp_shexp: frozenset[int] = frozenset()
    #: no layer_norm_rms_epsilon in the file: a class that reads either norm takes LLM_NORM (Cohere2-MoE)
    rms_eps_missing: bool = False
    #: some layer attends without RoPE by the file's attention.rope_pattern (Granite-SWA)
    rope_pattern_off: bool = False
    #: the model's tensors, as "attn_q.bias" (layer 0's and the first MoE layer's, without "blk.N.") or
    #: "output.scale"
    tensors: frozenset[str] = frozenset()
    #: a metadata-only GGUF: llama.cpp's loader creates every optional tensor (llama_model_init_from_user)
    all_optional: bool = False


@dataclass(frozen=True)
class SpecInfo:
    """What a YAML spec (and so a catalog entry) says about itself besides the metadata."""

    hf_id: str | None = None
    description: str | None = None
    sources: tuple[str, ...] = ()
    status: str | None = None
    family: str | None = None


@dataclass(frozen=True)
class ModelDescription:
    name: str
    arch: str
    source: str  # path, or "catalog:NAME"
    source_kind: str  # "gguf" | "yaml" | "catalog" | "hf-config"
    n_layer_all: int
    n_layer_nextn: int
    n_embd: int
    n_ctx_train: int
    layers: tuple[Layer, ...]
    memory: MemoryKind
    swa_type: SwaType = SwaType.NONE
    n_swa: int = 0
    mla: bool = False  # K-only latent cache (no V tensor)
    causal: bool = True
    router_layer: int = -1
    notes: tuple[str, ...] = ()
    weight_bytes: int | None = None  # exact, from GGUF tensor infos
    n_params: int | None = None
    n_embd_r: int = 0  # recurrent r-state (conv / token shift) elements per row
    n_embd_s: int = 0  # recurrent s-state (SSM / WKV / KDA) elements per row
    ple_conv_state: int = 0
    indexer_head_size: int = 0
    indexer_kpool: int = 0
    n_layer_dense_lead: int = 0
    tensor_weights: TensorWeights | None = None  # exact, from a GGUF's tensor infos
    spec: SpecInfo | None = None  # YAML specs and the catalog
    recurrent_params: RecurrentParams | None = None  # state hparams (recurrent and hybrid models)
    #: the sliding window the checkpoint declares for every attention layer where llama.cpp does not apply it
    #: (Phi-3; Mistral / Llama configs): the serving engines do (vLLM's Llama and Phi-3 model classes)
    declared_window: int = 0
    #: a multimodal prefix-LM checkpoint (Gemma 3 with its vision tower): image tokens attend both ways, which
    #: narrows vLLM's attention backends (ModelArchConfigConvertor.is_mm_prefix_lm)
    mm_prefix_lm: bool = False
    #: the checkpoint's Hugging Face architecture (config.json ``architectures[0]``), where the source names it
    hf_architecture: str = ""
    #: a multimodal checkpoint's vision tower (layers, hidden size): SGLang sizes its headroom by it
    vision_tower: tuple[int, int] | None = None
    #: False where the checkpoint declares no context length: the Mamba converters write 2^20 as a placeholder,
    #: and vLLM then assumes 2048 (ModelConfig._get_and_verify_max_len) but takes any --max-model-len
    ctx_declared: bool = True
    #: the context length a config.json states, as the serving engines read it (TextModel's keys:
    #: max_position_embeddings, ...); 0 where the source is not a config or it states none. llama.cpp's trained
    #: context can differ (the Granite-4.0-H / Nemotron-H converters write 2^20)
    config_ctx: int = 0
    #: a config.json's context keys as vLLM reads them (None for other sources: the context above decides)
    context_keys: ContextKeys | None = None
    #: the bytes of a checkpoint's safetensors (a config.json source): what a serving engine loads unquantized
    checkpoint_bytes: int | None = None
    #: MoE: routed experts per layer and per token (0: dense), and the routed experts' parameters (exact from a
    #: GGUF's tensor infos, else from the hyperparameters; None where unknown) — the roofline's active share
    n_expert: int = 0
    n_expert_used: int = 0
    expert_params: int | None = None
    n_active_params: int | None = None  # stated by a spec (the model card's "N B active")
    #: the checkpoint's storage format (config.json's quantization_config / torch_dtype; the catalog's native
    #: format) and its parameters counted from the architecture — what a serving engine loads
    weight_format: WeightFormat | None = None
    param_count: ParamCount | None = None
    #: where n_params came from ("the safetensors index", "counted from the architecture", a published figure)
    params_source: str = ""
    #: the compute graph's own facts (GGUF sources); None where they are not known
    graph: GraphFacts | None = None

    @property
    def active_share(self) -> float:
        """The share of the routed experts' weights one token passes through (1 for a dense model)."""
        if self.n_expert <= 0 or self.n_expert_used <= 0:
            return 1.0
        return min(1.0, self.n_expert_used / self.n_expert)

    @property
    def active_params(self) -> int | None:
        """Parameters a token passes through: all of a dense model's; an MoE's stated count, or its total less
        the routed experts it skips; None for an MoE where neither is known."""
        if self.n_params is None:
            return None
        if self.active_share >= 1.0:
            return self.n_params
        if self.n_active_params is not None:
            return self.n_active_params
        if self.expert_params is not None and self.expert_params < self.n_params:
            return round(self.n_params - self.expert_params * (1 - self.active_share))
        return None  # unknown, or experts larger than the whole model (hyperparameters that do not add up)

    @property
    def engine_ctx(self) -> int:
        """The context a serving engine takes when not told: the config's, else the trained one, else vLLM's and
        SGLang's 2048 for a checkpoint that states none (ModelConfig._get_and_verify_max_len)."""
        if self.config_ctx:
            return self.config_ctx
        return self.n_ctx_train if self.ctx_declared else 2048

    @property
    def n_layer(self) -> int:
        """The trunk: layers that are not nextn/MTP blocks (llama.cpp's n_layer())."""
        return self.n_layer_all - self.n_layer_nextn

    @cached_property
    def plan_memo(self) -> dict[object, object]:
        """What the planner derives from the layers alone (row widths per cache), kept with the model: a
        sweep over contexts and cache types derives it once (not a field: no effect on equality)."""
        return {}

    @cached_property
    def v_width_max(self) -> int:
        """n_embd_v_gqa_max(): the widest V over all n_layer_all layers (FA-off padding width). Computed once
        per model (sweeps plan one model many times)."""
        return max((layer.v_width for layer in self.layers), default=0)

    @cached_property
    def v_width_variable(self) -> bool:
        return any(layer.v_width != self.layers[0].v_width for layer in self.layers)

    @property
    def attention_summary(self) -> str:
        """MHA / GQA / MQA / MLA, judged on the first layer that has attention (a parallel hybrid's layers, Falcon-H1's,
        are recurrent and attend)."""
        if self.mla:
            return "MLA"
        for layer in self.layers:
            if layer.n_head_kv and (not layer.recurrent or layer.has_kv):
                if layer.n_head_kv == layer.n_head:
                    return "MHA"
                return "MQA" if layer.n_head_kv == 1 else "GQA"
        return "none"
