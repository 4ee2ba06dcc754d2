"""Record llama.cpp's own memory (CPU backend: KV / state and compute buffer, exact bytes) for the two GGUFs the
public CUDA logs loaded, reconstructed without data (tests/gguf_files.sparse_file; see
reconstruct_public_gguf.py), across -np, -fa, -ub and -c: the oracle harness (../shared/oracle/harness.cpp) loads
each full-size sparse file (FROM_FILE=1; its weights read as zeros) and creates the context.

Writes tests/fixtures/oracle/compute_public.json. Run (≈1 min a case on 2 cores, a few GiB of memory):
    .venv/bin/python scripts/oracle/record_public_gguf.py [.oracle]
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from gguf_files import sparse_file  # noqa: E402

GRID = {
    "deepseek-coder-v2-lite-q4_0-early": {"n_seq_max": (1, 8), "fa": (0, 1), "n_ubatch": (256, 512),
                                          "n_ctx": (4096, 16384)},
    "gpt-oss-20b-mxfp4": {"n_seq_max": (1, 8), "fa": (0, 1), "n_ubatch": (256, 512), "n_ctx": (8192,)},
}  # fmt: skip
_BREAKDOWN = re.compile(r"BREAKDOWN (\S+) model=(\d+) context=(\d+) compute=(\d+)")


def main() -> None:
    oracle = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / ".oracle")
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for stem, grid in GRID.items():
            path = sparse_file(stem, Path(tmp) / f"{stem}.gguf")
            for values in itertools.product(*grid.values()):
                params = dict(zip(grid, values, strict=True))
                args = {**params, "n_batch": 2048, "swa_full": 0, "kv_unified": 0, "type_k": "f16", "type_v": "f16",
                        "no_alloc": 0}  # fmt: skip
                run = subprocess.run(
                    [str(oracle / "harness"), str(path), *(f"{k}={v}" for k, v in args.items())],
                    env={**os.environ, "FROM_FILE": "1"}, capture_output=True, text=True, timeout=900, check=False,
                )  # fmt: skip
                cpu = [m for m in _BREAKDOWN.findall(run.stdout) if m[0] == "CPU"]
                if run.returncode or not cpu:
                    cases.append({"file": stem, "params": args, "error": run.stderr[-400:]})
                    continue
                _, _, context, compute = cpu[0]
                cases.append({"file": stem, "params": args, "context_bytes": int(context),
                              "compute_bytes": int(compute)})  # fmt: skip
                print(stem, params, context, compute, flush=True)
    doc = {
        "llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01), CPU backend, oracle harness "
        "(FROM_FILE=1 on the full-size sparse file)",
        "files": "tests/fixtures/oracle/file/<file>.meta.gguf + .tensors.json (reconstructed from the public logs)",
        "cases": cases,
    }
    (ROOT / "tests" / "fixtures" / "oracle" / "compute_public.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
