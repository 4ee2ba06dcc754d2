"""Simulation speed: kvplan's port of vLLM's scheduler against vLLM 0.33.0's own, on the same workload.

usage: python benchmarks/bench_simulate.py [--vllm-python PATH] [--sglang-python PATH] [--duration 600] [--rate 10]

1. `kvplan simulate` end to end in the library (Llama-3.1-8B on one H100, Poisson arrivals at --rate for
   --duration seconds, lognormal prompts, uniform outputs, 5 % cancels): wall time, engine steps per second;
   for vLLM — with its decode stretches and with every iteration stepped, the same answer (the ratio is what
   the stretches save) —, and for llama-server's slots (-c 32768 -np 16 -kvu).
2. With --vllm-python (a venv with vllm==0.33.0, scripts/engines/README.md): the same requests, arriving at the
   engine-loop iterations kvplan's run gave them, through vLLM's own scheduler and KV cache manager
   (scripts/engines/vllm_sched_case.py; its engine loop timed, vLLM's start-up not) and through kvplan's port
   (run_by_iteration), in the same run: the ratio is the comparison. Prints a Markdown table.
3. With --sglang-python (the SGLang venv of scripts/engines/README.md): the same for SGLang 0.5.23 — `kvplan
   simulate --engine sglang` end to end, then its requests by iteration through SGLang's own Scheduler
   (scripts/engines/sglang_sched_case.py, its event loop timed: SGLang's scheduling and pools, and the recorder's
   per-iteration record) and through kvplan's port, on a pool of --sglang-pool tokens (SGLang builds its KV
   buffers on the CPU for real: the H100's 415,620 tokens would not fit this machine's memory).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvplan.capacity.deployment import load_models, model_of  # noqa: E402
from kvplan.capacity.request import Origin, Raw  # noqa: E402
from kvplan.options.build import build_request  # noqa: E402
from kvplan.simulation.run import VllmSimulator, simulate  # noqa: E402
from kvplan.simulation.setup import prepare  # noqa: E402
from kvplan.simulation.vllm import SchedulerConfig, run_by_iteration  # noqa: E402
from kvplan.simulation.workload import Lengths, Workload  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vllm-python")
    ap.add_argument("--sglang-python")
    ap.add_argument("--sglang-pool", type=int, default=100_000)
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--rate", type=float, default=10)
    args = ap.parse_args()
    raw = {"engine": Raw("vllm", Origin("--engine")), "gpu": Raw("H100-80GB", Origin("--gpu"))}
    req = build_request("llama-3.1-8b", raw, need_hardware=True)
    req = load_models(req)
    p = prepare(model_of(req), req)
    w = Workload(
        prompt=Lengths("lognormal", 1000, 0.8),
        output=Lengths("uniform", 50, 500),
        rate=args.rate,
        duration=args.duration,
        cancel=0.05,
        seed=1,
    )
    t = time.perf_counter()
    result = p.run(w)
    wall = time.perf_counter() - t
    steps = result.series.steps
    print("| what | requests | engine steps | wall time | steps/s |\n|---|---:|---:|---:|---:|")
    print(
        f"| kvplan simulate --engine vllm, {args.duration:g} s at {args.rate:g} req/s | {result.stats.arrived:,} | "
        f"{steps:,} | {wall:.2f} s | {steps / wall:,.0f} |"
    )
    assert isinstance(p.simulator, VllmSimulator)
    t = time.perf_counter()
    stepped = simulate(p.simulator.config, p.cost, w, stretches=False)
    wall_stepped = time.perf_counter() - t
    print(
        f"| the same, every iteration stepped (no decode stretch) | {stepped.stats.arrived:,} | "
        f"{stepped.series.steps:,} | {wall_stepped:.2f} s | {stepped.series.steps / wall_stepped:,.0f} |"
    )
    raw_ll = {
        "gpu": Raw("H100-80GB", Origin("--gpu")),
        "ctx_size": Raw("32768", Origin("-c")),
        "parallel": Raw("16", Origin("-np")),
        "kv_unified": Raw(True, Origin("-kvu")),
    }
    req_ll = build_request("llama-3.1-8b", raw_ll, need_hardware=True)
    req_ll = load_models(req_ll)
    p_ll = prepare(model_of(req_ll), req_ll)
    t = time.perf_counter()
    r_ll = p_ll.run(w)
    wall_ll = time.perf_counter() - t
    print(
        f"| kvplan simulate (llama-server, -c 32768 -np 16 -kvu), the same workload | {r_ll.stats.arrived:,} | "
        f"{r_ll.series.steps:,} | {wall_ll:.2f} s | {r_ll.series.steps / wall_ll:,.0f} |"
    )
    if args.sglang_python:
        sglang(args, w)
    if not args.vllm_python:
        return
    # the same requests by engine-loop iteration: arrival at the step that started after them, no cancels
    if result.series.per_row != 1 or len(result.requests) < result.stats.arrived:
        raise SystemExit("the run is longer than its one-by-one series: shorten --duration for the comparison")
    starts = [s.start for s in result.series.finished_rows()]
    import bisect

    requests = [[bisect.bisect_left(starts, q.arrival), q.prompt, q.output, None] for q in result.requests]
    assert isinstance(p.simulator, VllmSimulator)
    c = p.simulator.config
    config = SchedulerConfig(c.num_blocks, c.block_size, c.max_model_len, c.max_num_batched_tokens, c.max_num_seqs)
    t = time.perf_counter()
    mine = run_by_iteration(config, [tuple(r) for r in requests])  # type: ignore[misc]
    port = time.perf_counter() - t
    sys.path.insert(0, str(ROOT / "scripts" / "engines"))
    from record_vllm import CONFIGS, gpu

    case = {
        "model": str(CONFIGS / "llama-3.1-8b"),
        "gpu": gpu("H100-80GB"),
        "kv_cache_memory_bytes": p.kv_bytes,
        "max_model_len": c.max_model_len,
        "requests": requests,
        "max_iters": 10**7,
    }
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(case, fh)
    out = subprocess.run(
        [args.vllm_python, str(ROOT / "scripts/engines/vllm_sched_case.py"), "@" + fh.name],
        capture_output=True,
        text=True,
        timeout=3600,
    ).stdout
    theirs = float(next(ln.split()[1] for ln in out.splitlines() if ln.startswith("VLLM_LOOP_SECONDS")))
    answer = json.loads(next(ln for ln in out.splitlines() if ln.startswith("VLLM_CASE_RESULT "))[17:])["ok"]
    same = len(answer["steps"]) == len(mine.steps)
    print(
        f"| vLLM 0.33.0's scheduler, the same requests by iteration | {len(requests):,} | "
        f"{len(answer['steps']):,} | {theirs:.2f} s | {len(answer['steps']) / theirs:,.0f} |"
    )
    print(
        f"| kvplan's port, the same | {len(requests):,} | {len(mine.steps):,} | {port:.2f} s | "
        f"{len(mine.steps) / port:,.0f} |"
    )
    print(f"\nkvplan's port takes {port / theirs:.2f}× vLLM's time on the same steps (same step count: {same})")


def sglang(args: argparse.Namespace, w: Workload) -> None:
    """SGLang's scheduler against kvplan's port, on the same requests by iteration (see the module's item 3)."""
    import bisect
    import tempfile

    from kvplan.simulation.sglang import scheduler as port

    raw = {"engine": Raw("sglang", Origin("--engine")), "gpu": Raw("H100-80GB", Origin("--gpu"))}
    req = load_models(build_request("llama-3.1-8b", raw, need_hardware=True))
    p = prepare(model_of(req), req)
    t = time.perf_counter()
    result = p.run(w)
    wall = time.perf_counter() - t
    steps = result.series.steps
    print(
        f"| kvplan simulate --engine sglang, the same workload | {result.stats.arrived:,} | {steps:,} | "
        f"{wall:.2f} s | {steps / wall:,.0f} |"
    )
    if result.series.per_row != 1 or len(result.requests) < result.stats.arrived:
        raise SystemExit("the run is longer than its one-by-one series: shorten --duration for the comparison")
    starts = [s.start for s in result.series.finished_rows()]
    requests = [[bisect.bisect_left(starts, q.arrival), q.prompt, q.output, None] for q in result.requests]
    sys.path.insert(0, str(ROOT / "scripts" / "engines"))
    from record_sglang import case
    from record_vllm import CONFIGS

    c = {**case("llama-3.1-8b", context_length=131072, max_total_tokens=args.sglang_pool), "requests": requests,
         "limit": 10**7, "model": str(CONFIGS / "llama-3.1-8b")}  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(c, fh)
    out = subprocess.run(
        [args.sglang_python, str(ROOT / "scripts/engines/sglang_sched_case.py"), "@" + fh.name],
        capture_output=True,
        text=True,
        timeout=3600,
    ).stdout
    theirs = float(next(ln.split()[1] for ln in out.splitlines() if ln.startswith("SGLANG_LOOP_SECONDS")))
    answer = json.loads(next(ln for ln in out.splitlines() if ln.startswith("SGLANG_CASE_RESULT "))[19:])["ok"]
    config = port.SchedulerConfig(answer["max_total_num_tokens"], answer["max_running_requests"],
                                  answer["max_prefill_tokens"], answer["chunked_prefill_size"], answer["context_len"],
                                  answer["page_size"])  # fmt: skip
    t = time.perf_counter()
    mine = port.run_by_iteration(config, [tuple(r) for r in requests])  # type: ignore[misc]
    ported = time.perf_counter() - t
    n = len(answer["steps"])
    print(f"| SGLang 0.5.23's scheduler, the same requests by iteration ({config.max_total_num_tokens:,}-token pool) "
          f"| {len(requests):,} | {n:,} | {theirs:.2f} s | {n / theirs:,.0f} |")  # fmt: skip
    print(
        f"| kvplan's port, the same | {len(requests):,} | {len(mine):,} | {ported:.2f} s | {len(mine) / ported:,.0f} |"
    )
    print(
        f"\nkvplan's port takes {ported / theirs:.2f}× SGLang's time on the same iterations "
        f"(same count: {len(mine) == n})"
    )


if __name__ == "__main__":
    main()
