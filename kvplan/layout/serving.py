"""The paged serving engines' KV layout and capacity: vLLM (V1, 0.33), SGLang (0.5.23), TensorRT-LLM (PyTorch).

Formulas and defaults from ../shared/reference/serving-engines-kv.md (with the engines' source references) and
vLLM's ``v1/core/kv_cache_utils.py`` (grouping, page unification, concurrency). Each engine's capacity depends on
profiled terms kvplan cannot measure (activations, CUDA graphs, the CUDA context): they enter as one explicit
``overhead`` figure, labelled as an estimate unless given.

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

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from kvplan.errors import RefusedConfigError
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType

ENGINES = ("vllm", "sglang", "trtllm")
GIB = 1 << 30
MIB = 1 << 20
#: bytes per K/V element by engine cache dtype ("auto" = the checkpoint dtype, bf16 here)
CACHE_DTYPE_BYTES = {"auto": 2, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1,
                     "fp8_e5m2": 1}  # fmt: skip
#: --cache-types auto for the engines: least loss first
ENGINE_DTYPE_LADDER = {"vllm": ("auto", "fp8"), "sglang": ("auto", "fp8_e4m3"), "trtllm": ("auto", "fp8")}
DSA_INDEXER_BYTES = 128 + 128 // 128 * 4  # fp8 index_head_dim + one fp32 scale per 128 values = 132
FP8_DS_MLA_BYTES = 656  # 512 fp8 + 4 fp32 scales + 64 bf16 rope
#: SGLang model_config.is_hybrid_swa_model, as GGUF architecture names
SGLANG_HYBRID_SWA_ARCHS = frozenset({"llama4", "gpt-oss", "mimo2", "step35", "gemma4"})


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


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
    swa_pool: bool = False  # SGLang: separate full and SWA token pools
    notes: tuple[str, ...] = field(default=())
    stage_ranges: tuple[tuple[int, int], ...] = ()  # first and last layer of each stage, caches or not

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
        """Bytes one block id costs on a rank of ``stage`` (vLLM: per-layer pages summed, or group size × page)."""
        own = set(self.stages[stage])
        if self.uniform_type or self.engine != "vllm":
            return sum(self.specs[i].page_bytes for i in self.stages[stage])
        group_size = max(sum(1 for i in g.layers if i in own) for g in self.groups)
        return group_size * self.groups[0].spec.page_bytes

    @property
    def block_bytes(self) -> int:
        return max(self.stage_block_bytes(i) for i in range(len(self.stages)))

    def request_blocks(self, max_model_len: int) -> int:
        """Block ids one request of max_model_len tokens needs, summed over the groups."""
        return sum(g.spec.request_blocks(max_model_len, self.in_flight_tokens) for g in self.groups)


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
        lay = self.layout
        if lay.engine == "vllm":
            return max(0, self.blocks - 1) // lay.request_blocks(ctx)  # one block is the null block
        page = lay.block_tokens
        n = self.blocks // cdiv(ctx, page)
        if self.swa_tokens is not None:
            window = max((s.window for s in lay.specs.values() if not s.full_type), default=ctx)
            n = min(n, self.swa_tokens // (cdiv(min(ctx, window), page) * page))
        return n

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

    def request_bytes(self, ctx: int) -> int:
        """KV bytes one request of ``ctx`` tokens reserves on the busiest rank (blocks, pages or tokens)."""
        lay = self.layout
        if lay.engine == "vllm":
            return lay.request_blocks(ctx) * lay.block_bytes
        page = lay.block_tokens
        if lay.engine == "trtllm":
            return cdiv(ctx, page) * lay.block_bytes
        worst = max(range(len(lay.stages)), key=lay.stage_bytes_per_token)
        specs = [lay.specs[i] for i in lay.stages[worst]]
        full = sum(sp.token_bytes for sp in specs if sp.full_type)
        swa = [sp for sp in specs if not sp.full_type]
        held = cdiv(ctx, page) * page * full
        if swa:
            held += cdiv(min(ctx, swa[0].window), page) * page * sum(sp.token_bytes for sp in swa)
        return held

    def kv_bytes(self, stage: int) -> int:
        """KV bytes a rank of ``stage`` allocates."""
        lay = self.layout
        if lay.engine == "sglang":
            own = lay.stages[stage]
            full = sum(lay.specs[i].token_bytes for i in own if lay.specs[i].full_type or not lay.swa_pool)
            swa = sum(lay.specs[i].token_bytes for i in own if lay.swa_pool and not lay.specs[i].full_type)
            return self.tokens * full + (self.swa_tokens or 0) * swa
        return self.blocks * lay.stage_block_bytes(stage)


def vllm_stages(n_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage: vLLM's get_pp_indices (the remainder goes to the stages before the last)."""
    parts = [n_layers // pp] * pp
    for i in range(2, n_layers % pp + 2):
        parts[-i] += 1
    return parts


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
    if model.swa_type != SwaType.NONE and engine == "trtllm":
        raise RefusedConfigError(
            f"trtllm: {model.arch} has {model.swa_type.value} windows; kvplan does not model TensorRT-LLM's "
            "variable sliding-window pools (VSWA); use --engine vllm or sglang"
        )
    # nextn/MTP blocks load only with a speculative config; layers that reuse another's KV own no cache
    return [la for la in model.layers if not la.nextn and la.has_kv and la.n_head_kv > 0]


def _default_block(model: ModelDescription, s: EngineSettings) -> int:
    if s.block_size:
        return s.block_size
    if s.engine == "vllm":
        if model.memory == MemoryKind.DSA:
            return 64  # FlashMLA-sparse and the indexer kernel: 64
        return {"hopper": 64, "blackwell": 128}.get(s.gpu_family, 16) if model.mla else 16
    if s.engine == "sglang":
        return 64 if model.memory == MemoryKind.DSA else 1
    return 32


def _group_vllm(specs: dict[int, CacheSpec]) -> tuple[tuple[KVGroup, ...], bool, list[str]]:
    """vLLM get_kv_cache_groups: one group when the specs allow it, else page unification and equal-size groups."""
    values = list(specs.values())
    order = list(specs)
    if len(set(values)) == 1:
        return (KVGroup(values[0], tuple(order)),), False, []
    first = values[0]
    same_block = len({v.block_tokens for v in values}) == 1
    if same_block and (
        all(v.full_type for v in values) or all(v.kind == first.kind and v.window == first.window for v in values)
    ):
        return (KVGroup(first, tuple(order)),), True, []
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
        groups.extend(KVGroup(spec, tuple(layers[k::n])) for k in range(n))
    if padding:
        notes.append(f"{padding} padding layer(s) added to make the groups equal (vLLM 'Add padding layers')")
    return tuple(groups), False, notes


def layout(model: ModelDescription, s: EngineSettings) -> EngineLayout:
    """Per-layer cache specs of one rank, grouped and paged as the engine does."""
    if s.engine not in ENGINES:
        raise RefusedConfigError(f"engine must be one of {', '.join(ENGINES)}, not {s.engine!r}")
    if s.tp < 1 or s.pp < 1:
        raise RefusedConfigError("--tp and --pp must be at least 1")
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
    if not model.mla and s.engine != "trtllm" and (n_kv % s.tp if n_kv >= s.tp else s.tp % n_kv):
        raise RefusedConfigError(f"{s.engine}: {n_kv} KV heads cannot be split over tensor parallel size {s.tp} "
                                 "(one must divide the other)")  # fmt: skip
    block = _default_block(model, s)
    specs: dict[int, CacheSpec] = {}
    notes: list[str] = []
    dsa = model.memory == MemoryKind.DSA
    if model.mla:
        latent = trunk[0].k_width  # kv_lora_rank + qk_rope_head_dim
        per_layer = FP8_DS_MLA_BYTES if dsa and s.engine in ("vllm", "sglang") and elem == 1 else latent * elem
        heads, replicated = None, s.tp > 1
        basis = f"MLA latent {per_layer if per_layer == FP8_DS_MLA_BYTES else f'{latent} × {elem}'} B"
        for la in trunk:
            specs[la.index] = CacheSpec("mla", per_layer + (DSA_INDEXER_BYTES if dsa and s.engine != "vllm" else 0),
                                        block)  # fmt: skip
        if dsa:
            basis += " + DSA indexer 132 B"
        if s.engine == "vllm" and not s.block_size:
            kernel = (
                "FlashMLA-sparse"
                if dsa
                else {"hopper": "FlashMLA", "blackwell": "CUTLASS MLA"}.get(s.gpu_family, "Triton MLA")
            )
            notes.append(f"vLLM block size {block}: the {kernel} kernel's ({s.gpu_family} GPU); --block-size overrides")
    else:
        h = trunk[0].n_head_kv
        heads = cdiv(h, s.tp) if s.engine == "trtllm" else max(1, h // s.tp)
        replicated = s.tp > h
        sglang_swa = s.engine == "sglang" and model.arch in SGLANG_HYBRID_SWA_ARCHS
        for la in trunk:
            per_rank = cdiv(la.n_head_kv, s.tp) if s.engine == "trtllm" else max(1, la.n_head_kv // s.tp)
            token_bytes = per_rank * (la.head_k + la.head_v) * elem
            kind, window = "full", 0
            if la.swa and ((s.engine == "vllm" and s.hybrid_kv_cache) or sglang_swa):
                kind = "chunked_local" if model.swa_type == SwaType.CHUNKED else "sliding_window"
                window = model.n_swa
            specs[la.index] = CacheSpec(kind, token_bytes, block, window)
        shapes = sorted({(la.head_k, la.head_v) for la in trunk})
        dims = " / ".join(f"({k} + {v})" for k, v in shapes)
        basis = f"{heads} KV heads × {dims} × {elem} B"
        if model.swa_type != SwaType.NONE and not any(not v.full_type for v in specs.values()):
            notes.append(
                f"{s.engine} keeps full-length KV for the {model.swa_type.value}-window layers"
                + (" (--disable-hybrid-kv-cache-manager)" if s.engine == "vllm" else
                   f" (SGLang runs {model.arch} without hybrid SWA pools)")
            )  # fmt: skip
    indexer_specs = {}
    if dsa and s.engine == "vllm":  # its own 'attention layer' per MLA layer, same full-attention group
        indexer_specs = {-1 - la.index: CacheSpec("indexer", DSA_INDEXER_BYTES, block) for la in trunk}
    parts = vllm_stages(n_hidden, s.pp)
    stages, ranges, start = [], [], 0
    for n in parts:
        own = [i for i in range(start, start + n) if i in specs]
        stages.append(tuple(own + [-1 - i for i in own if indexer_specs]))
        ranges.append((start, start + n - 1))
        start += n
    specs = {**specs, **indexer_specs}
    if s.engine == "vllm":
        groups, uniform, group_notes = _group_vllm(specs)
        notes += group_notes
    else:
        groups, uniform = (KVGroup(next(iter(specs.values())), tuple(specs)),), True
    in_flight = 0
    if s.engine == "vllm" and any(not g.spec.full_type for g in groups):
        in_flight = max(2, s.pp) * (s.max_num_batched_tokens or 2048)
    swa_pool = any(not v.full_type for v in specs.values()) and s.engine == "sglang"
    return EngineLayout(s.engine, specs, groups, uniform, tuple(stages), heads, replicated,
                        f"{basis} per layer × {max(parts)} layers", in_flight, swa_pool, tuple(notes),
                        tuple(ranges))  # fmt: skip


def sglang_mem_fraction(gpu_bytes: int, tp: int = 1, pp: int = 1, mla: bool = False) -> float:
    """SGLang 0.5.23's mem_fraction_static heuristic (arg_groups/memory_hook.py), without graph extras."""
    gib = gpu_bytes / GIB
    if gib < 20:
        chunked, bs = 2048, 8
    elif gib < 35:
        chunked, bs = 4096, 160 if tp >= 4 else 48
    elif gib < 60:
        chunked, bs = 4096, 160 if tp >= 4 else 32
    elif gib < 160:
        chunked, bs = 8192, 512 if tp >= 4 else 256
    else:
        chunked, bs = 16384, 512
    graph_reserve = 2 * bs + (1536 if mla else 0)
    reserved = 512 + 1.5 * max(chunked, 2048) + 1024 * tp * pp / 8 + graph_reserve
    if gib > 60:
        reserved = max(reserved, 10240)
    total_mib = gpu_bytes / MIB
    return round((total_mib - reserved) / total_mib, 3)


def gpu_family(gpu_label: str) -> str:
    """hopper / blackwell / other, from a GPU preset name (vLLM picks its MLA kernel, and block size, by it)."""
    label = gpu_label.upper()
    if any(n in label for n in ("B100", "B200", "B300", "GB200", "GB300")):
        return "blackwell"
    if any(n in label for n in ("H100", "H200", "GH200", "H800", "H20")):
        return "hopper"
    return "other"


def vllm_batched_tokens(gpu_bytes: int, gpu_label: str = "") -> int:
    """`vllm serve`'s default max_num_batched_tokens (EngineArgs.get_batch_defaults, OPENAI_API_SERVER)."""
    return 8192 if gpu_bytes >= 70 * GIB and "a100" not in gpu_label.lower() else 2048


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
    M = s.max_model_len or model.n_ctx_train
    if s.engine == "vllm":
        budget = math.ceil(gpu_bytes * s.gpu_memory_utilization) - weight_bytes_per_rank - overhead_bytes
        # a stage whose layers all reuse another layer's KV (Gemma 3n's last layers) holds no blocks
        stage_blocks = tuple(max(0, budget) // lay.stage_block_bytes(i) for i in range(len(lay.stages))
                             if lay.stage_block_bytes(i))  # fmt: skip
        blocks = min(stage_blocks)
        conc = blocks / lay.request_blocks(M)
        tokens = int(conc * M)
        basis = (f"ceil({s.gpu_memory_utilization} × memory) − weights − overhead = {budget:,} B; "
                 f"÷ {lay.block_bytes:,} B per block id")  # fmt: skip
        return Capacity(lay, budget, blocks, tokens, M, conc, basis, stage_blocks)
    if s.engine == "sglang":
        mfs = s.mem_fraction_static or sglang_mem_fraction(gpu_bytes, s.tp, s.pp, model.mla)
        pre = gpu_bytes - cuda_context_bytes
        budget = int((pre - weight_bytes_per_rank) - pre * (1 - mfs))
        page = lay.block_tokens
        worst = max(range(len(lay.stages)), key=lay.stage_bytes_per_token)
        own = lay.stages[worst]
        full = sum(lay.specs[i].token_bytes for i in own if lay.specs[i].full_type)
        swa = sum(lay.specs[i].token_bytes for i in own if not lay.specs[i].full_type)
        ratio = s.swa_full_tokens_ratio if swa else 0.0
        cell = full + ratio * swa
        tokens = int(max(0, budget) // cell) // page * page
        swa_tokens = int(tokens * ratio) // page * page if swa else None
        conc = tokens / M
        split = f" (full {full:,} + {ratio} × SWA {swa:,})" if swa else ""
        basis = (f"(free − weights) − free × (1 − mem_fraction_static {mfs}) = {budget:,} B; "
                 f"÷ {cell:,.0f} B per token{split}")  # fmt: skip
        return Capacity(lay, budget, tokens // page, tokens, M, conc, basis, swa_tokens=swa_tokens)
    budget = int(
        (gpu_bytes - (weight_bytes_per_rank + overhead_bytes + cuda_context_bytes)) * s.free_gpu_memory_fraction
    )
    tokens_raw = max(0, budget) // lay.bytes_per_token
    blocks = tokens_raw // lay.block_tokens
    tokens = blocks * lay.block_tokens
    basis = (f"{s.free_gpu_memory_fraction} × (memory − weights − overhead − CUDA context) = {budget:,} B; "
             f"÷ {lay.bytes_per_token:,} B per token, blocks of {lay.block_tokens}")  # fmt: skip
    return Capacity(lay, budget, blocks, tokens, M, tokens / M, basis)


def dtype_ladder(engine: str) -> Sequence[str]:
    return ENGINE_DTYPE_LADDER[engine]
