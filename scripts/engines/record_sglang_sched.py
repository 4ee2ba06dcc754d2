"""Record SGLang 0.5.23's own scheduler over seeded workloads (tests/fixtures/engines/sglang_sched.json).

usage: python scripts/engines/record_sglang_sched.py SGLANG_PYTHON [--jobs 2] [--only SUBSTRING]
       [--random N | --swa N | --mamba N]

Each case runs sglang_sched_case.py in a process of its own: SGLang sizes and builds its pools (on the CPU,
``max_total_tokens`` keeping them small), builds its Scheduler and runs the workload through its event loop step
by step (see that file). The workloads are generated here from a seed and stored with the answer, so the test
replays exactly what SGLang saw. Never edit a recorded number by hand: change the case list here and re-run.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_sglang import SGLANG_VERSION, case
from record_vllm import CONFIGS, ROOT
from record_vllm_sched import HAND, workload

OUT = ROOT / "tests" / "fixtures" / "engines" / "sglang_sched.json"
SCRIPT = Path(__file__).with_name("sglang_sched_case.py")


#: SGLang's two event loops: event_loop_overlap (its default) and event_loop_normal
LOOPS: tuple[tuple[str, dict[str, Any]], ...] = (("overlap", {}), ("normal", {"disable_overlap_schedule": True}))


def sched(name: str, model: str, requests: list[list[Any]], **args: Any) -> dict[str, Any]:
    """A case: SGLang's sizing inputs as record_sglang.case gives them, the scheduler's flags, the workload."""
    return {"name": name, **case(model, **args), "requests": requests}


def cases() -> list[dict[str, Any]]:
    mixed = workload(1, 40, span=60, prompt=(50, 1500), output=(10, 400), cancel=0.1)
    burst = workload(2, 60, span=0, prompt=(20, 600), output=(50, 300))
    long_out = workload(3, 12, span=20, prompt=(100, 400), output=(600, 1200))
    long_prompts = workload(5, 20, span=40, prompt=(1500, 7000), output=(20, 300), cancel=0.05)
    shared = workload(4, 30, span=40, prompt=(320, 900), output=(20, 200), cancel=0.1)
    base = {"context_length": 8192, "chunked_prefill_size": 1024}
    out: list[dict[str, Any]] = []
    for loop, flags in LOOPS:
        out += [
            sched(
                f"llama-hand-{loop}",
                "llama-3.1-8b",
                HAND,
                max_total_tokens=3000,
                context_length=2048,
                chunked_prefill_size=512,
                **flags,
            ),
            sched(f"llama-mixed-{loop}", "llama-3.1-8b", mixed, max_total_tokens=6000, **base, **flags),
            sched(f"llama-burst-retract-{loop}", "llama-3.1-8b", burst, max_total_tokens=5000, **base, **flags),
            sched(
                f"llama-long-output-{loop}",
                "llama-3.1-8b",
                long_out,
                max_total_tokens=3000,
                context_length=2048,
                chunked_prefill_size=512,
                **flags,
            ),
            sched(
                f"llama-long-prompts-chunked-{loop}",
                "llama-3.1-8b",
                long_prompts,
                max_total_tokens=16000,
                context_length=8192,
                chunked_prefill_size=2048,
                **flags,
            ),
            sched(
                f"llama-shared-prefix-{loop}",
                "llama-3.1-8b",
                shared,
                max_total_tokens=5000,
                shared_prefix=300,
                **base,
                **flags,
            ),
            sched(
                f"llama-radix-off-{loop}",
                "llama-3.1-8b",
                mixed,
                max_total_tokens=6000,
                disable_radix_cache=True,
                **base,
                **flags,
            ),
        ]
    for loop, flags in LOOPS:
        # chunking off: a prompt prefills whole; max_prefill_tokens caps a batch, but not its first request
        out += [
            sched(
                f"llama-chunking-off-long-prompts-{loop}",
                "llama-3.1-8b",
                long_prompts,
                max_total_tokens=16000,
                context_length=8192,
                chunked_prefill_size=-1,
                max_prefill_tokens=4096,
                **flags,
            ),
            sched(
                f"llama-chunking-off-mixed-{loop}",
                "llama-3.1-8b",
                mixed,
                max_total_tokens=6000,
                context_length=8192,
                chunked_prefill_size=-1,
                **flags,
            ),
        ]
    out += [
        sched(
            "llama-chunking-off-shared-prefix",
            "llama-3.1-8b",
            shared,
            max_total_tokens=5000,
            context_length=8192,
            chunked_prefill_size=-1,
            max_prefill_tokens=2048,
            shared_prefix=300,
        ),
        sched("llama-max-running-4", "llama-3.1-8b", mixed, max_total_tokens=8000, max_running_requests=4, **base),
        sched(
            "llama-lpm-shared-prefix",
            "llama-3.1-8b",
            shared,
            max_total_tokens=5000,
            shared_prefix=300,
            schedule_policy="lpm",
            **base,
        ),
        sched(
            "llama-mixed-chunk",
            "llama-3.1-8b",
            mixed,
            max_total_tokens=6000,
            enable_mixed_chunk=True,
            disable_overlap_schedule=True,
            **base,
        ),
        *(
            sched(
                f"llama-closed-loop-12-{loop}",
                "llama-3.1-8b",
                workload(21, 60, span=0, prompt=(100, 2500), output=(20, 600)),
                max_total_tokens=6000,
                concurrency=12,
                **base,
                **flags,
            )
            for loop, flags in LOOPS
        ),
        sched("llama-page-16", "llama-3.1-8b", mixed, max_total_tokens=6000, page_size=16, **base),
        sched(
            "llama-page-16-shared-prefix",
            "llama-3.1-8b",
            shared,
            max_total_tokens=5000,
            page_size=16,
            shared_prefix=300,
            disable_overlap_schedule=True,
            **base,
        ),
        sched("deepseek-v2-lite-mla", "deepseek-v2-lite", mixed, max_total_tokens=6000, **base),
        sched("gpt-oss-20b-swa", "gpt-oss-20b", mixed, max_total_tokens=6000, **base),
        sched(
            "nemotron-h-mamba",
            "nemotron-h-8b",
            mixed,
            max_total_tokens=6000,
            max_running_requests=16,
            max_mamba_cache_size=40,
            **base,
        ),
        sched("llama-burst-ignore-eos", "llama-3.1-8b", burst, max_total_tokens=5000, ignore_eos=True, **base),
        sched(
            "llama-conservative", "llama-3.1-8b", burst, max_total_tokens=5000, schedule_conservativeness=0.3, **base
        ),
    ]
    return out


def run_case(python: str, c: dict[str, Any]) -> dict[str, Any]:
    arg = {**c, "model": str(CONFIGS / c["model"])}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(arg, f)
    proc = subprocess.run([python, str(SCRIPT), "@" + f.name], capture_output=True, text=True, timeout=1800)
    Path(f.name).unlink()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("SGLANG_CASE_RESULT ")]
    if not lines:
        raise RuntimeError(f"{c['name']}: no result\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("SGLANG_CASE_RESULT "))
    return result


RANDOM_OUT = OUT.with_name("sglang_sched_random.json")


def draw_flags(
    rng: random.Random,
    args: dict[str, Any],
    shared: int,
    *,
    radix_off: float,
    mixed: float,
    cap: float,
    ignore_eos: float,
) -> None:
    """A sweep case's scheduler flags, drawn in one order (each sweep's fixture depends on it): the radix cache off,
    the normal loop, LPM, mixed chunks, a running cap (not drawn when ``cap`` is 0), ignore_eos, the shared prefix,
    a closed loop."""
    if rng.random() < radix_off:
        args["disable_radix_cache"] = True
    if rng.random() < 0.4:
        args["disable_overlap_schedule"] = True
    if rng.random() < 0.25 and not args.get("disable_radix_cache"):
        args["schedule_policy"] = "lpm"
    if rng.random() < mixed:
        args["enable_mixed_chunk"] = True
    if cap and rng.random() < cap:
        args["max_running_requests"] = rng.randint(2, 24)
    if rng.random() < ignore_eos:
        args["ignore_eos"] = True
    if shared:
        args["shared_prefix"] = shared
    if rng.random() < 0.2:
        args["concurrency"] = rng.randint(2, 16)


def draw_pool(
    rng: random.Random,
    page: int,
    chunk: int,
    tokens_hi: int,
    conservativeness: tuple[float, ...],
    pool: Callable[[random.Random], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A sweep case's pool and prefill arguments, drawn in one order: the token pool (in pages), the prefill cap,
    the model's own pool arguments (``pool``), the conservativeness."""
    args: dict[str, Any] = {
        "max_total_tokens": rng.randint(2500, tokens_hi) // page * page,
        "context_length": 8192,
        "chunked_prefill_size": chunk,
        "max_prefill_tokens": rng.choice((16384, chunk * 2, 4096)),
        "page_size": page,
    }
    if pool is not None:
        args.update(pool(rng))
    args["schedule_conservativeness"] = rng.choice(conservativeness)
    return args


def draw_requests(rng: random.Random, seed: int, shared: int) -> list[list[Any]]:
    """A sweep case's requests: 20-45 of them over 0, 20 or 80 iterations, prompts longer than the shared prefix,
    cancels."""
    lo = max(20, shared + 1) if shared else 20
    return workload(
        seed, rng.randint(20, 45), span=rng.choice((0, 20, 80)),
        prompt=(lo, rng.choice((1500, 3000, 6000))), output=(1, rng.choice((100, 400, 900))),
        cancel=rng.choice((0.0, 0.0, 0.15)),
    )  # fmt: skip


def random_cases(n: int) -> list[dict[str, Any]]:
    """A sweep of the scheduler's settings, drawn from seeds: pool, chunk, page, radix cache, event loop, policy,
    conservativeness, mixed chunks, running cap, shared prefix, cancels, a closed loop, ignore_eos, MLA."""
    out = []
    for seed in range(n):
        rng = random.Random(1000 + seed)
        model = rng.choice(("llama-3.1-8b", "llama-3.1-8b", "deepseek-v2-lite"))
        page = rng.choice((1, 1, 16, 32))
        chunk = rng.choice((256, 512, 1024, 2048, 4096))
        shared = rng.choice((0, 0, rng.randint(50, 600)))
        args = draw_pool(rng, page, chunk, 12000, (1.0, 1.0, 0.3, 0.7, 1.5))
        draw_flags(rng, args, shared, radix_off=0.3, mixed=0.25, cap=0.3, ignore_eos=0.2)
        requests = draw_requests(rng, 2000 + seed, shared)
        out.append(sched(f"random-{seed:02d}-{model}", model, requests, **args))
    return out


SWA_OUT = OUT.with_name("sglang_sched_swa.json")


def swa_cases(n: int) -> list[dict[str, Any]]:
    """A sweep of a hybrid sliding-window model (gpt-oss-20b: a window of 128, 127 in SGLang; SGLang runs Gemma 2
    and 3 on one full pool) under the scheduler's settings, the SWA pool squeezed by --swa-full-tokens-ratio:
    shared prefixes the window can cut short, pages, the radix cache off, both loops, LPM, mixed chunks, caps,
    cancels, closed loops."""
    out = []
    for seed in range(n):
        rng = random.Random(3000 + seed)
        model = "gpt-oss-20b"
        page = rng.choice((1, 1, 16, 32))
        chunk = rng.choice((256, 512, 1024, 2048))
        shared = rng.choice((0, rng.randint(50, 600), rng.randint(50, 900)))
        args = draw_pool(rng, page, chunk, 9000, (1.0, 1.0, 0.3, 1.5),
                         lambda r: {"swa_full_tokens_ratio": r.choice((0.8, 0.8, 0.5, 0.3))})  # fmt: skip
        draw_flags(rng, args, shared, radix_off=0.2, mixed=0.25, cap=0.3, ignore_eos=0.15)
        requests = draw_requests(rng, 4000 + seed, shared)
        # SGLang can wait for ever here (a prompt whose window reservation the SWA pool never has room for, the pools
        # whole and idle): record that many iterations of it
        args["limit"] = 6000
        out.append(sched(f"swa-{seed:02d}-{model}", model, requests, **args))
    return out + chunking_off("swa", "gpt-oss-20b", {"swa_full_tokens_ratio": 0.8})


def chunking_off(kind: str, model: str, pool: dict[str, Any]) -> list[dict[str, Any]]:
    """A hybrid model with chunked prefill off (--chunked-prefill-size -1) in both event loops: whole prompts
    (a batch's first one past --max-prefill-tokens), a shared prefix, cancels."""
    requests = workload(7000, 30, span=40, prompt=(350, 5000), output=(20, 300), cancel=0.1)
    return [
        sched(
            f"{kind}-chunking-off-{loop}-{model}",
            model,
            requests,
            max_total_tokens=9000,
            context_length=8192,
            chunked_prefill_size=-1,
            max_prefill_tokens=4096,
            page_size=1,
            shared_prefix=300,
            limit=6000,
            **pool,
            **flags,
        )
        for loop, flags in LOOPS
    ]


MAMBA_OUT = OUT.with_name("sglang_sched_mamba.json")


def mamba_cases(n: int) -> list[dict[str, Any]]:
    """A sweep of Mamba hybrids (Nemotron-H's and Falcon-H1's Mamba-2 mixers, Qwen3-Next's gated delta-net): the
    state pool (--max-mamba-cache-size) against the running cap, SGLang's extra buffer (a state slot and two
    ping-pong checkpoint slots a request), chunks on and off the checkpoint grid, pages, shared prefixes whose states
    are copied, the radix cache off, both loops, LPM, mixed chunks, cancels, closed loops, ignore_eos."""
    out = []
    for seed in range(n):
        rng = random.Random(5000 + seed)
        model = rng.choice(("nemotron-h-8b", "nemotron-h-8b", "falcon-h1-7b", "qwen3-next-80b-a3b"))
        page = rng.choice((1, 1, 1, 16, 64))
        chunk = rng.choice((256, 512, 1000, 1024, 2048))
        shared = rng.choice((0, rng.randint(50, 600), rng.randint(100, 900)))
        args = draw_pool(rng, page, chunk, 9000, (1.0, 1.0, 0.3, 1.5),
                         lambda r: {"max_running_requests": r.choice((4, 8, 16, 32)),
                                    "max_mamba_cache_size": r.randint(12, 100)})  # fmt: skip
        draw_flags(rng, args, shared, radix_off=0.2, mixed=0.2, cap=0.0, ignore_eos=0.15)
        requests = draw_requests(rng, 6000 + seed, shared)
        args["limit"] = 6000
        c = sched(f"mamba-{seed:02d}-{model}", model, requests, **args)
        if model == "qwen3-next-80b-a3b":  # its weights fill an H100; the pools are --max-total-tokens' here anyway
            c["weight_bytes"] = 16 << 30
            c["available_bytes"] = c["pre_bytes"] - c["weight_bytes"]
        out.append(c)
    return out + chunking_off("mamba", "nemotron-h-8b", {"max_running_requests": 8, "max_mamba_cache_size": 40})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("python", help="the Python of a venv with sglang==0.5.23")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="record only the cases whose name contains this")
    ap.add_argument("--random", type=int, default=0, help=f"record a sweep of N drawn cases into {RANDOM_OUT.name}")
    ap.add_argument("--swa", type=int, default=0, help=f"record a sweep of N sliding-window cases into {SWA_OUT.name}")
    ap.add_argument(
        "--mamba", type=int, default=0, help=f"record a sweep of N Mamba-hybrid cases into {MAMBA_OUT.name}"
    )
    args = ap.parse_args()
    global OUT
    drawn = cases()
    if args.random:
        OUT, drawn = RANDOM_OUT, random_cases(args.random)
    elif args.swa:
        OUT, drawn = SWA_OUT, swa_cases(args.swa)
    elif args.mamba:
        OUT, drawn = MAMBA_OUT, mamba_cases(args.mamba)
    todo = [c for c in drawn if args.only in c["name"]]
    old = json.loads(OUT.read_text())["cases"] if OUT.exists() and args.only else []
    done = [d for d in old if args.only not in d["case"]["name"]]
    start = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        for c, result in zip(todo, pool.map(lambda c: run_case(args.python, c), todo), strict=True):
            done.append({"case": c, **result})
            status = f"{len(result['ok']['steps'])} steps" if "ok" in result else f"error: {result['error']}"
            print(f"{c['name']}: {status}", flush=True)
    OUT.write_text(json.dumps({"sglang": SGLANG_VERSION, "cases": done}, separators=(",", ":")) + "\n")
    print(f"{len(done)} cases in {time.time() - start:.0f} s -> {OUT}")


if __name__ == "__main__":
    main()
