"""A serving engine's settings: the one dataclass for vLLM's (and SGLang's, TensorRT-LLM's) flags, from the
request the front ends build to the engine's own arithmetic. Imports no engine code (the estimate path reads the
request without them)."""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import UsageError
from kvplan.runtimes.names import CACHE_DTYPE_BYTES


@dataclass(frozen=True)
class EngineSettings:
    """A serving engine's KV-relevant arguments, named as vLLM names them (SGLang's and TensorRT-LLM's own
    names are aliases of the same flags). As a request carries them they are the flags as given (``None``: the
    engine's default, or the solver's question); :meth:`Engine.resolve` fills in the defaults for a GPU (each
    default is named in its engine's module) and the GPU's facts (family, capability, name)."""

    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    block_size: int | None = None  # vLLM --block-size / SGLang --page-size / TensorRT-LLM tokens_per_block
    max_model_len: int | None = None  # None: the model's trained context
    gpu_memory_utilization: float | None = None  # vLLM
    mem_fraction_static: float | None = None  # SGLang (None: its heuristic)
    max_total_tokens: int | None = None  # SGLang: a cap on the token pool (None: what the memory holds)
    swa_full_tokens_ratio: float | None = None  # SGLang: the SWA pool against the full one (None: its 0.8)
    max_mamba_cache_size: int | None = None  # SGLang: the state pool's slots (None: from the memory's share)
    chunked_prefill_size: int | None = None  # SGLang: None = its default by GPU memory; -1 = chunking off
    max_prefill_tokens: int | None = None  # SGLang: None = its 16384 (sizes its memory share with chunking off)
    disable_overlap_schedule: bool = False  # SGLang
    free_gpu_memory_fraction: float | None = None  # TensorRT-LLM
    max_num_batched_tokens: int | None = None  # vLLM: None = `vllm serve`'s default for the GPU
    disable_hybrid_kv_cache_manager: bool = False  # vLLM
    gpu_family: str = "hopper"  # the GPU generation kernels are picked by: hopper / blackwell / other
    capability: tuple[int, int] | None = None  # CUDA compute capability (vLLM picks its kernels by it)
    gpu_name: str = ""  # the GPU preset (vLLM keeps A100s on the small batch defaults)
    kv_cache_memory_bytes: int | None = None  # vLLM: the KV budget per GPU, bypassing the utilization
    max_num_seqs: int | None = None  # vLLM --max-num-seqs (None: its default for the GPU)
    enable_prefix_caching: bool | None = None  # vLLM (None: on, its default)
    mamba_ssm_cache_dtype: str | None = None  # vLLM (None: auto, or the checkpoint's own for Nemotron-H)

    @property
    def dtype_bytes(self) -> int:
        dtype = self.kv_cache_dtype.lower()
        if dtype not in CACHE_DTYPE_BYTES:
            raise UsageError(
                f"expected one of {', '.join(CACHE_DTYPE_BYTES)}, not {self.kv_cache_dtype!r}", "--kv-cache-dtype"
            )
        return CACHE_DTYPE_BYTES[dtype]
