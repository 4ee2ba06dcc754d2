"""Record llama.cpp's own fit (common_fit_params, via llama-fit-params) into tests/fixtures/fit/llama_fit.json.

usage: python scripts/fit/record_fit.py FIT_DIR [--models DIR] [--only NAME] [--types T,T]

FIT_DIR is what ../shared/oracle/build_fit.sh built (bin/llama-fit-params, bin/ggml-rpc-server). The models are
full-size GGUFs with the tensor infos llama.cpp loads and no data (tests/gguf_files.py sparse_fit_model: sparse
files, never read). Each simulated GPU is a ggml RPC server on 127.0.0.1 reporting the memory a case gives it
(GGML_RPC_FAKE_MEM_MIB); the device buffer rules are those of the CPU backend behind the server, not CUDA's.
Per case two answers: `-fitp on` (llama.cpp's projected MiB per device for the arguments as given: model,
context, compute) and the fit itself (the -c / -ngl / -ts / -ot arguments it chooses). Never edit a recorded
number by hand: change the case list here and re-run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from gguf_files import FIT_MODELS, sparse_fit_model  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "fit" / "llama_fit.json"
MODELS = [
    ("llama-3.1-8b", "F16"),
    ("llama-3.1-8b", "Q8_0"),
    ("qwen3-30b-a3b", "Q8_0"),
    ("qwen3-30b-a3b", "F16"),
    ("llama-3.1-8b", "Q4_K_M"),
    ("llama-3.1-8b", "BF16"),
    ("qwen3-30b-a3b", "Q4_K_M"),
    ("gemma-3-12b", "Q4_K_M"),
    ("gemma-3-12b", "BF16"),
    ("gpt-oss-20b", "MXFP4_MOE"),
    ("qwen3-next-80b-a3b", "Q4_K_M"),
    ("glm-4.5-air", "Q4_K_M"),
    ("deepseek-v3", "Q4_K_M"),
    ("gpt-oss-120b", "MXFP4_MOE"),
]
DEVICES = [
    (8000,),
    (16000,),
    (24000,),
    (48000,),
    (80000,),
    (24000, 16000),
    (16000, 16000, 8000),
    (6144,),
    (12000, 12000, 8000, 6144),
]
PROJECTIONS = [["-c", "8192"], ["-c", "32768", "-ngl", "20"], ["-c", "16384", "-ngl", "10", "-np", "2"]]
#: MoE models also: experts of the first N layers (or all) kept in host memory
MOE_PROJECTIONS = [
    ["-c", "8192", "-ncmoe", "20"],
    ["-c", "16384", "-cmoe"],
    ["-c", "8192", "-ngl", "30", "-ncmoe", "10"],
]
FITS = [[], ["-c", "32768"], ["-fitt", "2048"]]


#: the settings llama.cpp's fit honours, projected on one and on three devices: quantized cache with flash
#: attention, full-size SWA cache for two sequences, a smaller micro-batch (llama-fit-params takes no -kvu)
SETTING_PROJECTIONS = [
    ["-c", "32768", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on", "-ngl", "20"],
    ["-c", "16384", "--swa-full", "-np", "2"],
    ["-c", "8192", "-ub", "256", "-b", "1024", "-fa", "off"],
]
SETTING_DEVICES = [(24000,), (16000, 16000, 8000)]


def cases() -> list[dict[str, Any]]:
    out = []
    for model, wtype in MODELS:
        for devices in SETTING_DEVICES:
            for args in SETTING_PROJECTIONS:
                out.append({"model": model, "type": wtype, "devices": list(devices), "args": args, "mode": "fitp"})
        for devices in DEVICES:
            for args in PROJECTIONS + (MOE_PROJECTIONS if "n_expert" in FIT_MODELS[model] else []):
                out.append({"model": model, "type": wtype, "devices": list(devices), "args": args, "mode": "fitp"})
            for args in FITS:
                out.append({"model": model, "type": wtype, "devices": list(devices), "args": args, "mode": "fit"})
    return out


def parse_projection(stdout: str) -> dict[str, list[int]]:
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and all(p.isdigit() for p in parts[1:]):
            rows[parts[0]] = [int(p) for p in parts[1:]]
    return rows


def run(fit_dir: Path, model: Path, case: dict[str, Any], base_port: int) -> dict[str, Any]:
    servers = []
    try:
        for i, mib in enumerate(case["devices"]):
            env = {**os.environ, "GGML_RPC_FAKE_MEM_MIB": str(mib)}
            servers.append(
                subprocess.Popen(
                    [str(fit_dir / "bin" / "ggml-rpc-server"), "-p", str(base_port + i)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for i in range(len(case["devices"])):  # wait until each server listens
            for _ in range(100):
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", base_port + i)) == 0:
                        break
                time.sleep(0.05)
        rpc = ",".join(f"127.0.0.1:{base_port + i}" for i in range(len(case["devices"])))
        cmd = [str(fit_dir / "bin" / "llama-fit-params"), "--rpc", rpc, "-m", str(model), *case["args"]]
        if case["mode"].startswith("fitp"):
            cmd += ["-fitp", "on"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:300]}
        if case["mode"].startswith("fitp"):
            return {"projection": parse_projection(proc.stdout)}
        fit = next(ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("-"))
        # what the chosen arguments project, on the same devices (the -ot buffers name them)
        chosen = [*cmd[:5], *shlex.split(fit), "-fitp", "on"]
        again = subprocess.run(chosen, capture_output=True, text=True, timeout=300)
        nr = subprocess.run([*chosen, "-nr"], capture_output=True, text=True, timeout=300)
        # an RPC device is named by its endpoint (RPC0[127.0.0.1:PORT]), not by its place in --rpc
        return {
            "fit": fit,
            "fit_projection": parse_projection(again.stdout),
            "fit_projection_no_repack": parse_projection(nr.stdout),
            "rpc": rpc.split(","),
        }
    finally:
        for s in servers:
            s.terminate()
            s.wait()


def attempts(fit_dir: Path, model: Path, case: dict[str, Any], n: int) -> dict[str, Any]:
    for attempt in range(4):  # a server that is not yet accepting makes the tool abort: try again elsewhere
        result = run(fit_dir, model, case, 50300 + (n % 20) * 4 + attempt * 100)
        if "error" not in result:
            break
    if case["mode"] == "fitp" and "error" not in result:
        # the same with weight repacking off (-nr): llama.cpp's projection leaves the CPU_REPACK buffer (the
        # host's Q4_K / Q4_0 / IQ4_NL / MXFP4 weights, repacked for AVX2) out of every row; -nr puts them in Host
        nr = attempts(fit_dir, model, {**case, "args": [*case["args"], "-nr"], "mode": "fitp-nr"}, n)
        result["projection_no_repack"] = nr.get("projection", nr)
    return result


def add_no_repack(fit_dir: Path, paths: dict[tuple[str, str], Path], chosen: Any) -> None:
    doc = json.loads(OUT.read_text())
    for n, c in enumerate(doc["cases"]):
        case = c["case"]
        if not chosen(case["model"], case["type"]):
            continue
        if case["mode"] == "fitp" and "error" in c.get("projection_no_repack", {"error": 1}):
            again = {**case, "args": [*case["args"], "-nr"], "mode": "fitp-nr"}
            nr = attempts(fit_dir, paths[(case["model"], case["type"])], again, n)
            c["projection_no_repack"] = nr.get("projection", nr)
            print(f"[{n + 1}] {case['model']} {case['type']} {case['devices']} {' '.join(case['args'])} -nr: "
                  f"{c['projection_no_repack']}"[:160], flush=True)  # fmt: skip
        if case["mode"] == "fit" and "error" in c.get("fit_projection_no_repack", {"error": 1}):
            # the fit's arguments name RPC buffers by endpoint: the same ports again
            port = int(c["rpc"][0].rsplit(":", 1)[1]) if "RPC" in c["fit"] else 50900 + n % 50
            again = {**case, "args": [*shlex.split(c["fit"]), "-nr"], "mode": "fitp-nr"}
            nr = run(fit_dir, paths[(case["model"], case["type"])], again, port)
            c["fit_projection_no_repack"] = nr.get("projection", nr)
            print(f"[{n + 1}] {c['fit'][:60]} -nr: {c['fit_projection_no_repack']}"[:160], flush=True)
    write(doc["cases"])


def write(cases: list[dict[str, Any]]) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text('{"llama.cpp": "2026-10-01 (llama-cpp-python 0.3.36)", "cases": [\n'
                   + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")  # fmt: skip
    print(f"wrote {len(cases)} cases to {OUT.relative_to(ROOT)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fit_dir", type=Path)
    ap.add_argument("--models", type=Path, default=ROOT / ".oracle" / "fit" / "models")
    ap.add_argument("--only", default="", help="record only the models whose name contains this (kept: the rest)")
    ap.add_argument("--add-no-repack", action="store_true", help="only add projection_no_repack to the recording")
    ap.add_argument("--new-only", action="store_true", help="record only the cases not yet in the recording")
    ap.add_argument("--types", default="", help="with --only: and only these weight types (comma-separated)")
    args = ap.parse_args()
    args.models.mkdir(parents=True, exist_ok=True)
    paths = {}
    types = set(args.types.split(",")) if args.types else {t for _, t in MODELS}

    def chosen(model: str, wtype: str) -> bool:
        return args.only in model and wtype in types

    for model, wtype in [m for m in MODELS if chosen(*m)]:
        path = args.models / f"{model}-{wtype}.gguf"
        if not path.exists():
            sparse_fit_model(path, model, wtype)
        paths[(model, wtype)] = path
    if args.add_no_repack:
        add_no_repack(args.fit_dir, paths, chosen)
        return
    done = []
    kept = []
    if (args.only or args.types or args.new_only) and OUT.exists():
        recorded = json.loads(OUT.read_text())["cases"]
        kept = [c for c in recorded if args.new_only or not chosen(c["case"]["model"], c["case"]["type"])]
    have = [c["case"] for c in kept]
    for n, case in enumerate(c for c in cases() if chosen(c["model"], c["type"]) and c not in have):
        result = attempts(args.fit_dir, paths[(case["model"], case["type"])], case, n)
        done.append({"case": case, **result})
        print(f"[{n + 1}] {case['model']} {case['type']} {case['devices']} {' '.join(case['args'])}: "
              f"{result.get('fit') or result.get('projection') or result.get('error')}"[:160], flush=True)  # fmt: skip
    write(kept + done)


if __name__ == "__main__":
    main()
