"""The paged serving engines' KV layout: each layer's cache spec on one rank, grouped and staged.

vLLM builds its own layout (kvplan.runtimes.engines.vllm, a port of its planning); SGLang and TensorRT-LLM
share this one: per-layer specs from the model description, with the engine (an ``Engine`` of
kvplan.runtimes.engines.sglang / trtllm) asked for what differs: block size, head split, MLA packing, windows,
grouping. Each engine's capacity depends on profiled terms kvplan cannot measure (activations, CUDA graphs):
they enter as one explicit ``overhead`` figure, labelled as an estimate unless given.

Scope here: MHA / GQA / MQA with any per-layer head sizes, MLA, DeepSeek-V3.2's indexer cache, SGLang's hybrid
SWA pools, and a hybrid's attention layers beside its state layers (``hybrid_attention_layout``, SGLang).
Refused with the reason: TensorRT-LLM's state pages and its variable sliding-window pools, symmetric
(non-causal) windows.
"""

from __future__ import annotations

from kvplan.errors import RefusedConfigError
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.engines.paged import (
    DSA_INDEXER_BYTES,
    FP8_DS_MLA_BYTES,
    CacheSpec,
    Capacity,
    ChunkedLocalSpec,
    Engine,
    EngineLayout,
    FullSpec,
    IndexerSpec,
    LayerRef,
    MLASpec,
    RankMemory,
    SlidingWindowSpec,
    StateSpec,
    pipeline_stages,
)
from kvplan.runtimes.engines.state import State

#: layers that hold both attention and a state (a parallel hybrid)
PARALLEL_HYBRIDS = frozenset({"falcon-h1"})


def _attention_layers(model: ModelDescription, engine: Engine, hybrid: bool = False) -> list[Layer]:
    if model.memory == MemoryKind.NONE:
        raise RefusedConfigError(
            f"{engine.name}: {model.arch} keeps no KV cache (an encoder or embedding model): {engine.label} serves it "
            "as a pooling model, which kvplan does not plan"
        )
    if not hybrid and (any(la.recurrent for la in model.layers) or model.memory not in (MemoryKind.KV, MemoryKind.DSA)):
        raise RefusedConfigError(
            f"{engine.name}: {model.arch} has {model.memory.value} memory (recurrent / Mamba state or a compressed "
            f"cache): kvplan does not model {engine.label}'s state pages"
        )
    if hybrid:
        return [
            la for la in model.layers
            if not la.nextn and la.has_kv and la.n_head_kv > 0 and (not la.recurrent or model.arch in PARALLEL_HYBRIDS)
        ]  # fmt: skip
    if model.swa_type == SwaType.SYMMETRIC:
        raise RefusedConfigError(
            f"{engine.name}: {model.arch} uses a symmetric (non-causal) window; not a serving layout"
        )
    # nextn/MTP blocks load only with a speculative config; layers that reuse another's KV own no cache
    return [la for la in model.layers if not la.nextn and la.has_kv and la.n_head_kv > 0]


def _checked_trunk(model: ModelDescription, engine: Engine, s: EngineSettings, hybrid: bool = False) -> list[Layer]:
    """The layers with a KV cache, after the refusals the engines make for the model and the parallel layout."""
    if s.tensor_parallel_size < 1 or s.pipeline_parallel_size < 1:
        raise RefusedConfigError("--tensor-parallel-size and --pipeline-parallel-size must be at least 1")
    trunk = _attention_layers(model, engine, hybrid)
    if not trunk and not hybrid:
        raise RefusedConfigError(f"{engine.name}: {model.arch} has no attention layers with a KV cache")
    if s.pipeline_parallel_size > model.n_layer:
        raise RefusedConfigError(
            f"{engine.name}: --pipeline-parallel-size {s.pipeline_parallel_size} exceeds the {model.n_layer} layers"
        )
    if not trunk:  # a pure state model (Falcon-Mamba): its states are all it keeps
        return trunk
    if trunk[0].n_head % s.tensor_parallel_size:
        raise RefusedConfigError(
            f"{engine.name}: total number of attention heads ({trunk[0].n_head}) must be divisible by "
            f"tensor parallel size ({s.tensor_parallel_size})"
        )
    engine.refuse(model, s, trunk[0].n_head_kv)
    return trunk


def _mla_specs(model: ModelDescription, engine: Engine, s: EngineSettings, trunk: list[Layer], block: int
               ) -> tuple[dict[LayerRef, CacheSpec], str]:  # fmt: skip
    """One replicated latent per MLA layer (DeepSeek-V3.2: with its lightning-indexer row)."""
    elem, dsa = s.dtype_bytes, model.memory == MemoryKind.DSA
    latent = trunk[0].k_width  # kv_lora_rank + qk_rope_head_dim
    per_layer = engine.latent_bytes(latent, elem, dsa, s)
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
        token_bytes = engine.heads_per_rank(la.n_head_kv, s.tensor_parallel_size) * (la.head_k + la.head_v) * elem
        spec: CacheSpec = FullSpec(token_bytes, block)
        if la.swa and windows:
            kind = ChunkedLocalSpec if model.swa_type == SwaType.CHUNKED else SlidingWindowSpec
            spec = kind(token_bytes, block, model.n_swa)
        specs[LayerRef(la.index)] = spec
    if model.swa_type != SwaType.NONE and not windows:
        notes.append(engine.full_window_note(model))
    shapes = sorted({(la.head_k, la.head_v) for la in trunk})
    heads = engine.heads_per_rank(trunk[0].n_head_kv, s.tensor_parallel_size)
    return specs, f"{heads} KV heads × {' / '.join(f'({k} + {v})' for k, v in shapes)} × {elem} B"


def layout(model: ModelDescription, engine: Engine, s: EngineSettings) -> EngineLayout:
    """Per-layer cache specs of one rank, grouped and paged as the engine does."""
    known = engine.architectures
    if model.hf_architecture and known is not None and model.hf_architecture not in known:
        raise RefusedConfigError(
            f"{engine.name}: {engine.label} {engine.version} has no model class for {model.hf_architecture} "
            "(its model registry)"
        )
    engine_layout = engine.build_layout(model, s)
    if engine_layout is not None:
        return engine_layout
    trunk = _checked_trunk(model, engine, s)
    block, block_note = engine.block_size(model, s)
    notes: list[str] = [block_note] if block_note else []
    heads: int | None
    if model.mla:
        specs, basis = _mla_specs(model, engine, s, trunk, block)
        heads, replicated = None, s.tensor_parallel_size > 1
    else:
        specs, basis = _attention_specs(model, engine, s, trunk, block, notes)
        heads, replicated = (
            engine.heads_per_rank(trunk[0].n_head_kv, s.tensor_parallel_size),
            s.tensor_parallel_size > trunk[0].n_head_kv,
        )
    indexer = model.memory == MemoryKind.DSA and engine.separate_indexer  # vLLM: its own layer, same group
    if indexer:
        specs.update({LayerRef(la.index, "indexer"): IndexerSpec(DSA_INDEXER_BYTES, block) for la in trunk})
    parts = pipeline_stages(
        model.n_layer, s.pipeline_parallel_size
    )  # num_hidden_layers, layers without a cache included
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


def hybrid_attention_layout(model: ModelDescription, engine: Engine, s: EngineSettings, state: State) -> EngineLayout:
    """A hybrid's attention layers laid out as ``layout`` lays them, plus the state every state layer keeps (one
    StateSpec each, in the same pool group)."""
    trunk = _checked_trunk(model, engine, s, hybrid=True)
    block, block_note = engine.block_size(model, s)
    notes: list[str] = [block_note] if block_note else []
    specs: dict[LayerRef, CacheSpec]
    heads: int | None
    if not trunk:
        specs, basis, heads, replicated = {}, "no attention layers", None, False
    elif model.mla:
        specs, basis = _mla_specs(model, engine, s, trunk, block)
        heads, replicated = None, s.tensor_parallel_size > 1
    else:
        specs, basis = _attention_specs(model, engine, s, trunk, block, notes)
        heads, replicated = (
            engine.heads_per_rank(trunk[0].n_head_kv, s.tensor_parallel_size),
            s.tensor_parallel_size > trunk[0].n_head_kv,
        )
    for la in model.layers:
        if la.recurrent and not la.nextn:
            specs[LayerRef(la.index, "state")] = StateSpec(
                0, block, state_bytes=state.bytes, mixer=state.label, shapes=state.shapes, dtypes=state.dtypes
            )
    shapes = " + ".join("×".join(map(str, sh)) + f" {d}" for sh, d in zip(state.shapes, state.dtypes, strict=True))
    notes.append(f"{state.label} state per layer per request: {shapes} = {state.bytes:,} B")
    parts = pipeline_stages(model.n_layer, s.pipeline_parallel_size)
    stages, ranges, start = [], [], 0
    for n in parts:
        stages.append(tuple(ref for ref in specs if start <= ref.layer < start + n))
        ranges.append((start, start + n - 1))
        start += n
    grouping = engine.group(specs)
    return EngineLayout(
        engine=engine, settings=s, specs=specs, groups=grouping.groups, uniform_type=grouping.uniform_type,
        stages=tuple(stages), kv_heads_per_rank=heads, replicated=replicated,
        basis=f"{basis} per layer × {len(trunk)} attention layers", notes=tuple(notes), stage_ranges=tuple(ranges),
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
