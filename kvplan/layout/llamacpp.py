"""llama.cpp's memory layout, byte-exact.

The context derivation follows src/llama-context.cpp (llama_init_from_model and the llama_context
constructor); the caches follow llama_model::create_memory and llama_kv_cache / llama_kv_cache_iswa.
``MemoryPlan.total_bytes`` equals the ``context`` figure of ``llama_get_memory_breakdown()`` for the
CPU backend (tensor alignment 32). See the README's "How kvplan computes llama.cpp memory".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvplan import archs
from kvplan.errors import NotSupportedYetError, RefusedConfigError
from kvplan.ggml_types import GGMLType, cache_type
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType
from kvplan.plan import CachePlan, MemoryPlan, RuntimeSettings

LLAMA_MAX_SEQ = 256
KV_PAD_CELLS = 256
CPU_ALIGNMENT = 32
FLASH_ATTN_CHOICES = ("auto", "on", "off")


def pad(x: int, n: int) -> int:
    """GGML_PAD (n a power of two)."""
    return (x + n - 1) // n * n


@dataclass(frozen=True)
class LlamaCppSettings:
    """Context parameters, spelled and defaulted as llama.cpp's CLI (common) does."""

    n_ctx: int = 0  # 0: the model's training context (llama.cpp -c 0)
    n_seq: int = 1  # -np / n_seq_max
    kv_unified: bool = False
    n_batch: int = 2048
    n_ubatch: int = 512
    type_k: str = "f16"
    type_v: str = "f16"
    flash_attn: str = "auto"  # on | off | auto
    swa_full: bool = False
    alignment: int = CPU_ALIGNMENT


@dataclass(frozen=True)
class Context:
    """cparams after llama.cpp's derivation."""

    n_ctx_asked: int
    n_ctx: int
    n_ctx_seq: int
    n_seq: int
    n_stream: int
    n_batch: int
    n_ubatch: int
    kv_unified: bool
    flash_attn: str  # resolved for the layout: "on" / "off" ("auto" counts as on when memory is built)
    flash_attn_asked: str
    type_k: GGMLType
    type_v: GGMLType
    swa_full: bool
    alignment: int

    @property
    def v_trans(self) -> bool:
        return self.flash_attn == "off"


def derive_context(model: ModelDescription, s: LlamaCppSettings) -> Context:
    """llama_init_from_model's checks and the llama_context constructor's cparams, in order."""
    if s.flash_attn not in FLASH_ATTN_CHOICES:
        raise RefusedConfigError(
            f"flash attention must be one of {', '.join(FLASH_ATTN_CHOICES)}, not {s.flash_attn!r}"
        )
    try:
        type_k, type_v = cache_type(s.type_k), cache_type(s.type_v)
    except ValueError as exc:
        raise RefusedConfigError(str(exc)) from None
    if s.n_batch <= 0 and s.n_ubatch <= 0:
        raise RefusedConfigError("llama.cpp refuses: n_batch and n_ubatch cannot both be zero")
    if s.n_ctx < 0 or s.n_batch < 0 or s.n_ubatch < 0 or s.n_seq < 0:
        raise RefusedConfigError("context size, batch sizes and sequence count must not be negative")
    if s.n_ctx == 0 and model.n_ctx_train == 0:
        raise RefusedConfigError(
            "llama.cpp refuses: n_ctx and the model's context_length cannot both be zero"
        )
    if s.n_ctx > 0xFFFFFFFF - KV_PAD_CELLS:
        raise RefusedConfigError(f"context size {s.n_ctx} does not fit llama.cpp's 32-bit n_ctx")

    fa = s.flash_attn
    if fa != "off" and model.arch in archs.FA_DISABLED_ARCHS:
        fa = "off"  # "flash_attn is not compatible with Grok - forcing off"
    if (model.mla or model.arch == "deepseek4") and type_k.id != type_v.id:
        raise RefusedConfigError(
            f"llama.cpp refuses: {model.arch} does not support different K ({type_k.name}) "
            f"and V ({type_v.name}) "
            "cache types (MLA caches K only); use the same type for -ctk and -ctv"
        )
    if type_v.is_quantized and fa != "on":
        if fa == "auto":
            fa = "on"  # "enabling flash_attn since it is required for quantized V cache"
        else:
            raise RefusedConfigError(
                f"llama.cpp refuses: quantized V cache ({type_v.name}) requires flash attention (-fa on)"
            )
    trunk = [layer for layer in model.layers if layer.index < model.n_layer]
    for t, attr, label in ((type_k, "head_k", "K"), (type_v, "head_v", "V")):
        if fa != "off" and t.is_quantized:
            for layer in trunk:
                width = getattr(layer, attr)
                if width % t.block_elements:
                    raise RefusedConfigError(
                        f"llama.cpp refuses: {label} cache type {t.name} with block size {t.block_elements} "
                        f"does not divide the {label} head size {width} (layer {layer.index})"
                    )

    n_seq = max(1, s.n_seq)
    if n_seq > LLAMA_MAX_SEQ:
        raise RefusedConfigError(f"llama.cpp refuses: n_seq_max must be <= {LLAMA_MAX_SEQ} (got {n_seq})")
    n_ctx_asked = s.n_ctx if s.n_ctx else model.n_ctx_train
    n_batch = min(n_ctx_asked, s.n_batch) if model.causal else s.n_batch
    n_ubatch = min(n_batch, s.n_ubatch if s.n_ubatch else s.n_batch)
    if n_seq > n_batch:
        # llama_context::output_reserve: GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) aborts
        raise RefusedConfigError(
            f"llama.cpp aborts: the batch size min(n_ctx, n_batch) = {n_batch} is smaller than the "
            f"{n_seq} parallel sequences (it reserves one output per sequence); raise -c or -b"
        )
    n_ctx = pad(n_ctx_asked, KV_PAD_CELLS)
    if s.kv_unified:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = pad(n_ctx // n_seq, KV_PAD_CELLS)
        n_ctx = n_ctx_seq * n_seq
    return Context(
        n_ctx_asked=n_ctx_asked,
        n_ctx=n_ctx,
        n_ctx_seq=n_ctx_seq,
        n_seq=n_seq,
        n_stream=1 if s.kv_unified else n_seq,
        n_batch=n_batch,
        n_ubatch=n_ubatch,
        kv_unified=s.kv_unified,
        flash_attn="off" if fa == "off" else "on",
        flash_attn_asked=s.flash_attn,
        type_k=type_k,
        type_v=type_v,
        swa_full=s.swa_full,
        alignment=s.alignment,
    )


def _kv_cache(
    name: str, model: ModelDescription, ctx: Context, layers: list[Layer], cells: int, grows: bool, why: str
) -> CachePlan:
    """One llama_kv_cache: a K (and unless MLA a V) tensor per layer, [width, cells, n_stream]."""
    has_v = not model.mla
    v_pad_width = model.v_width_max if ctx.v_trans and model.v_width_variable else None
    k_bytes = v_bytes = buffer_bytes = per_token = 0
    for layer in layers:
        k_row = ctx.type_k.row_bytes(layer.k_width)
        k = k_row * cells * ctx.n_stream
        k_bytes += k
        buffer_bytes += pad(k, ctx.alignment)
        per_token += k_row
        if has_v:
            v_row = ctx.type_v.row_bytes(v_pad_width if v_pad_width is not None else layer.v_width)
            v = v_row * cells * ctx.n_stream
            v_bytes += v
            buffer_bytes += pad(v, ctx.alignment)
            per_token += v_row
    return CachePlan(
        name=name,
        kind="attention",
        layers=tuple(layer.index for layer in layers),
        cells=cells,
        streams=ctx.n_stream,
        type_k=ctx.type_k.name,
        type_v=ctx.type_v.name if has_v else None,
        k_bytes=k_bytes,
        v_bytes=v_bytes,
        bytes=buffer_bytes,
        per_token_bytes=per_token if grows else 0,
        why=why,
    )


def _attention_caches(
    model: ModelDescription, ctx: Context, keep: Callable[[Layer], bool]
) -> list[CachePlan]:
    """A plain llama_kv_cache, or llama_kv_cache_iswa when the model has a sliding window."""
    layers = [layer for layer in model.layers if layer.has_kv and keep(layer)]
    streams = "1 unified stream" if ctx.kv_unified else f"{ctx.n_stream} stream(s), one per sequence"
    full_why = f"n_ctx {ctx.n_ctx_asked} padded to 256 → {ctx.n_ctx}; {ctx.n_ctx_seq} cells × {streams}"
    if model.swa_type == SwaType.NONE:
        return [_kv_cache("attention", model, ctx, layers, ctx.n_ctx_seq, True, full_why)]
    base = [layer for layer in layers if not layer.swa]
    swa = [layer for layer in layers if layer.swa]
    window_label = "chunked window" if model.swa_type == SwaType.CHUNKED else "sliding window"
    if ctx.swa_full:
        swa_cells = ctx.n_ctx_seq
        swa_why = f"--swa-full: {window_label} layers get the full {ctx.n_ctx_seq} cells"
        grows = True
    else:
        seqs = ctx.n_seq if ctx.kv_unified else 1
        want = model.n_swa * seqs + ctx.n_ubatch
        swa_cells = pad(min(ctx.n_ctx_seq, want), KV_PAD_CELLS)
        grows = want >= ctx.n_ctx_seq
        seq_part = f" × {seqs} seqs" if seqs > 1 else ""
        swa_why = (
            f"window {model.n_swa}{seq_part} + ubatch {ctx.n_ubatch} = {want}, "
            f"capped at {ctx.n_ctx_seq}, padded to 256 → {swa_cells}"
        )
    caches = []
    if base:
        caches.append(_kv_cache("full attention", model, ctx, base, ctx.n_ctx_seq, True, full_why))
    if swa:
        caches.append(_kv_cache(window_label, model, ctx, swa, swa_cells, grows, swa_why))
    return caches


def plan(model: ModelDescription, settings: LlamaCppSettings) -> MemoryPlan:
    """What llama.cpp allocates for ``model`` under ``settings`` (a DEFAULT, non-MTP context)."""
    if model.memory not in (MemoryKind.KV, MemoryKind.NONE):
        raise NotSupportedYetError(
            f"{model.source}: {model.arch} uses llama.cpp's {model.memory.value} memory "
            "(recurrent / hybrid / indexer caches); kvplan does not size it yet"
        )
    ctx = derive_context(model, settings)
    notes: list[str] = list(model.notes)
    caches: list[CachePlan] = []
    if model.memory == MemoryKind.NONE:
        notes.append(f"{model.arch} keeps no KV cache in llama.cpp (encoder or diffusion model): 0 bytes")
    else:
        if model.n_layer_nextn > 0 and model.n_layer > 0 and model.router_layer < 0:
            notes.append(
                f"{model.n_layer_nextn} nextn/MTP layer(s) are kept out of the main context "
                "(llama.cpp sizes them only in an MTP draft context)"
            )

            def keep(layer: Layer) -> bool:
                return not layer.nextn
        else:

            def keep(layer: Layer) -> bool:
                return True

        caches = _attention_caches(model, ctx, keep)
        if model.mla:
            notes.append(
                "MLA: the cache holds only the compressed K latent (kv_lora_rank + rope dims); "
                "V is read from it, so V bytes are 0"
            )
        if ctx.v_trans and model.v_width_variable and not model.mla:
            notes.append(
                f"flash attention off: every V row is padded to the widest layer "
                f"({model.v_width_max} elements)"
            )
    if ctx.flash_attn_asked == "auto" and model.v_width_variable and not model.mla:
        notes.append(
            "flash attention auto counts as on when llama.cpp builds the cache: V rows keep "
            "each layer's own width (with -fa off they would be padded)"
        )
    if settings.n_ctx and ctx.n_ctx != settings.n_ctx:
        notes.append(
            f"asked for {settings.n_ctx} tokens; llama.cpp allocates {ctx.n_ctx} "
            f"({ctx.n_ctx_seq} cells × {ctx.n_stream} stream(s))"
            if not ctx.kv_unified
            else f"asked for {settings.n_ctx} tokens; llama.cpp pads to {ctx.n_ctx} cells"
        )
    if ctx.n_ctx_seq > model.n_ctx_train > 0:
        notes.append(f"n_ctx_seq {ctx.n_ctx_seq} exceeds the model's training context {model.n_ctx_train}")
    runtime = RuntimeSettings(
        "llama.cpp",
        {
            "n_ctx_asked": ctx.n_ctx_asked,
            "n_ctx": ctx.n_ctx,
            "n_ctx_seq": ctx.n_ctx_seq,
            "n_seq": ctx.n_seq,
            "n_stream": ctx.n_stream,
            "kv_unified": ctx.kv_unified,
            "flash_attn": ctx.flash_attn_asked,
            "flash_attn_effective": ctx.flash_attn,
            "swa_full": ctx.swa_full,
            "n_batch": ctx.n_batch,
            "n_ubatch": ctx.n_ubatch,
            "type_k": ctx.type_k.name,
            "type_v": ctx.type_v.name,
            "alignment": ctx.alignment,
        },
    )
    return MemoryPlan(model=model, runtime=runtime, caches=tuple(caches), notes=tuple(notes))
