"""The paged serving engines' KV layout and capacity: vLLM (V1, 0.33), SGLang (0.5.23), TensorRT-LLM (PyTorch).

Formulas and defaults from ../shared/reference/serving-engines-kv.md (with the engines' source references).
Each engine's capacity depends on profiled terms kvplan cannot measure (activations, CUDA graphs, the CUDA
context): they enter as one explicit ``overhead`` figure, labelled as an estimate unless given.

Scope: models whose attention layers all see the full context (MHA / GQA / MQA, MLA, DeepSeek-V3.2's
indexer). Sliding-window, recurrent and hybrid layouts (vLLM's hybrid allocator, SGLang's SWA pools) are
refused with a clear message rather than approximated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.errors import RefusedConfigError
from kvplan.model import MemoryKind, ModelDescription, SwaType

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


@dataclass(frozen=True)
class EngineSettings:
    engine: str = "vllm"
    cache_dtype: str = "auto"
    tp: int = 1
    pp: int = 1
    block_size: int | None = None  # vLLM block_size / SGLang page_size / TRT-LLM tokens_per_block
    gpu_memory_utilization: float = 0.92  # vLLM 0.33 default (0.9 before 0.20)
    mem_fraction_static: float | None = None  # SGLang: None = its heuristic
    free_gpu_memory_fraction: float = 0.9  # TensorRT-LLM
    max_model_len: int | None = None  # None: the model's training context
    hopper: bool = True  # vLLM MLA block size: FlashMLA 64 on Hopper, CUTLASS MLA 128 on Blackwell


@dataclass(frozen=True)
class EngineLayout:
    """What one rank stores per token, and how tokens group into blocks."""

    engine: str
    bytes_per_token: int  # all layers of this rank's pipeline stage
    block_tokens: int
    kv_heads_per_rank: int | None  # None: MLA (one latent, replicated over TP)
    layers_per_rank: int
    replicated: bool  # the KV heads (or the MLA latent) are copied on every TP rank
    basis: str

    @property
    def block_bytes(self) -> int:
        return self.bytes_per_token * self.block_tokens


@dataclass(frozen=True)
class Capacity:
    layout: EngineLayout
    kv_budget_bytes: int
    blocks: int
    tokens: int
    max_model_len: int
    concurrency: float  # requests of max_model_len tokens that fit at once (as the engine logs it)
    basis: str


def _check_supported(model: ModelDescription, engine: str) -> None:
    if model.swa_type != SwaType.NONE or model.memory not in (MemoryKind.KV, MemoryKind.DSA):
        raise RefusedConfigError(
            f"{engine}: kvplan sizes serving engines for full-attention models (MHA/GQA/MQA, MLA, DSA) only; "
            f"{model.arch} has {model.memory.value} memory"
            f"{' with a ' + model.swa_type.value + ' window' if model.swa_type != SwaType.NONE else ''}"
        )


def layout(model: ModelDescription, s: EngineSettings) -> EngineLayout:
    """Bytes per token per rank and the block size, as each engine computes them."""
    if s.engine not in ENGINES:
        raise RefusedConfigError(f"engine must be one of {', '.join(ENGINES)}, not {s.engine!r}")
    _check_supported(model, s.engine)
    dtype = s.cache_dtype.lower()
    if dtype not in CACHE_DTYPE_BYTES:
        raise RefusedConfigError(
            f"{s.engine}: cache dtype {s.cache_dtype!r}; kvplan knows {', '.join(CACHE_DTYPE_BYTES)}"
        )
    elem = CACHE_DTYPE_BYTES[dtype]
    if s.tp < 1 or s.pp < 1:
        raise RefusedConfigError("--tp and --pp must be at least 1")
    trunk = [la for la in model.layers if not la.nextn and la.n_head_kv > 0]
    layers = cdiv(len(trunk), s.pp)  # the largest pipeline stage
    if model.mla:
        latent = trunk[0].k_width  # kv_lora_rank + qk_rope_head_dim
        per_layer = latent * elem
        if model.memory == MemoryKind.DSA:
            if s.engine in ("vllm", "sglang") and elem == 1:
                per_layer = FP8_DS_MLA_BYTES  # the packed fp8_ds_mla layout
            per_layer += DSA_INDEXER_BYTES
        heads, replicated = None, s.tp > 1
        basis = f"MLA latent {latent} × {elem} B" + (" + DSA indexer 132 B" if model.memory == MemoryKind.DSA else "")
    else:
        h = trunk[0].n_head_kv
        heads = cdiv(h, s.tp) if s.engine == "trtllm" else max(1, h // s.tp)
        replicated = s.tp > h
        per_layer = heads * (trunk[0].head_k + trunk[0].head_v) * elem
        basis = f"{heads} KV heads × ({trunk[0].head_k} + {trunk[0].head_v}) × {elem} B"
    if s.block_size:
        block = s.block_size
    elif s.engine == "vllm":
        block = (64 if s.hopper else 128) if model.mla else 16
    elif s.engine == "sglang":
        block = 64 if model.memory == MemoryKind.DSA else 1
    else:
        block = 32
    return EngineLayout(s.engine, per_layer * layers, block, heads, layers, replicated,
                        f"{basis} per layer × {layers} layers")  # fmt: skip


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


def capacity(
    model: ModelDescription,
    s: EngineSettings,
    gpu_bytes: int,
    weight_bytes_per_rank: int,
    overhead_bytes: int,
    cuda_context_bytes: int = GIB // 2,
) -> Capacity:
    """KV tokens one rank can hold, and the engine's concurrency at max_model_len."""
    lay = layout(model, s)
    M = s.max_model_len or model.n_ctx_train
    if s.engine == "vllm":
        budget = math.ceil(gpu_bytes * s.gpu_memory_utilization) - weight_bytes_per_rank - overhead_bytes
        blocks = max(0, budget) // lay.block_bytes
        tokens = blocks * lay.block_tokens
        conc = blocks / cdiv(M, lay.block_tokens)
        basis = (f"ceil({s.gpu_memory_utilization} × memory) − weights − overhead = {budget:,} B; "
                 f"÷ {lay.block_bytes:,} B per block of {lay.block_tokens}")  # fmt: skip
    elif s.engine == "sglang":
        mfs = s.mem_fraction_static or sglang_mem_fraction(gpu_bytes, s.tp, s.pp, model.mla)
        pre = gpu_bytes - cuda_context_bytes
        budget = int((pre - weight_bytes_per_rank) - pre * (1 - mfs))
        tokens = max(0, budget) // lay.bytes_per_token // lay.block_tokens * lay.block_tokens
        blocks = tokens // lay.block_tokens
        conc = tokens / M
        basis = (f"(free − weights) − free × (1 − mem_fraction_static {mfs}) = {budget:,} B; "
                 f"÷ {lay.bytes_per_token:,} B per token")  # fmt: skip
    else:
        budget = int(
            (gpu_bytes - (weight_bytes_per_rank + overhead_bytes + cuda_context_bytes)) * s.free_gpu_memory_fraction
        )
        tokens_raw = max(0, budget) // lay.bytes_per_token
        blocks = tokens_raw // lay.block_tokens
        tokens = blocks * lay.block_tokens
        conc = tokens / M
        basis = (f"{s.free_gpu_memory_fraction} × (memory − weights − overhead − CUDA context) = {budget:,} B; "
                 f"÷ {lay.bytes_per_token:,} B per token, blocks of {lay.block_tokens}")  # fmt: skip
    return Capacity(lay, budget, blocks, tokens, M, conc, basis)
