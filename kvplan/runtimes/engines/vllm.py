"""vLLM (V1 engine, 0.33): block size, KV cache groups (the hybrid KV cache manager), blocks and concurrency.

Sources: ../shared/reference/serving-engines-kv.md §1 (vLLM 0.33.0 wheel, with line references) and vLLM's
``v1/core/kv_cache_utils.py`` (get_kv_cache_groups, unify_kv_cache_spec_page_size,
_get_kv_cache_groups_uniform_page_size, get_max_concurrency_for_kv_cache_config).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from kvplan.errors import RefusedConfigError
from kvplan.model import MemoryKind, ModelDescription
from kvplan.runtimes.engines.paged import (
    FP8_DS_MLA_BYTES,
    CacheSpec,
    Capacity,
    Engine,
    EngineLayout,
    EngineSettings,
    Grouping,
    KVGroup,
    LayerRef,
    RankMemory,
    Spelling,
)
from kvplan.units import GIB, cdiv

DEFAULT_GPU_MEMORY_UTILIZATION = 0.92  # CacheConfig.gpu_memory_utilization since 0.20 (0.9 before)
DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
#: MLA kernels' block sizes: FlashMLA [64] (Hopper), CUTLASS MLA [128] (Blackwell), Triton MLA multiple of 16
MLA_BLOCK_SIZE = {"hopper": 64, "blackwell": 128}
MLA_KERNEL = {"hopper": "FlashMLA", "blackwell": "CUTLASS MLA"}
DSA_BLOCK_SIZE = 64  # FlashMLA-sparse and the DeepSeek-V3.2 indexer kernel
ASYNC_CONCURRENT_BATCHES = 2  # async scheduling (on by default) keeps two batches in flight
#: `vllm serve`'s max_num_batched_tokens (EngineArgs.get_batch_defaults, OPENAI_API_SERVER): 8192 on GPUs of
#: 70 GiB or more except A100, else 2048
BATCHED_TOKENS_BIG_GPU, BATCHED_TOKENS_DEFAULT = 8192, 2048
BIG_GPU_BYTES = 70 * GIB
#: page sizes must divide evenly for unification (vLLM's message)
_UNIFY_REFUSAL = "The page size of the layer is not divisible by the maximum page size"


def gpu_family(gpu_label: str) -> str:
    """hopper / blackwell / other, from a GPU preset name (vLLM picks its MLA kernel, and block size, by it)."""
    label = gpu_label.upper()
    if any(n in label for n in ("B100", "B200", "B300", "GB200", "GB300")):
        return "blackwell"
    if any(n in label for n in ("H100", "H200", "GH200", "H800", "H20")):
        return "hopper"
    return "other"


def default_batched_tokens(gpu_bytes: int, gpu_label: str = "") -> int:
    """`vllm serve`'s default max_num_batched_tokens for this GPU."""
    big = gpu_bytes >= BIG_GPU_BYTES and "a100" not in gpu_label.lower()
    return BATCHED_TOKENS_BIG_GPU if big else BATCHED_TOKENS_DEFAULT


class VLLM(Engine):
    name: ClassVar[str] = "vllm"
    label: ClassVar[str] = "vLLM"
    version: ClassVar[str] = "0.33"
    aliases: ClassVar[tuple[str, ...]] = ("vllm",)
    dtype_ladder: ClassVar[tuple[str, ...]] = ("auto", "fp8")
    separate_indexer: ClassVar[bool] = True  # DeepseekV32IndexerCache is its own full-attention "layer"
    null_blocks: ClassVar[int] = 1  # BlockPool reserves block 0 as the null block
    own_settings: ClassVar[frozenset[str]] = frozenset(
        {"gpu_memory_utilization", "max_num_batched_tokens", "disable_hybrid_kv_cache_manager"}
    )
    spelling: ClassVar[Spelling] = Spelling(
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--max-model-len",
        "--max-num-seqs",
        "--kv-cache-dtype",
        "--block-size",
    )

    def command(self, model: str) -> str:
        return f"vllm serve {model}"

    def resolve(self, s: EngineSettings, gpu_bytes: int, gpu_label: str) -> EngineSettings:
        return replace(
            s,
            gpu_memory_utilization=s.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
            max_num_batched_tokens=s.max_num_batched_tokens or default_batched_tokens(gpu_bytes, gpu_label),
            gpu_family=gpu_family(gpu_label),
        )

    def refuse(self, model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
        """Llama-style attention splits KV heads over TP only when one divides the other."""
        if not model.mla and (n_kv % s.tp if n_kv >= s.tp else s.tp % n_kv):
            raise RefusedConfigError(
                f"vllm: {n_kv} KV heads cannot be split over tensor parallel size {s.tp} (one must divide the other)"
            )

    def block_size(self, model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
        if s.block_size:
            return s.block_size, None
        if model.memory == MemoryKind.DSA:
            return DSA_BLOCK_SIZE, f"vLLM block size {DSA_BLOCK_SIZE}: the FlashMLA-sparse kernel's"
        if model.mla:
            block = MLA_BLOCK_SIZE.get(s.gpu_family, 16)
            kernel = MLA_KERNEL.get(s.gpu_family, "Triton MLA")
            return block, f"vLLM block size {block}: the {kernel} kernel's ({s.gpu_family} GPU); --block-size overrides"
        return DEFAULT_BLOCK_SIZE, None

    def latent_bytes(self, latent: int, elem: int, dsa: bool) -> int:
        """An MLA layer's page content per token: fp8_ds_mla packs V3.2's fp8 latent into 656 bytes."""
        return FP8_DS_MLA_BYTES if dsa and elem == 1 else latent * elem

    def windowed(self, model: ModelDescription, s: EngineSettings) -> bool:
        """Sliding-window / chunked layers keep their window, unless --disable-hybrid-kv-cache-manager."""
        return s.hybrid_kv_cache

    def full_window_note(self, model: ModelDescription) -> str:
        return (
            f"vllm keeps full-length KV for the {model.swa_type.value}-window layers "
            "(--disable-hybrid-kv-cache-manager)"
        )

    def group(self, specs: dict[LayerRef, CacheSpec]) -> Grouping:
        """get_kv_cache_groups: one group when the specs allow it, else page unification and equal-size groups."""
        values = list(specs.values())
        order = tuple(specs)
        if len(set(values)) == 1:
            return Grouping((KVGroup(values[0], order),), False)
        first = values[0]
        same_block = len({v.block_tokens for v in values}) == 1
        if same_block and (
            all(v.full_type for v in values) or all(type(v) is type(first) and v.window == first.window for v in values)
        ):
            return Grouping((KVGroup(first, order),), True)  # UniformTypeKVCacheSpecs: pages add up
        notes = []
        biggest = max(v.page_bytes for v in values)
        unified: dict[LayerRef, CacheSpec] = {}
        for ref, v in specs.items():
            if biggest % v.page_bytes:
                raise RefusedConfigError(
                    f"vllm: page sizes {v.page_bytes} and {biggest} B cannot be unified by "
                    f"block size (vLLM: '{_UNIFY_REFUSAL}')"
                )
            unified[ref] = v.with_block_tokens(v.block_tokens * (biggest // v.page_bytes))
        if any(u.block_tokens != v.block_tokens for u, v in zip(unified.values(), values, strict=True)):
            sizes = ", ".join(sorted({str(u.block_tokens) for u in unified.values()}))
            notes.append(f"page unification: smaller pages take proportionally larger blocks ({sizes} tokens)")
        buckets: dict[CacheSpec, list[LayerRef]] = {}
        for ref, u in unified.items():
            buckets.setdefault(u, []).append(ref)
        sizes_ = [len(b) for b in buckets.values()]
        group_size = max(sizes_) if max(sizes_) < min(sizes_) * 1.5 else min(sizes_)
        groups: list[KVGroup] = []
        padding = 0
        for spec, layers in buckets.items():
            n = cdiv(len(layers), group_size)
            padding += n * group_size - len(layers)
            groups.extend(KVGroup(spec, tuple(layers[k::n])) for k in range(n))  # strided: PP stages stay balanced
        if padding:
            notes.append(f"{padding} padding layer(s) added to make the groups equal (vLLM 'Add padding layers')")
        return Grouping(tuple(groups), False, tuple(notes))

    def in_flight_tokens(self, s: EngineSettings, groups: Sequence[KVGroup]) -> int:
        """max_in_flight_tokens = max_concurrent_batches × max_num_batched_tokens, for windowed groups."""
        if all(g.spec.full_type for g in groups):
            return 0
        return max(ASYNC_CONCURRENT_BATCHES, s.pp) * (s.max_num_batched_tokens or BATCHED_TOKENS_DEFAULT)

    def capacity(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, mem: RankMemory) -> Capacity:
        max_len = s.max_model_len or model.n_ctx_train
        util = s.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
        budget = math.ceil(mem.gpu_bytes * util) - mem.weight_bytes - mem.overhead_bytes
        # a stage whose layers all reuse another layer's KV (Gemma 3n's last layers) holds no blocks
        stage_blocks = tuple(
            max(0, budget) // lay.stage_block_bytes(i) for i in range(len(lay.stages)) if lay.stage_block_bytes(i)
        )
        blocks = min(stage_blocks)  # every rank takes the smallest count
        conc = blocks / lay.request_blocks(max_len)
        basis = f"ceil({util} × memory) − weights − overhead = {budget:,} B; ÷ {lay.block_bytes:,} B per block id"
        return Capacity(lay, budget, blocks, int(conc * max_len), max_len, conc, basis, stage_blocks)

    def requests_that_fit(self, cap: Capacity, ctx: int) -> int:
        return max(0, cap.blocks - self.null_blocks) // cap.layout.request_blocks(ctx)

    def request_bytes(self, cap: Capacity, ctx: int) -> int:
        return cap.layout.request_blocks(ctx) * cap.layout.block_bytes

    def own_run_args(self, lay: EngineLayout) -> tuple[str, ...]:
        s = lay.settings
        args = ["--gpu-memory-utilization", f"{s.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION:g}"]
        if lay.in_flight_tokens and s.max_num_batched_tokens:  # what a window layer reserves depends on it
            args += ["--max-num-batched-tokens", str(s.max_num_batched_tokens)]
        if not s.hybrid_kv_cache:
            args.append("--disable-hybrid-kv-cache-manager")
        return tuple(args)


ENGINE = VLLM()
