"""An SGLang startup log (`python -m sglang.launch_server`, `sglang serve`, the Engine) read for what it states
about the model, the settings and the KV pool — the SGLang part of `kvplan explain`'s input.

Lines are matched wherever they sit in a line, so any prefix works (`[2025-07-22 10:00:00 TP0]`, docker's and
journald's timestamps, ANSI colours). SGLang's own words are matched: the `server_args=` dump (0.5's dict, older
`ServerArgs(…)` reprs), a pasted `launch_server` / `sglang serve` command, `Load weight begin/end` (free memory
before and after the weights), `KV Cache is allocated. … #tokens: N, K size: X GB, V size: Y GB` (or MLA's
`KV size`), `Use sliding window memory pool. full_layer_tokens=…, swa_layer_tokens=…`, `Mamba Cache is
allocated. max_mamba_cache_size: N, …` and the scheduler's `max_total_num_tokens=…, max_running_requests=…,
context_len=…` line. With several tensor-parallel ranks in one log, rank 0's lines are read (a line that names no
rank counts as rank 0). A file with several runs keeps the last. SGLang's "GB" is 2^30 bytes."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

_SERVER_ARGS = re.compile(r"server_args=(?:ServerArgs\()?(.*)$")
_RANK = re.compile(r"\bTP(\d+)\b")
_COMMAND = re.compile(r"(?:sglang\.launch_server|sglang serve)\b(.*)$")
_LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=([\d.]+) GB")
_LOAD_END = re.compile(r"Load weight end\..*?type=(\w+).*?avail mem=([\d.]+) GB, mem usage=([\d.]+) GB")
_KV = re.compile(r"(?:(\w+) )?KV Cache is allocated\.(?: dtype: ([\w.]+),)? #tokens: (\d+), "
                 r"(?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)")  # fmt: skip
_SWA = re.compile(r"Use sliding window memory pool\. full_layer_tokens=(\d+), swa_layer_tokens=(\d+)")
_MAMBA = re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+), conv_state size: ([\d.]+) ?GB, "
                    r"ssm_state size: ([\d.]+) ?GB")  # fmt: skip
_SUMMARY = re.compile(r"max_total_num_tokens=(\d+), chunked_prefill_size=(-?\d+), max_prefill_tokens=(\d+), "
                      r"max_running_requests=(\d+), context_len=(\d+)(?:, available_gpu_mem=([\d.]+) GB)?")  # fmt: skip
#: server arguments kvplan reads (SGLang's own names)
ARG_KEYS = ("model_path", "tp_size", "pp_size", "dp_size", "mem_fraction_static", "context_length",
            "kv_cache_dtype", "page_size", "max_running_requests", "max_total_tokens", "chunked_prefill_size",
            "disable_radix_cache", "dtype", "quantization", "attention_backend", "enable_dp_attention",
            "swa_full_tokens_ratio", "max_mamba_cache_size", "disable_overlap_schedule",
            "max_prefill_tokens")  # fmt: skip
#: a pasted command's flags kvplan reads, under SGLang's argument names
_FLAGS = {"--model-path": "model_path", "--model": "model_path", "--tp": "tp_size", "--tp-size": "tp_size",
          "--tensor-parallel-size": "tp_size", "--pp": "pp_size", "--pp-size": "pp_size", "--dp": "dp_size",
          "--dp-size": "dp_size", "--mem-fraction-static": "mem_fraction_static",
          "--context-length": "context_length", "--kv-cache-dtype": "kv_cache_dtype", "--page-size": "page_size",
          "--max-running-requests": "max_running_requests", "--max-total-tokens": "max_total_tokens",
          "--chunked-prefill-size": "chunked_prefill_size", "--dtype": "dtype",
          "--quantization": "quantization", "--swa-full-tokens-ratio": "swa_full_tokens_ratio",
          "--max-mamba-cache-size": "max_mamba_cache_size", "--max-prefill-tokens": "max_prefill_tokens"}  # fmt: skip
_SWITCHES = {"--disable-radix-cache": "disable_radix_cache", "--enable-dp-attention": "enable_dp_attention",
             "--disable-overlap-schedule": "disable_overlap_schedule"}  # fmt: skip
#: one value as SGLang prints it in its argument dump: a quoted string, or a bare token
_VALUE = r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,)}\s]+)"
_ARG_PATTERNS = {k: re.compile(rf"(?:'{k}': |\b{k}=){_VALUE}") for k in ARG_KEYS}


@dataclass(frozen=True)
class KvPool:
    """One `KV Cache is allocated` line: the pool's label (SWA pools name themselves), its tokens and sizes."""

    label: str
    tokens: int
    k_gb: str | None  # as printed (2^30 bytes, two decimals); None for MLA's single KV size
    v_gb: str | None
    kv_gb: str | None
    dtype: str


@dataclass
class SglangLog:
    """What one SGLang run printed at startup (figures as printed; None where the log does not print them)."""

    args: dict[str, str] = field(default_factory=dict)  # server_args kvplan reads, as text
    command: dict[str, str] = field(default_factory=dict)  # a pasted launch command's flags
    load_begin_gb: str | None = None  # free memory before the weights
    load_end_gb: str | None = None  # … after them
    weights_gb: str | None = None  # "mem usage" of the weights
    model_class: str = ""
    pools: list[KvPool] = field(default_factory=list)
    full_tokens: int | None = None  # "Use sliding window memory pool": full_layer_tokens
    swa_tokens: int | None = None  # … swa_layer_tokens
    mamba_slots: int | None = None  # "Mamba Cache is allocated": max_mamba_cache_size
    conv_gb: str | None = None
    ssm_gb: str | None = None
    max_total_tokens: int | None = None  # the scheduler's line
    chunked_prefill: int | None = None
    max_prefill_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    runs: int = 0

    @property
    def found(self) -> bool:
        return bool(self.pools) or self.max_total_tokens is not None

    @property
    def model(self) -> str:
        return self.args.get("model_path") or self.command.get("model_path", "")

    def setting(self, name: str) -> str | None:
        """A server argument as the run states it (its dump, else a pasted command); None where unstated or
        SGLang's None."""
        value = self.args.get(name, self.command.get(name))
        return None if value in (None, "None", "", "null") else value


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _server_args(text: str) -> dict[str, str]:
    """The arguments kvplan reads from SGLang's dump, each matched on its own (values SGLang prints as objects
    or enums are text kvplan does not read)."""
    return {k: _unquote(m.group(1)) for k, p in _ARG_PATTERNS.items() if (m := p.search(text))}


def _command(text: str) -> dict[str, str]:
    """The flags kvplan reads from a pasted `python -m sglang.launch_server --model-path M --tp 4 …` line
    (``--flag=value`` and underscore spellings too)."""
    words = text.replace("\\", " ").split()
    out: dict[str, str] = {}
    for i, word in enumerate(words):
        flag, _, value = word.replace("_", "-").partition("=")
        if flag in _SWITCHES:
            out[_SWITCHES[flag]] = "True"
            continue
        dest = _FLAGS.get(flag)
        if dest is None:
            continue
        value = word.partition("=")[2]
        if not value and i + 1 < len(words):
            value = words[i + 1]
        if value and not value.startswith("--"):
            out[dest] = value
    return out


def take(log: SglangLog, line: str) -> SglangLog:
    """One line's figure, where it states one; the server_args line begins a run (a fresh log is returned).
    Every line of any log comes here: only one with SGLang's words is searched further (its rank first)."""
    if "server_args=" in line and (m := _SERVER_ARGS.search(line)) and _rank_zero(line):
        fresh = SglangLog(args=_server_args(m.group(1)), runs=log.runs + 1)
        fresh.command = log.command if not log.found else {}
        return fresh
    if ("sglang.launch_server" in line or "sglang serve" in line) and (m := _COMMAND.search(line)) and _rank_zero(line):
        log.command = _command(m.group(1))
    for marker, pattern, store in _FIGURES:
        if marker in line and (m := pattern.search(line)) and _rank_zero(line):
            store(log, m)
            log.runs = log.runs or 1
    return log


def _rank_zero(line: str) -> bool:
    """The line is rank 0's, or names no tensor-parallel rank."""
    m = _RANK.search(line)
    return m is None or m.group(1) == "0"


def _load_end(log: SglangLog, m: re.Match[str]) -> None:
    log.model_class, log.load_end_gb, log.weights_gb = m.group(1), m.group(2), m.group(3)


def _kv(log: SglangLog, m: re.Match[str]) -> None:
    label, dtype, tokens, k, v, kv = m.groups()
    log.pools.append(KvPool(label or "", int(tokens), k, v, kv, (dtype or "").removeprefix("torch.")))


def _swa(log: SglangLog, m: re.Match[str]) -> None:
    log.full_tokens, log.swa_tokens = int(m.group(1)), int(m.group(2))


def _mamba(log: SglangLog, m: re.Match[str]) -> None:
    log.mamba_slots, log.conv_gb, log.ssm_gb = int(m.group(1)), m.group(2), m.group(3)


def _summary(log: SglangLog, m: re.Match[str]) -> None:
    log.max_total_tokens, log.chunked_prefill = int(m.group(1)), int(m.group(2))
    log.max_prefill_tokens, log.max_running_requests = int(m.group(3)), int(m.group(4))
    log.context_len = int(m.group(5))


def _set(name: str) -> Callable[[SglangLog, re.Match[str]], None]:
    return lambda log, m: setattr(log, name, m.group(1))


#: (a word the line has, its pattern, where its figures go)
_FIGURES: tuple[tuple[str, re.Pattern[str], Callable[[SglangLog, re.Match[str]], None]], ...] = (
    ("Load weight begin", _LOAD_BEGIN, _set("load_begin_gb")),
    ("Load weight end", _LOAD_END, _load_end),
    ("KV Cache is allocated", _KV, _kv),
    ("sliding window memory pool", _SWA, _swa),
    ("Mamba Cache is allocated", _MAMBA, _mamba),
    ("max_total_num_tokens=", _SUMMARY, _summary),
)
