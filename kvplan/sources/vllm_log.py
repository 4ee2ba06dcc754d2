"""A vLLM startup log (`vllm serve`, the LLM class) read for what it states about the model, the settings and the
KV cache — the vLLM half of `kvplan explain`'s input.

Lines are matched wherever they sit in a line, so any prefix works (`INFO 07-06 22:52:09 [gpu_worker.py:508]`,
`(EngineCore_DP0 pid=107)`, docker's and journald's timestamps, ANSI colours). vLLM's own words are matched:
the engine's config line (`Initializing a V1 LLM engine (v0.x) with config: model='…', …`; V0's `Initializing an
LLM engine`), the `non-default args: {…}` dump, `Available KV cache memory: X GiB`, `GPU KV cache size: N tokens`,
`Maximum concurrency for M tokens per request: C x`, V0's and early V1's `# GPU blocks: N`, the memory
profile's `total_gpu_memory (X GiB) x gpu_memory_utilization (U)`, and the refusals: V0's (`… larger than the
maximum number of tokens that can be stored in KV cache (N)`) and V1's (`To serve at least one request with the
model's max seq len (N), (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB).
Based on the available memory, the estimated maximum model length is M.`, also as a terminal or an issue wrapped
it over a few lines). A file with several runs keeps the last."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: a run begins: the API server's banner or the engine's config line
_VERSION = re.compile(r"vLLM API server version (\S+)")
_ENGINE = re.compile(r"Initializing an? (?:V1 )?LLM engine \(v([^)\s]+)\) with config: (.*)$")
_NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")
_AVAILABLE = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_BLOCKS = re.compile(r"(?:# )?(?:GPU|cuda) blocks: (\d+)")
_TOTAL = re.compile(r"total_gpu_memory \(([\d.]+) ?GiB\) x gpu_memory_utilization \(([\d.]+)\)")
_V0_PROFILE = re.compile(r"total_gpu_memory=([\d.]+)GiB .*gpu_memory_utilization=([\d.]+)")
_V0_KV = re.compile(r"kv_cache_size=([\d.]+)GiB")
#: V0's refusal: the KV cache holds fewer tokens (blocks × block size) than one request of the max seq len
_V0_REFUSAL = re.compile(
    r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)"
)
#: V1's refusal (vLLM check_enough_kv_cache_memory; "model's" / 0.6-0.10's "models's"; 0.33 prints GiB by
#: format_gib, "16.0", older builds "16.00")
_V1_REFUSAL = re.compile(
    r"max seq len \((\d+)\),?\s*\(?([\d.]+) GiB (?:KV cache )?is needed, which is larger than the available KV cache "
    r"memory \(([\d.]+) GiB\)"
)
_ESTIMATE = re.compile(r"estimated maximum model length is (\d+)")
#: V1's refusal wrapped over lines: how many lines (and characters) of it are joined at most
_REFUSAL_LINES, _REFUSAL_CHARS = 5, 4096
#: what a quoted paste puts before each line (Markdown's ">", a quote bar)
_QUOTE = "▎>│| \t"
_COMMAND = re.compile(r"(?:^|[\s$>])vllm serve (.*)$")
#: a pasted `vllm serve` line's flags kvplan reads, under vLLM's argument names
_FLAGS = {"--tensor-parallel-size": "tensor_parallel_size", "-tp": "tensor_parallel_size",
          "--pipeline-parallel-size": "pipeline_parallel_size", "-pp": "pipeline_parallel_size",
          "--max-model-len": "max_model_len", "--kv-cache-dtype": "kv_cache_dtype",
          "--gpu-memory-utilization": "gpu_memory_utilization", "--block-size": "block_size",
          "--max-num-seqs": "max_num_seqs", "--max-num-batched-tokens": "max_num_batched_tokens"}  # fmt: skip
#: the engine config line's settings kvplan re-plans with (their values as vLLM prints them)
_CONFIG_KEYS = {
    "model": r"model='([^']*)'",
    "max_seq_len": r"max_seq_len=(\d+)",
    "tensor_parallel_size": r"tensor_parallel_size=(\d+)",
    "pipeline_parallel_size": r"pipeline_parallel_size=(\d+)",
    "kv_cache_dtype": r"kv_cache_dtype=([\w.]+)",
    "quantization": r"quantization=([\w-]+)",
    "dtype": r"dtype=([\w.]+)",
    "enable_prefix_caching": r"enable_prefix_caching=(\w+)",
}
#: non-default args kvplan reads (vLLM's own argument names)
_ARG_KEYS = (
    "model",
    "model_tag",
    "max_model_len",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "block_size",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_prefix_caching",
    "kv_cache_memory_bytes",
    "quantization",
    "mamba_ssm_cache_dtype",
    "disable_hybrid_kv_cache_manager",
)


@dataclass
class VllmLog:
    """What one vLLM run printed at startup (figures as printed; None where the log does not print them)."""

    version: str = ""
    config: dict[str, str] = field(default_factory=dict)  # the engine config line's settings
    args: dict[str, str] = field(default_factory=dict)  # the non-default args kvplan reads, as text
    available_gib: str | None = None  # "Available KV cache memory: X GiB" (rank 0's)
    kv_tokens: int | None = None  # "GPU KV cache size: N tokens"
    concurrency: str | None = None  # "Maximum concurrency for M tokens per request: C x": C as printed
    concurrency_len: int | None = None  # M
    gpu_blocks: int | None = None  # "# GPU blocks: N" (V0, early V1)
    stored_tokens: int | None = None  # V0's refusal: "…tokens that can be stored in KV cache (N)" (blocks × size)
    refused_len: int | None = None  # … and the max seq len it refused
    needed_gib: str | None = None  # V1's refusal: the KV memory one request of the max seq len needs, as printed
    refusal_available_gib: str | None = None  # … the memory it had (0.33: less the one block the pool holds back)
    estimated_len: int | None = None  # … and "the estimated maximum model length is M" (absent where none fits)
    refusal_text: str = ""  # a V1 refusal's lines joined while it is read (wrapped pastes)
    refusal_lines: int = 0
    total_gib: str | None = None  # the memory profile's total GPU memory
    utilization: str | None = None  # … and its gpu_memory_utilization
    command: dict[str, str] = field(default_factory=dict)  # a pasted `vllm serve` line's flags
    runs: int = 0
    command_continues: bool = False  # the pasted command's line ended in a backslash

    @property
    def found(self) -> bool:
        figures = (self.kv_tokens, self.gpu_blocks, self.stored_tokens, self.available_gib, self.needed_gib)
        return any(f is not None for f in figures)

    @property
    def model(self) -> str:
        named = self.args.get("model") or self.args.get("model_tag") or self.config.get("model")
        return named or self.command.get("model", "")

    def setting(self, name: str) -> str | None:
        """A setting as the run states it: its non-default arg, else the engine config line's (for max_model_len
        the config line's first: it is the length vLLM settled on, where the arg may be -1, auto-fit)."""
        if name == "max_model_len" and self.config.get("max_seq_len"):
            return self.config["max_seq_len"]
        if name in self.args:
            return self.args[name]
        if name == "max_model_len":
            found = self.config.get("max_seq_len") or self.command.get(name)
            stated = self.concurrency_len or self.refused_len
            return found or (str(stated) if stated else None)
        return self.config.get(name) or self.command.get(name)


def _number(s: str) -> int:
    return int(s.replace(",", ""))


def _args(text: str) -> dict[str, str]:
    """The non-default args kvplan reads from vLLM's dict dump (a Python literal; anything else is skipped)."""
    try:
        value: Any = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: str(value[k]) for k in _ARG_KEYS if k in value and isinstance(value[k], (str, int, float, bool))}


def _command(text: str) -> dict[str, str]:
    """The flags kvplan reads from a pasted `vllm serve MODEL --flag value …` line (``--flag=value`` and vLLM's
    underscore spellings too)."""
    words = text.replace("\\", " ").split()
    out: dict[str, str] = {}
    if words and not words[0].startswith("-"):
        out["model"] = words[0]
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        dest = _FLAGS.get(flag.replace("_", "-")) if flag.startswith("-") else None
        if dest is None:
            continue
        if not value and i + 1 < len(words):
            value = words[i + 1]
        if value and not value.startswith("--"):
            out[dest] = value
    return out


def take(log: VllmLog, line: str) -> VllmLog:
    """One line's figure, where it states one; a line that begins a new run starts a fresh log (returned)."""
    if "vLLM API server version" in line and (m := _VERSION.search(line)):
        return VllmLog(version=m.group(1), runs=log.runs + 1)
    if "LLM engine (v" in line and (m := _ENGINE.search(line)):
        if log.config or log.kv_tokens is not None or log.gpu_blocks is not None:  # a second engine: a new run
            log = VllmLog(runs=log.runs + 1)
        log.runs = log.runs or 1
        log.version = m.group(1)
        log.config = {k: v.group(1) for k, p in _CONFIG_KEYS.items() if (v := re.search(p, m.group(2)))}
        return log
    if "vllm serve " in line and (m := _COMMAND.search(line)):
        log.command = _command(m.group(1))
        log.command_continues = line.rstrip().endswith("\\")
    elif log.command_continues:  # the pasted command goes on (a shell line continuation)
        log.command.update({k: v for k, v in _command("- " + line).items() if k != "model"})
        log.command_continues = line.rstrip().endswith("\\")
    if "To serve at least one request" in line or log.refusal_text:
        _v1_refusal(log, line)
    for marker, pattern, store in _FIGURES:  # a line may state several (0.33: tokens and concurrency in one)
        if marker in line and (m := pattern.search(line)):
            store(log, m)
    return log


def _profile(log: VllmLog, m: re.Match[str]) -> None:
    log.total_gib, log.utilization = m.group(1), m.group(2)
    if kv := _V0_KV.search(m.string):  # V0's memory profile states the KV memory there
        log.available_gib = kv.group(1)


def _set(name: str, convert: Callable[[str], object] = str) -> Callable[[VllmLog, re.Match[str]], None]:
    return lambda log, m: setattr(log, name, convert(m.group(1)))


def _concurrency(log: VllmLog, m: re.Match[str]) -> None:
    log.concurrency_len, log.concurrency = _number(m.group(1)), m.group(2)


def _v1_refusal(log: VllmLog, line: str) -> None:
    """V1's refusal, read from its first line and from up to a few more where it was wrapped."""
    if "To serve at least one request" in line:
        log.refusal_text, log.refusal_lines = "", 0
    part = line.strip().lstrip(_QUOTE) if log.refusal_text else line.strip()  # a continuation as a reply quotes it
    log.refusal_text = f"{log.refusal_text} {part}".strip()[:_REFUSAL_CHARS]
    log.refusal_lines += 1
    if m := _V1_REFUSAL.search(log.refusal_text):
        log.refused_len, log.needed_gib, log.refusal_available_gib = int(m.group(1)), m.group(2), m.group(3)
        if e := _ESTIMATE.search(log.refusal_text):
            log.estimated_len = int(e.group(1))
    if log.estimated_len is not None or "Try increasing" in log.refusal_text or log.refusal_lines >= _REFUSAL_LINES:
        log.refusal_text, log.refusal_lines = "", 0


def _refusal(log: VllmLog, m: re.Match[str]) -> None:
    log.refused_len, log.stored_tokens = int(m.group(1)), int(m.group(2))


#: (a word the line has, its pattern, where its figure goes)
_FIGURES: tuple[tuple[str, re.Pattern[str], Callable[[VllmLog, re.Match[str]], None]], ...] = (
    ("non-default args", _NON_DEFAULT, lambda log, m: setattr(log, "args", _args(m.group(1)))),
    ("Available KV cache memory", _AVAILABLE, _set("available_gib")),
    ("GPU KV cache size", _TOKENS, _set("kv_tokens", _number)),
    ("Maximum concurrency", _CONCURRENCY, _concurrency),
    ("stored in KV cache", _V0_REFUSAL, _refusal),
    ("blocks:", _BLOCKS, _set("gpu_blocks", int)),
    ("total_gpu_memory", _TOTAL, _profile),
    ("total_gpu_memory", _V0_PROFILE, _profile),
)
