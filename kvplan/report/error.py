"""An error as a document, so that `-o json` is always JSON: the message, its kind and the exit code."""

from __future__ import annotations

from kvplan.report.document import Document


def error_document(message: str, kind: str, exit_code: int) -> Document:
    return Document(
        kind="error", data={"error": {"kind": kind, "message": message, "exit_code": exit_code}}, exit_code=exit_code
    )
