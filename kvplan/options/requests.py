"""What each command is asked, typed: the deployment (kvplan.capacity.request.Request) and what the command
takes besides it. The command line, the library and the deployments file build these with the same code
(kvplan.options.build); the commands (kvplan.commands) read nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from kvplan.capacity.request import Request
from kvplan.facts.llama_server_args import FIT_MIN_CTX, FIT_TARGET_MIB

if TYPE_CHECKING:
    from kvplan.analysis.curve import Contexts
    from kvplan.simulation.budgets import SimBudgets
    from kvplan.simulation.sglang.flags import SglangSchedule
    from kvplan.simulation.workload import Workload


@dataclass(frozen=True)
class FitOn:
    """llama.cpp's own fit (``--fit on``): MiB each GPU keeps free, and the smallest context it may choose."""

    margins_mib: tuple[int, ...] = (FIT_TARGET_MIB,)
    n_ctx_min: int = FIT_MIN_CTX


@dataclass(frozen=True)
class FitRequest:
    request: Request
    fit_on: FitOn | None = None  # None: --fit off (kvplan plans the flags as given), and every engine


@dataclass(frozen=True)
class CompareRequest:
    request: Request
    contexts: tuple[int, ...] = ()  # empty: the trained context


@dataclass(frozen=True)
class CurveRequest:
    request: Request
    contexts: Contexts
    bandwidth: float | None = None  # GB/s, overriding the GPU table's (with --gpu)


@dataclass(frozen=True)
class SimulateRequest:
    request: Request
    workload: Workload
    budgets: SimBudgets
    async_scheduling: bool = True
    bandwidth: float | None = None  # GB/s
    peak_tflops: float | None = None
    sglang: SglangSchedule | None = None  # SGLang's scheduler flags (None: its defaults)


@dataclass(frozen=True)
class CheckRequest:
    path: str  # the deployments file


@dataclass(frozen=True)
class ModelsRequest:
    arch: str | None = None
    family: str | None = None


@dataclass(frozen=True)
class GpusRequest:
    pass


@dataclass(frozen=True)
class ExplainRequest:
    log: str  # a path, or "-" for standard input
    model: str | None = None  # what the log loaded, where its own path is not readable here
    gpu: str | None = None  # a vLLM log's GPU preset (the log does not name it)


CommandRequest = Union[  # noqa: UP007 (a runtime alias; X | Y of classes needs Python 3.10's types.UnionType)
    Request,
    FitRequest,
    CompareRequest,
    CurveRequest,
    SimulateRequest,
    CheckRequest,
    ModelsRequest,
    GpusRequest,
    ExplainRequest,
]
