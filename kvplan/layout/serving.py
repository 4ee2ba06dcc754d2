"""The paged serving engines' KV layout and capacity: vLLM (V1, 0.33), SGLang (0.5.23), TensorRT-LLM (PyTorch).

This module builds each layer's cache spec for one rank and dispatches to the engine's own module
(kvplan.layout.vllm / sglang / trtllm) for what differs: block size, head split, MLA packing, windows,
grouping and capacity. Shared types live in kvplan.layout.paged. Formulas and defaults from
../shared/reference/serving-engines-kv.md (with the engines' source references). Each engine's capacity
depends on profiled terms kvplan cannot measure (activations, CUDA graphs, the CUDA context): they enter as
one explicit ``overhead`` figure, labelled as an estimate unless given.

Scope:
- every engine: MHA / GQA / MQA with any per-layer head sizes, MLA, DeepSeek-V3.2's indexer cache;
- vLLM: sliding-window and chunked-local layers through its hybrid KV cache manager (layers grouped by spec,
  group size min/max rule, padding layers, page unification by block size, per-group admission blocks);
- SGLang: the hybrid SWA pools (full + ``swa_full_tokens_ratio``) for the architectures SGLang runs that way
  (``is_hybrid_swa_model``); other sliding-window models get full-length pools in SGLang, as there;
- refused with the reason: recurrent / Mamba hybrids (their state pages are not modelled), TensorRT-LLM's
  variable sliding-window pools, symmetric (non-causal) windows.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.errors import RefusedConfigError
from kvplan.layout.paged import (
    CACHE_DTYPE_BYTES,
    DSA_INDEXER_BYTES,
    ENGINES,
    GIB,
    CacheSpec,
    Capacity,
    EngineLayout,
    EngineSettings,
    KVGroup,
    engine_module,
    pipeline_stages,
)
from kvplan.layout.sglang import mem_fraction_static as sglang_mem_fraction
from kvplan.layout.vllm import default_batched_tokens as vllm_batched_tokens
from kvplan.layout.vllm import gpu_family
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType

__all__ = [
    "CACHE_DTYPE_BYTES",
    "ENGINES",
    "CacheSpec",
    "Capacity",
    "EngineLayout",
    "EngineSettings",
    "KVGroup",
    "capacity",
    "dtype_ladder",
    "gpu_family",
    "layout",
    "sglang_mem_fraction",
    "vllm_batched_tokens",
    "vllm_stages",
]  # fmt: skip

vllm_stages = pipeline_stages


def _dtype_bytes(s: EngineSettings) -> int:
    dtype = s.cache_dtype.lower()
    if dtype not in CACHE_DTYPE_BYTES:
        raise RefusedConfigError(
            f"{s.engine}: cache dtype {s.cache_dtype!r}; kvplan knows {', '.join(CACHE_DTYPE_BYTES)}"
        )
    return CACHE_DTYPE_BYTES[dtype]


def _attention_layers(model: ModelDescription, engine: str) -> list[Layer]:
    if any(la.recurrent for la in model.layers) or model.memory not in (MemoryKind.KV, MemoryKind.DSA):
        raise RefusedConfigError(
            f"{engine}: {model.arch} has {model.memory.value} memory (recurrent / Mamba state or a compressed "
            "cache); kvplan sizes the serving engines' attention KV only and does not model their state pages"
        )
    if model.swa_type == SwaType.SYMMETRIC:
        raise RefusedConfigError(f"{engine}: {model.arch} uses a symmetric (non-causal) window; not a serving layout")
    # nextn/MTP blocks load only with a speculative config; layers that reuse another's KV own no cache
    return [la for la in model.layers if not la.nextn and la.has_kv and la.n_head_kv > 0]


def layout(model: ModelDescription, s: EngineSettings) -> EngineLayout:
    """Per-layer cache specs of one rank, grouped and paged as the engine does."""
    if s.engine not in ENGINES:
        raise RefusedConfigError(f"engine must be one of {', '.join(ENGINES)}, not {s.engine!r}")
    if s.tp < 1 or s.pp < 1:
        raise RefusedConfigError("--tp and --pp must be at least 1")
    eng = engine_module(s.engine)
    elem = _dtype_bytes(s)
    trunk = _attention_layers(model, s.engine)
    if not trunk:
        raise RefusedConfigError(f"{s.engine}: {model.arch} has no attention layers with a KV cache")
    n_hidden = model.n_layer  # vLLM splits num_hidden_layers over the stages, layers with no cache included
    if s.pp > n_hidden:
        raise RefusedConfigError(f"{s.engine}: --pp {s.pp} exceeds the {n_hidden} layers")
    n_head, n_kv = trunk[0].n_head, trunk[0].n_head_kv
    if n_head % s.tp:
        raise RefusedConfigError(f"{s.engine}: total number of attention heads ({n_head}) must be divisible by "
                                 f"tensor parallel size ({s.tp})")  # fmt: skip
    eng.refuse(model, s, n_kv)
    block, block_note = eng.block_size(model, s)
    notes: list[str] = [block_note] if block_note else []
    specs: dict[int, CacheSpec] = {}
    dsa = model.memory == MemoryKind.DSA
    if model.mla:
        latent = trunk[0].k_width  # kv_lora_rank + qk_rope_head_dim
        per_layer = eng.latent_bytes(latent, elem, dsa)
        heads, replicated = None, s.tp > 1
        for la in trunk:
            specs[la.index] = CacheSpec("mla", per_layer, block)
        packed = dsa and elem == 1 and s.engine != "trtllm"
        basis = f"MLA latent {'656 (fp8_ds_mla)' if packed else f'{latent} × {elem}'} B"
        if dsa:
            basis += " + DSA indexer 132 B"
    else:
        heads = eng.heads_per_rank(n_kv, s.tp)
        replicated = s.tp > n_kv
        windows = model.swa_type != SwaType.NONE and eng.windowed(model, s)
        for la in trunk:
            token_bytes = eng.heads_per_rank(la.n_head_kv, s.tp) * (la.head_k + la.head_v) * elem
            kind, window = "full", 0
            if la.swa and windows:
                kind = "chunked_local" if model.swa_type == SwaType.CHUNKED else "sliding_window"
                window = model.n_swa
            specs[la.index] = CacheSpec(kind, token_bytes, block, window)
        shapes = sorted({(la.head_k, la.head_v) for la in trunk})
        basis = f"{heads} KV heads × {' / '.join(f'({k} + {v})' for k, v in shapes)} × {elem} B"
        if model.swa_type != SwaType.NONE and not windows:
            notes.append(
                f"{s.engine} keeps full-length KV for the {model.swa_type.value}-window layers"
                + (" (--disable-hybrid-kv-cache-manager)" if s.engine == "vllm" else
                   f" (SGLang runs {model.arch} without hybrid SWA pools)")
            )  # fmt: skip
    indexer = dsa and eng.SEPARATE_INDEXER  # vLLM: its own 'attention layer' per MLA layer, same group
    if indexer:
        specs.update({-1 - la.index: CacheSpec("indexer", DSA_INDEXER_BYTES, block) for la in trunk})
    parts = pipeline_stages(n_hidden, s.pp)
    stages, ranges, start = [], [], 0
    for n in parts:
        own = [i for i in range(start, start + n) if i in specs]
        stages.append(tuple(own + [-1 - i for i in own if indexer]))
        ranges.append((start, start + n - 1))
        start += n
    groups, uniform, group_notes = eng.group(specs)
    notes += group_notes
    return EngineLayout(s.engine, specs, groups, uniform, tuple(stages), heads, replicated,
                        f"{basis} per layer × {max(parts)} layers", eng.in_flight_tokens(s, groups),
                        tuple(notes), tuple(ranges))  # fmt: skip


def capacity(
    model: ModelDescription,
    s: EngineSettings,
    gpu_bytes: int,
    weight_bytes_per_rank: int,
    overhead_bytes: int,
    cuda_context_bytes: int = GIB // 2,
    lay: EngineLayout | None = None,
) -> Capacity:
    """KV blocks / tokens one rank holds, and the engine's concurrency at max_model_len."""
    lay = lay or layout(model, s)
    return engine_module(s.engine).capacity(model, s, lay, gpu_bytes, weight_bytes_per_rank, overhead_bytes,
                                            cuda_context_bytes)  # fmt: skip


def dtype_ladder(engine: str) -> Sequence[str]:
    """--cache-types auto for an engine: its dtypes from least to most loss."""
    return engine_module(engine).DTYPE_LADDER
