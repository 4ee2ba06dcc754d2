"""One request evaluated end to end: the estimate (no hardware) or the runtime's fit (on hardware), the budgets,
and, when a budget fails, the nearest configuration that passes every budget (each one re-evaluated)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kvplan.capacity.budgets import Finding, Outcome, evaluate, outcome_of
from kvplan.capacity.llamacpp_settings import CACHE_TYPE_LADDER, settings_for
from kvplan.capacity.request import LlamaCppOptions, Request
from kvplan.capacity.results import FitResult
from kvplan.errors import RefusedConfigError, UnsupportedError
from kvplan.model import ModelDescription
from kvplan.runtimes.llamacpp import Backend, FlashAttn, LlamaCppSettings, MemoryPlan, plan, plan_mtp_draft
from kvplan.runtimes.llamacpp.plan import KV_PAD_CELLS
from kvplan.runtimes.names import CACHE_DTYPE_BYTES

if TYPE_CHECKING:
    from kvplan.runtimes.llamacpp.compute import ComputeBuffer


@dataclass(frozen=True)
class Estimate:
    """What llama.cpp allocates for one context configuration (and its MTP draft context)."""

    model: ModelDescription
    plan: MemoryPlan
    draft: MemoryPlan | None = None
    draft_model: ModelDescription | None = None  # -md: the draft model (None: the MTP draft of the main one)
    #: llama.cpp's compute buffer with every layer on the CPU backend (None: no graph for the architecture yet,
    #: or buffer rules other than the CPU's)
    compute: ComputeBuffer | None = None

    @property
    def plans(self) -> tuple[MemoryPlan, ...]:
        return (self.plan,) if self.draft is None else (self.plan, self.draft)

    @property
    def total_bytes(self) -> int:
        return sum(p.total_bytes for p in self.plans)

    def outcome(self) -> Outcome:
        ctx = self.plan.context
        tw = self.model.tensor_weights
        used = None if tw is None else self.total_bytes + tw.total_bytes
        if used is not None and self.draft_model is not None:
            dtw = self.draft_model.tensor_weights
            used = None if dtw is None else used + dtw.total_bytes
        return Outcome(self.total_bytes, used, ctx.n_seq, ctx.n_ctx_seq, self.model.n_ctx_train)


def load_models(req: Request) -> Request:
    """The request with its models loaded: the main one (with the parameter count it gives, for weight
    estimates) and the -md draft, read as any model input (a GGUF, a spec, a config.json, a catalog name). The
    edge does this once; no solver reads a file."""
    from kvplan.sources import load_model

    o = req.llamacpp
    if o.mtp and o.model_draft:
        raise req.origin("model_draft").error("one draft at a time: -md or --mtp")
    model = req.loaded if req.loaded is not None else load_model(req.model)
    if req.params is not None:
        model = replace(model, n_params=req.params, param_count=None, params_source="given (--params)")
    draft = req.draft
    if o.model_draft and draft is None:
        draft = load_model(o.model_draft)
    return replace(req, loaded=model, draft=draft)


def model_of(req: Request) -> ModelDescription:
    """The loaded model of a request (kvplan.capacity.deployment.load_models has run)."""
    assert req.loaded is not None, "load_models(req) first"
    return req.loaded


def estimate(model: ModelDescription, req: Request) -> Estimate:
    """llama.cpp's exact allocation for the request's flags (CPU buffer rules unless --backend cuda)."""
    o = req.llamacpp
    settings = settings_for(o, Backend.CPU)
    main = plan(model, settings)
    assert req.draft is not None or not o.model_draft, "load_models(req) first"
    draft = None
    if o.mtp:
        draft = plan_mtp_draft(model, settings, o.cache_type_k_draft or "f16", o.cache_type_v_draft or "f16")
    if req.draft is not None:
        draft = plan(req.draft, draft_settings(settings, o))
    compute = None
    if main.context.backend is Backend.CPU:  # (the graph's modules only where it is built)
        from kvplan.runtimes.llamacpp.compute import cpu_compute_buffer

        compute = cpu_compute_buffer(main)
    return Estimate(model, main, draft, req.draft, compute)


def draft_settings(settings: LlamaCppSettings, o: LlamaCppOptions) -> LlamaCppSettings:
    """common_base_params_to_speculative: the main context's flags (-c, -np, -kvu, -b, -ub, -fa) with the draft's
    cache types (-ctkd / -ctvd, f16)."""
    return replace(settings, type_k=o.cache_type_k_draft or "f16", type_v=o.cache_type_v_draft or "f16")


@dataclass(frozen=True)
class Suggestion:
    """The nearest configuration that passes every budget, as the runtime's flags."""

    flags: tuple[str, ...]
    what: str  # cache-types, ctx, parallel

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "flags": list(self.flags)}


@dataclass(frozen=True)
class Evaluation:
    request: Request
    model: ModelDescription
    estimate: Estimate | None
    fit: FitResult | None
    findings: tuple[Finding, ...]
    suggestion: Suggestion | None = None

    @property
    def passed(self) -> bool:
        return all(f.passed for f in self.findings) and (self.fit is None or self.fit.fits)


def evaluate_request(model: ModelDescription, req: Request, *, suggest: bool = False) -> Evaluation:
    """The request's answer and its budgets; with ``suggest``, a verified passing alternative when one fails."""
    needs_solver = req.budgets.min_ctx is not None or req.budgets.min_parallel is not None
    if req.hardware is None:
        if req.is_engine:
            raise req.origin("engine").error("the serving engines are planned on hardware: give gpu or memory")
        est = estimate(model, req)
        result = Evaluation(req, model, est, None, _findings(req, est.outcome(), None))
    else:
        from kvplan.capacity.runtime import get_runtime  # the engines' code only for a fit on hardware

        runtime = get_runtime(req.runtime)
        fit = runtime.fit(model, req)
        solved = req
        if req.cache_types_auto and req.is_engine and fit.fits:  # the budgets hold for the cache type chosen
            chosen = fit.detail.settings.kv_cache_dtype
            solved = replace(req, engine=replace(req.engine, kv_cache_dtype=chosen), cache_types_auto=False)
        solver = runtime.solver(model, solved) if needs_solver else None
        result = Evaluation(req, model, None, fit, _findings(req, outcome_of(fit), solver))
    if suggest and not result.passed:
        result = replace(result, suggestion=nearest_passing(model, req))
    return result


def _findings(req: Request, outcome: Outcome, solver: Any) -> tuple[Finding, ...]:
    try:
        return evaluate(outcome, req.budgets, solver)
    except ValueError as exc:
        raise req.origin("max_total").error(str(exc)) from None


def _passes(model: ModelDescription, req: Request) -> bool:
    try:
        return evaluate_request(model, req).passed
    except (RefusedConfigError, UnsupportedError):
        return False  # a candidate the runtime refuses is simply not a suggestion


def _largest(lo: int, hi: int, ok: Any) -> int:
    """The largest k in [lo, hi] with ok(k), assuming ok is monotone (True then False); 0 if none."""
    if hi < lo or not ok(lo):
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def nearest_passing(model: ModelDescription, req: Request) -> Suggestion | None:
    """A cheaper cache type, else the longest context per sequence, else the most sequences that pass every
    budget; each candidate is evaluated in full before it is suggested."""
    return _nearest_engine(model, req) if req.is_engine else _nearest_llamacpp(model, req)


def _nearest_llamacpp(model: ModelDescription, req: Request) -> Suggestion | None:
    o = req.llamacpp
    s = settings_for(o, Backend.CPU)
    current = (s.type_k, s.type_v)
    start = CACHE_TYPE_LADDER.index(current) + 1 if current in CACHE_TYPE_LADDER else 0
    for tk, tv in CACHE_TYPE_LADDER[start:]:
        fa = o.flash_attn
        if tv != "f16" and fa is FlashAttn.OFF:
            fa = FlashAttn.ON  # a quantized V cache needs flash attention
        trial = replace(req, llamacpp=replace(o, cache_type_k=tk, cache_type_v=tv, flash_attn=fa))
        if _passes(model, trial):
            flags = ("-ctk", tk, "-ctv", tv) + (("-fa", "on") if fa is not o.flash_attn else ())
            return Suggestion(flags, "cache-types")
    n_seq = o.parallel or 1
    per_seq = plan(model, s).context.n_ctx_seq if o.ctx_size is not None else (o.ctx_per_seq or model.n_ctx_train)

    def with_ctx(k: int) -> Request:
        opts = replace(o, ctx_size=None, ctx_per_seq=k * KV_PAD_CELLS, parallel=n_seq)
        return replace(req, llamacpp=opts)

    k = _largest(
        1, per_seq // KV_PAD_CELLS - (1 if per_seq % KV_PAD_CELLS == 0 else 0), lambda k: _passes(model, with_ctx(k))
    )
    if k:
        return Suggestion(("-c", str(k * KV_PAD_CELLS * n_seq), "-np", str(n_seq)), "ctx")
    if n_seq > 1:
        n = _largest(1, n_seq - 1, lambda n: _passes(model, replace(req, llamacpp=_per_seq(o, per_seq, n))))
        if n:
            return Suggestion(("-c", str(per_seq * n), "-np", str(n)), "parallel")
    return None


def _per_seq(o: LlamaCppOptions, per_seq: int, n: int) -> LlamaCppOptions:
    return replace(o, ctx_size=None, ctx_per_seq=per_seq, parallel=n)


def _nearest_engine(model: ModelDescription, req: Request) -> Suggestion | None:
    e = req.engine
    from kvplan.runtimes.engines import ENGINES

    engine = ENGINES[req.runtime]
    say = engine.spelling  # the engine's own flag names (SGLang --context-length, TensorRT-LLM --max_seq_len)
    current = CACHE_DTYPE_BYTES[e.kv_cache_dtype]
    for dtype in engine.dtype_ladder:
        if CACHE_DTYPE_BYTES[dtype] < current and _passes(model, replace(req, engine=replace(e, kv_cache_dtype=dtype))):
            return Suggestion(engine.dtype_args(dtype), "cache-types")
    ctx = e.max_model_len or model.engine_ctx
    best = _largest(1, ctx - 1, lambda c: _passes(model, replace(req, engine=replace(e, max_model_len=c))))
    if best:
        return Suggestion((say.max_model_len, str(best)), "ctx")
    n_seq = e.max_num_seqs or 1
    if n_seq > 1:
        n = _largest(1, n_seq - 1, lambda n: _passes(model, replace(req, engine=replace(e, max_num_seqs=n))))
        if n:
            return Suggestion((say.max_num_seqs, str(n)), "parallel")
    return None
