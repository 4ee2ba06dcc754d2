"""The rows every output format shares (table, Markdown, CSV), built once from a MemoryPlan."""

from __future__ import annotations

from kvplan.plan import MemoryPlan
from kvplan.units import format_bytes

COLUMNS = (
    "cache",
    "layers",
    "cells",
    "streams",
    "type_k",
    "type_v",
    "k_bytes",
    "v_bytes",
    "bytes",
    "per_token_bytes",
)
HEADERS = ("Cache", "Layers", "Cells", "Streams", "K type", "V type", "K", "V", "Total", "Per token")


def cache_rows(plan: MemoryPlan) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for c in plan.caches:
        rows.append(
            {
                "cache": c.name,
                "layers": len(c.layers),
                "cells": c.cells,
                "streams": c.streams,
                "type_k": c.type_k,
                "type_v": c.type_v or "-",
                "k_bytes": c.k_bytes,
                "v_bytes": c.v_bytes,
                "bytes": c.bytes,
                "per_token_bytes": c.per_token_bytes,
            }
        )
    rows.append(
        {
            "cache": "total",
            "layers": sum(len(c.layers) for c in plan.caches),
            "cells": "",
            "streams": "",
            "type_k": "",
            "type_v": "",
            "k_bytes": sum(c.k_bytes for c in plan.caches),
            "v_bytes": sum(c.v_bytes for c in plan.caches),
            "bytes": plan.total_bytes,
            "per_token_bytes": plan.per_token_bytes,
        }
    )
    return rows


def human(row: dict[str, object]) -> list[str]:
    """A row with byte columns in IEC units."""
    out = []
    for col in COLUMNS:
        v = row[col]
        out.append(format_bytes(v) if col.endswith("bytes") and isinstance(v, int) else str(v))
    return out


def caption(plan: MemoryPlan) -> str:
    r = plan.runtime.values
    m = plan.model
    parts = [
        f"{m.name} ({m.arch})",
        plan.runtime.engine,
        f"ctx {r['n_ctx_asked']}",
        f"{r['n_seq']} seq",
        f"K {r['type_k']} / V {r['type_v']}",
        f"FA {r['flash_attn']}",
    ]
    if r.get("kv_unified"):
        parts.append("kv-unified")
    if r.get("swa_full"):
        parts.append("swa-full")
    return " · ".join(parts)
