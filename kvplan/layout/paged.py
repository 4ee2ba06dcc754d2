"""What the paged serving engines share: settings, per-layer cache specs, block groups, capacity.

The arithmetic that differs lives in one module per engine (kvplan.layout.vllm / sglang / trtllm, each with
its defaults named as the engine names them); kvplan.layout.serving builds the per-layer specs and dispatches.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

ENGINES = ("vllm", "sglang", "trtllm")
GIB = 1 << 30
MIB = 1 << 20
#: bytes per K/V element by engine cache dtype ("auto" = the checkpoint dtype, bf16 here)
CACHE_DTYPE_BYTES = {"auto": 2, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1,
                     "fp8_e5m2": 1}  # fmt: skip
DSA_INDEXER_BYTES = 128 + 128 // 128 * 4  # fp8 index_head_dim + one fp32 scale per 128 values = 132
FP8_DS_MLA_BYTES = 656  # 512 fp8 + 4 fp32 scales + 64 bf16 rope


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def engine_module(engine: str) -> ModuleType:
    """kvplan.layout.vllm / sglang / trtllm."""
    return importlib.import_module(f"kvplan.layout.{engine}")


@dataclass(frozen=True)
class EngineSettings:
    engine: str = "vllm"
    cache_dtype: str = "auto"
    tp: int = 1
    pp: int = 1
    block_size: int | None = None  # vLLM block_size / SGLang page_size / TensorRT-LLM tokens_per_block
    gpu_memory_utilization: float = 0.92  # vLLM 0.33 default (0.9 before 0.20)
    mem_fraction_static: float | None = None  # SGLang: None = its heuristic
    free_gpu_memory_fraction: float = 0.9  # TensorRT-LLM
    max_model_len: int | None = None  # None: the model's training context
    gpu_family: str = "hopper"  # vLLM's MLA backend: FlashMLA (64) on hopper, CUTLASS MLA (128) on blackwell,
    # Triton MLA (16) otherwise
    max_num_batched_tokens: int | None = None  # vLLM: None = `vllm serve`'s default for the GPU
    hybrid_kv_cache: bool = True  # vLLM: False = --disable-hybrid-kv-cache-manager
    swa_full_tokens_ratio: float = 0.8  # SGLang hybrid SWA pools


@dataclass(frozen=True)
class CacheSpec:
    """One layer's cache as the engine specifies it (vLLM's KVCacheSpec): bytes per token on one rank."""

    kind: str  # "full" | "mla" | "indexer" | "sliding_window" | "chunked_local"
    token_bytes: int
    block_tokens: int
    window: int = 0  # sliding window W, or the chunk of chunked-local attention

    @property
    def page_bytes(self) -> int:
        return self.token_bytes * self.block_tokens

    @property
    def full_type(self) -> bool:
        return self.kind in ("full", "mla", "indexer")

    def request_blocks(self, max_model_len: int, in_flight_tokens: int) -> int:
        """Blocks one request of max_model_len tokens holds at most (vLLM max_memory_usage_bytes / page)."""
        if self.kind == "sliding_window":
            return cdiv(min(self.window - 1 + in_flight_tokens, max_model_len), self.block_tokens) + 1
        if self.kind == "chunked_local":
            return cdiv(min(self.window + in_flight_tokens, max_model_len), self.block_tokens)
        return cdiv(max_model_len, self.block_tokens)


@dataclass(frozen=True)
class KVGroup:
    """Layers sharing one block table (vLLM KVCacheGroupSpec); ``layers`` may be fewer than the group size."""

    spec: CacheSpec
    layers: tuple[int, ...]


@dataclass(frozen=True)
class EngineLayout:
    """What one rank stores per token, and how tokens group into blocks."""

    engine: str
    specs: dict[int, CacheSpec]  # layer index → spec (this rank's TP share)
    groups: tuple[KVGroup, ...]
    uniform_type: bool  # one group whose layers may differ in size (pages add up)
    stages: tuple[tuple[int, ...], ...]  # layer indexes per pipeline stage
    kv_heads_per_rank: int | None  # None: MLA (one latent, replicated over TP)
    replicated: bool  # the KV heads (or the MLA latent) are copied on every TP rank
    basis: str
    in_flight_tokens: int = 0  # vLLM: tokens one request may have scheduled beyond its window
    notes: tuple[str, ...] = field(default=())
    stage_ranges: tuple[tuple[int, int], ...] = ()  # first and last layer of each stage, caches or not

    @property
    def swa_pool(self) -> bool:
        """SGLang: window layers live in a separate SWA token pool."""
        return self.engine == "sglang" and any(not sp.full_type for sp in self.specs.values())

    @property
    def busiest_stage(self) -> int:
        """The pipeline stage whose ranks store the most bytes per token."""
        return max(range(len(self.stages)), key=self.stage_bytes_per_token)

    @property
    def block_tokens(self) -> int:
        return min(g.spec.block_tokens for g in self.groups)

    @property
    def layers_per_rank(self) -> int:
        return max(len(s) for s in self.stages)

    def stage_bytes_per_token(self, stage: int) -> int:
        """Bytes a token costs on one rank of ``stage`` when every layer holds it (no window applied)."""
        return sum(self.specs[i].token_bytes for i in self.stages[stage])

    @property
    def bytes_per_token(self) -> int:
        return max(self.stage_bytes_per_token(i) for i in range(len(self.stages)))

    def stage_block_bytes(self, stage: int) -> int:
        """Bytes one block id costs on a rank of ``stage``: the pages of its layers, or vLLM's group size × page
        when the layers are split into equal groups."""
        own = set(self.stages[stage])
        if self.uniform_type:
            return sum(self.specs[i].page_bytes for i in own)
        group_size = max(sum(1 for i in g.layers if i in own) for g in self.groups)
        return group_size * self.groups[0].spec.page_bytes

    @property
    def block_bytes(self) -> int:
        return max(self.stage_block_bytes(i) for i in range(len(self.stages)))

    def request_blocks(self, max_model_len: int) -> int:
        """Block ids one request of max_model_len tokens needs, summed over the groups."""
        return sum(g.spec.request_blocks(max_model_len, self.in_flight_tokens) for g in self.groups)

    def token_bytes_split(self, stage: int) -> tuple[int, int]:
        """(full-length, windowed) bytes per token on a rank of ``stage``."""
        own = [self.specs[i] for i in self.stages[stage]]
        return sum(sp.token_bytes for sp in own if sp.full_type), sum(sp.token_bytes for sp in own if not sp.full_type)


@dataclass(frozen=True)
class Capacity:
    layout: EngineLayout
    kv_budget_bytes: int  # per rank
    blocks: int  # block ids (vLLM: min over ranks) / SGLang full-pool tokens ÷ page / TRT-LLM blocks
    tokens: int  # KV tokens as the engine logs them
    max_model_len: int
    concurrency: float  # requests of max_model_len tokens that fit at once (as the engine logs it)
    basis: str
    stage_blocks: tuple[int, ...] = ()  # vLLM: blocks each stage could hold before the min over ranks
    swa_tokens: int | None = None  # SGLang hybrid SWA pool

    def requests_that_fit(self, ctx: int) -> int:
        """Concurrent requests of ``ctx`` tokens the pool holds with their full reservation."""
        return engine_module(self.layout.engine).requests_that_fit(self, ctx)

    def request_bytes(self, ctx: int) -> int:
        """KV bytes one request of ``ctx`` tokens reserves on the busiest rank (blocks, pages or tokens)."""
        return engine_module(self.layout.engine).request_bytes(self, ctx)

    def kv_bytes(self, stage: int) -> int:
        """KV bytes a rank of ``stage`` allocates."""
        return engine_module(self.layout.engine).kv_bytes(self, stage)

    def max_context(self, parallel: int, limit: int) -> int:
        """The largest context (≤ limit) for which ``parallel`` requests fit; 0 if none does."""
        lo, hi = 0, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.requests_that_fit(mid) >= parallel:
                lo = mid
            else:
                hi = mid - 1
        return lo


def pipeline_stages(n_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM's get_pp_indices splits them (the remainder goes to the stages before
    the last); kvplan uses the same split for every engine."""
    parts = [n_layers // pp] * pp
    for i in range(2, n_layers % pp + 2):
        parts[-i] += 1
    return parts


def uniform_groups(specs: dict[int, CacheSpec]) -> tuple[tuple[KVGroup, ...], bool, list[str]]:
    """One pool for every layer (SGLang, TensorRT-LLM): pages add up per token."""
    return (KVGroup(next(iter(specs.values())), tuple(specs)),), True, []


def no_in_flight(s: EngineSettings, groups: tuple[KVGroup, ...]) -> int:
    """Engines whose pools do not reserve scheduled-but-unsettled tokens per request."""
    return 0
