"""Start-up and sweep speed, each next to a reference measured in the same run.

usage: python benchmarks/bench_speed.py [--runs 11]

- Start-up: `kvplan estimate llama-3.1-8b -o json`, the table, `kvplan --help`, `kvplan models`, each as a whole
  process (median of --runs), next to the interpreter's own start-up (`python -c pass`) in the same run. Run it
  with compiled bytecode (an installed package has it; in a checkout, `python -m compileall kvplan` first and
  leave PYTHONDONTWRITEBYTECODE unset), or every run recompiles.
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


def wall(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    py = sys.executable
    kv = [py, "-m", "kvplan"]
    reference = wall([py, "-c", "pass"], args.runs)
    rows = [
        ("`kvplan estimate llama-3.1-8b -o json`", [*kv, "estimate", "llama-3.1-8b", "-o", "json"], 0.12),
        ("`kvplan estimate llama-3.1-8b` (table)", [*kv, "estimate", "llama-3.1-8b"], 0.18),
        ("`kvplan --help`", [*kv, "--help"], 0.10),
        ("`kvplan models`", [*kv, "models"], 0.25),
    ]
    print(f"| command | time | target | interpreter start-up alone ({reference * 1000:.0f} ms) |")
    print("|---|---:|---:|---:|")
    for label, cmd, target in rows:
        t = wall(cmd, args.runs)
        print(f"| {label} | {t * 1000:.0f} ms | ≤ {target * 1000:.0f} ms | {t / reference:.1f}× |")

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
