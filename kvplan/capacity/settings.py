"""The one table of settings: every flag the command line takes and every key a deployments file takes, with
the function that parses it and the runtime that reads it. Parsers raise ValueError with a message; the
front ends turn it into a usage error (command line) or a FILE:LINE: KEY error (files)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvplan.capacity.weights import weight_type
from kvplan.facts.ggml_types import LLAMA_CPP_CACHE_TYPES
from kvplan.runtimes import LLAMACPP, canonical_runtime, runtime_names
from kvplan.runtimes.llamacpp.plan import Backend, FlashAttn
from kvplan.runtimes.names import CACHE_DTYPE_BYTES, SSM_DTYPES
from kvplan.units import parse_count, parse_fraction, parse_params, parse_size

# --- parsers (raise ValueError with a message) ------------------------------------------------------------


def _count(minimum: int = 1) -> Callable[[object], int]:
    def parse(value: object) -> int:
        return parse_count(value, minimum=minimum)

    return parse


def _switch(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError(f"expected true or false, not {value!r}")


def _choice(choices: tuple[str, ...], what: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        key = str(value).strip().lower()
        if key in choices:
            return key
        close = difflib.get_close_matches(key, choices, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown {what} {value!r}{hint}; expected one of {', '.join(choices)}")

    return parse


_cache_type = _choice(LLAMA_CPP_CACHE_TYPES, "cache type")


def _flash_attn(value: object) -> FlashAttn:
    """llama.cpp's is_truthy / is_falsey / is_autoy (YAML 1.1 reads on/off as booleans)."""
    if isinstance(value, bool):
        return FlashAttn.ON if value else FlashAttn.OFF
    key = str(value).strip().lower()
    if key in ("on", "enabled", "true", "1"):
        return FlashAttn.ON
    if key in ("off", "disabled", "false", "0"):
        return FlashAttn.OFF
    if key in ("auto", "-1"):
        return FlashAttn.AUTO
    raise ValueError(f"expected on, off or auto, not {value!r}")


def _gpu_layers(value: object) -> int:
    """-ngl: a number of layers, auto (-1) or all (-2), as llama.cpp reads it."""
    key = str(value).strip().lower()
    if key == "auto":
        return -1
    if key == "all":
        return -2
    return parse_count(value, minimum=0)


def _spec_type(value: object) -> bool:
    """--spec-type TYPE[,TYPE]: whether llama-server runs an MTP draft context (draft-mtp)."""
    types = [t.strip().lower() for t in str(value).split(",") if t.strip()]
    if not types:
        raise ValueError("expected speculative types such as draft-mtp")
    return "draft-mtp" in types


def _overrides(value: object) -> tuple[tuple[str, str], ...]:
    """-ot PATTERN=BUFT[,PATTERN=BUFT...]: llama.cpp's tensor buffer overrides (regexes searched in tensor
    names; the buffer: CPU, or a device by index)."""
    import re

    out = []
    for item in str(value).split(","):
        pattern, eq, buft = item.partition("=")
        if not eq or not pattern or not buft:
            raise ValueError(f"expected PATTERN=BUFFER pairs such as 'exps=CPU', not {item!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression ({exc})") from None
        if "[" in buft:  # llama.cpp names an RPC device by its endpoint, not by its place among the GPUs
            raise ValueError(f"{buft!r}: name the GPU by its place instead, GPU0, GPU1, ... (or CUDA0, ...)")
        if buft.upper() != "CPU" and not re.match(r"^[A-Za-z]+(\d+)$", buft):
            raise ValueError(f"unknown buffer {buft!r}; expected CPU or a GPU such as CUDA0 or GPU1")
        out.append((pattern, buft))
    return tuple(out)


def _proportions(value: object) -> tuple[float, ...]:
    """-ts 3,1 (llama.cpp also splits on /): finite, non-negative; all zero is llama.cpp's default split (by each
    device's memory: load_tensors' all_zero), as none given."""
    items: list[object] = (
        list(value) if isinstance(value, (list, tuple)) else list(str(value).replace("/", ",").split(","))
    )
    out = []
    for item in items:
        try:
            x = float(item) if isinstance(item, (int, float, str)) and not isinstance(item, bool) else math.nan
        except (TypeError, ValueError):
            raise ValueError(f"expected proportions such as 3,1, not {value!r}") from None
        if not math.isfinite(x) or x < 0 or x > 1e6:
            raise ValueError(f"proportions must be finite numbers from 0 to 1e6, not {item!r}")
        out.append(x)
    if not out:
        raise ValueError(f"expected proportions such as 3,1, not {value!r}")
    return tuple(out)


def _backend(value: object) -> Backend:
    return Backend(_choice(tuple(b.value for b in Backend), "backend")(value))


def _sizes(value: object) -> tuple[int, ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    return tuple(parse_size(item) for item in items)


def _size0(value: object) -> int:
    return parse_size(value, allow_zero=True)


def _text(value: object) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise ValueError(f"expected text, not {value!r}")
    return str(value).strip()


def _gpu(value: object) -> str:
    if isinstance(value, str) and not value.strip():
        raise ValueError("empty; give a GPU preset such as RTX-4090 or H100-80GBx4 (`kvplan gpus` lists them)")
    return _text(value)


def _cache_types(value: object) -> bool:
    if str(value).strip().lower() != "auto":
        raise ValueError(f"the only value is auto, not {value!r}")
    return True


def _max_model_len(value: object) -> int | None:
    """vLLM's --max-model-len: tokens per sequence; -1 (or auto) = the longest that fits (vLLM's auto-fit)."""
    if str(value).strip().lower() in ("-1", "auto"):
        return None
    return parse_count(value, minimum=1)


def _headroom(value: object) -> float:
    return parse_fraction(value, allow_percent=True, upper_inclusive=False)


def _fraction(value: object) -> float:
    return parse_fraction(value)


# --- the settings table -----------------------------------------------------------------------------------

GROUPS = {
    "runtime": "Runtime",
    "llama.cpp": "llama.cpp (its own flags, meaning what they mean in llama.cpp)",
    "engine": "Serving engines (vLLM's flags; SGLang's and TensorRT-LLM's names as aliases)",
    "hardware": "Hardware",
    "weights": "Weights and overhead",
    "solver": "Solver",
    "budgets": "Budgets (exit 1 when one fails)",
}


@dataclass(frozen=True)
class Setting:
    """One setting: its flags, its deployments-file key, how it is parsed and which runtime reads it."""

    dest: str
    flags: tuple[str, ...]
    parse: Callable[[object], Any]
    help: str
    group: str
    metavar: str | None = "N"  # None: a switch
    key: str | None = ""  # deployments-file key ("" = dest; None: command line only)
    aliases: tuple[str, ...] = ()  # older or other file keys
    negate: tuple[str, ...] = ()  # flags that turn a switch off
    runtime: str | None = None  # "llama.cpp", "engine" or None (any)

    @property
    def file_key(self) -> str | None:
        return self.dest if self.key == "" else self.key

    @property
    def flag(self) -> str:
        """The canonical spelling: the first long flag."""
        return next((f for f in self.flags if f.startswith("--")), self.flags[0])


_LL, _EN = LLAMACPP, "engine"
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    Setting("engine", ("--engine",), canonical_runtime,
            f"{', '.join(runtime_names())} (any case); default llama.cpp", "runtime", "NAME"),
    # llama.cpp
    Setting("ctx_size", ("-c", "--ctx-size", "--ctx"), _count(0),
            "context size in tokens, shared by the -np sequences (llama.cpp's -c; 32k = 32768; 0 = the model's "
            "trained context)", "llama.cpp", runtime=_LL),
    Setting("ctx_per_seq", ("--ctx-per-seq",), _count(1),
            "tokens per sequence instead: llama.cpp's -c becomes N × -np", "llama.cpp", runtime=_LL),
    Setting("parallel", ("-np", "--parallel"), _count(1),
            "parallel sequences (n_seq_max, at most 256)", "llama.cpp", runtime=_LL),
    Setting("kv_unified", ("-kvu", "--kv-unified"), _switch,
            "one KV stream shared by all sequences", "llama.cpp", None, negate=("-no-kvu", "--no-kv-unified"),
            runtime=_LL),
    Setting("batch_size", ("-b", "--batch-size", "--batch"), _count(1),
            "logical batch size (n_batch; 2048)", "llama.cpp", aliases=("batch",), runtime=_LL),
    Setting("ubatch_size", ("-ub", "--ubatch-size", "--ubatch"), _count(1),
            "physical batch size (n_ubatch; 512)", "llama.cpp", aliases=("ubatch",), runtime=_LL),
    Setting("cache_type_k", ("-ctk", "--cache-type-k"), _cache_type,
            f"K cache type: {', '.join(LLAMA_CPP_CACHE_TYPES)} (f16)", "llama.cpp", "TYPE", runtime=_LL),
    Setting("cache_type_v", ("-ctv", "--cache-type-v"), _cache_type,
            "V cache type (same choices; f16)", "llama.cpp", "TYPE", runtime=_LL),
    Setting("flash_attn", ("-fa", "--flash-attn"), _flash_attn,
            "flash attention: on, off or auto (auto)", "llama.cpp", "on|off|auto", runtime=_LL),
    Setting("swa_full", ("--swa-full",), _switch,
            "full-size cache for sliding-window layers", "llama.cpp", None, runtime=_LL),
    Setting("rs_seq", ("--rs-seq",), _count(0),
            "recurrent-state snapshots kept for speculative rollback (n_rs_seq; 0)", "llama.cpp", runtime=_LL),
    Setting("n_gpu_layers", ("-ngl", "--n-gpu-layers", "--gpu-layers"), _gpu_layers,
            "layers on the GPUs: a number, auto or all (all); the rest, and their KV, stay in host memory",
            "llama.cpp", "N|auto|all", runtime=_LL),
    Setting("tensor_split", ("-ts", "--tensor-split"), _proportions,
            "layer split over the GPUs: 3,1 (default: by their memory)", "llama.cpp", "N0,N1,...", runtime=_LL),
    Setting("override_tensor", ("-ot", "--override-tensor"), _overrides,
            "tensors whose names match a regex go to a buffer: PATTERN=CPU (host memory) or =CUDA0 / GPU1 (a GPU "
            "by its place), comma-separated, first match wins (needs a GGUF)", "llama.cpp",
            "PATTERN=BUFT,...", runtime=_LL),
    Setting("cpu_moe", ("-cmoe", "--cpu-moe"), _switch,
            "keep every layer's MoE expert weights in host memory", "llama.cpp", None, runtime=_LL),
    Setting("n_cpu_moe", ("-ncmoe", "--n-cpu-moe"), _count(0),
            "keep the MoE expert weights of the first N layers in host memory", "llama.cpp", "N", runtime=_LL),
    Setting("no_kv_offload", ("-nkvo", "--no-kv-offload"), _switch,
            "keep the KV cache in host memory", "llama.cpp", None, negate=("-kvo", "--kv-offload"), runtime=_LL),
    Setting("backend", ("--backend",), _backend,
            "buffer rules: cuda (128-byte alignment, padded quantized rows) or cpu (verified); fit: cuda",
            "llama.cpp", "cuda|cpu", runtime=_LL),
    Setting("mtp", ("--mtp",), _switch,
            "also size the MTP draft context (nextn layers only)", "llama.cpp", None, runtime=_LL),
    Setting("spec_type", ("--spec-type",), _spec_type,
            "llama-server's speculative types: draft-mtp is --mtp; the others need no memory of their own",
            "llama.cpp", "TYPES", key=None, runtime=_LL),
    Setting("model_draft", ("-md", "--model-draft", "--spec-draft-model"), _text,
            "a draft model for speculative decoding (a GGUF or any model input): its weights and its own KV "
            "cache at the main context and -np, on the same GPUs", "llama.cpp", "MODEL", runtime=_LL),
    Setting("gpu_layers_draft", ("-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft", "--spec-draft-ngl"),
            _gpu_layers, "the draft model's layers on the GPUs: a number, auto or all (all)", "llama.cpp",
            "N|auto|all", runtime=_LL),
    Setting("cache_type_k_draft", ("-ctkd", "--cache-type-k-draft", "--spec-draft-type-k"), _cache_type,
            "the draft's K cache type (-md or --mtp; f16)", "llama.cpp", "TYPE", runtime=_LL),
    Setting("cache_type_v_draft", ("-ctvd", "--cache-type-v-draft", "--spec-draft-type-v"), _cache_type,
            "the draft's V cache type (-md or --mtp; f16)", "llama.cpp", "TYPE", runtime=_LL),
    # serving engines
    Setting("max_model_len", ("--max-model-len", "--context-length", "--max_seq_len"), _max_model_len,
            "tokens per sequence; -1 = the longest that fits, as vLLM's auto-fit (SGLang --context-length, "
            "TensorRT-LLM --max_seq_len)", "engine", runtime=_EN),
    Setting("max_num_seqs", ("--max-num-seqs", "--max-running-requests", "--max_batch_size"), _count(1),
            "sequences that must fit at once (SGLang --max-running-requests, TensorRT-LLM --max_batch_size)",
            "engine", runtime=_EN),
    Setting("tensor_parallel_size", ("-tp", "--tensor-parallel-size", "--tp-size", "--tp_size", "--tp"),
            _count(1), "tensor parallel size (1)", "engine", aliases=("tp",), runtime=_EN),
    Setting("pipeline_parallel_size", ("-pp", "--pipeline-parallel-size", "--pp-size", "--pp_size", "--pp"),
            _count(1), "pipeline parallel size (1)", "engine", aliases=("pp",), runtime=_EN),
    Setting("kv_cache_dtype", ("--kv-cache-dtype",), _choice(tuple(CACHE_DTYPE_BYTES), "KV cache dtype"),
            "auto (the checkpoint's bf16), fp8, fp8_e4m3, fp8_e5m2, bf16, fp16", "engine", "DTYPE", runtime=_EN),
    Setting("block_size", ("--block-size", "--page-size", "--tokens_per_block"), _count(1),
            "tokens per block / page (default: the engine's choice for the model and GPU)", "engine", runtime=_EN),
    Setting("gpu_memory_utilization", ("--gpu-memory-utilization",), _fraction,
            "vLLM's memory share (0.92)", "engine", "FRACTION", runtime=_EN),
    Setting("mem_fraction_static", ("--mem-fraction-static",), _fraction,
            "SGLang's memory share (default: its heuristic)", "engine", "FRACTION", runtime=_EN),
    Setting("free_gpu_memory_fraction",
            ("--free-gpu-memory-fraction", "--kv_cache_free_gpu_memory_fraction", "--free_gpu_memory_fraction"),
            _fraction, "TensorRT-LLM's share of the free memory (0.9)", "engine", "FRACTION", runtime=_EN),
    Setting("max_num_batched_tokens", ("--max-num-batched-tokens",), _count(1),
            "vLLM: tokens per step (default: 8192 on GPUs of 70 GiB or more but A100, else 2048)", "engine",
            runtime=_EN),
    Setting("disable_hybrid_kv_cache_manager", ("--disable-hybrid-kv-cache-manager",), _switch,
            "vLLM: full-length KV for sliding-window layers too", "engine", None, runtime=_EN),
    Setting("kv_cache_memory_bytes", ("--kv-cache-memory-bytes",), parse_size,
            "vLLM: the KV cache budget per GPU (bypasses --gpu-memory-utilization; the answer needs no "
            "weight or overhead estimate)", "engine", "SIZE", runtime=_EN),
    Setting("enable_prefix_caching", ("--enable-prefix-caching",), _switch,
            "prefix caching, on by default (SGLang: --disable-radix-cache); hybrids keep 2–5 state slots per "
            "request with it", "engine", None, negate=("--no-enable-prefix-caching", "--disable-radix-cache"),
            runtime=_EN),
    Setting("mamba_ssm_cache_dtype", ("--mamba-ssm-cache-dtype",), _choice(SSM_DTYPES, "Mamba SSM cache dtype"),
            "vLLM: the recurrent state's dtype: auto (the model's), float32, bfloat16, float16", "engine", "DTYPE",
            runtime=_EN),
    # hardware
    Setting("gpu", ("--gpu",), _gpu,
            "a GPU preset, optionally ×N: H100-80GB, RTX-4090x2 (see `kvplan gpus`)", "hardware", "NAME[xN]"),
    Setting("memory", ("--memory",), _sizes,
            "memory per GPU instead: 24GiB or 24GiB,24GiB", "hardware", "SIZE[,SIZE]"),
    Setting("gpus_file", ("--gpus-file",), _text,
            "a YAML file of NAME: memory entries extending the GPU presets", "hardware", "FILE", key=None),
    # weights
    Setting("weights", ("--weights",), weight_type,
            "weight type for an estimate: q4_k_m, q8_0, bf16, fp8, awq, …", "weights", "TYPE"),
    Setting("weight_bytes", ("--weight-bytes",), parse_size,
            "total weight bytes instead: 18.5GiB", "weights", "SIZE"),
    Setting("params", ("--params",), parse_params,
            "parameter count for the estimate: 32B, 7.6B, 8.03e9", "weights", "N"),
    Setting("overhead", ("--overhead",), _size0,
            "memory per GPU besides weights and KV (default: an estimate, labelled as one)", "weights", "SIZE"),
    # solver
    Setting("cache_types", ("--cache-types",), _cache_types,
            "auto: the least lossy cache types that fit", "solver", "auto"),
    # budgets
    Setting("max_kv", ("--max-kv",), parse_size,
            "KV / state bytes at most this", "budgets", "SIZE", key="budgets.max_kv"),
    Setting("max_total", ("--max-total",), parse_size,
            "weights + KV + overhead at most this", "budgets", "SIZE", key="budgets.max_total"),
    Setting("min_ctx", ("--min-ctx",), _count(1),
            "each sequence gets at least this many tokens", "budgets", "N", key="budgets.min_ctx"),
    Setting("min_parallel", ("--min-parallel",), _count(1),
            "at least this many sequences fit", "budgets", "N", key="budgets.min_parallel"),
    Setting("headroom", ("--headroom",), _headroom,
            "free share kept on every GPU (engines: of the KV pool), e.g. 10%", "budgets", "SHARE",
            key="budgets.headroom"),
)
# fmt: on
SETTINGS_BY_DEST: dict[str, Setting] = {s.dest: s for s in SETTINGS}
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
