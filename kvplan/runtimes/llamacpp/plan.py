"""What llama.cpp allocates for one model and one context configuration: a typed plan.

Produced by :func:`kvplan.runtimes.llamacpp.memory.plan`, read by the capacity solvers and the report
builders. Every size is an integer number of bytes; widths are elements; cells are KV slots per stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kvplan.facts.ggml_types import CUDA_BUFFER_ALIGNMENT, VULKAN_BUFFER_ALIGNMENT, GGMLType, cuda_alloc_size
from kvplan.model import ModelDescription
from kvplan.units import pad_to

LLAMA_MAX_SEQ = 256
KV_PAD_CELLS = 256
CPU_ALIGNMENT = 32


class FlashAttn(str, Enum):
    """llama.cpp's -fa: on, off, or auto (counts as on when the memory is built)."""

    ON = "on"
    OFF = "off"
    AUTO = "auto"


class Backend(str, Enum):
    """Whose buffer rules size the tensors: the CPU backend's or CUDA's (both recorded against llama.cpp), or
    ROCm's (HIP: CUDA's source), Metal's or Vulkan's (derived from their source, not recorded)."""

    CPU = "cpu"
    CUDA = "cuda"
    ROCM = "rocm"
    METAL = "metal"
    VULKAN = "vulkan"

    @property
    def cuda_like(self) -> bool:
        """ggml-cuda's buffers (CUDA, and HIP for ROCm): 128-byte alignment, quantized rows padded."""
        return self in (Backend.CUDA, Backend.ROCM)

    @property
    def recorded(self) -> bool:
        """Whether its rules are proven against llama.cpp here (else read from its source)."""
        return self in (Backend.CPU, Backend.CUDA)

    @property
    def alignment(self) -> int:
        if self.cuda_like:
            return CUDA_BUFFER_ALIGNMENT
        return VULKAN_BUFFER_ALIGNMENT if self is Backend.VULKAN else CPU_ALIGNMENT

    @property
    def display(self) -> str:
        """Its name in prose."""
        return {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm", "metal": "Metal", "vulkan": "Vulkan"}[self.value]

    @property
    def label(self) -> str:
        """Its name as llama.cpp's buffers name it."""
        return {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm", "metal": "MTL", "vulkan": "Vulkan"}[self.value]


class CacheKind(str, Enum):
    ATTENTION = "attention"  # full or window K/V
    RECURRENT = "recurrent"  # r / s state rows; cells = rows
    INDEXER = "indexer"  # lightning-indexer keys (DSA, MSA, QSA)
    COMPRESSED = "compressed"  # DeepSeek-V4's CSA / HCA caches and compressor states


@dataclass(frozen=True)
class Context:
    """llama.cpp's cparams after its own derivation (llama_init_from_model and the llama_context constructor)."""

    n_ctx_asked: int
    n_ctx: int
    n_ctx_seq: int
    n_seq: int
    n_stream: int
    n_batch: int
    n_ubatch: int
    n_rs_seq: int
    kv_unified: bool
    flash_attn: FlashAttn  # as laid out: ON or OFF (auto counts as on when the memory is built)
    flash_attn_asked: FlashAttn
    type_k: GGMLType
    type_v: GGMLType
    swa_full: bool
    mtp: bool
    backend: Backend
    #: -fa auto where the backend has no kernel for the model's attention (CUDA: context.cuda_fa_missing): the
    #: cache is built for flash attention, then llama.cpp's probe turns it off for the graph (resolve_fused_ops)
    fa_off_in_graph: str = ""
    #: -fa on (or forced on by a quantized V) where the backend has no kernel: llama.cpp runs it on the CPU
    fa_on_cpu: str = ""
    #: the outputs the worst-case graph is reserved for, where a newer llama.cpp's log states n_outputs_max (0:
    #: every token of the batch, as llama.cpp of 2026-10-01 reserves it)
    n_outputs_max: int = 0

    @property
    def v_trans(self) -> bool:
        return self.flash_attn is FlashAttn.OFF

    @property
    def alignment(self) -> int:
        return self.backend.alignment

    @property
    def context_type(self) -> str:
        return "mtp" if self.mtp else "default"

    def alloc(self, t: GGMLType, ne0: int, nbytes: int) -> int:
        """The buffer bytes one tensor takes: ggml_backend_buft_get_alloc_size (CUDA's: cuda_alloc_size), padded
        to the alignment."""
        if self.backend.cuda_like and nbytes:
            nbytes = cuda_alloc_size(t, ne0, nbytes)
        return pad_to(nbytes, self.alignment)

    def to_dict(self) -> dict[str, Any]:
        return {
            "context_type": self.context_type,
            "n_ctx": self.n_ctx,
            "n_ctx_asked": self.n_ctx_asked,
            "n_ctx_seq": self.n_ctx_seq,
            "n_seq": self.n_seq,
            "n_stream": self.n_stream,
            "n_rs_seq": self.n_rs_seq,
            "kv_unified": self.kv_unified,
            "flash_attn": self.flash_attn_asked.value,
            "flash_attn_effective": self.flash_attn.value,
            "swa_full": self.swa_full,
            "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch,
            "type_k": self.type_k.name,
            "type_v": self.type_v.name,
            "backend": self.backend.value,
            "alignment": self.alignment,
        }


@dataclass(frozen=True)
class CachePlan:
    name: str  # e.g. "full attention", "sliding window", "recurrent state"
    kind: CacheKind
    layers: tuple[int, ...]
    cells: int  # KV cells per stream (recurrent: rows)
    streams: int
    type_k: str
    type_v: str | None  # None: no V tensor (MLA, K-only caches)
    k_bytes: int  # sum of ggml_nbytes of the K tensors (recurrent: r states)
    v_bytes: int  # (recurrent: s states)
    buffer_bytes: int  # every tensor padded to the backend alignment: what is allocated
    per_token_bytes: int  # bytes one more cell costs in every stream (0 when capped or constant)
    why: str = ""  # how cells were decided
    layer_bytes: tuple[int, ...] = ()  # buffer bytes of each layer in ``layers`` (device placement)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind.value,
            "layers": list(self.layers),
            "cells": self.cells,
            "streams": self.streams,
            "type_k": self.type_k,
            "type_v": self.type_v,
            "k_bytes": self.k_bytes,
            "v_bytes": self.v_bytes,
            "bytes": self.buffer_bytes,
            "per_token_bytes": self.per_token_bytes,
            "why": self.why,
        }


@dataclass(frozen=True)
class MemoryPlan:
    model: ModelDescription
    context: Context
    caches: tuple[CachePlan, ...]
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

    @property
    def total_bytes(self) -> int:
        return sum(c.buffer_bytes for c in self.caches)

    @property
    def per_token_bytes(self) -> int:
        """Marginal bytes of one more token of context (caches that still grow with context)."""
        return sum(c.per_token_bytes for c in self.caches)

    @property
    def layers(self) -> tuple[int, ...]:
        """The distinct layers that hold any cache (a DSA layer has an attention and an indexer cache)."""
        return tuple(sorted({il for c in self.caches for il in c.layers}))

    @property
    def has_cells(self) -> bool:
        """Whether any cache holds KV cells (a pure recurrent model holds state rows only)."""
        return any(c.kind is not CacheKind.RECURRENT for c in self.caches)

    def memory_dict(self) -> dict[str, Any]:
        return {
            "total_bytes": self.total_bytes,
            "per_token_bytes": self.per_token_bytes,
            "caches": [c.to_dict() for c in self.caches],
        }
