"""The ``kvplan`` command line. Callbacks only parse, call the library and present."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum

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


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


class FlashAttn(str, Enum):
    on = "on"
    off = "off"
    auto = "auto"


@contextmanager
def handle_errors() -> Iterator[None]:
    """The one place where errors become a line on stderr and an exit code."""
    try:
        yield
    except KvplanError as exc:
        typer.echo(f"kvplan: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
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


@app.command()
def estimate(
    model: str = typer.Argument(
        ..., help="A .gguf file, a .yaml/.yml spec, or a catalog name (see `kvplan models`)."
    ),
    ctx: str = typer.Option(
        None,
        "-c",
        "--ctx",
        "--ctx-size",
        help="Context size in tokens (32k = 32768). Default: the model's training context, "
        "as llama.cpp's -c 0.",
    ),
    parallel: int = typer.Option(1, "-np", "--parallel", min=1, help="Parallel sequences (n_seq_max)."),
    kv_unified: bool = typer.Option(
        False, "-kvu", "--kv-unified", help="One KV stream shared by all sequences."
    ),
    batch: str = typer.Option("2048", "-b", "--batch", "--batch-size", help="Logical batch size (n_batch)."),
    ubatch: str = typer.Option(
        "512", "-ub", "--ubatch", "--ubatch-size", help="Physical batch size (n_ubatch)."
    ),
    cache_type_k: str = typer.Option(
        "f16", "-ctk", "--cache-type-k", help="K cache type: f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1."
    ),
    cache_type_v: str = typer.Option("f16", "-ctv", "--cache-type-v", help="V cache type (same choices)."),
    flash_attn: FlashAttn = typer.Option(
        FlashAttn.auto, "-fa", "--flash-attn", case_sensitive=False, help="Flash attention: on, off or auto."
    ),
    swa_full: bool = typer.Option(False, "--swa-full", help="Full-size cache for sliding-window layers."),
    rs_seq: int = typer.Option(
        0, "--rs-seq", min=0, help="Recurrent-state snapshots kept for speculative rollback (n_rs_seq)."
    ),
    mtp: bool = typer.Option(False, "--mtp", help="Also size the MTP draft context (nextn layers only)."),
    cache_type_k_draft: str = typer.Option("f16", "-ctkd", "--cache-type-k-draft", help="MTP draft K type."),
    cache_type_v_draft: str = typer.Option("f16", "-ctvd", "--cache-type-v-draft", help="MTP draft V type."),
    output: OutputFormat = typer.Option(
        OutputFormat.table, "--format", "-o", case_sensitive=False, help="Output format."
    ),
) -> None:
    """How many bytes llama.cpp allocates for the KV cache and state of MODEL, exactly, and why."""
    n_ctx = _count(ctx, "--ctx") or 0
    n_batch = _count(batch, "--batch")
    n_ubatch = _count(ubatch, "--ubatch")
    with handle_errors():
        from kvplan.layout.llamacpp import LlamaCppSettings, plan, plan_mtp_draft
        from kvplan.sources import load_model

        settings = LlamaCppSettings(
            n_ctx=n_ctx,
            n_seq=parallel,
            kv_unified=kv_unified,
            n_batch=n_batch or 0,
            n_ubatch=n_ubatch or 0,
            type_k=cache_type_k.lower(),
            type_v=cache_type_v.lower(),
            flash_attn=flash_attn.value,
            swa_full=swa_full,
            n_rs_seq=rs_seq,
        )
        described = load_model(model)
        plans = [plan(described, settings)]
        if mtp:
            plans.append(
                plan_mtp_draft(described, settings, cache_type_k_draft.lower(), cache_type_v_draft.lower())
            )
        _emit(plans, output)


def _emit(plans: list, output: OutputFormat) -> None:
    if output == OutputFormat.json:
        from kvplan.render.json_out import render_json

        typer.echo(render_json(plans[0], plans[1] if len(plans) > 1 else None))
    elif output == OutputFormat.markdown:
        from kvplan.render.text import render_markdown

        typer.echo(render_markdown(plans), nl=False)
    elif output == OutputFormat.csv:
        from kvplan.render.text import render_csv

        typer.echo(render_csv(plans), nl=False)
    else:
        from kvplan.render.table import make_console, render_table

        render_table(plans, make_console())


@app.command()
def models(
    output: OutputFormat = typer.Option(
        OutputFormat.table, "--format", "-o", case_sensitive=False, help="Output format."
    ),
) -> None:
    """List the built-in catalog of model specs."""
    with handle_errors():
        from kvplan.render.catalog import render_catalog

        render_catalog(output.value)


def main() -> None:
    """Console-script entry point: Click's usage errors keep exit code 2; ours map in handle_errors."""
    try:
        app(standalone_mode=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
        sys.exit(code)


if __name__ == "__main__":
    main()
