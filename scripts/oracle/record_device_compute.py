"""Record llama.cpp's compute buffer of every device, in bytes, into tests/fixtures/oracle/compute_devices.json.

usage: python scripts/oracle/record_device_compute.py FIT_DIR

FIT_DIR is what ../shared/oracle/build_fit.sh built, with DIR/fit_bytes (scripts/oracle/build_fit_bytes.sh):
llama-fit-params's flags in, each device's model, context and compute bytes out, as common_get_device_memory_data
measures them for llama.cpp's fit (a context created with no_alloc). The devices are ggml RPC servers on
127.0.0.1 (CPU buffer rules behind them), the models the full-size sparse GGUFs of tests/gguf_files.py. The cases:
every `-fitp` projection of tests/fixtures/fit/llama_fit.json, and placements the fit does not try (-nkvo, -ot,
-ts, -sm none is not one: it leaves devices out). Never edit a recorded number by hand: re-run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from gguf_files import sparse_fit_model  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "oracle" / "compute_devices.json"
FIT = ROOT / "tests" / "fixtures" / "fit" / "llama_fit.json"
#: placements beyond the fit's projections, for every model: KV in host memory, experts to the host by pattern,
#: an uneven split, a partial -ngl over two devices
EXTRA = [
    ((24000,), ["-c", "8192", "-nkvo"]),
    ((24000, 16000), ["-c", "8192", "-nkvo"]),
    ((24000, 16000), ["-c", "8192", "-ts", "3,1"]),
    ((24000, 16000), ["-c", "8192", "-ngl", "20"]),
    ((24000, 16000), ["-c", "4096", "-ub", "1024", "-b", "2048"]),
]
MOE_EXTRA = [((24000, 16000), ["-c", "8192", "-ot", r"blk\.(1|3|5)\.ffn_.*_exps=CPU"])]


def measure(fit_dir: Path, model: Path, devices: list[int], args: list[str], port: int) -> dict[str, list[int]]:
    servers = []
    try:
        for i, mib in enumerate(devices):
            env = {**os.environ, "GGML_RPC_FAKE_MEM_MIB": str(mib)}
            servers.append(subprocess.Popen([str(fit_dir / "bin" / "ggml-rpc-server"), "-p", str(port + i)], env=env,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
        for i in range(len(devices)):
            for _ in range(100):
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port + i)) == 0:
                        break
                time.sleep(0.05)
        rpc = ",".join(f"127.0.0.1:{port + i}" for i in range(len(devices)))
        done = subprocess.run([str(fit_dir / "fit_bytes"), "--rpc", rpc, "-m", str(model), *args],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        if done.returncode:
            return {"error": [done.returncode]}
        rows = {}
        for i, line in enumerate(done.stdout.splitlines()):
            name, *nums = line.split()
            rows["Host" if name == "Host" else f"RPC{i}"] = [int(x) for x in nums]
        return rows
    finally:
        for s in servers:
            s.terminate()
            s.wait()


def main() -> None:
    fit_dir = Path(sys.argv[1]).resolve()
    fit = json.loads(FIT.read_text())["cases"]
    cases: list[dict[str, Any]] = []
    seen = set()
    for c in fit:
        k = c["case"]
        if k["mode"] != "fitp":
            continue
        key = (k["model"], k["type"], tuple(k["devices"]), tuple(k["args"]))
        if key not in seen:
            seen.add(key)
            cases.append({"model": k["model"], "type": k["type"], "devices": k["devices"], "args": k["args"]})
    for model, wtype in sorted({(c["model"], c["type"]) for c in cases}):
        moe = model not in ("llama-3.1-8b", "gemma-3-12b")
        for devices, args in EXTRA + (MOE_EXTRA if moe else []):
            cases.append({"model": model, "type": wtype, "devices": list(devices), "args": args})
    folder = Path("/tmp/kvplan-device-compute")
    folder.mkdir(exist_ok=True)
    out = []
    for i, c in enumerate(cases):
        path = folder / f"{c['model']}-{c['type']}.gguf"
        if not path.exists():
            sparse_fit_model(path, c["model"], c["type"])
        for attempt in range(4):  # a port still held by the last case's server: try other ones
            c["bytes"] = measure(fit_dir, path, c["devices"], c["args"], 50300 + ((i + 7 * attempt) % 40) * 8)
            if "error" not in c["bytes"]:
                break
        out.append(c)
        print(i, c["model"], c["type"], c["devices"], c["args"], c["bytes"], flush=True)
    OUT.write_text(json.dumps({"source": "scripts/oracle/record_device_compute.py (llama.cpp 2026-10-01)",
                               "cases": out}, indent=0) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
