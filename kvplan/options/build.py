"""Raw values (from flags, a file or library keywords) into the typed requests of kvplan.options.requests.

The command line (``kvplan fit … -c 32k -np 4``), a deployments-file entry (``ctx_size: 32k``), a workload file and
a library call (``kvplan.fit(m, ctx_size="32k")``) name the same settings; each value is parsed by its setting's
parser, and the request is checked by the same rules, whichever front end supplied it. A bad value is a usage
error on the command line and in the library (exit 2) and a ``FILE:LINE: KEY: …`` error in a file (exit 3).
Flags are spelled as each runtime spells them and mean what they mean there: llama.cpp's ``-c`` is the context
shared by ``-np`` sequences; vLLM's ``--max-model-len`` is per sequence (SGLang's and TensorRT-LLM's own names
are accepted as aliases).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvplan.capacity.hardware import Hardware, parse_gpus, parse_memory
from kvplan.capacity.request import Budgets, LlamaCppOptions, Origin, Raw, Request, ServerFlag
from kvplan.errors import SpecError, UsageError
from kvplan.facts.llama_server_args import FIT_FULL_CTX
from kvplan.options.commands import COMMANDS, WORKLOAD
from kvplan.options.requests import (
    CheckRequest,
    CommandRequest,
    CompareRequest,
    CurveRequest,
    ExplainRequest,
    FitOn,
    FitRequest,
    GpusRequest,
    ModelsRequest,
    SimulateRequest,
)
from kvplan.options.settings import ENGINE_EQUIVALENT, LLAMACPP_EQUIVALENT, SETTINGS, SETTINGS_BY_DEST, SIM_BUDGETS
from kvplan.runtimes import LLAMACPP, is_engine
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.names import ENGINE_NAMES, OWN_SETTINGS, SGLANG_SCHEDULE

if TYPE_CHECKING:
    from kvplan.simulation.budgets import SimBudgets
    from kvplan.simulation.workload import Workload

#: the settings a command takes besides the deployment itself (everything else builds the Request)
COMMAND_OWN = frozenset(
    {"fit", "fit_target", "fit_ctx", "contexts", "bandwidth", "peak_tflops", "async_scheduling", "gpus_file"}
    | set(WORKLOAD)
    | set(SGLANG_SCHEDULE)
    | set(SIM_BUDGETS)
    | {"arch", "family", "svg", "junit", "format", "units"}
)
#: workload-file key → setting dest (a deployments entry's ``workload:`` mapping, or a --workload file)
WORKLOAD_KEYS = {
    s.file_key.removeprefix("workload."): s.dest
    for s in SETTINGS
    if s.file_key is not None and s.file_key.startswith("workload.")
}


_FLAGS = {s.dest: Origin(s.flag) for s in SETTINGS}


def parse(raw: Mapping[str, Raw], *dests: str) -> dict[str, Any]:
    """Every raw value (those of ``dests``, where given) through its setting's parser; an error names where the
    value came from."""
    values: dict[str, Any] = {}
    for dest, item in raw.items():
        if dests and dest not in dests:
            continue
        try:
            values[dest] = SETTINGS_BY_DEST[dest].parse(item.value)
        except ValueError as exc:
            raise item.origin.error(str(exc)) from None
    return values


# --- the deployment ----------------------------------------------------------------------------------------


def build_request(
    model: str,
    raw: Mapping[str, Raw],
    *,
    gpu_table: Mapping[str, int] | None = None,
    need_hardware: bool = False,
    where: Origin | None = None,
    server_flags: tuple[ServerFlag, ...] = (),
) -> Request:
    """Parse and check raw values (from flags or a file) into a Request; every error names where it came from.

    ``where`` is the origin of the whole entry (errors not tied to one value); ``need_hardware`` makes the
    hardware required (``fit``).
    """
    values = parse(raw)
    if values.pop("spec_type", False):  # llama-server's --spec-type draft-mtp: the MTP draft context
        values["mtp"] = True
    # where each value was given; what was not given is named by its flag in errors found later
    origins = {**_FLAGS, **{dest: item.origin for dest, item in raw.items()}}
    entry = where or Origin("MODEL")
    runtime = values.get("engine", LLAMACPP)
    check_runtime(runtime, raw)
    if server_flags and is_engine(runtime):
        flag = server_flags[0].tokens[0]
        raise UsageError(
            f"read as llama-server's argument; with --engine {runtime} kvplan takes {ENGINE_NAMES[runtime][0]}'s "
            "own memory flags only",
            flag,
        )
    if "ctx_size" in raw and "ctx_per_seq" in raw:
        raise raw["ctx_per_seq"].origin.error(
            f"give either {raw['ctx_size'].origin.key} (the context shared by the sequences) or --ctx-per-seq, not both"
        )
    hardware = _hardware(values, raw, gpu_table)
    if hardware is None and (need_hardware or is_engine(runtime)):
        raise entry.error(
            "give the hardware: --gpu NAME[xN] or --memory SIZE[,SIZE]"
            if where is None
            else "give the hardware: gpu or memory"
        )
    if hardware is not None and "tensor_split" in values and len(values["tensor_split"]) != hardware.count:
        raise raw["tensor_split"].origin.error(f"{len(values['tensor_split'])} proportions for {hardware.count} GPU(s)")
    _check_overheads(values, raw, runtime, hardware)
    for dest in ("min_parallel", "headroom"):
        if dest in raw and hardware is None:
            raise raw[dest].origin.error("needs the hardware (gpu or memory)")
    eng = EngineSettings(**{k: values[k] for k in EngineSettings.__dataclass_fields__ if k in values})
    if is_engine(runtime) and hardware is not None:
        ranks = eng.tensor_parallel_size * eng.pipeline_parallel_size
        if hardware.count != ranks:
            origin = raw.get("tensor_parallel_size", raw.get("gpu", raw.get("memory")))
            at = origin.origin if origin else entry
            raise at.error(
                f"{hardware.count} GPU(s) for tensor parallel {eng.tensor_parallel_size} × pipeline "
                f"parallel {eng.pipeline_parallel_size} = {ranks}"
            )
        if len(set(hardware.memory_bytes)) != 1:
            at = raw["memory"].origin if "memory" in raw else entry
            raise at.error("every rank takes the smallest rank's capacity; give GPUs of one size")
    return Request(
        model=model,
        runtime=runtime,
        llamacpp=LlamaCppOptions(**{k: values[k] for k in LlamaCppOptions.__dataclass_fields__ if k in values}),
        engine=eng,
        hardware=hardware,
        weights=values.get("weights"),
        weight_bytes=values.get("weight_bytes"),
        params=values.get("params"),
        overhead=values.get("overhead"),
        cache_types_auto=values.get("cache_types", False),
        budgets=Budgets(**{k: values[k] for k in Budgets.__dataclass_fields__ if k in values}),
        server_flags=server_flags,
        origins=origins,
    )


def _check_overheads(values: dict[str, Any], raw: Mapping[str, Raw], runtime: str, hw: Hardware | None) -> None:
    """--overhead: one size for every GPU, or (llama.cpp) one per GPU."""
    if "overhead" in values and len(values["overhead"]) > 1:
        count = hw.count if hw is not None else 0
        if is_engine(runtime) or len(values["overhead"]) != count:
            want = "one per GPU" if not is_engine(runtime) else "one size: an engine's ranks are alike"
            raise raw["overhead"].origin.error(
                f"{len(values['overhead'])} sizes for {count} GPU(s); give one size for every GPU or {want}"
            )


def check_runtime(runtime: str, raw: Mapping[str, Raw]) -> None:
    """A flag of the other kind of runtime is an error that says what to use instead."""
    for dest, item in raw.items():
        setting = SETTINGS_BY_DEST[dest]
        if setting.runtime == LLAMACPP and is_engine(runtime):
            instead = ENGINE_EQUIVALENT.get(dest)
            hint = f"; for {runtime} use {instead}" if instead else f"; {runtime} has no such setting"
            raise item.origin.error(f"is a llama.cpp setting{hint}")
        if setting.runtime == "engine" and not is_engine(runtime):
            instead = LLAMACPP_EQUIVALENT.get(dest)
            hint = f"; for llama.cpp use {instead}" if instead else "; give --engine vllm, sglang or trtllm"
            raise item.origin.error(f"is a serving-engine setting{hint}")
        owners = [e for e, own in OWN_SETTINGS.items() if dest in own]
        if owners and is_engine(runtime) and dest not in OWN_SETTINGS[runtime]:
            names = ", ".join(ENGINE_NAMES[e][0] for e in owners)
            raise item.origin.error(f"is {names}'s; {ENGINE_NAMES[runtime][0]} does not have it")


def _hardware(values: dict[str, Any], raw: Mapping[str, Raw], gpu_table: Mapping[str, int] | None) -> Hardware | None:
    if "gpu" in raw and "memory" in raw:
        raise raw["memory"].origin.error(f"give {raw['gpu'].origin.key} or {raw['memory'].origin.key}, not both")
    if "gpu" in values:
        try:
            return parse_gpus(values["gpu"], dict(gpu_table or {}))
        except ValueError as exc:
            raise raw["gpu"].origin.error(str(exc)) from None
    if "memory" in values:
        try:
            return parse_memory(values["memory"])
        except ValueError as exc:
            raise raw["memory"].origin.error(str(exc)) from None
    return None


def gpu_table_file(path: str) -> dict[str, int]:
    """--gpus-file: a YAML file of NAME: memory entries."""
    from kvplan.capacity.hardware import parse_gpu_table
    from kvplan.sources.files import load_nodes, plain, read_text

    text = read_text(path, "a GPU table (NAME: memory)")
    try:
        return parse_gpu_table(plain(load_nodes(text, path, "the file is empty; expected NAME: memory lines")))
    except ValueError as exc:
        raise SpecError(path, None, None, str(exc)) from None


def _deployment(model: str, raw: Mapping[str, Raw], server: tuple[ServerFlag, ...] = (), *,
                need_hardware: bool = False) -> Request:  # fmt: skip
    """The deployment a command asks about: its settings, with the GPU table of --gpus-file."""
    path = parse(raw, "gpus_file").get("gpus_file")
    table = gpu_table_file(path) if path is not None else None
    mine = {k: v for k, v in raw.items() if k not in COMMAND_OWN}
    return build_request(model, mine, gpu_table=table, need_hardware=need_hardware, server_flags=server)


# --- the workload and the simulation's budgets --------------------------------------------------------------


def workload_file(path: str) -> dict[str, Raw]:
    """A YAML workload file: the workload keys at the top level, or under ``workload:`` (a deployments entry's
    mapping copied as it is); each value with its file, line and key. A trace is read beside the file."""
    from kvplan.sources.files import did_you_mean, load_nodes, read_text

    root = load_nodes(read_text(path, "a workload file"), path, "the file is empty; expected request_rate: 10, ...")
    node = root
    if isinstance(root.value, dict) and set(root.value) == {"workload"}:
        node = root.value["workload"]
    if not isinstance(node.value, dict):
        raise SpecError(path, node.line, None, "expected a mapping of workload keys (request_rate: 10, ...)")
    raw: dict[str, Raw] = {}
    for key, child in node.value.items():
        if key not in WORKLOAD_KEYS:
            raise SpecError(path, child.line, key, f"unknown workload key{did_you_mean(key, WORKLOAD_KEYS)}")
        value = beside(str(child.value), path) if key == "trace" else child.value
        raw[WORKLOAD_KEYS[key]] = Raw(value, Origin(key, path, child.line))
    return raw


def beside(ref: str, path: str) -> str:
    """A file named in ``path`` (a deployments or workload file): relative to that file, written relative to the
    working directory (so that reports name no absolute path); a URL or an absolute path as it is."""
    if "://" in ref or os.path.isabs(ref):
        return ref
    return os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(path)), ref))


def build_workload(raw: Mapping[str, Raw], where: Origin | None = None) -> Workload:
    """A workload from its settings: one of a request rate, a concurrency or a trace, and the lengths."""
    from kvplan.simulation.workload import MAX_TRACE_REQUESTS, Lengths, Workload, load_trace

    given = {k: v for k, v in raw.items() if k in WORKLOAD and k != "workload"}
    values = parse(given)
    modes = [k for k in ("request_rate", "max_concurrency", "trace") if k in values]
    if len(modes) != 1:
        at = given[modes[1]].origin if len(modes) > 1 else (where or Origin("--request-rate"))
        message = "give one of --request-rate R, --max-concurrency N or --trace FILE"
        raise (at.error(message) if len(modes) > 1 or where is not None else UsageError(message))
    rate, duration = values.get("request_rate"), values.get("duration", 60.0)
    if rate is not None and rate * duration > MAX_TRACE_REQUESTS:
        raise given["request_rate"].origin.error(
            f"{rate:g} requests/s for {duration:g} s is {rate * duration:,.0f} requests; at most "
            f"{MAX_TRACE_REQUESTS:,} are simulated (lower the rate or the duration)"
        )
    concurrency = values.get("max_concurrency")
    return Workload(
        prompt=values.get("prompt_len", Lengths("fixed", 1024)),
        output=values.get("output_len", Lengths("fixed", 256)),
        rate=rate,
        concurrency=concurrency,
        duration=duration,
        cancel=values.get("cancel_rate", 0.0),
        seed=values.get("seed", 0),
        shared_prefix=values.get("shared_prefix", 0),
        trace=load_trace(values["trace"]) if "trace" in values else None,
    )


def build_sim_budgets(raw: Mapping[str, Raw]) -> SimBudgets:
    from kvplan.simulation.budgets import SimBudgets

    return SimBudgets(**parse(raw, *SIM_BUDGETS))


# --- the commands ------------------------------------------------------------------------------------------


def _fit(pos: Mapping[str, str], raw: Mapping[str, Raw], server: tuple[ServerFlag, ...]) -> FitRequest:
    req = _deployment(pos["MODEL"], raw, server, need_hardware=True)
    values = parse(raw, "fit", "fit_target", "fit_ctx")
    # llama.cpp's default is --fit on (common_params::fit_params); the serving engines have no such fit
    on = values.get("fit", not req.is_engine)
    if not on:
        for dest in ("fit_target", "fit_ctx"):
            if dest in raw:
                raise raw[dest].origin.error("applies to llama.cpp's fit: give --fit on")
        return FitRequest(req)
    if req.is_engine:
        raise raw["fit"].origin.error("llama.cpp's fit is llama.cpp's: drop --engine")
    n_gpus = req.hardware.count if req.hardware is not None else 0
    if len(values.get("fit_target", ())) not in (0, 1, n_gpus):  # llama.cpp fills the rest with its 1024 MiB
        raise raw["fit_target"].origin.error(
            f"{len(values['fit_target'])} margins for {n_gpus} GPU(s); give one for all or one per GPU"
        )
    defaults = FitOn()
    full = req.llamacpp.ctx_size == 0  # -c 0: the trained context, which llama.cpp's fit then never lowers
    n_ctx_min = values.get("fit_ctx", FIT_FULL_CTX if full else defaults.n_ctx_min)
    return FitRequest(req, FitOn(values.get("fit_target", defaults.margins_mib), n_ctx_min))


def _compare(pos: Mapping[str, str], raw: Mapping[str, Raw], server: tuple[ServerFlag, ...]) -> CompareRequest:
    values = parse(raw, "contexts")
    contexts = values["contexts"].points if "contexts" in values else ()
    return CompareRequest(_deployment(pos["MODEL"], raw, server), contexts)


def _curve(pos: Mapping[str, str], raw: Mapping[str, Raw], server: tuple[ServerFlag, ...]) -> CurveRequest:
    from kvplan.analysis.curve import parse_contexts

    values = parse(raw, "contexts", "bandwidth")
    contexts = values["contexts"] if "contexts" in values else parse_contexts("1k:128k")
    return CurveRequest(_deployment(pos["MODEL"], raw, server), contexts, values.get("bandwidth"))


def _simulate(pos: Mapping[str, str], raw: Mapping[str, Raw], server: tuple[ServerFlag, ...]) -> SimulateRequest:
    req = _deployment(pos["MODEL"], raw, server, need_hardware=True)
    check_runtime(req.runtime, {k: v for k, v in raw.items() if k == "async_scheduling" or k in SGLANG_SCHEDULE})
    given: dict[str, Raw] = {}
    if "workload" in raw:
        given = workload_file(parse(raw, "workload")["workload"])
    flags = {k: v for k, v in raw.items() if k in WORKLOAD and k != "workload"}
    if {"request_rate", "max_concurrency", "trace"} & set(flags):  # the flags' mode replaces the file's
        for mode in ("request_rate", "max_concurrency", "trace"):
            given.pop(mode, None)
    from kvplan.simulation.sglang.flags import SglangSchedule

    values = parse(raw, "async_scheduling", "bandwidth", "peak_tflops", *SGLANG_SCHEDULE)
    return SimulateRequest(
        req,
        build_workload({**given, **flags}),
        build_sim_budgets(raw),
        values.get("async_scheduling", True),
        values.get("bandwidth"),
        values.get("peak_tflops"),
        SglangSchedule(**{k: values[k] for k in SGLANG_SCHEDULE if k in values}),
    )


def _models(pos: Mapping[str, str], raw: Mapping[str, Raw], server: tuple[ServerFlag, ...]) -> ModelsRequest:
    values = parse(raw, "arch", "family")
    return ModelsRequest(values.get("arch"), values.get("family"))


Builder = Callable[[Mapping[str, str], Mapping[str, Raw], tuple[ServerFlag, ...]], CommandRequest]
BUILDERS: dict[str, Builder] = {
    "estimate": lambda pos, raw, server: _deployment(pos["MODEL"], raw, server),
    "fit": _fit,
    "compare": _compare,
    "curve": _curve,
    "check": lambda pos, raw, server: CheckRequest(pos["FILE"]),
    "simulate": _simulate,
    "models": _models,
    "gpus": lambda pos, raw, server: GpusRequest(),
    "explain": lambda pos, raw, server: ExplainRequest(
        pos["LOG"], parse(raw, "log_model").get("log_model"), parse(raw, "gpu").get("gpu")
    ),
}


def build(
    command: str, positionals: Mapping[str, str], raw: Mapping[str, Raw], server_flags: tuple[ServerFlag, ...] = ()
) -> CommandRequest:
    """The typed request of ``command`` from its positional arguments and raw settings (each one the command
    takes: kvplan.options.commands), and llama-server's arguments it does not plan (a pasted command line)."""
    takes = set(COMMANDS[command].dests)
    assert set(raw) <= takes, sorted(set(raw) - takes)
    return BUILDERS[command](positionals, raw, server_flags)
