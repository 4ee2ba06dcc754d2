"""SGLang (0.5.23): mem_fraction_static, the page, the token pool, MLA, hybrid SWA pools and Mamba state pools.

A port of SGLang 0.5.23's own sizing, proven against it (tests/fixtures/engines/sglang.json, recorded by
scripts/engines/record_sglang.py): ``handle_gpu_memory_settings`` / ``reserve_for_graph_mb``
(srt/arg_groups/memory_hook.py) for mem_fraction_static; ``KVCacheConfigurator._profile_available_bytes``,
``_handle_max_mamba_cache`` and ``resolve_max_num_reqs`` (srt/mem_cache/kv_cache_configurator.py);
``DefaultPoolConfigurator`` / ``HybridSWAPoolConfigurator`` / ``SWARequestCapPoolConfigurator`` with
``compute_swa_request_cap`` and ``validate_swa_pool_size`` (srt/model_executor/pool_configurator.py).
SGLang works in GB floats; so does this module, to land on the same integers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

from kvplan.errors import RefusedConfigError
from kvplan.facts.engine_archs import SGLANG_ARCHS
from kvplan.model import MemoryKind, ModelDescription
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.engines import state as st
from kvplan.runtimes.engines.paged import (
    DSA_INDEXER_BYTES,
    FP8_DS_MLA_BYTES,
    Capacity,
    Engine,
    EngineLayout,
    RankMemory,
    Spelling,
)
from kvplan.runtimes.names import OWN_SETTINGS
from kvplan.units import GIB, MIB, cdiv

DEFAULT_PAGE_SIZE = 1  # _page_size_default on CUDA
DSA_PAGE_SIZE = 64  # DeepSeek DSA: 64 × index_kpool
SWA_FULL_TOKENS_RATIO = 0.8  # ServerArgs.swa_full_tokens_ratio
MAMBA_FULL_MEMORY_RATIO = 0.9  # ServerArgs.mamba_full_memory_ratio (fallback)
SWA_EVICTION_INTERVAL = 128  # SGLANG_SWA_EVICTION_INTERVAL: decode tokens slid out of the window before freeing
MAX_PREFILL_TOKENS = 16384  # ServerArgs.max_prefill_tokens
#: MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3, plus (hybrids) 2 tracking slots per request for the radix
#: cache's extra buffer with the overlap schedule (get_mamba_tracking_slots); 1 without the radix cache
MAMBA_SLOTS_BASE, MAMBA_SLOTS_HYBRID, MAMBA_SLOTS_NO_RADIX = 3, 5, 1
#: SGLANG_VLM_CACHE_SIZE_MB: multimodal embedding cache reserved from the KV budget (features travel via CPU)
VLM_CACHE_MB = 100
#: multimodal checkpoints SGLang serves text-only unless --enable-multimodal (ModelConfig: mm_disabled_models)
TEXT_ONLY_BY_DEFAULT = frozenset({"gemma3", "llama4"})


def multimodal(model: ModelDescription) -> tuple[int, int] | None:
    """The vision tower SGLang serves with, or None (text-only: no tower, or multimodal off by default)."""
    return None if model.arch in TEXT_ONLY_BY_DEFAULT else model.vision_tower


#: architectures whose breakable prefill CUDA graphs SGLang turns off (disable_breakable_cudagraph_if_incompatible:
#: KDA hybrid linear attention; multimodal models are off too)
NO_PREFILL_GRAPHS = frozenset({"kimi-linear"})


def prefill_graphs(model: ModelDescription, pp: int) -> bool:
    """Whether SGLang captures prefill CUDA graphs (their memory is part of mem_fraction_static's reserve)."""
    return pp == 1 and model.arch not in NO_PREFILL_GRAPHS and multimodal(model) is None


def model_mem_fraction(model: ModelDescription, s: EngineSettings, gpu_bytes: int) -> float:
    """mem_fraction_static as given, else SGLang's heuristic for this model, GPU and layout."""
    return s.mem_fraction_static or mem_fraction_static(
        gpu_bytes,
        s.tensor_parallel_size,
        s.pipeline_parallel_size,
        model.mla,
        s.max_num_seqs,
        multimodal(model),
        prefill_graphs(model, s.pipeline_parallel_size),
        prefill_chunk(s, gpu_bytes),
        s.max_total_tokens,
        prefill_tokens(s),
    )


#: Blackwell (sm100): SGLang's attention backend, and so its page, by architecture (model_override_base.py's
#: default — trtllm_mha, page 64, for MHA; FlashInfer for MLA — and the model overrides in
#: srt/arg_groups/model_overrides/: DeepSeek-V3 trtllm_mla (64); Falcon-H1 and Qwen3-Next triton, Granite-4.0-H
#: and LFM2 flashinfer (1); Nemotron-H trtllm_mha (64))
SM100_PAGE_ONE = frozenset({"falcon-h1", "qwen3next", "qwen35", "qwen35moe", "granitehybrid", "lfm2", "lfm2moe"})
SM100_TRTLLM_MLA = frozenset({"DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"})


CUDA_CONTEXT_BYTES = GIB // 2  # the CUDA context before the profile (the reference's worked example)
#: model_config.is_hybrid_swa_model, as GGUF architecture names
HYBRID_SWA_ARCHS = frozenset({"llama4", "gpt-oss", "mimo2", "step35", "gemma4"})
#: the window SGLang's attention (and its radix tree's SWA component) keeps for a hybrid SWA model, against the
#: config's sliding_window: gpt-oss and Gemma 4 define get_attention_sliding_window_size as sliding_window − 1
#: (models/gpt_oss.py, gemma4_causal.py); MiMo-V2 and Step-3.5 take the config's value, Llama 4 its
#: attention_chunk_size (resolve_sliding_window_size, model_runner_components/load_model_utils.py)
WINDOW_LESS_ONE = frozenset({"gpt-oss", "gemma4"})


def sliding_window_size(model: ModelDescription) -> int | None:
    """SGLang's sliding_window_size for a hybrid SWA model (None: SGLang keeps one full pool for it)."""
    if model.arch not in HYBRID_SWA_ARCHS or not model.n_swa:
        return None
    return model.n_swa - (1 if model.arch in WINDOW_LESS_ONE else 0)


#: mamba_cache_chunk_size before the page (arg_groups/overrides.py): the config's mamba_chunk_size, which SGLang's
#: Mamba-2 config classes default to 256 (configs/nemotron_h.py, falcon_h1.py, granitemoehybrid.py) where the
#: checkpoint states none; FLA's chunk of 64 for the gated delta-nets, which have no such field
MAMBA2_CHUNK_DEFAULT = {"nemotron_h": 256, "nemotron_h_moe": 256, "falcon-h1": 256, "granitehybrid": 256}
FLA_CHUNK_SIZE = 64
FLA_ARCHS = frozenset({"qwen3next", "qwen35", "qwen35moe"})
MAMBA_TRACK_INTERVAL = 256  # ServerArgs.mamba_track_interval


def mamba_grids(model: ModelDescription, page: int) -> tuple[int, int, int, bool] | None:
    """SGLang's Mamba checkpoint chunk, prefill grid and decode grid for the model on pages of ``page``
    (mamba_cache_chunk_size, mamba_checkpoint_grid, mamba_track_grid in runtime_context.py), and whether the chunk is
    the checkpoint's own (False: SGLang's default for a config that states none); None: not known for the
    architecture."""
    stated = model.recurrent_params.chunk if model.recurrent_params is not None else 0
    if model.arch in FLA_ARCHS:
        chunk, own = FLA_CHUNK_SIZE, True
    elif model.arch in MAMBA2_CHUNK_DEFAULT:
        chunk, own = stated or MAMBA2_CHUNK_DEFAULT[model.arch], bool(stated)
    else:
        return None
    chunk = max(chunk, page)
    grid = math.lcm(chunk, page)
    return chunk, grid, math.lcm(grid, MAMBA_TRACK_INTERVAL), own


#: hybrids SGLang 0.5.23 has its own model classes for (their pools hold the state); others fall back to the
#: generic TransformersForCausalLM, which sizes every layer as attention — not numbers SGLang serves with
STATE_ARCHS = frozenset({"qwen3next", "qwen35", "qwen35moe", "nemotron_h", "nemotron_h_moe", "falcon-h1",
                         "granitehybrid", "lfm2", "lfm2moe", "kimi-linear", "mamba"})  # fmt: skip
#: state architectures SGLang has a class for but cannot load, with the reason
STATE_REFUSED = {
    "mamba2": "SGLang 0.5.23's Mamba2ForCausalLM reads config.intermediate_size, which Mamba-2 configs "
    "(transformers' Mamba2Config) do not carry: it fails to load",
}


def _prefill_graph_sizes(max_bs: int) -> int:
    """len(generate_prefill_cuda_graph_batch_sizes(max_bs)) (srt/arg_groups/cuda_graph_hook.py)."""
    sizes = [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(576, 1025, 64),
        *range(1280, 4097, 256),
        *range(4608, max_bs + 1, 512),
    ]
    return sum(1 for s in sizes if s <= max_bs)


def memory_defaults(gpu_bytes: int, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, decode cuda-graph max_bs) by GPU memory (handle_gpu_memory_settings)."""
    mib = gpu_bytes // MIB
    if mib < 20 * 1024:
        return 2048, 8
    if mib < 35 * 1024:
        return 4096, 48 if tp < 4 else 160
    if mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def prefill_chunk(s: EngineSettings, gpu_bytes: int) -> int:
    """chunked_prefill_size as SGLang resolves it: as given (-1: chunking off), else its default for the GPU's
    memory (handle_gpu_memory_settings)."""
    if s.chunked_prefill_size is not None:
        return s.chunked_prefill_size
    return memory_defaults(gpu_bytes, s.tensor_parallel_size)[0]


def prefill_tokens(s: EngineSettings) -> int:
    """max_prefill_tokens as SGLang resolves it: as given, else ServerArgs' default."""
    return s.max_prefill_tokens or MAX_PREFILL_TOKENS


def mem_fraction_static(gpu_bytes: int, tp: int = 1, pp: int = 1, mla: bool = False,
                        max_running_requests: int | None = None,
                        vision_tower: tuple[int, int] | None = None, prefill_graphs: bool = True,
                        chunked_prefill_size: int = 0,
                        max_total_tokens: int | None = None,
                        max_prefill_tokens: int = MAX_PREFILL_TOKENS) -> float:  # fmt: skip
    """SGLang's mem_fraction_static heuristic: (memory − reserved) / memory, in MiB as nvidia-smi reports it;
    multimodal models keep more back for their vision tower (adjust_mem_fraction_for_vlm). The activation reserve
    follows the prefill chunk (prefill_chunk; 0: SGLang's for the GPU); the prefill CUDA-graph reserve
    (8 MiB per captured size up to the chunk, or --max-total-tokens if smaller; 1.5 GiB with MLA) only while
    prefill graphs are on."""
    mib = gpu_bytes // MIB
    chunked, max_bs = memory_defaults(gpu_bytes, tp)
    if chunked_prefill_size:
        chunked = chunked_prefill_size  # -1: chunked prefill off (no prefill graphs below)
    if max_running_requests is not None:
        max_bs = min(max_bs, max_running_requests)
    activation = chunked if chunked > 0 else max_prefill_tokens  # chunked prefill off: a whole prefill batch
    reserved = 512 + max(activation, 2048) * 1.5 + tp * pp / 8 * 1024
    graph: float = max_bs * 2
    if prefill_graphs:
        largest = chunked if max_total_tokens is None else min(chunked, max_total_tokens)
        graph += 1.5 * 1024 if mla else _prefill_graph_sizes(largest) * 8
    reserved += graph
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    fraction = round((mib - reserved) / mib, 3)
    if vision_tower is None:
        return fraction
    layers, hidden = vision_tower  # complexity against a ViT-L/14 (24 layers of 1024)
    ratio = layers * hidden**2 / (24 * 1024**2)
    return fraction * 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def _blackwell(s: EngineSettings) -> bool:
    return s.capability is not None and s.capability[0] == 10


def _window(lay: EngineLayout, ctx: int) -> int:
    return max((sp.window for sp in lay.specs.values() if not sp.full_type and sp.window), default=ctx)


@dataclass(frozen=True)
class _Pools:
    kv_bytes: int  # the KV budget after the state pool
    state_slots: int  # max_mamba_cache_size (0: no state pool)
    state_bytes: int  # what the state pool takes
    source: str = ""  # where the slot count came from


class SGLang(Engine):
    name: ClassVar[str] = "sglang"
    label: ClassVar[str] = "SGLang"
    version: ClassVar[str] = "0.5.23"
    architectures: ClassVar[frozenset[str] | None] = SGLANG_ARCHS
    aliases: ClassVar[tuple[str, ...]] = ("sglang",)
    dtype_ladder: ClassVar[tuple[str, ...]] = ("auto", "fp8_e4m3")
    separate_swa_pool: ClassVar[bool] = True
    simulated: ClassVar[bool] = True  # kvplan/simulation/sglang/ ports its scheduler (one token pool so far)
    block_unit: ClassVar[str] = "page"
    measures_overhead: ClassVar[bool] = False  # activations and graphs live in the (1 − mem_fraction_static) slack
    own_settings: ClassVar[frozenset[str]] = OWN_SETTINGS["sglang"]
    spelling: ClassVar[Spelling] = Spelling(
        "--tp-size", "--pp-size", "--context-length", "--max-running-requests", "--kv-cache-dtype", "--page-size"
    )

    def command(self, model: str) -> str:
        return f"python -m sglang.launch_server --model-path {model}"

    def refuse(self, model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
        """The attention modules split KV heads over TP only when one divides the other."""
        tp = s.tensor_parallel_size
        if not model.mla and (n_kv % tp if n_kv >= tp else tp % n_kv):
            raise RefusedConfigError(
                f"sglang: {n_kv} KV heads cannot be split over tensor parallel size {tp} (one must divide the other)"
            )

    def block_size(self, model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
        if s.block_size:
            return s.block_size, None
        if model.memory == MemoryKind.DSA:
            return DSA_PAGE_SIZE, "SGLang page 64: DeepSeek DSA"
        if _blackwell(s):
            if model.mla:
                if model.hf_architecture in SM100_TRTLLM_MLA:
                    return 64, "SGLang page 64: trtllm_mla, its default for DeepSeek-V3 on Blackwell"
            elif model.arch not in SM100_PAGE_ONE:
                return 64, "SGLang page 64: trtllm_mha, its default attention backend on Blackwell"
        return DEFAULT_PAGE_SIZE, None

    def latent_bytes(self, latent: int, elem: int, dsa: bool, s: EngineSettings) -> int:
        """cell_size per MLA layer (calculate_mla_kv_cache_dim): DSA adds its 132-byte indexer row and packs an
        fp8 latent with scales (656 B), except with the trtllm DSA kernels (Blackwell), which read it raw."""
        if not dsa:
            return latent * elem
        packed = elem == 1 and not _blackwell(s)
        return (FP8_DS_MLA_BYTES if packed else latent * elem) + DSA_INDEXER_BYTES

    def build_layout(self, model: ModelDescription, s: EngineSettings) -> EngineLayout | None:
        """DeepSeek DSA on Blackwell keeps an fp8 cache even with auto (configure_kv_cache_dtype); hybrids with a
        state pool lay out their attention layers beside one StateSpec per state layer."""
        derived = self.default_max_len(model)  # ModelConfig.context_len
        if s.max_model_len and s.max_model_len > derived:
            raise RefusedConfigError(  # ModelConfig: unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN
                f"sglang: User-specified context_length ({s.max_model_len}) is greater than the derived context_length "
                f"({derived})"
            )
        if model.memory == MemoryKind.DSA and _blackwell(s) and s.kv_cache_dtype == "auto":
            from kvplan.runtimes.engines.layout import layout

            return layout(model, self, replace(s, kv_cache_dtype="fp8_e4m3"))
        return self._hybrid_layout(model, s)

    def windowed(self, model: ModelDescription, s: EngineSettings) -> bool:
        """Separate SWA pools only for the architectures SGLang runs as hybrid SWA; others get full pools."""
        return model.arch in HYBRID_SWA_ARCHS

    def full_window_note(self, model: ModelDescription) -> str:
        return (
            f"sglang keeps full-length KV for the {model.swa_type.value}-window layers "
            f"(SGLang runs {model.arch} without hybrid SWA pools)"
        )

    def _hybrid_layout(self, model: ModelDescription, s: EngineSettings) -> EngineLayout | None:
        """Hybrids with a state pool: the shared attention layout plus one StateSpec per state layer."""
        if not any(la.recurrent for la in model.layers):
            return None
        if model.arch in STATE_REFUSED:
            raise RefusedConfigError(f"sglang: {STATE_REFUSED[model.arch]}")
        if model.arch not in STATE_ARCHS:
            raise RefusedConfigError(
                f"sglang: SGLang 0.5.23 has no model class for {model.arch}: it falls back to the generic "
                "TransformersForCausalLM, which sizes every layer as attention — not numbers SGLang serves with"
            )
        from kvplan.runtimes.engines.layout import hybrid_attention_layout

        state = st.state(model, s.tensor_parallel_size, "bfloat16", self.ssm_dtype(model), self.name)
        return hybrid_attention_layout(model, self, s, state)

    @staticmethod
    def ssm_dtype(model: ModelDescription) -> str:
        """mamba2_state_dtype: the config's mamba_ssm_dtype, else float32 (the conv state stays bfloat16)."""
        declared = model.recurrent_params.cache_dtype if model.recurrent_params else ""
        return declared if declared in st.DTYPE_BYTES else "float32"

    # --- memory -------------------------------------------------------------------------------------------

    def _pools(self, lay: EngineLayout, rest_gb: float) -> _Pools:
        """_handle_max_mamba_cache: the state pool as --max-mamba-cache-size gives it; with the radix cache off,
        one slot per --max-running-requests; else ratio / (1 + ratio) of the rest, in whole slots."""
        per_req = max(lay.stage_state_bytes(i) for i in range(len(lay.stages)))
        if not per_req:
            return _Pools(int(rest_gb * (1 << 30)), 0, 0)
        s = lay.settings
        if s.max_mamba_cache_size is not None:
            slots, source = s.max_mamba_cache_size, "--max-mamba-cache-size"
        elif s.enable_prefix_caching is False and s.max_num_seqs is not None:
            slots, source = max(1, s.max_num_seqs), "one a request: --max-running-requests with the radix cache off"
        else:
            ratio = MAMBA_FULL_MEMORY_RATIO
            budget = rest_gb * ratio / (1 + ratio) * (1 << 30)
            slots, source = int((budget - per_req) // per_req), f"mamba_full_memory_ratio {MAMBA_FULL_MEMORY_RATIO}"
        if slots <= 0:  # SGLang stops: "Not enough GPU memory for hybrid (mamba/linear-attention) state cache"
            return _Pools(0, 0, 0)
        used = (slots + 1) * per_req
        return _Pools(int((rest_gb - used / (1 << 30)) * (1 << 30)), slots, used, source)

    def capacity(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, mem: RankMemory) -> Capacity:
        """rest = free after weights − free before × (1 − mem_fraction_static); tokens = rest ÷ cell, in pages."""
        mfs = model_mem_fraction(model, s, mem.gpu_bytes)
        pre = mem.gpu_bytes - CUDA_CONTEXT_BYTES
        return self.capacity_from_free(model, s, lay, pre / (1 << 30), (pre - mem.weight_bytes) / (1 << 30), mfs)

    def capacity_from_free(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, pre_gb: float,
                           available_gb: float, mfs: float) -> Capacity:  # fmt: skip
        """The pools from the free memory SGLang measures, in its GB (2^30 B): ``pre_gb`` before the weights load,
        ``available_gb`` after (the figures of its "Load weight begin / end" lines)."""
        max_len = s.max_model_len or self.default_max_len(model)
        rest_gb = available_gb - pre_gb * (1 - mfs) - (VLM_CACHE_MB / 1024 if multimodal(model) else 0.0)
        if rest_gb <= 0:
            budget = int(rest_gb * (1 << 30))
            return Capacity(lay, budget, 0, 0, max_len, 0.0, f"no memory left for the KV pool ({budget:,} B)")
        pools = self._pools(lay, rest_gb)
        page = lay.block_tokens
        full, swa = lay.token_bytes_split(lay.busiest_stage)
        ratio = (s.swa_full_tokens_ratio or SWA_FULL_TOKENS_RATIO) if swa else 0.0
        cell = full + ratio * swa
        context = s.max_model_len or self.default_max_len(model)  # ModelConfig.context_len
        # no attention layer (Falcon-Mamba): the token pool is the context (DefaultPoolConfigurator)
        swa_cap = self.swa_request_cap(model, s, page, pre_gb) if swa and full else None
        if swa_cap is not None:  # SWARequestCapPoolConfigurator: the SWA pool from the requests, the rest full
            cell = full
            tokens = int((pools.kv_bytes - swa_cap * swa) // full) // page * page
            if tokens <= 0:
                raise RefusedConfigError(
                    f"sglang: the SWA pool for --max-running-requests {s.max_num_seqs} with the radix cache off "
                    f"({swa_cap:,} tokens, {swa_cap * swa / (1 << 30):.2f} GiB) leaves no room for the full KV pool "
                    f"in the {pools.kv_bytes / (1 << 30):.2f} GiB available (SGLang: reduce --max-running-requests "
                    "or raise --mem-fraction-static)"
                )
            split = f" (full {full:,}; the SWA pool {swa_cap:,} tokens × {swa:,} B for the requests' windows)"
        else:
            tokens = int(max(0, pools.kv_bytes) // cell) // page * page if cell else context
            split = f" (full {full:,} + {ratio} × SWA {swa:,})" if swa else ""
        cap = s.max_total_tokens  # _apply_token_constraints, then calculate_pool_sizes_from_max_tokens: in pages
        capped = cap is not None and cap < tokens
        if cap is not None and capped:
            tokens = cap // page * page
        if swa_cap is not None:
            swa_tokens: int | None = min(swa_cap, cap) if cap is not None and capped else swa_cap
        else:
            swa_tokens = int(tokens * ratio) // page * page if swa else None
            self.validate_swa_pool(model, swa_tokens, page)
        basis = f"free after weights − free × (1 − mem_fraction_static {mfs}) = {int(rest_gb * (1 << 30)):,} B"
        if pools.state_slots:
            per_req = lay.stage_state_bytes(lay.busiest_stage)
            basis += f"; state pool ({pools.state_slots:,} + 1 padding) slots × {per_req:,} B ({pools.source})"
        basis += f"; ÷ {cell:,.0f} B per token{split}"
        if capped:
            basis += f"; --max-total-tokens {cap:,} caps the pool at {tokens:,} tokens"
        return Capacity(
            lay, pools.kv_bytes, tokens // page, tokens, max_len, tokens / max_len, basis, swa_tokens=swa_tokens,
            state_slots=pools.state_slots, state_pool_bytes=pools.state_bytes,
            max_requests=self.max_running_requests(
                tokens, context, s.max_num_seqs, pools.state_slots, self.state_slots_per_request(lay)
            ),
        )  # fmt: skip

    @staticmethod
    def swa_request_cap(model: ModelDescription, s: EngineSettings, page: int, pre_gb: float) -> int | None:
        """SWARequestCapPoolConfigurator.is_applicable and compute_swa_request_cap: with the radix cache off and
        --max-running-requests given, the SWA pool holds each request's window, the eviction interval, a page and
        its next decode page, plus the prefill chunks in flight (two with the overlap schedule) and a page; in
        pages. None where SGLang sizes the SWA pool by --swa-full-tokens-ratio."""
        window = sliding_window_size(model)
        if s.max_num_seqs is None or s.enable_prefix_caching is not False or window is None:
            return None
        chunk = prefill_chunk(s, int(pre_gb * (1 << 30)) + CUDA_CONTEXT_BYTES)  # the GPU from its free memory
        if chunk <= 0:  # chunked prefill off: a whole prompt may land in the SWA pool, so SGLang keeps its ratio
            return None
        per_request = window + SWA_EVICTION_INTERVAL + page + page
        in_flight = 1 if s.disable_overlap_schedule else 2
        return cdiv(per_request * max(1, s.max_num_seqs) + in_flight * chunk + page, page) * page

    @staticmethod
    def validate_swa_pool(model: ModelDescription, swa_tokens: int | None, page: int) -> None:
        """validate_swa_pool_size: SGLang refuses an SWA pool at or below one window and a page."""
        window = sliding_window_size(model)
        if swa_tokens is not None and window is not None and window + page >= swa_tokens:
            raise RefusedConfigError(
                f"sglang: SWA pool ({swa_tokens} tokens) cannot hold even one request: the prefill admission floor "
                f"is sliding_window_size ({window}) + page_size ({page}); SGLang refuses it (raise "
                "--swa-full-tokens-ratio or the KV budget)"
            )

    @staticmethod
    def max_running_requests(tokens: int, context_len: int, asked: int | None, state_slots: int,
                             slots_per_request: int) -> int:  # fmt: skip
        """resolve_max_num_reqs: the asked number or an estimate from the pool, at most half the tokens, and for
        hybrids at most the state slots ÷ the slots a request holds (SGLang refuses a state pool that holds none)."""
        estimated = max(min(int(tokens / context_len * 512), 4096), 2048)
        n = min(asked if asked is not None else estimated, tokens // 2)
        if state_slots:
            n = min(n, state_slots // slots_per_request)
            if n <= 0:
                raise RefusedConfigError(
                    f"sglang: the state pool ({state_slots} slots, {slots_per_request} a request) is too small to "
                    "serve any request; SGLang refuses it (raise --max-mamba-cache-size or --mem-fraction-static)"
                )
        return n

    def requests_that_fit(self, cap: Capacity, ctx: int) -> int:
        """Pages of the full pool; for hybrid SWA also the request's window in the SWA pool; at most
        max_running_requests."""
        page = cap.layout.block_tokens
        n = cap.blocks // cdiv(ctx, page) if cap.tokens else 0
        if cap.swa_tokens is not None:
            n = min(n, cap.swa_tokens // (cdiv(min(ctx, _window(cap.layout, ctx)), page) * page))
        if cap.state_slots:
            n = min(n, cap.state_slots // self.state_slots_per_request(cap.layout))
        return n

    @staticmethod
    def state_slots_per_request(lay: EngineLayout) -> int:
        """_calculate_mamba_ratio: 3, plus for hybrids the radix cache's 2 tracking slots; 1 without it."""
        if lay.settings.enable_prefix_caching is False:
            return MAMBA_SLOTS_NO_RADIX
        return MAMBA_SLOTS_HYBRID if any(sp.token_bytes for sp in lay.specs.values()) else MAMBA_SLOTS_BASE

    def request_bytes(self, cap: Capacity, ctx: int) -> int:
        lay = cap.layout
        page = lay.block_tokens
        full, swa = lay.token_bytes_split(lay.busiest_stage)
        slots = self.state_slots_per_request(lay) if cap.state_slots else 0
        state = lay.stage_state_bytes(lay.busiest_stage) * slots
        return cdiv(ctx, page) * page * full + cdiv(min(ctx, _window(lay, ctx)), page) * page * swa + state

    def kv_bytes(self, cap: Capacity, stage: int) -> int:
        full, swa = cap.layout.token_bytes_split(stage)
        return cap.tokens * full + (cap.swa_tokens or 0) * swa + cap.state_pool_bytes

    def own_run_args(self, lay: EngineLayout, given: EngineSettings) -> tuple[str, ...]:
        mfs = lay.settings.mem_fraction_static
        args = ["--mem-fraction-static", f"{mfs:g}"] if mfs else []
        if lay.settings.max_total_tokens is not None:
            args += ["--max-total-tokens", str(lay.settings.max_total_tokens)]
        if lay.settings.swa_full_tokens_ratio is not None:
            args += ["--swa-full-tokens-ratio", f"{lay.settings.swa_full_tokens_ratio:g}"]
        if lay.settings.max_mamba_cache_size is not None:
            args += ["--max-mamba-cache-size", str(lay.settings.max_mamba_cache_size)]
        if lay.settings.chunked_prefill_size is not None:
            args += ["--chunked-prefill-size", str(lay.settings.chunked_prefill_size)]
        if lay.settings.max_prefill_tokens is not None:
            args += ["--max-prefill-tokens", str(lay.settings.max_prefill_tokens)]
        if lay.settings.disable_overlap_schedule:
            args.append("--disable-overlap-schedule")
        if lay.settings.enable_prefix_caching is False:
            args.append("--disable-radix-cache")
        return tuple(args)


ENGINE = SGLang()
