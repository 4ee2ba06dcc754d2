"""The one registry of runtimes behind one protocol: llama.cpp and every serving engine answer the same fit and
budget questions with the same result types. Nothing outside a runtime's own module asks which runtime it is."""

from __future__ import annotations

from typing import Protocol

from kvplan.capacity.engines import EngineRuntime
from kvplan.capacity.llamacpp import RUNTIME as LLAMACPP_RUNTIME
from kvplan.capacity.request import Request
from kvplan.capacity.results import FitResult, Solver
from kvplan.model import ModelDescription
from kvplan.runtimes import LLAMACPP, canonical_runtime
from kvplan.runtimes.engines import ENGINES


class Runtime(Protocol):
    name: str
    label: str

    def fit(self, model: ModelDescription, req: Request) -> FitResult:
        """Answer the request's question (check, max context, max sequences, cheapest cache) on its hardware."""
        ...

    def solver(self, model: ModelDescription, req: Request) -> Solver:
        """Max context / max sequences on the request's hardware, for budgets."""
        ...


RUNTIMES: dict[str, Runtime] = {LLAMACPP: LLAMACPP_RUNTIME, **{n: EngineRuntime(e) for n, e in ENGINES.items()}}


def get_runtime(name: str) -> Runtime:
    """The runtime for a name in any spelling kvplan accepts (raises ValueError otherwise)."""
    return RUNTIMES[canonical_runtime(name)]
