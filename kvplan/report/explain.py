"""`kvplan explain`: a llama.cpp, vLLM or SGLang startup log's figures next to kvplan's, each with its rule."""

from __future__ import annotations

from dataclasses import replace

from kvplan.analysis.explain import Explanation
from kvplan.analysis.explain_sglang import SglangExplanation
from kvplan.analysis.explain_vllm import VllmExplanation
from kvplan.analysis.figure import Figure
from kvplan.errors import EXIT_NO
from kvplan.model import ModelDescription
from kvplan.report.document import DATA_FORMATS, Cell, Column, Document, Kind, Table
from kvplan.units import Units


def explain_document(e: Explanation, runs: int, model: ModelDescription, units: Units, build: str = "") -> Document:
    """The figures table, the settings the log states (and the build it names), and a warning where the file held
    several runs."""
    s = e.settings
    headline = _headline("llama.cpp log", e.figures)
    settings_line = (
        f"-c {s.n_ctx} -np {s.n_seq}{' -kvu' if s.kv_unified else ''} -b {s.n_batch} -ub {s.n_ubatch} "
        f"-ctk {s.type_k} -ctv {s.type_v} -fa {s.flash_attn.value}{' --swa-full' if s.swa_full else ''} "
        f"({s.backend.value} buffers)"
        + (f", n_outputs_max {s.n_outputs_max}" if s.n_outputs_max and s.n_outputs_max != s.n_batch else "")
    )
    change_columns: tuple[Column, ...] = (
        Column("flags", "What would change it", wrap=True),
        Column("kv_bytes", "KV / state", Kind.BYTES),
        Column("kv_change", "Δ KV", Kind.SHARE),
        Column("compute_bytes", "Compute", Kind.BYTES),
        Column("compute_change", "Δ compute", Kind.SHARE, drop=1),
    )
    on_devices = any(c.devices is not None for c in e.changes)
    if on_devices:
        change_columns = (*change_columns, Column("devices", "On the log's devices", wrap=True))
    changes: list[dict[str, Cell]] = [
        {
            "flags": c.flags,
            "kv_bytes": c.kv_bytes,
            "kv_change": _share(c.kv_bytes, e.kv_bytes),
            "compute_bytes": c.compute_bytes,
            "compute_change": _share(c.compute_bytes, e.compute_bytes),
            **({"devices": c.devices} if on_devices else {}),
        }
        for c in e.changes
    ]
    title = "What would change it (kvplan's plan of each" + (", placed on the log's devices)" if on_devices else ")")
    table = Table("changes", change_columns, tuple(changes), title=title)
    notes = ("MiB as llama.cpp prints them (two decimals); kvplan's exact bytes are in JSON", *e.notes)
    data: dict[str, object] = {
        "explained": e.explained,
        "runs": runs,
        "build": build or None,
        "kv_bytes": e.kv_bytes,
        "compute_bytes": e.compute_bytes,
        "model": {"name": model.name, "arch": model.arch, "source": model.source},
        "settings": {
            "n_ctx": s.n_ctx,
            "n_seq": s.n_seq,
            "kv_unified": s.kv_unified,
            "n_batch": s.n_batch,
            "n_ubatch": s.n_ubatch,
            "type_k": s.type_k,
            "type_v": s.type_v,
            "flash_attn": s.flash_attn.value,
            "swa_full": s.swa_full,
            "backend": s.backend.value,
            "n_outputs_max": s.n_outputs_max or s.n_batch,
        },
    }
    if build:
        notes = (*notes, f"the log is llama.cpp build {build}; kvplan follows llama.cpp of 2026-10-01")
    return _document(headline, model, settings_line, e.figures, table, notes, runs, data)


def _document(
    headline: str,
    model: ModelDescription,
    settings_line: str,
    figures: tuple[Figure, ...],
    changes: Table,
    notes: tuple[str, ...],
    runs: int,
    data: dict[str, object],
) -> Document:
    """An explanation: the headline, the model and settings, the figures, what would change them; exit 0 when
    every figure is explained, 1 when one is not."""
    return Document(
        kind="explain",
        headline=headline,
        summary=(
            ("model", f"{model.name} ({model.arch}) from {model.source}"),
            ("settings the log states", settings_line),
        ),
        tables=(_figures_table(figures), replace(changes, csv=False)),
        notes=notes,
        warnings=(f"the file holds {runs} runs; the last one is explained",) if runs > 1 else (),
        data=data,
        exit_code=0 if all(f.equal for f in figures) else EXIT_NO,
    )


def _headline(what: str, figures: tuple[Figure, ...]) -> str:
    n, wrong = len(figures), sum(not f.equal for f in figures)
    if not wrong:
        return f"{what}: all {n} figures equal kvplan's plan of the same settings"
    return f"{what}: {wrong} of {n} figures not explained"


def _figures_table(figures: tuple[Figure, ...]) -> Table:
    """The log's figures beside kvplan's, each with its rule (kvplan's exact bytes in the data formats)."""
    columns = (
        Column("figure", "Figure", wrap=True),
        Column("log", "Log"),
        Column("kvplan", "kvplan"),
        Column("equal", "Equal"),
        Column("why", "Why", wrap=True),
        Column("kvplan_bytes", "kvplan bytes", Kind.INT, formats=DATA_FORMATS),
    )
    rows: list[dict[str, Cell]] = [
        {"figure": f.what, "log": f.logged, "kvplan": f.kvplan, "equal": f.equal, "why": f.why,
         "kvplan_bytes": f.kvplan_bytes}
        for f in figures
    ]  # fmt: skip
    return Table("figures", columns, tuple(rows))


def _share(new: int | None, old: int | None) -> float | None:
    """The change as a share of the log's figure (+0.5 = half as much again)."""
    return None if new is None or not old else new / old - 1


def explain_vllm_document(e: VllmExplanation, model: ModelDescription, units: Units) -> Document:
    """A vLLM log's KV figures against kvplan's plan, and the flags that would change them."""
    s, log = e.settings, e.log
    headline = _headline(f"vLLM {log.version} log" if log.version else "vLLM log", e.figures)
    settings_line = (
        f"--max-model-len {e.max_model_len}{'' if s.max_model_len else ' (the model’s own)'} "
        f"--kv-cache-dtype {s.kv_cache_dtype} "
        f"--tensor-parallel-size {s.tensor_parallel_size} --pipeline-parallel-size {s.pipeline_parallel_size}"
        + (f" --block-size {s.block_size}" if s.block_size else "")
        + f" (on {e.gpu})"
    )
    change_columns = (
        Column("flags", "What would change it", wrap=True),
        Column("tokens", "KV tokens", Kind.COUNT),
        Column("tokens_change", "Δ tokens", Kind.SHARE),
        Column("concurrency", "Concurrency", Kind.RATIO),
    )
    base = e.tokens
    changes: list[dict[str, Cell]] = [
        {"flags": c.flags, "tokens": c.tokens, "tokens_change": _share(c.tokens, base),
         "concurrency": round(c.concurrency, 4)}
        for c in e.changes
    ]  # fmt: skip
    title = "What would change it (kvplan's plan of each, on the same KV memory per GPU)"
    notes = ("vLLM prints the KV memory to 0.01 GiB and the tokens exactly; kvplan's bytes are in JSON", *e.notes)
    table = Table("changes", change_columns, tuple(changes), title=title)
    data: dict[str, object] = {
        "runtime": "vllm",
        "version": log.version or None,
        "explained": e.explained,
        "runs": log.runs,
        "blocks": e.blocks,
        "block_bytes": e.block_bytes,
        "kv_budget_bytes": e.budget_bytes,
        "model": {"name": model.name, "arch": model.arch, "source": model.source},
        "settings": {
            "max_model_len": e.max_model_len,
            "kv_cache_dtype": s.kv_cache_dtype,
            "tensor_parallel_size": s.tensor_parallel_size,
            "pipeline_parallel_size": s.pipeline_parallel_size,
            "block_size": s.block_size,
            "gpu": e.gpu,
        },
        "log": {
            "model": log.model or None,
            "available_gib": log.available_gib,
            "kv_tokens": log.kv_tokens,
            "gpu_blocks": log.gpu_blocks,
            "concurrency": log.concurrency,
            "concurrency_len": log.concurrency_len,
            "refused_max_model_len": log.refused_len,
            "stored_tokens": log.stored_tokens,
            "needed_gib": log.needed_gib,
            "refusal_available_gib": log.refusal_available_gib,
            "estimated_max_model_len": log.estimated_len,
            "total_gpu_memory_gib": log.total_gib,
            "gpu_memory_utilization": log.utilization,
        },
    }
    return _document(headline, model, settings_line, e.figures, table, notes, log.runs, data)


def explain_sglang_document(e: SglangExplanation, model: ModelDescription, units: Units) -> Document:
    """An SGLang log's pool figures against kvplan's plan, and the flags that would change them."""
    s, log = e.settings, e.log
    headline = _headline("SGLang log", e.figures)
    settings_line = (
        f"--context-length {e.context_len}{'' if s.max_model_len else ' (the model’s own)'} "
        f"--kv-cache-dtype {s.kv_cache_dtype} --tp-size {s.tensor_parallel_size} "
        f"--mem-fraction-static {e.mem_fraction_static:g}{'' if s.mem_fraction_static else ' (SGLang’s default)'} "
        f"--page-size {e.page_size}"
        + (f" --max-running-requests {s.max_num_seqs}" if s.max_num_seqs else "")
        + (" --disable-radix-cache" if s.enable_prefix_caching is False else "")
        + f" (on {e.gpu})"
    )
    change_columns = (
        Column("flags", "What would change it", wrap=True),
        Column("tokens", "KV tokens", Kind.COUNT),
        Column("tokens_change", "Δ tokens", Kind.SHARE),
        Column("max_running_requests", "Max running", Kind.COUNT),
    )
    changes: list[dict[str, Cell]] = [
        {"flags": c.flags, "tokens": c.tokens, "tokens_change": _share(c.tokens, e.tokens),
         "max_running_requests": c.max_running_requests}
        for c in e.changes
    ]  # fmt: skip
    title = "What would change it (kvplan's plan of each, on the free memory the log states)"
    notes = ("SGLang prints its pool sizes and free memory to 0.01 GB (2^30 B) and the tokens exactly; kvplan's "
             "bytes are in JSON", *e.notes)  # fmt: skip
    table = Table("changes", change_columns, tuple(changes), title=title)
    data: dict[str, object] = {
        "runtime": "sglang",
        "version": None,
        "explained": e.explained,
        "runs": log.runs,
        "token_bytes": e.token_bytes,
        "tokens": e.tokens,
        "model": {"name": model.name, "arch": model.arch, "source": model.source},
        "settings": {
            "context_length": e.context_len,
            "kv_cache_dtype": s.kv_cache_dtype,
            "tp_size": s.tensor_parallel_size,
            "mem_fraction_static": e.mem_fraction_static,
            "page_size": e.page_size,
            "max_running_requests": s.max_num_seqs,
            "disable_radix_cache": s.enable_prefix_caching is False,
            "gpu": e.gpu,
        },
        "log": {
            "model": log.model or None,
            "free_before_weights_gb": log.load_begin_gb,
            "free_after_weights_gb": log.load_end_gb,
            "pools": [
                {
                    "label": p.label or None,
                    "tokens": p.tokens,
                    "k_gb": p.k_gb,
                    "v_gb": p.v_gb,
                    "kv_gb": p.kv_gb,
                    "dtype": p.dtype or None,
                }
                for p in log.pools
            ],
            "max_total_num_tokens": log.max_total_tokens,
            "max_running_requests": log.max_running_requests,
            "context_len": log.context_len,
            "swa_layer_tokens": log.swa_tokens,
            "max_mamba_cache_size": log.mamba_slots,
        },
    }
    return _document(headline, model, settings_line, e.figures, table, notes, log.runs, data)
