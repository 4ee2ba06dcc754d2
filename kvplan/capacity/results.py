"""What every runtime's planner answers with: per-device usage, the fit answer, why it does not fit, and what
would. llama.cpp and the serving engines return the same types; only ``detail`` holds runtime-specific data."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol


class Mode(str, Enum):
    """The question a fit answers."""

    CHECK = "check"  # does this configuration fit?
    MAX_CTX = "max-ctx"  # the longest context per sequence for N sequences
    MAX_PARALLEL = "max-parallel"  # the most sequences of C tokens
    CACHE_TYPES = "cache-types"  # the least lossy cache types that fit


class Constraint(str, Enum):
    """What keeps a configuration from fitting on the tightest device."""

    WEIGHTS = "weights"  # the weights alone exceed the memory
    OVERHEAD = "overhead"  # weights fit, the overhead estimate does not leave room
    COMPUTE = "compute"  # the compute buffer at this context (f32 KQ scores with flash attention off)
    KV = "kv"  # the KV cache / state at the asked context and sequences


@dataclass(frozen=True)
class DeviceUsage:
    """One device's memory: a GPU (with a memory size) or the host (no limit is modelled)."""

    name: str  # "GPU0", "host"
    memory_bytes: int | None
    layers: tuple[int, int] | None  # first and last layer (inclusive); None: none
    weight_bytes: int
    kv_bytes: int
    compute_bytes: int  # the part of the compute buffer that grows with the context
    overhead_bytes: int  # CUDA context, the fixed compute buffer, profiled activations (an estimate unless given)
    #: what the compute buffer held at its peak, by role (logits, feed-forward, attention scores, inputs, copies
    #: of other devices' tensors, …), where kvplan has llama.cpp's graph
    compute_parts: tuple[tuple[str, int], ...] = ()

    @property
    def used_bytes(self) -> int:
        return self.weight_bytes + self.kv_bytes + self.compute_bytes + self.overhead_bytes

    @property
    def free_bytes(self) -> int | None:
        return None if self.memory_bytes is None else self.memory_bytes - self.used_bytes

    @property
    def free_share(self) -> float | None:
        if self.memory_bytes is None or self.free_bytes is None:
            return None
        return self.free_bytes / self.memory_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.name,
            "memory_bytes": self.memory_bytes,
            "layers": list(self.layers) if self.layers else None,
            "weight_bytes": self.weight_bytes,
            "kv_bytes": self.kv_bytes,
            "compute_bytes": self.compute_bytes,
            "overhead_bytes": self.overhead_bytes,
            "used_bytes": self.used_bytes,
            "free_bytes": self.free_bytes,
        }


@dataclass(frozen=True)
class Alternative:
    """A configuration the solver verified to fit, as the runtime's own flags."""

    what: str  # "max-ctx", "max-parallel", "cache-types", "gpu-layers", "memory"
    flags: tuple[str, ...]
    ctx_per_seq: int
    n_seq: int
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "flags": list(self.flags),
            "ctx_per_seq": self.ctx_per_seq,
            "n_seq": self.n_seq,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Shortfall:
    """Why the asked configuration does not fit: the binding constraint on the tightest device, in bytes."""

    constraint: Constraint
    device: str
    memory_bytes: int  # what the device has for this plan (vLLM: utilization × memory)
    weight_bytes: int
    kv_bytes: int
    compute_bytes: int
    overhead_bytes: int
    alternatives: tuple[Alternative, ...] = ()

    @property
    def need_bytes(self) -> int:
        return self.weight_bytes + self.kv_bytes + self.compute_bytes + self.overhead_bytes

    @property
    def short_bytes(self) -> int:
        return self.need_bytes - self.memory_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "constraint": self.constraint.value,
            "device": self.device,
            "memory_bytes": self.memory_bytes,
            "weight_bytes": self.weight_bytes,
            "kv_bytes": self.kv_bytes,
            "compute_bytes": self.compute_bytes,
            "overhead_bytes": self.overhead_bytes,
            "need_bytes": self.need_bytes,
            "short_bytes": self.short_bytes,
            "alternatives": [a.to_dict() for a in self.alternatives],
        }


def binding_constraint(memory: int, weights: int, overhead: int, compute: int) -> Constraint:
    """The first of weights, overhead, compute that no longer fits, else the KV."""
    if weights > memory:
        return Constraint.WEIGHTS
    if weights + overhead > memory:
        return Constraint.OVERHEAD
    if weights + overhead + compute > memory:
        return Constraint.COMPUTE
    return Constraint.KV


@dataclass(frozen=True)
class FitResult:
    """The answer to a fit question on some hardware, for any runtime."""

    runtime: str  # canonical name
    runtime_label: str
    model_name: str
    mode: Mode
    fits: bool
    ctx_per_seq: int  # tokens each sequence gets (llama.cpp: -c ÷ -np before padding; engines: max_model_len)
    n_seq: int
    cache: str  # "f16", "K q8_0 / V q5_1", "bf16 (auto)", "fp8"
    hardware_label: str
    devices: tuple[DeviceUsage, ...]  # the GPUs, then the host where anything stays there
    kv_bytes: int  # llama.cpp: the whole context; engines: what the sequences reserve per GPU
    used_bytes: int  # llama.cpp: weights + KV + compute + overhead on all GPUs; engines: per GPU
    headroom: float  # llama.cpp: the smallest free share of a GPU; engines: the KV pool's share left over
    need_bytes: int  # what "fits" compares: llama.cpp the tightest GPU's use; engines the KV the sequences reserve
    have_bytes: int  # against: llama.cpp that GPU's memory; engines the KV pool of a GPU
    need_device: str  # the GPU they were measured on
    run_command: str
    run_args: tuple[str, ...]
    weights_basis: str
    overhead_basis: str
    trained_ctx: int
    capped_by_trained: bool = False  # a max-ctx answer stopped at the model's trained context
    shared: bool = False  # the sequences share ctx_per_seq tokens (llama.cpp --kv-unified) rather than each having them
    shortfall: Shortfall | None = None
    warnings: tuple[str, ...] = ()
    run_notes: tuple[str, ...] = ()
    detail: Any = field(default=None, compare=False)  # LlamaCppFit | EngineFit

    @property
    def gpus(self) -> tuple[DeviceUsage, ...]:
        return tuple(d for d in self.devices if d.memory_bytes is not None)


class Solver(Protocol):
    """The questions budgets ask of a runtime on fixed hardware."""

    def max_ctx_per_seq(self, n_seq: int, limit: int) -> int:
        """The longest context per sequence (≤ limit) with which ``n_seq`` sequences fit; 0 if none."""
        ...

    def max_parallel(self, ctx_per_seq: int) -> int:
        """The most sequences of ``ctx_per_seq`` tokens that fit; 0 if not one."""
        ...
