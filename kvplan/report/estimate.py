"""`kvplan estimate` as a document: the total, the model and context, one row per cache, the reasons."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.capacity.deployment import Evaluation
from kvplan.model import MemoryKind, ModelDescription, SwaType
from kvplan.report import budgets as budget_report
from kvplan.report.document import ALL_FORMATS, Cell, Column, Document, Format, Kind, Table
from kvplan.runtimes.llamacpp import MemoryPlan
from kvplan.units import Units, format_size

if TYPE_CHECKING:
    from kvplan.runtimes.llamacpp.compute import ComputeBuffer

CACHE_COLUMNS = (
    Column("cache", "Cache"),
    Column("kind", "Kind", drop=2),
    Column("layers", "Layers", Kind.COUNT),
    Column("cells", "Cells", Kind.COUNT),
    Column("streams", "Streams", Kind.COUNT, drop=3),
    Column("type_k", "K type", drop=4),
    Column("type_v", "V type", drop=4),
    Column("k_bytes", "K / r", Kind.BYTES, drop=1),
    Column("v_bytes", "V / s", Kind.BYTES, drop=1),
    Column("bytes", "Total", Kind.BYTES),
    Column("per_token_bytes", "Per token", Kind.BYTES),
)


def model_dict(m: ModelDescription) -> dict[str, Any]:
    return {
        "name": m.name,
        "arch": m.arch,
        "source": m.source,
        "source_kind": m.source_kind,
        "n_layer": m.n_layer_all,
        "n_layer_nextn": m.n_layer_nextn,
        "n_embd": m.n_embd,
        "n_ctx_train": m.n_ctx_train,
        "attention": m.attention_summary,
        "swa_type": m.swa_type.value,
        "n_swa": m.n_swa,
        "memory": m.memory.value,
        "weight_bytes": m.weight_bytes,
        "n_params": m.n_params,
        "hf_id": m.spec.hf_id if m.spec else None,
    }


def context_label(p: MemoryPlan, index: int = 0) -> str:
    if p.context.mtp:
        return "mtp-draft"
    return "draft" if index else "main"


def draft_label(p: MemoryPlan) -> str:
    return "MTP draft" if p.context.mtp else "draft model"


def architecture(m: ModelDescription) -> str:
    layers = f"{m.n_layer_all} layers" + (f" ({m.n_layer_nextn} nextn/MTP)" if m.n_layer_nextn else "")
    attn = m.attention_summary
    if m.memory not in (MemoryKind.KV, MemoryKind.NONE):
        attn = f"{m.memory.value} memory" if attn == "none" else f"{attn} + {m.memory.value} memory"
    if m.swa_type is not SwaType.NONE:
        attn += f", {m.swa_type.value} window {m.n_swa:,}"
    if not m.n_ctx_train and not m.ctx_declared:
        return f"{layers}, {attn}, no trained context stated"
    ctx = f"trained context {m.n_ctx_train:,}"
    if m.config_ctx and m.config_ctx != m.n_ctx_train:  # the converter writes its own (Granite-4.0-H: 2^20)
        ctx += f" (llama.cpp's; config.json states {m.config_ctx:,})"
    return f"{layers}, {attn}, {ctx}"


def _context_line(p: MemoryPlan) -> str:
    ctx = p.context
    if not p.has_cells:
        return f"no KV cells: recurrent state only ({p.caches[0].cells} row(s) per layer)" if p.caches else "no cache"
    line = f"{ctx.n_ctx_asked:,} tokens asked → {ctx.n_ctx:,} cells"
    if ctx.kv_unified:
        line += f" in one unified stream shared by {ctx.n_seq} sequence(s)"
    elif ctx.n_stream > 1:
        line += f" ({ctx.n_ctx_seq:,} per sequence × {ctx.n_stream} streams)"
    return line


def settings_line(p: MemoryPlan) -> str:
    ctx = p.context
    parts = [
        f"{ctx.n_seq} seq",
        f"K {ctx.type_k.name}",
        f"V {ctx.type_v.name}",
        f"flash-attn {ctx.flash_attn_asked.value}",
        f"swa-full {'on' if ctx.swa_full else 'off'}",
        f"batch {ctx.n_batch}",
        f"ubatch {ctx.n_ubatch}",
    ]
    if ctx.kv_unified:
        parts.insert(1, "kv-unified")
    if ctx.n_rs_seq:
        parts.append(f"rs-seq {ctx.n_rs_seq}")
    parts.append(f"{ctx.backend.value} buffers")
    return " · ".join(parts)


def caption(plans: tuple[MemoryPlan, ...]) -> str:
    main = plans[0]
    ctx, m = main.context, main.model
    parts = [
        f"{m.name} ({m.arch})",
        "llama.cpp",
        f"ctx {ctx.n_ctx_asked:,}",
        f"{ctx.n_seq} seq",
        f"K {ctx.type_k.name} / V {ctx.type_v.name}",
        f"FA {ctx.flash_attn_asked.value}",
    ]
    if ctx.kv_unified:
        parts.append("kv-unified")
    if ctx.swa_full:
        parts.append("swa-full")
    if ctx.n_rs_seq:
        parts.append(f"rs-seq {ctx.n_rs_seq}")
    for draft in plans[1:]:
        parts.append(f"+ {draft_label(draft)} (K {draft.context.type_k.name} / V {draft.context.type_v.name})")
    return " · ".join(parts)


def cache_table(plans: tuple[MemoryPlan, ...]) -> Table:
    rows: list[dict[str, Cell]] = []
    for index, p in enumerate(plans):
        for c in p.caches:
            rows.append(
                {
                    "context": context_label(p, index),
                    "cache": c.name,
                    "kind": c.kind.value,
                    "layers": len(c.layers),
                    "cells": c.cells,
                    "streams": c.streams,
                    "type_k": c.type_k,
                    "type_v": c.type_v or "-",
                    "k_bytes": c.k_bytes,
                    "v_bytes": c.v_bytes,
                    "bytes": c.buffer_bytes,
                    "per_token_bytes": c.per_token_bytes,
                }
            )
    total: dict[str, Cell] = {
        "context": "+".join(context_label(p, i) for i, p in enumerate(plans)),
        "cache": "total",
        "layers": sum(len(p.layers) for p in plans),  # distinct layers: a DSA layer holds two caches
        "k_bytes": sum(c.k_bytes for p in plans for c in p.caches),
        "v_bytes": sum(c.v_bytes for p in plans for c in p.caches),
        "bytes": sum(p.total_bytes for p in plans),
        "per_token_bytes": sum(p.per_token_bytes for p in plans),
    }
    # the context column shows with an MTP draft context; CSV carries it always, so files line up
    context = Column("context", "Context", formats=ALL_FORMATS if len(plans) > 1 else frozenset({Format.CSV}))
    return Table("caches", (context, *CACHE_COLUMNS), tuple(rows), total, json=False)


def compute_line(c: ComputeBuffer | None, p: MemoryPlan, units: Units) -> str:
    """The compute buffer llama.cpp reserves with every layer on the CPU, and what it held at its peak."""
    if c is None:
        if p.context.backend.value != "cpu":
            return "not modelled for these buffer rules yet (the CPU backend's is)"
        from kvplan.runtimes.llamacpp.compute import no_graph_reason

        return f"not modelled: {no_graph_reason(p)}"
    parts = ", ".join(f"{k} {format_size(v, units)}" for k, v in c.parts if v)
    exact = f" ({c.bytes:,} bytes)" if units is not Units.BYTES else " bytes"
    return f"{format_size(c.bytes, units)}{exact} on the CPU backend, at its peak: {parts}"


def estimate_document(ev: Evaluation, units: Units) -> Document:
    assert ev.estimate is not None
    est = ev.estimate
    plans = est.plans
    main = plans[0]
    m = est.model
    total = est.total_bytes
    what = "KV / state memory" + (f" (main + {draft_label(plans[1])} context)" if len(plans) > 1 else "")
    exact = f" ({total:,} bytes)" if units is not Units.BYTES else " bytes"
    headline = f"llama.cpp {what}: {format_size(total, units)}{exact}"
    summary = (
        ("Model", f"{m.name}  ({m.arch}; {m.source})"),
        ("Architecture", architecture(m)),
        ("Context", _context_line(main)),
        ("Settings", settings_line(main)),
        ("Compute", compute_line(est.compute, main, units)),
    )
    notes: list[str] = []
    for p in plans:
        prefix = f"{draft_label(p)} " if p is not main else ""
        notes += [f"{prefix}{c.name}: {c.why}" for c in p.caches if c.why]
    notes += [n for p in plans for n in p.notes]
    tables = [cache_table(plans)]
    if ev.findings:
        tables.append(budget_report.table(ev.findings, units))
    if ev.suggestion is not None:
        notes.append(budget_report.suggestion_text(ev.suggestion))
    data: dict[str, Any] = {
        "model": model_dict(m),
        "runtime": {"engine": "llama.cpp", **main.context.to_dict()},
        "memory": main.memory_dict(),
        "compute": est.compute.to_dict() if est.compute is not None else None,
        "passed": ev.passed,
        "budgets": [f.to_dict() for f in ev.findings],
        "suggestion": ev.suggestion.to_dict() if ev.suggestion else None,
    }
    if est.draft is not None:
        draft = est.draft
        data["draft"] = {
            **({"model": model_dict(est.draft_model)} if est.draft_model is not None else {}),
            "runtime": {"engine": "llama.cpp", **draft.context.to_dict()},
            "memory": draft.memory_dict(),
            "notes": list(draft.notes),
        }
        data["combined_total_bytes"] = total
    warnings = tuple(dict.fromkeys(w for p in plans for w in p.warnings))
    return Document(
        kind="estimate",
        headline=headline,
        summary=summary,
        tables=tuple(tables),
        notes=tuple(dict.fromkeys(notes)),
        warnings=warnings,
        data=data,
        caption=caption(plans),
        exit_code=0 if ev.passed else 1,
    )
