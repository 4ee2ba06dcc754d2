"""The second loop of scripts/oracle/cuda/record.sh: compute_graph.json's metadata-only fixtures (every architecture
kvplan builds the graph of, tiny and realistic shapes) loaded by the oracle harness (../shared/oracle/harness.cpp,
llama_model_init_from_user, no_alloc) on the machine's GPU with every layer offloaded (llama.cpp's default
n_gpu_layers -1), in passes of one setting each so that a run cut short still covers every file once:
fa on / f16, fa off / f16, fa on / q8_0 K + q4_0 V with -np 3. usage: record_graph_cases.py HARNESS OUT_JSON
DEADLINE_EPOCH"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ORACLE = ROOT / "tests" / "fixtures" / "oracle"
PASSES: list[dict[str, object]] = [
    {"type_k": "f16", "type_v": "f16", "fa": 1, "n_seq_max": 1, "kv_unified": 0},
    {"type_k": "f16", "type_v": "f16", "fa": 0, "n_seq_max": 1, "kv_unified": 0},
    {"type_k": "q8_0", "type_v": "q4_0", "fa": 1, "n_seq_max": 3, "kv_unified": 0},
]
BASE = {"n_ctx": 4096, "n_batch": 2048, "n_ubatch": 512, "swa_full": 0}


def main() -> None:
    harness, out_path, deadline = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
    doc = json.loads((ORACLE / "compute_graph.json").read_text())
    files = sorted({c["gguf"] for c in doc["cases"] if not c["gguf"].startswith(("REAL:", "GEN:"))})
    out: list[dict[str, object]] = []
    rec = {
        "source": "scripts/oracle/cuda/record.sh (llama.cpp 2026-10-01, CUDA backend, harness no_alloc=1)",
        "cases": out,
    }
    total = len(files) * len(PASSES)
    for p in PASSES:
        params = {**BASE, **p}
        for name in files:
            if time.time() > deadline:
                rec["cut_short"] = f"deadline reached after {len(out)} of {total} cases"
                out_path.write_text(json.dumps(rec, indent=0) + "\n")
                return
            args = [f"{k}={v}" for k, v in params.items()] + ["no_alloc=1"]
            try:
                done = subprocess.run([harness, str(ORACLE / name), *args], capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                out.append({"gguf": name, "params": params, "error": "timeout"})
                continue
            case: dict[str, object] = {"gguf": name, "params": params}
            if done.returncode:
                case["error"] = f"rc {done.returncode}: {done.stderr.strip()[-300:]}"
            else:
                rows: dict[str, list[int]] = {}
                for line in done.stdout.splitlines():
                    if line.startswith("BREAKDOWN "):
                        _, buft, *kv = line.split()
                        rows[buft] = [int(x.split("=")[1]) for x in kv]  # model, context, compute
                case["bytes"] = rows
            out.append(case)
            out_path.write_text(json.dumps(rec, indent=0) + "\n")
            print(len(out), name, p, case.get("bytes", case.get("error")), flush=True)
    out_path.write_text(json.dumps(rec, indent=0) + "\n")


if __name__ == "__main__":
    main()
