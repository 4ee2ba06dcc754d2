"""kvplan: byte-exact KV cache and state memory planning for LLM inference.

The library API (README, "Library"): ``kvplan.load_model``, ``kvplan.estimate``, ``kvplan.fit``,
``kvplan.compare``, ``kvplan.curve``, ``kvplan.simulate``, ``kvplan.check``, ``kvplan.explain``, ``kvplan.models``,
``kvplan.gpus``
return the typed reports the command line renders; ``kvplan.plan`` / ``kvplan.planner`` are llama.cpp's
allocation rules for sweeps. Names load on first use, so ``import kvplan`` costs nothing.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = [
    "Document",
    "LlamaCppSettings",
    "MemoryPlan",
    "ModelDescription",
    "__version__",
    "check",
    "compare",
    "curve",
    "estimate",
    "explain",
    "fit",
    "gpus",
    "load_model",
    "models",
    "plan",
    "planner",
    "simulate",
]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:  # pragma: no cover
    from kvplan.api import (
        Document,
        LlamaCppSettings,
        MemoryPlan,
        ModelDescription,
        check,
        compare,
        curve,
        estimate,
        explain,
        fit,
        gpus,
        load_model,
        models,
        plan,
        planner,
        simulate,
    )


def __getattr__(name: str) -> object:
    if name in __all__ and name != "__version__":
        from kvplan import api

        return getattr(api, name)
    raise AttributeError(f"module 'kvplan' has no attribute {name!r}")
