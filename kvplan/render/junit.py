"""JUnit XML for `kvplan check`: one test case per deployment and budget; violations as <failure>, deployments
that cannot be evaluated as <error>. Deterministic (no times, no absolute paths)."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from kvplan.check.evaluate import DeploymentResult
from kvplan.report import budgets as budget_report
from kvplan.units import Units


def junit(results: list[DeploymentResult], units: Units) -> str:
    cases = []
    failures = errors = 0
    for r in results:
        if r.error is not None:
            errors += 1
            cases.append(f'    <testcase classname={quoteattr(r.name)} name="load">\n'
                         f"      <error message={quoteattr(str(r.error))}/>\n    </testcase>")  # fmt: skip
            continue
        ev = r.evaluation
        assert ev is not None
        suggestion = f"\n{budget_report.suggestion_text(ev.suggestion)}" if ev.suggestion else ""
        for f in ev.findings:
            body = ""
            if not f.passed:
                failures += 1
                message = budget_report.line(f, units)
                body = f"\n      <failure message={quoteattr(message)}>{escape(message + suggestion)}</failure>\n    "
            cases.append(f"    <testcase classname={quoteattr(r.name)} name={quoteattr(f.budget)}>{body}</testcase>")
    tests = len(cases)
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="kvplan check" tests="{tests}" '
            f'failures="{failures}" errors="{errors}">\n  <testsuite name="kvplan check" tests="{tests}" '
            f'failures="{failures}" errors="{errors}">')  # fmt: skip
    return "\n".join([head, *cases, "  </testsuite>", "</testsuites>"]) + "\n"
