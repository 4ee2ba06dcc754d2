"""llama.cpp's context settings and their derivation into cparams (src/llama-context.cpp).

``LlamaCppSettings`` holds llama.cpp's CLI (common) defaults, named once; the front ends build it from their
flags or a deployments file. ``derive_context`` applies llama_init_from_model's checks and the llama_context
constructor's arithmetic in llama.cpp's own order, refusing what llama.cpp refuses with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import RefusedConfigError, UsageError
from kvplan.facts import archs
from kvplan.facts.ggml_types import cache_type
from kvplan.model import Layer, ModelDescription
from kvplan.runtimes.llamacpp.plan import KV_PAD_CELLS, LLAMA_MAX_SEQ, Backend, Context, FlashAttn
from kvplan.units import pad_to


@dataclass(frozen=True)
class LlamaCppSettings:
    """Context parameters, spelled and defaulted as llama.cpp's CLI (common/common.h) does."""

    n_ctx: int = 0  # -c: the context shared by the sequences; 0 = the model's training context
    n_seq: int = 1  # -np / n_seq_max
    kv_unified: bool = False  # -kvu
    n_batch: int = 2048  # -b
    n_ubatch: int = 512  # -ub
    type_k: str = "f16"  # -ctk
    type_v: str = "f16"  # -ctv
    flash_attn: FlashAttn = FlashAttn.AUTO  # -fa
    swa_full: bool = False  # --swa-full
    n_rs_seq: int = 0  # recurrent snapshots kept for speculative rollback
    mtp: bool = False  # size an MTP draft context (LLAMA_CONTEXT_TYPE_MTP) instead of the main one
    #: buffer rules: cpu (alignment 32) or cuda (128 + row padding), both recorded; rocm, metal, vulkan (their source)
    backend: Backend = Backend.CPU
    #: the outputs the worst-case graph is reserved for: 0 = every token (llama.cpp of 2026-10-01); a newer
    #: llama.cpp's log states n_outputs_max (llama-server: one per sequence), which explain passes on
    n_outputs_max: int = 0


#: ggml_cuda_get_best_fattn_kernel (ggml-cuda/fattn.cu): the K head sizes with a kernel when V's is the same
_CUDA_FA_SAME = frozenset({40, 64, 72, 80, 96, 112, 128, 256})
#: (K, V) head sizes with a kernel only where the grouped-query optimisation applies (at least 2 query heads per
#: KV head), and the multiple of query heads per KV head each needs
_CUDA_FA_GQA = {(192, 128): 8, (320, 256): 32, (512, 512): 1, (576, 512): 1}
#: ggml_cuda_fattn_kv_type_supported
_CUDA_FA_TYPES = frozenset({"f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"})


#: ggml_metal_device_supports_op's FLASH_ATTN_EXT (ggml-metal-device.m): the K head sizes with a kernel
_METAL_FA_HEADS = frozenset({32, 40, 48, 64, 72, 80, 96, 112, 128, 192, 256, 320, 512, 576})
#: ... and the cache types it reads (K and V of one type; bf16 where the GPU has bfloat: Apple's M2 and later)
_METAL_FA_TYPES = frozenset({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1"})
#: ggml_backend_vk_device_supports_op's FLASH_ATTN_EXT (ggml-vulkan.cpp): the cache types it reads
_VULKAN_FA_TYPES = frozenset({"f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"})


def fa_missing(backend: Backend, model: ModelDescription, type_k: str, type_v: str) -> str | None:
    """Why the backend's devices have no flash-attention kernel for this model's attention, or None (a reading of
    each backend's source, not recorded): CUDA's and ROCm's (HIP builds CUDA's kernels) cuda_fa_missing; Metal's
    and Vulkan's supports_op. The CPU runs every case."""
    if backend.cuda_like:
        return cuda_fa_missing(model, type_k, type_v, "ROCm" if backend is Backend.ROCM else "CUDA")
    if backend is Backend.METAL:
        if type_k != type_v or type_k not in _METAL_FA_TYPES:
            kinds = ", ".join(sorted(_METAL_FA_TYPES))
            return f"Metal's flash attention reads K and V caches of one type among {kinds}"
        for layer in _attention_layers(model):
            dk, dv = layer.head_k, layer.head_v
            if dk not in _METAL_FA_HEADS or (dk == 72 and dv != 72) or dk < dv:
                return f"Metal has no flash-attention kernel for K/V heads of {dk}/{dv} (layer {layer.index})"
        return None
    if backend is Backend.VULKAN:
        bad = [t for t in (type_k, type_v) if t not in _VULKAN_FA_TYPES]
        if bad or (type_k == "bf16") != (type_v == "bf16"):
            return f"Vulkan's flash attention does not read {bad[0] if bad else 'bf16 with another'} caches"
        for layer in _attention_layers(model):
            if layer.head_k % 8 or layer.head_v % 8:
                return (
                    f"Vulkan has no flash-attention kernel for K/V heads of {layer.head_k}/{layer.head_v} "
                    f"(layer {layer.index}: not multiples of 8)"
                )
        return None
    return None


def _attention_layers(model: ModelDescription) -> list[Layer]:
    return [x for x in model.layers[: model.n_layer] if not x.recurrent and x.n_head_kv]


def cuda_fa_missing(model: ModelDescription, type_k: str, type_v: str, name: str = "CUDA") -> str | None:
    """Why CUDA has no flash-attention kernel for this model's attention, or None: the K/V head sizes and cache
    types ggml_cuda_get_best_fattn_kernel accepts (a reading of the source, not recorded). With -fa auto,
    llama.cpp's context then runs its probe graph, finds the op on the CPU instead of the layer's GPU
    (resolve_fused_ops) and turns flash attention off."""
    for layer in _attention_layers(model):
        dk, dv, gqa = layer.head_k, layer.head_v, layer.n_head // layer.n_head_kv
        multiple = _CUDA_FA_GQA.get((dk, dv))
        if not (dk in _CUDA_FA_SAME and dv == dk) and not (multiple and gqa >= 2 and gqa % multiple == 0):
            return (
                f"{name} has no flash-attention kernel for K/V heads of {dk}/{dv} with {gqa} query head(s) per KV "
                f"head (layer {layer.index})"
            )
    bad = [t for t in (type_k, type_v) if t not in _CUDA_FA_TYPES]
    return f"{name}'s flash attention does not read {bad[0]} caches" if bad else None


def derive_context(model: ModelDescription, s: LlamaCppSettings) -> Context:  # noqa: C901 - llama.cpp's checks, in its order
    """llama_init_from_model's checks and the llama_context constructor's cparams, in order."""
    try:
        fa_asked, backend = FlashAttn(s.flash_attn), Backend(s.backend)
        type_k, type_v = cache_type(s.type_k), cache_type(s.type_v)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if s.n_batch <= 0 and s.n_ubatch <= 0:
        raise RefusedConfigError("llama.cpp refuses: n_batch and n_ubatch cannot both be zero")
    if min(s.n_ctx, s.n_batch, s.n_ubatch, s.n_seq, s.n_rs_seq) < 0:
        raise RefusedConfigError("context size, batch sizes, sequence and snapshot counts must not be negative")
    if s.n_ctx == 0 and model.n_ctx_train == 0:
        if not model.ctx_declared:  # a config.json that states none: its GGUF would carry none either
            raise UsageError(f"{model.source}: the model states no context length; give one with -c / --ctx-size")
        raise RefusedConfigError("llama.cpp refuses: n_ctx and the model's context_length cannot both be zero")
    if s.n_ctx > 0xFFFFFFFF - KV_PAD_CELLS:
        raise RefusedConfigError(f"context size {s.n_ctx} does not fit llama.cpp's 32-bit n_ctx")

    fa = fa_asked
    if fa is not FlashAttn.OFF and model.arch in archs.FA_DISABLED_ARCHS:
        fa = FlashAttn.OFF  # "flash_attn is not compatible with Grok - forcing off"
    if (model.mla or model.arch == "deepseek4") and type_k.id != type_v.id:
        raise RefusedConfigError(
            f"llama.cpp refuses: {model.arch} does not support different K ({type_k.name}) "
            f"and V ({type_v.name}) cache types; use the same type for -ctk and -ctv"
        )
    if type_v.is_quantized and fa is not FlashAttn.ON:
        if fa is FlashAttn.AUTO:
            fa = FlashAttn.ON  # "enabling flash_attn since it is required for quantized V cache"
        else:
            raise RefusedConfigError(
                f"llama.cpp refuses: quantized V cache ({type_v.name}) requires flash attention (-fa on)"
            )
    fa_off_in_graph = fa_on_cpu = ""  # the cache is laid out for flash attention either way (auto counts as on)
    if fa is not FlashAttn.OFF and backend is not Backend.CPU:
        missing = fa_missing(backend, model, type_k.name, type_v.name) or ""
        fa_off_in_graph, fa_on_cpu = (missing, "") if fa is FlashAttn.AUTO else ("", missing)
    for t, attr, label in ((type_k, "head_k", "K"), (type_v, "head_v", "V")):
        if fa is not FlashAttn.OFF and t.is_quantized:
            for layer in model.layers[: model.n_layer]:
                width = getattr(layer, attr)
                if width % t.block_elements:
                    raise RefusedConfigError(
                        f"llama.cpp refuses: {label} cache type {t.name} with block size {t.block_elements} "
                        f"does not divide the {label} head size {width} (layer {layer.index})"
                    )
    if s.mtp and (model.n_layer_nextn == 0 or model.router_layer >= 0):
        raise RefusedConfigError(
            f"llama.cpp refuses: an MTP draft context needs nextn/MTP layers, and {model.name} has none"
        )
    if s.mtp and model.arch not in archs.MTP_GRAPH_ARCHS:
        detail = "it has no MTP graph"
        if model.arch == "glm5-next":
            detail = "its NextN graph is not implemented yet"
        raise RefusedConfigError(f"llama.cpp cannot run an MTP draft context for {model.arch}: {detail}")

    n_seq = max(1, s.n_seq)
    if n_seq > LLAMA_MAX_SEQ:
        raise RefusedConfigError(f"llama.cpp refuses: n_seq_max must be <= {LLAMA_MAX_SEQ} (got {n_seq})")
    n_rs_seq = s.n_rs_seq if model.arch in archs.RS_ROLLBACK_ARCHS else 0
    n_ctx_asked = s.n_ctx if s.n_ctx else model.n_ctx_train
    n_batch = min(n_ctx_asked, s.n_batch) if model.causal else s.n_batch
    n_ubatch = min(n_batch, s.n_ubatch if s.n_ubatch else s.n_batch)
    if n_seq > n_batch:
        # llama_context::output_reserve: GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) aborts
        raise RefusedConfigError(
            f"llama.cpp aborts: the batch size min(n_ctx, n_batch) = {n_batch} is smaller than the "
            f"{n_seq} parallel sequences (it reserves one output per sequence); raise -c or -b"
        )
    if model.arch in ("kimi-linear", "minimax-01") and not s.kv_unified and n_ubatch % n_seq:
        # graph_reserve rounds the ubatch up to a multiple of n_seq, then re-reserves these two archs with
        # one sequence ([TAG_RESERVE_DIAG_DECAY]); their linear-attention graph then fails
        # GGML_ASSERT(ggml_can_repeat(b, a)) while the context is created (llama.cpp of 2026-10-01)
        raise RefusedConfigError(
            f"llama.cpp aborts: {model.arch} without --kv-unified needs n_ubatch ({n_ubatch}) to be a "
            f"multiple of the {n_seq} parallel sequences (GGML_ASSERT ggml_can_repeat while reserving "
            "its graph); change -ub or -np, or use -kvu"
        )
    n_ctx = pad_to(n_ctx_asked, KV_PAD_CELLS)
    if s.kv_unified:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = pad_to(n_ctx // n_seq, KV_PAD_CELLS)
        n_ctx = n_ctx_seq * n_seq
    return Context(
        n_ctx_asked=n_ctx_asked,
        n_ctx=n_ctx,
        n_ctx_seq=n_ctx_seq,
        n_seq=n_seq,
        n_stream=1 if s.kv_unified else n_seq,
        n_batch=n_batch,
        n_ubatch=n_ubatch,
        n_rs_seq=n_rs_seq,
        kv_unified=s.kv_unified,
        flash_attn=FlashAttn.OFF if fa is FlashAttn.OFF else FlashAttn.ON,
        flash_attn_asked=fa_asked,
        type_k=type_k,
        type_v=type_v,
        swa_full=s.swa_full,
        mtp=s.mtp,
        backend=backend,
        fa_off_in_graph=fa_off_in_graph,
        fa_on_cpu=fa_on_cpu,
        n_outputs_max=s.n_outputs_max,
    )
