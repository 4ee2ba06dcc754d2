"""`kvplan check` reports: a table, versioned JSON, Markdown for PR comments and JUnit XML for CI.

Every renderer is deterministic: the same input gives byte-identical output (no times, no absolute paths).
"""

from __future__ import annotations

import json
from xml.sax.saxutils import escape, quoteattr

from kvplan.check import Result

CHECK_SCHEMA_VERSION = 1
_MARK = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}


def rows(results: list[Result]) -> list[dict[str, str]]:
    out = []
    for r in results:
        if r.status == "error":
            out.append({"deployment": r.name, "budget": "-", "status": "ERROR", "actual": "", "limit": "",
                        "detail": r.error})  # fmt: skip
            continue
        for f in r.findings:
            out.append({"deployment": r.name, "budget": f.budget, "status": "PASS" if f.passed else "FAIL",
                        "actual": f.actual, "limit": f.limit, "detail": f.detail})  # fmt: skip
        if not r.findings:
            out.append({"deployment": r.name, "budget": "-", "status": "PASS", "actual": "", "limit": "",
                        "detail": "no budgets"})  # fmt: skip
    return out


def summary_line(results: list[Result]) -> str:
    n = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error")}
    return f"{len(results)} deployment(s): {n['pass']} passed, {n['fail']} failed, {n['error']} error(s)"


def render_json(results: list[Result], exit_code: int) -> str:
    doc = {
        "schema_version": CHECK_SCHEMA_VERSION,
        "kind": "check",
        "exit_code": exit_code,
        "summary": summary_line(results),
        "deployments": [
            {
                "name": r.name,
                "status": r.status,
                "exit_code": r.exit_code,
                "error": r.error or None,
                "suggestion": r.suggestion or None,
                "summary": r.summary,
                "budgets": [
                    {"budget": f.budget, "passed": f.passed, "actual": f.actual, "limit": f.limit, "detail": f.detail}
                    for f in r.findings
                ],
            }
            for r in results
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def render_markdown(results: list[Result]) -> str:
    header = "| Deployment | Budget | Status | Actual | Limit | Detail |"
    lines = [f"**kvplan check: {summary_line(results)}**", "", header, "|---|---|---|---:|---:|---|"]
    keys = ("deployment", "budget", "status", "actual", "limit", "detail")
    for row in rows(results):
        lines.append("| " + " | ".join(row[k].replace("|", "\\|") for k in keys) + " |")
    for r in results:
        if r.suggestion:
            lines += ["", f"> {r.name}: {r.suggestion}"]
    return "\n".join(lines) + "\n"


def render_junit(results: list[Result]) -> str:
    """One test case per deployment and budget; errors as <error>, violations as <failure>."""
    cases = []
    failures = errors = 0
    for r in results:
        if r.status == "error":
            errors += 1
            cases.append(f'    <testcase classname={quoteattr(r.name)} name="load">\n'
                         f'      <error message={quoteattr(r.error)}/>\n    </testcase>')  # fmt: skip
            continue
        for f in r.findings:
            body = ""
            if not f.passed:
                failures += 1
                message = f"{f.budget}: {f.actual} against {f.limit}" + (f"; {f.detail}" if f.detail else "")
                hint = f"\n{r.suggestion}" if r.suggestion else ""
                body = f"\n      <failure message={quoteattr(message)}>{escape(message + hint)}</failure>\n    "
            cases.append(f"    <testcase classname={quoteattr(r.name)} name={quoteattr(f.budget)}>{body}</testcase>")
    tests = len(cases)
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="kvplan check" tests="{tests}" '
            f'failures="{failures}" errors="{errors}">\n  <testsuite name="kvplan check" tests="{tests}" '
            f'failures="{failures}" errors="{errors}">')  # fmt: skip
    return "\n".join([head, *cases, "  </testsuite>", "</testsuites>"]) + "\n"


def render_table(results: list[Result]) -> None:
    from rich import box
    from rich.markup import escape as rich_escape
    from rich.table import Table

    from kvplan.render.table import make_console

    table = Table(box=box.SIMPLE_HEAVY, title=f"kvplan check: {summary_line(results)}", title_justify="left")
    for h in ("Deployment", "Budget", "Status", "Actual", "Limit", "Detail"):
        table.add_column(h, justify="right" if h in ("Actual", "Limit") else "left")
    for row in rows(results):
        style = {"PASS": "green", "FAIL": "red", "ERROR": "red"}[row["status"]]
        table.add_row(*[rich_escape(row[k]) for k in ("deployment", "budget")],
                      f"[{style}]{row['status']}[/{style}]",
                      *[rich_escape(row[k]) for k in ("actual", "limit", "detail")])  # fmt: skip
    console = make_console()
    console.print(table)
    for r in results:
        if r.suggestion:
            console.print(f"• {rich_escape(r.name)}: {rich_escape(r.suggestion)}", highlight=False)
