"""JUnit XML for `kvplan check`, from its document: one test case per deployment and budget; violations as
<failure>, deployments that cannot be evaluated as <error>. Deterministic (no times, no absolute paths)."""

from __future__ import annotations

from xml.sax import saxutils

from kvplan.render.cells import printable
from kvplan.report.document import Document


def escape(text: str) -> str:
    """XML text: printable (XML 1.0 cannot carry most control characters) and escaped."""
    return saxutils.escape(printable(text))


def quoteattr(text: str) -> str:
    return saxutils.quoteattr(printable(text))


def junit(doc: Document) -> str:
    suggestions = {d["name"]: d["suggestion"] for d in doc.data["deployments"]}
    cases = []
    failures = errors = 0
    for row in doc.tables[0].rows:
        name = quoteattr(str(row["deployment"]))
        if row["status"] == "ERROR":
            errors += 1
            cases.append(f'    <testcase classname={name} name="load">\n'
                         f"      <error message={quoteattr(str(row['detail']))}/>\n    </testcase>")  # fmt: skip
            continue
        body = ""
        if row["status"] == "FAIL":
            failures += 1
            message = f"{row['budget']}: {row['actual_text']} against {row['limit_text']}"
            message += f"; {row['detail']}" if row["detail"] else ""
            suggestion = suggestions.get(str(row["deployment"]))
            hint = f"\npasses with {' '.join(suggestion['flags'])}" if suggestion else ""
            body = f"\n      <failure message={quoteattr(message)}>{escape(message + hint)}</failure>\n    "
        cases.append(f"    <testcase classname={name} name={quoteattr(str(row['budget']))}>{body}</testcase>")
    tests = len(cases)
    head = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="kvplan check" tests="{tests}" '
            f'failures="{failures}" errors="{errors}">\n  <testsuite name="kvplan check" tests="{tests}" '
            f'failures="{failures}" errors="{errors}">')  # fmt: skip
    return "\n".join([head, *cases, "  </testsuite>", "</testsuites>"]) + "\n"
