"""vLLM (V1 engine, 0.33): block size, KV cache groups (the hybrid KV cache manager), blocks and concurrency.

Sources: ../shared/reference/serving-engines-kv.md §1 (vLLM 0.33.0 wheel, with line references) and vLLM's
``v1/core/kv_cache_utils.py`` (get_kv_cache_groups, unify_kv_cache_spec_page_size,
_get_kv_cache_groups_uniform_page_size, get_max_concurrency_for_kv_cache_config).
"""

from __future__ import annotations

import math
from dataclasses import replace

from kvplan.errors import RefusedConfigError
from kvplan.layout.paged import (
    FP8_DS_MLA_BYTES,
    GIB,
    CacheSpec,
    Capacity,
    EngineLayout,
    EngineSettings,
    KVGroup,
    cdiv,
)
from kvplan.model import MemoryKind, ModelDescription

DTYPE_LADDER = ("auto", "fp8")  # --cache-types auto: least loss first
DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
#: MLA kernels' block sizes: FlashMLA [64] (Hopper), CUTLASS MLA [128] (Blackwell), Triton MLA multiple of 16
MLA_BLOCK_SIZE = {"hopper": 64, "blackwell": 128}
DSA_BLOCK_SIZE = 64  # FlashMLA-sparse and the DeepSeek-V3.2 indexer kernel
SEPARATE_INDEXER = True  # DeepseekV32IndexerCache is its own full-attention "layer"
ASYNC_CONCURRENT_BATCHES = 2  # async scheduling (on by default) keeps two batches in flight


def gpu_family(gpu_label: str) -> str:
    """hopper / blackwell / other, from a GPU preset name (vLLM picks its MLA kernel, and block size, by it)."""
    label = gpu_label.upper()
    if any(n in label for n in ("B100", "B200", "B300", "GB200", "GB300")):
        return "blackwell"
    if any(n in label for n in ("H100", "H200", "GH200", "H800", "H20")):
        return "hopper"
    return "other"


def default_batched_tokens(gpu_bytes: int, gpu_label: str = "") -> int:
    """`vllm serve`'s default max_num_batched_tokens (EngineArgs.get_batch_defaults, OPENAI_API_SERVER)."""
    return 8192 if gpu_bytes >= 70 * GIB and "a100" not in gpu_label.lower() else 2048


def refuse(model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
    """Llama-style attention splits KV heads over TP only when one divides the other."""
    if not model.mla and (n_kv % s.tp if n_kv >= s.tp else s.tp % n_kv):
        raise RefusedConfigError(f"vllm: {n_kv} KV heads cannot be split over tensor parallel size {s.tp} "
                                 "(one must divide the other)")  # fmt: skip


def heads_per_rank(n_kv: int, tp: int) -> int:
    return max(1, n_kv // tp)  # ModelConfig.get_num_kv_heads: replicated once tp exceeds the heads


def block_size(model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
    if s.block_size:
        return s.block_size, None
    if model.memory == MemoryKind.DSA:
        return DSA_BLOCK_SIZE, f"vLLM block size {DSA_BLOCK_SIZE}: the FlashMLA-sparse kernel's"
    if model.mla:
        block = MLA_BLOCK_SIZE.get(s.gpu_family, 16)
        kernel = {"hopper": "FlashMLA", "blackwell": "CUTLASS MLA"}.get(s.gpu_family, "Triton MLA")
        return block, f"vLLM block size {block}: the {kernel} kernel's ({s.gpu_family} GPU); --block-size overrides"
    return DEFAULT_BLOCK_SIZE, None


def latent_bytes(latent: int, elem: int, dsa: bool) -> int:
    """An MLA layer's page content per token: fp8_ds_mla packs V3.2's fp8 latent into 656 bytes."""
    return FP8_DS_MLA_BYTES if dsa and elem == 1 else latent * elem


def windowed(model: ModelDescription, s: EngineSettings) -> bool:
    """Sliding-window / chunked layers keep their window, unless --disable-hybrid-kv-cache-manager."""
    return s.hybrid_kv_cache


def group(specs: dict[int, CacheSpec]) -> tuple[tuple[KVGroup, ...], bool, list[str]]:
    """get_kv_cache_groups: one group when the specs allow it, else page unification and equal-size groups."""
    values = list(specs.values())
    order = list(specs)
    if len(set(values)) == 1:
        return (KVGroup(values[0], tuple(order)),), False, []
    first = values[0]
    same_block = len({v.block_tokens for v in values}) == 1
    if same_block and (
        all(v.full_type for v in values) or all(v.kind == first.kind and v.window == first.window for v in values)
    ):
        return (KVGroup(first, tuple(order)),), True, []  # UniformTypeKVCacheSpecs: pages add up
    notes = []
    biggest = max(v.page_bytes for v in values)
    unified = {}
    for i, v in specs.items():
        if biggest % v.page_bytes:
            raise RefusedConfigError(
                f"vllm: page sizes {v.page_bytes} and {biggest} B cannot be unified by block size "
                "(vLLM: 'The page size of the layer is not divisible by the maximum page size')"
            )
        unified[i] = replace(v, block_tokens=v.block_tokens * (biggest // v.page_bytes))
    if any(u.block_tokens != v.block_tokens for u, v in zip(unified.values(), values, strict=True)):
        notes.append("page unification: smaller pages take proportionally larger blocks "
                     f"({', '.join(sorted({str(u.block_tokens) for u in unified.values()}))} tokens)")  # fmt: skip
    buckets: dict[CacheSpec, list[int]] = {}
    for i, u in unified.items():
        buckets.setdefault(u, []).append(i)
    sizes = [len(b) for b in buckets.values()]
    group_size = max(sizes) if max(sizes) < min(sizes) * 1.5 else min(sizes)
    groups = []
    padding = 0
    for spec, layers in buckets.items():
        n = cdiv(len(layers), group_size)
        padding += n * group_size - len(layers)
        groups.extend(KVGroup(spec, tuple(layers[k::n])) for k in range(n))  # strided: PP stages stay balanced
    if padding:
        notes.append(f"{padding} padding layer(s) added to make the groups equal (vLLM 'Add padding layers')")
    return tuple(groups), False, notes


def in_flight_tokens(s: EngineSettings, groups: tuple[KVGroup, ...]) -> int:
    """max_in_flight_tokens = max_concurrent_batches × max_num_batched_tokens, for windowed groups."""
    if all(g.spec.full_type for g in groups):
        return 0
    return max(ASYNC_CONCURRENT_BATCHES, s.pp) * (s.max_num_batched_tokens or 2048)


def capacity(model: ModelDescription, s: EngineSettings, lay: EngineLayout, gpu_bytes: int, weight_bytes: int,
             overhead_bytes: int, cuda_context_bytes: int) -> Capacity:  # fmt: skip
    M = s.max_model_len or model.n_ctx_train
    budget = math.ceil(gpu_bytes * s.gpu_memory_utilization) - weight_bytes - overhead_bytes
    # a stage whose layers all reuse another layer's KV (Gemma 3n's last layers) holds no blocks
    stage_blocks = tuple(max(0, budget) // lay.stage_block_bytes(i) for i in range(len(lay.stages))
                         if lay.stage_block_bytes(i))  # fmt: skip
    blocks = min(stage_blocks)  # every rank takes the smallest count
    conc = blocks / lay.request_blocks(M)
    basis = (f"ceil({s.gpu_memory_utilization} × memory) − weights − overhead = {budget:,} B; "
             f"÷ {lay.block_bytes:,} B per block id")  # fmt: skip
    return Capacity(lay, budget, blocks, int(conc * M), M, conc, basis, stage_blocks)


def requests_that_fit(cap: Capacity, ctx: int) -> int:
    return max(0, cap.blocks - 1) // cap.layout.request_blocks(ctx)  # one block is the null block


def request_bytes(cap: Capacity, ctx: int) -> int:
    return cap.layout.request_blocks(ctx) * cap.layout.block_bytes


def kv_bytes(cap: Capacity, stage: int) -> int:
    return cap.blocks * cap.layout.stage_block_bytes(stage)
