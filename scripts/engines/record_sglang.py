"""Record what SGLang 0.5.23's own pool sizing answers into test fixtures (tests/fixtures/engines/sglang.json).

usage: python scripts/engines/record_sglang.py SGLANG_PYTHON [--jobs 2] [--only SUBSTRING] [--new]

SGLANG_PYTHON is the interpreter of a venv with sglang==0.5.23 (scripts/engines/README.md). Each case runs
sglang_case.py in a process of its own against a config in tests/fixtures/engines/configs/, as on the GPU named
(facts from kvplan's GPU table). SGLang measures free memory; the case gives it: before the weights load, the
GPU's memory less the CUDA context kvplan assumes, and after, that less the rank's weights. Never edit a
recorded number by hand: change the case list here and re-run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_vllm import CONFIGS, GPUS, gpu, model_len  # noqa: E402

from kvplan.runtimes.engines.sglang import CUDA_CONTEXT_BYTES  # noqa: E402
from kvplan.units import GIB  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "engines" / "sglang.json"
SGLANG_VERSION = "0.5.23"
DENSE = ["llama-3.1-8b", "qwen3-32b", "mistral-7b-v0.1", "qwen2.5-7b", "phi-3-mini-4k"]
WINDOWED = ["gemma-2-9b", "gemma-3-1b", "gemma-3-27b", "gpt-oss-20b", "llama-4-scout"]
MLA = ["deepseek-v2-lite", "deepseek-v3", "deepseek-v3.2-exp"]
HYBRID = ["qwen3-next-80b-a3b", "nemotron-h-8b", "nemotron-nano-9b-v2", "granite-4.0-h-small", "falcon-h1-7b",
          "lfm2-1.2b", "kimi-linear-48b-a3b", "jamba-1.5-mini", "falcon-mamba-7b", "mamba-codestral-7b",
          "minimax-m1"]  # fmt: skip
#: weights per rank for each case: a round figure per model (SGLang's numbers depend only on what is left)
WEIGHTS_GIB = {"llama-3.1-8b": 15, "qwen3-32b": 61, "mistral-7b-v0.1": 14, "qwen2.5-7b": 15, "phi-3-mini-4k": 7,
               "gemma-2-9b": 18, "gemma-3-1b": 2, "gemma-3-27b": 52, "gpt-oss-20b": 13, "llama-4-scout": 203,
               "deepseek-v2-lite": 30, "deepseek-v3": 642, "deepseek-v3.2-exp": 642, "qwen3-next-80b-a3b": 149,
               "nemotron-h-8b": 15, "nemotron-nano-9b-v2": 17, "granite-4.0-h-small": 60, "falcon-h1-7b": 14,
               "lfm2-1.2b": 2, "kimi-linear-48b-a3b": 92, "jamba-1.5-mini": 97, "minimax-m1": 850,
               "falcon-mamba-7b": 14, "mamba-codestral-7b": 14}  # fmt: skip


def case(model: str, gpu_name: str = "H100-80GB", **args: Any) -> dict[str, Any]:
    if (args.get("context_length") or 0) > (model_len(model) or 1 << 30):
        args["context_length"] = None  # a shorter model: its own length (longer is an error in SGLang too)
    g = gpu(gpu_name)
    ranks = args.get("tp_size", 1)
    pre = g["mem"] - CUDA_CONTEXT_BYTES
    weights = WEIGHTS_GIB[model] * GIB // ranks
    return {"model": model, "gpu": g, "pre_bytes": pre, "available_bytes": pre - weights, "weight_bytes": weights,
            **args}  # fmt: skip


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    small = {"llama-3.1-8b", "mistral-7b-v0.1", "qwen2.5-7b", "phi-3-mini-4k", "gemma-2-9b", "gemma-3-1b",
             "gpt-oss-20b", "nemotron-h-8b", "nemotron-nano-9b-v2", "falcon-h1-7b", "lfm2-1.2b", "falcon-mamba-7b",
             "mamba-codestral-7b"}  # fmt: skip
    for model in DENSE + WINDOWED + MLA + HYBRID:
        tp = 1 if model in small else 8
        for g in GPUS:
            if tp == 8 and g in ("RTX-4090", "L40S"):
                continue
            out.append(case(model, g, tp_size=tp))
    for model in DENSE + WINDOWED + ["deepseek-v2-lite"] + HYBRID[:-1]:
        tp = 1 if model in small else 8
        out.append(case(model, "H200", tp_size=tp, kv_cache_dtype="fp8_e4m3"))
        out.append(case(model, "H100-80GB", tp_size=tp, mem_fraction_static=0.8))
        out.append(case(model, "H100-80GB", tp_size=max(tp, 2), context_length=32768, max_running_requests=64))
    for model in ["llama-3.1-8b", "qwen2.5-7b", "gemma-3-27b", "gpt-oss-20b", "nemotron-h-8b", "qwen3-next-80b-a3b"]:
        for tp in (2, 4):
            out.append(case(model, "H100-80GB", tp_size=tp))
        out.append(case(model, "H100-80GB", tp_size=2, page_size=16))
    for model in HYBRID[:-1]:
        out.append(case(model, "H100-80GB", tp_size=1 if model in small else 8, disable_radix_cache=True))
    # --max-total-tokens: the pool capped (in pages; an SWA pool from the capped full one; a Mamba state pool as
    # before), and a cap above what the memory holds, which SGLang ignores
    for model, cap in (("llama-3.1-8b", 100_001), ("gpt-oss-20b", 50_001), ("nemotron-h-8b", 30_001)):
        out.append(case(model, "H100-80GB", tp_size=1, max_total_tokens=cap))
        out.append(case(model, "H100-80GB", tp_size=1, page_size=16, max_total_tokens=cap))
    out.append(case("llama-3.1-8b", "H100-80GB", tp_size=1, max_total_tokens=10**9))
    # --swa-full-tokens-ratio: the SWA pool's share of a hybrid's token budget
    for ratio in (0.5, 0.3):
        out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, swa_full_tokens_ratio=ratio))
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, page_size=16, swa_full_tokens_ratio=0.5))
    return out + request_capped_cases(small)


def request_capped_cases(small: set[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # the radix cache off with --max-running-requests: a hybrid SWA model's SWA pool sized from the requests'
    # worst case (SWARequestCapPoolConfigurator), a Mamba hybrid's state pool from the requests
    for model, tp in (("gpt-oss-20b", 1), ("gemma-3-27b", 8), ("llama-4-scout", 8)):
        for mrr, page in ((64, None), (8, 16), (256, 32)):
            paged = {"page_size": page} if page else {}
            out.append(case(model, "H100-80GB", tp_size=tp, disable_radix_cache=True, max_running_requests=mrr,
                            **paged))  # fmt: skip
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, disable_radix_cache=True, max_running_requests=64,
                    max_total_tokens=40_001))  # fmt: skip
    out.append(case("gpt-oss-20b", "RTX-4090", tp_size=1, disable_radix_cache=True, max_running_requests=2048))
    for model in ("nemotron-h-8b", "qwen3-next-80b-a3b", "falcon-h1-7b"):
        tp = 1 if model in small else 8
        out.append(case(model, "H100-80GB", tp_size=tp, disable_radix_cache=True, max_running_requests=32))
        # --max-mamba-cache-size: the state pool as given, max_running_requests capped by it
        out.append(case(model, "H100-80GB", tp_size=tp, max_mamba_cache_size=100))
        out.append(case(model, "H100-80GB", tp_size=tp, max_mamba_cache_size=20, max_running_requests=64))
    out.append(case("nemotron-h-8b", "H100-80GB", tp_size=1, max_mamba_cache_size=2))
    # --chunked-prefill-size: SGLang's activation reserve and prefill CUDA graphs (mem_fraction_static) follow
    # it, and the request-capped SWA pool holds its chunks (one with --disable-overlap-schedule); a small
    # --max-total-tokens caps the prefill graphs' batch sizes
    for model, chunk in (("llama-3.1-8b", 4096), ("llama-3.1-8b", 16384), ("deepseek-v2-lite", 2048)):
        tp = 1 if model in small else 8
        out.append(case(model, "H100-80GB", tp_size=tp, chunked_prefill_size=chunk))
    out.append(case("qwen2.5-7b", "RTX-4090", tp_size=1, chunked_prefill_size=8192))
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, disable_radix_cache=True, max_running_requests=64,
                    chunked_prefill_size=4096))  # fmt: skip
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, disable_radix_cache=True, max_running_requests=64,
                    disable_overlap_schedule=True))  # fmt: skip
    out.append(case("llama-3.1-8b", "H100-80GB", tp_size=1, max_total_tokens=3000))
    # chunked prefill off (-1): the activation reserve from --max-prefill-tokens, no prefill graphs, no SWA cap
    for model in ("llama-3.1-8b", "deepseek-v2-lite"):
        out.append(case(model, "H100-80GB", tp_size=1 if model in small else 8, chunked_prefill_size=-1))
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, disable_radix_cache=True, max_running_requests=64,
                    chunked_prefill_size=-1))  # fmt: skip
    # --max-prefill-tokens: the activation reserve with chunking off (its max with 2,048); with chunks, nothing
    for tokens in (32768, 4096, 1024):
        out.append(case("llama-3.1-8b", "H100-80GB", tp_size=1, chunked_prefill_size=-1, max_prefill_tokens=tokens))
    out.append(case("deepseek-v2-lite", "H100-80GB", tp_size=1, chunked_prefill_size=-1, max_prefill_tokens=65536))
    out.append(case("llama-3.1-8b", "RTX-4090", tp_size=1, chunked_prefill_size=-1, max_prefill_tokens=8192))
    out.append(case("llama-3.1-8b", "H100-80GB", tp_size=1, max_prefill_tokens=32768))
    # an SWA pool too small for one request: SGLang refuses (validate_swa_pool_size)
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, max_total_tokens=150))
    out.append(case("gpt-oss-20b", "H100-80GB", tp_size=1, page_size=16, swa_full_tokens_ratio=0.00005))
    return out


def run_case(python: str, case: dict[str, Any]) -> dict[str, Any]:
    arg = {**case, "model": str(CONFIGS / case["model"])}
    for attempt in range(3):  # vLLM's model inspection occasionally races with a parallel case; try again
        proc = subprocess.run([python, str(Path(__file__).with_name("sglang_case.py")), json.dumps(arg)],
                              capture_output=True, text=True, timeout=900)  # fmt: skip
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("SGLANG_CASE_RESULT ")]
        if not lines:
            raise RuntimeError(f"{case}: no result\n{proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(lines[-1].removeprefix("SGLANG_CASE_RESULT "))
        if "failed to be inspected" not in json.dumps(result) or attempt == 2:
            return result
        time.sleep(1)
    raise AssertionError("unreachable")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("python", help="the Python of a venv with sglang==0.5.23")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="record only the models whose name contains this")
    ap.add_argument("--new", action="store_true", help="record only the cases the fixture does not hold yet")
    args = ap.parse_args()
    todo = [c for c in cases() if args.only in c["model"]]
    recorded = json.loads(OUT.read_text())["cases"] if OUT.exists() else []
    if args.new:
        held = [r["case"] for r in recorded]
        todo = [c for c in todo if c not in held]
    done: list[dict[str, Any]] = []
    start = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        for i, (case, result) in enumerate(
            zip(todo, pool.map(lambda c: run_case(args.python, c), todo), strict=True), 1
        ):
            done.append({"case": case, **result})
            status = "ok" if "ok" in result else f"refused: {result['error']['message'][:80]}"
            where = f"{case['model']} {case['gpu']['preset']} tp{case.get('tp_size', 1)}"
            print(f"[{i}/{len(todo)} {time.time() - start:.0f}s] {where} {status}", flush=True)
    if args.new:  # the fixture's cases as they were, then the new ones
        done = recorded + done
    elif args.only:  # keep the other models' cases
        done = [c for c in recorded if args.only not in c["case"]["model"]] + done
    OUT.write_text(json.dumps({"sglang": SGLANG_VERSION, "cases": done}, indent=1) + "\n")
    print(f"wrote {len(done)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
