"""`kvplan simulate` as a document: the answer, the scheduler's settings, what the run did, the latency floors,
and the per-step series (JSON and CSV)."""

from __future__ import annotations

from kvplan.capacity.budgets import Finding
from kvplan.errors import EXIT_NO, EXIT_OK
from kvplan.report import budgets as budget_report
from kvplan.report.document import DATA_FORMATS, Column, Document, Format, Kind, Table
from kvplan.simulation.run import SimResult, percentile
from kvplan.simulation.setup import Prepared
from kvplan.simulation.workload import Workload
from kvplan.units import Units, format_seconds, format_size


def _ms(s: float | None) -> str:
    return "—" if s is None else format_seconds(s)


def simulate_document(
    p: Prepared, w: Workload, r: SimResult, units: Units, found: tuple[Finding, ...] = ()
) -> Document:
    reqs = r.requests
    served = [q for q in reqs if q.finished is not None and not q.cancelled and q.error is None]
    cancelled = [q for q in reqs if q.cancelled]
    failed = [q for q in reqs if q.error is not None]
    ttft = [q.first_token - q.arrival for q in reqs if q.first_token is not None]
    e2e = [q.finished - q.arrival for q in served if q.finished is not None]
    peak_blocks = max((s.blocks_used for s in r.steps), default=0)
    preemptions = sum(s.preempted for s in r.steps)
    preempted_requests = sum(1 for q in reqs if q.preemptions)
    prefill = [s for s in r.steps if s.prefill_tokens]
    decode = [s for s in r.steps if s.decode_tokens and not s.prefill_tokens]
    tokens_out = sum(q.tokens for q in reqs)
    unit = "cells" if p.failure == "failures" else "blocks"
    trouble = f"{len(failed):,} failed" if p.failure == "failures" else f"{preemptions:,} preemptions"
    headline = (
        f"{p.label}: {len(reqs):,} requests, {len(served):,} served, {len(cancelled):,} cancelled; peak KV "
        f"{peak_blocks / (r.usable_blocks or 1):.0%} of {r.usable_blocks:,} {unit}, {trouble}; "
        f"TTFT ≥ {_ms(percentile(ttft, 50))} p50 / {_ms(percentile(ttft, 99))} p99, ITL ≥ "
        f"{_ms(percentile(r.itl, 50))} p50 / {_ms(percentile(r.itl, 99))} p99"
    )
    hw = p.cost.hardware
    summary = (
        ("Model", f"{p.model.name} ({p.model.source})"),
        ("Engine", p.settings(units)),
        ("Workload", w.describe() + (f", shared prefix {w.shared_prefix:,} tokens" if w.shared_prefix else "")),
        ("Roofline", f"{hw.bandwidth / 1e12:.3g} TB/s, {hw.peak_flops / 1e12:,.0f} TFLOPS dense per GPU ({hw.source})"),
    )
    run_rows: tuple[dict[str, object], ...] = (
        {"metric": "requests arrived", "value": len(reqs)},
        {"metric": "served to the end", "value": len(served)},
        {"metric": "cancelled", "value": len(cancelled)},
        *(({"metric": "failed by the server", "value": len(failed)},) if p.failure == "failures" else ()),
        {"metric": "output tokens", "value": tokens_out},
        {"metric": "engine steps", "value": len(r.steps)},
        {"metric": "steps with prefill", "value": len(prefill)},
        {"metric": f"peak {unit} in use", "value": peak_blocks},
        {"metric": "peak running", "value": max((s.running for s in r.steps), default=0)},
        {"metric": "peak waiting", "value": max((s.waiting for s in r.steps), default=0)},
        *(
            ()
            if p.failure == "failures"
            else (
                {"metric": "preemptions", "value": preemptions},
                {"metric": "requests preempted", "value": preempted_requests},
            )
        ),
        {"metric": f"free {unit} after the last request", "value": r.final_free},
    )
    latency_rows = tuple(
        {
            "metric": name,
            "p50": percentile(values, 50),
            "p90": percentile(values, 90),
            "p99": percentile(values, 99),
            "max": max(values) if values else None,
        }
        for name, values in (
            ("TTFT (queue + prefill + first step)", ttft),
            ("ITL (between tokens)", list(r.itl)),
            ("end to end (served)", e2e),
            ("prefill step", [s.seconds for s in prefill]),
            ("decode step", [s.seconds for s in decode]),
        )
    )
    step_bytes = [float(s.bytes_read) for s in decode]
    steps = Table(
        "steps",
        tuple(
            Column(k, k, kind, formats=DATA_FORMATS)
            for k, kind in (
                ("start_s", Kind.SECONDS),
                ("seconds", Kind.SECONDS),
                ("prefill_tokens", Kind.COUNT),
                ("decode_tokens", Kind.COUNT),
                ("running", Kind.COUNT),
                ("waiting", Kind.COUNT),
                ("blocks_used", Kind.COUNT),
                ("preempted", Kind.COUNT),
                ("bytes_read", Kind.BYTES),
                ("flops", Kind.COUNT),
                ("compute_bound", Kind.TEXT),
            )
        ),
        tuple(
            {
                "start_s": s.start,
                "seconds": s.seconds,
                "prefill_tokens": s.prefill_tokens,
                "decode_tokens": s.decode_tokens,
                "running": s.running,
                "waiting": s.waiting,
                "blocks_used": s.blocks_used,
                "preempted": s.preempted,
                "bytes_read": s.bytes_read,
                "flops": round(s.flops),
                "compute_bound": s.compute_bound,
            }
            for s in r.steps
        ),
    )
    notes = [
        "latencies are roofline floors (bytes against bandwidth, FLOPs against the dense peak), never a "
        "measurement: kernels, launches, communication and sampling add time",
        f"decode steps read {format_size(percentile(step_bytes, 50) or 0, units)} p50 (weights + KV history)",
        *p.notes,
    ]
    warnings = []
    if not r.blocks_returned:
        warnings.append(
            f"{unit} leaked: {r.final_free:,} of {r.usable_blocks:,} free after every request ended (a bug: report it)"
        )
    if failed:
        reasons: dict[str, int] = {}
        for q in failed:
            reasons[q.error or ""] = reasons.get(q.error or "", 0) + 1
        worst = max(reasons, key=lambda k: reasons[k])
        warnings.append(
            f"{len(failed):,} requests failed in llama-server ({reasons[worst]:,}: {worst!r}); a unified cache (-kvu) "
            "fails every request in flight when it fills: a larger -c, fewer -np, or one stream per slot avoids it"
        )
    if preemptions:
        warnings.append(
            f"{preemptions:,} preemptions: vLLM ran out of KV blocks and recomputed {preempted_requests:,} requests "
            "(a lower --max-num-seqs, more GPU memory, or an fp8 cache avoids it)"
        )
    return Document(
        kind="simulate",
        headline=headline,
        summary=summary,
        tables=(
            Table(
                "run",
                (Column("metric", "Run"), Column("value", "Value", Kind.COUNT)),
                run_rows,  # type: ignore[arg-type]
                csv=False,
            ),
            Table(
                "latency",
                (
                    Column("metric", "Latency floor"),
                    *(Column(k, k, Kind.SECONDS) for k in ("p50", "p90", "p99", "max")),
                ),
                latency_rows,
                csv=False,
            ),
            *((budget_report.table(found, units),) if found else ()),
            steps,
            Table(
                "requests",
                tuple(
                    Column(k, k, kind, formats=frozenset({Format.JSON}))
                    for k, kind in (
                        ("id", Kind.INT),
                        ("arrival_s", Kind.SECONDS),
                        ("prompt_tokens", Kind.COUNT),
                        ("output_tokens", Kind.COUNT),
                        ("tokens", Kind.COUNT),
                        ("ttft_s", Kind.SECONDS),
                        ("e2e_s", Kind.SECONDS),
                        ("cancelled", Kind.TEXT),
                        ("preemptions", Kind.COUNT),
                        ("error", Kind.TEXT),
                    )
                ),
                tuple(
                    {
                        "id": q.rid,
                        "arrival_s": q.arrival,
                        "prompt_tokens": q.prompt,
                        "output_tokens": q.output,
                        "tokens": q.tokens,
                        "ttft_s": None if q.first_token is None else q.first_token - q.arrival,
                        "e2e_s": None if q.finished is None else q.finished - q.arrival,
                        "cancelled": q.cancelled,
                        "preemptions": q.preemptions,
                        "error": q.error,
                    }
                    for q in reqs
                ),
                csv=False,
            ),
        ),
        notes=tuple(notes),
        warnings=tuple(warnings),
        data={
            "engine": {"name": p.engine, "label": p.label},
            "scheduler": p.scheduler,
            "hardware": {"bandwidth_bytes_per_s": hw.bandwidth, "peak_flops": hw.peak_flops, "source": hw.source},
            "kv_capacity": r.usable_blocks,  # the blocks (vLLM) or cells (llama-server) a run can use
            "kv_unit": unit,
            "blocks_returned": r.blocks_returned,
            "end_s": r.end,
            "budgets": [f.to_dict() for f in found],
        },
        exit_code=EXIT_OK if all(f.passed for f in found) else EXIT_NO,
    )
