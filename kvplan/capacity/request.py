"""The one typed deployment every solver reads: a model, a runtime with its flags as given, the hardware and the
budgets. The front ends build it from the one table of settings (kvplan.options.build.build_request); each value
keeps where it came from (a flag, or a key on a line of a file), so that an error found later names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kvplan.capacity.hardware import Hardware
from kvplan.errors import KvplanError, SpecError, UsageError
from kvplan.facts.llama_server_args import Effect
from kvplan.model import ModelDescription
from kvplan.runtimes import LLAMACPP, is_engine
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.llamacpp.plan import Backend, FlashAttn

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
    """llama.cpp's flags as given, as its ``common_params`` holds them (``None``: not given — llama.cpp's default,
    or the solver's question). Not a twin of LlamaCppSettings (kvplan.runtimes.llamacpp), which is what llama.cpp
    derives from these for one context (``llama_context_params``: the context from -c or --ctx-per-seq × -np, the
    defaults filled in; kvplan.capacity.llamacpp_settings.settings_for); the placement flags (-ngl, -ts, -ot,
    -cmoe, -md, …) are read by the placement alone."""

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
    split_mode: str | None = None  # -sm: layer (llama.cpp's default) or none (row is refused)
    main_gpu: int | None = None  # -mg: the GPU of -sm none
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
class ServerFlag:
    """A llama-server argument kvplan does not plan, as typed (a pasted llama-server line): what it does to memory
    (kvplan.facts.llama_server_args.Effect: nothing, or host memory kvplan does not plan)."""

    tokens: tuple[str, ...]  # the flag and its value(s)
    effect: Effect


@dataclass(frozen=True)
class Request:
    """A model, a runtime with its settings, the hardware and the budgets: one deployment."""

    model: str
    runtime: str = LLAMACPP
    llamacpp: LlamaCppOptions = field(default_factory=LlamaCppOptions)
    engine: EngineSettings = field(default_factory=EngineSettings)  # the serving engines' flags as given
    hardware: Hardware | None = None
    weights: str | None = None
    weight_bytes: int | None = None
    params: int | None = None
    #: --overhead: one size for every GPU, or (llama.cpp) one per GPU in --memory's order
    overhead: tuple[int, ...] | None = None
    cache_types_auto: bool = False
    budgets: Budgets = field(default_factory=Budgets)
    server_flags: tuple[ServerFlag, ...] = ()  # llama-server's other arguments: kept on the run line, noted
    origins: Mapping[str, Origin] = field(default_factory=dict, compare=False, repr=False)
    #: the models, once loaded (kvplan.capacity.deployment.load_models): the solvers read no file
    loaded: ModelDescription | None = field(default=None, compare=False, repr=False)
    draft: ModelDescription | None = field(default=None, compare=False, repr=False)  # -md

    @property
    def is_engine(self) -> bool:
        return is_engine(self.runtime)

    def origin(self, dest: str) -> Origin:
        """Where ``dest`` was given, or its flag (for errors found after the request was built)."""
        return self.origins.get(dest) or Origin(dest)
