"""The README's recipe that turns a `vllm bench serve --save-result --save-detailed` result into a trace runs as
written: on a result file with the keys vLLM 0.33.0's benchmark writes (vllm/benchmarks/serve.py: start_times,
input_lens, output_lens, errors), it keeps the requests that succeeded with output, their send times from the
first, and `kvplan simulate --trace` serves them."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from helpers import kv

from kvplan.simulation.workload import load_trace

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "fixtures" / "vllm_bench" / "bench.json"


def _recipe() -> list[str]:
    """The README's command lines under <!-- bench-to-trace -->."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- bench-to-trace -->", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines()]


def test_the_readme_recipe_turns_a_vllm_benchmark_into_a_trace(tmp_path: Path) -> None:
    convert, simulate = _recipe()
    command, _, target = convert.rpartition(" > ")
    argv = shlex.split(command)
    assert argv[0] == "python3" and argv[-1] == "bench.json" and target == "trace.jsonl"
    out = subprocess.run([sys.executable, *argv[1:-1], str(BENCH)], capture_output=True, text=True, check=True)
    trace = tmp_path / "trace.jsonl"
    trace.write_text(out.stdout)
    rows = load_trace(str(trace))
    # the failed request (HTTP 400) and the one with no output are left out; times from the first send
    assert [(r.arrival, r.prompt, r.output) for r in rows] == [(0.0, 512, 128), (0.25, 640, 256), (0.875, 968, 316)]
    sim = shlex.split(simulate)
    assert sim[:2] == ["kvplan", "simulate"] and sim[sim.index("--trace") + 1] == "trace.jsonl"
    sim[sim.index("--trace") + 1] = str(trace)
    doc = kv(*sim[1:], "-o", "json").json()
    assert [r["tokens"] for r in doc["requests"]] == [128, 256, 316]
