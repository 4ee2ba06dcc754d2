"""A llama.cpp startup log (llama-server, llama-cli, llama-completion) read for what it states about the model, the
context and its memory — the input of `kvplan explain` (issue 25; this module is its first part).

The lines are matched wherever they sit in a line, so any logging prefix works (llama.cpp's own `0.00.909.646 I `,
journald's, docker's timestamps, ANSI colours); a file is read as a stream of lines of at most MAX_LINE bytes
(longer lines are cut there), so memory stays bounded whatever its size. A file holding several runs keeps the
last one (`runs` says how many began). Figures are kept as printed — MiB to two decimals — since that is all a log
states; kvplan's bytes are compared at that precision."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from kvplan.errors import BadInputError
from kvplan.sources.files import NotRegularFile, open_regular
from kvplan.sources.sglang_log import SglangLog
from kvplan.sources.sglang_log import take as take_sglang
from kvplan.sources.vllm_log import VllmLog
from kvplan.sources.vllm_log import take as take_vllm

MAX_LINE = 64 << 10  # a startup line is under 200 bytes; a log line past this is cut
MAX_FILE = 4 << 30  # what is read at most (a server's log grows with every request)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: a log names at most this many devices and layers (llama.cpp's own limits are far below)
MAX_DEVICES, MAX_LAYERS = 256, 1 << 16
#: a run's first model line (a fit's trial loads print none)
_RUN_START = "print_info: file format"
_PRINT_INFO = re.compile(r"print_info: ([A-Za-z_][\w .]*?)\s*= (.*)$")
_CONTEXT = re.compile(r"llama_context: (\w+)\s+= (\S+)")
#: who prints a buffer's size (llama_kv_cache_unified: 2025's builds)
_BUFFER_SOURCES = (
    "load_tensors|llama_kv_cache_unified|llama_kv_cache|llama_context|sched_reserve|llama_memory_recurrent"
)
_BUFFER = re.compile(rf"({_BUFFER_SOURCES}):\s+"
                     r"(\S+)\s+(model|KV|output|compute|RS) buffer size =\s+([\d.]+) MiB")  # fmt: skip
_KV = re.compile(
    r"llama_kv_cache(?:_unified)?: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+)/(\d+) seqs\), "
    r"K \((\w+)\):\s+([\d.]+) MiB, V \((\w+)\):\s+([\d.]+) MiB"
)
#: llama_context's settings under the names older builds printed (2025: n_ctx_per_seq)
_RENAMED = {"n_ctx_per_seq": "n_ctx_seq"}
_RS = re.compile(
    r"llama_memory_recurrent: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+) seqs\s+(\d+) rs_seq\), "
    r"R \((\w+)\):\s+([\d.]+) MiB, S \((\w+)\):\s+([\d.]+) MiB(?:, P \((\w+)\):\s+([\d.]+) MiB)?"
)
_ISWA = re.compile(r"creating\s+(non-SWA|SWA) KV cache, size = (\d+) cells")
#: the build: "build: 1234 (abcdef0)", "build = …", 2026's "common_params_print_info: build 1234 (abcdef0)",
#: "build_info: b1234-abcdef0"
_BUILD = re.compile(r"\bbuild(?:: | = | )(\d+) \(([0-9a-f]+)\)|\bbuild_info: b(\d+)-([0-9a-f]+)")
_LOADED = re.compile(r"llama_model_loader: loaded meta data with .* tensors from (.+?) \(version ")
#: one key of the loader's metadata dump: `- kv  7:  gemma3.context_length u32  = 32768` (values cut at 40 characters)
_LOADER_KV = re.compile(r"llama_model_loader: - kv\s+\d+:\s+(\S+)\s+(\S+)\s+= (.*)$")
#: the most metadata keys kept from one dump (a GGUF has a few dozen)
MAX_KEYS = 4096
_OFFLOADED = re.compile(r"load_tensors: offloaded (\d+)/(\d+) layers to GPU")
#: a device llama.cpp loads onto: its name, description (an RPC server's endpoint) and the free memory it reports
_DEVICE = re.compile(r"using device (\S+) \(([^)]*)\)(?: \([^)]*\))? - (\d+) MiB free")
_ASSIGNED = re.compile(r"load_tensors: layer\s+(\d+) assigned to device (\S+?),")
#: llama.cpp's fit (common_fit_params), printed before the model loads
#: a buffer llama.cpp could not allocate (alloc_tensor_range), and what it was for (llama_init_from_model)
_FAILED = re.compile(r"failed to allocate (\S+) buffer of size (\d+)")
_INIT_FAILED = re.compile(r"failed to initialize the context: (.+?)\s*$")
_FIT_REDUCED = re.compile(r"context size reduced from (\d+) to (\d+)")
_FIT_TARGET = re.compile(r"common_params_fit_impl:\s+- (\S+) \(([^)]*)\):\s+(\d+) total,.* vs\. target of\s+(\d+)")
_FIT_MEET = re.compile(r"cannot meet free memory target of (\d+) MiB")
_FIT_DONE = re.compile(r"common_fit_params: (successfully fit params to free device memory|failed to fit params to "
                       r"free device memory: (.*))$")  # fmt: skip


@dataclass(frozen=True)
class LoggedBuffer:
    """One `... buffer size = X MiB` line: who printed it, the buffer type (CPU, CUDA0, CUDA_Host, CPU_Mapped …),
    what it holds (model, KV, output, compute, RS) and its size as printed."""

    source: str
    buffer: str
    kind: str
    mib: str


@dataclass(frozen=True)
class LoggedDevice:
    """One `using device NAME (DESCRIPTION) - X MiB free` line: a device llama.cpp places layers on."""

    name: str  # CUDA0, RPC1, Vulkan0 …
    description: str  # the GPU's name; an RPC server's endpoint
    free_mib: int


@dataclass
class LoggedFit:
    """What llama.cpp's fit (`--fit on`, llama.cpp's default) printed before the model loaded."""

    reduced: tuple[int, int] | None = None  # "context size reduced from A to B"
    full_ctx_asked: bool = False  # "user has requested full context size of N -> no change" (-c 0)
    targets_mib: dict[str, int] = field(default_factory=dict)  # free-memory target (-fitt) by device ("": all)
    outcome: str = ""  # "success", or llama.cpp's reason for giving up


@dataclass(frozen=True)
class LoggedCache:
    """One `llama_kv_cache: size = …` line: a KV cache as llama.cpp reports it (cells per stream)."""

    mib: str
    cells: int
    layers: int
    seqs: int
    seqs_max: int
    type_k: str
    k_mib: str
    type_v: str
    v_mib: str


@dataclass(frozen=True)
class LoggedState:
    """One `llama_memory_recurrent: size = …` line: the recurrent state (rows per sequence; `layers` is the model's
    layer count as llama.cpp prints it, not the recurrent layers')."""

    mib: str
    cells: int
    layers: int
    seqs: int
    rs_seq: int
    type_r: str
    r_mib: str
    type_s: str
    s_mib: str
    p_mib: str  # the PLE history rows ("" where the build prints none)


@dataclass
class LlamaCppLog:
    """What one run of llama.cpp printed at startup."""

    build: str = ""  # "1234 (abcdef0)" where the log names its build
    model: dict[str, str] = field(default_factory=dict)  # print_info: key → value as printed
    context: dict[str, str] = field(default_factory=dict)  # llama_context's settings block
    buffers: list[LoggedBuffer] = field(default_factory=list)
    caches: list[LoggedCache] = field(default_factory=list)
    states: list[LoggedState] = field(default_factory=list)
    runs: int = 0  # runs that began in the file (the last is kept)
    model_path: str = ""  # the file llama.cpp loaded, as the log names it
    swa_full: bool = False  # "using full-size SWA cache"
    #: "creating non-SWA / SWA KV cache, size = N cells" (an iSWA model's two caches, as created)
    iswa_cells: dict[str, int] = field(default_factory=dict)
    offloaded: tuple[int, int] | None = None  # layers offloaded / offloadable (printed on CPU-only builds too)
    devices: list[LoggedDevice] = field(default_factory=list)
    layer_devices: dict[int, str] = field(default_factory=dict)  # "layer N assigned to device X" (-v)
    fit: LoggedFit | None = None  # llama.cpp's fit, where it ran
    #: the loader's metadata dump: GGUF key → (its type as printed: u32, str, arr[i32,40] …, its value as printed)
    metadata: dict[str, tuple[str, str]] = field(default_factory=dict)
    failed: tuple[str, int] | None = None  # a buffer llama.cpp could not allocate: its type (CUDA0 …) and bytes
    failure: str = ""  # why the context was not created ("failed to allocate buffer for kv cache")

    def setting(self, key: str) -> int | None:
        """An integer setting of llama_context's block (n_ctx, n_seq_max, n_batch …), None when not printed."""
        v = self.context.get(key)
        return int(v) if v is not None and v.isdigit() else None


def parse_lines(lines: Iterable[str], also: Callable[[str], None] | None = None) -> LlamaCppLog:
    """The last run's figures from a log's lines; ``also`` is handed each line too, its colours and line end
    stripped (the other runtimes' readers, on the same single pass)."""
    log, build, model_path = LlamaCppLog(), "", ""
    fit: LoggedFit | None = None  # the fit runs before the model loads: its lines belong to the next run
    dump: dict[str, tuple[str, str]] = {}  # the loader's metadata dump, printed before its run's first model line
    for raw in lines:
        line = _ANSI.sub("", raw).rstrip("\r\n")
        if also is not None:
            also(line)
        if _RUN_START in line:
            if log.runs:
                log = LlamaCppLog(build=build, runs=log.runs)  # another run began: keep the last
            log.runs += 1
            log.fit, fit = fit, None
            log.metadata, dump = dump, {}
        if "common_" in line and "fit" in line:
            fit = _take_fit(fit or LoggedFit(), line)
        elif "build" in line and (m := _BUILD.search(line)):
            build = log.build = f"{m.group(1) or m.group(3)} ({m.group(2) or m.group(4)})"
        elif "loaded meta data" in line and (m := _LOADED.search(line)):
            model_path, dump = m.group(1), {}
        elif "llama_model_loader: - kv" in line and (m := _LOADER_KV.search(line)):
            if len(dump) < MAX_KEYS:
                dump.setdefault(m.group(1), (m.group(2), m.group(3).strip()))
        else:
            _take(log, line)
        if model_path and log.runs and not log.model_path:
            log.model_path = model_path
    return log


def _take(log: LlamaCppLog, line: str) -> None:
    """One line's figure, where it states one."""
    if "print_info: " in line and (m := _PRINT_INFO.search(line)):
        log.model.setdefault(m.group(1).strip(), m.group(2).strip())
    elif "buffer size" in line and (m := _BUFFER.search(line)):
        log.buffers.append(LoggedBuffer(*m.groups()))
    elif ": size =" in line and "llama_kv_cache" in line and (m := _KV.search(line)):
        g = m.groups()
        log.caches.append(LoggedCache(g[0], int(g[1]), int(g[2]), int(g[3]), int(g[4]), g[5], g[6], g[7], g[8]))
    elif "llama_memory_recurrent: size" in line and (m := _RS.search(line)):
        g = m.groups()
        log.states.append(
            LoggedState(g[0], int(g[1]), int(g[2]), int(g[3]), int(g[4]), g[5], g[6], g[7], g[8], g[10] or "")
        )
    elif "llama_context: " in line and (m := _CONTEXT.search(line)):
        log.context.setdefault(_RENAMED.get(m.group(1), m.group(1)), m.group(2))
    elif "using full-size SWA cache" in line:
        log.swa_full = True
    elif "KV cache, size =" in line and (m := _ISWA.search(line)):
        log.iswa_cells[m.group(1)] = int(m.group(2))
    elif "failed to" in line and (m := _FAILED.search(line) or _INIT_FAILED.search(line)):
        if m.re is _FAILED:
            log.failed = log.failed or (m.group(1), int(m.group(2)))
        else:
            log.failure = log.failure or m.group(1)
    else:
        _take_placement(log, line)


def _take_placement(log: LlamaCppLog, line: str) -> None:
    """Where the model went: the devices, the layers offloaded, each layer's device (-v)."""
    if "layers to GPU" in line and (m := _OFFLOADED.search(line)):
        log.offloaded = (int(m.group(1)), int(m.group(2)))
    elif "using device" in line and (m := _DEVICE.search(line)) and len(log.devices) < MAX_DEVICES:
        log.devices.append(LoggedDevice(m.group(1), m.group(2), int(m.group(3))))
    elif "assigned to device" in line and (m := _ASSIGNED.search(line)) and len(log.layer_devices) < MAX_LAYERS:
        log.layer_devices[int(m.group(1))] = m.group(2)


def _take_fit(fit: LoggedFit, line: str) -> LoggedFit:
    """One line of llama.cpp's fit."""
    if "context size reduced" in line and (m := _FIT_REDUCED.search(line)):
        fit.reduced = (int(m.group(1)), int(m.group(2)))
    elif "user has requested full context size" in line:
        fit.full_ctx_asked = True
    elif "cannot meet free memory target" in line and (m := _FIT_MEET.search(line)):
        fit.targets_mib.setdefault("", int(m.group(1)))
    elif "vs. target of" in line and (m := _FIT_TARGET.search(line)):
        if len(fit.targets_mib) < MAX_DEVICES:
            fit.targets_mib[m.group(2) or m.group(1)] = int(m.group(4))
    elif "common_fit_params:" in line and (m := _FIT_DONE.search(line)):
        fit.outcome = "success" if m.group(2) is None else m.group(2).strip()
    return fit


def _lines(data: Iterator[bytes]) -> Iterator[str]:
    for chunk in data:
        yield chunk.decode("utf-8", errors="replace")


def read_log(path: str) -> LlamaCppLog:
    """A llama.cpp log file's last run (`-`: standard input); a file that is not a llama.cpp startup log is one
    clear error."""
    log = read_server_log(path)
    if not isinstance(log, LlamaCppLog):
        runtime = "a vLLM" if isinstance(log, VllmLog) else "an SGLang"
        raise BadInputError(f"{path}: {runtime} log, not a llama.cpp startup log")
    return log


def read_server_log(path: str) -> LlamaCppLog | VllmLog | SglangLog:
    """A startup log's last run (`-`: standard input), read once as a bounded stream of lines: llama.cpp's where
    the log has llama.cpp's lines, else vLLM's or SGLang's; a file that is none of them is one clear error."""
    import sys

    vllm, sglang = [VllmLog()], [SglangLog()]

    def others(line: str) -> None:  # each line to every reader: the file is read once, in bounded memory
        vllm[0] = take_vllm(vllm[0], line)
        sglang[0] = take_sglang(sglang[0], line)

    try:
        fh = sys.stdin.buffer if path == "-" else open_regular(path)  # closed below (not stdin)
    except NotRegularFile as exc:  # a FIFO nobody writes would wait forever; a pipe comes in as `-`
        raise BadInputError(f"{path}: {exc.strerror}; give a log file, or pipe the log in as -") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read the log: {exc.strerror or exc}") from None
    try:
        log = parse_lines(_lines(_bounded(fh, path)), others)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read the log: {exc.strerror or exc}") from None
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    if not log.model and not log.caches and not log.context:
        if vllm[0].found:
            return vllm[0]
        if sglang[0].found:
            return sglang[0]
        raise BadInputError(
            f"{path}: not a llama.cpp, vLLM or SGLang startup log (no print_info, llama_context or llama_kv_cache "
            "lines; no GPU KV cache size or # GPU blocks line; no KV Cache is allocated or max_total_num_tokens line)"
        )
    return log


def _bounded(fh: object, path: str) -> Iterator[bytes]:
    """Lines of at most MAX_LINE bytes, MAX_FILE bytes in all."""
    read = 0
    readline = fh.readline  # type: ignore[attr-defined]
    while True:
        chunk: bytes = readline(MAX_LINE)
        if not chunk:
            return
        read += len(chunk)
        if read > MAX_FILE:
            raise BadInputError(f"{path}: over {MAX_FILE >> 30} GiB; give the part with the startup")
        if b"\0" in chunk:
            raise BadInputError(f"{path}: binary data, not a log (a NUL byte at about byte {read:,})")
        if len(chunk) == MAX_LINE and not chunk.endswith(b"\n"):
            while True:  # the rest of an over-long line is skipped
                more = readline(MAX_LINE)
                read += len(more)
                if not more or more.endswith(b"\n"):
                    break
        yield chunk
