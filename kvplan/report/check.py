"""`kvplan check` as a document: every deployment and budget with its numbers, the suggestion when one fails.
Deterministic: the same input gives byte-identical reports (no times, no absolute paths)."""

from __future__ import annotations

from typing import Any

from kvplan.checks.evaluate import DeploymentResult
from kvplan.report import budgets as budget_report
from kvplan.report.document import Cell, Column, Document, Table
from kvplan.units import Units


def summary_line(results: list[DeploymentResult]) -> str:
    n = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error")}
    return f"{len(results)} deployment(s): {n['pass']} passed, {n['fail']} failed, {n['error']} error(s)"


def check_document(results: list[DeploymentResult], exit_code: int, units: Units) -> Document:
    columns = (Column("deployment", "Deployment"), *budget_report.COLUMNS)
    rows: list[dict[str, Cell]] = []
    deployments: list[dict[str, Any]] = []
    notes: list[str] = []
    for r in results:
        if r.error is not None:
            rows.append({"deployment": r.name, "budget": "-", "status": "ERROR", "detail": str(r.error)})
            deployments.append(
                {
                    "name": r.name,
                    "status": "error",
                    "exit_code": r.exit_code,
                    "error": str(r.error),
                    "budgets": [],
                    "suggestion": None,
                }
            )
            continue
        ev = r.evaluation
        assert ev is not None
        for f in ev.findings:
            rows.append({"deployment": r.name, **budget_report.row(f, units)})
        if not ev.findings:
            rows.append({"deployment": r.name, "budget": "-", "status": "PASS", "detail": "no budgets"})
        if ev.suggestion is not None:
            notes.append(f"{r.name}: {budget_report.suggestion_text(ev.suggestion)}")
        fit, est = ev.fit, ev.estimate
        # the settings planned, on hardware (the fit) or without (the estimate): never null for a planned entry
        ctx, n_seq = (
            (fit.ctx_per_seq, fit.n_seq)
            if fit
            else (est.plan.context.n_ctx_seq, est.plan.context.n_seq)
            if est
            else (None, None)
        )
        deployments.append(
            {
                "name": r.name,
                "status": r.status,
                "exit_code": r.exit_code,
                "error": None,
                "runtime": ev.request.runtime,
                "kv_bytes": fit.kv_bytes if fit else est.total_bytes if est else None,
                "ctx_per_seq": ctx,
                "n_seq": n_seq,
                "budgets": [f.to_dict() for f in ev.findings],
                "suggestion": ev.suggestion.to_dict() if ev.suggestion else None,
            }
        )
    headline = f"kvplan check: {summary_line(results)}"
    return Document(
        kind="check",
        headline=headline,
        tables=(Table("rows", columns, tuple(rows), json=False),),
        notes=tuple(notes),
        data={"exit_code": exit_code, "summary": summary_line(results), "deployments": deployments},
        exit_code=exit_code,
    )
