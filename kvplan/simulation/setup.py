"""From a deployment (model, runtime flags, GPUs) to the scheduler's settings and the roofline's cost model: the
same engine layout and KV pool `fit` computes (proven against the runtime's own planning)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kvplan.capacity.request import Request
from kvplan.errors import RefusedConfigError, UnsupportedError, UsageError
from kvplan.model import ModelDescription
from kvplan.runtimes import canonical_runtime
from kvplan.runtimes.engine_settings import EngineSettings
from kvplan.runtimes.names import LLAMACPP
from kvplan.simulation.llamacpp import ServerConfig, ServerSimulator
from kvplan.simulation.roofline import CostModel, Hardware, token_costs
from kvplan.simulation.run import MAX_STEPS, SimResult, SimulationError, Simulator, StepLimits, VllmSimulator
from kvplan.simulation.sglang.flags import SglangSchedule
from kvplan.simulation.vllm import GroupSpec, SchedulerConfig
from kvplan.simulation.workload import Lengths, Workload
from kvplan.units import Units, format_size


@dataclass(frozen=True)
class Prepared:
    """What a run needs, and what the report says about the engine."""

    model: ModelDescription
    engine: str  # the runtime's name (llama.cpp, vllm)
    label: str  # "vLLM 0.33.0 on 1× H100-80GB"
    settings: Callable[[Units], str]  # the schedule's settings, in the runtime's flags
    scheduler: dict[str, Any]  # the same, for JSON
    simulator: Simulator  # the engine's schedule over time
    cost: CostModel
    notes: tuple[str, ...]
    failure: str  # what running out of KV means here: vLLM preempts, SGLang retracts, llama-server fails requests
    kv_bytes: int  # the KV cache per GPU (vLLM's budget; llama.cpp's allocation on the GPUs)

    def run(self, workload: Workload, progress: Callable[[float, int], None] | None = None) -> SimResult:
        needed = steps_needed(self.simulator.limits(), workload, self.cost)
        if needed > MAX_STEPS:
            raise SimulationError(
                f"the workload needs at least about {needed:,} {self.simulator.steps_of} steps (at most "
                f"{MAX_STEPS:,} are simulated): shorten --duration or lower --request-rate"
            )
        return self.simulator.run(self.cost, workload, progress)


def steps_needed(limits: StepLimits, w: Workload, cost: CostModel) -> int:
    """A floor on the steps a workload takes, worked out before it runs: every output token of a request takes a
    step of its own and a step carries at most one token per running request (--max-num-seqs, -np) and at most a
    batch of tokens (--max-num-batched-tokens, -b); drawn lengths count at their typical value (the median of a
    lognormal), a rate at rate × duration. A fixed concurrency keeps requests in flight for the whole duration,
    and no step takes longer than a full batch at the longest context: at least duration / that many steps."""
    seqs, batch, cap, longest = limits.seqs, limits.batch, limits.cap, limits.longest
    if w.trace is not None:
        n = float(len(w.trace))
        prompt, output = float(sum(r.prompt for r in w.trace)), float(sum(r.output for r in w.trace))
    elif w.rate is not None:
        n = w.rate * w.duration
        prompt, output = n * _typical(w.prompt), n * _typical(w.output)
    else:
        slowest = cost.step([(batch, longest)]).seconds
        return int(w.duration / slowest) if slowest > 0 else 0
    if cap is not None:
        output = min(output, n * cap)
    prompt = max(0.0, prompt - n * w.shared_prefix)  # a shared prefix may come from the cache
    return int(max(output / max(seqs, 1), (prompt + output) / max(batch, 1)))


def _typical(lengths: Lengths) -> float:
    if lengths.kind == "uniform":
        return (lengths.a + lengths.b) / 2
    return lengths.a  # fixed: the length; lognormal: its median (below its mean)


def hardware_for(
    req: Request, bandwidth: float | None, peak_tflops: float | None, *, need_peak: bool = True
) -> Hardware:
    """The GPU's bandwidth and dense peak: the table's, or the flags' (either overrides)."""
    hw = req.hardware
    name = hw.model.name if hw is not None and hw.model is not None else None
    from kvplan.capacity.hardware import perf_of, with_perf

    known = perf_of(name)
    if known is None and (bandwidth is None or (need_peak and peak_tflops is None)):
        wanted = "--bandwidth GB/s and --peak-tflops" if need_peak else "--bandwidth GB/s"
        raise UsageError(
            f"no bandwidth{' and peak FLOPS' if need_peak else ''} for {hw.label if hw else 'this GPU'} in "
            f"kvplan's table ({', '.join(with_perf())}); give {wanted}",
            "--gpu",
        )
    bw = bandwidth * 1e9 if bandwidth is not None else known[0] if known else 0.0
    fl = peak_tflops * 1e12 if peak_tflops is not None else known[1] if known else 0.0
    source = known[2] if known is not None and bandwidth is None and peak_tflops is None else "given"
    return Hardware(bw, fl, source)


def decode_floors(
    model: ModelDescription, req: Request, totals: tuple[int, ...], n_seq: int, bandwidth: float | None
) -> tuple[tuple[tuple[int, float], ...], str]:
    """curve --gpu: at each point, the bytes one decode step reads and the ITL floor at the GPU's bandwidth, and
    the basis of that figure. A token reads one row of the embedding table; an MoE step at least its dense part
    and one token's experts; every step reads the whole cache, once, for all the sequences."""
    from kvplan.capacity.weights import model_weights
    from kvplan.simulation.roofline import active, decode_floor, expert_fraction

    hw = hardware_for(req, bandwidth, None, need_peak=False)
    weights = model_weights(model, req.weights, req.weight_bytes)
    act = active(model, expert_fraction(model))
    read = round((weights.total_bytes - weights.input_bytes) * act.read_share)
    basis = (
        f"decode reads: the weights a token passes through ({weights.basis}) and the whole cache, once per step, "
        f"for all {n_seq} sequence(s); ITL floor = that at {hw.bandwidth / 1e12:.3g} TB/s "
        f"({hw.source}), a floor, never a measurement" + (f"; {act.note}" if act.note else "")
    )
    return tuple(decode_floor(read, total, hw) for total in totals), basis


def prepare(
    model: ModelDescription,
    req: Request,
    *,
    async_scheduling: bool = True,
    bandwidth: float | None = None,
    peak_tflops: float | None = None,
    sglang: SglangSchedule | None = None,
) -> Prepared:
    name = canonical_runtime(req.runtime)
    if name == LLAMACPP:
        return prepare_server(model, req, hardware_for(req, bandwidth, peak_tflops))
    from kvplan.capacity.engines import EngineRuntime
    from kvplan.runtimes.engines import ENGINES
    from kvplan.runtimes.engines.sglang import SGLang

    engine = ENGINES.get(name)
    if isinstance(engine, SGLang):
        return prepare_sglang(model, req, sglang or SglangSchedule(), hardware_for(req, bandwidth, peak_tflops))
    if engine is None or not engine.simulated:
        raise UnsupportedError(
            "simulate follows vLLM's and SGLang's own schedulers (ported and proven step for step) and "
            "llama-server's slots; give --engine vllm, sglang or llama.cpp (TensorRT-LLM's scheduler is not "
            "simulated yet)"
        )
    target = EngineRuntime(engine).target(model, req)
    s = target.settings
    max_len = req.engine.max_model_len or s.max_model_len or engine.default_max_len(model)
    cap = target.capacity(replace(s, max_model_len=max_len))
    caching = s.enable_prefix_caching is not False
    several, checkpoint = _groups(model, cap.layout.groups, caching)
    if cap.requests_that_fit(max_len) < 1:
        raise RefusedConfigError(
            f"vLLM refuses to start: one request of --max-model-len {max_len:,} tokens needs more KV cache than "
            f"the {cap.tokens:,} tokens the GPU leaves; lower --max-model-len"
        )
    assert s.max_num_batched_tokens is not None and s.max_num_seqs is not None  # resolved for the GPU
    config = SchedulerConfig(
        num_blocks=cap.blocks,
        block_size=cap.layout.block_tokens,
        max_model_len=max_len,
        max_num_batched_tokens=s.max_num_batched_tokens,
        max_num_seqs=s.max_num_seqs,
        prefix_caching=caching,
        async_scheduling=async_scheduling,
        groups=several,
        state_checkpoint=checkpoint,
    )
    cost, notes = _engine_cost(model, target, cap, hardware_for(req, bandwidth, peak_tflops))

    def settings(units: Units) -> str:
        return (
            f"block {config.block_size} tokens × {cap.blocks - 1:,} blocks ({cap.tokens:,} KV tokens, "
            f"{format_size(cap.kv_budget_bytes, units)} per GPU), --max-model-len {config.max_model_len:,}, "
            f"--max-num-batched-tokens {config.max_num_batched_tokens:,}, --max-num-seqs {config.max_num_seqs:,}, "
            f"prefix caching {'on' if config.prefix_caching else 'off'}, "
            f"{'async' if config.async_scheduling else 'sync'} scheduling"
        )

    scheduler = {
        "num_blocks": config.num_blocks,
        "block_size": config.block_size,
        "max_model_len": config.max_model_len,
        "max_num_batched_tokens": config.max_num_batched_tokens,
        "max_num_seqs": config.max_num_seqs,
        "prefix_caching": config.prefix_caching,
        "async_scheduling": config.async_scheduling,
    }
    notes.append(f"the scheduler is vLLM {target.engine.version}'s own, ported and proven step for step")
    return Prepared(
        model,
        target.engine.name,
        f"{target.engine.label} {target.engine.version} on {target.gpu_label}",
        settings,
        scheduler,
        VllmSimulator(config),
        cost,
        tuple(notes),
        "preemptions",
        cap.kv_budget_bytes,
    )


def _engine_cost(model: ModelDescription, target: Any, cap: Any, hardware: Hardware) -> tuple[CostModel, list[str]]:
    """The roofline's cost of a step on one rank of the busiest pipeline stage, and how it was worked out."""
    s = target.settings
    ranks = s.tensor_parallel_size * s.pipeline_parallel_size
    act, attention, notes = token_costs(model)
    lay = cap.layout
    busiest = [lay.specs[ref] for ref in lay.stages[lay.busiest_stage]]
    windows: dict[int, int] = {}
    for spec in busiest:
        if spec.window:
            windows[spec.window] = windows.get(spec.window, 0) + spec.token_bytes
    cost = CostModel(
        weight_bytes=round(target.weight_bytes_per_rank * act.read_share),
        flops_per_token=2.0 * (act.params or target.weight_bytes // 2) / ranks,
        kv_bytes_per_token=sum(spec.token_bytes for spec in busiest if not spec.window and spec.kind != "state"),
        state_bytes=sum(spec.content_bytes for spec in busiest if spec.kind == "state"),
        windowed=tuple((b, w) for w, b in sorted(windows.items())),
        attention_flops_per_pair=attention / ranks,
        hardware=hardware,
    )
    return cost, notes


def _refuse_sglang(s: EngineSettings) -> None:
    """What simulate does not follow of SGLang: its pipeline-parallel loop."""
    if s.pipeline_parallel_size > 1:
        raise UnsupportedError(
            "simulate follows SGLang's event loop without pipeline parallelism (its --pp-size loop keeps several "
            "micro-batches in flight); drop --pp-size"
        )


def _chunk(size: int | None) -> str:
    return "-1 (chunking off: a prompt prefills whole)" if size is None else f"{size:,}"


def prepare_sglang(model: ModelDescription, req: Request, flags: SglangSchedule, hardware: Hardware) -> Prepared:
    """SGLang with the request's flags and SGLang's defaults for the GPU, on the token pool `fit --engine sglang`
    sizes (proven against SGLang's own sizing)."""
    from kvplan.capacity.engines import EngineRuntime
    from kvplan.runtimes.engines import ENGINES
    from kvplan.runtimes.engines.sglang import (
        SWA_EVICTION_INTERVAL,
        SGLang,
        mamba_grids,
        prefill_chunk,
        prefill_tokens,
        sliding_window_size,
    )
    from kvplan.simulation.sglang.engine import SglangSimulator
    from kvplan.simulation.sglang.scheduler import SchedulerConfig as SglangConfig

    engine = ENGINES[SGLang.name]
    target = EngineRuntime(engine).target(model, req)
    s = target.settings
    _refuse_sglang(s)
    max_len = req.engine.max_model_len or s.max_model_len or engine.default_max_len(model)
    cap = target.capacity(replace(s, max_model_len=max_len))
    grids = mamba_grids(model, cap.layout.block_tokens) if cap.state_slots else None
    if cap.state_slots and grids is None:
        raise UnsupportedError(
            f"{model.name}: SGLang's Mamba checkpoint grid for the {model.arch} architecture is not known to kvplan; "
            "simulate follows SGLang's Mamba pool for Nemotron-H, Falcon-H1, Granite 4.0-H and Qwen3-Next / Qwen3.5"
        )
    window = sliding_window_size(model) if cap.swa_tokens is not None else None
    if cap.swa_tokens is not None and window is None:
        raise UnsupportedError(f"{model.name}: SGLang's sliding window for this model is not known to kvplan")
    if cap.tokens <= 0 or not cap.max_requests:
        raise RefusedConfigError(f"SGLang has no KV pool for {model.name} here: {cap.basis}")
    config = SglangConfig(
        max_total_num_tokens=cap.tokens,
        max_running_requests=cap.max_requests,
        max_prefill_tokens=prefill_tokens(s),
        chunked_prefill_size=chunk if (chunk := prefill_chunk(s, target.gpu_bytes)) > 0 else None,  # -1: off
        context_len=max_len,
        page_size=cap.layout.block_tokens,
        schedule_conservativeness=flags.schedule_conservativeness,
        radix_cache=s.enable_prefix_caching is not False,
        mixed_chunk=flags.enable_mixed_chunk,
        schedule_policy=flags.schedule_policy,
        swa_tokens=cap.swa_tokens,
        sliding_window=window,
        mamba_slots=cap.state_slots or None,
        mamba_chunk=grids[0] if grids else 128,
        mamba_grid=grids[1] if grids else 128,
        mamba_track=grids[2] if grids else 256,
        # the "auto" Mamba radix cache strategy: the extra buffer with the overlap loop or pages, no_buffer otherwise
        mamba_extra_buffer=s.enable_prefix_caching is not False
        and (not s.disable_overlap_schedule or cap.layout.block_tokens > 1),
    )
    overlap = not s.disable_overlap_schedule
    cost, notes = _engine_cost(model, target, cap, hardware)

    def settings(units: Units) -> str:
        budget = format_size(cap.kv_budget_bytes, units)
        pools = f"({budget} per GPU)"
        if config.swa_tokens is not None:
            window = config.sliding_window or 0
            pools = f"and {config.swa_tokens:,} in the sliding-window pool (window {window:,}), {budget} per GPU in all"
        elif config.mamba_slots is not None:
            pools = f"and {config.mamba_slots:,} Mamba state slots, {budget} per GPU in all"
        return (
            f"{config.max_total_num_tokens:,} KV tokens in pages of {config.page_size} {pools}"
            f", --context-length {config.context_len:,}, "
            f"--max-running-requests {config.max_running_requests:,}, --chunked-prefill-size "
            f"{_chunk(config.chunked_prefill_size)}, --max-prefill-tokens {config.max_prefill_tokens:,}, radix cache "
            f"{'on' if config.radix_cache else 'off'}, --schedule-policy {config.schedule_policy}, "
            f"{'overlap' if overlap else 'normal'} event loop" + (", mixed chunks" if config.mixed_chunk else "")
        )

    scheduler = {
        "max_total_num_tokens": config.max_total_num_tokens,
        "swa_max_total_num_tokens": config.swa_tokens,
        "sliding_window_size": config.sliding_window,
        "max_mamba_cache_size": config.mamba_slots,
        "page_size": config.page_size,
        "context_len": config.context_len,
        "max_running_requests": config.max_running_requests,
        "chunked_prefill_size": -1 if config.chunked_prefill_size is None else config.chunked_prefill_size,
        "max_prefill_tokens": config.max_prefill_tokens,
        "radix_cache": config.radix_cache,
        "schedule_policy": config.schedule_policy,
        "schedule_conservativeness": config.schedule_conservativeness,
        "enable_mixed_chunk": config.mixed_chunk,
        "overlap_schedule": overlap,
    }
    notes.append(f"the scheduler is SGLang {engine.version}'s own, ported and proven step for step")
    if config.mamba_slots is not None and grids is not None:
        chunk, grid, track, own = grids
        notes.append(
            "the Mamba pool: each running request holds a state slot"
            + (
                (" and two checkpoint slots" if overlap else " and a checkpoint slot")
                if config.mamba_extra_buffer
                else ""
            )
            + f"; the radix cache keeps a state where a prefill checkpoints it (every {grid} tokens of a chunk) or "
            f"a decode reaches a multiple of {track}, and a cached prefix counts only as far as its last state"
            if config.radix_cache
            else "; without the radix cache no state is kept"
        )
        if not own:
            notes.append(
                f"mamba_cache_chunk_size {chunk}: SGLang's default for {model.arch}; a checkpoint's config.json "
                "states its own (chunk_size / mamba_chunk_size), which kvplan reads when MODEL is that config"
            )
    if config.swa_tokens is not None:
        notes.append(
            f"tokens in use count the full pool; the sliding-window pool beside it ({config.swa_tokens:,} tokens) "
            f"keeps each request's last {config.sliding_window:,} (SGLang frees the rest every "
            f"{SWA_EVICTION_INTERVAL} decode steps) and admits a prefill only while it has room for the window"
        )
    if s.chunked_prefill_size is None:
        notes.append(
            f"--chunked-prefill-size {config.chunked_prefill_size:,}: SGLang's default for a GPU of "
            f"{format_size(target.gpu_bytes)} (handle_gpu_memory_settings)"
        )
    return Prepared(
        model,
        target.engine.name,
        f"{target.engine.label} {target.engine.version} on {target.gpu_label}",
        settings,
        scheduler,
        SglangSimulator(config, overlap),
        cost,
        tuple(notes),
        "retractions",
        cap.kv_budget_bytes,
    )


def _groups(model: ModelDescription, groups: Any, caching: bool) -> tuple[tuple[GroupSpec, ...], int | None]:
    """The scheduler's KV cache groups (none for one full-attention group) and the state groups' prefill
    checkpoint alignment with prefix caching (vLLM's align mode)."""
    kinds = sorted({g.spec.kind for g in groups})
    if len(groups) == 1 and groups[0].spec.full_type:
        return (), None
    if not set(kinds) <= {"full", "mla", "sliding_window", "chunked_local", "state"}:
        raise UnsupportedError(
            f"{model.name}: KV cache groups of {', '.join(kinds)}; simulate follows vLLM's scheduler for "
            "full-attention, MLA, sliding-window, chunked-local and state groups so far (not indexer)"
        )
    several = tuple(
        GroupSpec(g.spec.block_tokens, g.spec.window, g.spec.kind == "state", g.spec.kind == "chunked_local")
        for g in groups
    )
    if not (caching and "state" in kinds):
        return several, None
    if any(g.window for g in several) or len({g.block_size for g in several}) > 1:
        raise UnsupportedError(
            f"{model.name}: state groups with prefix caching next to {', '.join(kinds)} groups; simulate "
            "follows vLLM's Mamba 'align' mode next to full attention; give --no-enable-prefix-caching"
        )
    return several, _state_checkpoint([g.spec for g in groups if g.spec.kind == "state"])


def _state_checkpoint(specs: list[Any]) -> int | None:
    """MambaSpec.prefill_checkpoint_alignment in align mode: Mamba-2 exports its checkpoint anywhere (1), Qwen's
    gated delta-net on its grid (the Mamba block); None where the mixer has no prefill checkpoint blocks."""
    spec = specs[0]
    if spec.pages_per_request < 2:
        return None
    return 1 if spec.mixer == "mamba2" else int(spec.block_tokens)


def _server_line(
    ctx: Any, recurrent: bool, unified: bool, n_ctx_slot: int, cells: int, kv: int
) -> Callable[[Units], str]:
    """llama-server's schedule settings, in its flags."""

    def line(units: Units) -> str:
        if recurrent:
            cache = f"recurrent state for {ctx.n_seq} sequences (no KV cells: a slot's tokens are counted as cells)"
        elif unified:
            cache = f"one unified cache of {cells:,} cells (-kvu)"
        else:
            cache = f"{ctx.n_seq} × {n_ctx_slot:,} cells, one stream per slot"
        return (
            f"-c {ctx.n_ctx:,} -np {ctx.n_seq}: {cache}, {format_size(kv, units)} of KV; a slot holds up to "
            f"{n_ctx_slot:,} tokens; -b {ctx.n_batch:,} tokens per step; context shift off"
        )

    return line


def prepare_server(model: ModelDescription, req: Request, hardware: Hardware) -> Prepared:
    """llama-server with the request's flags and llama-server's defaults (-np -1: 4 slots, a unified cache), on
    the GPUs as `fit` places it (every layer on a GPU: the roofline has no host half)."""
    from kvplan.capacity.llamacpp import LlamaCppRuntime
    from kvplan.capacity.llamacpp_settings import settings_for
    from kvplan.runtimes.llamacpp import Backend, CacheKind
    from kvplan.runtimes.llamacpp.plan import CachePlan

    o = req.llamacpp
    notes: list[str] = []
    if o.parallel is None and o.ctx_per_seq is None:
        o = replace(o, parallel=4, kv_unified=True)
        notes.append("llama-server's default -np -1: 4 slots sharing one unified cache (-kvu)")
    elif o.parallel is None:
        o = replace(o, parallel=1)
    runtime = LlamaCppRuntime()
    target = runtime.target(model, replace(req, llamacpp=o))
    settings = settings_for(o, Backend.CUDA)
    placement = target.place(settings)
    p = placement.plan
    ctx = p.context
    if not placement.fits:
        tight = placement.tightest
        raise RefusedConfigError(
            f"{model.name} at -c {ctx.n_ctx:,} -np {ctx.n_seq} does not fit: {tight.name} is short by "
            f"{format_size(-(tight.free_bytes or 0))} (`kvplan fit` finds the longest -c that fits; give -c)"
        )
    host = placement.host  # the token embeddings always stay in host memory (llama.cpp's input layer)
    if host.weight_bytes > target.weights.input_bytes or host.layers is not None or o.no_kv_offload:
        raise UnsupportedError(
            "simulate needs every layer and the KV cache on the GPUs (its roofline has no host half); drop -ngl, "
            "-ot, -cmoe / -ncmoe and -nkvo"
        )
    attention = [c for c in p.caches if c.kind is CacheKind.ATTENTION]
    full = max(attention, key=lambda c: c.cells, default=None)
    trained = model.n_ctx_train or ctx.n_ctx_seq
    n_ctx_slot = min(ctx.n_ctx_seq, trained)
    windowed = [c for c in attention if full is not None and c.cells < full.cells]
    recurrent = [c for c in p.caches if c.kind is CacheKind.RECURRENT]
    others = [c for c in p.caches if c.kind not in (CacheKind.ATTENTION, CacheKind.RECURRENT)]
    if others:
        raise UnsupportedError(
            f"{model.name}: {', '.join(sorted({c.name for c in others}))} caches; simulate follows llama-server "
            "for attention and recurrent caches"
        )
    pool = full.cells if ctx.kv_unified and full is not None else None  # a recurrent model has no cells to share
    reuse = not windowed and not recurrent
    if not reuse:
        notes.append(
            "sliding-window or recurrent cache: a slot's cached prefix is not reused (llama-server restores it "
            "only from a context checkpoint, which simulate does not follow): prompts are processed in full"
        )
    config = ServerConfig(ctx.n_seq, n_ctx_slot, pool, ctx.n_batch, prefix_reuse=reuse)

    def per_token(c: CachePlan) -> int:
        return (c.k_bytes + c.v_bytes) // max(1, c.cells * c.streams)

    weights = sum(d.weight_bytes for d in placement.gpus)
    act, attention_flops, basis = token_costs(model)
    notes += basis
    swa = model.n_swa or 0
    cost = CostModel(
        weight_bytes=round(weights * act.read_share),
        flops_per_token=2.0 * (act.params or weights // 2),
        kv_bytes_per_token=per_token(full) if full is not None else 0,
        state_bytes=sum((c.k_bytes + c.v_bytes) // max(1, c.cells * c.streams) for c in recurrent),
        windowed=tuple((per_token(c), swa) for c in windowed if swa),
        attention_flops_per_pair=float(attention_flops),
        hardware=hardware,
    )
    gpus = req.hardware.label if req.hardware is not None else "GPU"
    cells = config.cells
    kv = sum(d.kv_bytes for d in placement.gpus)

    line = _server_line(ctx, full is None, pool is not None, n_ctx_slot, cells, kv)

    notes.append(f"weights on the GPUs {format_size(weights)} ({target.weights.basis})")
    notes.append(
        "the schedule follows a reading of llama-server's loop (server-context.cpp: get_available_slot, "
        "update_slots, decode), not a recording of it"
    )
    return Prepared(
        model,
        LLAMACPP,
        f"llama-server (llama.cpp) on {gpus}",
        line,
        {
            "n_ctx": ctx.n_ctx,
            "n_parallel": ctx.n_seq,
            "kv_unified": ctx.kv_unified,
            "n_ctx_slot": n_ctx_slot,
            "cells": cells,
            "n_batch": ctx.n_batch,
            "prefix_reuse": reuse,
        },
        ServerSimulator(config),
        cost,
        tuple(notes),
        "failures",
        kv,
    )
