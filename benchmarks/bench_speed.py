"""Start-up and sweep speed, each next to a reference measured in the same run.

usage: python benchmarks/bench_speed.py [--runs 11]

- Start-up: `kvplan estimate llama-3.1-8b -o json`, the table, `kvplan --help`, `kvplan fit --help`, `kvplan
  models`, each as a whole process (median of --runs, the commands interleaved), next to two references in the
  same run: the interpreter's own start-up (`python -c pass`) and a one-command Typer app as Typer's
  documentation writes it (typer_one_command.py). Run it with compiled bytecode (an installed package has it; in a
  checkout, `python -m compileall kvplan` first and leave PYTHONDONTWRITEBYTECODE unset), or every run
  recompiles.
- Sweeps: llama.cpp plans per second for one model (`kvplan.planner(model)` over 4,000 contexts, best of 3),
  for a dense, a sliding-window, a hybrid and an MLA model of the catalog.
Prints Markdown tables; the README's Speed section shows them. Parse speed: bench_parse.py; simulation:
bench_simulate.py.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def walls(cmds: list[list[str]], runs: int) -> list[float]:
    """The median wall time of each command, run in turn (A B C … A B C …) so that drift hits all alike."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for i, cmd in enumerate(cmds):
            t = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
            times[i].append(time.perf_counter() - t)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    py = sys.executable
    kv = [py, "-m", "kvplan"]
    rows = [
        ("`kvplan estimate llama-3.1-8b -o json`", [*kv, "estimate", "llama-3.1-8b", "-o", "json"], 0.15),
        ("`kvplan estimate llama-3.1-8b` (table)", [*kv, "estimate", "llama-3.1-8b"], 0.18),
        ("`kvplan --help`", [*kv, "--help"], 0.12),
        ("`kvplan fit --help`", [*kv, "fit", "--help"], 0.12),
        ("`kvplan models`", [*kv, "models"], 0.25),
    ]
    references = [[py, "-c", "pass"], [py, str(ROOT / "benchmarks" / "typer_one_command.py"), "--ctx", "4096"]]
    times = walls(references + [cmd for _, cmd, _ in rows], args.runs)
    bare, typer_app = times[0], times[1]
    print(
        f"| command | time | target | × `python -c pass` ({bare * 1000:.0f} ms) | × a one-command Typer app "
        f"({typer_app * 1000:.0f} ms) |"
    )
    print("|---|---:|---:|---:|---:|")
    for (label, _, target), t in zip(rows, times[2:], strict=True):
        print(f"| {label} | {t * 1000:.0f} ms | ≤ {target * 1000:.0f} ms | {t / bare:.1f}× | {t / typer_app:.2f}× |")

    import kvplan

    print("\n| model (llama.cpp plans, one model) | plans / s | target |\n|---|---:|---:|")
    for name in ("llama-3.1-8b", "gemma-3-27b", "qwen3-next-80b-a3b", "deepseek-v3"):
        plan = kvplan.planner(kvplan.load_model(name))
        contexts = [1024 * i for i in range(1, 4001)]
        best = 0.0
        for _ in range(3):
            t = time.perf_counter()
            for c in contexts:
                plan(n_ctx=c)
            best = max(best, len(contexts) / (time.perf_counter() - t))
        print(f"| {name} | {best:,.0f} | ≥ 20,000 |")


if __name__ == "__main__":
    main()
