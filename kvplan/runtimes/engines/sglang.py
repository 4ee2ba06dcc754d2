"""SGLang (0.5.23): page size, mem_fraction_static, the token pool, MLA and hybrid SWA pools.

Source: ../shared/reference/serving-engines-kv.md §2 (SGLang 0.5.23 wheel, with line references) and SGLang's
``model_config.is_hybrid_swa_model``.
"""

from __future__ import annotations

from typing import ClassVar

from kvplan.model import MemoryKind, ModelDescription
from kvplan.runtimes.engines.paged import (
    DSA_INDEXER_BYTES,
    FP8_DS_MLA_BYTES,
    Capacity,
    Engine,
    EngineLayout,
    EngineSettings,
    RankMemory,
    Spelling,
)
from kvplan.runtimes.engines.vllm import VLLM
from kvplan.units import GIB, MIB, cdiv

DEFAULT_PAGE_SIZE = 1  # _page_size_default on CUDA
DSA_PAGE_SIZE = 64  # DeepSeek DSA: 64 × index_kpool
SWA_FULL_TOKENS_RATIO = 0.8  # ServerArgs.swa_full_tokens_ratio
CUDA_CONTEXT_BYTES = GIB // 2  # the CUDA context before the profile (the reference's worked example)
#: model_config.is_hybrid_swa_model, as GGUF architecture names
HYBRID_SWA_ARCHS = frozenset({"llama4", "gpt-oss", "mimo2", "step35", "gemma4"})


def mem_fraction_static(gpu_bytes: int, tp: int = 1, pp: int = 1, mla: bool = False) -> float:
    """The mem_fraction_static heuristic (arg_groups/memory_hook.py), without graph extras."""
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


def _window(lay: EngineLayout, ctx: int) -> int:
    return max((sp.window for sp in lay.specs.values() if not sp.full_type), default=ctx)


class SGLang(Engine):
    name: ClassVar[str] = "sglang"
    label: ClassVar[str] = "SGLang"
    version: ClassVar[str] = "0.5.23"
    aliases: ClassVar[tuple[str, ...]] = ("sglang",)
    dtype_ladder: ClassVar[tuple[str, ...]] = ("auto", "fp8_e4m3")
    separate_swa_pool: ClassVar[bool] = True
    block_unit: ClassVar[str] = "page"
    measures_overhead: ClassVar[bool] = False  # activations and graphs live in the (1 − mem_fraction_static) slack
    own_settings: ClassVar[frozenset[str]] = frozenset({"mem_fraction_static"})
    spelling: ClassVar[Spelling] = Spelling(
        "--tp-size", "--pp-size", "--context-length", "--max-running-requests", "--kv-cache-dtype", "--page-size"
    )

    def command(self, model: str) -> str:
        return f"python -m sglang.launch_server --model-path {model}"

    def refuse(self, model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
        VLLM().refuse(model, s, n_kv)  # the same attention modules split heads the same way

    def block_size(self, model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
        if s.block_size:
            return s.block_size, None
        return (DSA_PAGE_SIZE if model.memory == MemoryKind.DSA else DEFAULT_PAGE_SIZE), None

    def latent_bytes(self, latent: int, elem: int, dsa: bool) -> int:
        """cell_size per MLA layer: the scaled fp8 layout for DSA (656 B) plus the 132-byte indexer row."""
        if not dsa:
            return latent * elem
        return (FP8_DS_MLA_BYTES if elem == 1 else latent * elem) + DSA_INDEXER_BYTES

    def windowed(self, model: ModelDescription, s: EngineSettings) -> bool:
        """Separate SWA pools only for the architectures SGLang runs as hybrid SWA; others get full pools."""
        return model.arch in HYBRID_SWA_ARCHS

    def full_window_note(self, model: ModelDescription) -> str:
        return (
            f"sglang keeps full-length KV for the {model.swa_type.value}-window layers "
            f"(SGLang runs {model.arch} without hybrid SWA pools)"
        )

    def capacity(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, mem: RankMemory) -> Capacity:
        """rest = (free − weights) − free × (1 − mem_fraction_static); tokens = rest ÷ cell, floored to pages."""
        max_len = s.max_model_len or model.n_ctx_train
        mfs = s.mem_fraction_static or mem_fraction_static(mem.gpu_bytes, s.tp, s.pp, model.mla)
        pre = mem.gpu_bytes - CUDA_CONTEXT_BYTES
        budget = int((pre - mem.weight_bytes) - pre * (1 - mfs))
        page = lay.block_tokens
        full, swa = lay.token_bytes_split(lay.busiest_stage)
        ratio = SWA_FULL_TOKENS_RATIO if swa else 0.0
        cell = full + ratio * swa
        tokens = int(max(0, budget) // cell) // page * page
        swa_tokens = int(tokens * ratio) // page * page if swa else None
        split = f" (full {full:,} + {ratio} × SWA {swa:,})" if swa else ""
        basis = (
            f"(free − weights) − free × (1 − mem_fraction_static {mfs}) = {budget:,} B; "
            f"÷ {cell:,.0f} B per token{split}"
        )
        return Capacity(lay, budget, tokens // page, tokens, max_len, tokens / max_len, basis, swa_tokens=swa_tokens)

    def requests_that_fit(self, cap: Capacity, ctx: int) -> int:
        """Pages of the full pool; for hybrid SWA also the request's window in the SWA pool."""
        page = cap.layout.block_tokens
        n = cap.blocks // cdiv(ctx, page)
        if cap.swa_tokens is not None:
            n = min(n, cap.swa_tokens // (cdiv(min(ctx, _window(cap.layout, ctx)), page) * page))
        return n

    def request_bytes(self, cap: Capacity, ctx: int) -> int:
        lay = cap.layout
        page = lay.block_tokens
        full, swa = lay.token_bytes_split(lay.busiest_stage)
        return cdiv(ctx, page) * page * full + cdiv(min(ctx, _window(lay, ctx)), page) * page * swa

    def kv_bytes(self, cap: Capacity, stage: int) -> int:
        full, swa = cap.layout.token_bytes_split(stage)
        return cap.tokens * full + (cap.swa_tokens or 0) * swa

    def own_run_args(self, lay: EngineLayout) -> tuple[str, ...]:
        mfs = lay.settings.mem_fraction_static
        return ("--mem-fraction-static", f"{mfs:g}") if mfs else ()


ENGINE = SGLang()
