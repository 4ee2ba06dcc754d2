"""The ``kvplan`` command line. Callbacks only parse, call the library and present."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

import typer

from kvplan.errors import EXIT_USAGE, KvplanError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Byte-exact KV cache / state memory planning for LLM inference.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

EXIT_INTERNAL = 70
#: Click's own error base (usage errors keep Click's exit code 2); typer may vendor click
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


class FlashAttn(str, Enum):
    on = "on"
    off = "off"
    auto = "auto"


class Units(str, Enum):
    iec = "iec"
    si = "si"
    bytes = "bytes"


# options shared by every command that plans a llama.cpp context (spelled as llama.cpp spells them)
MODEL_ARG = typer.Argument(..., help="A .gguf file, a .yaml/.yml spec, or a catalog name (see `kvplan models`).")
PARALLEL_OPT = typer.Option(1, "-np", "--parallel", min=1, help="Parallel sequences (n_seq_max).")
KVU_OPT = typer.Option(False, "-kvu", "--kv-unified", help="One KV stream shared by all sequences.")
BATCH_OPT = typer.Option("2048", "-b", "--batch", "--batch-size", help="Logical batch size (n_batch).")
UBATCH_OPT = typer.Option("512", "-ub", "--ubatch", "--ubatch-size", help="Physical batch size (n_ubatch).")
CTK_OPT = typer.Option(
    "f16", "-ctk", "--cache-type-k", help="K cache type: f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1."
)
CTV_OPT = typer.Option("f16", "-ctv", "--cache-type-v", help="V cache type (same choices).")
FA_OPT = typer.Option(FlashAttn.auto, "-fa", "--flash-attn", case_sensitive=False, help="on, off or auto.")
SWA_FULL_OPT = typer.Option(False, "--swa-full", help="Full-size cache for sliding-window layers.")
RS_SEQ_OPT = typer.Option(
    0, "--rs-seq", min=0, help="Recurrent-state snapshots kept for speculative rollback (n_rs_seq)."
)
FORMAT_OPT = typer.Option(OutputFormat.table, "--format", "-o", case_sensitive=False, help="Output format.")
UNITS_OPT = typer.Option(
    Units.iec, "--units", case_sensitive=False, help="iec (KiB, MiB), si (kB, MB) or bytes (tables only)."
)


@contextmanager
def handle_errors() -> Iterator[None]:
    """The one place where errors become a line on stderr and an exit code."""
    try:
        yield
    except KvplanError as exc:
        typer.echo(f"kvplan: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except (typer.Exit, typer.Abort, _CLICK_ERROR, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug in kvplan: one line, a code, and how to see more
        if os.environ.get("KVPLAN_DEBUG"):
            raise
        typer.echo(
            f"kvplan: internal error: {type(exc).__name__}: {exc} (set KVPLAN_DEBUG=1 for a traceback)",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL) from None


def _count(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    from kvplan.units import parse_count

    try:
        return parse_count(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=name) from None


def _settings(ctx: int, parallel: int, kv_unified: bool, batch: str, ubatch: str, ctk: str, ctv: str,
              fa: FlashAttn, swa_full: bool, rs_seq: int) -> Any:  # fmt: skip
    from kvplan.layout.llamacpp import LlamaCppSettings

    return LlamaCppSettings(
        n_ctx=ctx, n_seq=parallel, kv_unified=kv_unified, n_batch=_count(batch, "--batch") or 0,
        n_ubatch=_count(ubatch, "--ubatch") or 0, type_k=ctk.lower(), type_v=ctv.lower(), flash_attn=fa.value,
        swa_full=swa_full, n_rs_seq=rs_seq,
    )  # fmt: skip


@app.command()
def estimate(
    model: str = MODEL_ARG,
    ctx: str = typer.Option(
        None,
        "-c",
        "--ctx",
        "--ctx-size",
        help="Context size in tokens (32k = 32768). Default: the model's training context, as llama.cpp's -c 0.",
    ),
    parallel: int = PARALLEL_OPT,
    kv_unified: bool = KVU_OPT,
    batch: str = BATCH_OPT,
    ubatch: str = UBATCH_OPT,
    cache_type_k: str = CTK_OPT,
    cache_type_v: str = CTV_OPT,
    flash_attn: FlashAttn = FA_OPT,
    swa_full: bool = SWA_FULL_OPT,
    rs_seq: int = RS_SEQ_OPT,
    mtp: bool = typer.Option(False, "--mtp", help="Also size the MTP draft context (nextn layers only)."),
    cache_type_k_draft: str = typer.Option("f16", "-ctkd", "--cache-type-k-draft", help="MTP draft K type."),
    cache_type_v_draft: str = typer.Option("f16", "-ctvd", "--cache-type-v-draft", help="MTP draft V type."),
    output: OutputFormat = FORMAT_OPT,
    units: Units = UNITS_OPT,
    max_kv: str = typer.Option(None, "--max-kv", help="Budget: fail (exit 1) above this many KV / state bytes."),
    max_total: str = typer.Option(None, "--max-total", help="Budget: KV + the GGUF's weights, in bytes."),
    min_ctx: str = typer.Option(None, "--min-ctx", help="Budget: each sequence gets at least this context."),
) -> None:
    """How many bytes llama.cpp allocates for the KV cache and state of MODEL, exactly, and why."""
    n_ctx = _count(ctx, "--ctx") or 0
    settings = _settings(n_ctx, parallel, kv_unified, batch, ubatch, cache_type_k, cache_type_v, flash_attn,
                         swa_full, rs_seq)  # fmt: skip
    with handle_errors():
        from kvplan.layout.llamacpp import plan, plan_mtp_draft
        from kvplan.sources import load_model

        described = load_model(model)
        plans = [plan(described, settings)]
        if mtp:
            plans.append(plan_mtp_draft(described, settings, cache_type_k_draft.lower(), cache_type_v_draft.lower()))
        _emit_plans(plans, output, units.value)
        kv = sum(p.total_bytes for p in plans)
        budgets = [("max_kv", _size_opt(max_kv, "--max-kv"), kv)]
        if max_total is not None:
            if described.weight_bytes is None:
                raise typer.BadParameter("needs a GGUF with tensors (its exact weights)", param_hint="--max-total")
            budgets.append(("max_total", _size_opt(max_total, "--max-total"), kv + described.weight_bytes))
        _enforce(budgets)
        need = _count(min_ctx, "--min-ctx")
        per_seq = plans[0].runtime.values["n_ctx_seq"]
        if need is not None and per_seq < need:
            typer.echo(f"kvplan: budget failed: min_ctx {need} tokens per sequence; this configuration gives "
                       f"{per_seq} (n_ctx_seq)", err=True)  # fmt: skip
            raise typer.Exit(1)


def _size_opt(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    from kvplan.hardware import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=name) from None


def _enforce(budgets: list[tuple[str, int | None, int]], hint: str = "") -> None:
    """Inline budgets: one line on stderr per violated budget, then exit 1."""
    from kvplan.report import format_size

    failed = [(name, limit, actual) for name, limit, actual in budgets if limit is not None and actual > limit]
    for name, limit, actual in failed:
        typer.echo(f"kvplan: budget failed: {name} {format_size(actual)} > {format_size(limit)} "
                   f"(over by {format_size(actual - limit)}){hint}", err=True)  # fmt: skip
    if failed:
        raise typer.Exit(1)


def _emit_plans(plans: list, output: OutputFormat, units: str) -> None:
    if output == OutputFormat.json:
        from kvplan.render.json_out import render_json

        typer.echo(render_json(plans[0], plans[1] if len(plans) > 1 else None))
    elif output == OutputFormat.markdown:
        from kvplan.render.text import render_markdown

        typer.echo(render_markdown(plans, units), nl=False)
    elif output == OutputFormat.csv:
        from kvplan.render.text import render_csv

        typer.echo(render_csv(plans), nl=False)
    else:
        from kvplan.render.table import make_console, render_table

        render_table(plans, make_console(), units)


def _emit_report(report: Any, output: OutputFormat, units: str, extra_lines: list[str] | None = None) -> None:
    from kvplan import report as rep

    if output == OutputFormat.json:
        typer.echo(rep.render_json(report))
    elif output == OutputFormat.markdown:
        typer.echo(rep.render_markdown(report, units), nl=False)
    elif output == OutputFormat.csv:
        typer.echo(rep.render_csv(report), nl=False)
    else:
        rep.render_table(report, units)
        for line in extra_lines or []:
            typer.echo(line)


def _contexts(value: str, name: str) -> list[int]:
    from kvplan.analysis.curve import parse_contexts

    try:
        return parse_contexts(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=name) from None


@app.command()
def compare(
    model: str = MODEL_ARG,
    ctx: str = typer.Option(
        None,
        "-c",
        "--ctx",
        help="Context sizes: 8k,32k,128k (or a range 1k:128k). Default: training context.",
    ),
    parallel: int = PARALLEL_OPT,
    kv_unified: bool = KVU_OPT,
    batch: str = BATCH_OPT,
    ubatch: str = UBATCH_OPT,
    cache_type_k: str = CTK_OPT,
    cache_type_v: str = CTV_OPT,
    flash_attn: FlashAttn = FA_OPT,
    swa_full: bool = SWA_FULL_OPT,
    output: OutputFormat = FORMAT_OPT,
    units: Units = UNITS_OPT,
) -> None:
    """MODEL's attention layout next to MHA / GQA / MQA what-ifs, and every cache type, side by side."""
    contexts = _contexts(ctx, "--ctx") if ctx else []
    settings = _settings(0, parallel, kv_unified, batch, ubatch, cache_type_k, cache_type_v, flash_attn, swa_full,
                         0)  # fmt: skip
    with handle_errors():
        from kvplan.analysis.compare import compare as build
        from kvplan.sources import load_model

        _emit_report(build(load_model(model), settings, contexts), output, units.value)


@app.command()
def curve(
    model: str = MODEL_ARG,
    ctx: str = typer.Option(
        "1k:128k", "-c", "--ctx", help="1k:1M (doubling), 1k:64k:4k (a step) or 4k,8k,32k (a list)."
    ),
    parallel: int = PARALLEL_OPT,
    kv_unified: bool = KVU_OPT,
    batch: str = BATCH_OPT,
    ubatch: str = UBATCH_OPT,
    cache_type_k: str = CTK_OPT,
    cache_type_v: str = CTV_OPT,
    flash_attn: FlashAttn = FA_OPT,
    swa_full: bool = SWA_FULL_OPT,
    rs_seq: int = RS_SEQ_OPT,
    svg: str = typer.Option(None, "--svg", help="Also write the chart as an SVG file (for docs)."),
    output: OutputFormat = FORMAT_OPT,
    units: Units = UNITS_OPT,
) -> None:
    """Bytes against context for each cache: padding steps, where windows stop growing, the slope."""
    contexts = _contexts(ctx, "--ctx")
    settings = _settings(0, parallel, kv_unified, batch, ubatch, cache_type_k, cache_type_v, flash_attn, swa_full,
                         rs_seq)  # fmt: skip
    with handle_errors():
        from kvplan.analysis.curve import bar_chart, render_svg
        from kvplan.analysis.curve import curve as build
        from kvplan.sources import load_model

        report = build(load_model(model), settings, contexts)
        if svg:
            try:
                with open(svg, "w", encoding="utf-8") as fh:
                    fh.write(render_svg(report, units.value))
            except OSError as exc:
                raise typer.BadParameter(f"cannot write {svg}: {exc.strerror}", param_hint="--svg") from None
        _emit_report(report, output, units.value, ["", *bar_chart(report, units.value)])


@app.command()
def fit(
    model: str = MODEL_ARG,
    gpu: str = typer.Option(None, "--gpu", help="A GPU preset, optionally ×N: H100-80GB, RTX-4090x2 (see README)."),
    memory: str = typer.Option(None, "--memory", help="Memory per GPU instead of a preset: 24GiB or 24GiB,24GiB."),
    gpus_file: str = typer.Option(None, "--gpus-file", help="YAML NAME: memory entries extending the GPU table."),
    ctx: str = typer.Option(None, "-c", "--ctx", help="Context to fit; without it, the largest that fits."),
    parallel: int = typer.Option(
        None, "-np", "--parallel", min=1, help="Sequences; without it (and with -c), the most."
    ),
    tensor_split: str = typer.Option(None, "-ts", "--tensor-split", help="Layer split proportions: 3,1."),
    weights: str = typer.Option(None, "--weights", help="Weight type for an estimate: q4_k_m, q8_0, bf16, ..."),
    weight_bytes: str = typer.Option(None, "--weight-bytes", help="Total weight bytes instead: 18.5GiB."),
    params: str = typer.Option(None, "--params", help="Parameter count for the estimate: 32e9, 7.6B."),
    overhead: str = typer.Option(None, "--overhead", help="Per-GPU overhead (CUDA context + compute buffer)."),
    cache_types: str = typer.Option(None, "--cache-types", help="auto: the least lossy K/V types that fit."),
    backend: str = typer.Option("cuda", "--backend", help="Buffer rules: cuda (default) or cpu."),
    engine: str = typer.Option("llama.cpp", "--engine", help="llama.cpp, vllm, sglang or trtllm."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor parallel size (serving engines)."),
    pp: int = typer.Option(1, "--pp", min=1, help="Pipeline parallel size (serving engines)."),
    kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype", help="Serving engines: auto, bf16, fp8."),
    block_size: int = typer.Option(None, "--block-size", min=1, help="Serving engines' block / page size."),
    gpu_util: float = typer.Option(0.92, "--gpu-memory-utilization", help="vLLM (0.92 since 0.20)."),
    mem_fraction: float = typer.Option(None, "--mem-fraction-static", help="SGLang (default: its heuristic)."),
    free_fraction: float = typer.Option(0.9, "--free-gpu-memory-fraction", help="TensorRT-LLM."),
    batched_tokens: int = typer.Option(
        None, "--max-num-batched-tokens", min=1, help="vLLM (default: 8192 on ≥70 GiB GPUs but A100, else 2048)."
    ),
    no_hybrid: bool = typer.Option(
        False, "--disable-hybrid-kv-cache-manager", help="vLLM: full-length KV for sliding-window layers too."
    ),
    max_kv: str = typer.Option(None, "--max-kv", help="Budget: KV / state bytes (all GPUs)."),
    max_total: str = typer.Option(None, "--max-total", help="Budget: weights + KV + overhead bytes (all GPUs)."),
    min_ctx: str = typer.Option(None, "--min-ctx", help="Budget: the context per sequence that must fit."),
    kv_unified: bool = KVU_OPT,
    batch: str = BATCH_OPT,
    ubatch: str = UBATCH_OPT,
    cache_type_k: str = CTK_OPT,
    cache_type_v: str = CTV_OPT,
    flash_attn: FlashAttn = FA_OPT,
    swa_full: bool = SWA_FULL_OPT,
    output: OutputFormat = FORMAT_OPT,
    units: Units = UNITS_OPT,
) -> None:
    """What fits on the GPUs (llama.cpp, or --engine vllm|sglang|trtllm): the largest context, the most sequences
    or the cheapest cache type."""
    from kvplan.hardware import load_gpu_file, memory_label, parse_gpus, parse_size

    def size(value: str | None, name: str) -> int | None:
        try:
            return parse_size(value) if value is not None else None
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=name) from None

    if (gpu is None) == (memory is None):
        raise typer.BadParameter("give exactly one of --gpu and --memory", param_hint="--gpu / --memory")
    n_ctx = _count(ctx, "--ctx")
    with handle_errors():
        import dataclasses

        from kvplan import fit as solver
        from kvplan.render.fit_report import fit_report
        from kvplan.sources import load_model

        if gpu is not None:
            mem, label = parse_gpus(gpu, load_gpu_file(gpus_file) if gpus_file else None)
        else:
            mem = [size(m, "--memory") for m in memory.split(",")]  # type: ignore[misc]
            label = memory_label(mem)
        splits = None
        if tensor_split:
            try:
                splits = [float(x) for x in tensor_split.split(",")]
            except ValueError:
                raise typer.BadParameter("expected numbers like 3,1", param_hint="--tensor-split") from None
            if len(splits) != len(mem):
                raise typer.BadParameter(f"{len(splits)} proportions for {len(mem)} GPUs", param_hint="--tensor-split")
        described = load_model(model)
        if params:
            from kvplan.weights import parse_params

            try:
                described = dataclasses.replace(described, n_params=parse_params(params))
            except ValueError:
                raise typer.BadParameter(f"{params!r} is not a parameter count", param_hint="--params") from None
        if engine != "llama.cpp":
            from kvplan.engine_fit import make_target, solve
            from kvplan.layout.serving import CACHE_DTYPE_BYTES, ENGINES, EngineSettings
            from kvplan.render.engine_report import engine_report

            if engine not in ENGINES:
                raise typer.BadParameter(f"expected llama.cpp, {', '.join(ENGINES)}", param_hint="--engine")
            if cache_types not in (None, "auto"):
                raise typer.BadParameter("the only value is auto", param_hint="--cache-types")
            if kv_cache_dtype.lower() not in CACHE_DTYPE_BYTES:
                raise typer.BadParameter(
                    f"expected one of {', '.join(CACHE_DTYPE_BYTES)}", param_hint="--kv-cache-dtype"
                )
            for value, name in ((gpu_util, "--gpu-memory-utilization"), (mem_fraction, "--mem-fraction-static"),
                                (free_fraction, "--free-gpu-memory-fraction")):  # fmt: skip
                if value is not None and not 0 < value <= 1:
                    raise typer.BadParameter(f"expected a fraction in (0, 1], not {value}", param_hint=name)
            s = EngineSettings(engine=engine, cache_dtype=kv_cache_dtype, tp=tp, pp=pp, block_size=block_size,
                               gpu_memory_utilization=gpu_util, mem_fraction_static=mem_fraction,
                               free_gpu_memory_fraction=free_fraction, max_num_batched_tokens=batched_tokens,
                               hybrid_kv_cache=not no_hybrid)  # fmt: skip
            target = make_target(described, s, mem, label, weights, size(weight_bytes, "--weight-bytes"),
                                 size(overhead, "--overhead"))  # fmt: skip
            found = solve(target, n_ctx, parallel, cache_types == "auto")
            _emit_report(engine_report(found, units.value), output, units.value)
            if not found.fits:
                raise typer.Exit(1)
            held = found.reserved_bytes
            _enforce([("max_kv", size(max_kv, "--max-kv"), held),
                      ("max_total", size(max_total, "--max-total"),
                       held + target.weight_bytes_per_rank + target.overhead_bytes)])  # fmt: skip
            need = _count(min_ctx, "--min-ctx")
            if need is not None and found.ctx < need:
                typer.echo(f"kvplan: budget failed: min_ctx {need} tokens per sequence; {found.ctx} fit", err=True)
                raise typer.Exit(1)
            return
        w = solver.model_weights(described, weights, size(weight_bytes, "--weight-bytes"))
        over = size(overhead, "--overhead")
        base = _settings(
            n_ctx or described.n_ctx_train,
            parallel or 1,
            kv_unified,
            batch,
            ubatch,
            cache_type_k,
            cache_type_v,
            flash_attn,
            swa_full,
            0,
        )
        base = dataclasses.replace(base, backend=backend)
        target = solver.Target(described, w, tuple(mem), tuple(splits) if splits else None, over)
        if cache_types == "auto":
            found = target.cheapest_cache_types(base)
            placement, mode = (found[1] if found else None), "cache-types"
        elif cache_types is not None:
            raise typer.BadParameter("the only value is auto", param_hint="--cache-types")
        elif n_ctx is None:
            placement, mode = target.max_context(base, described.n_ctx_train), "max-ctx"
        elif parallel is None:
            placement, mode = target.max_parallel(base), "max-parallel"
        else:
            placement, mode = target.place(solver.per_sequence(base, parallel, n_ctx)), "check"
        if placement is None:
            typer.echo(
                f"does not fit: {described.name} on {label} (weights {format_size_iec(w.total_bytes)}, "
                f"{w.basis}); try fewer layers on the GPUs, a smaller weight type or more memory"
            )
            raise typer.Exit(1)
        report = fit_report(placement, label, mode, w.basis, placement.overhead_basis, units.value)
        _emit_report(report, output, units.value)
        if not placement.fits:
            raise typer.Exit(1)
        values = placement.plan.runtime.values
        per_seq = values["n_ctx_asked"] // values["n_seq"]
        used = sum(d.used_bytes for d in placement.devices)
        _enforce([("max_kv", size(max_kv, "--max-kv"), placement.plan.total_bytes),
                  ("max_total", size(max_total, "--max-total"), used)])  # fmt: skip
        need = _count(min_ctx, "--min-ctx")
        if need is not None and per_seq < need:
            typer.echo(f"kvplan: budget failed: min_ctx {need} tokens per sequence; {per_seq} fit", err=True)
            raise typer.Exit(1)


def format_size_iec(n: int) -> str:
    from kvplan.report import format_size

    return format_size(n, "iec")


@app.command()
def check(
    file: str = typer.Argument("deployments.yaml", help="The deployments file (README: CI checks)."),
    output: OutputFormat = FORMAT_OPT,
    junit: str = typer.Option(None, "--junit", help="Also write a JUnit XML report to this file."),
) -> None:
    """Check every deployment of FILE against its budgets. Exit 0 all pass, 1 a budget fails, 3 bad input."""
    with handle_errors():
        from kvplan.check import evaluate, load_deployments, overall_exit
        from kvplan.render import check_report

        results = [evaluate(d) for d in load_deployments(file)]
        code = overall_exit(results)
        if junit:
            try:
                with open(junit, "w", encoding="utf-8") as fh:
                    fh.write(check_report.render_junit(results))
            except OSError as exc:
                raise typer.BadParameter(f"cannot write {junit}: {exc.strerror}", param_hint="--junit") from None
        if output == OutputFormat.json:
            typer.echo(check_report.render_json(results, code), nl=False)
        elif output == OutputFormat.markdown:
            typer.echo(check_report.render_markdown(results), nl=False)
        elif output == OutputFormat.csv:
            import csv
            import io

            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=["deployment", "budget", "status", "actual", "limit", "detail"],
                                    lineterminator="\n")  # fmt: skip
            writer.writeheader()
            writer.writerows(check_report.rows(results))
            typer.echo(buf.getvalue(), nl=False)
        else:
            check_report.render_table(results)
        for r in results:
            if r.status == "error":
                typer.echo(f"kvplan: error: deployment {r.name!r}: {r.error}", err=True)
        raise typer.Exit(code)


@app.command()
def models(output: OutputFormat = FORMAT_OPT) -> None:
    """List the built-in catalog of model specs."""
    with handle_errors():
        from kvplan.render.catalog import render_catalog

        render_catalog(output.value)


def main() -> None:
    """Console-script entry point. Our errors map in handle_errors; Click's usage errors (Click is vendored by
    newer Typer, a dependency of older ones, so they are recognised by shape) become one line
    ``kvplan: usage error: ...`` with exit code 2."""
    try:
        code = app(standalone_mode=False)
    except SystemExit as exc:
        sys.exit(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE))
    except Exception as exc:
        if type(exc).__name__ == "Abort":
            typer.echo("kvplan: aborted", err=True)
            sys.exit(130)
        if not (hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)):
            raise
        message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
        if message:  # empty: no arguments at all, and the help has been printed
            ctx = getattr(exc, "ctx", None)
            where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            label = "usage error" if exc.exit_code == EXIT_USAGE else "error"  # type: ignore[attr-defined]
            typer.echo(f"kvplan: {label}: {message}{where}", err=True)
        sys.exit(exc.exit_code)  # type: ignore[attr-defined]
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
