"""The reference for kvplan's start-up: a Typer app of one command with one option, as Typer's documentation writes
it (Typer 0.29 coerces the value with pydantic). `python benchmarks/typer_one_command.py --ctx 4096`."""

from __future__ import annotations

import typer

app = typer.Typer()


@app.command()
def estimate(ctx: str = "4096") -> None:
    typer.echo(ctx)


if __name__ == "__main__":
    app()
