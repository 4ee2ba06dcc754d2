"""The case loop of scripts/oracle/cuda/record.sh: each single-device placement of compute_devices.json (unique
model, weight type and flags; the recorded device size does not change a projection of given flags), measured by
fit_bytes on the machine's GPU. usage: record_cases.py FIT_BYTES OUT_JSON MODELS_DIR DEADLINE_EPOCH"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from gguf_files import sparse_fit_model

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "fixtures" / "oracle" / "compute_devices.json"


def main() -> None:
    fit_bytes, out_path, models, deadline = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4])
    models.mkdir(parents=True, exist_ok=True)
    seen: dict[tuple[str, str, tuple[str, ...]], dict[str, object]] = {}
    for c in json.loads(CASES.read_text())["cases"]:
        if len(c["devices"]) == 1:
            seen.setdefault((c["model"], c["type"], tuple(c["args"])), c)
    out: list[dict[str, object]] = []
    doc = {"source": "scripts/oracle/cuda/record.sh (llama.cpp 2026-10-01, CUDA backend)", "gpu": _gpu(), "cases": out}
    for (model, wtype, args), _c in sorted(seen.items()):
        if time.time() > deadline:
            doc["cut_short"] = f"deadline reached after {len(out)} of {len(seen)} cases"
            break
        path = models / f"{model}-{wtype}.gguf"
        if not path.exists():
            sparse_fit_model(path, model, wtype)
        done = subprocess.run([fit_bytes, "-m", str(path), *args], capture_output=True, text=True, timeout=300)
        rows: dict[str, list[int]] = {}
        if done.returncode:
            rows = {"error": [done.returncode]}
        for line in done.stdout.splitlines():
            name, *nums = line.split()
            rows[name] = [int(x) for x in nums]
        out.append({"model": model, "type": wtype, "args": list(args), "bytes": rows})
        out_path.write_text(json.dumps(doc, indent=0) + "\n")
        print(len(out), model, wtype, " ".join(args), rows, flush=True)
    out_path.write_text(json.dumps(doc, indent=0) + "\n")


def _gpu() -> str:
    try:
        q = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
        return subprocess.run(q, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return "none (dry run)"


if __name__ == "__main__":
    main()
