"""`fit --engine vllm|sglang|trtllm`: the answer in one line, then weights / overhead / KV / free per GPU."""

from __future__ import annotations

from kvplan.engine_fit import EngineFit
from kvplan.layout.paged import CacheSpec
from kvplan.render.fit_report import MODE_PREFIX, ctx_label
from kvplan.report import Column, Report, format_size

_FLAGS = {
    "vllm": "--tensor-parallel-size {tp} --pipeline-parallel-size {pp} --max-model-len {ctx} --kv-cache-dtype {dtype}",
    "sglang": "--tp-size {tp} --pp-size {pp} --context-length {ctx} --kv-cache-dtype {dtype}",
    "trtllm": "--tp_size {tp} --pp_size {pp} --max_seq_len {ctx} (kv_cache_config.dtype: {dtype})",
}


def _dtype(f: EngineFit) -> str:
    d = f.settings.cache_dtype
    return "bf16 (auto)" if d == "auto" else d


def headline(f: EngineFit) -> str:
    s, t = f.settings, f.target
    par = f" (tp {s.tp}" + (f" × pp {s.pp}" if s.pp > 1 else "") + ")" if s.tp * s.pp > 1 else ""
    where = f"on {t.gpu_label}{par} with {_dtype(f)} KV"
    if f.fits:
        room = f" (KV for {f.requests})" if f.mode == "check" and f.requests > f.parallel else ""
        return f"{s.engine} {MODE_PREFIX[f.mode]}: {f.parallel} × {ctx_label(f.ctx)} sequences{room} {where}"
    why = "no KV budget left after weights and overhead" if f.capacity.kv_budget_bytes <= 0 else ""
    if f.ctx == 0:
        return f"{s.engine} does NOT fit: not one token of KV {where}" + (f" ({why})" if why else "")
    want = max(1, f.parallel)
    return (f"{s.engine} does NOT fit: {want} × {ctx_label(f.ctx)} sequence{'s' if want > 1 else ''} {where} "
            f"({why or f'KV for {f.requests}'})")  # fmt: skip


def engine_report(f: EngineFit, units: str) -> Report:
    cap, t, s = f.capacity, f.target, f.settings
    lay = cap.layout
    rows = []
    overhead = t.overhead_bytes if s.engine != "sglang" else None
    for rank in range(t.n_gpus):
        stage = rank // s.tp
        first, last = lay.stage_ranges[stage]
        kv = cap.kv_bytes(stage)
        rows.append(
            {
                "device": f"GPU{rank}",
                "memory_bytes": t.gpu_bytes,
                "layers": f"{first}–{last}",
                "weight_bytes": t.weight_bytes_per_rank,
                "overhead_bytes": overhead,
                "kv_bytes": kv,
                "free_bytes": t.gpu_bytes - t.weight_bytes_per_rank - (overhead or 0) - kv,
            }
        )
    columns = [
        Column("device", "Device"),
        Column("memory_bytes", "Memory", "bytes"),
        Column("layers", "Layers"),
        Column("weight_bytes", "Weights", "bytes"),
        Column("overhead_bytes", "Overhead", "bytes"),
        Column("kv_bytes", "KV pool", "bytes"),
        Column("free_bytes", "Free", "bytes"),
    ]
    answer = headline(f)
    ctx = f.ctx or cap.max_model_len
    flags = _FLAGS[s.engine].format(tp=s.tp, pp=s.pp, ctx=ctx, dtype=s.cache_dtype)
    unit = {"vllm": "block", "sglang": "page", "trtllm": "block"}[s.engine]
    pool = (f"KV pool per GPU: {cap.tokens:,} tokens" + (f" + {cap.swa_tokens:,} SWA tokens" if cap.swa_tokens else "")
            + f", {cap.blocks:,} {unit}s of {lay.block_tokens}; the engine logs {cap.concurrency:.2f}× concurrency "
            f"at {cap.max_model_len:,} tokens")  # fmt: skip
    notes = [
        f"run {s.engine} with {flags}",
        pool,
        f"per token per GPU: {lay.bytes_per_token:,} B ({lay.basis})"
        + ("; KV replicated on every TP rank" if lay.replicated else ""),
        f"capacity: {cap.basis}",
        f"weights per GPU: {t.weights_basis}",
        f"overhead: {t.overhead_basis}" if s.engine != "sglang" else
        "overhead: SGLang measures nothing; activations and graphs must fit in the (1 − mem_fraction_static) slack",
    ]  # fmt: skip
    if len(lay.groups) > 1 or lay.in_flight_tokens:
        by_spec: dict[CacheSpec, list[int]] = {}
        for g in lay.groups:
            by_spec.setdefault(g.spec, []).append(len(g.layers))
        parts = []
        for spec, sizes in by_spec.items():
            need = spec.request_blocks(ctx, lay.in_flight_tokens)
            what = spec.kind.replace("_", " ") + (f" {spec.window}" if spec.window else "")
            parts.append(f"{what}: {len(sizes)} group(s), {sum(sizes)} layers, {need:,} blocks of "
                         f"{spec.block_tokens} per request" + (" each" if len(sizes) > 1 else ""))  # fmt: skip
        notes.append(f"vLLM hybrid KV groups of {max(len(g.layers) for g in lay.groups)} layers — {'; '.join(parts)}"
                     + (f"; a window keeps W − 1 + {lay.in_flight_tokens:,} in-flight tokens (max_num_batched_tokens"
                        " × concurrent batches) + 1 block" if lay.in_flight_tokens else ""))  # fmt: skip
    notes += list(lay.notes)
    waste = lay.block_tokens - 1
    waste_bytes = waste * lay.bytes_per_token
    notes.append(
        f"paging: up to {waste} tokens ({format_size(waste_bytes, units)}) per sequence lost in the last partially "
        f"filled {unit}"
        + (f" (about {lay.block_tokens // 2} on average)" if waste else "")
        + ("; one null block is reserved" if s.engine == "vllm" else "")
    )
    groups = [{"kind": g.spec.kind, "window": g.spec.window, "layers": len(g.layers),
               "block_tokens": g.spec.block_tokens, "page_bytes": g.spec.page_bytes,
               "request_blocks": g.spec.request_blocks(ctx, lay.in_flight_tokens)} for g in lay.groups]  # fmt: skip
    meta = {"answer": answer, "fits": f.fits, "mode": f.mode, "engine": s.engine, "ctx_per_seq": f.ctx,
            "n_seq": f.parallel, "sequences_that_fit": f.requests, "cache_dtype": s.cache_dtype, "tp": s.tp,
            "pp": s.pp, "kv_tokens_per_gpu": cap.tokens, "swa_tokens_per_gpu": cap.swa_tokens,
            "blocks": cap.blocks, "block_tokens": lay.block_tokens, "block_bytes": lay.block_bytes,
            "bytes_per_token": lay.bytes_per_token, "concurrency": round(cap.concurrency, 4),
            "max_model_len": cap.max_model_len, "kv_budget_bytes": cap.kv_budget_bytes, "groups": groups,
            "engine_args": flags}  # fmt: skip
    caption = (
        f"{t.model.name} ({t.model.arch}) · {s.engine} · {t.gpu_label} · KV budget "
        + format_size(cap.kv_budget_bytes, units)
        + " per GPU"
    )
    return Report(title=answer, caption=caption, columns=columns, rows=rows, notes=notes, kind="fit", meta=meta)
