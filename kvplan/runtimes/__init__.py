"""The runtimes kvplan plans for: llama.cpp (byte-exact, ``llamacpp/``) and the paged serving engines (``engines/``:
vLLM, SGLang, TensorRT-LLM). Names are case-insensitive and accept each project's own spellings; resolving one
imports no runtime's code (``names.py``)."""

from __future__ import annotations

from kvplan.runtimes.names import ENGINE_NAMES, LLAMACPP, LLAMACPP_ALIASES

__all__ = ["LLAMACPP", "LLAMACPP_ALIASES", "canonical_runtime", "is_engine", "runtime_names"]


def runtime_names() -> tuple[str, ...]:
    return (LLAMACPP, *ENGINE_NAMES)


def canonical_runtime(name: object) -> str:
    """The canonical runtime name for a user's spelling (raises ValueError listing the known ones)."""
    key = str(name).strip().lower()
    if key in LLAMACPP_ALIASES:
        return LLAMACPP
    for engine, (_, aliases) in ENGINE_NAMES.items():
        if key == engine or key in aliases:
            return engine
    raise ValueError(f"unknown runtime {name!r}; expected one of {', '.join(runtime_names())}")


def is_engine(name: str) -> bool:
    return name in ENGINE_NAMES
