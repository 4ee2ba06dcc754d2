"""The paged serving engines' KV layout: each layer's cache spec on one rank, grouped and staged.

Builds the per-layer specs from the model description and asks the engine (an ``Engine`` of
kvplan.runtimes.engines.vllm / sglang / trtllm) for what differs: block size, head split, MLA packing, windows,
grouping. Formulas and defaults from ../shared/reference/serving-engines-kv.md (with the engines' source
references). Each engine's capacity depends on profiled terms kvplan cannot measure (activations, CUDA graphs):
they enter as one explicit ``overhead`` figure, labelled as an estimate unless given.

Scope:
- every engine: MHA / GQA / MQA with any per-layer head sizes, MLA, DeepSeek-V3.2's indexer cache;
- vLLM: sliding-window and chunked-local layers through its hybrid KV cache manager;
- SGLang: the hybrid SWA pools for the architectures SGLang runs that way;
- refused with the reason: recurrent / Mamba hybrids (their state pages are not modelled yet), TensorRT-LLM's
  variable sliding-window pools, symmetric (non-causal) windows.
"""

from __future__ import annotations

from kvplan.errors import RefusedConfigError
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType
from kvplan.runtimes.engines.paged import (
    DSA_INDEXER_BYTES,
    FP8_DS_MLA_BYTES,
    CacheSpec,
    Capacity,
    ChunkedLocalSpec,
    Engine,
    EngineLayout,
    EngineSettings,
    FullSpec,
    IndexerSpec,
    LayerRef,
    MLASpec,
    RankMemory,
    SlidingWindowSpec,
    pipeline_stages,
)


def _attention_layers(model: ModelDescription, engine: Engine) -> list[Layer]:
    if any(la.recurrent for la in model.layers) or model.memory not in (MemoryKind.KV, MemoryKind.DSA):
        raise RefusedConfigError(
            f"{engine.name}: {model.arch} has {model.memory.value} memory (recurrent / Mamba state or a compressed "
            "cache); kvplan sizes the serving engines' attention KV only and does not model their state pages"
        )
    if model.swa_type == SwaType.SYMMETRIC:
        raise RefusedConfigError(
            f"{engine.name}: {model.arch} uses a symmetric (non-causal) window; not a serving layout"
        )
    # nextn/MTP blocks load only with a speculative config; layers that reuse another's KV own no cache
    return [la for la in model.layers if not la.nextn and la.has_kv and la.n_head_kv > 0]


def _checked_trunk(model: ModelDescription, engine: Engine, s: EngineSettings) -> list[Layer]:
    """The layers with a KV cache, after the refusals the engines make for the model and the parallel layout."""
    if s.tp < 1 or s.pp < 1:
        raise RefusedConfigError("--tensor-parallel-size and --pipeline-parallel-size must be at least 1")
    trunk = _attention_layers(model, engine)
    if not trunk:
        raise RefusedConfigError(f"{engine.name}: {model.arch} has no attention layers with a KV cache")
    if s.pp > model.n_layer:
        raise RefusedConfigError(f"{engine.name}: --pipeline-parallel-size {s.pp} exceeds the {model.n_layer} layers")
    if trunk[0].n_head % s.tp:
        raise RefusedConfigError(
            f"{engine.name}: total number of attention heads ({trunk[0].n_head}) must be divisible by "
            f"tensor parallel size ({s.tp})"
        )
    engine.refuse(model, s, trunk[0].n_head_kv)
    return trunk


def _mla_specs(model: ModelDescription, engine: Engine, s: EngineSettings, trunk: list[Layer], block: int
               ) -> tuple[dict[LayerRef, CacheSpec], str]:  # fmt: skip
    """One replicated latent per MLA layer (DeepSeek-V3.2: with its lightning-indexer row)."""
    elem, dsa = s.dtype_bytes, model.memory == MemoryKind.DSA
    latent = trunk[0].k_width  # kv_lora_rank + qk_rope_head_dim
    per_layer = engine.latent_bytes(latent, elem, dsa)
    specs: dict[LayerRef, CacheSpec] = {LayerRef(la.index): MLASpec(per_layer, block) for la in trunk}
    packed = dsa and elem == 1 and engine.packs_fp8_mla
    basis = f"MLA latent {f'{FP8_DS_MLA_BYTES} (fp8_ds_mla)' if packed else f'{latent} × {elem}'} B"
    return specs, basis + (f" + DSA indexer {DSA_INDEXER_BYTES} B" if dsa else "")


def _attention_specs(model: ModelDescription, engine: Engine, s: EngineSettings, trunk: list[Layer], block: int,
                     notes: list[str]) -> tuple[dict[LayerRef, CacheSpec], str]:  # fmt: skip
    """Each layer's K and V heads on one rank: full, sliding-window or chunked-local."""
    elem = s.dtype_bytes
    windows = model.swa_type != SwaType.NONE and engine.windowed(model, s)
    specs: dict[LayerRef, CacheSpec] = {}
    for la in trunk:
        token_bytes = engine.heads_per_rank(la.n_head_kv, s.tp) * (la.head_k + la.head_v) * elem
        spec: CacheSpec = FullSpec(token_bytes, block)
        if la.swa and windows:
            kind = ChunkedLocalSpec if model.swa_type == SwaType.CHUNKED else SlidingWindowSpec
            spec = kind(token_bytes, block, model.n_swa)
        specs[LayerRef(la.index)] = spec
    if model.swa_type != SwaType.NONE and not windows:
        notes.append(engine.full_window_note(model))
    shapes = sorted({(la.head_k, la.head_v) for la in trunk})
    heads = engine.heads_per_rank(trunk[0].n_head_kv, s.tp)
    return specs, f"{heads} KV heads × {' / '.join(f'({k} + {v})' for k, v in shapes)} × {elem} B"


def layout(model: ModelDescription, engine: Engine, s: EngineSettings) -> EngineLayout:
    """Per-layer cache specs of one rank, grouped and paged as the engine does."""
    engine_layout = engine.build_layout(model, s)
    if engine_layout is not None:
        return engine_layout
    trunk = _checked_trunk(model, engine, s)
    block, block_note = engine.block_size(model, s)
    notes: list[str] = [block_note] if block_note else []
    heads: int | None
    if model.mla:
        specs, basis = _mla_specs(model, engine, s, trunk, block)
        heads, replicated = None, s.tp > 1
    else:
        specs, basis = _attention_specs(model, engine, s, trunk, block, notes)
        heads, replicated = engine.heads_per_rank(trunk[0].n_head_kv, s.tp), s.tp > trunk[0].n_head_kv
    indexer = model.memory == MemoryKind.DSA and engine.separate_indexer  # vLLM: its own layer, same group
    if indexer:
        specs.update({LayerRef(la.index, "indexer"): IndexerSpec(DSA_INDEXER_BYTES, block) for la in trunk})
    parts = pipeline_stages(model.n_layer, s.pp)  # num_hidden_layers, layers without a cache included
    stages, ranges, start = [], [], 0
    for n in parts:
        own = [LayerRef(i) for i in range(start, start + n) if LayerRef(i) in specs]
        stages.append(tuple(own + [LayerRef(ref.layer, "indexer") for ref in own if indexer]))
        ranges.append((start, start + n - 1))
        start += n
    grouping = engine.group(specs)
    notes += grouping.notes
    return EngineLayout(
        engine=engine, settings=s, specs=specs, groups=grouping.groups, uniform_type=grouping.uniform_type,
        stages=tuple(stages), kv_heads_per_rank=heads, replicated=replicated,
        basis=f"{basis} per layer × {max(parts)} layers",
        in_flight_tokens=engine.in_flight_tokens(s, grouping.groups), notes=tuple(notes), stage_ranges=tuple(ranges),
    )  # fmt: skip


def capacity(
    model: ModelDescription,
    engine: Engine,
    s: EngineSettings,
    gpu_bytes: int,
    weight_bytes_per_rank: int,
    overhead_bytes: int,
    lay: EngineLayout | None = None,
) -> Capacity:
    """KV blocks / tokens one rank holds, and the engine's concurrency at max_model_len."""
    lay = lay or layout(model, engine, s)
    return engine.capacity(model, s, lay, RankMemory(gpu_bytes, weight_bytes_per_rank, overhead_bytes))
