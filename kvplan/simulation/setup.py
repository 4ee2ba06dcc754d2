"""From a deployment (model, engine flags, GPUs) to the scheduler's settings and the roofline's cost model: the
same engine layout and KV pool `fit --engine` computes (proven against the engine's own planning)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.capacity.engines import EngineRuntime, EngineTarget
from kvplan.capacity.request import Request
from kvplan.errors import RefusedConfigError, UnsupportedError, UsageError
from kvplan.model import ModelDescription
from kvplan.runtimes import canonical_runtime
from kvplan.runtimes.engines import ENGINES, Capacity
from kvplan.simulation.roofline import PERF, CostModel, Hardware
from kvplan.simulation.vllm import GroupSpec, SchedulerConfig


@dataclass(frozen=True)
class Prepared:
    target: EngineTarget
    capacity: Capacity
    config: SchedulerConfig
    cost: CostModel
    notes: tuple[str, ...]


def hardware_for(
    req: Request, bandwidth: float | None, peak_tflops: float | None, *, need_peak: bool = True
) -> Hardware:
    """The GPU's bandwidth and dense peak: the table's, or the flags' (either overrides)."""
    hw = req.hardware
    name = hw.model.name if hw is not None and hw.model is not None else None
    known = PERF.get(name) if name else None
    if known is None and (bandwidth is None or (need_peak and peak_tflops is None)):
        wanted = "--bandwidth GB/s and --peak-tflops" if need_peak else "--bandwidth GB/s"
        raise UsageError(
            f"no bandwidth{' and peak FLOPS' if need_peak else ''} for {hw.label if hw else 'this GPU'} in "
            f"kvplan's table ({', '.join(PERF)}); give {wanted}",
            "--gpu",
        )
    bw = bandwidth * 1e9 if bandwidth is not None else known[0] if known else 0.0
    fl = peak_tflops * 1e12 if peak_tflops is not None else known[1] if known else 0.0
    source = known[2] if known is not None and bandwidth is None and peak_tflops is None else "given"
    return Hardware(bw, fl, source)


def prepare(
    model: ModelDescription,
    req: Request,
    *,
    async_scheduling: bool = True,
    bandwidth: float | None = None,
    peak_tflops: float | None = None,
) -> Prepared:
    name = canonical_runtime(req.runtime)
    engine = ENGINES.get(name)
    if engine is None or not engine.simulated:
        raise UnsupportedError(
            "simulate follows vLLM's own scheduler (ported and proven step for step); give --engine vllm "
            "(llama.cpp's slots and SGLang's scheduler are not simulated yet)"
        )
    target = EngineRuntime(engine).target(model, req)
    s = target.settings
    max_len = req.engine.max_model_len or s.max_model_len or model.engine_ctx
    cap = target.capacity(replace(s, max_model_len=max_len))
    groups = cap.layout.groups
    kinds = sorted({g.spec.kind for g in groups})
    caching = s.enable_prefix_caching is not False
    several: tuple[GroupSpec, ...] = ()
    if len(groups) > 1 or not groups[0].spec.full_type:
        if not set(kinds) <= {"full", "mla", "sliding_window", "chunked_local", "state"}:
            raise UnsupportedError(
                f"{model.name}: KV cache groups of {', '.join(kinds)}; simulate follows vLLM's scheduler for "
                "full-attention, MLA, sliding-window, chunked-local and state groups so far (not indexer)"
            )
        if caching and "state" in kinds:
            raise UnsupportedError(
                f"{model.name}: state groups with prefix caching (vLLM's Mamba 'align' mode), which simulate does "
                "not follow yet; give --no-enable-prefix-caching"
            )
        several = tuple(
            GroupSpec(g.spec.block_tokens, g.spec.window, g.spec.kind == "state", g.spec.kind == "chunked_local")
            for g in groups
        )
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
    )
    ranks = s.tp * s.pp
    notes = []
    params = model.n_params
    if not params:
        params = target.weight_bytes // 2
        notes.append("no parameter count: FLOPs from the weights' bytes at 2 bytes per parameter")
    attention = sum(
        2 * layer.n_head * (layer.head_k + layer.head_v)
        for layer in model.layers
        if layer.has_kv and not layer.recurrent and layer.n_head_kv
    )
    lay = cap.layout
    busiest = [lay.specs[ref] for ref in lay.stages[lay.busiest_stage]]
    windows: dict[int, int] = {}
    for spec in busiest:
        if spec.window:
            windows[spec.window] = windows.get(spec.window, 0) + spec.token_bytes
    cost = CostModel(
        weight_bytes=target.weight_bytes_per_rank,
        flops_per_token=2.0 * params / ranks,
        kv_bytes_per_token=sum(spec.token_bytes for spec in busiest if not spec.window and spec.kind != "state"),
        state_bytes=sum(spec.content_bytes for spec in busiest if spec.kind == "state"),
        windowed=tuple((b, w) for w, b in sorted(windows.items())),
        attention_flops_per_pair=attention / ranks,
        hardware=hardware_for(req, bandwidth, peak_tflops),
    )
    return Prepared(target, cap, config, cost, tuple(notes))
