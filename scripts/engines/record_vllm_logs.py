"""Record vLLM 0.33.0's own startup lines about the KV cache for a selection of the recorded planning cases
(tests/fixtures/logs/vllm/recorded/): the logs `kvplan explain` is proven on, written by vLLM's code.

usage: python3 scripts/engines/record_vllm_logs.py VLLM_VENV_PYTHON [--jobs 2] [--refusals]

The selection (cases() below): from tests/fixtures/engines/vllm.json, the first case vLLM started for each model,
and every case with tensor or pipeline parallelism or an fp8 KV cache. Each runs vllm_log_case.py (one process,
≈ 25 s) with the model's config folder named relative to the repository, as `vllm serve` would be given it.

--refusals adds (as r00-…, beside the logs already recorded) runs vLLM refuses to start: the recorded refusal of
vllm.json, and REFUSED's cases, each given 0.6 of the KV memory one request of its max_model_len takes (the
recorded case's KV memory ÷ its concurrency), so that vLLM's check_enough_kv_cache_memory raises `To serve at least
one request …` with its estimate of the longest context that fits.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "engines" / "vllm.json"
OUT = ROOT / "tests" / "fixtures" / "logs" / "vllm" / "recorded"


def cases() -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for c in json.loads(RECORDED.read_text())["cases"]:
        if "ok" not in c:
            continue
        case = c["case"]
        special = (case.get("tensor_parallel_size", 1) > 1 or case.get("pipeline_parallel_size", 1) > 1
                   or case.get("kv_cache_dtype") == "fp8")  # fmt: skip
        if case["model"] not in seen or (special and sum(1 for o in out if o["model"] == case["model"]) < 2):
            seen.add(case["model"])
            out.append(case)
    return out


#: (model, GPU preset, the case's own settings) of the vllm.json cases whose refusals are recorded: full attention,
#: sliding windows (Mistral, Gemma 3, gpt-oss), MLA, Mamba hybrids, chunked local attention, TP and an fp8 cache
REFUSED = (
    ("llama-3.1-8b", "H200", {}),
    ("qwen3-32b", "H200", {}),
    ("mistral-7b-v0.1", "H200", {}),
    ("gemma-3-27b", "H200", {}),
    ("gpt-oss-20b", "H200", {}),
    ("deepseek-v2-lite", "H200", {}),
    ("qwen3-next-80b-a3b", "H200", {}),
    ("falcon-h1-7b", "H200", {}),
    ("llama-3.1-70b", "H200", {}),
    ("gemma-3-27b", "H100-80GB", {"tensor_parallel_size": 2, "pipeline_parallel_size": 1, "max_model_len": 32768}),
    ("llama-3.1-70b", "A100-80GB", {"tensor_parallel_size": 4, "pipeline_parallel_size": 1, "max_model_len": 65536}),
    ("qwen3-32b", "H100-80GB", {"kv_cache_dtype": "fp8", "max_model_len": 16384}),
    ("llama-4-scout", "H100-80GB", {"tensor_parallel_size": 4, "pipeline_parallel_size": 1, "max_model_len": 131072}),
)


def refused_cases() -> list[dict[str, Any]]:
    recorded = json.loads(RECORDED.read_text())["cases"]
    out = [c["case"] for c in recorded if "To serve at least" in c.get("error", {}).get("message", "")]
    for model, gpu, own in REFUSED:
        for c in recorded:
            case = c["case"]
            extra = {k: v for k, v in case.items() if k not in ("model", "gpu", "kv_cache_memory_bytes")}
            if "ok" in c and case["model"] == model and case["gpu"]["preset"] == gpu and extra == own:
                need = case["kv_cache_memory_bytes"] / c["ok"]["concurrency"]
                out.append({**case, "kv_cache_memory_bytes": int(need * 0.6)})
                break
        else:
            raise SystemExit(f"no recorded case {model} {gpu} {own}")
    return out


def name_of(i: int, case: dict[str, Any]) -> str:
    extra = "-".join(f"{k}={v}" for k, v in sorted(case.items())
                     if k not in ("model", "gpu", "kv_cache_memory_bytes") and v is not None)  # fmt: skip
    label = f"{case['model']}-{case['gpu']['preset']}" + (f"-{extra}" if extra else "")
    slug = re.sub(r"[^A-Za-z0-9.=_-]+", "-", label)
    return f"{i:02d}-{slug}"[:120]


def run(python: str, case: dict[str, Any]) -> str:
    arg = {**case, "model": f"tests/fixtures/engines/configs/{case['model']}"}
    proc = subprocess.run([python, str(Path(__file__).with_name("vllm_log_case.py")), json.dumps(arg)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)  # fmt: skip
    text = proc.stdout
    if "VLLM_LOG_BEGIN" not in text:
        raise RuntimeError(f"{case}: no log\n{proc.stderr[-3000:]}")
    return text.split("VLLM_LOG_BEGIN\n", 1)[1].split("VLLM_LOG_END", 1)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("python")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--refusals", action="store_true", help="record the refused runs beside the logs already there")
    args = ap.parse_args()
    todo = refused_cases() if args.refusals else cases()
    OUT.mkdir(parents=True, exist_ok=True)
    index = {}
    if args.refusals:
        index = {n: c for n, c in json.loads((OUT / "index.json").read_text())["logs"].items() if n[0] != "r"}
    with ThreadPoolExecutor(args.jobs) as pool:
        for i, (case, text) in enumerate(zip(todo, pool.map(lambda c: run(args.python, c), todo), strict=True)):
            name = ("r" if args.refusals else "") + name_of(i, case) + ".log"
            (OUT / name).write_text(text)
            index[name] = case
            print(name, flush=True)
    (OUT / "index.json").write_text(json.dumps({"vllm": "0.33.0", "logs": index}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(index)} logs to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
