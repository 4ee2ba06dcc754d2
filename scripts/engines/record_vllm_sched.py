"""Record vLLM 0.33.0's own scheduler over seeded workloads (tests/fixtures/engines/vllm_sched.json).

usage: python scripts/engines/record_vllm_sched.py VLLM_PYTHON [--jobs 2] [--only SUBSTRING]

Each case runs vllm_sched_case.py in a process of its own: vLLM builds its config, KV cache config and scheduler
as EngineCore does and runs the workload step by step (see that file). The workloads are generated here from a
seed and stored with the answer, so the test replays exactly what vLLM saw. Never edit a recorded number by
hand: change the case list here and re-run.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_vllm import ROOT, VLLM_VERSION, gpu, run_case

OUT = ROOT / "tests" / "fixtures" / "engines" / "vllm_sched.json"
MIB = 2**20


def workload(
    seed: int,
    n: int,
    *,
    span: int,
    prompt: tuple[int, int],
    output: tuple[int, int],
    cancel: float = 0.0,
) -> list[list[Any]]:
    """``n`` requests arriving over ``span`` iterations: [arrive, prompt, output, cancel-iteration | None]."""
    rng = random.Random(seed)
    out: list[list[Any]] = []
    for _ in range(n):
        arrive = rng.randrange(span) if span else 0
        cut = arrive + rng.randrange(1, 200) if rng.random() < cancel else None
        out.append([arrive, rng.randint(*prompt), rng.randint(*output), cut])
    return sorted(out, key=lambda r: r[0])


#: vLLM's scheduling, async (its default) and sync: each recorded both ways where the step order differs
SCHEDULING: tuple[tuple[str, dict[str, Any]], ...] = (("async", {}), ("sync", {"async_scheduling": False}))
#: the Mamba / linear-attention hybrids with prefill checkpoints, and the KV budget (MiB) each workload is given
STATE_MODELS = (("qwen3-next-80b-a3b", 1200), ("nemotron-h-8b", 1200), ("falcon-h1-7b", 2000))


#: a hand-made workload (both recorders run it): requests that chunk, arrive mid-run, and one cancel
HAND: list[list[Any]] = [
    [0, 300, 200, None],
    [0, 500, 100, None],
    [1, 1000, 300, None],
    [3, 200, 50, 6],
    [4, 1500, 40, None],
    [5, 100, 80, None],
    [9, 700, 60, None],
]


def cases() -> list[dict[str, Any]]:
    h100 = gpu("H100-80GB")
    llama = {"model": "llama-3.1-8b", "gpu": h100}  # 128 KiB per token: a 16-token block is 2 MiB
    mixed = workload(1, 40, span=60, prompt=(50, 1500), output=(10, 400), cancel=0.1)
    burst = workload(2, 60, span=0, prompt=(20, 600), output=(50, 300))
    long_out = workload(3, 12, span=20, prompt=(100, 400), output=(600, 1200))
    out = [
        {
            "name": "llama-hand",
            **llama,
            "kv_cache_memory_bytes": 160 * 2 * MIB,
            "max_model_len": 2048,
            "max_num_batched_tokens": 512,
            "requests": HAND,
        }
    ]
    for sched in ("async", "sync"):
        flags = {} if sched == "async" else {"async_scheduling": False}
        for caching in (True, False):
            tag = f"{sched}-{'apc' if caching else 'noapc'}"
            out.append(
                {
                    "name": f"llama-mixed-{tag}",
                    **llama,
                    **flags,
                    "enable_prefix_caching": caching,
                    "kv_cache_memory_bytes": 200 * 2 * MIB,
                    "max_model_len": 2048,
                    "max_num_batched_tokens": 1024,
                    "requests": mixed,
                }
            )
        out.append(
            {
                "name": f"llama-burst-{sched}",
                **llama,
                **flags,
                "kv_cache_memory_bytes": 300 * 2 * MIB,
                "max_model_len": 2048,
                "max_num_batched_tokens": 2048,
                "requests": burst,
            }
        )
        out.append(
            {
                "name": f"llama-shared-prefix-{sched}",
                **llama,
                **flags,
                "kv_cache_memory_bytes": 200 * 2 * MIB,
                "max_model_len": 2048,
                "max_num_batched_tokens": 1024,
                "shared_prefix": 300,
                "requests": workload(4, 30, span=40, prompt=(320, 900), output=(20, 200), cancel=0.1),
            }
        )
        out.append(
            {
                "name": f"llama-context-cap-{sched}",
                **llama,
                **flags,
                "kv_cache_memory_bytes": 100 * 2 * MIB,
                "max_model_len": 1024,
                "max_num_batched_tokens": 512,
                "requests": long_out,
            }
        )
    out += [
        {
            "name": "llama-max-num-seqs-4",
            **llama,
            "kv_cache_memory_bytes": 400 * 2 * MIB,
            "max_model_len": 2048,
            "max_num_seqs": 4,
            "max_num_batched_tokens": 1024,
            "requests": mixed,
        },
        {
            "name": "llama-block-32",
            **llama,
            "block_size": 32,
            "kv_cache_memory_bytes": 100 * 4 * MIB,
            "max_model_len": 2048,
            "max_num_batched_tokens": 1024,
            "requests": mixed,
        },
        {
            "name": "llama-defaults",
            **llama,
            "kv_cache_memory_bytes": 1024 * 2 * MIB,
            "max_model_len": 8192,
            "requests": workload(5, 50, span=100, prompt=(500, 6000), output=(50, 500), cancel=0.05),
        },
        {
            "name": "qwen3-32b-mixed",
            "model": "qwen3-32b",
            "gpu": h100,
            "kv_cache_memory_bytes": 320 * 4 * MIB,
            "max_model_len": 4096,
            "max_num_batched_tokens": 2048,
            "requests": workload(6, 40, span=50, prompt=(100, 3000), output=(20, 600), cancel=0.1),
        },
        *(
            {
                "name": f"gpt-oss-20b-swa-noapc-{sched}",
                "model": "gpt-oss-20b",
                "gpu": h100,
                "enable_prefix_caching": False,
                **flags,
                "kv_cache_memory_bytes": 200 * 2**20,
                "max_model_len": 4096,
                "max_num_batched_tokens": 1024,
                "requests": workload(7, 40, span=50, prompt=(50, 3000), output=(10, 800), cancel=0.1),
            }
            for sched, flags in SCHEDULING
        ),
        *(
            {
                "name": f"gpt-oss-20b-swa-apc-{sched}",
                "model": "gpt-oss-20b",
                "gpu": h100,
                **flags,
                "kv_cache_memory_bytes": 200 * 2**20,
                "max_model_len": 4096,
                "max_num_batched_tokens": 1024,
                "shared_prefix": 320,
                "requests": workload(11, 40, span=50, prompt=(330, 3000), output=(10, 800), cancel=0.1),
            }
            for sched, flags in SCHEDULING
        ),
        {
            "name": "gpt-oss-20b-swa-apc-burst",
            "model": "gpt-oss-20b",
            "gpu": h100,
            "kv_cache_memory_bytes": 220 * 2**20,
            "max_model_len": 4096,
            "max_num_batched_tokens": 2048,
            "shared_prefix": 200,
            "requests": workload(12, 50, span=0, prompt=(210, 2500), output=(100, 1200), cancel=0.1),
        },
        {
            "name": "gemma-3-1b-swa-apc",
            "model": "gemma-3-1b",
            "gpu": h100,
            "kv_cache_memory_bytes": 192 * 2**20,
            "max_model_len": 8192,
            "max_num_batched_tokens": 2048,
            "shared_prefix": 1100,
            "requests": workload(13, 40, span=30, prompt=(1200, 6000), output=(10, 1500), cancel=0.1),
        },
        {
            "name": "gemma-3-1b-swa-noapc",
            "model": "gemma-3-1b",
            "gpu": h100,
            "enable_prefix_caching": False,
            "kv_cache_memory_bytes": 192 * 2**20,
            "max_model_len": 8192,
            "max_num_batched_tokens": 2048,
            "requests": workload(8, 40, span=40, prompt=(100, 6000), output=(10, 1500), cancel=0.1),
        },
        *(
            {
                "name": f"{model}-state-noapc",
                "model": model,
                "gpu": h100,
                "enable_prefix_caching": False,
                "kv_cache_memory_bytes": budget * 2**20,
                "max_model_len": 8192,
                "max_num_batched_tokens": 2048,
                "requests": workload(9, 40, span=40, prompt=(100, 6000), output=(10, 1500), cancel=0.1),
            }
            for model, budget in STATE_MODELS
        ),
        # prefix caching on: vLLM's Mamba "align" mode (block-aligned prefill chunks, state blocks per block)
        *(
            {
                "name": f"{model}-state-apc-{sched}",
                "model": model,
                "gpu": h100,
                **flags,
                "kv_cache_memory_bytes": budget * 2**20,
                "max_model_len": 8192,
                "max_num_batched_tokens": 2048,
                "requests": workload(14, 40, span=40, prompt=(100, 6000), output=(10, 1500), cancel=0.1),
            }
            for model, budget in STATE_MODELS
            for sched, flags in SCHEDULING
        ),
        *(  # mixers without prefill checkpoint blocks: Mamba-1, short conv, KDA
            {
                "name": f"{model}-state-apc",
                "model": model,
                "gpu": h100,
                "kv_cache_memory_bytes": budget * 2**20,
                "max_model_len": 8192,
                "max_num_batched_tokens": 2048,
                "requests": workload(16, 40, span=40, prompt=(100, 6000), output=(10, 1500), cancel=0.1),
            }
            for model, budget in (("jamba-1.5-mini", 2000), ("lfm2-1.2b", 600), ("kimi-linear-48b-a3b", 1500))
        ),
        *(
            {
                "name": f"{model}-state-apc-shared-prefix",
                "model": model,
                "gpu": h100,
                "kv_cache_memory_bytes": budget * 2**20,
                "max_model_len": 8192,
                "max_num_batched_tokens": 2048,
                "shared_prefix": 1500,
                "requests": workload(15, 40, span=40, prompt=(1600, 6000), output=(10, 1000), cancel=0.1),
            }
            for model, budget in (("qwen3-next-80b-a3b", 1200), ("falcon-h1-7b", 2000))
        ),
        *(
            {
                "name": f"llama-4-scout-text-chunked-{tag}",
                "model": "llama-4-scout-text",
                "gpu": h100,
                "enable_prefix_caching": caching,
                "kv_cache_memory_bytes": 4000 * 2**20,
                "max_model_len": 16384,
                "max_num_batched_tokens": 2048,
                "requests": workload(10, 40, span=40, prompt=(100, 12000), output=(10, 1500), cancel=0.1),
            }
            for tag, caching in (("noapc", False), ("apc", True))
        ),
        {  # MLA with the sparse-attention indexer (its K cache rides in the same blocks)
            "name": "deepseek-v3.2-exp-mla-indexer",
            "model": "deepseek-v3.2-exp",
            "gpu": h100,
            "kv_cache_memory_bytes": 1024 * MIB,
            "max_model_len": 4096,
            "max_num_batched_tokens": 1024,
            "requests": workload(17, 40, span=50, prompt=(50, 3000), output=(10, 800), cancel=0.1),
        },
        {
            "name": "deepseek-v2-lite-mla",
            "model": "deepseek-v2-lite",
            "gpu": h100,
            "kv_cache_memory_bytes": 64 * MIB,
            "max_model_len": 2048,
            "max_num_batched_tokens": 1024,
            "requests": mixed,
        },
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("python", help="the Python of a venv with vllm==0.33.0")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    todo = [c for c in cases() if args.only in c["name"]]
    script = Path(__file__).with_name("vllm_sched_case.py")
    start = time.time()
    done: list[dict[str, Any]] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for case, result in zip(todo, pool.map(lambda c: run_case(args.python, c, script), todo), strict=True):
            done.append({"case": case, **result})
            ok = result.get("ok")
            status = f"{len(ok['steps'])} steps" if ok else f"refused: {result['error']['message'][:100]}"
            print(f"[{time.time() - start:.0f}s] {case['name']}: {status}", flush=True)
    if args.only and OUT.exists():
        done = [c for c in json.loads(OUT.read_text())["cases"] if args.only not in c["case"]["name"]] + done
    OUT.write_text(
        '{"vllm": "'
        + VLLM_VERSION
        + '", "cases": [\n'
        + ",\n".join(json.dumps(c, separators=(",", ":")) for c in sorted(done, key=lambda c: c["case"]["name"]))
        + "\n]}\n"
    )
    print(f"wrote {len(done)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
