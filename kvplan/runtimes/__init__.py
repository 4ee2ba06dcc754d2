"""The runtimes kvplan plans for: llama.cpp (byte-exact, ``llamacpp/``) and the paged serving engines (``engines/``:
vLLM, SGLang, TensorRT-LLM). Names are case-insensitive and accept each project's own spellings."""

from __future__ import annotations

from kvplan.runtimes.engines import ENGINES

LLAMACPP = "llama.cpp"
LLAMACPP_ALIASES = ("llama.cpp", "llamacpp", "llama-cpp", "llama_cpp", "llama-server", "llama-cli")


def runtime_names() -> tuple[str, ...]:
    return (LLAMACPP, *ENGINES)


def canonical_runtime(name: object) -> str:
    """The canonical runtime name for a user's spelling (raises ValueError listing the known ones)."""
    key = str(name).strip().lower()
    if key in LLAMACPP_ALIASES:
        return LLAMACPP
    for engine in ENGINES.values():
        if key == engine.name or key in engine.aliases:
            return engine.name
    raise ValueError(f"unknown runtime {name!r}; expected one of {', '.join(runtime_names())}")


def is_engine(name: str) -> bool:
    return name in ENGINES
