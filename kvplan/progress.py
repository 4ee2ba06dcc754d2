"""Progress of long work — a remote header fetch, a simulation, a check over many deployments — reported to
whoever listens. The library prints nothing: a caller passes a callback (``progress=`` of the commands in
kvplan.commands), which is installed for the length of the call, and the code doing the work reports to it with
:func:`report`. The command line's listener draws it on stderr when that is a terminal (kvplan.cli.progress)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """How far one task has come: ``done`` of ``total`` (None: not known) in ``unit``."""

    task: str  # what is being done: "fetching MODEL", "simulating", "checking"
    done: float
    total: float | None = None
    unit: str = ""  # "bytes", "s" (simulated seconds), "deployments"
    detail: str = ""  # e.g. "3,927 requests"


Progress = Callable[[Step], None]
_listener: ContextVar[Progress | None] = ContextVar("kvplan_progress", default=None)


@contextmanager
def listening(progress: Progress | None) -> Iterator[None]:
    """Report to ``progress`` (None: to nobody) inside the block."""
    token = _listener.set(progress)
    try:
        yield
    finally:
        _listener.reset(token)


def report(task: str, done: float, total: float | None = None, unit: str = "", detail: str = "") -> None:
    listener = _listener.get()
    if listener is not None:
        listener(Step(task, done, total, unit, detail))


def reporting() -> bool:
    """Whether anyone listens (so that work done only to report can be skipped)."""
    return _listener.get() is not None
