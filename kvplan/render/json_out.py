"""JSON output, schema version 1 (documented in the README)."""

from __future__ import annotations

import json
from typing import Any

from kvplan.plan import MemoryPlan

SCHEMA_VERSION = 1


def plan_to_dict(plan: MemoryPlan) -> dict[str, Any]:
    m = plan.model
    r = plan.runtime.values
    return {
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
        "runtime": {
            "engine": plan.runtime.engine,
            "n_ctx": r["n_ctx"],
            "n_ctx_asked": r["n_ctx_asked"],
            "n_ctx_seq": r["n_ctx_seq"],
            "n_seq": r["n_seq"],
            "n_stream": r["n_stream"],
            "kv_unified": r["kv_unified"],
            "flash_attn": r["flash_attn"],
            "flash_attn_effective": r["flash_attn_effective"],
            "swa_full": r["swa_full"],
            "n_batch": r["n_batch"],
            "n_ubatch": r["n_ubatch"],
            "type_k": r["type_k"],
            "type_v": r["type_v"],
            "alignment": r["alignment"],
        },
        "memory": {
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
        },
        "notes": list(plan.notes),
    }


def render_json(plan: MemoryPlan) -> str:
    return json.dumps(plan_to_dict(plan), indent=2)
