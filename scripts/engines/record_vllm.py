"""Record what vLLM 0.33.0's own planning code answers into test fixtures (tests/fixtures/engines/vllm.json).

usage: python scripts/engines/record_vllm.py VLLM_PYTHON [--jobs 2] [--only SUBSTRING]

VLLM_PYTHON is the interpreter of a venv with vllm==0.33.0 (scripts/engines/README.md says how to make one; it
is never a dependency of kvplan or of CI). Each case runs vllm_case.py in a process of its own against a config in
tests/fixtures/engines/configs/, as on the GPU named (the GPU facts come from kvplan's own GPU table, so a test
can name the same preset). Never edit a recorded number by hand: change the case list here and re-run.
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

from kvplan.capacity.hardware import gpu_table  # noqa: E402
from kvplan.units import MIB  # noqa: E402

CONFIGS = ROOT / "tests" / "fixtures" / "engines" / "configs"
OUT = ROOT / "tests" / "fixtures" / "engines" / "vllm.json"
VLLM_VERSION = "0.33.0"

#: the device name CUDA reports for each preset (vLLM reads it: "a100" keeps the small batch defaults)
CUDA_NAMES = {
    "A100-80GB": "NVIDIA A100-SXM4-80GB",
    "L40S": "NVIDIA L40S",
    "RTX-4090": "NVIDIA GeForce RTX 4090",
    "H100-80GB": "NVIDIA H100 80GB HBM3",
    "H200": "NVIDIA H200",
    "B200": "NVIDIA B200",
}
GPUS = tuple(CUDA_NAMES)


def gpu(name: str) -> dict[str, Any]:
    g = gpu_table()[name.replace("-", "").upper()]
    assert g.capability is not None
    return {"preset": g.name, "name": CUDA_NAMES[name], "mem": g.memory_bytes, "cap": list(g.capability)}


def budget(name: str, share: float = 0.45) -> int:
    """A KV budget per GPU: a share of its memory, whole MiB."""
    return int(gpu_table()[name.replace("-", "").upper()].memory_bytes * share) // MIB * MIB


DENSE = ["llama-3.1-8b", "qwen3-32b", "mistral-7b-v0.1", "phi-3-mini-4k", "qwen2.5-7b"]
WINDOWED = ["gemma-2-9b", "gemma-3-1b", "gemma-3-4b", "gemma-3-27b", "gpt-oss-20b"]
MLA = ["deepseek-v2-lite"]
HYBRID = [
    "qwen3-next-80b-a3b",
    "nemotron-h-8b",
    "nemotron-nano-9b-v2",
    "granite-4.0-h-small",
    "granite-4.0-h-tiny",
    "falcon-h1-7b",
    "jamba-1.5-mini",
    "lfm2-1.2b",
    "kimi-linear-48b-a3b",
]
PURE_STATE = ["falcon-mamba-7b", "mamba-codestral-7b"]


def model_len(model: str) -> int:
    cfg = json.loads((CONFIGS / model / "config.json").read_text())
    cfg = {**cfg, **cfg.get("text_config", {})}
    return int(cfg.get("max_position_embeddings") or cfg.get("model_max_length") or 0)


def cases() -> list[dict[str, Any]]:  # noqa: C901 - one list, read top to bottom
    out: list[dict[str, Any]] = []

    def add(model: str, gpu_name: str = "H100-80GB", share: float = 0.45, keep_len: bool = False, **args: Any) -> None:
        if not keep_len and (args.get("max_model_len") or 0) > (model_len(model) or 1 << 30):
            args["max_model_len"] = None  # a shorter model: its own length (longer is a ModelConfig error)
        out.append({"model": model, "gpu": gpu(gpu_name), "kv_cache_memory_bytes": budget(gpu_name, share), **args})

    # every model family on every GPU (the backend and block size follow the GPU generation)
    for model in DENSE + WINDOWED + MLA + HYBRID + PURE_STATE + ["mixtral-8x7b", "qwen3-30b-a3b"]:
        for g in GPUS:
            add(model, g, max_model_len=32768)
    # the model's own max_model_len, and auto-fit (-1)
    for model in DENSE + WINDOWED + MLA + HYBRID + ["llama-4-scout", "llama-3.1-70b"]:
        add(model, "H200")
        add(model, "H100-80GB", share=0.1, max_model_len=-1)
        add(model, "B200", share=0.05, max_model_len=-1)
    # KV dtypes
    for model in DENSE[:2] + WINDOWED + MLA + HYBRID:
        for g in ("H100-80GB", "B200", "L40S"):
            add(model, g, kv_cache_dtype="fp8", max_model_len=16384)
    # tensor and pipeline parallel
    for model in ["llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b", "gemma-3-27b", "gpt-oss-20b", "deepseek-v2-lite",
                  "qwen3-next-80b-a3b", "nemotron-h-8b", "granite-4.0-h-small", "falcon-h1-7b", "jamba-1.5-mini",
                  "lfm2-1.2b", "kimi-linear-48b-a3b", "phi-3-mini-4k", "gemma-2-9b"]:  # fmt: skip
        for tp, pp in ((2, 1), (4, 1), (8, 1), (1, 2), (2, 2), (1, 3)):
            add(model, "H100-80GB", tensor_parallel_size=tp, pipeline_parallel_size=pp, max_model_len=32768)
    for tp, pp in ((4, 1), (8, 1), (4, 2)):
        add("llama-3.1-70b", "A100-80GB", tensor_parallel_size=tp, pipeline_parallel_size=pp, max_model_len=65536)
        add("llama-4-scout", "H100-80GB", tensor_parallel_size=tp, pipeline_parallel_size=pp, max_model_len=131072)
    for g in ("H100-80GB", "H200", "B200"):
        for dtype in ("auto", "fp8"):
            add("deepseek-v3", g, tensor_parallel_size=8, kv_cache_dtype=dtype, max_model_len=65536)
            add("deepseek-v3.2-exp", g, tensor_parallel_size=8, kv_cache_dtype=dtype, max_model_len=65536)
    add("deepseek-v3", "H200", tensor_parallel_size=8, pipeline_parallel_size=2, max_model_len=131072)
    # vLLM's own knobs
    for model in [
        "llama-3.1-8b",
        "gemma-3-4b",
        "gpt-oss-20b",
        "nemotron-h-8b",
        "qwen3-next-80b-a3b",
        "deepseek-v2-lite",
    ]:
        add(model, block_size=64, max_model_len=32768)
        add(model, max_num_batched_tokens=2048, max_model_len=32768)
        add(model, "B200", max_num_batched_tokens=4096, max_model_len=32768)
    for model in [*WINDOWED, "llama-4-scout"]:
        add(model, disable_hybrid_kv_cache_manager=True, max_model_len=32768)
    for model in HYBRID:
        add(model, enable_prefix_caching=False, max_model_len=32768)
        add(model, mamba_ssm_cache_dtype="float32", max_model_len=32768)
        add(model, "B200", enable_prefix_caching=False, mamba_ssm_cache_dtype="float16", max_model_len=32768)
    for model in PURE_STATE:
        add(model, enable_prefix_caching=False)
        add(model, mamba_ssm_cache_dtype="float32", tensor_parallel_size=2)
    # refusals, in vLLM's own words
    add("llama-3.1-8b", "RTX-4090", share=0.02)  # the full 131072-token context does not fit
    add("qwen2.5-7b", tensor_parallel_size=3)  # 28 heads over 3 GPUs
    add("minimax-m1", max_model_len=32768)  # MiniMaxText01 left vLLM in 0.23
    add("nemotron-h-8b", max_model_len=32768, keep_len=True)  # longer than the model's 8192: a ModelConfig error
    return out


def run_case(python: str, case: dict[str, Any], script: Path | None = None) -> dict[str, Any]:
    arg = {**case, "model": str(CONFIGS / case["model"])}
    script = script or Path(__file__).with_name("vllm_case.py")
    for attempt in range(3):  # vLLM's model inspection occasionally races with a parallel case; try again
        proc = subprocess.run([python, str(script), json.dumps(arg)],
                              capture_output=True, text=True, timeout=900)  # fmt: skip
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("VLLM_CASE_RESULT ")]
        if not lines:
            raise RuntimeError(f"{case}: no result\n{proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(lines[-1].removeprefix("VLLM_CASE_RESULT "))
        if "failed to be inspected" not in json.dumps(result) or attempt == 2:
            return result
        time.sleep(1)
    raise AssertionError("unreachable")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("python", help="the Python of a venv with vllm==0.33.0")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="record only the models whose name contains this")
    args = ap.parse_args()
    todo = [c for c in cases() if args.only in c["model"]]
    done: list[dict[str, Any]] = []
    start = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        for i, (case, result) in enumerate(
            zip(todo, pool.map(lambda c: run_case(args.python, c), todo), strict=True), 1
        ):
            done.append({"case": case, **result})
            status = "ok" if "ok" in result else f"refused: {result['error']['message'][:80]}"
            print(f"[{i}/{len(todo)} {time.time() - start:.0f}s] {case['model']} {case['gpu']['preset']} {status}",
                  flush=True)  # fmt: skip
    if args.only and OUT.exists():  # keep the other models' cases
        kept = [c for c in json.loads(OUT.read_text())["cases"] if args.only not in c["case"]["model"]]
        done = kept + done
    OUT.write_text(json.dumps({"vllm": VLLM_VERSION, "cases": done}, indent=1) + "\n")
    print(f"wrote {len(done)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
