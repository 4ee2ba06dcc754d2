"""The commands: what each one answers, its arguments and which settings (kvplan.options.settings) it takes.
The command line generates its commands, help and completion from this table, and the library checks its
keywords against it."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.options.settings import SETTINGS_BY_DEST, SIM_BUDGETS, Setting
from kvplan.runtimes.names import SGLANG_SCHEDULE, SGLANG_SIZING


@dataclass(frozen=True)
class Positional:
    name: str
    help: str
    required: bool = True


@dataclass(frozen=True)
class Command:
    name: str
    brief: str  # one line for `kvplan --help`
    summary: str
    positionals: tuple[Positional, ...]
    dests: tuple[str, ...]  # its settings, in the order --help lists them
    help: dict[str, str] = field(default_factory=dict)  # a setting's help where this command means more by it

    @property
    def settings(self) -> tuple[Setting, ...]:
        return tuple(SETTINGS_BY_DEST[d] for d in self.dests)

    def help_of(self, s: Setting) -> str:
        return self.help.get(s.dest, s.help)

    @property
    def library_keywords(self) -> tuple[str, ...]:
        """The keywords its library function takes besides the model (``units`` is a keyword of its own)."""
        return tuple(s.dest for s in self.settings if s.library and s.dest != "units")


MODEL = Positional(
    "MODEL",
    "a .gguf file (or http(s)://, hf:// URL), a .yaml spec, a config.json or model folder, "
    "or a catalog name or its Hugging Face id (`kvplan models`); -m / --model MODEL as llama-server takes it",
)
OUTPUT = ("format", "units")
LLAMACPP_CONTEXT = (
    "ctx_size",
    "ctx_per_seq",
    "parallel",
    "kv_unified",
    "batch_size",
    "ubatch_size",
    "cache_type_k",
    "cache_type_v",
    "flash_attn",
    "swa_full",
)
#: the context flags of the commands that take a list of contexts (-c 8k,32k) rather than one
LLAMACPP_SHAPE = tuple(d for d in LLAMACPP_CONTEXT if d not in ("ctx_size", "ctx_per_seq"))
ENGINE = (
    "max_model_len",
    "max_num_seqs",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "kv_cache_dtype",
    "block_size",
    "gpu_memory_utilization",
    "mem_fraction_static",
    "max_total_tokens",
    "swa_full_tokens_ratio",
    "max_mamba_cache_size",
    *SGLANG_SIZING,
    "free_gpu_memory_fraction",
    "max_num_batched_tokens",
    "disable_hybrid_kv_cache_manager",
    "kv_cache_memory_bytes",
    "enable_prefix_caching",
    "mamba_ssm_cache_dtype",
)
HARDWARE = ("gpu", "memory", "gpus_file", "engine")
WEIGHTS = ("weights", "weight_bytes", "params")
BUDGETS = ("max_kv", "max_total", "min_ctx", "min_parallel", "headroom")
WORKLOAD = (
    "workload",
    "request_rate",
    "max_concurrency",
    "trace",
    "prompt_len",
    "output_len",
    "duration",
    "cancel_rate",
    "shared_prefix",
    "seed",
)
DRAFT = ("mtp", "spec_type", "model_draft")
DRAFT_TYPES = ("cache_type_k_draft", "cache_type_v_draft")

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "estimate",
            "bytes llama.cpp allocates for KV cache and state, and why",
            "How many bytes llama.cpp allocates for the KV cache and state of MODEL, exactly, and why.",
            (MODEL,),
            (*LLAMACPP_CONTEXT, "rs_seq", "backend", *DRAFT, *DRAFT_TYPES, "max_kv", "max_total", "min_ctx", *OUTPUT),
        ),
        Command(
            "fit",
            "what fits on GPUs: longest context, most sequences, cheapest cache",
            "What fits on the GPUs for llama.cpp (or --engine vllm|sglang|trtllm): without a context, the "
            "longest that fits; with --ctx-per-seq (or --max-model-len) alone, the most sequences; with both, a "
            "check; --cache-types auto, the least lossy cache types.",
            (MODEL,),
            (
                *HARDWARE,
                *LLAMACPP_CONTEXT,
                "n_gpu_layers",
                "tensor_split",
                "split_mode",
                "main_gpu",
                "override_tensor",
                "cpu_moe",
                "n_cpu_moe",
                "no_kv_offload",
                "model_draft",
                "gpu_layers_draft",
                "mtp",
                "spec_type",
                *DRAFT_TYPES,
                "backend",
                "fit",
                "fit_target",
                "fit_ctx",
                *ENGINE,
                *WEIGHTS,
                "overhead",
                "cache_types",
                *BUDGETS,
                *OUTPUT,
            ),
        ),
        Command(
            "compare",
            "MHA / GQA / MQA what-ifs and every cache type, side by side",
            "MODEL's attention layout next to MHA / GQA / MQA what-ifs and every cache type, side by side.",
            (MODEL,),
            ("contexts", *LLAMACPP_SHAPE, *OUTPUT),
            help={
                "contexts": "contexts shared by the -np sequences, as llama.cpp's -c: 8k,32k,128k (or a range "
                "1k:128k); default: the trained context"
            },
        ),
        Command(
            "curve",
            "bytes against context per cache; --svg for a chart",
            "Bytes against context for each cache: padding steps, where windows stop growing, the slope.",
            (MODEL,),
            ("contexts", *LLAMACPP_SHAPE, "rs_seq", "gpu", "bandwidth", *WEIGHTS, "svg", *OUTPUT),
            help={
                "contexts": "1k:1M (doubling), 1k:64k:4k (a step; the end is included) or 4k,8k,32k (a list); "
                "default 1k:128k",
                "bandwidth": "with --gpu: memory bandwidth, GB/s (default: the GPU table's)",
            },
        ),
        Command(
            "check",
            "every deployment of a file against its budgets (CI)",
            "Every deployment of FILE against its budgets: exit 0 all pass, 1 a budget fails, 3 bad "
            "input, 4 unsupported.",
            (Positional("FILE", "the deployments file (README: CI checks)"),),
            ("junit", *OUTPUT),
        ),
        Command(
            "simulate",
            "requests over time: llama-server, vLLM and SGLang scheduling",
            "A workload through llama-server's slots (the default runtime), vLLM 0.33's own scheduler (--engine "
            "vllm) or SGLang 0.5.23's (--engine sglang; each ported and proven step for step): KV in use, failed, "
            "preempted or retracted requests, and cancels over time, and roofline floors for TTFT and inter-token "
            "latency.",
            (MODEL,),
            (
                *HARDWARE,
                *LLAMACPP_CONTEXT,
                *ENGINE,
                "async_scheduling",
                *SGLANG_SCHEDULE,
                *WEIGHTS,
                "overhead",
                "bandwidth",
                "peak_tflops",
                *WORKLOAD,
                *SIM_BUDGETS,
                "svg",
                *OUTPUT,
            ),
            help={"svg": "also write blocks, running and waiting over time as an SVG"},
        ),
        Command(
            "explain",
            "a llama.cpp, vLLM or SGLang startup log, figure by figure",
            "A llama.cpp startup log (llama-server, llama-cli, llama-completion), a vLLM one (vllm serve) or an "
            "SGLang one (sglang.launch_server) accounted for figure by figure: the settings it states re-planned "
            "by kvplan, and every context, KV and compute figure it prints side by side with kvplan's and the "
            "rule behind it. Exit 0 when every figure is explained, 1 when one is not.",
            (Positional("LOG", "the log file (its last run), or - for standard input"),),
            ("log_model", "gpu", *OUTPUT),
        ),
        Command(
            "models",
            "the built-in catalog of models",
            "The built-in catalog of model specs.",
            (),
            ("arch", "family", *OUTPUT),
        ),
        Command(
            "gpus",
            "the GPU presets --gpu takes",
            "The GPU presets --gpu takes, with the memory kvplan uses and where it comes from.",
            (),
            OUTPUT,
        ),
    )
}
