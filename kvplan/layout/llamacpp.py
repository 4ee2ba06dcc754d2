"""llama.cpp's memory layout, byte-exact.

The context derivation follows src/llama-context.cpp (llama_init_from_model and the llama_context
constructor); the memory modules follow llama_model::create_memory and the cache classes
(llama_kv_cache, _iswa, llama_memory_recurrent, _hybrid, _hybrid_idx, llama_kv_cache_dsa, _dsa_iswa, _msa,
_dsv4). ``MemoryPlan.total_bytes`` equals the ``context`` figure of ``llama_get_memory_breakdown()`` for
the CPU backend (tensor alignment 32). See the README's "How kvplan computes llama.cpp memory".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kvplan import archs
from kvplan.errors import RefusedConfigError
from kvplan.ggml_types import GGML_TYPES_BY_NAME, GGMLType, cache_type
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType
from kvplan.plan import CachePlan, MemoryPlan, RuntimeSettings

LLAMA_MAX_SEQ = 256
KV_PAD_CELLS = 256
CPU_ALIGNMENT = 32
CUDA_ALIGNMENT = 128
BACKENDS = ("cpu", "cuda")
FLASH_ATTN_CHOICES = ("auto", "on", "off")
F32 = GGML_TYPES_BY_NAME["f32"]
#: hybrids whose MTP context is a plain cache of the nextn layers (create_memory's mtp_on_hybrid_*)
MTP_PLAIN_HYBRIDS = frozenset({"qwen3next", "qwen35", "qwen35moe", "bailingmoe3", "nemotron_h_moe"})


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
    n_rs_seq: int = 0  # recurrent snapshots kept for speculative rollback
    mtp: bool = False  # size an MTP draft context (LLAMA_CONTEXT_TYPE_MTP) instead of the main one
    backend: str = "cpu"  # buffer rules: cpu (alignment 32, verified) or cuda (128 + quantized row padding)


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
    n_rs_seq: int
    kv_unified: bool
    flash_attn: str  # resolved for the layout: "on" / "off" ("auto" counts as on when memory is built)
    flash_attn_asked: str
    type_k: GGMLType
    type_v: GGMLType
    swa_full: bool
    mtp: bool
    backend: str

    @property
    def v_trans(self) -> bool:
        return self.flash_attn == "off"

    @property
    def alignment(self) -> int:
        return CUDA_ALIGNMENT if self.backend == "cuda" else CPU_ALIGNMENT

    def alloc(self, t: GGMLType, ne0: int, nbytes: int) -> int:
        """The buffer bytes one tensor takes: ggml_backend_buft_get_alloc_size, padded to the alignment.
        CUDA adds one row of 512 - ne0 % 512 values to quantized tensors (ggml-cuda.cu, MATRIX_ROW_PADDING)."""
        if self.backend == "cuda" and t.is_quantized and ne0 % 512 and nbytes:
            nbytes += t.row_bytes(512 - ne0 % 512)
        return pad(nbytes, self.alignment)


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
    if min(s.n_ctx, s.n_batch, s.n_ubatch, s.n_seq, s.n_rs_seq) < 0:
        raise RefusedConfigError("context size, batch sizes, sequence and snapshot counts must not be negative")
    if s.n_ctx == 0 and model.n_ctx_train == 0:
        raise RefusedConfigError("llama.cpp refuses: n_ctx and the model's context_length cannot both be zero")
    if s.backend not in BACKENDS:
        raise RefusedConfigError(f"backend must be one of {', '.join(BACKENDS)}, not {s.backend!r}")
    if s.n_ctx > 0xFFFFFFFF - KV_PAD_CELLS:
        raise RefusedConfigError(f"context size {s.n_ctx} does not fit llama.cpp's 32-bit n_ctx")

    fa = s.flash_attn
    if fa != "off" and model.arch in archs.FA_DISABLED_ARCHS:
        fa = "off"  # "flash_attn is not compatible with Grok - forcing off"
    if (model.mla or model.arch == "deepseek4") and type_k.id != type_v.id:
        raise RefusedConfigError(
            f"llama.cpp refuses: {model.arch} does not support different K ({type_k.name}) "
            f"and V ({type_v.name}) cache types; use the same type for -ctk and -ctv"
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
    n_ctx = pad(n_ctx_asked, KV_PAD_CELLS)
    if s.kv_unified:
        n_ctx_seq = n_ctx
    else:
        n_ctx_seq = pad(n_ctx // n_seq, KV_PAD_CELLS)
        n_ctx = n_ctx_seq * n_seq
    return Context(
        n_ctx_asked=n_ctx_asked, n_ctx=n_ctx, n_ctx_seq=n_ctx_seq, n_seq=n_seq,
        n_stream=1 if s.kv_unified else n_seq, n_batch=n_batch, n_ubatch=n_ubatch, n_rs_seq=n_rs_seq,
        kv_unified=s.kv_unified, flash_attn="off" if fa == "off" else "on", flash_attn_asked=s.flash_attn,
        type_k=type_k, type_v=type_v, swa_full=s.swa_full, mtp=s.mtp, backend=s.backend,
    )  # fmt: skip


# --- building blocks: one llama_kv_cache, one recurrent state --------------------------------------


@dataclass(frozen=True)
class _Row:
    """One layer of one cache: its K and V widths in elements (V None: the cache has no V tensor)."""

    index: int
    k: int
    v: int | None


def _kv_cache(
    name: str,
    kind: str,
    rows: list[_Row],
    cells: int,
    streams: int,
    ctx: Context,
    grows: bool,
    why: str,
    type_k: GGMLType | None = None,
    type_v: GGMLType | None = None,
) -> CachePlan:
    """One llama_kv_cache: K [k, cells, streams] (and V) per layer, each buffer-padded."""
    tk = type_k or ctx.type_k
    tv = type_v or ctx.type_v
    has_v = any(r.v is not None for r in rows)
    k_bytes = v_bytes = per_token = 0
    layer_bytes = []
    for r in rows:
        k_row = tk.row_bytes(r.k)
        k = k_row * cells * streams
        k_bytes += k
        this = ctx.alloc(tk, r.k, k)
        per_token += k_row
        if r.v is not None:
            v_row = tv.row_bytes(r.v)
            v = v_row * cells * streams
            v_bytes += v
            this += ctx.alloc(tv, r.v, v)
            per_token += v_row
        layer_bytes.append(this)
    return CachePlan(
        name=name, kind=kind, layers=tuple(r.index for r in rows), cells=cells, streams=streams,
        type_k=tk.name, type_v=tv.name if has_v else None, k_bytes=k_bytes, v_bytes=v_bytes,
        bytes=sum(layer_bytes), per_token_bytes=per_token if grows else 0, why=why, layer_bytes=tuple(layer_bytes),
    )  # fmt: skip


def _attention_rows(
    model: ModelDescription,
    ctx: Context,
    layers: Iterable[Layer],
    k_only: bool,
    v_max_over: Iterable[Layer] | None = None,
) -> list[_Row]:
    """K/V widths of ordinary attention layers; with FA off every V is the widest V (over all layers)."""
    all_layers = list(v_max_over if v_max_over is not None else model.layers)
    v_max = max((layer.v_width for layer in all_layers), default=0)
    variable = any(layer.v_width != all_layers[0].v_width for layer in all_layers)
    rows = []
    for layer in layers:
        v = None if k_only else (v_max if ctx.v_trans and variable else layer.v_width)
        rows.append(_Row(layer.index, layer.k_width, v))
    return rows


def _full_why(ctx: Context, cells: int | None = None) -> str:
    streams = "1 unified stream" if ctx.kv_unified else f"{ctx.n_stream} stream(s), one per sequence"
    return f"n_ctx {ctx.n_ctx_asked} padded to 256 → {ctx.n_ctx}; {cells or ctx.n_ctx_seq} cells × {streams}"


def _swa_cells(model: ModelDescription, ctx: Context, unified: bool) -> tuple[int, bool, str]:
    """llama_kv_cache_iswa's SWA size: (cells, still grows with context, why)."""
    if ctx.swa_full:
        return ctx.n_ctx_seq, True, f"--swa-full: window layers get the full {ctx.n_ctx_seq} cells"
    seqs = ctx.n_seq if unified else 1
    want = model.n_swa * seqs + ctx.n_ubatch
    cells = pad(min(ctx.n_ctx_seq, want), KV_PAD_CELLS)
    seq_part = f" × {seqs} seqs" if seqs > 1 else ""
    why = (
        f"window {model.n_swa}{seq_part} + ubatch {ctx.n_ubatch} = {want}, capped at {ctx.n_ctx_seq}, padded → {cells}"
    )
    return cells, want >= ctx.n_ctx_seq, why


def _attention(
    model: ModelDescription,
    ctx: Context,
    keep: Callable[[Layer], bool],
    k_only: bool,
    force_iswa: bool = False,
    unified: bool | None = None,
    plain: bool = False,
) -> list[CachePlan]:
    """A llama_kv_cache, or a llama_kv_cache_iswa when the model has a sliding window (``plain``: never
    split; ``force_iswa``: always split)."""
    unified = ctx.kv_unified if unified is None else unified
    streams = 1 if unified else ctx.n_seq
    layers = [layer for layer in model.layers if layer.has_kv and keep(layer)]
    if plain or (model.swa_type == SwaType.NONE and not force_iswa):
        rows = _attention_rows(model, ctx, layers, k_only)
        return [_kv_cache("attention", "attention", rows, ctx.n_ctx_seq, streams, ctx, True, _full_why(ctx))]
    label = "chunked window" if model.swa_type == SwaType.CHUNKED else "sliding window"
    base = [layer for layer in layers if not layer.swa]
    swa = [layer for layer in layers if layer.swa]
    out = []
    if base:
        rows = _attention_rows(model, ctx, base, k_only)
        out.append(_kv_cache("full attention", "attention", rows, ctx.n_ctx_seq, streams, ctx, True, _full_why(ctx)))
    if swa:
        cells, grows, why = _swa_cells(model, ctx, unified)
        out.append(
            _kv_cache(label, "attention", _attention_rows(model, ctx, swa, k_only), cells, streams, ctx, grows, why)
        )
    return out


def _recurrent(model: ModelDescription, ctx: Context, keep: Callable[[Layer], bool]) -> list[CachePlan]:
    """llama_memory_recurrent: f32 r and s rows per recurrent trunk layer (plus the PLE history)."""
    layers = [layer for layer in model.layers if layer.index < model.n_layer and keep(layer)]
    if not layers:
        return []
    rows = ctx.n_seq * (1 + ctx.n_rs_seq)
    r_bytes = s_bytes = 0
    layer_bytes = []
    for layer in layers:
        widths = [model.n_embd_r, model.n_embd_s]
        if layer.ple and model.ple_conv_state:
            widths.append(model.ple_conv_state)
        this = 0
        for i, w in enumerate(widths):
            b = 4 * w * rows
            this += ctx.alloc(F32, w, b)
            if i == 1:
                s_bytes += b
            else:
                r_bytes += b
        layer_bytes.append(this)
    snap = f" × (1 + {ctx.n_rs_seq} rollback snapshots)" if ctx.n_rs_seq else ""
    why = (
        f"{ctx.n_seq} sequence(s){snap} = {rows} row(s) of {model.n_embd_r} r + {model.n_embd_s} s "
        "f32 values per layer, independent of the context length"
    )
    return [CachePlan(
        name="recurrent state", kind="recurrent", layers=tuple(layer.index for layer in layers), cells=rows,
        streams=1, type_k="f32", type_v="f32", k_bytes=r_bytes, v_bytes=s_bytes, bytes=sum(layer_bytes),
        per_token_bytes=0, why=why, layer_bytes=tuple(layer_bytes),
    )]  # fmt: skip


def _indexer(
    model: ModelDescription,
    ctx: Context,
    layers: list[Layer],
    width: int,
    cells: int,
    streams: int,
    why: str,
    v_width: int | None = None,
    name: str = "indexer",
) -> list[CachePlan]:
    if not layers:
        return []
    rows = [_Row(layer.index, width, v_width) for layer in layers]
    return [_kv_cache(name, "indexer", rows, cells, streams, ctx, cells == ctx.n_ctx_seq, why)]


# --- the memory modules (create_memory) -----------------------------------------------------------


def _trunk(layer: Layer) -> bool:
    return not layer.nextn


def _nextn(layer: Layer) -> bool:
    return layer.nextn


def _every(layer: Layer) -> bool:
    return True


def _plain(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    if ctx.mtp:
        return _attention(model, ctx, _nextn, model.mla)
    if model.n_layer_nextn > 0 and model.n_layer > 0 and model.router_layer < 0:
        notes.append(
            f"{model.n_layer_nextn} nextn/MTP layer(s) are kept out of the main context "
            "(--mtp sizes the draft context that holds them)"
        )
        return _attention(model, ctx, _trunk, model.mla)
    return _attention(model, ctx, _every, model.mla)


def _hybrid(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    arch = model.arch
    if ctx.mtp and arch in MTP_PLAIN_HYBRIDS:
        return _attention(model, ctx, _nextn, model.mla)
    if arch == "falcon-h1":
        attn, recr = _every, _every
    elif arch in ("nemotron_h", "nemotron_h_moe"):

        def attn(layer: Layer) -> bool:
            return not layer.recurrent and layer.n_ff == 0

        def recr(layer: Layer) -> bool:
            return layer.recurrent and layer.n_ff == 0
    elif arch in ("qwen3next", "qwen35", "qwen35moe", "qwen4exp", "minimax-01"):

        def attn(layer: Layer) -> bool:
            return not layer.nextn and not layer.recurrent

        def recr(layer: Layer) -> bool:
            return not layer.nextn and layer.recurrent
    else:

        def attn(layer: Layer) -> bool:
            return not layer.recurrent  # over every layer: nextn layers included

        def recr(layer: Layer) -> bool:
            return layer.recurrent

        if model.n_layer_nextn:
            notes.append(
                "this hybrid keeps its nextn/MTP layer(s) in the main attention cache (llama.cpp's "
                "default hybrid filter)"
            )
    caches = _attention(model, ctx, attn, model.mla)
    if arch == "qwen4exp" and model.swa_type == SwaType.NONE and model.indexer_head_size:
        layers = [layer for layer in model.layers if attn(layer)]
        caches += _indexer(model, ctx, layers, model.indexer_head_size, ctx.n_ctx_seq, ctx.n_stream, _full_why(ctx))
    return caches + _recurrent(model, ctx, recr)


def _glm5_next(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    if ctx.mtp:

        def attn(layer: Layer) -> bool:
            return layer.nextn

        idx, recr = attn, (lambda layer: False)
    else:

        def attn(layer: Layer) -> bool:
            return not layer.nextn and not layer.recurrent

        def idx(layer: Layer) -> bool:
            return attn(layer) and layer.indexer

        def recr(layer: Layer) -> bool:
            return not layer.nextn and layer.recurrent

    width = model.indexer_head_size * (3 if model.indexer_kpool > 0 else 1)
    caches = _attention(model, ctx, attn, k_only=True)
    caches += _indexer(
        model,
        ctx,
        [la for la in model.layers if idx(la)],
        width,
        ctx.n_ctx_seq,
        ctx.n_stream,
        _full_why(ctx) + f"; key, gate and pooled key per token ({width} values)",
    )
    return caches + _recurrent(model, ctx, recr)


def _dsa(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    """llama_kv_cache_dsa: the MLA K-only cache plus the lightning-indexer K cache (DS-V3.2, GLM-DSA,
    HY-V4)."""
    arch = model.arch
    if ctx.mtp and arch in ("deepseek32", "glm-dsa"):
        return _attention(model, ctx, _nextn, k_only=True)
    if arch == "hy_v4":
        mla_keep, lid_keep = _every, (lambda layer: layer.indexer)
    else:
        mla_keep = _trunk if model.n_layer_nextn > 0 else _every
        if arch == "glm-dsa":

            def lid_keep(layer: Layer) -> bool:
                return not layer.nextn and layer.indexer
        else:
            lid_keep = _trunk
    caches = _attention(model, ctx, mla_keep, k_only=True)
    lid = [layer for layer in model.layers if lid_keep(layer)]
    return caches + _indexer(model, ctx, lid, model.indexer_head_size, ctx.n_ctx_seq, ctx.n_stream, _full_why(ctx))


def _dsa_iswa(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    """llama_kv_cache_dsa_iswa (dots3note): DSA over full layers, a window-sized K-only SWA cache."""
    if ctx.mtp:
        return _attention(model, ctx, _nextn, k_only=True, plain=True)
    keep = _trunk if model.n_layer_nextn > 0 else _every
    caches = _attention(model, ctx, keep, k_only=True)
    lid = [layer for layer in model.layers if not layer.nextn and layer.indexer]
    # the indexer hparams copy changes only the full head size: an SWA layer would keep its SWA width
    rows = [_Row(layer.index, layer.head_k if layer.swa else model.indexer_head_size, None) for layer in lid]
    if rows:
        caches.append(_kv_cache("indexer", "indexer", rows, ctx.n_ctx_seq, ctx.n_stream, ctx, True, _full_why(ctx)))
    return caches


def _msa(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    """llama_kv_cache_msa (MiniMax-M3): K+V on every layer, plus an indexer cache that also allocates V."""
    caches = _attention(model, ctx, _every, k_only=False)
    layers = [layer for layer in model.layers if layer.index >= model.n_layer_dense_lead]
    head_v = model.layers[0].head_v if model.layers else 0
    if layers:
        notes.append(
            "MiniMax-M3's indexer cache allocates a V tensor (one head of value_length) that the "
            "graph never reads; llama.cpp counts it, so kvplan does"
        )
    return caches + _indexer(
        model,
        ctx,
        layers,
        model.indexer_head_size,
        ctx.n_ctx_seq,
        ctx.n_stream,
        _full_why(ctx),
        v_width=head_v,
    )


def _compressed_cells(ctx: Context, ratio: int) -> int:
    return pad(max(1, -(-ctx.n_ctx_seq // ratio)), KV_PAD_CELLS)


def _dsv4(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    """llama_kv_cache_dsv4 (DeepSeek-V4): raw SWA K cache, CSA/HCA compressed caches, indexer, f32 states."""
    if ctx.mtp:
        return _attention(model, ctx, _nextn, k_only=False, force_iswa=True)
    streams = ctx.n_seq  # every DSV4 part is per-sequence, whatever --kv-unified says
    if ctx.kv_unified:
        notes.append(
            "DeepSeek-V4 keeps one stream per sequence even with --kv-unified (its caches force "
            "unified off), while n_ctx_seq stays the unified size"
        )
    caches = _attention(model, ctx, _every, k_only=True, force_iswa=True, unified=False)
    csa = [layer for layer in model.layers if layer.compress_ratio == 4]
    hca = [layer for layer in model.layers if layer.compress_ratio == 128]
    for label, group, ratio in (("compressed CSA ÷4", csa, 4), ("compressed HCA ÷128", hca, 128)):
        if group:
            cells = _compressed_cells(ctx, ratio)
            caches.append(
                _kv_cache(
                    label,
                    "compressed",
                    [_Row(la.index, la.k_width, None) for la in group],
                    cells,
                    streams,
                    ctx,
                    False,
                    f"ceil({ctx.n_ctx_seq} / {ratio}) padded → {cells}",
                )
            )
    if csa:
        cells = _compressed_cells(ctx, 4)
        caches += _indexer(
            model,
            ctx,
            csa,
            model.indexer_head_size,
            cells,
            streams,
            f"on the CSA layers, ceil({ctx.n_ctx_seq} / 4) padded → {cells}",
        )
    planes = ctx.n_seq * (1 + ctx.n_rs_seq)
    head_k = model.layers[0].head_k if model.layers else 0
    state_bytes = 0
    state_layers, layer_bytes = [], []
    for layer in model.layers:
        if layer.index >= model.n_layer:
            continue
        if layer.compress_ratio == 4:
            sizes = [4 * 2 * head_k * 8 * planes] * 2 + [4 * 2 * model.indexer_head_size * 8 * planes] * 2
        elif layer.compress_ratio == 128:
            sizes = [4 * head_k * 128 * planes] * 2
        else:
            continue
        state_layers.append(layer.index)
        state_bytes += sum(sizes)
        layer_bytes.append(sum(ctx.alloc(F32, 1, b) for b in sizes))
    if state_layers:
        caches.append(CachePlan(
            name="compressor state", kind="compressed", layers=tuple(state_layers), cells=planes, streams=1,
            type_k="f32", type_v=None, k_bytes=state_bytes, v_bytes=0, bytes=sum(layer_bytes), per_token_bytes=0,
            why=f"kv + score f32 states per compressed layer, {planes} plane(s); independent of context",
            layer_bytes=tuple(layer_bytes),
        ))  # fmt: skip
    # the growing parts: compressed caches grow 1/ratio per token (not counted in per_token_bytes)
    return caches


_MODULES: dict[MemoryKind, Callable[[ModelDescription, Context, list[str]], list[CachePlan]]] = {
    MemoryKind.KV: _plain,
    MemoryKind.RECURRENT: lambda m, c, n: _recurrent(m, c, _every),
    MemoryKind.HYBRID: _hybrid,
    MemoryKind.DSA: _dsa,
    MemoryKind.DSA_ISWA: _dsa_iswa,
    MemoryKind.MSA: _msa,
    MemoryKind.DSV4: _dsv4,
}


def _module(model: ModelDescription):
    if model.memory == MemoryKind.HYBRID_IDX:
        return _glm5_next if model.arch == "glm5-next" else _hybrid
    return _MODULES[model.memory]


def plan(model: ModelDescription, settings: LlamaCppSettings) -> MemoryPlan:
    """What llama.cpp allocates for ``model`` under ``settings``."""
    ctx = derive_context(model, settings)
    notes: list[str] = list(model.notes)
    caches: list[CachePlan] = []
    if model.memory == MemoryKind.NONE:
        notes.append(f"{model.arch} keeps no KV cache in llama.cpp (encoder or diffusion model): 0 bytes")
    else:
        caches = _module(model)(model, ctx, notes)
        if model.mla:
            notes.append(
                "MLA: the cache holds only the compressed K latent (kv_lora_rank + rope dims); "
                "V is read from it, so V bytes are 0"
            )
        if ctx.v_trans and model.v_width_variable and not model.mla and any(c.v_bytes for c in caches):
            notes.append(
                f"flash attention off: every V row is padded to the widest layer ({model.v_width_max} elements)"
            )
    if settings.n_rs_seq and not ctx.n_rs_seq and any(c.kind == "recurrent" for c in caches):
        notes.append(
            f"--rs-seq {settings.n_rs_seq} ignored: llama.cpp cannot roll back {model.arch}'s "
            "recurrent state, so it keeps no snapshots"
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
    runtime = RuntimeSettings("llama.cpp", {
        "context_type": "mtp" if ctx.mtp else "default",
        "n_ctx_asked": ctx.n_ctx_asked,
        "n_ctx": ctx.n_ctx,
        "n_ctx_seq": ctx.n_ctx_seq,
        "n_seq": ctx.n_seq,
        "n_stream": ctx.n_stream,
        "n_rs_seq": ctx.n_rs_seq,
        "kv_unified": ctx.kv_unified,
        "flash_attn": ctx.flash_attn_asked,
        "flash_attn_effective": ctx.flash_attn,
        "swa_full": ctx.swa_full,
        "n_batch": ctx.n_batch,
        "n_ubatch": ctx.n_ubatch,
        "type_k": ctx.type_k.name,
        "type_v": ctx.type_v.name,
        "alignment": ctx.alignment,
        "backend": ctx.backend,
    })  # fmt: skip
    return MemoryPlan(model=model, runtime=runtime, caches=tuple(caches), notes=tuple(notes))


def plan_mtp_draft(
    model: ModelDescription, settings: LlamaCppSettings, type_k: str = "f16", type_v: str = "f16"
) -> MemoryPlan:
    """The separate MTP draft context llama.cpp's speculative decoding creates (its own cache types,
    no rollback snapshots), as common/common.cpp does."""
    return plan(model, replace(settings, mtp=True, n_rs_seq=0, type_k=type_k, type_v=type_v))


__all__ = ["F32", "LlamaCppSettings", "derive_context", "plan", "plan_mtp_draft"]
