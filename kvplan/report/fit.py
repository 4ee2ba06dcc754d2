"""`kvplan fit` as a document: the answer (or why it does not fit, and what would), the memory of every device,
the run line that reproduces the plan, and how each figure was found."""

from __future__ import annotations

import dataclasses
import shlex
from typing import TYPE_CHECKING, Any

from kvplan.capacity.deployment import Evaluation
from kvplan.capacity.engines import EngineFit
from kvplan.capacity.llamacpp import LlamaCppFit
from kvplan.capacity.results import Constraint, DeviceUsage, FitResult, Mode, Shortfall
from kvplan.report import budgets as budget_report
from kvplan.report.document import DATA_FORMATS, Cell, Column, Document, Format, Kind, Table
from kvplan.report.estimate import model_dict
from kvplan.runtimes.engines import CacheSpec
from kvplan.runtimes.engines.paged import StateSpec
from kvplan.units import Units, format_size

if TYPE_CHECKING:
    from kvplan.capacity.llamacpp_fit import FitChoice
    from kvplan.capacity.request import Request

CSV_ONLY = frozenset({Format.CSV})


def sequences(n: int, ctx: int, shared: bool = False) -> str:
    if shared:
        return f"{n} sequences sharing {ctx:,} tokens (one unified KV stream)"
    return f"{n} sequence{'s' if n != 1 else ''} of {ctx:,} tokens"


def _why(s: Shortfall, units: Units) -> str:
    def f(n: int) -> str:
        return format_size(n, units)

    m, w, o, c = s.memory_bytes, s.weight_bytes, s.overhead_bytes, s.compute_bytes
    if s.constraint is Constraint.WEIGHTS:
        return f"the weights ({f(w)}) exceed the {f(m)} {s.device} has for them"
    if s.constraint is Constraint.OVERHEAD:
        return f"the weights ({f(w)}) leave {f(m - w)} on {s.device}, less than the {f(o)} overhead"
    if s.constraint is Constraint.COMPUTE:
        return (
            f"the compute buffer at this context ({f(c)}) exceeds the {f(m - w - o)} left on {s.device} "
            "after weights and overhead"
        )
    left = m - w - o - c
    return f"the KV cache ({f(s.kv_bytes)}) exceeds the {f(max(0, left))} left on {s.device} after weights" + (
        ", compute and overhead" if c else " and overhead"
    )


def headline(r: FitResult, units: Units) -> str:
    who = f"{r.runtime_label}: "
    where = f"on {r.hardware_label} with {r.cache} KV"
    seqs = sequences(r.n_seq, r.ctx_per_seq, r.shared)
    if r.fits:
        if r.mode is Mode.MAX_CTX:
            capped = " (capped at the model's trained context)" if r.capped_by_trained else ""
            return f"{who}max context that fits: {seqs} {where}{capped}"
        if r.mode is Mode.MAX_PARALLEL:
            return f"{who}max parallel that fits: {seqs} {where}"
        if r.mode is Mode.CACHE_TYPES:
            return f"{who}cheapest cache type that fits: {r.cache} KV for {seqs} on {r.hardware_label}"
        return f"{who}fits: {seqs} {where}"
    why = f": {_why(r.shortfall, units)}" if r.shortfall else ""
    if r.ctx_per_seq == 0:
        return (
            f"{who}does not fit: not one token of KV for {r.n_seq} sequence{'s' if r.n_seq != 1 else ''} {where}{why}"
        )
    if r.mode is Mode.MAX_CTX:
        return f"{who}does not fit: not even {seqs} {where}{why}"
    return f"{who}does not fit: {seqs} {where}{why}"


def _layers(d: DeviceUsage) -> str:
    return f"{d.layers[0]}–{d.layers[1]}" if d.layers else "-"


def device_table(r: FitResult, kv_header: str) -> Table:
    has_compute = any(d.compute_bytes for d in r.devices)
    columns = (
        Column("device", "Device"),
        Column("memory_bytes", "Memory", Kind.BYTES),
        Column("layers", "Layers", drop=4, formats=frozenset({Format.TABLE, Format.MARKDOWN})),
        Column("first_layer", "First layer", Kind.INT, formats=DATA_FORMATS),
        Column("last_layer", "Last layer", Kind.INT, formats=DATA_FORMATS),
        Column("weight_bytes", "Weights", Kind.BYTES),
        Column("kv_bytes", kv_header, Kind.BYTES),
        Column(
            "compute_bytes", "Compute", Kind.BYTES, drop=2, formats=frozenset(Format) if has_compute else DATA_FORMATS
        ),
        Column("overhead_bytes", "Overhead", Kind.BYTES, drop=3),
        Column("used_bytes", "Used", Kind.BYTES, formats=DATA_FORMATS),
        Column("free_bytes", "Free", Kind.BYTES),
        Column("fits", "Fits", formats=CSV_ONLY),
        Column("ctx_per_seq", "Tokens per sequence", formats=CSV_ONLY),
        Column("n_seq", "Sequences", formats=CSV_ONLY),
        Column("cache", "Cache", formats=CSV_ONLY),
    )
    rows: list[dict[str, Cell]] = []
    for d in r.devices:
        first, last = d.layers or (None, None)
        rows.append(
            {
                **d.to_dict(),
                "layers": _layers(d),
                "first_layer": first,
                "last_layer": last,
                "fits": r.fits,
                "ctx_per_seq": r.ctx_per_seq,
                "n_seq": r.n_seq,
                "cache": r.cache,
            }
        )
    return Table("devices", columns, tuple(rows))


def _alternatives(s: Shortfall, units: Units) -> list[str]:
    out = []
    what = {
        "max-ctx": "the longest context",
        "max-parallel": "the most sequences",
        "cache-types": "a cheaper cache",
        "gpu-layers": "fewer layers on the GPUs",
    }
    parts = []
    for a in s.alternatives:
        label = what.get(a.what, a.what)
        extra = f"; {a.detail}" if a.detail else ""
        parts.append(f"{' '.join(a.flags)} ({label}: {sequences(a.n_seq, a.ctx_per_seq)}{extra})")
    if parts:
        out.append("would fit: " + "; or ".join(parts))
    out.append(
        f"{s.device} needs {format_size(s.need_bytes, units)} for this plan and has "
        f"{format_size(s.memory_bytes, units)}: {format_size(s.short_bytes, units)} more memory would fit it"
    )
    return out


def _llamacpp_notes(f: LlamaCppFit, r: FitResult, units: Units) -> tuple[list[str], dict[str, Any]]:
    p = f.placement.plan
    notes = []
    if f.placement.compute_basis:
        notes.append(f"compute per GPU: {f.placement.compute_basis}")
    for dev in f.placement.devices:
        if dev.compute_parts:
            held = ", ".join(f"{role} {format_size(b, units)}" for role, b in dev.compute_parts[:4])
            notes.append(f"compute on {dev.name} at its peak: {held}")
    notes.append(
        f"KV / state: the exact llama.cpp layout ({p.context.backend.value} buffer rules"
        f"{'' if p.context.backend.recorded else ', derived from its source, not recorded'}), "
        f"{format_size(p.total_bytes, units)} in all"
    )
    notes.append("the input layer (token embeddings) stays in host memory, as llama.cpp keeps it")
    if f.target.split_none:
        notes.append(
            f"-sm none: llama.cpp keeps only GPU{f.target.first_gpu} (-mg {f.target.first_gpu}) among its devices "
            "(llama_model_load_from_file_impl); the other GPUs hold nothing of this model"
        )
    d = f.placement.draft
    if d is not None and f.target.draft is not None:
        dt = f.target.draft
        notes.append(
            f"draft model {dt.model.name} (-md) included on every device: weights "
            f"{format_size(sum(x.weight_bytes for x in d.gpus), units)} on the GPUs ({dt.weights.basis}), its own "
            f"KV {format_size(d.plan.total_bytes, units)} (K {d.plan.context.type_k.name} / V "
            f"{d.plan.context.type_v.name}, the main context and -np), its compute"
        )
    if d is not None and f.target.mtp:
        notes.append(
            f"MTP draft context (--spec-type draft-mtp) included: its KV {format_size(d.plan.total_bytes, units)} "
            f"(K {d.plan.context.type_k.name} / V {d.plan.context.type_v.name}) with the nextn layers, its compute; "
            "it runs on the main model's weights"
        )
    host = f.placement.host
    if host.layers:
        notes.append(f"layers {host.layers[0]}–{host.layers[1]} and their KV run from host memory (-ngl): slower")
    data: dict[str, Any] = {
        "llamacpp": {
            "runtime": {"engine": "llama.cpp", **p.context.to_dict()},
            "memory": p.memory_dict(),
            "compute": [
                {
                    "device": x.name,
                    "bytes": x.compute_bytes,
                    "parts": dict(x.compute_parts),
                    "basis": f.placement.compute_basis,
                }
                for x in (*f.placement.gpus, f.placement.host)
            ],
        }
    }
    if d is not None:
        data["llamacpp"]["draft"] = {
            "model": f.target.draft.model.name if f.target.draft is not None else None,
            "mtp": f.target.mtp,
            "runtime": {"engine": "llama.cpp", **d.plan.context.to_dict()},
            "memory": d.plan.memory_dict(),
            "devices": [x.to_dict() for x in (*d.gpus, d.host)],
        }
    return notes, data


def _scheduler_note(f: EngineFit, ctx: int) -> str:
    say = f.target.engine.spelling.max_num_seqs
    cap = f.scheduler_cap
    held = f"the KV pool holds {f.requests:,} request{'s' if f.requests != 1 else ''} of {ctx:,} tokens at once"
    if cap is None:
        return f"scheduler: {held}; {say} (not given: the engine's default) caps how many run"
    binds = "; the scheduler cap binds" if cap < f.requests else ""
    return (
        f"scheduler: {say} {cap:,} caps how many run at once (the engine starts when one request of its context "
        f"fits; --min-parallel N asks that N fit); {held}{binds}"
    )


def _engine_notes(f: EngineFit, r: FitResult, units: Units) -> tuple[list[str], dict[str, Any]]:
    cap = f.capacity
    lay = cap.layout
    engine = lay.engine
    unit = engine.block_unit
    ctx = f.ctx or cap.max_model_len
    notes = [
        f"KV pool per GPU: {cap.tokens:,} tokens"
        + (f" + {cap.swa_tokens:,} SWA tokens" if cap.swa_tokens else "")
        + f", {cap.blocks:,} {unit}s of {lay.block_tokens}; the engine logs {cap.concurrency:.2f}× concurrency at "
        f"{cap.max_model_len:,} tokens",
        f"per token per GPU: {lay.bytes_per_token:,} B ({lay.basis})"
        + ("; KV replicated on every TP rank" if lay.replicated else ""),
        f"capacity: {cap.basis}",
    ]
    notes.append(_scheduler_note(f, ctx))
    if lay.backends:
        notes.append(f"{engine.label} backends: {', '.join(lay.backends)}; {lay.backend_reason}")
    if cap.state_slots:
        notes.append(
            f"state pool per GPU: {cap.state_slots:,} slots ({format_size(cap.state_pool_bytes, units)}); "
            f"max_running_requests resolves to {cap.max_requests:,}"
        )
    if len(lay.groups) > 1 or lay.in_flight_tokens:
        by_spec: dict[CacheSpec, list[int]] = {}
        for g in lay.groups:
            by_spec.setdefault(g.spec, []).append(len(g.layers))
        parts = []
        for spec, sizes in by_spec.items():
            need = spec.request_blocks(ctx, lay.in_flight_tokens)
            what = spec.kind.replace("_", " ") + (f" {spec.window:,}" if spec.window else "")
            what = spec.mixer if isinstance(spec, StateSpec) else what
            parts.append(
                f"{what}: {len(sizes)} group(s), {sum(sizes)} layers, {need:,} blocks of "
                f"{spec.block_tokens} per request" + (" each" if len(sizes) > 1 else "")
            )
        flight = (
            (
                f"; a window keeps W − 1 + {lay.in_flight_tokens:,} in-flight tokens (max_num_batched_tokens × "
                "concurrent batches) + 1 block"
            )
            if lay.in_flight_tokens
            else ""
        )
        notes.append(
            f"vLLM hybrid KV groups of {max(len(g.layers) for g in lay.groups)} layers — {'; '.join(parts)}{flight}"
        )
    notes += list(lay.notes)
    waste = lay.block_tokens - 1
    notes.append(
        f"paging: up to {waste:,} tokens ({format_size(waste * lay.bytes_per_token, units)}) per sequence lost in "
        f"the last partially filled {unit}"
        + (f" (about {lay.block_tokens // 2:,} on average)" if waste else "")
        + ("; one null block is reserved" if engine.null_blocks else "")
    )
    groups = [
        {
            "kind": g.spec.kind,
            "window": g.spec.window,
            "layers": len(g.layers),
            "block_tokens": g.spec.block_tokens,
            "page_bytes": g.spec.page_bytes,
            "request_blocks": g.spec.request_blocks(ctx, lay.in_flight_tokens),
            **({"mixer": g.spec.mixer, "state_bytes": g.spec.state_bytes} if isinstance(g.spec, StateSpec) else {}),
        }
        for g in lay.groups
    ]
    s = f.settings
    data = {
        "engine": {
            "name": engine.name,
            "version": engine.version,
            "cache_dtype": s.kv_cache_dtype,
            "tensor_parallel_size": s.tensor_parallel_size,
            "pipeline_parallel_size": s.pipeline_parallel_size,
            "sequences_that_fit": f.requests,
            "kv_tokens_per_gpu": cap.tokens,
            "swa_tokens_per_gpu": cap.swa_tokens,
            "blocks": cap.blocks,
            "block_tokens": lay.block_tokens,
            "block_bytes": lay.block_bytes,
            "bytes_per_token": lay.bytes_per_token,
            "concurrency": round(cap.concurrency, 4),
            "max_model_len": cap.max_model_len,
            "kv_budget_bytes": cap.kv_budget_bytes,
            "max_num_batched_tokens": s.max_num_batched_tokens,
            "max_num_seqs": s.max_num_seqs,
            "gpu_memory_utilization": s.gpu_memory_utilization,
            "kv_cache_memory_bytes": s.kv_cache_memory_bytes,
            "enable_prefix_caching": s.enable_prefix_caching,
            "backends": list(lay.backends),
            "state_bytes_per_request": max(lay.stage_state_bytes(i) for i in range(len(lay.stages))),
            "state_slots": cap.state_slots,
            "state_pool_bytes": cap.state_pool_bytes,
            "max_running_requests": cap.max_requests,
            "requests_at_once": f.requests,  # max_model_len requests the pool holds together
            "scheduler_cap": f.scheduler_cap,
            "groups": groups,
        }
    }
    return notes, data


def fit_document(ev: Evaluation, units: Units) -> Document:
    r = ev.fit
    assert r is not None
    notes: list[str] = []
    if r.fits:
        notes.append(f"run: {r.run_command} {' '.join(shlex.quote(a) for a in r.run_args)}")
        notes += list(r.run_notes)
    if r.shortfall is not None:
        notes += _alternatives(r.shortfall, units)
    if r.capped_by_trained and isinstance(r.detail, LlamaCppFit):
        tight = min(r.gpus, key=lambda d: d.free_bytes or 0)
        notes.append(
            f"the search stops at the model's trained context ({r.trained_ctx:,} tokens); "
            f"{format_size(tight.free_bytes or 0, units)} is still free on {tight.name}"
        )
    elif r.capped_by_trained and isinstance(r.detail, EngineFit):
        notes.append(
            f"the search stops at the model's trained context ({r.trained_ctx:,} tokens); the KV pool holds "
            f"{r.detail.requests:,} such sequences at once"
        )
    notes.append(f"weights: {r.weights_basis}")
    notes.append(f"overhead per GPU: {r.overhead_basis}")
    if isinstance(r.detail, LlamaCppFit):
        more, detail = _llamacpp_notes(r.detail, r, units)
        kv_header = "KV / state"
    else:
        assert isinstance(r.detail, EngineFit)
        more, detail = _engine_notes(r.detail, r, units)
        kv_header = "KV pool"
    notes += more
    if ev.suggestion is not None:
        notes.append(budget_report.suggestion_text(ev.suggestion))
    tables = [device_table(r, kv_header)]
    if any(f.budget != "fits" for f in ev.findings):
        tables.append(budget_report.table(ev.findings, units))
    data: dict[str, Any] = {
        "runtime": r.runtime,
        "mode": r.mode.value,
        "fits": r.fits,
        "passed": ev.passed,
        "ctx_per_seq": r.ctx_per_seq,
        "n_seq": r.n_seq,
        "shared": r.shared,
        "cache": r.cache,
        "hardware": r.hardware_label,
        "trained_ctx": r.trained_ctx,
        "capped_by_trained": r.capped_by_trained,
        "kv_bytes": r.kv_bytes,
        "used_bytes": r.used_bytes,
        "headroom": round(r.headroom, 6),
        "run_command": r.run_command,
        "run_args": list(r.run_args),
        "weights_basis": r.weights_basis,
        "overhead_basis": r.overhead_basis,
        "shortfall": r.shortfall.to_dict() if r.shortfall else None,
        "model": model_dict(ev.model),
        "budgets": [f.to_dict() for f in ev.findings],
        "suggestion": ev.suggestion.to_dict() if ev.suggestion else None,
        **detail,
    }
    caption = f"{ev.model.name} ({ev.model.arch}) · {r.runtime_label} · {r.hardware_label}"
    return Document(
        kind="fit",
        headline=headline(r, units),
        tables=tuple(tables),
        notes=tuple(notes),
        warnings=r.warnings,
        data=data,
        caption=caption,
        exit_code=0 if ev.passed else 1,
    )


def fit_on_document(choice: FitChoice, ev: Evaluation, req: Request, units: Units) -> Document:
    """`fit --fit on`: the arguments llama.cpp's fit chooses, then the ordinary answer for them (the devices, the
    run line that reproduces them)."""
    doc = fit_document(ev, units)
    measured = req.overhead is not None
    from kvplan.capacity.llamacpp import COMPUTE_BASIS

    placement = getattr(getattr(ev.fit, "detail", None), "placement", None)
    graph = getattr(placement, "compute_basis", "")
    if measured:
        basis = (
            "the compute per GPU given (--overhead): llama.cpp's own fit makes these choices when that is the "
            "compute buffer it measures (proven on llama.cpp's recorded fits)"
        )
    elif graph == COMPUTE_BASIS:
        basis = (
            "kvplan's compute per device, llama.cpp's graph split over the devices as its fit measures it in every "
            "projection (the CPU backend's buffer rules: 351 of 351 recorded fits chosen alike)"
        )
    elif graph.startswith(COMPUTE_BASIS) and "not recorded" in graph:
        basis = (
            f"kvplan's compute per GPU, llama.cpp's graph split over the GPUs with {graph[len(COMPUTE_BASIS) + 2 :]} "
            "(llama.cpp's fit is ported as it runs on CUDA, proven on the CPU backend's recorded fits); measure "
            "with llama-fit-params --fit-print on and pass --overhead to check"
        )
    elif graph.startswith(COMPUTE_BASIS):
        basis = (
            "kvplan's compute per GPU, llama.cpp's graph split over the GPUs with CUDA's buffer rules (its compute "
            "buffers recorded on an H200: 122 of 122 single-GPU placements equal); the CUDA context is an estimate: "
            "measure with llama-fit-params --fit-print on and pass --overhead to check"
        )
    else:
        basis = (
            "kvplan's compute and overhead estimate per GPU (no graph for this architecture yet): llama.cpp's "
            "choices can differ by a layer or a few hundred tokens where its compute buffers differ; measure them "
            "with llama-fit-params --fit-print on and pass --overhead for its exact choice"
        )
    why = []
    if any(choice.short_of_all):
        need = ", ".join(f"{format_size(b, units)} more on GPU{i}" for i, b in enumerate(choice.short_of_all) if b)
        host = ev.fit.devices[-1] if ev.fit is not None and ev.fit.devices[-1].name == "host" else None
        cost = f"; meanwhile {format_size(host.weight_bytes, units)} of weights sit in host memory" if host else ""
        why.append(f"every layer and expert on the GPUs at -c {choice.n_ctx:,} needs {need}{cost}")
    first = (
        f"llama.cpp's fit (common_fit_params, ported) gives up: {choice.gave_up}; llama-server warns and runs "
        f"with the flags given at -c {choice.n_ctx} (give --fit off to plan exactly the flags given)"
        if choice.gave_up
        else f"llama.cpp's fit (common_fit_params, ported) chooses: {choice.args()}"
    )
    notes = (
        first,
        *(f"fit: {s}" for s in choice.steps),
        *(f"fit: {w}" for w in why),
        f"fit basis: {basis}",
        *doc.notes,
    )
    data = {
        **doc.data,
        "fit_choice": {
            "n_ctx": choice.n_ctx,
            "n_gpu_layers": choice.n_gpu_layers,
            "tensor_split": list(choice.tensor_split) if choice.tensor_split else None,
            "overrides": [{"pattern": p, "buffer": b} for p, b in choice.overrides],
            "args": choice.args(),
            "steps": list(choice.steps),
            "compute_measured": measured,
            "short_of_all_layers_bytes": list(choice.short_of_all),
            "gave_up": choice.gave_up or None,
        },
    }
    if choice.gave_up:
        short = f"gives up, runs the flags given at -c {choice.n_ctx}"
    elif choice.n_gpu_layers < 0 and choice.tensor_split is None and not choice.overrides:
        o = req.llamacpp
        placed = o.n_gpu_layers is not None or o.override_tensor or o.cpu_moe or o.n_cpu_moe or o.tensor_split
        short = f"-c {choice.n_ctx}, the layers as given" if placed else f"-c {choice.n_ctx}, all layers offloaded"
    else:
        short = choice.short()
    headline = f"llama.cpp's fit: {short} — {(doc.headline or '').removeprefix('llama.cpp: ')}"
    return dataclasses.replace(doc, headline=headline, notes=notes, data=data)
