"""SGLang (0.5.23): page size, mem_fraction_static, the token pool, MLA and hybrid SWA pools.

Source: ../shared/reference/serving-engines-kv.md §2 (SGLang 0.5.23 wheel, with line references) and SGLang's
``model_config.is_hybrid_swa_model``.
"""

from __future__ import annotations

from kvplan.layout.paged import (
    DSA_INDEXER_BYTES,
    FP8_DS_MLA_BYTES,
    GIB,
    MIB,
    Capacity,
    EngineLayout,
    EngineSettings,
    cdiv,
    no_in_flight,
    uniform_groups,
)
from kvplan.model import MemoryKind, ModelDescription

DTYPE_LADDER = ("auto", "fp8_e4m3")
DEFAULT_PAGE_SIZE = 1  # _page_size_default on CUDA
DSA_PAGE_SIZE = 64  # DeepSeek DSA: 64 × index_kpool
SEPARATE_INDEXER = False  # the indexer row is part of cell_size
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


def refuse(model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
    from kvplan.layout import vllm

    vllm.refuse(model, s, n_kv)  # the same attention modules split heads the same way


def heads_per_rank(n_kv: int, tp: int) -> int:
    return max(1, n_kv // tp)


def block_size(model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
    if s.block_size:
        return s.block_size, None
    return (DSA_PAGE_SIZE if model.memory == MemoryKind.DSA else DEFAULT_PAGE_SIZE), None


def latent_bytes(latent: int, elem: int, dsa: bool) -> int:
    """cell_size per MLA layer: the scaled fp8 layout for DSA (656 B) plus the 132-byte indexer row."""
    if not dsa:
        return latent * elem
    return (FP8_DS_MLA_BYTES if elem == 1 else latent * elem) + DSA_INDEXER_BYTES


def windowed(model: ModelDescription, s: EngineSettings) -> bool:
    """Separate SWA pools only for the architectures SGLang runs as hybrid SWA; others get full pools."""
    return model.arch in HYBRID_SWA_ARCHS


group = uniform_groups  # one pool: every layer's pages add up per token
in_flight_tokens = no_in_flight


def capacity(model: ModelDescription, s: EngineSettings, lay: EngineLayout, gpu_bytes: int, weight_bytes: int,
             overhead_bytes: int, cuda_context_bytes: int) -> Capacity:  # fmt: skip
    """rest = (free − weights) − free × (1 − mem_fraction_static); tokens = rest ÷ cell, floored to pages."""
    M = s.max_model_len or model.n_ctx_train
    mfs = s.mem_fraction_static or mem_fraction_static(gpu_bytes, s.tp, s.pp, model.mla)
    pre = gpu_bytes - cuda_context_bytes
    budget = int((pre - weight_bytes) - pre * (1 - mfs))
    page = lay.block_tokens
    full, swa = lay.token_bytes_split(lay.busiest_stage)
    ratio = s.swa_full_tokens_ratio if swa else 0.0
    cell = full + ratio * swa
    tokens = int(max(0, budget) // cell) // page * page
    swa_tokens = int(tokens * ratio) // page * page if swa else None
    split = f" (full {full:,} + {ratio} × SWA {swa:,})" if swa else ""
    basis = (f"(free − weights) − free × (1 − mem_fraction_static {mfs}) = {budget:,} B; "
             f"÷ {cell:,.0f} B per token{split}")  # fmt: skip
    return Capacity(lay, budget, tokens // page, tokens, M, tokens / M, basis, swa_tokens=swa_tokens)


def _window(lay: EngineLayout, ctx: int) -> int:
    return max((sp.window for sp in lay.specs.values() if not sp.full_type), default=ctx)


def requests_that_fit(cap: Capacity, ctx: int) -> int:
    """Pages of the full pool; for hybrid SWA also the request's window in the SWA pool."""
    page = cap.layout.block_tokens
    n = cap.blocks // cdiv(ctx, page)
    if cap.swa_tokens is not None:
        n = min(n, cap.swa_tokens // (cdiv(min(ctx, _window(cap.layout, ctx)), page) * page))
    return n


def request_bytes(cap: Capacity, ctx: int) -> int:
    lay = cap.layout
    page = lay.block_tokens
    full, swa = lay.token_bytes_split(lay.busiest_stage)
    return cdiv(ctx, page) * page * full + cdiv(min(ctx, _window(lay, ctx)), page) * page * swa


def kv_bytes(cap: Capacity, stage: int) -> int:
    full, swa = cap.layout.token_bytes_split(stage)
    return cap.tokens * full + (cap.swa_tokens or 0) * swa
