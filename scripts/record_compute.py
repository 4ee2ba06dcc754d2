"""Record llama.cpp's compute buffer (CPU backend) for the realistic models: tests/fixtures/oracle/compute.json.

usage: python scripts/record_compute.py ORACLE_DIR

The fit overhead estimate's context-dependent part (kvplan.fit.attention_scratch) is tested against the growth
of this buffer with the context and with flash attention switched off. Run scripts/record_oracle.py first
(it writes the metadata-only GGUFs used here). Never edit a recorded number by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "oracle"
MODELS = (
    "llama-3.1-8b",
    "qwen3-8b",
    "gemma-3-12b",
    "gpt-oss-20b",
    "deepseek-v2-lite",
    "qwen3-30b-a3b",
    "mistral-nemo-12b",
    "phi-4",
    "llama-3.1-70b",
)
SETTINGS = [
    {"n_ctx": ctx, "n_ubatch": ub, "fa": fa, "n_seq_max": seqs}
    for ctx in (4096, 32768)
    for ub in (512, 1024)
    for fa in (1, 0)
    for seqs in (1, 4)
]


def main() -> None:
    harness = str(Path(sys.argv[1]) / "harness")
    cases = []
    for name in MODELS:
        for s in SETTINGS:
            params = {"n_batch": 2048, "swa_full": 0, "kv_unified": 0, "type_k": "f16", "type_v": "f16", **s}
            argv = [harness, str(OUT / "real" / f"{name}.gguf"), "no_alloc=1"] + [f"{k}={v}" for k, v in params.items()]
            out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
            line = next(x for x in out.splitlines() if x.startswith("BREAKDOWN"))
            fields = dict(f.split("=") for f in line.split()[2:])
            cases.append({"gguf": f"real/{name}.gguf", "params": params, "compute_bytes": int(fields["compute"])})
    doc = {"llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01)", "backend": "CPU", "cases": cases}
    (OUT / "compute.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} cases → {OUT / 'compute.json'}")


if __name__ == "__main__":
    main()
