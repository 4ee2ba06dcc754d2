"""Fit speed on a 94-layer MoE: kvplan against llama.cpp's own fit (llama-fit-params), on the same GGUF.

usage: python benchmarks/bench_fit.py [--fit-dir .oracle/fit] [--runs 5]

The model is Qwen3-235B-A22B's shape (94 layers, 128 experts) as a full-size sparse GGUF with the tensor infos
llama.cpp loads (tests/gguf_files.py sparse_fit_model; Q8_0, ~250 GB apparent, no data). The GPU is 24 GiB: for
kvplan `--memory 24GiB`, for llama.cpp a ggml RPC server reporting 24,576 MiB (as scripts/fit/record_fit.py
does). Timed, median of --runs: kvplan's `fit` end to end (a process: parse, placement, the answer) with the
placement flags given (-c 8192 -ncmoe 90), and the same in the library with the model loaded once; llama.cpp's
`llama-fit-params` with the same flags and `-fitp on` (its projection), and with no flags (its fit choosing -c,
-ngl and -ot: it loads the model about eight times), against kvplan's port of it (`--fit on`).
Without --fit-dir's binaries only kvplan's rows print.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

ARGS = ["-c", "8192", "-ncmoe", "90"]


def median_seconds(cmd: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=env)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fit-dir", default=str(ROOT / ".oracle" / "fit"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from gguf_files import sparse_fit_model

    import kvplan

    tmp = tempfile.TemporaryDirectory()
    model = sparse_fit_model(Path(tmp.name) / "qwen3-235b-a22b.gguf", "qwen3-235b-a22b", "Q8_0")
    rows = []
    cli = [sys.executable, "-m", "kvplan", "fit", str(model), "--memory", "24GiB", *ARGS, "--fit", "off", "-o", "json"]
    rows.append(("kvplan fit (a process: parse + placement)", median_seconds(cli, args.runs)))
    loaded = kvplan.load_model(str(model))
    times = []
    for _ in range(max(args.runs, 20)):
        t = time.perf_counter()
        kvplan.fit(loaded, memory="24GiB", ctx_size=8192, n_cpu_moe=90, fit="off")
        times.append(time.perf_counter() - t)
    rows.append(("kvplan.fit in the library, the same flags (model loaded once)", statistics.median(times)))
    times = []
    for _ in range(max(args.runs, 20)):
        t = time.perf_counter()
        kvplan.fit(loaded, memory="24GiB", n_cpu_moe=90, fit="off")
        times.append(time.perf_counter() - t)
    rows.append(("kvplan.fit in the library, the longest context that fits (its solver)", statistics.median(times)))
    on = [sys.executable, "-m", "kvplan", "fit", str(model), "--memory", "24GiB", "--fit", "on", "-o", "json"]
    rows.append(("kvplan fit --fit on (a process: llama.cpp's fit, ported)", median_seconds(on, args.runs)))
    times = []
    for _ in range(max(args.runs, 5)):
        t = time.perf_counter()
        kvplan.fit(loaded, memory="24GiB", fit="on")
        times.append(time.perf_counter() - t)
    rows.append(("kvplan.fit(fit='on') in the library", statistics.median(times)))
    fit_dir = Path(args.fit_dir)
    tool, server = fit_dir / "bin" / "llama-fit-params", fit_dir / "bin" / "ggml-rpc-server"
    if tool.exists() and server.exists():
        port = 50900
        proc = subprocess.Popen(
            [str(server), "-p", str(port)],
            env={**os.environ, "GGML_RPC_FAKE_MEM_MIB": "24576"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.05)
            base = [str(tool), "--rpc", f"127.0.0.1:{port}", "-m", str(model)]
            rows.append(
                ("llama-fit-params, the same flags, -fitp on", median_seconds([*base, *ARGS, "-fitp", "on"], args.runs))
            )
            rows.append(("llama-fit-params, its own fit (no flags)", median_seconds(base, max(1, args.runs // 2))))
        finally:
            proc.terminate()
            proc.wait()
    print("| 94-layer MoE (Qwen3-235B-A22B shape, Q8_0), 24 GiB GPU | time |\n|---|---:|")
    for what, seconds in rows:
        print(f"| {what} | {seconds * 1000:,.1f} ms |")


if __name__ == "__main__":
    main()
