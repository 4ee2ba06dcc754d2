"""What the paged serving engines share: settings, per-layer cache specs, block groups, layout, capacity, and the
``Engine`` base class each engine module subclasses.

Each per-layer cache kind is a frozen spec class with its own admission rule (vLLM's ``KVCacheSpec`` family:
``max_memory_usage_bytes`` ÷ page). The arithmetic that differs between engines lives in one module per engine
(kvplan.runtimes.engines.vllm / sglang / trtllm), as methods of its ``Engine`` subclass; nothing outside those
modules asks which engine it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, NamedTuple

from kvplan.model import ModelDescription
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.units import cdiv

#: bytes per K/V element by engine cache dtype ("auto" = the checkpoint dtype, bf16 here)
#: DeepSeek-V3.2's lightning-indexer row: fp8 index_head_dim 128 + one fp32 scale per 128 values = 132 B
DSA_INDEX_HEAD_DIM = 128
DSA_INDEXER_BYTES = DSA_INDEX_HEAD_DIM + DSA_INDEX_HEAD_DIM // 128 * 4
#: vLLM / SGLang's packed fp8 MLA latent ("fp8_ds_mla"): 512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 B
FP8_DS_MLA_BYTES = 512 + 4 * 4 + 64 * 2


# --- per-layer cache specs (vLLM's KVCacheSpec family) ------------------------------------------------


@dataclass(frozen=True)
class CacheSpec:
    """One layer's cache on one rank: bytes per token and the block it is paged in."""

    token_bytes: int
    block_tokens: int
    window: int = 0  # sliding window W, or the chunk of chunked-local attention
    padded_page: int = 0  # the page padded to a larger one (vLLM page_size_padded); 0: not padded

    kind: ClassVar[str] = "full"
    full_type: ClassVar[bool] = True  # holds every token of a request (no window)
    mla_type: ClassVar[bool] = False  # an MLA latent (vLLM never pads one; it refuses instead)

    @property
    def content_bytes(self) -> int:
        """The page's own content, before any padding."""
        return self.token_bytes * self.block_tokens

    @property
    def page_bytes(self) -> int:
        return self.padded_page or self.content_bytes

    @property
    def uniform_key(self) -> tuple[object, ...]:
        """Specs with equal keys may share one group whose layers' pages add up (vLLM's uniform-type base spec:
        full attention and MLA together; sliding windows of one size; chunks of one size; states)."""
        return ("full",)

    def request_blocks(self, max_model_len: int, in_flight_tokens: int) -> int:
        """Blocks one request of max_model_len tokens holds at most (vLLM max_memory_usage_bytes ÷ page)."""
        return cdiv(max_model_len, self.block_tokens)

    def with_block_tokens(self, block_tokens: int) -> CacheSpec:
        return replace(self, block_tokens=block_tokens)


@dataclass(frozen=True)
class FullSpec(CacheSpec):
    kind: ClassVar[str] = "full"


@dataclass(frozen=True)
class MLASpec(CacheSpec):
    """The compressed latent of an MLA layer (K only, replicated over TP)."""

    kind: ClassVar[str] = "mla"
    mla_type: ClassVar[bool] = True


@dataclass(frozen=True)
class IndexerSpec(CacheSpec):
    """DeepSeek-V3.2's lightning-indexer keys, a full-attention 'layer' of its own in vLLM."""

    kind: ClassVar[str] = "indexer"
    mla_type: ClassVar[bool] = True


@dataclass(frozen=True)
class SlidingWindowSpec(CacheSpec):
    kind: ClassVar[str] = "sliding_window"
    full_type: ClassVar[bool] = False

    def request_blocks(self, max_model_len: int, in_flight_tokens: int) -> int:
        # SlidingWindowSpec.max_memory_usage_bytes: the window less one, the tokens scheduled beyond it, and one
        # block because the window need not start at a block boundary
        return cdiv(min(self.window - 1 + in_flight_tokens, max_model_len), self.block_tokens) + 1

    @property
    def uniform_key(self) -> tuple[object, ...]:
        return ("sliding_window", self.window)


@dataclass(frozen=True)
class ChunkedLocalSpec(CacheSpec):
    kind: ClassVar[str] = "chunked_local"
    full_type: ClassVar[bool] = False

    def request_blocks(self, max_model_len: int, in_flight_tokens: int) -> int:
        # ChunkedLocalAttentionSpec.max_memory_usage_bytes
        return cdiv(min(self.window + in_flight_tokens, max_model_len), self.block_tokens)

    @property
    def uniform_key(self) -> tuple[object, ...]:
        return ("chunked_local", self.window)


@dataclass(frozen=True)
class StateSpec(CacheSpec):
    """A recurrent layer's state (Mamba, gated delta-net, short conv, KDA): one fixed page per request, whatever
    its length (vLLM's MambaSpec). ``block_tokens`` is the state's block (vLLM mamba_block_size)."""

    state_bytes: int = 0  # the state's content: every shape × its dtype
    pages_per_request: int = 1  # 1; 2 (+ a checkpoint block) when prefix caching aligns states to blocks
    mixer: str = ""  # mamba1, mamba2, gated delta-net, short conv, KDA
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()

    kind: ClassVar[str] = "state"
    full_type: ClassVar[bool] = False

    @property
    def content_bytes(self) -> int:
        return self.state_bytes

    def request_blocks(self, max_model_len: int, in_flight_tokens: int) -> int:
        return self.pages_per_request

    @property
    def uniform_key(self) -> tuple[object, ...]:
        return ("state",)


class LayerRef(NamedTuple):
    """A cache-owning 'layer' of the engine: a model layer's attention, its DSA indexer (vLLM), or its
    recurrent state (a parallel hybrid such as Falcon-H1 has both attention and a state in one layer)."""

    layer: int
    part: str = ""  # "": attention; "indexer"; "state"

    @property
    def indexer(self) -> bool:
        return self.part == "indexer"


@dataclass(frozen=True)
class KVGroup:
    """Layers sharing one block table (vLLM KVCacheGroupSpec); ``layers`` may be fewer than the group size."""

    spec: CacheSpec
    layers: tuple[LayerRef, ...]


@dataclass(frozen=True)
class Grouping:
    groups: tuple[KVGroup, ...]
    uniform_type: bool  # one group whose layers may differ in size (pages add up per block id)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankMemory:
    """One rank's memory and what is spent before the KV pool: its share of the weights, the profiled overhead."""

    gpu_bytes: int
    weight_bytes: int
    overhead_bytes: int


#: how an engine spells the arguments every engine has (its run line)
@dataclass(frozen=True)
class Spelling:
    tensor_parallel_size: str
    pipeline_parallel_size: str
    max_model_len: str
    max_num_seqs: str
    kv_cache_dtype: str | None  # None: not a command-line argument of the engine
    block_size: str


# --- the engine interface -----------------------------------------------------------------------------


class Engine:
    """A paged serving engine. Defaults here are what SGLang and TensorRT-LLM share (one pool, every layer's
    pages adding up, no in-flight reservation); each engine module overrides what differs."""

    name: ClassVar[str]
    label: ClassVar[str]
    version: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    dtype_ladder: ClassVar[tuple[str, ...]] = ("auto", "fp8")  # --cache-types auto: least loss first
    separate_indexer: ClassVar[bool] = False  # the DSA indexer is its own layer (else part of the cell)
    packs_fp8_mla: ClassVar[bool] = True  # fp8 DSA latent stored as fp8_ds_mla (656 B)
    separate_swa_pool: ClassVar[bool] = False  # window layers in a token pool of their own
    block_unit: ClassVar[str] = "block"
    null_blocks: ClassVar[int] = 0  # blocks the pool can never hand out
    simulated: ClassVar[bool] = False  # kvplan.simulation has a port of its scheduler
    measures_overhead: ClassVar[bool] = True  # the budget subtracts a profiled overhead (SGLang: a fraction)
    own_settings: ClassVar[frozenset[str]] = frozenset()  # request settings only this engine has
    #: the Hugging Face architectures the engine has a model class for (None: not recorded)
    architectures: ClassVar[frozenset[str] | None] = None

    def command(self, model: str) -> str:
        """How the engine is started with ``model``, before its arguments."""
        raise NotImplementedError

    def resolve(self, s: EngineSettings, gpu_bytes: int, gpu_label: str) -> EngineSettings:
        """Settings with the engine's defaults for this GPU filled in."""
        return s

    def default_max_len(self, model: ModelDescription) -> int:
        """The context the engine takes when none is given: the config's (its first length key), else the trained
        one, else 2048 (SGLang's and TensorRT-LLM's context rules are not ported beyond this; vLLM's are)."""
        return model.engine_ctx

    def build_layout(self, model: ModelDescription, s: EngineSettings) -> EngineLayout | None:
        """The engine's own per-layer layout, or None for the shared one (kvplan.runtimes.engines.layout)."""
        return None

    def refuse(self, model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
        """Raise RefusedConfigError for layouts the engine does not run."""

    def heads_per_rank(self, n_kv: int, tp: int) -> int:
        return max(1, n_kv // tp)  # replicated once tp exceeds the heads

    def block_size(self, model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
        raise NotImplementedError

    def latent_bytes(self, latent: int, elem: int, dsa: bool, s: EngineSettings) -> int:
        raise NotImplementedError

    def windowed(self, model: ModelDescription, s: EngineSettings) -> bool:
        """Whether sliding-window / chunked layers keep only their window."""
        return False

    def full_window_note(self, model: ModelDescription) -> str:
        """Why window layers get full-length KV here."""
        return f"{self.name} keeps full-length KV for the {model.swa_type.value}-window layers"

    def group(self, specs: dict[LayerRef, CacheSpec]) -> Grouping:
        """One pool for every layer: pages add up per token."""
        return Grouping((KVGroup(next(iter(specs.values())), tuple(specs)),), True)

    def in_flight_tokens(self, s: EngineSettings, groups: Sequence[KVGroup]) -> int:
        """Tokens one request may have scheduled beyond its window (0: the pool reserves none)."""
        return 0

    def capacity(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, mem: RankMemory) -> Capacity:
        raise NotImplementedError

    def requests_that_fit(self, cap: Capacity, ctx: int) -> int:
        """Concurrent requests of ``ctx`` tokens the pool holds with their full reservation."""
        return cap.blocks // cdiv(ctx, cap.layout.block_tokens)

    def request_bytes(self, cap: Capacity, ctx: int) -> int:
        """KV bytes one request of ``ctx`` tokens reserves on the busiest rank."""
        return cdiv(ctx, cap.layout.block_tokens) * cap.layout.block_bytes

    def kv_bytes(self, cap: Capacity, stage: int) -> int:
        """KV bytes a rank of ``stage`` allocates."""
        return cap.blocks * cap.layout.stage_block_bytes(stage)

    spelling: ClassVar[Spelling]

    def run_args(
        self, lay: EngineLayout, max_model_len: int, max_num_seqs: int | None, given: EngineSettings | None = None
    ) -> tuple[str, ...]:
        """The engine's own arguments that reproduce the plan (every one the answer depends on), and those of
        ``given`` (the flags the user gave) that the engine reads."""
        s, say = lay.settings, self.spelling
        args = [
            say.tensor_parallel_size,
            str(s.tensor_parallel_size),
            say.pipeline_parallel_size,
            str(s.pipeline_parallel_size),
            say.max_model_len,
            str(max_model_len),
        ]
        if say.kv_cache_dtype:
            args += [say.kv_cache_dtype, s.kv_cache_dtype]
        if max_num_seqs is not None:
            args += [say.max_num_seqs, str(max_num_seqs)]
        if s.block_size:
            args += [say.block_size, str(s.block_size)]
        return (*args, *self.own_run_args(lay, given or EngineSettings()))

    def own_run_args(self, lay: EngineLayout, given: EngineSettings) -> tuple[str, ...]:
        """The arguments only this engine has that the plan depends on or the user gave."""
        return ()

    def dtype_args(self, dtype: str) -> tuple[str, ...]:
        """How the engine is given a KV dtype (its own argument; TensorRT-LLM has none)."""
        assert self.spelling.kv_cache_dtype is not None
        return (self.spelling.kv_cache_dtype, dtype)

    def run_notes(self, lay: EngineLayout) -> tuple[str, ...]:
        """What the plan also needs that is not a command-line argument of the engine."""
        return ()


# --- the layout of one rank and its capacity ------------------------------------------------------------


@dataclass(frozen=True)
class EngineLayout:
    """What one rank stores per token, and how tokens group into blocks."""

    engine: Engine
    settings: EngineSettings
    specs: dict[LayerRef, CacheSpec]  # this rank's TP share of every cache-owning layer
    groups: tuple[KVGroup, ...]
    uniform_type: bool
    stages: tuple[tuple[LayerRef, ...], ...]  # cache-owning layers per pipeline stage
    kv_heads_per_rank: int | None  # None: MLA (one latent, replicated over TP)
    replicated: bool  # the KV heads (or the MLA latent) are copied on every TP rank
    basis: str
    in_flight_tokens: int = 0
    notes: tuple[str, ...] = field(default=())
    stage_ranges: tuple[tuple[int, int], ...] = ()  # first and last layer of each stage, caches or not
    backends: tuple[str, ...] = ()  # the attention (and state) backends the engine picks, by name
    backend_reason: str = ""  # why those, and the block size they set

    @property
    def swa_pool(self) -> bool:
        """Window layers live in a separate token pool (SGLang's hybrid SWA)."""
        return self.engine.separate_swa_pool and any(not sp.full_type for sp in self.specs.values())

    @property
    def busiest_stage(self) -> int:
        """The pipeline stage whose ranks store the most bytes per token."""
        return max(range(len(self.stages)), key=self.stage_bytes_per_token)

    @property
    def block_tokens(self) -> int:
        return min(g.spec.block_tokens for g in self.groups)

    def stage_bytes_per_token(self, stage: int) -> int:
        """Bytes a token costs on one rank of ``stage`` when every layer holds it (no window applied)."""
        return sum(self.specs[ref].token_bytes for ref in self.stages[stage])

    @property
    def bytes_per_token(self) -> int:
        return max(self.stage_bytes_per_token(i) for i in range(len(self.stages)))

    def stage_block_bytes(self, stage: int) -> int:
        """Bytes one block id costs on a rank of ``stage``: the largest group's pages on that rank (every group
        draws its blocks from one pool of that size; vLLM _get_kv_cache_bytes_per_block)."""
        own = set(self.stages[stage])
        return max(sum(self.specs[ref].page_bytes for ref in g.layers if ref in own) for g in self.groups)

    def stage_state_bytes(self, stage: int) -> int:
        """Recurrent-state bytes one request keeps on a rank of ``stage`` (before any page padding)."""
        return sum(sp.content_bytes for ref in self.stages[stage] if isinstance(sp := self.specs[ref], StateSpec))

    @property
    def block_bytes(self) -> int:
        return max(self.stage_block_bytes(i) for i in range(len(self.stages)))

    def request_blocks(self, max_model_len: int) -> int:
        """Block ids one request of max_model_len tokens needs, summed over the groups."""
        return sum(g.spec.request_blocks(max_model_len, self.in_flight_tokens) for g in self.groups)

    def token_bytes_split(self, stage: int) -> tuple[int, int]:
        """(full-length, windowed) bytes per token on a rank of ``stage``."""
        own = [self.specs[ref] for ref in self.stages[stage]]
        return sum(sp.token_bytes for sp in own if sp.full_type), sum(sp.token_bytes for sp in own if not sp.full_type)


@dataclass(frozen=True)
class Capacity:
    layout: EngineLayout
    kv_budget_bytes: int  # per rank
    blocks: int  # block ids (vLLM: min over ranks) / SGLang full-pool pages / TensorRT-LLM blocks
    tokens: int  # KV tokens as the engine logs them
    max_model_len: int
    concurrency: float  # requests of max_model_len tokens that fit at once (as the engine logs it)
    basis: str
    stage_blocks: tuple[int, ...] = ()  # vLLM: blocks each stage could hold before the min over ranks
    swa_tokens: int | None = None  # SGLang hybrid SWA pool
    state_slots: int = 0  # SGLang: recurrent-state slots (max_mamba_cache_size)
    state_pool_bytes: int = 0  # SGLang: what the state pool takes beside the KV pool
    max_requests: int | None = None  # SGLang: max_running_requests as it resolves it

    @property
    def engine(self) -> Engine:
        return self.layout.engine

    def requests_that_fit(self, ctx: int) -> int:
        return self.engine.requests_that_fit(self, ctx)

    def request_bytes(self, ctx: int) -> int:
        return self.engine.request_bytes(self, ctx)

    def kv_bytes(self, stage: int) -> int:
        return self.engine.kv_bytes(self, stage)

    @property
    def pool_bytes(self) -> int:
        """What the busiest rank allocates for KV (the pool fills the budget)."""
        return max(self.kv_bytes(i) for i in range(len(self.layout.stages)))

    def max_context(self, parallel: int, limit: int) -> int:
        """The largest context (≤ limit) for which ``parallel`` requests fit; 0 if none does (bisection:
        requests_that_fit does not grow with the context)."""
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
