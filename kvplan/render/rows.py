"""The rows every output format shares (table, Markdown, CSV), built once from the plans.

``plans`` is the main context's plan, optionally followed by the MTP draft context's plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.plan import MemoryPlan
from kvplan.report import format_size

COLUMNS = (
    "context",
    "cache",
    "kind",
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
HEADERS = ("Context", "Cache", "Kind", "Layers", "Cells", "Streams", "K type", "V type", "K / r", "V / s",
           "Total", "Per token")  # fmt: skip


def context_label(plan: MemoryPlan) -> str:
    return "mtp-draft" if plan.runtime.values.get("context_type") == "mtp" else "main"


def cache_rows(plans: Sequence[MemoryPlan]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for plan in plans:
        for c in plan.caches:
            rows.append(
                {
                    "context": context_label(plan),
                    "cache": c.name,
                    "kind": c.kind,
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
            "context": "+".join(context_label(p) for p in plans),
            "cache": "total",
            "kind": "",
            "layers": sum(len(c.layers) for p in plans for c in p.caches),
            "cells": "",
            "streams": "",
            "type_k": "",
            "type_v": "",
            "k_bytes": sum(c.k_bytes for p in plans for c in p.caches),
            "v_bytes": sum(c.v_bytes for p in plans for c in p.caches),
            "bytes": sum(p.total_bytes for p in plans),
            "per_token_bytes": sum(p.per_token_bytes for p in plans),
        }
    )
    return rows


def human(row: dict[str, object], units: str = "iec") -> list[str]:
    """A row with byte columns in one unit system (iec, si or bytes)."""
    out = []
    for col in COLUMNS:
        v = row[col]
        out.append(format_size(v, units) if col.endswith("bytes") and isinstance(v, int) else str(v))
    return out


def caption(plans: Sequence[MemoryPlan]) -> str:
    main = plans[0]
    r = main.runtime.values
    m = main.model
    parts = [
        f"{m.name} ({m.arch})",
        main.runtime.engine,
        f"ctx {r['n_ctx_asked']}",
        f"{r['n_seq']} seq",
        f"K {r['type_k']} / V {r['type_v']}",
        f"FA {r['flash_attn']}",
    ]
    if r.get("kv_unified"):
        parts.append("kv-unified")
    if r.get("swa_full"):
        parts.append("swa-full")
    if r.get("n_rs_seq"):
        parts.append(f"rs-seq {r['n_rs_seq']}")
    for draft in plans[1:]:
        d = draft.runtime.values
        parts.append(f"+ MTP draft (K {d['type_k']} / V {d['type_v']})")
    return " · ".join(parts)
