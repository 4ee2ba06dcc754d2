"""One figure of a startup log beside kvplan's: what every `kvplan explain` answers in (llama.cpp, its devices,
vLLM, SGLang)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One figure of the log: what it is, as printed, kvplan's in the same words, and why it is what it is."""

    what: str
    logged: str
    kvplan: str
    equal: bool
    why: str
    kvplan_bytes: int | None = None  # kvplan's exact bytes, for a memory figure
