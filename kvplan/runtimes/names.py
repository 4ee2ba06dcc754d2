"""The runtimes by name, without their code: what the command line needs to parse a request (names, aliases,
labels, which settings are whose, the KV dtypes) before any runtime module is imported. Each engine's class
carries the same values; tests/runtimes/test_names.py checks they agree."""

from __future__ import annotations

LLAMACPP = "llama.cpp"
LLAMACPP_ALIASES = ("llama.cpp", "llamacpp", "llama-cpp", "llama_cpp", "llama-server", "llama-cli")

#: engine → (label, aliases)
ENGINE_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "vllm": ("vLLM", ("vllm",)),
    "sglang": ("SGLang", ("sglang",)),
    "trtllm": ("TensorRT-LLM", ("trtllm", "tensorrt-llm", "tensorrt_llm", "trt-llm", "tensorrtllm")),
}
#: SGLang's scheduler flags that shape only its scheduler (simulate --engine sglang: SglangSchedule)
SGLANG_SCHEDULE = ("schedule_policy", "schedule_conservativeness", "enable_mixed_chunk")
#: SGLang's scheduler flags that also size its pools (its memory share; the SWA pool with the radix cache off):
#: engine settings of every engine command (EngineSettings), simulate's scheduler reads them from there
SGLANG_SIZING = ("chunked_prefill_size", "max_prefill_tokens", "disable_overlap_schedule")
#: engine → the request settings only it has
OWN_SETTINGS: dict[str, frozenset[str]] = {
    "vllm": frozenset(
        {
            "gpu_memory_utilization",
            "max_num_batched_tokens",
            "disable_hybrid_kv_cache_manager",
            "kv_cache_memory_bytes",
            "enable_prefix_caching",
            "mamba_ssm_cache_dtype",
            "async_scheduling",
        }
    ),
    "sglang": frozenset(
        {
            "mem_fraction_static",
            "max_total_tokens",
            "swa_full_tokens_ratio",
            "max_mamba_cache_size",
            "enable_prefix_caching",
            *SGLANG_SIZING,
            *SGLANG_SCHEDULE,
        }
    ),
    "trtllm": frozenset({"free_gpu_memory_fraction"}),
}
#: the serving engines' --kv-cache-dtype spellings → bytes per element
CACHE_DTYPE_BYTES = {
    "auto": 2,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}
#: vLLM's --mamba-ssm-cache-dtype
SSM_DTYPES = ("auto", "float32", "bfloat16", "float16")
