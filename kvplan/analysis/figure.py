"""One figure of a startup log beside kvplan's, and one change a user could make: what every `kvplan explain`
answers in (llama.cpp, its devices, vLLM, SGLang)."""

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


@dataclass(frozen=True)
class Change:
    """A flag change llama.cpp users make, and what it does to the KV cache / state and the CPU compute buffer
    (kvplan's plan of the log's settings with that change; None where kvplan has no graph, or llama.cpp refuses)."""

    flags: str
    kv_bytes: int
    compute_bytes: int | None
    #: on the log's devices (a log that names them): whether every device keeps llama.cpp's fit target free, or
    #: which one falls short and by how much — the same placement `kvplan fit` makes
    devices: str | None = None
