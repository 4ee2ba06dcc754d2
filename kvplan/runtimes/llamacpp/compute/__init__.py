"""llama.cpp's compute buffers: its worst-case graph (archs.py: one builder per llama.cpp model class, over the
graph helpers of context.py and the ggml constructors of ggml.py), planned by a port of ggml's graph allocator
(alloc.py). Exact on the CPU backend for the architectures in archs.BUILDERS (recorded:
tests/fixtures/oracle/compute_graph.json); other architectures have no graph here yet (None)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from kvplan.model import GraphFacts, ModelDescription
from kvplan.runtimes.llamacpp.compute.alloc import GraphAllocator
from kvplan.runtimes.llamacpp.compute.archs import BUILDERS, Dims
from kvplan.runtimes.llamacpp.compute.context import Reserve, Weights
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.layers import DROPPED_IN, KEPT, Probe, by_layer, placed, shortening, structure
from kvplan.runtimes.llamacpp.compute.sched import CUDA, HOST, RPC, DeviceRules, Placement, Scheduler, weight_names
from kvplan.runtimes.llamacpp.plan import CacheKind, FlashAttn, MemoryPlan

_WINDOWS = ("sliding window", "chunked window")


@dataclass(frozen=True)
class ComputeBuffer:
    """One backend's compute buffer: its bytes and what was live when it peaked (role → bytes)."""

    backend: str
    bytes: int
    parts: tuple[tuple[str, int], ...]
    basis: str

    def to_dict(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "bytes": self.bytes,
            "parts": dict(self.parts),
            "basis": self.basis,
        }


def reserve_for(p: MemoryPlan) -> Reserve:
    """The worst-case batch llama_context::sched_reserve builds its graph for: n_tokens = min(n_ctx, n_ubatch)
    rounded up to a multiple of n_seq (graph_reserve), n_outputs = min(n_ctx, n_ubatch, n_batch) (and a newer
    llama.cpp's n_outputs_max, where set), the caches as init_full() presents them (every cell)."""
    c = p.context
    n_tokens = n_outputs = min(c.n_ctx, c.n_ubatch)
    if n_tokens % c.n_seq:
        n_tokens = (n_tokens + c.n_seq - 1) // c.n_seq * c.n_seq
    attn = [x for x in p.caches if x.kind is CacheKind.ATTENTION]
    recr = [x for x in p.caches if x.kind is CacheKind.RECURRENT]
    swa = [x for x in attn if x.name in _WINDOWS]
    full = [x for x in attn if x.name not in _WINDOWS]
    return Reserve(
        n_tokens=n_tokens,
        n_seqs=c.n_seq,
        n_outputs=min(n_outputs, c.n_batch, c.n_outputs_max or n_outputs),
        flash_attn=c.flash_attn is FlashAttn.ON and not c.fa_off_in_graph,
        cache_flash_attn=True if c.fa_off_in_graph else None,
        kv_unified=c.kv_unified,
        type_k=c.type_k.name,
        type_v=c.type_v.name,
        n_stream=c.n_stream,
        kv_size=full[0].cells if full else 0,
        kv_size_swa=swa[0].cells if swa else 0,
        rs_size=recr[0].cells // (1 + c.n_rs_seq) if recr else 0,
        type_r=recr[0].type_k if recr else "f32",
        type_s=(recr[0].type_v or "f32") if recr else "f32",
        n_ctx_seq=c.n_ctx_seq,
        comp_cells=(_cells(p, "compressed CSA"), _cells(p, "compressed HCA")),
    )


def _cells(p: MemoryPlan, prefix: str) -> int:
    return next((x.cells for x in p.caches if x.kind is CacheKind.COMPRESSED and x.name.startswith(prefix)), 0)


def dims_of(m: ModelDescription) -> tuple[Dims, Weights] | None:
    """The builder's dimensions for a model whose graph facts are known and whose layers share one shape."""
    g = m.graph
    if g is None or not m.layers or (m.mla and not g.kv_lora_rank) or (m.n_layer_nextn and m.arch not in _TRUNK_ONLY):
        return None
    layers = m.layers[: m.n_layer]  # the nextn block is the MTP graph's, not the trunk's
    # a hybrid's state layers have no KV heads (Granite-4.0-H), nor have Nemotron-H's feed-forward blocks: the
    # attention layers set the shapes
    attending = [la for la in layers if (not la.recurrent or la.n_head_kv) and (la.n_head_kv or not la.n_ff)]
    first = (attending or layers)[0]
    per_layer = m.arch in _PER_LAYER_HEADS
    shape = (first.n_head, first.n_head_kv, first.head_k, first.head_v)
    if any(
        (la.n_head, la.n_head_kv, la.head_k, la.head_v) != shape
        and (not per_layer or (la.head_k, la.head_v) != shape[2:])
        and (m.arch not in _MLA_SWA or la.n_head_kv != first.n_head_kv)
        for la in attending
    ):
        return None
    n_expert = g.n_expert or m.n_expert
    n_used = g.n_expert_used or m.n_expert_used
    ff_unknown = g.n_ff <= 0 and m.arch not in _NO_FFN and not any(la.n_ff for la in layers)
    if g.n_vocab <= 0 or m.n_embd <= 0 or (n_expert and not 0 < n_used <= n_expert) or (not n_expert and ff_unknown):
        return None
    d = Dims(
        n_embd=m.n_embd,
        n_vocab=g.n_vocab,
        n_layer=m.n_layer,
        n_head=first.n_head,
        n_head_kv=first.n_head_kv,
        head_k=first.head_k,
        head_v=first.head_v,
        n_ff=g.n_ff,
        n_expert=n_expert,
        n_expert_used=n_used,
        n_ff_exp=g.n_ff_exp,
        expert_weights_scale=g.expert_weights_scale,
        swa=tuple(la.swa for la in layers),
        final_softcap=g.final_logit_softcap,
        n_layer_dense_lead=g.n_layer_dense_lead,
        n_expert_shared=g.n_expert_shared,
        expert_weights_norm=g.expert_weights_norm,
        expert_gating=g.expert_gating,
        mrope=g.mrope,
        n_rot=g.n_rot,
        kv_lora_rank=g.kv_lora_rank,
        head_k_mla=g.head_k_mla,
        head_v_mla=g.head_v_mla,
        q_lora_rank=g.q_lora_rank,
        mla_swa=g.mla_swa,
        hc=g.hc_count,
        hc_low_rank=g.hc_low_rank,
        ple=g.ple,
        ple_layers=tuple(la.ple for la in layers),
        compress=tuple(la.compress_ratio for la in layers),
        dsv4=g.dsv4,
        n_swa=m.n_swa,
        attn_res_block=g.attn_res_block,
        indexer_block=g.indexer_block,
        kpool=g.kpool,
        kpool_tail=g.kpool_tail,
        situ_linear=g.situ_linear,
        kda_lower_bound=g.kda_lower_bound,
        expert_latent=g.expert_latent,
        expert_groups=g.expert_groups,
        recurrent=tuple(la.recurrent for la in layers),
        ssm=_ssm(m),
        n_ff_shexp=g.n_ff_shexp,
        n_ctx_orig=g.n_ctx_orig or m.n_ctx_train,
        logit_scale=g.logit_scale,
        embedding_scale=g.embedding_scale,
        residual_scale=g.residual_scale,
        rope=g.rope_finetuned,
        ssm_dt_b_c_rms=g.ssm_dt_b_c_rms,
        dense_layers=g.dense_layers,
        moe_layer_step=g.moe_layer_step,
        n_ff_layers=tuple(la.n_ff for la in layers),
        moe_latent=g.moe_latent,
        kv_source=tuple(-1 if la.has_kv or la.kv_source is None else la.kv_source for la in layers),
        shortconv_l_cache=m.recurrent_params.l_cache if m.recurrent_params else 0,
        n_deepstack=g.n_deepstack,
        parallel_residual=g.parallel_residual,
        indexer=(g.indexer_heads, m.indexer_head_size, g.indexer_top_k),
        indexer_layers=tuple(la.indexer for la in layers),
        chexp=(g.experts_per_group, g.n_ff_chexp),
        layer_norm=g.rms_eps_missing,
        layer_heads=tuple((la.n_head, la.n_head_kv) for la in layers) if per_layer else (),
        hrm=g.hrm,
        gate_width=g.gate_width,
        attn_value_scale=g.attn_value_scale,
        kda_head=m.recurrent_params.kda_head if m.recurrent_params else 0,
        clamp_exp=g.clamp_exp if m.arch in _CLAMPED_OP_BY_OP else frozenset(),
        clamp_shexp=g.clamp_shexp if m.arch in _CLAMPED_OP_BY_OP else frozenset(),
    )
    return d, Weights(g.tensors, all_optional=g.all_optional)


def _ssm(m: ModelDescription) -> tuple[int, int, int, int, int]:
    rp = m.recurrent_params
    if rp is None:
        return (0, 0, 0, 0, 0)
    return (rp.d_conv, rp.d_inner, rp.d_state, rp.n_group, rp.n_head)


#: architectures whose trunk graph kvplan builds with a nextn (MTP) block in the file
_TRUNK_ONLY = frozenset({"glm4moe", "deepseek2", "qwen3next", "qwen35", "qwen35moe", "mimo2", "hy_v3"})
#: architectures whose layers each have their own query and KV heads (Dims.layer_heads)
_PER_LAYER_HEADS = frozenset({"deci", "laguna", "mimo2", "dots3note"})
#: architectures whose window layers have their own MLA widths (GraphFacts.mla_swa) and per-layer query heads
_MLA_SWA = frozenset({"dots3note"})
#: architectures whose loader reads swiglu_clamp_* and whose clamp llama.cpp builds op by op (build_ffn /
#: build_moe_ffn; Maple, DeepSeek-V4, GLM-5-Next and Hy V4 take ggml_swiglu_clamp, one op the size of SwiGLU's)
_CLAMPED_OP_BY_OP = frozenset({"bailingmoe3", "step35"})
#: architectures without a feed-forward block (their GGUFs state feed_forward_length 0)
_NO_FFN = frozenset({"mamba", "mamba2"})
#: architectures whose graph kvplan builds only without kept recurrent snapshots (n_rs_seq 0)
_NO_SNAPSHOTS = frozenset({"qwen3next", "qwen35", "qwen35moe", "qwen4exp", "deepseek4", "kimi-k3", "glm5-next"})
_GRAPHS: dict[tuple[int, Reserve], tuple[ModelDescription, Graph | None]] = {}
_GRAPHS_KEPT = 16


def graph_of(p: MemoryPlan, layers: tuple[int, ...] = ()) -> Graph | None:
    """llama.cpp's worst-case graph for this plan (only `layers` where given: layers.py), or None where kvplan has
    no builder for the architecture (the last few built are kept: a fit places one plan many ways)."""
    r = replace(reserve_for(p), layers=layers)
    key = (id(p.model), r)
    hit = _GRAPHS.get(key)
    if hit is not None and hit[0] is p.model:
        return hit[1]
    build = BUILDERS.get(p.model.arch)
    if _not_built(p) is not None:
        build = None
    dw = dims_of(p.model)
    g = None if build is None or dw is None else build(dw[0], r, dw[1])
    if len(_GRAPHS) >= _GRAPHS_KEPT:
        del _GRAPHS[next(iter(_GRAPHS))]
    _GRAPHS[key] = (p.model, g)
    return g


def _not_built(p: MemoryPlan) -> str | None:
    """Why a builder does not cover this model and setting (None: it does)."""
    m, g = p.model, p.model.graph
    if p.context.n_rs_seq and m.arch in _NO_SNAPSHOTS:
        return "no graph with kept recurrent snapshots (n_rs_seq) yet"
    if m.arch == "mistral3" and g is not None and (g.n_ff_shexp or g.attn_temp_scale):
        return "no graph yet for Mistral 3's shared experts or attention temperature tuning"
    if m.arch == "granite_swa" and g is not None and (g.n_expert or g.n_deepstack or g.rope_pattern_off):
        return "no graph yet for Granite-SWA's experts, deepstack inputs or layers without RoPE"
    if (
        m.arch == "hrm_text"
        and g is not None
        and (min(g.hrm) <= 0 or g.hrm[0] * g.hrm[1] * (g.hrm[2] + 1) != m.n_layer)
    ):
        return (
            "HRM-Text's stacks must fill its blocks: layers_per_stack × h_cycles × (l_cycles + 1) (llama.cpp asserts)"
        )
    if m.arch == "glm5-next" and g is not None and g.kpool > 1:
        r = reserve_for(p)
        n_pool = max(64, -(-(r.kv_size // g.kpool * r.n_seqs + 1) // 64) * 64)
        n_sel = g.kpool * min(n_pool, g.indexer_top_k // g.kpool) + (g.kpool - 1 if g.kpool_tail else 0)
        if r.n_tokens <= 16 and r.kv_size > n_sel:
            return "no graph yet for GLM-5-Next's gathered selection (a ubatch of at most 16 tokens over more cells)"
    if m.arch in ("kimi-linear", "kimi-k3") and g is not None and "attn_kv_b" in g.tensors and not g.all_optional:
        name = "Kimi-Linear" if m.arch == "kimi-linear" else "Kimi K3"
        return f"no graph yet for {name} files with the unsplit attn_kv_b (MLA without absorption)"
    if m.arch == "laguna" and g is not None and m.layers and g.gate_width not in (
        0, m.layers[0].n_head, m.layers[0].n_head * m.layers[0].head_k
    ):  # fmt: skip
        return f"llama.cpp aborts on Laguna's attention gate {g.gate_width} wide (neither per head nor per element)"
    if m.arch == "laguna" and g is not None and g.n_expert and g.expert_gating not in (1, 2, 3):
        return f"Laguna's expert gating function {g.expert_gating} is none llama.cpp's build_moe_ffn builds (it aborts)"
    if m.arch == "grovemoe" and g is not None and not 0 < g.experts_per_group <= max(g.n_expert, 1):
        return "GroveMoE's experts_per_group must be from 1 to its expert count (llama.cpp's loader asserts it)"
    if m.arch in ("deepseek32", "glm-dsa") and g is not None and min(g.indexer_heads, g.indexer_top_k,
                                                                         m.indexer_head_size) <= 0:  # fmt: skip
        return "the lightning indexer's heads, head size and top-k must be positive (llama.cpp requires the keys)"
    return _keys_missing(m)


#: per architecture, graph facts its loader requires to be positive (llama.cpp throws on a file without them; a
#: config.json whose conversion of them is not ported lacks them)
_REQUIRED: dict[str, tuple[str, ...]] = {
    "glm5-next": ("kpool",),
    "hy_v4": ("hc_count",),
    "minimax-m3": ("indexer_block",),
    "qwen4exp": ("indexer_heads", "indexer_top_k"),
}


def _required_zero(arch: str, g: GraphFacts) -> str:
    """The first required fact that is not positive ("" when all are); GLM-5-Next's kpool must exceed 1."""
    for name in _REQUIRED.get(arch, ()):
        if getattr(g, name) <= (1 if name == "kpool" else 0):
            return name
    return ""


def _keys_missing(m: ModelDescription) -> str | None:
    """The keys a loader requires that the description lacks (_REQUIRED; DeepSeek-V4's and Qwen4exp's
    hyper-connection shapes): a config.json whose conversion of them is not ported gives no graph, rather than one
    of the wrong shape or a crash."""
    g = m.graph
    if g is None:
        return None
    missing = _required_zero(m.arch, g)
    if missing:
        return f"{m.arch}: a key its loader requires is missing or zero ({missing}; a GGUF gives it)"
    heads = m.layers[0].n_head if m.layers else 0
    if m.arch == "deepseek4" and (g.hc_count != 4 or min(g.dsv4[:2]) <= 0 or heads % max(g.dsv4[0], 1)):
        return ("DeepSeek-V4's four hyper-connection streams, output groups (dividing the heads) and output low rank "
                "must be known (attention.output_group_count, .output_lora_rank; a GGUF gives them)")  # fmt: skip
    if m.arch == "qwen4exp" and (
        g.hc_count <= 1 or g.hc_low_rank <= 0 or (g.ple[0] and g.ple[0] * g.ple[1] != m.n_embd)
    ):
        return ("Qwen4exp's hyper-connection streams (more than one) and low rank must be known, and its PLE heads "
                "must fill the embedding (a GGUF gives them)")  # fmt: skip
    return None


def no_graph_reason(p: MemoryPlan) -> str:
    """Why graph_of(p) is None, in a reader's words."""
    m = p.model
    if m.arch not in BUILDERS:
        return f"no graph for {m.arch} yet"
    return (
        _not_built(p)
        or "the model's vocabulary or feed-forward widths are not known (a GGUF or config.json gives them)"
    )


def cpu_compute_buffer(p: MemoryPlan) -> ComputeBuffer | None:
    """llama.cpp's compute buffer on the CPU backend (every layer on the CPU), or None where kvplan has no graph
    for the architecture."""

    def reserve(g: Graph, probe: Probe | None) -> GraphAllocator:
        alloc = GraphAllocator()
        alloc.reserve(g.leafs, g.nodes, marks=probe.callbacks(alloc, g.nodes, {}) if probe is not None else None)
        return alloc

    alloc = _proven(p, None, None, reserve)
    if alloc is None:
        return None
    return ComputeBuffer(
        "CPU",
        alloc.allocs[0].size,
        alloc.peak_parts(),
        "llama.cpp's worst-case graph (graph_reserve) planned by a port of ggml's graph allocator",
    )


def device_compute_buffers(
    p: MemoryPlan,
    placement: Placement,
    rules: DeviceRules = RPC,
    weight_bytes: Mapping[str, int] | None = None,
    weight_extra: Mapping[str, int] | None = None,
) -> tuple[ComputeBuffer, ...] | None:
    """llama.cpp's compute buffer on every device of a placement, then the host's (the CPU backend's), as its
    scheduler splits the graph over them with the devices' `rules` (RPC: the CPU backend's, recorded; CUDA: read
    from ggml-cuda; `weight_extra`: what a device buffer allocates beyond each weight's bytes, for the weights op
    offload copies there), or None where kvplan has no graph for the architecture. The last few answers are kept:
    llama.cpp's fit projects some placements twice."""
    r = reserve_for(p)
    key = (id(p.model), r, placement, rules, id(weight_bytes), id(weight_extra))
    hit = _DEVICE_BUFFERS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], (p.model, weight_bytes, weight_extra), strict=True)):
        return hit[1]
    planned = _proven(
        p, placement, weight_bytes,
        lambda g, probe: Scheduler(placement, r.n_tokens, rules, weight_bytes, weight_extra).reserve(g, probe),
    )  # fmt: skip
    if planned is None:
        return None
    sizes, alloc = planned
    basis = "llama.cpp's worst-case graph split over the devices by a port of ggml's scheduler and allocator"
    if not rules.recorded:
        basis += f" ({rules.name} rules derived from its source, not recorded)"
    names = [f"GPU{i}" for i in range(placement.n_devices)] + ["CPU"]
    got = tuple(ComputeBuffer(names[i], size, alloc.peak_parts(i), basis) for i, size in enumerate(sizes))
    if len(_DEVICE_BUFFERS) >= _GRAPHS_KEPT:
        del _DEVICE_BUFFERS[next(iter(_DEVICE_BUFFERS))]
    _DEVICE_BUFFERS[key] = ((p.model, weight_bytes, weight_extra), got)
    return got


_Owners = tuple[ModelDescription, "Mapping[str, int] | None", "Mapping[str, int] | None"]
_DEVICE_BUFFERS: dict[Hashable, tuple[_Owners, tuple[ComputeBuffer, ...]]] = {}


_Classes = tuple[tuple[int, ...], tuple[str, ...], tuple[tuple[str, ...], ...]]
_CLASSES: dict[tuple[int, Reserve], tuple[ModelDescription, _Classes]] = {}


def _model_key(p: MemoryPlan) -> tuple[int, Reserve]:
    """The model and its reserve up to the cache sizes, which every layer of a cache shares (a solver's contexts):
    what the layers' likeness, and a shortening's proof, depend on."""
    return id(p.model), replace(reserve_for(p), kv_size=0, kv_size_swa=0, n_ctx_seq=0)


def _layer_classes(p: MemoryPlan) -> _Classes | None:
    """Which layers' graphs are alike (layers.structure), the graph's weight names, and each layer's, or None
    without a graph; kept per model and reserve up to the cache sizes, which every layer of a cache shares (a
    solver's contexts)."""
    key = _model_key(p)
    hit = _CLASSES.get(key)
    if hit is not None and hit[0] is p.model:
        return hit[1]
    g = graph_of(p)
    if g is None:
        return None
    names = weight_names(g)
    found = structure(g, p.model.n_layer), names, by_layer(names, p.model.n_layer)
    if len(_CLASSES) >= _GRAPHS_KEPT:
        del _CLASSES[next(iter(_CLASSES))]
    _CLASSES[key] = (p.model, found)
    return found


#: the shortenings tried, the cheapest first: (periods kept, periods dropped in multiples of); each answer stands
#: only where layers.Probe proves it the whole graph's, else the next is tried, and the whole graph last
ATTEMPTS: tuple[tuple[int, int], ...] = ((3, 1), (KEPT + 12, DROPPED_IN))
#: (model, reserve, attempt) where an attempt was not proven: the next plans of the model skip it
_UNPROVEN: dict[tuple[int, Reserve, tuple[int, int]], ModelDescription] = {}
_R = TypeVar("_R")


def _proven(
    p: MemoryPlan,
    placement: Placement | None,
    weight_bytes: Mapping[str, int] | None,
    reserve: Callable[[Graph, Probe | None], _R],
) -> _R | None:
    """`reserve` run on the shortest graph whose shortening its probe proves exact (or on the whole graph), or
    None where kvplan has no graph for the architecture."""
    base = _model_key(p)
    for attempt in (*ATTEMPTS, None):
        if attempt is not None and _UNPROVEN.get((*base, attempt)) is p.model:
            continue
        got = _shortened(p, placement, weight_bytes, attempt)
        if got is None:
            return None
        g, probe = got
        result = reserve(g, probe)
        if probe is None or probe.proven():
            return result
        assert attempt is not None
        if len(_UNPROVEN) >= 256:
            del _UNPROVEN[next(iter(_UNPROVEN))]
        _UNPROVEN[(*base, attempt)] = p.model
    raise AssertionError("unreachable: the whole graph needs no proof")  # pragma: no cover


def _shortened(
    p: MemoryPlan,
    placement: Placement | None,
    weight_bytes: Mapping[str, int] | None,
    attempt: tuple[int, int] | None,
) -> tuple[Graph, Probe | None] | None:
    """The graph with its repeating layers shortened as `attempt` says (layers.py; None: the whole graph): where
    they repeat, and where a `placement` is given, where their placement repeats too; with the probe that can
    prove it (None where nothing was dropped)."""
    classes = _layer_classes(p)
    if classes is None:
        return None
    n_layer = p.model.n_layer
    codes, names, layer_names = classes
    sigs: list[Hashable] = list(codes)
    if attempt is None:
        g = graph_of(p)
        return (g, None) if g is not None else None
    if placement is not None:
        if len(placement.where) <= n_layer:  # (where: the trunk's layers, any MTP block's, then the output layer)
            g = graph_of(p)
            return (g, None) if g is not None else None
        from kvplan.runtimes.llamacpp.overrides import destinations

        moved = destinations(placement.rules, names) if placement.rules else {}
        sigs = list(zip(codes, placed(placement.where, layer_names, moved, weight_bytes or {}), strict=True))
    short, runs = shortening(sigs, attempt[0], dropped_in=attempt[1])
    if len(short) >= n_layer:
        g = graph_of(p)
        return (g, None) if g is not None else None
    g = graph_of(p, short)
    return (g, Probe(g, runs)) if g is not None else None


__all__ = [
    "CUDA",
    "HOST",
    "RPC",
    "ComputeBuffer",
    "DeviceRules",
    "Placement",
    "cpu_compute_buffer",
    "device_compute_buffers",
    "dims_of",
    "graph_of",
    "no_graph_reason",
    "reserve_for",
]
