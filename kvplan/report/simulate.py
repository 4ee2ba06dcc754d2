"""`kvplan simulate` as a document: the answer, the scheduler's settings, what the run did, the latency floors,
and the per-step series (JSON and CSV)."""

from __future__ import annotations

from kvplan.capacity.budgets import Finding
from kvplan.errors import EXIT_NO, EXIT_OK
from kvplan.report import budgets as budget_report
from kvplan.report.document import DATA_FORMATS, Column, Document, Format, Kind, Table
from kvplan.simulation.run import SimResult
from kvplan.simulation.setup import Prepared
from kvplan.simulation.workload import Workload
from kvplan.units import Units, format_seconds, format_size


def _ms(s: float | None) -> str:
    return "—" if s is None else format_seconds(s)


def simulate_document(
    p: Prepared, w: Workload, r: SimResult, units: Units, found: tuple[Finding, ...] = ()
) -> Document:
    st, series = r.stats, r.series
    peak_blocks, preemptions = series.peak_blocks, series.preemptions
    unit = {"failures": "cells", "retractions": "tokens"}.get(p.failure, "blocks")
    trouble = f"{st.failed:,} failed" if p.failure == "failures" else f"{preemptions:,} {p.failure}"
    if p.failure != "failures" and st.failed:
        trouble += f", {st.failed:,} refused"
    ttft50, ttft99 = st.ttft.percentiles(50, 99)
    itl50, itl99 = st.itl.percentiles(50, 99)
    headline = (
        f"{p.label}: {st.arrived:,} requests, {st.served:,} served, {st.cancelled:,} cancelled; peak KV "
        f"{peak_blocks / (r.usable_blocks or 1):.0%} of {r.usable_blocks:,} {unit}, {trouble}; "
        f"TTFT ≥ {_ms(ttft50)} p50 / {_ms(ttft99)} p99, ITL ≥ {_ms(itl50)} p50 / {_ms(itl99)} p99"
    )
    hw = p.cost.hardware
    summary = (
        ("Model", f"{p.model.name} ({p.model.source})"),
        ("Engine", p.settings(units)),
        ("Workload", w.describe() + (f", shared prefix {w.shared_prefix:,} tokens" if w.shared_prefix else "")),
        ("Roofline", f"{hw.bandwidth / 1e12:.3g} TB/s, {hw.peak_flops / 1e12:,.0f} TFLOPS dense per GPU ({hw.source})"),
    )
    failed_row = {
        "failures": "failed by the server",
        "retractions": "refused by SGLang (prompt ≥ its longest input)",
    }.get(p.failure, "refused by vLLM (prompt ≥ max_model_len)")
    retracted = p.failure == "retractions"
    run_rows: tuple[dict[str, object], ...] = (
        {"metric": "requests arrived", "value": st.arrived},
        {"metric": "served to the end", "value": st.served},
        {"metric": "cancelled", "value": st.cancelled},
        *(({"metric": failed_row, "value": st.failed},) if p.failure == "failures" or st.failed else ()),
        {"metric": "output tokens", "value": st.tokens},
        {"metric": "engine steps", "value": series.steps},
        {"metric": "steps with prefill", "value": series.prefill_steps},
        {"metric": f"peak {unit} in use", "value": peak_blocks},
        {"metric": "peak running", "value": series.peak_running},
        {"metric": "peak waiting", "value": series.peak_waiting},
        *(
            ()
            if p.failure == "failures"
            else (
                {"metric": "retractions" if retracted else "preemptions", "value": preemptions},
                {"metric": "requests retracted" if retracted else "requests preempted", "value": st.preempted},
            )
        ),
        {"metric": f"free {unit} after the last request", "value": r.final_free},
    )
    latency_rows = tuple(
        {"metric": name, **dict(zip(("p50", "p90", "p99"), values.percentiles(50, 90, 99), strict=True)),
         "max": values.maximum}
        for name, values in (
            ("TTFT (queue + prefill + first step)", st.ttft),
            ("ITL (between tokens)", st.itl),
            ("end to end (served)", st.e2e),
            ("prefill step", series.prefill_seconds),
            ("decode step", series.decode_seconds),
        )
    )  # fmt: skip
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
            for s in series.finished_rows()
        ),
    )
    notes = [
        "latencies are roofline floors (bytes against bandwidth, FLOPs against the dense peak), never a "
        "measurement: kernels, launches, communication and sampling add time",
        f"decode steps read {format_size(series.decode_bytes.percentile(50) or 0, units)} p50 (weights + KV history)",
        *p.notes,
    ]
    if series.per_row > 1:
        notes.append(
            f"the steps series merges {series.per_row:,} consecutive steps per row ({series.steps:,} steps in "
            f"{len(series.finished_rows()):,} rows: sums of time, tokens, bytes and preemptions, peaks of running, "
            "waiting and KV in use); the run's figures cover every step"
        )
    if len(r.requests) < st.arrived:
        notes.append(f"the requests table lists the first {len(r.requests):,} of {st.arrived:,} requests")
    if not all(q.exact for q in (st.ttft, st.itl, st.e2e, series.prefill_seconds, series.decode_seconds)):
        notes.append("percentiles past 4,194,304 values come from a histogram 0.01 % wide: within 0.01 % of exact")
    warnings = []
    if not r.blocks_returned:
        warnings.append(
            f"{unit} leaked: {r.final_free:,} of {r.usable_blocks:,} free after every request ended (a bug: report it)"
        )
    if st.failed and p.failure == "failures":
        worst = max(st.failures, key=lambda k: st.failures[k])
        warnings.append(
            f"{st.failed:,} requests failed in llama-server ({st.failures[worst]:,}: {worst!r}); a unified cache "
            "(-kvu) fails every request in flight when it fills: a larger -c, fewer -np, or one stream per slot "
            "avoids it"
        )
    elif st.failed and retracted:
        worst = max(st.failures, key=lambda k: st.failures[k])
        warnings.append(
            f"{st.failed:,} requests refused by SGLang ({st.failures[worst]:,}: {worst!r}); a longer "
            "--context-length (and a pool that holds it) admits them"
        )
    elif st.failed:
        worst = max(st.failures, key=lambda k: st.failures[k])
        warnings.append(
            f"{st.failed:,} requests refused by vLLM ({st.failures[worst]:,}: {worst!r}); a longer --max-model-len "
            "admits them"
        )
    if preemptions and retracted:
        warnings.append(
            f"{preemptions:,} retractions: SGLang's pool had no room for the next decode step and it retracted "
            f"{st.preempted:,} requests (KV freed, prefilled again later); a lower --max-running-requests, a "
            "--schedule-conservativeness above 1, more GPU memory or an fp8 cache avoids it"
        )
    elif preemptions:
        warnings.append(
            f"{preemptions:,} preemptions: vLLM ran out of KV blocks and recomputed {st.preempted:,} requests "
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
                    for q in r.requests
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
            "steps_per_row": series.per_row,  # 1: one row per engine step; more: consecutive steps merged
            "requests_listed": len(r.requests),  # the first ones, one by one; the run's figures cover all
            "budgets": [f.to_dict() for f in found],
        },
        exit_code=EXIT_OK if all(f.passed for f in found) else EXIT_NO,
    )
