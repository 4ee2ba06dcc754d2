"""`kvplan models`: the catalog, one row per spec (name, arch, layers, attention, context, KV/token)."""

from __future__ import annotations

import csv
import io
import json

import typer

from kvplan.layout.llamacpp import LlamaCppSettings, plan
from kvplan.model import MemoryKind
from kvplan.report import format_size
from kvplan.sources.catalog import catalog_names, load_catalog_model

COLUMNS = ("name", "arch", "layers", "attention", "n_ctx_train", "kv_per_token_bytes", "state_bytes", "hf_id")


def catalog_rows() -> list[dict[str, object]]:
    rows = []
    for name in catalog_names():
        m = load_catalog_model(name)
        p = plan(m, LlamaCppSettings(n_ctx=4096))
        per_token = p.per_token_bytes
        state = sum(c.bytes for c in p.caches if c.per_token_bytes == 0 and c.kind in ("recurrent", "compressed"))
        attention = m.attention_summary
        if m.memory not in (MemoryKind.KV, MemoryKind.NONE):
            attention += f" ({m.memory.value})"
        if m.swa_type.value != "none":
            attention += f"+{'chunked' if m.swa_type.value == 'chunked' else 'SWA'} {m.n_swa}"
        rows.append(
            {
                "name": name,
                "arch": m.arch,
                "layers": m.n_layer_all,
                "attention": attention,
                "n_ctx_train": m.n_ctx_train,
                "kv_per_token_bytes": per_token,
                "state_bytes": state,
                "hf_id": m.extra.get("hf_id", ""),
            }
        )
    return rows


def render_catalog(fmt: str) -> None:
    rows = catalog_rows()
    if fmt == "json":
        typer.echo(json.dumps({"schema_version": 1, "models": rows}, indent=2))
        return
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow(["" if r[c] is None else r[c] for c in COLUMNS])
        typer.echo(buf.getvalue(), nl=False)
        return
    headers = (
        "Name",
        "Arch",
        "Layers",
        "Attention",
        "Trained ctx",
        "KV / token",
        "Fixed state (1 seq)",
        "Hugging Face id",
    )

    def cells(r: dict[str, object]) -> list[str]:
        state = r["state_bytes"]
        return [
            str(r["name"]),
            str(r["arch"]),
            str(r["layers"]),
            str(r["attention"]),
            str(r["n_ctx_train"]),
            format_size(r["kv_per_token_bytes"]),  # type: ignore[arg-type]
            format_size(state) if isinstance(state, int) and state else "-",
            str(r["hf_id"]),
        ]

    if fmt == "markdown":
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
        typer.echo("\n".join(lines))
        return
    from rich import box
    from rich.table import Table

    from kvplan.render.table import make_console

    t = Table(box=box.SIMPLE_HEAVY, title=f"kvplan catalog: {len(rows)} models", title_justify="left")
    for i, h in enumerate(headers):
        t.add_column(h, justify="right" if i in (2, 4, 5, 6) else "left", no_wrap=True)
    for r in rows:
        t.add_row(*cells(r))
    make_console().print(t)
