"""The one table of settings: every option of every command, and every key a deployments, workload or library
call takes. One row gives the flag and its aliases, the file key, the parser (kvplan.options.values), the help
line, the help group, the values a shell completes, and the runtime that reads it. Parsers raise ValueError with a
message; the front ends turn it into a usage error (command line, library) or a FILE:LINE: KEY error (files).

Which command takes which setting is kvplan.options.commands; the typed requests built from the values are
kvplan.options.build.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kvplan.facts.ggml_types import LLAMA_CPP_CACHE_TYPES
from kvplan.options import values as v
from kvplan.runtimes import LLAMACPP, canonical_runtime, runtime_names
from kvplan.runtimes.llamacpp.context import LlamaCppSettings
from kvplan.runtimes.llamacpp.plan import Backend
from kvplan.runtimes.names import CACHE_DTYPE_BYTES, SSM_DTYPES
from kvplan.units import Units, parse_params

GROUPS = {
    "runtime": "Runtime",
    "llama.cpp": "llama.cpp (its own flags, meaning what they mean in llama.cpp)",
    "engine": "Serving engines (vLLM's flags; SGLang's and TensorRT-LLM's names as aliases)",
    "hardware": "Hardware",
    "weights": "Weights and overhead",
    "solver": "Solver",
    "workload": "Workload",
    "budgets": "Budgets (exit 1 when one fails)",
    "command": "Options",
    "output": "Output",
}
#: the formats every command writes (kvplan.report.document.Format, without importing it)
FORMATS = ("table", "json", "markdown", "csv")

Choices = tuple[str, ...] | Callable[[], Iterable[str]]


@dataclass(frozen=True)
class Setting:
    """One setting: its flags, its file key, how it is parsed, its help and completion, which runtime reads it."""

    dest: str  # the request field, and the library's keyword
    flags: tuple[str, ...]
    parse: Callable[[object], Any]
    help: str
    group: str
    metavar: str | None = "N"  # None: a switch
    key: str | None = ""  # file key ("" = dest; "budgets.X" / "workload.X" under those mappings; None: no file)
    aliases: tuple[str, ...] = ()  # older or other file keys
    negate: tuple[str, ...] = ()  # flags that turn a switch off
    runtime: str | None = None  # "llama.cpp", "engine" or None (any)
    choices: Choices = ()  # what a shell completes (a function: looked up only when completing)
    library: bool = True  # False: the command line's own (output format, files it writes)
    once: bool = False  # given twice on one command line is an error (not: the last one wins)

    @property
    def file_key(self) -> str | None:
        return self.dest if self.key == "" else self.key

    @property
    def flag(self) -> str:
        """The canonical spelling: the first long flag."""
        return next((f for f in self.flags if f.startswith("--")), self.flags[0])

    def completions(self) -> tuple[str, ...]:
        return tuple(self.choices() if callable(self.choices) else self.choices)


def _gpu_presets() -> list[str]:
    from kvplan.capacity.hardware import GPU_TABLE

    return [g.name for g in GPU_TABLE]


def _weight_types() -> tuple[str, ...]:
    from kvplan.capacity.weights import WEIGHT_TYPES

    return WEIGHT_TYPES


def _weight_type(value: object) -> str:
    from kvplan.capacity.weights import weight_type

    return weight_type(value)


def catalog_names() -> list[str]:
    from kvplan.sources.catalog import catalog_names as names

    return names()


def _catalog_field(name: str) -> Callable[[], list[str]]:
    def values() -> list[str]:
        from kvplan.analysis.catalog import catalog_entries

        return sorted({str(getattr(e, name)) for e in catalog_entries(None, None)})

    return values


_LL, _EN = LLAMACPP, "engine"
_DEFAULTS = LlamaCppSettings()
_FA = ("on", "off", "auto")
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    Setting("engine", ("--engine",), canonical_runtime,
            f"{', '.join(runtime_names())} (any case); default llama.cpp", "runtime", "NAME",
            choices=runtime_names()),
    # llama.cpp
    Setting("ctx_size", ("-c", "--ctx-size", "--ctx"), v.count(0),
            "context size in tokens, shared by the -np sequences (llama.cpp's -c; 32k = 32768; 0 = the model's "
            "trained context)", "llama.cpp", runtime=_LL),
    Setting("ctx_per_seq", ("--ctx-per-seq",), v.count(1),
            "tokens per sequence instead: llama.cpp's -c becomes N × -np", "llama.cpp", runtime=_LL),
    Setting("parallel", ("-np", "--parallel"), v.count(1),
            "parallel sequences (n_seq_max, at most 256)", "llama.cpp", runtime=_LL),
    Setting("kv_unified", ("-kvu", "--kv-unified"), v.switch,
            "one KV stream shared by all sequences", "llama.cpp", None, negate=("-no-kvu", "--no-kv-unified"),
            runtime=_LL),
    Setting("batch_size", ("-b", "--batch-size", "--batch"), v.count(1),
            f"logical batch size (n_batch; {_DEFAULTS.n_batch})", "llama.cpp", aliases=("batch",), runtime=_LL),
    Setting("ubatch_size", ("-ub", "--ubatch-size", "--ubatch"), v.count(1),
            f"physical batch size (n_ubatch; {_DEFAULTS.n_ubatch})", "llama.cpp", aliases=("ubatch",), runtime=_LL),
    Setting("cache_type_k", ("-ctk", "--cache-type-k"), v.cache_type,
            f"K cache type: {', '.join(LLAMA_CPP_CACHE_TYPES)} ({_DEFAULTS.type_k})", "llama.cpp", "TYPE",
            runtime=_LL, choices=LLAMA_CPP_CACHE_TYPES),
    Setting("cache_type_v", ("-ctv", "--cache-type-v"), v.cache_type,
            f"V cache type (same choices; {_DEFAULTS.type_v})", "llama.cpp", "TYPE", runtime=_LL,
            choices=LLAMA_CPP_CACHE_TYPES),
    Setting("flash_attn", ("-fa", "--flash-attn"), v.flash_attn,
            f"flash attention: on, off or auto ({_DEFAULTS.flash_attn.value})", "llama.cpp", "on|off|auto",
            runtime=_LL, choices=_FA),
    Setting("swa_full", ("--swa-full",), v.switch,
            "full-size cache for sliding-window layers", "llama.cpp", None, runtime=_LL),
    Setting("rs_seq", ("--rs-seq",), v.count(0),
            "recurrent-state snapshots kept for speculative rollback (n_rs_seq; 0)", "llama.cpp", runtime=_LL),
    Setting("n_gpu_layers", ("-ngl", "--n-gpu-layers", "--gpu-layers"), v.gpu_layers,
            "layers on the GPUs: a number, auto or all (all); the rest, and their KV, stay in host memory",
            "llama.cpp", "N|auto|all", runtime=_LL, choices=("auto", "all")),
    Setting("tensor_split", ("-ts", "--tensor-split"), v.proportions,
            "layer split over the GPUs: 3,1 (default: by their memory)", "llama.cpp", "N0,N1,...", runtime=_LL),
    Setting("split_mode", ("-sm", "--split-mode"), v.choice(("none", "layer", "row", "tensor"), "split mode"),
            "how to split the model over the GPUs, as llama.cpp: layer (the default: layers and their KV by -ts), "
            "none (everything on the -mg GPU; the others unused); row: refused by CUDA, as llama.cpp; tensor: not "
            "planned", "llama.cpp", "none|layer|row|tensor", runtime=_LL, choices=("none", "layer", "row", "tensor")),
    Setting("main_gpu", ("-mg", "--main-gpu"), v.count(0),
            "the GPU (its place) that holds the model with -sm none (0)", "llama.cpp", "INDEX", runtime=_LL),
    Setting("override_tensor", ("-ot", "--override-tensor"), v.overrides,
            "tensors whose names match a regex go to a buffer: PATTERN=CPU (host memory) or =CUDA0 / GPU1 (a GPU "
            "by its place), comma-separated, first match wins (needs a GGUF)", "llama.cpp",
            "PATTERN=BUFT,...", runtime=_LL),
    Setting("cpu_moe", ("-cmoe", "--cpu-moe"), v.switch,
            "keep every layer's MoE expert weights in host memory", "llama.cpp", None, runtime=_LL),
    Setting("n_cpu_moe", ("-ncmoe", "--n-cpu-moe"), v.count(0),
            "keep the MoE expert weights of the first N layers in host memory", "llama.cpp", "N", runtime=_LL),
    Setting("no_kv_offload", ("-nkvo", "--no-kv-offload"), v.switch,
            "keep the KV cache in host memory", "llama.cpp", None, negate=("-kvo", "--kv-offload"), runtime=_LL),
    Setting("backend", ("--backend",), v.backend,
            "buffer rules: cuda (128-byte alignment, padded quantized rows) or cpu, both recorded; rocm, metal, "
            "vulkan, derived from their source; fit: cuda (rocm on an AMD Instinct preset)",
            "llama.cpp", "cuda|cpu|rocm|metal|vulkan", runtime=_LL, choices=tuple(b.value for b in Backend)),
    Setting("mtp", ("--mtp",), v.switch,
            "also size the MTP draft context (nextn layers only)", "llama.cpp", None, runtime=_LL),
    Setting("spec_type", ("--spec-type",), v.spec_type,
            "llama-server's speculative types: draft-mtp is --mtp; the others need no memory of their own",
            "llama.cpp", "TYPES", key=None, runtime=_LL, choices=("draft-mtp",)),
    Setting("model_draft", ("-md", "--model-draft", "--spec-draft-model"), v.text,
            "a draft model for speculative decoding (a GGUF or any model input): its weights and its own KV "
            "cache at the main context and -np, on the same GPUs", "llama.cpp", "MODEL", runtime=_LL,
            choices=catalog_names),
    Setting("gpu_layers_draft", ("-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft", "--spec-draft-ngl"),
            v.gpu_layers, "the draft model's layers on the GPUs: a number, auto or all (all)", "llama.cpp",
            "N|auto|all", runtime=_LL, choices=("auto", "all")),
    Setting("cache_type_k_draft", ("-ctkd", "--cache-type-k-draft", "--spec-draft-type-k"), v.cache_type,
            "the draft's K cache type (-md or --mtp; f16)", "llama.cpp", "TYPE", runtime=_LL,
            choices=LLAMA_CPP_CACHE_TYPES),
    Setting("cache_type_v_draft", ("-ctvd", "--cache-type-v-draft", "--spec-draft-type-v"), v.cache_type,
            "the draft's V cache type (-md or --mtp; f16)", "llama.cpp", "TYPE", runtime=_LL,
            choices=LLAMA_CPP_CACHE_TYPES),
    Setting("fit", ("-fit", "--fit"), v.on_off,
            "on: the -c, -ngl, -ts and -ot llama.cpp's own fit chooses from the flags given (common_fit_params, "
            "ported; exact with the compute measured: --overhead); off: kvplan plans exactly the flags given, "
            "and answers the longest context or the most sequences (on, as llama.cpp; the engines: off)",
            "llama.cpp", "on|off", key=None, choices=("on", "off")),
    Setting("fit_target", ("-fitt", "--fit-target"), v.mib_per_device,
            "with --fit on: MiB each GPU keeps free (1024; one value, or one per GPU)", "llama.cpp", "MiB[,MiB]",
            key=None),
    Setting("fit_ctx", ("-fitc", "--fit-ctx"), v.tokens,
            "with --fit on: the smallest context the fit may choose (4096)", "llama.cpp", key=None),
    Setting("contexts", ("-c", "--ctx-size", "--ctx"), v.contexts,
            "contexts, each shared by the -np sequences as llama.cpp's -c: 8k,32k,128k (a list), 1k:1M "
            "(doubling) or 1k:64k:4k (a step; the end is included)", "llama.cpp", "LIST", key=None),
    # serving engines
    Setting("max_model_len", ("--max-model-len", "--context-length", "--max_seq_len"), v.max_model_len,
            "tokens per sequence; -1 = the longest that fits, as vLLM's auto-fit (SGLang --context-length, "
            "TensorRT-LLM --max_seq_len)", "engine", runtime=_EN),
    Setting("max_num_seqs", ("--max-num-seqs", "--max-running-requests", "--max_batch_size"), v.count(1),
            "the scheduler's cap on requests running at once, as the engine reads it (SGLang "
            "--max-running-requests, TensorRT-LLM --max_batch_size); --min-parallel N asks that N fit",
            "engine", runtime=_EN),
    Setting("tensor_parallel_size", ("-tp", "--tensor-parallel-size", "--tp-size", "--tp_size", "--tp"),
            v.count(1), "tensor parallel size (1)", "engine", aliases=("tp",), runtime=_EN),
    Setting("pipeline_parallel_size", ("-pp", "--pipeline-parallel-size", "--pp-size", "--pp_size", "--pp"),
            v.count(1), "pipeline parallel size (1)", "engine", aliases=("pp",), runtime=_EN),
    Setting("kv_cache_dtype", ("--kv-cache-dtype",), v.kv_cache_dtype,
            "auto (the checkpoint's bf16), fp8, fp8_e4m3, fp8_e5m2, bf16, fp16", "engine", "DTYPE", runtime=_EN,
            choices=tuple(CACHE_DTYPE_BYTES)),
    Setting("block_size", ("--block-size", "--page-size", "--tokens_per_block"), v.count(1),
            "tokens per block / page (default: the engine's choice for the model and GPU)", "engine", runtime=_EN),
    Setting("gpu_memory_utilization", ("--gpu-memory-utilization",), v.fraction,
            "vLLM's memory share (0.92)", "engine", "FRACTION", runtime=_EN),
    Setting("mem_fraction_static", ("--mem-fraction-static",), v.fraction,
            "SGLang's memory share (default: its heuristic)", "engine", "FRACTION", runtime=_EN),
    Setting("max_total_tokens", ("--max-total-tokens",), v.count(1),
            "SGLang: a cap on the token pool (a larger one than the memory holds is the memory's)", "engine",
            runtime=_EN),
    Setting("swa_full_tokens_ratio", ("--swa-full-tokens-ratio",), v.fraction,
            "SGLang: the sliding-window pool's tokens against the full pool's, for hybrid SWA models (0.8)",
            "engine", "FRACTION", runtime=_EN),
    Setting("max_mamba_cache_size", ("--max-mamba-cache-size",), v.count(1),
            "SGLang: state slots of a Mamba hybrid's pool (default: the radix cache off and "
            "--max-running-requests given, one a request; else 0.9 / 1.9 of the memory left)", "engine",
            runtime=_EN),
    Setting("free_gpu_memory_fraction",
            ("--free-gpu-memory-fraction", "--kv_cache_free_gpu_memory_fraction", "--free_gpu_memory_fraction"),
            v.fraction, "TensorRT-LLM's share of the free memory (0.9)", "engine", "FRACTION", runtime=_EN),
    Setting("max_num_batched_tokens", ("--max-num-batched-tokens",), v.count(1),
            "vLLM: tokens per step (default: 8192 on GPUs of 70 GiB or more but A100, else 2048)", "engine",
            runtime=_EN),
    Setting("disable_hybrid_kv_cache_manager", ("--disable-hybrid-kv-cache-manager",), v.switch,
            "vLLM: full-length KV for sliding-window layers too", "engine", None, runtime=_EN),
    Setting("kv_cache_memory_bytes", ("--kv-cache-memory-bytes",), v.size,
            "vLLM: the KV cache budget per GPU (bypasses --gpu-memory-utilization; the answer needs no "
            "weight or overhead estimate)", "engine", "SIZE", runtime=_EN),
    Setting("enable_prefix_caching", ("--enable-prefix-caching",), v.switch,
            "prefix caching, on by default (SGLang: --disable-radix-cache); hybrids keep 2–5 state slots per "
            "request with it", "engine", None, negate=("--no-enable-prefix-caching", "--disable-radix-cache"),
            runtime=_EN),
    Setting("mamba_ssm_cache_dtype", ("--mamba-ssm-cache-dtype",), v.ssm_dtype,
            "vLLM: the recurrent state's dtype: auto (the model's), float32, bfloat16, float16", "engine", "DTYPE",
            runtime=_EN, choices=SSM_DTYPES),
    Setting("async_scheduling", ("--async-scheduling",), v.switch,
            "vLLM's async scheduling, on by default", "engine", None, key=None,
            negate=("--no-async-scheduling",), runtime=_EN),
    Setting("chunked_prefill_size", ("--chunked-prefill-size",), v.count_or_off,
            "SGLang: tokens a prefill chunk takes at most (default: by GPU memory, 8192 on 80 GB; -1: chunking "
            "off); it sizes SGLang's memory share, and a hybrid SWA model's SWA pool with the radix cache off and "
            "--max-running-requests", "engine", runtime=_EN),
    Setting("max_prefill_tokens", ("--max-prefill-tokens",), v.count(1),
            "SGLang: tokens one prefill batch takes at most (16384); with chunking off it sizes SGLang's memory "
            "share", "engine", runtime=_EN),
    Setting("schedule_policy", ("--schedule-policy",), v.choice(("fcfs", "lpm"), "a schedule policy"),
            "SGLang: fcfs (its default), or lpm (the longest cached prefix first)", "engine", "POLICY", key=None,
            runtime=_EN, choices=("fcfs", "lpm")),
    Setting("schedule_conservativeness", ("--schedule-conservativeness",), v.bounded(0.01, 100),
            "SGLang: scales the new-token ratio it reserves for running requests (1.0)", "engine", "F", key=None,
            runtime=_EN),
    Setting("enable_mixed_chunk", ("--enable-mixed-chunk",), v.switch,
            "SGLang: running requests decode inside prefill batches", "engine", None, key=None, runtime=_EN),
    Setting("disable_overlap_schedule", ("--disable-overlap-schedule",), v.switch,
            "SGLang: schedule each batch after the previous one's result (its overlap schedule is the default)",
            "engine", None, runtime=_EN),
    # hardware
    Setting("gpu", ("--gpu",), v.gpu,
            "a GPU preset, optionally ×N: H100-80GB, RTX-4090x2 (see `kvplan gpus`); once: a mixed rig is "
            "--memory 24GiB,16GiB", "hardware", "NAME[xN]", choices=_gpu_presets, once=True),
    Setting("memory", ("--memory",), v.sizes,
            "memory per GPU instead: 24GiB or 24GiB,16GiB", "hardware", "SIZE[,SIZE]", once=True),
    Setting("gpus_file", ("--gpus-file",), v.text,
            "a YAML file of NAME: memory entries extending the GPU presets", "hardware", "FILE", key=None),
    Setting("bandwidth", ("--bandwidth",), v.bounded(1, 1e6),
            "the GPU's memory bandwidth, GB/s (default: the GPU table's)", "hardware", "GB/S", key=None),
    Setting("peak_tflops", ("--peak-tflops",), v.bounded(0.1, 1e6),
            "dense BF16 peak, TFLOPS (default: the GPU table's)", "hardware", "T", key=None),
    # weights
    Setting("weights", ("--weights",), _weight_type,
            "weight type for an estimate: q4_k_m, q8_0, bf16, fp8, awq, …", "weights", "TYPE",
            choices=_weight_types),
    Setting("weight_bytes", ("--weight-bytes",), v.size,
            "total weight bytes instead: 18.5GiB", "weights", "SIZE"),
    Setting("params", ("--params",), parse_params,
            "parameter count for the estimate: 32B, 7.6B, 8.03e9", "weights", "N"),
    Setting("overhead", ("--overhead",), v.sizes0,
            "memory per GPU besides weights and KV: one SIZE for every GPU, or (llama.cpp) one per GPU in --memory's "
            "order, as llama-fit-params --fit-print on prints each device's compute (default: kvplan's own compute "
            "buffer)", "weights", "SIZE[,SIZE...]"),
    # solver
    Setting("cache_types", ("--cache-types",), v.auto_only,
            "auto: the least lossy cache types that fit", "solver", "auto", choices=("auto",)),
    # workload (simulate; a deployments entry's workload:, a --workload file)
    Setting("workload", ("--workload",), v.text,
            "a YAML file of these workload keys (request_rate: 10, prompt_len: ..., as a deployments entry's "
            "workload:); flags given as well win", "workload", "FILE", key=None),
    Setting("request_rate", ("--request-rate",), v.bounded(1e-6, 1e6),
            "Poisson arrivals, requests per second", "workload", "R", key="workload.request_rate"),
    Setting("max_concurrency", ("--max-concurrency",), v.whole(1, 100_000),
            "instead: N requests always in flight", "workload", key="workload.max_concurrency"),
    Setting("trace", ("--trace",), v.text,
            "instead: a JSONL or CSV trace of arrival, prompt_tokens, output_tokens[, cancel_after] (seconds)",
            "workload", "FILE", key="workload.trace"),
    Setting("prompt_len", ("--prompt-len", "--input-len"), v.lengths,
            "prompt tokens: N, uniform:LO:HI or lognormal:MEDIAN:SIGMA (1024)", "workload", "DIST",
            key="workload.prompt_len"),
    Setting("output_len", ("--output-len",), v.lengths,
            "output tokens, the same forms (256)", "workload", "DIST", key="workload.output_len"),
    Setting("duration", ("--duration",), v.bounded(1e-3, 86400),
            "seconds of arrivals (60); the run drains after", "workload", "S", key="workload.duration"),
    Setting("cancel_rate", ("--cancel-rate",), v.bounded(0, 1),
            "share of requests the client cancels, after a random share of their tokens (0)", "workload", "P",
            key="workload.cancel_rate"),
    Setting("shared_prefix", ("--shared-prefix",), v.whole(0, 2**31),
            "tokens every prompt starts with (0)", "workload", key="workload.shared_prefix"),
    Setting("seed", ("--seed",), v.whole(0, 2**63),
            "the random seed (0)", "workload", key="workload.seed"),
    # budgets
    Setting("max_kv", ("--max-kv",), v.size,
            "the KV / state bytes (llama.cpp: the exact context total; engines: what the running requests reserve "
            "per GPU: those that fit, at most the scheduler's cap) are at most this", "budgets", "SIZE",
            key="budgets.max_kv"),
    Setting("max_total", ("--max-total",), v.size,
            "weights + KV + compute + overhead (llama.cpp: all GPUs; engines: per GPU) are at most this", "budgets",
            "SIZE", key="budgets.max_total"),
    Setting("min_ctx", ("--min-ctx",), v.count(1),
            "the longest context per sequence that fits on the hardware (without hardware: the one configured) is at "
            "least this", "budgets", "N", key="budgets.min_ctx"),
    Setting("min_parallel", ("--min-parallel",), v.count(1),
            "the sequences of the configured context that fit at once are at least this (engines: requests "
            "of --max-model-len; without it, the context search is for N)", "budgets", "N",
            key="budgets.min_parallel"),
    Setting("headroom", ("--headroom",), v.headroom,
            "free share kept on every GPU (engines: of the KV pool), e.g. 10%", "budgets", "SHARE",
            key="budgets.headroom"),
    Setting("max_preemptions", ("--max-preemptions",), v.events("preemptions"),
            "preemptions over the run", "budgets", "LIMIT", key="budgets.max_preemptions"),
    Setting("max_failed", ("--max-failed",), v.events("requests"),
            "requests the server fails (llama-server: context exceeded, prompt too long)", "budgets", "LIMIT",
            key="budgets.max_failed"),
    Setting("max_ttft_p99", ("--max-ttft-p99",), v.duration,
            "the p99 TTFT floor (500ms, 2s)", "budgets", "LIMIT", key="budgets.max_ttft_p99"),
    Setting("max_itl_p99", ("--max-itl-p99",), v.duration,
            "the p99 inter-token latency floor (50ms)", "budgets", "LIMIT", key="budgets.max_itl_p99"),
    Setting("max_peak_kv", ("--max-peak-kv",), v.share,
            "the peak share of KV blocks in use (90%)", "budgets", "LIMIT", key="budgets.max_peak_kv"),
    # the catalog
    Setting("log_model", ("-m", "--model"), v.text,
            "the model the log loaded (a GGUF, spec, config.json, folder or catalog name), where the path the log "
            "names is not readable here; without it a llama.cpp log's metadata dump describes the model (its "
            "context and KV figures; the buffers need the file)", "command", "MODEL", key=None,
            choices=catalog_names),
    Setting("arch", ("--arch",), v.text,
            "only models of this GGUF architecture", "command", "ARCH", key=None, choices=_catalog_field("arch")),
    Setting("family", ("--family",), v.text,
            "only models of this family (llama, qwen, gemma, ...)", "command", "NAME", key=None,
            choices=_catalog_field("family")),
    # output
    Setting("svg", ("--svg",), v.text,
            "also write the chart as an SVG file", "output", "FILE", key=None, library=False),
    Setting("junit", ("--junit",), v.text,
            "also write a JUnit XML report to this file", "output", "FILE", key=None, library=False),
    Setting("format", ("-o", "--format"), v.choice(FORMATS, "format"),
            f"{', '.join(FORMATS)} (table)", "output", "FORMAT", key=None, library=False, choices=FORMATS),
    Setting("units", ("--units",), v.choice(tuple(u.value for u in Units), "units"),
            "iec (KiB, MiB, GiB), si (kB, MB, GB) or bytes, for every figure a person reads; CSV and JSON always "
            "carry integer bytes", "output", "UNITS", key=None, choices=tuple(u.value for u in Units)),
)
# fmt: on
SETTINGS_BY_DEST: dict[str, Setting] = {s.dest: s for s in SETTINGS}
#: the budgets of a simulation (a deployments entry's budgets: with a workload:)
SIM_BUDGETS = ("max_preemptions", "max_failed", "max_ttft_p99", "max_itl_p99", "max_peak_kv")
#: what to use instead when a flag belongs to the other kind of runtime
ENGINE_EQUIVALENT = {
    "ctx_size": "--max-model-len (per sequence)",
    "ctx_per_seq": "--max-model-len",
    "parallel": "--max-num-seqs",
    "cache_type_k": "--kv-cache-dtype",
    "cache_type_v": "--kv-cache-dtype",
    "tensor_split": "-tp / -pp (the engines split tensors and stages, not layers)",
}
LLAMACPP_EQUIVALENT = {
    "max_model_len": "--ctx-per-seq (or -c, shared by the -np sequences)",
    "max_num_seqs": "-np",
    "kv_cache_dtype": "-ctk / -ctv",
    "tensor_parallel_size": "-ts (llama.cpp splits layers over the GPUs)",
    "pipeline_parallel_size": "-ts (llama.cpp splits layers over the GPUs)",
}
