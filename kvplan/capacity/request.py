"""The one typed request every front end builds from the one table of settings (kvplan.capacity.settings).

The command line (``kvplan fit … -c 32k -np 4``) and a deployments-file entry (``ctx_size: 32k``) name the
same settings; each setting is parsed by the same function, and the request is checked by the same rules,
whichever front end supplied it. A bad value is a usage error on the command line (exit 2) and a
``FILE:LINE: KEY: …`` error in a file (exit 3). Flags are spelled as each runtime spells them and mean what
they mean there: llama.cpp's ``-c`` is the context shared by ``-np`` sequences; vLLM's ``--max-model-len`` is
per sequence (SGLang's and TensorRT-LLM's own names are accepted as aliases).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kvplan.capacity.hardware import Hardware, parse_gpus, parse_memory
from kvplan.capacity.settings import ENGINE_EQUIVALENT, LLAMACPP_EQUIVALENT, SETTINGS_BY_DEST
from kvplan.errors import KvplanError, SpecError, UsageError
from kvplan.runtimes import LLAMACPP, is_engine
from kvplan.runtimes.llamacpp.plan import Backend, FlashAttn
from kvplan.runtimes.names import ENGINE_NAMES, OWN_SETTINGS

# --- where a value came from -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    """Where a raw value came from: a flag on the command line, or a key on a line of a file."""

    key: str  # the flag as typed ("-ctk"), or the file key ("deployments[0].cache_type_k")
    path: str | None = None  # None: the command line
    line: int | None = None

    def error(self, message: str) -> KvplanError:
        if self.path is None:
            return UsageError(message, self.key)
        return SpecError(self.path, self.line, self.key, message)


@dataclass(frozen=True)
class Raw:
    value: object
    origin: Origin


# --- the typed request -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaCppOptions:
    """llama.cpp flags as given (``None``: not given — llama.cpp's default, or the solver's question)."""

    ctx_size: int | None = None
    ctx_per_seq: int | None = None
    parallel: int | None = None
    kv_unified: bool = False
    batch_size: int | None = None
    ubatch_size: int | None = None
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    flash_attn: FlashAttn | None = None
    swa_full: bool = False
    rs_seq: int = 0
    n_gpu_layers: int | None = None  # -1 auto, -2 all
    tensor_split: tuple[float, ...] | None = None
    no_kv_offload: bool = False
    override_tensor: tuple[tuple[str, str], ...] = ()  # -ot PATTERN=BUFT
    cpu_moe: bool = False  # -cmoe
    n_cpu_moe: int | None = None  # -ncmoe N
    backend: Backend | None = None
    mtp: bool = False
    model_draft: str | None = None  # -md: a draft model's reference
    gpu_layers_draft: int | None = None  # -ngld (-1 auto, -2 all)
    cache_type_k_draft: str | None = None
    cache_type_v_draft: str | None = None


@dataclass(frozen=True)
class EngineOptions:
    """Serving-engine flags as given (``None``: the engine's default, or the solver's question)."""

    max_model_len: int | None = None
    max_num_seqs: int | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    gpu_memory_utilization: float | None = None
    mem_fraction_static: float | None = None
    free_gpu_memory_fraction: float | None = None
    max_num_batched_tokens: int | None = None
    disable_hybrid_kv_cache_manager: bool = False
    kv_cache_memory_bytes: int | None = None
    enable_prefix_caching: bool | None = None
    mamba_ssm_cache_dtype: str | None = None


@dataclass(frozen=True)
class Budgets:
    max_kv: int | None = None
    max_total: int | None = None
    min_ctx: int | None = None
    min_parallel: int | None = None
    headroom: float | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.max_kv, self.max_total, self.min_ctx, self.min_parallel, self.headroom))


@dataclass(frozen=True)
class Request:
    """A model, a runtime with its settings, the hardware and the budgets: one deployment."""

    model: str
    runtime: str = LLAMACPP
    llamacpp: LlamaCppOptions = field(default_factory=LlamaCppOptions)
    engine: EngineOptions = field(default_factory=EngineOptions)
    hardware: Hardware | None = None
    weights: str | None = None
    weight_bytes: int | None = None
    params: int | None = None
    overhead: int | None = None
    cache_types_auto: bool = False
    budgets: Budgets = field(default_factory=Budgets)
    origins: Mapping[str, Origin] = field(default_factory=dict, compare=False, repr=False)
    loaded: Any = field(default=None, compare=False, repr=False)  # the model, already loaded (library calls)

    @property
    def is_engine(self) -> bool:
        return is_engine(self.runtime)

    def origin(self, dest: str) -> Origin:
        """Where ``dest`` was given (for errors found after the request was built)."""
        return self.origins.get(dest) or Origin(SETTINGS_BY_DEST[dest].flag if dest in SETTINGS_BY_DEST else dest)


def build_request(
    model: str,
    raw: Mapping[str, Raw],
    *,
    gpu_table: Mapping[str, int] | None = None,
    need_hardware: bool = False,
    where: Origin | None = None,
) -> Request:
    """Parse and check raw values (from flags or a file) into a Request; every error names where it came from.

    ``where`` is the origin of the whole entry (errors not tied to one value); ``need_hardware`` makes the
    hardware required (``fit``).
    """
    values: dict[str, Any] = {}
    for dest, item in raw.items():
        setting = SETTINGS_BY_DEST[dest]
        try:
            values[dest] = setting.parse(item.value)
        except ValueError as exc:
            raise item.origin.error(str(exc)) from None
    if values.pop("spec_type", False):  # llama-server's --spec-type draft-mtp: the MTP draft context
        values["mtp"] = True
    origins = {dest: item.origin for dest, item in raw.items()}
    entry = where or Origin("MODEL")
    runtime = values.get("engine", LLAMACPP)
    _check_runtime(runtime, raw)
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
    for dest in ("min_parallel", "headroom"):
        if dest in raw and hardware is None:
            raise raw[dest].origin.error("needs the hardware (gpu or memory)")
    eng = EngineOptions(**{k: values[k] for k in EngineOptions.__dataclass_fields__ if k in values})
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
        origins=origins,
    )


def _check_runtime(runtime: str, raw: Mapping[str, Raw]) -> None:
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
