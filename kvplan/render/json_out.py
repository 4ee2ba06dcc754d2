"""JSON output, schema version 1 (documented in the README)."""

from __future__ import annotations

import json
from typing import Any

from kvplan.plan import MemoryPlan

SCHEMA_VERSION = 1


def _runtime(plan: MemoryPlan) -> dict[str, Any]:
    r = plan.runtime.values
    keys = ("context_type", "n_ctx", "n_ctx_asked", "n_ctx_seq", "n_seq", "n_stream", "n_rs_seq",
            "kv_unified", "flash_attn", "flash_attn_effective", "swa_full", "n_batch", "n_ubatch", "type_k",
            "type_v", "alignment")  # fmt: skip
    return {"engine": plan.runtime.engine, **{k: r[k] for k in keys}}


def _memory(plan: MemoryPlan) -> dict[str, Any]:
    return {
        "total_bytes": plan.total_bytes,
        "per_token_bytes": plan.per_token_bytes,
        "caches": [
            {
                "name": c.name,
                "kind": c.kind,
                "layers": list(c.layers),
                "cells": c.cells,
                "streams": c.streams,
                "type_k": c.type_k,
                "type_v": c.type_v,
                "k_bytes": c.k_bytes,
                "v_bytes": c.v_bytes,
                "bytes": c.bytes,
                "per_token_bytes": c.per_token_bytes,
                "why": c.why,
            }
            for c in plan.caches
        ],
    }


def plan_to_dict(plan: MemoryPlan, draft: MemoryPlan | None = None) -> dict[str, Any]:
    m = plan.model
    doc = {
        "schema_version": SCHEMA_VERSION,
        "model": {
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
        },
        "runtime": _runtime(plan),
        "memory": _memory(plan),
        "notes": list(plan.notes),
    }
    if draft is not None:
        doc["draft"] = {"runtime": _runtime(draft), "memory": _memory(draft), "notes": list(draft.notes)}
        doc["combined_total_bytes"] = plan.total_bytes + draft.total_bytes
    return doc


def render_json(plan: MemoryPlan, draft: MemoryPlan | None = None) -> str:
    return json.dumps(plan_to_dict(plan, draft), indent=2)
