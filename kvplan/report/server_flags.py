"""What a report says of llama-server's arguments that kvplan does not plan (a pasted llama-server line): that
they change nothing kvplan plans (and stay on the run line), or change host memory kvplan does not plan."""

from __future__ import annotations

import dataclasses

from kvplan.capacity.request import ServerFlag
from kvplan.facts.llama_server_args import Effect
from kvplan.report.document import Document


def notes(flags: tuple[ServerFlag, ...]) -> tuple[str, ...]:
    none = [" ".join(f.tokens) for f in flags if f.effect is Effect.NONE]
    host = [" ".join(f.tokens) for f in flags if f.effect is Effect.HOST]
    out = []
    if none:
        out.append(f"llama-server's {', '.join(none)}: no memory kvplan plans depends on them (kept on the run line)")
    if host:
        out.append(
            f"llama-server's {', '.join(host)}: host memory kvplan does not plan (the prompt cache, context "
            "checkpoints, repacked weights or host buffers); the figures above leave it out"
        )
    return tuple(out)


def with_server_flags(doc: Document, flags: tuple[ServerFlag, ...]) -> Document:
    """The document with its notes on ``flags`` (none: the document as it is)."""
    if not flags:
        return doc
    return dataclasses.replace(doc, notes=(*doc.notes, *notes(flags)))
