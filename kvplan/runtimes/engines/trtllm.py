"""TensorRT-LLM (PyTorch backend): tokens per block, free_gpu_memory_fraction, blocks.

Source: ../shared/reference/serving-engines-kv.md §3 (resource_manager.py, _util.py; file, function and
commit, no line numbers).
"""

from __future__ import annotations

from typing import ClassVar

from kvplan.errors import RefusedConfigError
from kvplan.model import ModelDescription, SwaType
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.engines.paged import (
    DSA_INDEXER_BYTES,
    Capacity,
    Engine,
    EngineLayout,
    RankMemory,
    Spelling,
)
from kvplan.runtimes.names import OWN_SETTINGS
from kvplan.units import GIB, cdiv

TOKENS_PER_BLOCK = 32  # KvCacheConfig.tokens_per_block
DEFAULT_FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction
CUDA_CONTEXT_BYTES = GIB // 2  # the CUDA context outside the profiled peak (the reference's worked example)


class TRTLLM(Engine):
    name: ClassVar[str] = "trtllm"
    label: ClassVar[str] = "TensorRT-LLM"
    version: ClassVar[str] = "1.2 (PyTorch backend)"
    aliases: ClassVar[tuple[str, ...]] = ("trtllm", "tensorrt-llm", "tensorrt_llm", "trt-llm", "tensorrtllm")
    dtype_ladder: ClassVar[tuple[str, ...]] = ("auto", "fp8")
    packs_fp8_mla: ClassVar[bool] = False  # kv_factor 1, one head of kv_lora_rank + rope, no packed layout
    own_settings: ClassVar[frozenset[str]] = OWN_SETTINGS["trtllm"]
    spelling: ClassVar[Spelling] = Spelling(
        "--tp_size", "--pp_size", "--max_seq_len", "--max_batch_size", None, "--tokens_per_block"
    )

    def command(self, model: str) -> str:
        return f"trtllm-serve {model}"

    def refuse(self, model: ModelDescription, s: EngineSettings, n_kv: int) -> None:
        if model.swa_type != SwaType.NONE:
            raise RefusedConfigError(
                f"trtllm: {model.arch} has {model.swa_type.value} windows; kvplan does not model TensorRT-LLM's "
                "variable sliding-window pools (VSWA); use --engine vllm or sglang"
            )

    def heads_per_rank(self, n_kv: int, tp: int) -> int:
        return cdiv(n_kv, tp)  # ceil split (vLLM / SGLang floor); the two agree when tp divides or exceeds H

    def block_size(self, model: ModelDescription, s: EngineSettings) -> tuple[int, str | None]:
        return (s.block_size or TOKENS_PER_BLOCK), None

    def latent_bytes(self, latent: int, elem: int, dsa: bool, s: EngineSettings) -> int:
        """kv_factor 1, one head of kv_lora_rank + rope (no packed fp8 layout), plus the DSA indexer row."""
        return latent * elem + (DSA_INDEXER_BYTES if dsa else 0)

    def capacity(self, model: ModelDescription, s: EngineSettings, lay: EngineLayout, mem: RankMemory) -> Capacity:
        """kv = fraction × (memory − peak); tokens = kv ÷ bytes per token; whole blocks (Python floor)."""
        max_len = s.max_model_len or self.default_max_len(model)
        fraction = s.free_gpu_memory_fraction or DEFAULT_FREE_GPU_MEMORY_FRACTION
        used = mem.weight_bytes + mem.overhead_bytes + CUDA_CONTEXT_BYTES
        budget = int((mem.gpu_bytes - used) * fraction)
        blocks = max(0, budget) // lay.bytes_per_token // lay.block_tokens
        tokens = blocks * lay.block_tokens
        basis = (
            f"{fraction} × (memory − weights − overhead − CUDA context) = {budget:,} B; "
            f"÷ {lay.bytes_per_token:,} B per token, blocks of {lay.block_tokens}"
        )
        return Capacity(lay, budget, blocks, tokens, max_len, tokens / max_len, basis)

    def own_run_args(self, lay: EngineLayout, given: EngineSettings) -> tuple[str, ...]:
        fraction = lay.settings.free_gpu_memory_fraction or DEFAULT_FREE_GPU_MEMORY_FRACTION
        return ("--kv_cache_free_gpu_memory_fraction", f"{fraction:g}")

    def dtype_args(self, dtype: str) -> tuple[str, ...]:
        """TensorRT-LLM has no KV dtype argument: a YAML file of LLM API options carries it."""
        return ("--extra_llm_api_options", f"kv_cache_config: {{dtype: {dtype}}}")

    def run_notes(self, lay: EngineLayout) -> tuple[str, ...]:
        if lay.settings.kv_cache_dtype == "auto":
            return ()
        return (
            f"TensorRT-LLM takes the KV dtype from --extra_llm_api_options: "
            f"kv_cache_config: {{dtype: {lay.settings.kv_cache_dtype}}}",
        )


ENGINE = TRTLLM()
