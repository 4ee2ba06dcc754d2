"""`kvplan fit --engine vllm|sglang|trtllm`: the largest context, the most sequences or the least lossy cache dtype.

Exact integer searches over the engine layout of kvplan.layout.serving: a context fits when the pool holds
``parallel`` requests with their full reservation (vLLM: every group's admission blocks, less the null block;
SGLang: full-pool tokens and, for hybrid SWA, the SWA pool; TensorRT-LLM: whole blocks per request, as its
GUARANTEED_NO_EVICT scheduler reserves them), and the next token does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.errors import BadInputError
from kvplan.layout.serving import (
    Capacity,
    EngineSettings,
    capacity,
    dtype_ladder,
    gpu_family,
    layout,
    vllm_batched_tokens,
)
from kvplan.model import ModelDescription
from kvplan.weights import estimate_bytes

GIB = 1 << 30
#: per-GPU overhead when not given: profiled activations + CUDA graphs (the reference's worked example)
DEFAULT_ENGINE_OVERHEAD_BYTES = 3 * GIB


@dataclass(frozen=True)
class EngineTarget:
    model: ModelDescription
    settings: EngineSettings
    gpu_bytes: int  # every rank's memory (the engines take the smallest rank's capacity)
    n_gpus: int
    gpu_label: str
    weight_bytes: int  # all ranks together
    weights_basis: str
    overhead_bytes: int
    overhead_basis: str

    @property
    def weight_bytes_per_rank(self) -> int:
        return self.weight_bytes // (self.settings.tp * self.settings.pp)

    def capacity(self, settings: EngineSettings) -> Capacity:
        return capacity(self.model, settings, self.gpu_bytes, self.weight_bytes_per_rank, self.overhead_bytes)


@dataclass(frozen=True)
class EngineFit:
    target: EngineTarget
    settings: EngineSettings  # as used (the cache dtype chosen by cache-types auto)
    capacity: Capacity
    ctx: int  # tokens per sequence answered or checked (0: not even one token fits)
    parallel: int  # sequences asked (or, for max-parallel, found)
    requests: int  # sequences of ctx tokens that fit
    mode: str  # "check" | "max-ctx" | "max-parallel" | "cache-types"

    @property
    def fits(self) -> bool:
        return self.ctx > 0 and self.requests >= max(1, self.parallel)

    @property
    def reserved_bytes(self) -> int:
        """KV the sequences reserve on the busiest GPU (the pool itself fills whatever memory is left)."""
        return max(1, self.parallel) * self.capacity.request_bytes(self.ctx)


def make_target(model: ModelDescription, settings: EngineSettings, memory: list[int], gpu_label: str,
                weight_type: str | None, weight_bytes: int | None, overhead: int | None) -> EngineTarget:  # fmt: skip
    """Check the GPU count against tp × pp, resolve the weights, the overhead and vLLM's batch default."""
    s = settings
    if len(memory) != s.tp * s.pp:
        raise BadInputError(f"{s.engine}: {len(memory)} GPU(s) given for --tp {s.tp} × --pp {s.pp} = {s.tp * s.pp}")
    if len(set(memory)) != 1:
        raise BadInputError(f"{s.engine}: every rank takes the smallest rank's capacity; give GPUs of one size")
    if weight_bytes is not None:
        total, basis = weight_bytes, "given (--weight-bytes)"
    elif model.n_params:
        total, basis = estimate_bytes(model.n_params, weight_type or "bf16")
    else:
        raise BadInputError(f"{model.source}: no parameter count; pass --params N or --weight-bytes SIZE")
    if s.tp * s.pp > 1:
        basis += f", split evenly over {s.tp * s.pp} GPUs"
    if overhead is None:
        over, over_basis = DEFAULT_ENGINE_OVERHEAD_BYTES, (
            f"{DEFAULT_ENGINE_OVERHEAD_BYTES / GIB:.2f} GiB estimate of profiled activations + CUDA graphs (the "
            "reference's worked example); read the engine's startup log and pass --overhead")  # fmt: skip
    else:
        over, over_basis = overhead, "given (--overhead)"
    if s.engine == "vllm" and s.max_num_batched_tokens is None:
        s = replace(s, max_num_batched_tokens=vllm_batched_tokens(memory[0], gpu_label))
    s = replace(s, gpu_family=gpu_family(gpu_label))
    layout(model, s)  # refuse unsupported layouts before any search
    return EngineTarget(model, s, memory[0], len(memory), gpu_label, total, basis, over, over_basis)


def _attempt(t: EngineTarget, s: EngineSettings, ctx: int | None, parallel: int | None, mode: str) -> EngineFit:
    limit = t.model.n_ctx_train
    if ctx is None:
        want = parallel or 1
        probe = t.capacity(replace(s, max_model_len=limit))
        best = probe.max_context(want, limit)
        cap = t.capacity(replace(s, max_model_len=best)) if best else probe
        return EngineFit(t, s, cap, best, want, cap.requests_that_fit(best) if best else 0, mode)
    cap = t.capacity(replace(s, max_model_len=ctx))
    n = cap.requests_that_fit(ctx)
    if parallel is None:
        return EngineFit(t, s, cap, ctx, n, n, mode)
    return EngineFit(t, s, cap, ctx, parallel, n, mode)


def solve(t: EngineTarget, ctx: int | None, parallel: int | None, cache_types_auto: bool = False) -> EngineFit:
    """check (ctx and parallel), max-parallel (ctx), max-ctx (neither, or parallel), cache-types (auto)."""
    if cache_types_auto:
        want_ctx = ctx or t.model.n_ctx_train
        found = None
        for dtype in dtype_ladder(t.settings.engine):
            found = _attempt(t, replace(t.settings, cache_dtype=dtype), want_ctx, parallel or 1, "cache-types")
            if found.fits:
                break
        assert found is not None
        return found
    mode = "check" if ctx is not None and parallel is not None else "max-parallel" if ctx is not None else "max-ctx"
    return _attempt(t, t.settings, ctx, parallel, mode)
