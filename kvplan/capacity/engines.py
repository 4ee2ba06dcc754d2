"""The serving engines on GPUs: the longest --max-model-len, the most sequences, or the least lossy KV dtype.

Exact integer searches over the engine layout (kvplan.runtimes.engines): a context fits when the pool holds
``max_num_seqs`` requests with their full reservation (vLLM: every group's admission blocks, less the null
block; SGLang: full-pool tokens and, for hybrid SWA, the SWA pool; TensorRT-LLM: whole blocks per request, as its
GUARANTEED_NO_EVICT scheduler reserves them), and the next token does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.capacity.request import Request
from kvplan.capacity.results import (
    Alternative,
    Constraint,
    DeviceUsage,
    FitResult,
    Mode,
    Shortfall,
)
from kvplan.capacity.weights import (
    DEFAULT_ENGINE_WEIGHTS,
    ENGINE_FORMATS,
    WEIGHT_TYPES,
    checkpoint_weights,
    engine_format,
    estimate_bytes,
)
from kvplan.errors import BadInputError
from kvplan.model import ModelDescription
from kvplan.runtimes.engines import CACHE_DTYPE_BYTES, Capacity, Engine, EngineSettings, capacity, layout
from kvplan.units import GIB

#: per-GPU overhead when not given: profiled activations + CUDA graphs (the reference's worked example)
DEFAULT_ENGINE_OVERHEAD_BYTES = 3 * GIB


@dataclass(frozen=True)
class EngineTarget:
    model: ModelDescription
    engine: Engine
    settings: EngineSettings  # with the engine's defaults for the GPU resolved
    gpu_bytes: int  # every rank's memory
    n_gpus: int
    gpu_label: str
    weight_bytes: int  # all ranks together
    weights_basis: str
    overhead_bytes: int
    overhead_given: bool

    @property
    def weight_bytes_per_rank(self) -> int:
        return self.weight_bytes // (self.settings.tensor_parallel_size * self.settings.pipeline_parallel_size)

    def capacity(self, settings: EngineSettings) -> Capacity:
        return capacity(
            self.model, self.engine, settings, self.gpu_bytes, self.weight_bytes_per_rank, self.overhead_bytes
        )


@dataclass(frozen=True)
class EngineFit:
    """The engine's side of a fit answer."""

    target: EngineTarget
    settings: EngineSettings  # as used (the dtype chosen by --cache-types auto)
    capacity: Capacity
    ctx: int  # tokens per sequence answered or checked (0: not even one token fits)
    parallel: int  # sequences asked (or, for max-parallel, found)
    requests: int  # sequences of ctx tokens that fit
    needed: int = 1  # sequences that must fit: 1 (the engine starts), or --min-parallel's for a context search

    @property
    def fits(self) -> bool:
        return self.ctx > 0 and self.requests >= max(1, self.needed)

    @property
    def needed_bytes(self) -> int:
        return max(1, self.needed) * self.capacity.request_bytes(max(1, self.ctx))

    @property
    def scheduler_cap(self) -> int | None:
        """The most requests the engine's scheduler runs at once: SGLang's max_running_requests as it resolves it,
        vLLM's --max-num-seqs (given, or its default for the GPU), TensorRT-LLM's --max_batch_size when given."""
        return self.capacity.max_requests or self.settings.max_num_seqs

    @property
    def running(self) -> int:
        """Requests of ctx that hold KV at once: those asked or fitting, at most the scheduler's cap."""
        cap = self.scheduler_cap
        return max(1, min(self.parallel, cap) if cap else self.parallel)

    @property
    def reserved_bytes(self) -> int:
        """KV the running requests reserve on the busiest GPU (the pool itself fills whatever memory is left)."""
        return self.running * self.capacity.request_bytes(max(1, self.ctx))


#: what a run line names where kvplan's model input is not something the engine takes (a kvplan spec)
MODEL_PLACEHOLDER = "<checkpoint>"


def served_model(model: ModelDescription, ref: str) -> str:
    """What the engine is started with: the Hugging Face id the catalog names, a checkpoint folder (a config.json
    is read from its folder), a URL or hf:// reference as given — and for a kvplan spec, which no engine reads,
    a placeholder (the run notes say so)."""
    import os

    if model.spec is not None and model.spec.hf_id:
        return model.spec.hf_id
    if ref.startswith("hf://"):
        return ref.removeprefix("hf://").split("@", 1)[0]
    if "://" in ref:
        return ref
    if ref.lower().endswith(".json"):
        return os.path.dirname(ref) or "."
    if ref.lower().endswith((".yaml", ".yml")):
        return MODEL_PLACEHOLDER
    return ref


def _model_note(engine: Engine, served: str, ref: str) -> tuple[str, ...]:
    if served != MODEL_PLACEHOLDER:
        return ()
    return (f"{ref} is kvplan's model spec, which {engine.label} does not read: start it with the checkpoint "
            f"(a Hugging Face id or folder) in place of {MODEL_PLACEHOLDER}",)  # fmt: skip


def _parallel(s: EngineSettings) -> str:
    if s.tensor_parallel_size * s.pipeline_parallel_size == 1:
        return ""
    return (
        f" (tp {s.tensor_parallel_size}"
        + (f" × pp {s.pipeline_parallel_size}" if s.pipeline_parallel_size > 1 else "")
        + ")"
    )


def engine_weights(model: ModelDescription, weights: str | None, weight_bytes: int | None) -> tuple[int, str]:
    """(bytes, basis) of the weights a serving engine loads: given; else the checkpoint's own — its safetensors
    index's size, or its format over its parameters counted from the architecture (a float32 checkpoint is loaded
    in 16 bits: vLLM's _resolve_auto_dtype downcasts it); else ``weights`` (--weights TYPE) or the checkpoint's
    format over the parameter count; else bf16. The basis says which."""
    fmt = model.weight_format
    if weight_bytes is not None:
        return weight_bytes, "given (--weight-bytes)"
    fp32 = fmt is not None and fmt.kind == "fp32"
    if weights is None and model.checkpoint_bytes and not fp32:
        return model.checkpoint_bytes, "exact: the checkpoint's safetensors index (what the engine loads)"
    count = model.param_count
    if weights is None and fmt is not None and not fmt.kind.startswith("unknown") and count is not None:
        total, basis, exact = checkpoint_weights(count, fmt, "bf16" if fp32 else None)
        return total, ("exact: " if exact else "estimate: ") + "the checkpoint's " + basis
    if weights is None and fmt is not None and fmt.kind.startswith("unknown"):
        raise BadInputError(
            f"{fmt.source}: {fmt.kind}, a quantization kvplan does not size; pass --weight-bytes SIZE (the "
            "safetensors' total) or --weights TYPE"
        )
    if weights in ENGINE_FORMATS and count is not None:
        total, basis, _ = checkpoint_weights(count, engine_format(weights))
        return total, "estimate: " + basis
    kind = weights or (fmt.kind if fmt is not None and fmt.kind in WEIGHT_TYPES else DEFAULT_ENGINE_WEIGHTS)
    if not model.n_params:
        raise BadInputError(f"{model.source}: no parameter count; pass --params N or --weight-bytes SIZE")
    total, basis = estimate_bytes(model.n_params, "bf16" if kind == "fp32" else kind)
    if model.params_source:
        basis += f"; parameters: {model.params_source}"
    return total, basis


class EngineSolver:
    def __init__(self, target: EngineTarget) -> None:
        self.target = target

    def max_ctx_per_seq(self, n_seq: int, limit: int) -> int:
        t = self.target
        return t.capacity(replace(t.settings, max_model_len=limit)).max_context(n_seq, limit)

    def max_parallel(self, ctx_per_seq: int) -> int:
        t = self.target
        return t.capacity(replace(t.settings, max_model_len=ctx_per_seq)).requests_that_fit(ctx_per_seq)


class EngineRuntime:
    """A serving engine behind the common runtime protocol."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.name
        self.label = engine.label

    def target(self, model: ModelDescription, req: Request) -> EngineTarget:
        assert req.hardware is not None  # build_request(need_hardware=True)
        hw = req.hardware
        # the flags as given; the context is the question the solver answers. --max-num-seqs (SGLang
        # --max-running-requests, TensorRT-LLM --max_batch_size) is the engine's scheduler cap, as the engine reads
        # it: it sizes SGLang's CUDA-graph reserve, not how many requests must fit (that is --min-parallel)
        s = replace(req.engine, max_model_len=None)
        if hw.model is not None:
            s = replace(s, gpu_family=hw.family, capability=hw.model.capability, gpu_name=hw.model.name)
        s = self.engine.resolve(s, hw.memory_bytes[0], hw.label)
        total, basis = engine_weights(model, req.weights, req.weight_bytes)
        if s.tensor_parallel_size * s.pipeline_parallel_size > 1:
            basis += f", split evenly over {s.tensor_parallel_size * s.pipeline_parallel_size} GPUs"
        overhead = DEFAULT_ENGINE_OVERHEAD_BYTES if req.overhead is None else req.overhead[0]
        layout(model, self.engine, s)  # refuse unsupported layouts before any search
        return EngineTarget(
            model,
            self.engine,
            s,
            hw.memory_bytes[0],
            hw.count,
            hw.label,
            total,
            basis,
            overhead,
            req.overhead is not None,
        )

    def solver(self, model: ModelDescription, req: Request) -> EngineSolver:
        return EngineSolver(self.target(model, req))

    def _attempt(self, t: EngineTarget, s: EngineSettings, ctx: int | None, parallel: int | None) -> EngineFit:
        limit = t.engine.default_max_len(t.model)
        if ctx is None:
            want = parallel or 1
            probe = t.capacity(replace(s, max_model_len=limit))
            best = probe.max_context(want, limit)
            cap = t.capacity(replace(s, max_model_len=best)) if best else probe
            return EngineFit(t, s, cap, best, want, cap.requests_that_fit(best) if best else 0, want)
        cap = t.capacity(replace(s, max_model_len=ctx))
        n = cap.requests_that_fit(ctx)
        return EngineFit(t, s, cap, ctx, n if parallel is None else parallel, n, parallel or 1)

    def fit(self, model: ModelDescription, req: Request) -> FitResult:
        """With --max-model-len: whether the engine starts (one request of that length fits: vLLM's
        check_enough_kv_cache_memory) and how many fit at once; without: the longest context for
        --min-parallel sequences (1)."""
        t = self.target(model, req)
        ctx = req.engine.max_model_len
        want = req.budgets.min_parallel
        parallel = None if ctx else want
        if req.cache_types_auto:  # the least lossy dtype where --min-parallel (1) requests of the context fit
            mode = Mode.CACHE_TYPES
            for dtype in self.engine.dtype_ladder:
                found = self._attempt(
                    t, replace(t.settings, kv_cache_dtype=dtype), ctx or self.engine.default_max_len(model), want or 1
                )
                if found.fits:
                    break
        else:
            mode = Mode.CHECK if ctx and parallel else Mode.MAX_PARALLEL if ctx else Mode.MAX_CTX
            found = self._attempt(t, t.settings, ctx, parallel)
        return self._result(found, mode, req, req.engine.max_num_seqs)

    def _result(self, f: EngineFit, mode: Mode, req: Request, max_num_seqs: int | None) -> FitResult:
        ref = req.model
        t, cap, engine = f.target, f.capacity, self.engine
        lay = cap.layout
        budget_given = f.settings.kv_cache_memory_bytes is not None
        overhead = t.overhead_bytes if engine.measures_overhead and not budget_given else 0
        devices = []
        for rank in range(t.n_gpus):
            stage = rank // f.settings.tensor_parallel_size
            devices.append(
                DeviceUsage(
                    f"GPU{rank}",
                    t.gpu_bytes,
                    lay.stage_ranges[stage],
                    t.weight_bytes_per_rank,
                    cap.kv_bytes(stage),
                    0,
                    overhead,
                )
            )
        reserved = f.reserved_bytes
        pool = cap.pool_bytes
        dtype = f.settings.kv_cache_dtype
        shortfall = None if f.fits else self._shortfall(f, overhead)
        run_ctx = f.ctx or cap.max_model_len
        return FitResult(
            runtime=self.name,
            runtime_label=self.label,
            model_name=t.model.name,
            mode=mode,
            fits=f.fits,
            ctx_per_seq=f.ctx,
            n_seq=max(1, f.parallel),
            cache="bf16 (auto)" if dtype == "auto" else dtype,
            hardware_label=t.gpu_label + _parallel(f.settings),
            devices=tuple(devices),
            kv_bytes=reserved,
            used_bytes=t.weight_bytes_per_rank + overhead + reserved,
            headroom=(pool - reserved) / pool if pool else 0.0,
            need_bytes=f.needed_bytes,
            have_bytes=pool,
            need_device="GPU0",
            run_command=engine.command(served_model(t.model, ref)),
            run_args=engine.run_args(lay, run_ctx, max_num_seqs, req.engine) if f.fits else (),
            weights_basis=t.weights_basis,
            overhead_basis=(
                "not needed: --kv-cache-memory-bytes sets the KV budget; activations and CUDA graphs must fit "
                "in what is left"
                if budget_given
                else "given (--overhead)"
                if t.overhead_given
                else "estimate of profiled activations + CUDA graphs (the reference's worked example); read "
                "the engine's startup log and pass --overhead"
            )
            if engine.measures_overhead
            else "none measured: activations and graphs must fit in the (1 − mem_fraction_static) slack",
            trained_ctx=engine.default_max_len(t.model),
            capped_by_trained=mode is Mode.MAX_CTX and f.fits and f.ctx >= engine.default_max_len(t.model),
            shortfall=shortfall,
            run_notes=(*engine.run_notes(lay), *_model_note(engine, served_model(t.model, ref), ref)) if f.fits else (),
            detail=f,
        )

    def _shortfall(self, f: EngineFit, overhead: int) -> Shortfall:
        t, cap = f.target, f.capacity
        weights = t.weight_bytes_per_rank
        budget = cap.kv_budget_bytes
        want_ctx, want_n = max(1, f.ctx or t.engine.default_max_len(t.model)), max(1, f.parallel)
        need_kv = want_n * cap.request_bytes(want_ctx)
        available = budget + weights + overhead  # what the engine lets weights, overhead and KV use
        if budget <= 0:
            constraint = Constraint.WEIGHTS if weights > available - overhead else Constraint.OVERHEAD
        else:
            constraint = Constraint.KV
        alternatives = []
        say = self.engine.spelling  # the engine's own flag names (SGLang --context-length, …)
        solver = EngineSolver(replace(t, settings=f.settings))
        best = solver.max_ctx_per_seq(want_n, want_ctx)
        if best and best < want_ctx:
            alternatives.append(Alternative("max-ctx", (say.max_model_len, str(best)), best, want_n))
        n = solver.max_parallel(want_ctx)
        if 1 <= n < want_n:
            alternatives.append(Alternative("max-parallel", (say.max_num_seqs, str(n)), want_ctx, n))
        for dtype in self.engine.dtype_ladder:
            if CACHE_DTYPE_BYTES[dtype] >= f.settings.dtype_bytes:
                continue  # only a smaller KV dtype can help
            trial = self._attempt(t, replace(f.settings, kv_cache_dtype=dtype), want_ctx, want_n)
            if trial.fits:
                alternatives.append(Alternative("cache-types", self.engine.dtype_args(dtype), want_ctx, want_n))
                break
        return Shortfall(constraint, "GPU0", available, weights, need_kv, 0, overhead, tuple(alternatives))
