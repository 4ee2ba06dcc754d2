"""Long work shown on stderr while it runs — a remote header fetch (bytes), `simulate` (simulated seconds),
`check` (deployments) — as a Rich progress line, only when stderr is a terminal, and gone when the work ends.
Nothing is drawn for work that ends within half a second, and nothing at all in a pipe or a file, so logs and
captured output never hold it. Rich is imported only when something is drawn."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from kvplan.progress import Progress, Step


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (colour, progress and a width limit are for terminals only)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


#: work shorter than this draws nothing
DELAY_S = 0.5


class _Bar:
    """One Rich progress display, started on the first report after DELAY_S, one task per kind of work."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.progress: Any = None
        self.tasks: dict[str, Any] = {}

    def __call__(self, step: Step) -> None:
        if self.progress is None:
            if time.monotonic() - self.started < DELAY_S:
                return
            self._start()
        task = self.tasks.get(step.task)
        label = f"{step.task} {step.detail}".strip()
        if task is None:
            self.tasks[step.task] = self.progress.add_task(label, total=step.total, completed=step.done)
        else:
            self.progress.update(task, description=label, total=step.total, completed=step.done)

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

        console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            console=console,
            transient=True,
        )
        self.progress.start()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@contextmanager
def showing(err: TextIO) -> Iterator[Progress | None]:
    """A progress callback drawing on ``err`` when it is a terminal (None otherwise), cleared at the end."""
    if not is_terminal(err):
        yield None
        return
    bar = _Bar(err)
    try:
        yield bar
    finally:
        bar.close()
