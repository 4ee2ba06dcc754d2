"""llama.cpp's memory layout, byte-exact.

The context comes from kvplan.runtimes.llamacpp.context (src/llama-context.cpp); the memory modules follow
llama_model::create_memory and the cache classes (llama_kv_cache, _iswa, llama_memory_recurrent, _hybrid,
_hybrid_idx, llama_kv_cache_dsa, _dsa_iswa, _msa, _dsv4). ``MemoryPlan.total_bytes`` equals the ``context``
figure of ``llama_get_memory_breakdown()`` for the CPU backend (tensor alignment 32). See the README's
"How kvplan computes llama.cpp memory".
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import NamedTuple

from kvplan.facts.ggml_types import GGML_TYPES_BY_NAME, GGMLType
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType
from kvplan.runtimes.llamacpp.context import LlamaCppSettings, derive_context
from kvplan.runtimes.llamacpp.plan import KV_PAD_CELLS, Backend, CacheKind, CachePlan, Context, FlashAttn, MemoryPlan
from kvplan.units import cdiv, pad_to

F32 = GGML_TYPES_BY_NAME["f32"]
#: hybrids whose MTP context is a plain cache of the nextn layers (create_memory's mtp_on_hybrid_*)
#: architectures whose loader skips the nextn / MTP blocks' tensors unless the MTP draft is asked for
#: (`mtp_flags |= TENSOR_SKIP` when `!ml.load_mtp`, in src/models/<arch>.cpp load_arch_tensors; load_mtp is set
#: by `--spec-type draft-mtp`, common_model_params_to_llama): their bytes are in the GGUF, not in memory
MTP_TENSORS_SKIPPED = frozenset({
    "bailingmoe3", "cohere2moe", "deepseek2", "deepseek32", "deepseek4", "glm-dsa", "glm4moe", "glm5-next", "hy_v3",
    "mimo2", "nemotron_h", "nemotron_h_moe", "qwen35", "qwen35moe", "qwen3next", "step35",
})  # fmt: skip
MTP_PLAIN_HYBRIDS = frozenset({"qwen3next", "qwen35", "qwen35moe", "bailingmoe3", "nemotron_h_moe"})
#: DeepSeek-V4's compression ratios (CSA, HCA) and the compressor's per-plane state sizes in f32 values:
#: CSA keeps 2 × head × 8 (kv and score, overlapping windows of 8), HCA head × 128 (src/llama-kv-cache-dsv4.cpp)
CSA_RATIO, HCA_RATIO = 4, 128
CSA_STATE_ROWS, HCA_STATE_ROWS = 2 * 8, 128

# --- building blocks: one llama_kv_cache, one recurrent state --------------------------------------


class _Row(NamedTuple):
    """One layer of one cache: its K and V widths in elements (V None: the cache has no V tensor)."""

    layer: int
    k: int
    v: int | None


class _Rows(list[_Row]):
    """Rows with their shapes found once: the distinct (K, V) widths, how many layers have each, and each
    layer's shape (a sweep sizes a cache per shape, not per layer)."""

    def __init__(self, rows: Iterable[_Row]) -> None:
        super().__init__(rows)
        index: dict[tuple[int, int | None], int] = {}
        self.of_row = [index.setdefault((r.k, r.v), len(index)) for r in self]
        self.shapes = list(index)
        self.counts = [0] * len(index)
        for i in self.of_row:
            self.counts[i] += 1
        self.layers = tuple(r.layer for r in self)
        self._pick = operator.itemgetter(*self.of_row) if len(self.of_row) > 1 else None

    def per_layer(self, per_shape: list[int]) -> tuple[int, ...]:
        if self._pick is None:
            return tuple(per_shape[i] for i in self.of_row)
        picked: tuple[int, ...] = self._pick(per_shape)
        return picked


#: where each backend's flash-attention kernels are chosen (fa_missing's readings)
_FA_SOURCE = {
    Backend.CPU: "ggml-cpu",
    Backend.CUDA: "ggml-cuda/fattn.cu",
    Backend.ROCM: "ggml-cuda/fattn.cu, built by HIP",
    Backend.METAL: "ggml-metal-device.m's supports_op",
    Backend.VULKAN: "ggml-vulkan.cpp's supports_op",
}


def _kv_cache(
    name: str,
    kind: CacheKind,
    rows: list[_Row],
    cells: int,
    streams: int,
    ctx: Context,
    grows: bool,
    why: str,
    type_k: GGMLType | None = None,
    type_v: GGMLType | None = None,
) -> CachePlan:
    """One llama_kv_cache: K [k, cells, streams] (and V) per layer, each buffer-padded. Layers of one shape
    (K and V widths) are sized once: a sweep costs per shape, not per layer."""
    tk = type_k or ctx.type_k
    tv = type_v or ctx.type_v
    g = rows if isinstance(rows, _Rows) else _Rows(rows)
    k_bytes = v_bytes = per_token = buffer = 0
    this_of: list[int] = []
    for (k_w, v_w), n in zip(g.shapes, g.counts, strict=True):
        k_row = tk.row_bytes(k_w)
        k = k_row * cells * streams
        this, row, v = ctx.alloc(tk, k_w, k), k_row, 0
        if v_w is not None:
            v_row = tv.row_bytes(v_w)
            v = v_row * cells * streams
            this += ctx.alloc(tv, v_w, v)
            row += v_row
        k_bytes += k * n
        v_bytes += v * n
        buffer += this * n
        per_token += row * n
        this_of.append(this)
    has_v = any(v_w is not None for _, v_w in g.shapes)
    return CachePlan(
        name=name,
        kind=kind,
        layers=g.layers,
        cells=cells,
        streams=streams,
        type_k=tk.name,
        type_v=tv.name if has_v else None,
        k_bytes=k_bytes,
        v_bytes=v_bytes,
        buffer_bytes=buffer,
        per_token_bytes=per_token if grows else 0,
        why=why,
        layer_bytes=g.per_layer(this_of),
    )


def _attention_rows(
    model: ModelDescription,
    ctx: Context,
    layers: Iterable[Layer],
    k_only: bool,
    v_max_over: Iterable[Layer] | None = None,
) -> list[_Row]:
    """K/V widths of ordinary attention layers; with FA off every V is the widest V (over all layers)."""
    if v_max_over is None:
        layers = tuple(layers)
        key = ("attention rows", tuple(layer.index for layer in layers), k_only, ctx.v_trans)
        memo = model.plan_memo
        if key not in memo:
            memo[key] = _Rows(_rows(layers, k_only, ctx.v_trans and model.v_width_variable, model.v_width_max))
        rows = memo[key]
        assert isinstance(rows, list)
        return rows
    all_layers = list(v_max_over)
    v_max = max((layer.v_width for layer in all_layers), default=0)
    variable = any(layer.v_width != all_layers[0].v_width for layer in all_layers)
    return _rows(layers, k_only, ctx.v_trans and variable, v_max)


def _rows(layers: Iterable[Layer], k_only: bool, pad_v: bool, v_max: int) -> list[_Row]:
    if k_only:
        return [_Row(layer.index, layer.k_width, None) for layer in layers]
    if pad_v:
        return [_Row(layer.index, layer.k_width, v_max) for layer in layers]
    return [_Row(layer.index, layer.k_width, layer.v_width) for layer in layers]


def _full_why(ctx: Context, cells: int | None = None) -> str:
    streams = "1 unified stream" if ctx.kv_unified else f"{ctx.n_stream} stream(s), one per sequence"
    cells = cells or ctx.n_ctx_seq
    return f"n_ctx {ctx.n_ctx_asked:,} padded to {KV_PAD_CELLS} → {ctx.n_ctx:,}; {cells:,} cells × {streams}"


def _swa_cells(model: ModelDescription, ctx: Context, unified: bool) -> tuple[int, bool, str]:
    """llama_kv_cache_iswa's SWA size: (cells, still grows with context, why)."""
    if ctx.swa_full:
        return ctx.n_ctx_seq, True, f"--swa-full: window layers get the full {ctx.n_ctx_seq:,} cells"
    seqs = ctx.n_seq if unified else 1
    want = model.n_swa * seqs + ctx.n_ubatch
    cells = pad_to(min(ctx.n_ctx_seq, want), KV_PAD_CELLS)
    seq_part = f" × {seqs} seqs" if seqs > 1 else ""
    why = (
        f"window {model.n_swa:,}{seq_part} + ubatch {ctx.n_ubatch:,} = {want:,}, capped at {ctx.n_ctx_seq:,}, "
        f"padded → {cells:,}"
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
        return [_kv_cache("attention", CacheKind.ATTENTION, rows, ctx.n_ctx_seq, streams, ctx, True, _full_why(ctx))]
    label = "chunked window" if model.swa_type == SwaType.CHUNKED else "sliding window"
    base = [layer for layer in layers if not layer.swa]
    swa = [layer for layer in layers if layer.swa]
    out = []
    if base:
        rows = _attention_rows(model, ctx, base, k_only)
        out.append(
            _kv_cache("full attention", CacheKind.ATTENTION, rows, ctx.n_ctx_seq, streams, ctx, True, _full_why(ctx))
        )
    if swa:
        cells, grows, why = _swa_cells(model, ctx, unified)
        out.append(
            _kv_cache(
                label, CacheKind.ATTENTION, _attention_rows(model, ctx, swa, k_only), cells, streams, ctx, grows, why
            )
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
    seen: dict[bool, tuple[int, int, int]] = {}  # with / without the PLE history: computed once each
    for layer in layers:
        ple = bool(layer.ple and model.ple_conv_state)
        shape = seen.get(ple)
        if shape is None:
            widths = [model.n_embd_r, model.n_embd_s, *([model.ple_conv_state] if ple else [])]
            this = r = s_ = 0
            for i, w in enumerate(widths):
                b = F32.row_bytes(w) * rows
                this += ctx.alloc(F32, w, b)
                if i == 1:
                    s_ += b
                else:
                    r += b
            shape = seen[ple] = (r, s_, this)
        r_bytes += shape[0]
        s_bytes += shape[1]
        layer_bytes.append(shape[2])
    snap = f" × (1 + {ctx.n_rs_seq} rollback snapshots)" if ctx.n_rs_seq else ""
    why = (
        f"{ctx.n_seq} sequence(s){snap} = {rows} row(s) of {model.n_embd_r:,} r + {model.n_embd_s:,} s "
        "f32 values per layer, independent of the context length"
    )
    return [
        CachePlan(
            name="recurrent state",
            kind=CacheKind.RECURRENT,
            layers=tuple(layer.index for layer in layers),
            cells=rows,
            streams=1,
            type_k="f32",
            type_v="f32",
            k_bytes=r_bytes,
            v_bytes=s_bytes,
            buffer_bytes=sum(layer_bytes),
            per_token_bytes=0,
            why=why,
            layer_bytes=tuple(layer_bytes),
        )
    ]


def _indexer(
    ctx: Context,
    layers: list[Layer],
    width: int,
    cells: int,
    streams: int,
    why: str,
    v_width: int | None = None,
) -> list[CachePlan]:
    if not layers:
        return []
    rows = [_Row(layer.index, width, v_width) for layer in layers]
    return [_kv_cache("indexer", CacheKind.INDEXER, rows, cells, streams, ctx, cells == ctx.n_ctx_seq, why)]


# --- the memory modules (create_memory) -----------------------------------------------------------


def _trunk(layer: Layer) -> bool:
    return not layer.nextn


def _nextn(layer: Layer) -> bool:
    return layer.nextn


def _every(layer: Layer) -> bool:
    return True


def _indexer_layer(layer: Layer) -> bool:
    return layer.indexer


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


Filter = Callable[[Layer], bool]


def _nemotron_attn(layer: Layer) -> bool:
    return not layer.recurrent and layer.n_ff == 0


def _nemotron_recr(layer: Layer) -> bool:
    return layer.recurrent and layer.n_ff == 0


def _trunk_attn(layer: Layer) -> bool:
    return not layer.nextn and not layer.recurrent


def _trunk_recr(layer: Layer) -> bool:
    return not layer.nextn and layer.recurrent


def _default_attn(layer: Layer) -> bool:
    return not layer.recurrent  # over every layer: nextn layers included


def _default_recr(layer: Layer) -> bool:
    return layer.recurrent


#: create_memory's layer filters for the hybrid memory (attention, recurrent), by architecture
HYBRID_FILTERS: dict[str, tuple[Filter, Filter]] = {
    "falcon-h1": (_every, _every),  # every layer is both
    "nemotron_h": (_nemotron_attn, _nemotron_recr),  # blocks with n_ff == 0 are mixers
    "nemotron_h_moe": (_nemotron_attn, _nemotron_recr),
    **dict.fromkeys(("qwen3next", "qwen35", "qwen35moe", "qwen4exp", "minimax-01"), (_trunk_attn, _trunk_recr)),
}


def _hybrid(model: ModelDescription, ctx: Context, notes: list[str]) -> list[CachePlan]:
    arch = model.arch
    if ctx.mtp and arch in MTP_PLAIN_HYBRIDS:
        return _attention(model, ctx, _nextn, model.mla)
    attn, recr = HYBRID_FILTERS.get(arch, (_default_attn, _default_recr))
    if arch not in HYBRID_FILTERS and model.n_layer_nextn:
        notes.append(
            "this hybrid keeps its nextn/MTP layer(s) in the main attention cache (llama.cpp's default hybrid filter)"
        )
    caches = _attention(model, ctx, attn, model.mla)
    if arch == "qwen4exp" and model.swa_type == SwaType.NONE and model.indexer_head_size:
        layers = [layer for layer in model.layers if attn(layer)]
        caches += _indexer(ctx, layers, model.indexer_head_size, ctx.n_ctx_seq, ctx.n_stream, _full_why(ctx))
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
        mla_keep, lid_keep = _every, _indexer_layer
    else:
        mla_keep = _trunk if model.n_layer_nextn > 0 else _every
        if arch == "glm-dsa":

            def lid_keep(layer: Layer) -> bool:
                return not layer.nextn and layer.indexer
        else:
            lid_keep = _trunk
    caches = _attention(model, ctx, mla_keep, k_only=True)
    lid = [layer for layer in model.layers if lid_keep(layer)]
    return caches + _indexer(ctx, lid, model.indexer_head_size, ctx.n_ctx_seq, ctx.n_stream, _full_why(ctx))


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
        caches.append(
            _kv_cache("indexer", CacheKind.INDEXER, rows, ctx.n_ctx_seq, ctx.n_stream, ctx, True, _full_why(ctx))
        )
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
        ctx,
        layers,
        model.indexer_head_size,
        ctx.n_ctx_seq,
        ctx.n_stream,
        _full_why(ctx),
        v_width=head_v,
    )


def _compressed_cells(ctx: Context, ratio: int) -> int:
    return pad_to(max(1, cdiv(ctx.n_ctx_seq, ratio)), KV_PAD_CELLS)


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
    csa = [layer for layer in model.layers if layer.compress_ratio == CSA_RATIO]
    hca = [layer for layer in model.layers if layer.compress_ratio == HCA_RATIO]
    for label, group, ratio in (("compressed CSA ÷4", csa, CSA_RATIO), ("compressed HCA ÷128", hca, HCA_RATIO)):
        if group:
            cells = _compressed_cells(ctx, ratio)
            caches.append(
                _kv_cache(
                    label,
                    CacheKind.COMPRESSED,
                    [_Row(la.index, la.k_width, None) for la in group],
                    cells,
                    streams,
                    ctx,
                    False,
                    f"ceil({ctx.n_ctx_seq:,} / {ratio}) padded → {cells:,}",
                )
            )
    if csa:
        cells = _compressed_cells(ctx, CSA_RATIO)
        caches += _indexer(
            ctx,
            csa,
            model.indexer_head_size,
            cells,
            streams,
            f"on the CSA layers, ceil({ctx.n_ctx_seq:,} / {CSA_RATIO}) padded → {cells:,}",
        )
    planes = ctx.n_seq * (1 + ctx.n_rs_seq)
    head_k = model.layers[0].head_k if model.layers else 0
    state_bytes = 0
    state_layers, layer_bytes = [], []
    for layer in model.layers:
        if layer.index >= model.n_layer:
            continue
        if layer.compress_ratio == CSA_RATIO:
            sizes = [F32.row_bytes(head_k * CSA_STATE_ROWS) * planes] * 2
            sizes += [F32.row_bytes(model.indexer_head_size * CSA_STATE_ROWS) * planes] * 2
        elif layer.compress_ratio == HCA_RATIO:
            sizes = [F32.row_bytes(head_k * HCA_STATE_ROWS) * planes] * 2
        else:
            continue
        state_layers.append(layer.index)
        state_bytes += sum(sizes)
        layer_bytes.append(sum(ctx.alloc(F32, 1, b) for b in sizes))
    if state_layers:
        caches.append(
            CachePlan(
                name="compressor state",
                kind=CacheKind.COMPRESSED,
                layers=tuple(state_layers),
                cells=planes,
                streams=1,
                type_k="f32",
                type_v=None,
                k_bytes=state_bytes,
                v_bytes=0,
                buffer_bytes=sum(layer_bytes),
                per_token_bytes=0,
                why=f"kv + score f32 states per compressed layer, {planes} plane(s); independent of context",
                layer_bytes=tuple(layer_bytes),
            )
        )
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


def _module(model: ModelDescription) -> Callable[[ModelDescription, Context, list[str]], list[CachePlan]]:
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
                f"flash attention off: every V row is padded to the widest layer ({model.v_width_max:,} elements)"
            )
    if settings.n_rs_seq and not ctx.n_rs_seq and any(c.kind is CacheKind.RECURRENT for c in caches):
        notes.append(
            f"--rs-seq {settings.n_rs_seq} ignored: llama.cpp cannot roll back {model.arch}'s "
            "recurrent state, so it keeps no snapshots"
        )
    if ctx.fa_off_in_graph:
        notes.append(
            f"flash attention auto: {ctx.fa_off_in_graph}, so llama.cpp builds the cache for it and then runs the "
            f"graph without it (resolve_fused_ops; {ctx.backend.display}'s kernels read from "
            f"{_FA_SOURCE[ctx.backend]}, not recorded): the compute buffer holds the f32 KQ scores"
        )
    if ctx.fa_on_cpu:
        notes.append(
            f"flash attention on: {ctx.fa_on_cpu}, so llama.cpp runs it on the CPU with copies of K and V in host "
            "memory; kvplan's compute buffers assume the GPU runs it (not modelled)"
        )
    if ctx.flash_attn_asked is FlashAttn.AUTO and model.v_width_variable and not model.mla:
        notes.append(
            "flash attention auto counts as on when llama.cpp builds the cache: V rows keep "
            "each layer's own width (with -fa off they would be padded)"
        )
    if settings.n_ctx and ctx.n_ctx != settings.n_ctx:
        notes.append(
            f"asked for {settings.n_ctx:,} tokens; llama.cpp allocates {ctx.n_ctx:,} "
            f"({ctx.n_ctx_seq:,} cells × {ctx.n_stream} stream(s))"
            if not ctx.kv_unified
            else f"asked for {settings.n_ctx:,} tokens; llama.cpp pads to {ctx.n_ctx:,} cells"
        )
    warnings = []
    if ctx.n_ctx_seq > model.n_ctx_train > 0:
        # llama_context: "n_ctx_seq (%u) > n_ctx_train (%u) -- possible training context overflow"
        warnings.append(
            f"n_ctx_seq {ctx.n_ctx_seq:,} exceeds the model's trained context {model.n_ctx_train:,} "
            "(llama.cpp warns: possible training context overflow)"
        )
    return MemoryPlan(model=model, context=ctx, caches=tuple(caches), notes=tuple(notes), warnings=tuple(warnings))


def plan_mtp_draft(
    model: ModelDescription, settings: LlamaCppSettings, type_k: str = "f16", type_v: str = "f16"
) -> MemoryPlan:
    """The separate MTP draft context llama.cpp's speculative decoding creates (its own cache types,
    no rollback snapshots), as common/common.cpp does."""
    return plan(model, replace(settings, mtp=True, n_rs_seq=0, type_k=type_k, type_v=type_v))


__all__ = ["F32", "LlamaCppSettings", "derive_context", "plan", "plan_mtp_draft"]
