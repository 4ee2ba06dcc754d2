"""vLLM (V1 engine, 0.33): defaults, backends and block size, per-layer KV / state specs, groups, blocks and
concurrency — a port of vLLM's own planning, proven against it (tests/fixtures/engines/vllm.json, recorded by
scripts/engines/record_vllm.py from vLLM 0.33.0's code).

Sources (vLLM 0.33.0): ``EngineArgs.get_batch_defaults`` (engine/arg_utils.py), ``VllmConfig.max_concurrent_batches``
(config/vllm.py), ``MambaModelConfig.verify_and_update_config`` (model_executor/models/config.py),
``Platform.update_block_size_for_backend`` / ``_align_hybrid_block_size`` (platforms/interface.py), the layers'
``get_kv_cache_spec`` (layers/attention/attention.py, mla_attention.py, mamba/abstract.py), and
``get_kv_cache_configs`` / ``get_max_concurrency_for_kv_cache_config`` (v1/core/kv_cache_planning.py,
kv_cache_utils.py).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

from kvplan.errors import RefusedConfigError
from kvplan.facts.engine_archs import VLLM_ARCHS
from kvplan.model import Layer, MemoryKind, ModelDescription, SwaType
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.engines import state as st
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
    Spelling,
    StateSpec,
    pipeline_stages,
)
from kvplan.runtimes.engines.vllm import backends as bk
from kvplan.runtimes.engines.vllm.context import default_max_model_len, verify_max_model_len
from kvplan.runtimes.engines.vllm.grouping import group_layers
from kvplan.runtimes.names import OWN_SETTINGS, SSM_DTYPES
from kvplan.units import GIB, cdiv

DEFAULT_GPU_MEMORY_UTILIZATION = 0.92  # CacheConfig.gpu_memory_utilization since 0.20 (0.9 before)
#: `vllm serve`'s batch defaults (EngineArgs.get_batch_defaults, OPENAI_API_SERVER): by GPU memory
HUGE_GPU_BYTES, BIG_GPU_BYTES = 160 * GIB, 70 * GIB
#: layers that hold both attention and a state (llama.cpp's and vLLM's parallel hybrids)
PARALLEL_HYBRIDS = frozenset({"falcon-h1"})
#: memory kinds vLLM's layer classes are modelled for here
SIZED_MEMORY = frozenset({MemoryKind.KV, MemoryKind.DSA, MemoryKind.RECURRENT, MemoryKind.HYBRID})
MODEL_DTYPE = "bfloat16"  # dtype auto: the checkpoint's bf16
#: vLLM's max_model_len when the config names none (ModelConfig._get_and_verify_max_len)
DEFAULT_MAX_LEN = 2048


def model_len(model: ModelDescription) -> int:
    """The max_model_len vLLM derives for the model: from a config.json by vLLM's own rules
    (kvplan.runtimes.engines.vllm.context), else the context the source states (2048 where it states none)."""
    if model.context_keys is not None:
        return default_max_model_len(model.context_keys)
    return model.engine_ctx  # DEFAULT_MAX_LEN where the checkpoint states none


#: recurrent architectures vLLM 0.33 does not run, with the reason
UNSUPPORTED: dict[str, str] = {
    "minimax-01": "vLLM removed MiniMaxText01ForCausalLM in 0.23.0 (registry _PREVIOUSLY_SUPPORTED_MODELS)",
    "plamo2": "vLLM removed Plamo2ForCausalLM in 0.26.0",
    "rwkv6": "vLLM has no RWKV model class",
    "rwkv6qwen2": "vLLM has no RWKV model class",
    "rwkv7": "vLLM has no RWKV model class",
    "arwkv7": "vLLM has no RWKV model class",
}


def batch_defaults(gpu_bytes: int, gpu_name: str, capability: tuple[int, int] | None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) as `vllm serve` defaults them for this GPU."""
    if gpu_bytes >= HUGE_GPU_BYTES:
        return 16384, 1024
    if gpu_bytes >= BIG_GPU_BYTES and "a100" not in gpu_name.lower() and capability != (12, 1):
        return 8192, 1024
    return 2048, 256


def max_concurrent_batches(pp: int) -> int:
    """Async scheduling (on by default) with the V2 model runner keeps pp + 1 batches in flight."""
    return pp + 1


def _attention_layers(model: ModelDescription) -> list[Layer]:
    return [
        la
        for la in model.layers
        if not la.nextn and la.has_kv and la.n_head_kv > 0 and (not la.recurrent or model.arch in PARALLEL_HYBRIDS)
    ]


def _state_layers(model: ModelDescription) -> list[Layer]:
    return [la for la in model.layers if la.recurrent and not la.nextn]


class VLLM(Engine):
    name: ClassVar[str] = "vllm"
    label: ClassVar[str] = "vLLM"
    version: ClassVar[str] = "0.33"
    aliases: ClassVar[tuple[str, ...]] = ("vllm",)
    simulated: ClassVar[bool] = True  # kvplan/simulation/vllm/ ports its v1 scheduler
    dtype_ladder: ClassVar[tuple[str, ...]] = ("auto", "fp8")
    separate_indexer: ClassVar[bool] = True  # DeepseekV32IndexerCache is its own full-attention "layer"
    architectures: ClassVar[frozenset[str] | None] = VLLM_ARCHS
    null_blocks: ClassVar[int] = 1  # BlockPool reserves block 0 as the null block
    own_settings: ClassVar[frozenset[str]] = OWN_SETTINGS["vllm"]
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

    def default_max_len(self, model: ModelDescription) -> int:
        return model_len(model)

    def resolve(self, s: EngineSettings, gpu_bytes: int, gpu_label: str) -> EngineSettings:
        tokens, seqs = batch_defaults(gpu_bytes, s.gpu_name or gpu_label, s.capability)
        return replace(
            s,
            gpu_memory_utilization=s.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
            max_num_batched_tokens=s.max_num_batched_tokens or tokens,
            max_num_seqs=s.max_num_seqs or seqs,
            gpu_name=s.gpu_name or gpu_label,
        )

    # --- checks ------------------------------------------------------------------------------------------

    def _check(self, model: ModelDescription, s: EngineSettings, attn: list[Layer], states: list[Layer]) -> None:
        if s.tensor_parallel_size < 1 or s.pipeline_parallel_size < 1:
            raise RefusedConfigError("--tensor-parallel-size and --pipeline-parallel-size must be at least 1")
        if model.arch in UNSUPPORTED:
            raise RefusedConfigError(f"vllm: {model.arch}: {UNSUPPORTED[model.arch]}")
        if model.memory not in SIZED_MEMORY:
            raise RefusedConfigError(
                f"vllm: {model.arch} keeps {model.memory.value} memory, which kvplan does not model for vLLM"
            )
        if model.swa_type == SwaType.SYMMETRIC:
            raise RefusedConfigError(f"vllm: {model.arch} uses a symmetric (non-causal) window; not a serving layout")
        if not attn and not states:
            raise RefusedConfigError(f"vllm: {model.arch} has no layers with a KV cache or a state")
        if s.pipeline_parallel_size > model.n_layer:
            raise RefusedConfigError(
                f"vllm: --pipeline-parallel-size {s.pipeline_parallel_size} exceeds the {model.n_layer} layers"
            )
        if s.max_model_len and model.context_keys is not None:
            verify_max_model_len(model.context_keys, s.max_model_len)
        elif s.max_model_len and (model.ctx_declared or model.config_ctx) and s.max_model_len > model.engine_ctx:
            raise RefusedConfigError(  # ModelConfig validation (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)
                f"vllm: User-specified max_model_len ({s.max_model_len}) is greater than the derived max_model_len "
                f"({model.engine_ctx}) of the model"
            )
        if attn:
            self._check_heads(model, s, attn[0])
        if s.mamba_ssm_cache_dtype not in (None, *SSM_DTYPES):
            raise RefusedConfigError(
                f"vllm: --mamba-ssm-cache-dtype {s.mamba_ssm_cache_dtype!r}: expected one of {', '.join(SSM_DTYPES)}"
            )
        if states and model.arch == "kimi-linear" and s.mamba_ssm_cache_dtype == "float16":
            raise RefusedConfigError(  # MambaStateDtypeCalculator.kda_state_dtype
                "vllm: KDA recurrent state supports only auto, float32, and bfloat16; got float16"
            )

    @staticmethod
    def _check_heads(model: ModelDescription, s: EngineSettings, la: Layer) -> None:
        """The attention modules' TP checks: query heads divide by tp; KV heads and tp divide one another."""
        if la.n_head % s.tensor_parallel_size:
            raise RefusedConfigError(
                f"vllm: Total number of attention heads ({la.n_head}) must be divisible by tensor parallel size "
                f"({s.tensor_parallel_size})"
            )
        n_kv = la.n_head_kv
        tp = s.tensor_parallel_size
        if not model.mla and (n_kv % tp if n_kv >= tp else tp % n_kv):
            raise RefusedConfigError(
                f"vllm: {n_kv} KV heads cannot be split over tensor parallel size {tp} (one must divide the other)"
            )

    # --- backends and block size ---------------------------------------------------------------------------

    def _backends(self, model: ModelDescription, s: EngineSettings, attn: list[Layer]) -> list[bk.Backend]:
        if not attn:
            return []
        quantized = s.dtype_bytes == 1
        if model.memory == MemoryKind.DSA:
            heads = max(1, attn[0].n_head // s.tensor_parallel_size)
            return [bk.sparse_mla_backend(s.capability, quantized, heads), bk.INDEXER]
        if model.mla:
            return [bk.mla_backend(s.capability, quantized)]
        head = max(max(la.head_k, la.head_v) for la in attn)
        return [bk.attention_backend(s.capability, quantized, head, model.arch == "gpt-oss", model.mm_prefix_lm)]

    def _attn_token_bytes(self, model: ModelDescription, s: EngineSettings, la: Layer, backend: str = "") -> int:
        elem = s.dtype_bytes
        if model.mla:  # FlashMLA-sparse packs an fp8 cache as fp8_ds_mla; FlashInfer's sparse MLA keeps it raw
            return FP8_DS_MLA_BYTES if backend == "FLASHMLA_SPARSE" and elem == 1 else la.k_width * elem
        return self.heads_per_rank(la.n_head_kv, s.tensor_parallel_size) * (la.head_k + la.head_v) * elem

    def _align_hybrid(self, model: ModelDescription, s: EngineSettings, backends: list[bk.Backend], block: int,
                      attn_token: int, state_page: int, mixer: str, head_k: int) -> int:  # fmt: skip
        """Platform._align_hybrid_block_size: the attention block grows until its page holds the state page."""
        kernel = max(backends[0].smallest, block)
        backend_alignment = math.lcm(*(b.smallest for b in backends))
        if model.mla:
            kernel = max(kernel, 128)  # TRTLLM / FlashInfer MLA decode kernels
        if s.enable_prefix_caching is not False:  # on by default
            kernel = math.lcm(kernel, st.checkpoint_alignment(mixer, s.capability, head_k) or 1)
        attn_block = kernel * cdiv(state_page, kernel * attn_token)
        attn_block = backend_alignment * cdiv(attn_block, backend_alignment)
        return max(block, attn_block)

    # --- the layout --------------------------------------------------------------------------------------

    def build_layout(self, model: ModelDescription, s: EngineSettings) -> EngineLayout:  # noqa: C901 - vLLM's order
        attn, states = _attention_layers(model), _state_layers(model)
        self._check(model, s, attn, states)
        backends = self._backends(model, s, attn)
        notes: list[str] = []
        block = s.block_size or bk.preferred_block_size(backends)
        why = (
            f"--block-size {s.block_size}"
            if s.block_size
            else f"{' + '.join(b.name for b in backends)}: {backends[0].reason}"
            if backends
            else "no attention layers"
        )
        state = None
        # prefix caching is on by default, but not for attention-free models (ModelConfig.is_prefix_caching_supported)
        align = bool(attn) if s.enable_prefix_caching is None else s.enable_prefix_caching
        max_len = s.max_model_len or model_len(model)
        state_block = max_len
        state_padded = 0
        if states:
            ssm = st.vllm_ssm_dtype(model, s.mamba_ssm_cache_dtype, MODEL_DTYPE)
            state = st.state(model, s.tensor_parallel_size, MODEL_DTYPE, ssm, self.name)
            head_k = model.recurrent_params.d_state if model.recurrent_params else 0
            if attn:
                token = self._attn_token_bytes(model, s, attn[0], backends[0].name)
                aligned = self._align_hybrid(model, s, backends, block, token, state.bytes, state.mixer, head_k)
                if aligned != block:
                    why += f"; raised to {aligned} so one attention page holds a {state.label} state page"
                block = aligned
                if block * token > state.bytes:
                    state_padded = block * token
            state_block = block if align else max_len
        specs: dict[LayerRef, CacheSpec] = {}
        attn_ids, state_ids = {la.index for la in attn}, {la.index for la in states}
        windows = model.swa_type in (SwaType.STANDARD, SwaType.CHUNKED) or model.declared_window
        for la in model.layers:
            if la.index in attn_ids:
                token = self._attn_token_bytes(model, s, la, backends[0].name)
                spec: CacheSpec = MLASpec(token, block) if model.mla else FullSpec(token, block)
                if windows and not model.mla:
                    if model.declared_window:
                        spec = SlidingWindowSpec(token, block, model.declared_window)
                    elif la.swa and model.swa_type == SwaType.CHUNKED:
                        spec = ChunkedLocalSpec(token, block, model.n_swa)
                    elif la.swa:
                        spec = SlidingWindowSpec(token, block, model.n_swa)
                specs[LayerRef(la.index)] = spec
                if model.memory == MemoryKind.DSA:
                    specs[LayerRef(la.index, "indexer")] = IndexerSpec(DSA_INDEXER_BYTES, block)
            if la.index in state_ids and state is not None:
                ckpt = st.checkpoint_blocks(state.mixer, s.capability, head_k) if align else 0
                specs[LayerRef(la.index, "state")] = StateSpec(
                    0, state_block, padded_page=state_padded, state_bytes=state.bytes,
                    pages_per_request=2 + ckpt if align else 1, mixer=state.label, shapes=state.shapes,
                    dtypes=state.dtypes,
                )  # fmt: skip
        grouping, specs = group_layers(specs, not s.disable_hybrid_kv_cache_manager)
        notes += grouping.notes
        parts = pipeline_stages(model.n_layer, s.pipeline_parallel_size)
        stages, ranges, start = [], [], 0
        for n in parts:
            stages.append(tuple(ref for ref in specs if start <= ref.layer < start + n))
            ranges.append((start, start + n - 1))
            start += n
        if state is not None:
            shapes = " + ".join(
                "×".join(map(str, sh)) + f" {d}" for sh, d in zip(state.shapes, state.dtypes, strict=True)
            )
            pages = 2 + st.checkpoint_blocks(state.mixer, s.capability, head_k)
            notes.append(
                f"{state.label} state per layer per request: {shapes} = {state.bytes:,} B"
                + (f", padded to {state_padded:,} B pages" if state_padded else "")
                + (
                    f"; prefix caching keeps {pages} pages per request (mamba_cache_mode align)"
                    if align
                    else "; one page per request (prefix caching off)"
                )
            )
        heads: int | None = None
        replicated = False
        basis = "no attention layers"
        if attn:
            elem = s.dtype_bytes
            if model.mla:
                latent = attn[0].k_width
                packed = model.memory == MemoryKind.DSA and elem == 1
                basis = f"MLA latent {f'{FP8_DS_MLA_BYTES} (fp8_ds_mla)' if packed else f'{latent} × {elem}'} B"
                basis += f" + DSA indexer {DSA_INDEXER_BYTES} B" if model.memory == MemoryKind.DSA else ""
                replicated = s.tensor_parallel_size > 1
            else:
                heads = self.heads_per_rank(attn[0].n_head_kv, s.tensor_parallel_size)
                shapes_ = sorted({(la.head_k, la.head_v) for la in attn})
                basis = f"{heads} KV heads × {' / '.join(f'({k} + {v})' for k, v in shapes_)} × {elem} B"
                replicated = s.tensor_parallel_size > attn[0].n_head_kv
            stage = sum(1 for la in attn if la.index < parts[0]) if s.pipeline_parallel_size > 1 else len(attn)
            basis += f" per layer × {stage} layers"
        in_flight = 0
        if any(isinstance(v, (SlidingWindowSpec, ChunkedLocalSpec)) for v in specs.values()):
            in_flight = max_concurrent_batches(s.pipeline_parallel_size) * (s.max_num_batched_tokens or 2048)
        names = tuple(b.name for b in backends) + ((st.STATE_BACKENDS[state.mixer],) if state else ())
        return EngineLayout(
            engine=self, settings=s, specs=specs, groups=grouping.groups, uniform_type=grouping.uniform_type,
            stages=tuple(stages), kv_heads_per_rank=heads, replicated=replicated, basis=basis,
            in_flight_tokens=in_flight, notes=tuple(notes), stage_ranges=tuple(ranges), backends=names,
            backend_reason=f"block size {block} ({why})",
        )  # fmt: skip

    # --- capacity ------------------------------------------------------------------------------------------

    def latent_bytes(self, latent: int, elem: int, dsa: bool, s: EngineSettings) -> int:
        return FP8_DS_MLA_BYTES if dsa and elem == 1 else latent * elem

    def budget(self, s: EngineSettings, mem: RankMemory) -> tuple[int, str]:
        """The KV budget of one rank: --kv-cache-memory-bytes as given, else the utilization's share less the
        weights and the profiled overhead (gpu_worker.py determine_available_memory)."""
        if s.kv_cache_memory_bytes is not None:
            return s.kv_cache_memory_bytes, f"--kv-cache-memory-bytes {s.kv_cache_memory_bytes:,} B per GPU"
        util = s.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
        budget = math.ceil(mem.gpu_bytes * util) - mem.weight_bytes - mem.overhead_bytes
        return budget, f"ceil({util} × memory) − weights − overhead = {budget:,} B"

    def capacity(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, mem: RankMemory) -> Capacity:
        max_len = s.max_model_len or model_len(model)
        budget, basis = self.budget(s, mem)
        # a stage whose layers all reuse another layer's KV (Gemma 3n's last layers) holds no blocks
        stage_blocks = tuple(
            max(0, budget) // lay.stage_block_bytes(i) for i in range(len(lay.stages)) if lay.stage_block_bytes(i)
        )
        blocks = min(stage_blocks)  # every rank takes the smallest count
        conc = blocks / lay.request_blocks(max_len)
        basis += f"; ÷ {lay.block_bytes:,} B per block id"
        return Capacity(lay, budget, blocks, int(conc * max_len), max_len, conc, basis, stage_blocks)

    def startup(self, model: ModelDescription, s: EngineSettings, mem: RankMemory) -> Capacity:
        """What `vllm serve` settles on at startup (EngineCore._initialize_kv_caches): the blocks, and the
        max_model_len — the model's own, the one asked, or with --max-model-len -1 the longest that fits
        (_auto_fit_max_model_len). Raises RefusedConfigError where vLLM refuses to start, with its reason."""
        original = model_len(model) if s.max_model_len in (None, -1) else s.max_model_len
        assert original is not None
        cap = self.capacity(model, replace(s, max_model_len=original), self.build_layout(model, s), mem)
        if cap.kv_budget_bytes <= 0:
            raise RefusedConfigError("vllm: No available memory for the cache blocks")
        best = cap.max_context(1, original)
        if s.max_model_len == -1:
            if best <= 0:
                raise RefusedConfigError(
                    "vllm: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token"
                )
            if best < original:
                cap = self.capacity(model, replace(s, max_model_len=best), cap.layout, mem)
            return cap
        if best < original:
            estimate = f"; the estimated maximum model length is {best}" if best > 0 else ""
            raise RefusedConfigError(
                f"vllm: to serve at least one request with the model's max seq len ({original}), "
                f"{cap.layout.request_blocks(original) * cap.layout.block_bytes:,} B of KV cache is needed, more than "
                f"the {cap.kv_budget_bytes - cap.layout.block_bytes:,} B available{estimate}"
            )
        return cap

    def requests_that_fit(self, cap: Capacity, ctx: int) -> int:
        return max(0, cap.blocks - self.null_blocks) // cap.layout.request_blocks(ctx)

    def request_bytes(self, cap: Capacity, ctx: int) -> int:
        return cap.layout.request_blocks(ctx) * cap.layout.block_bytes

    def own_run_args(self, lay: EngineLayout, given: EngineSettings) -> tuple[str, ...]:
        s = lay.settings
        args: list[str] = []
        if s.kv_cache_memory_bytes is not None:
            args += ["--kv-cache-memory-bytes", str(s.kv_cache_memory_bytes)]
        else:
            args += ["--gpu-memory-utilization", f"{s.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION:g}"]
        # what a window layer reserves depends on it; and the user's own is kept
        if s.max_num_batched_tokens and (lay.in_flight_tokens or given.max_num_batched_tokens is not None):
            args += ["--max-num-batched-tokens", str(s.max_num_batched_tokens)]
        if s.disable_hybrid_kv_cache_manager:
            args.append("--disable-hybrid-kv-cache-manager")
        state = any(isinstance(v, StateSpec) for v in lay.specs.values())
        if s.enable_prefix_caching is False and (state or given.enable_prefix_caching is False):
            args.append("--no-enable-prefix-caching")
        if state and s.mamba_ssm_cache_dtype not in (None, "auto"):
            args += ["--mamba-ssm-cache-dtype", s.mamba_ssm_cache_dtype]
        return tuple(args)


ENGINE = VLLM()
