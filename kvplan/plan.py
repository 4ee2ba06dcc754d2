"""A memory plan: what a runtime allocates for one model and one context configuration.

Produced by a runtime layout (kvplan.layout.*), read by renderers and checks. Every size is an
integer number of bytes; widths are elements; cells are KV slots per stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvplan.model import ModelDescription


@dataclass(frozen=True)
class CachePlan:
    name: str  # e.g. "full attention", "sliding window"
    kind: str  # "attention" (later: "recurrent", "indexer", "compressed")
    layers: tuple[int, ...]
    cells: int  # KV cells per stream
    streams: int
    type_k: str
    type_v: str | None  # None: no V tensor (MLA, K-only caches)
    k_bytes: int  # sum of ggml_nbytes of the K tensors
    v_bytes: int
    bytes: int  # buffer bytes, each tensor padded to the backend alignment
    per_token_bytes: int  # bytes one more cell costs in every stream (0 when capped)
    why: str = ""  # how cells were decided, for the table
    layer_bytes: tuple[int, ...] = ()  # buffer bytes of each layer in ``layers`` (device placement)


@dataclass(frozen=True)
class RuntimeSettings:
    """The context configuration after the runtime's own derivation (padding, clamping)."""

    engine: str
    values: dict[str, Any]


@dataclass(frozen=True)
class MemoryPlan:
    model: ModelDescription
    runtime: RuntimeSettings
    caches: tuple[CachePlan, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.caches)

    @property
    def per_token_bytes(self) -> int:
        """Marginal bytes of one more token of context (caches that still grow with context)."""
        return sum(c.per_token_bytes for c in self.caches)
