"""`fit --engine vllm|sglang|trtllm`: KV capacity per GPU and the concurrency the engine reports."""

from __future__ import annotations

from kvplan.layout.serving import Capacity
from kvplan.model import ModelDescription
from kvplan.report import Column, Report


def engine_report(model: ModelDescription, cap: Capacity, n_gpus: int, gpu_label: str, gpu_bytes: int,
                  weights_rank: int, weights_basis: str, overhead: int, overhead_basis: str,
                  ctx: int | None, parallel: int | None) -> tuple[Report, bool]:  # fmt: skip
    lay = cap.layout
    need = parallel or 1
    per_request = ctx or cap.max_model_len
    blocks_per_request = -(-per_request // lay.block_tokens)
    fits_requests = cap.blocks // blocks_per_request if lay.engine == "vllm" else cap.tokens // per_request
    fits = cap.tokens > 0 and fits_requests >= need
    verb = "fits" if fits else "does NOT fit"
    answer = (
        f"{lay.engine} {verb}: {fits_requests} × {per_request:,}-token sequences per replica on {gpu_label} "
        f"({cap.tokens:,} KV tokens per GPU, {cap.concurrency:.2f}× concurrency at {cap.max_model_len:,})"
    )
    rows = [
        {
            "device": f"GPU{i}",
            "memory_bytes": gpu_bytes,
            "weight_bytes": weights_rank,
            "overhead_bytes": overhead if lay.engine != "sglang" else None,
            "kv_budget_bytes": cap.kv_budget_bytes,
            "kv_tokens": cap.tokens,
            "blocks": cap.blocks,
        }
        for i in range(n_gpus)
    ]
    columns = [
        Column("device", "Device"),
        Column("memory_bytes", "Memory", "bytes"),
        Column("weight_bytes", "Weights", "bytes"),
        Column("overhead_bytes", "Overhead", "bytes"),
        Column("kv_budget_bytes", "KV budget", "bytes"),
        Column("kv_tokens", "KV tokens", "int"),
        Column("blocks", "Blocks", "int"),
    ]
    waste = lay.block_tokens - 1
    notes = [
        f"per token per GPU: {lay.bytes_per_token:,} B ({lay.basis})"
        + ("; KV replicated on every TP rank" if lay.replicated else ""),
        f"capacity: {cap.basis}",
        f"weights per GPU: {weights_basis}",
        f"overhead: {overhead_basis}" if lay.engine != "sglang" else
        "overhead: SGLang measures nothing; activations and graphs must fit in the (1 − mem_fraction_static) slack",
        f"paging: up to {waste} tokens per sequence lost in the last partially filled block"
        f"{' (about ' + str(lay.block_tokens // 2) + ' on average)' if waste else ''}"
        + ("; one null block is reserved" if lay.engine == "vllm" else ""),
    ]  # fmt: skip
    meta = {"answer": answer, "fits": fits, "engine": lay.engine, "kv_tokens_per_gpu": cap.tokens,
            "bytes_per_token": lay.bytes_per_token, "block_tokens": lay.block_tokens,
            "concurrency": round(cap.concurrency, 4), "max_model_len": cap.max_model_len}  # fmt: skip
    report = Report(title=answer, caption=f"{model.name} ({model.arch}) · {lay.engine} · {gpu_label}",
                    columns=columns, rows=rows, notes=notes, kind="fit", meta=meta)  # fmt: skip
    return report, fits
