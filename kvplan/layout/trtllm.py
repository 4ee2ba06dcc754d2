"""TensorRT-LLM (PyTorch backend): tokens per block, free_gpu_memory_fraction, blocks.

Source: ../shared/reference/serving-engines-kv.md §3 (resource_manager.py, _util.py; file, function and
commit, no line numbers).
"""

from __future__ import annotations

from kvplan.errors import RefusedConfigError
from kvplan.layout.paged import (
    DSA_INDEXER_BYTES,
    Capacity,
    EngineLayout,
    EngineSettings,
    cdiv,
    no_in_flight,
    uniform_groups,
)
from kvplan.model import ModelDescription, SwaType

DTYPE_LADDER = ("auto", "fp8")
TOKENS_PER_BLOCK = 32  # KvCacheConfig.tokens_per_block
SEPARATE_INDEXER = False  # DSACacheManager adds the indexer bytes per layer


def refuse(model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
    if model.swa_type != SwaType.NONE:
        raise RefusedConfigError(
            f"trtllm: {model.arch} has {model.swa_type.value} windows; kvplan does not model TensorRT-LLM's "
            "variable sliding-window pools (VSWA); use --engine vllm or sglang"
        )


def heads_per_rank(n_kv: int, tp: int) -> int:
    return cdiv(n_kv, tp)  # ceil split (vLLM / SGLang floor); the two agree when tp divides or exceeds H


def block_size(model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
    return (s.block_size or TOKENS_PER_BLOCK), None


def latent_bytes(latent: int, elem: int, dsa: bool) -> int:
    """kv_factor 1, one head of kv_lora_rank + rope (no packed fp8 layout), plus the DSA indexer row."""
    return latent * elem + (DSA_INDEXER_BYTES if dsa else 0)


def windowed(model: ModelDescription, s: EngineSettings) -> bool:
    return False


group = uniform_groups  # one pool: every layer's pages add up per token
in_flight_tokens = no_in_flight


def capacity(model: ModelDescription, s: EngineSettings, lay: EngineLayout, gpu_bytes: int, weight_bytes: int,
             overhead_bytes: int, cuda_context_bytes: int) -> Capacity:  # fmt: skip
    """kv = fraction × (memory − peak); tokens = kv ÷ bytes per token; whole blocks (Python floor)."""
    M = s.max_model_len or model.n_ctx_train
    used = weight_bytes + overhead_bytes + cuda_context_bytes
    budget = int((gpu_bytes - used) * s.free_gpu_memory_fraction)
    blocks = max(0, budget) // lay.bytes_per_token // lay.block_tokens
    tokens = blocks * lay.block_tokens
    basis = (f"{s.free_gpu_memory_fraction} × (memory − weights − overhead − CUDA context) = {budget:,} B; "
             f"÷ {lay.bytes_per_token:,} B per token, blocks of {lay.block_tokens}")  # fmt: skip
    return Capacity(lay, budget, blocks, tokens, M, tokens / M, basis)


def requests_that_fit(cap: Capacity, ctx: int) -> int:
    return cap.blocks // cdiv(ctx, cap.layout.block_tokens)  # GUARANTEED_NO_EVICT reserves whole blocks


def request_bytes(cap: Capacity, ctx: int) -> int:
    return cdiv(ctx, cap.layout.block_tokens) * cap.layout.block_bytes


def kv_bytes(cap: Capacity, stage: int) -> int:
    return cap.blocks * cap.layout.stage_block_bytes(stage)
