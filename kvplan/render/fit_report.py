"""The `fit` report: the answer in one line, then weights / KV / overhead / free per GPU."""

from __future__ import annotations

from kvplan.fit import Placement
from kvplan.report import Column, Report, format_size

MODE_PREFIX = {
    "max-ctx": "max context that fits",
    "max-parallel": "max parallel that fits",
    "cache-types": "cheapest cache type that fits",
    "check": "fits",
}


def ctx_label(n: int) -> str:
    return f"{n // 1024}k" if n % 1024 == 0 else str(n)


def headline(p: Placement, gpus: str, mode: str) -> str:
    r = p.plan.runtime.values
    kv = f"{r['type_k']} KV" if r["type_k"] == r["type_v"] else f"K {r['type_k']} / V {r['type_v']} KV"
    prefix = MODE_PREFIX[mode] if p.fits else "does NOT fit"
    return f"{prefix}: {r['n_seq']} × {ctx_label(r['n_ctx_asked'] // r['n_seq'])} sequences on {gpus} with {kv}"


def fit_report(p: Placement, gpus: str, mode: str, weights_basis: str, overhead_basis: str, units: str) -> Report:
    rows = []
    for d in p.devices:
        rows.append(
            {
                "device": f"GPU{d.index}",
                "memory_bytes": d.memory_bytes,
                "layers": f"{d.layers[0]}–{d.layers[-1]}" if d.layers else "-",
                "weight_bytes": d.weight_bytes,
                "kv_bytes": d.kv_bytes,
                "overhead_bytes": d.overhead_bytes,
                "free_bytes": d.free_bytes,
            }
        )
    rows.append(
        {
            "device": "host",
            "memory_bytes": None,
            "layers": "input",
            "weight_bytes": p.host_weight_bytes,
            "kv_bytes": 0,
            "overhead_bytes": None,
            "free_bytes": None,
        }
    )
    columns = [
        Column("device", "Device"),
        Column("memory_bytes", "Memory", "bytes"),
        Column("layers", "Layers"),
        Column("weight_bytes", "Weights", "bytes"),
        Column("kv_bytes", "KV / state", "bytes"),
        Column("overhead_bytes", "Overhead", "bytes"),
        Column("free_bytes", "Free", "bytes"),
    ]
    r = p.plan.runtime.values
    args = f"-c {r['n_ctx_asked']} -np {r['n_seq']} -ctk {r['type_k']} -ctv {r['type_v']}"
    answer = headline(p, gpus, mode)
    notes = [
        f"run llama.cpp with {args} (its -c is shared by the sequences)",
        f"weights: {weights_basis}",
        f"overhead per GPU: {overhead_basis}",
        f"KV / state: the exact llama.cpp layout ({r['backend']} buffers), {format_size(p.plan.total_bytes, units)}",
        "the input layer (token embeddings) stays in host memory, as llama.cpp keeps it",
    ]
    meta = {
        "answer": answer,
        "fits": p.fits,
        "ctx_per_seq": r["n_ctx_asked"] // r["n_seq"],
        "n_seq": r["n_seq"],
        "type_k": r["type_k"],
        "type_v": r["type_v"],
        "llama_cpp_args": args,
    }
    caption = f"{p.plan.model.name} ({p.plan.model.arch}) · llama.cpp · {gpus}"
    return Report(title=answer, caption=caption, columns=columns, rows=rows, notes=notes, kind="fit", meta=meta)
