"""Development check for issue 24: compare_graph over every fixture GGUF whose architecture kvplan builds, across
the settings that shape the compute buffer.

usage: python scripts/oracle/compare_all.py GRAPH_DUMP [ARCH ...]"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from compare_graph import compare

from kvplan.runtimes.llamacpp.compute.archs import BUILDERS
from kvplan.sources.gguf_reader import read_gguf

ROOT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "oracle"
SETTINGS = [
    {"n_ctx": c, "n_ubatch": u, "fa": f, "n_seq_max": s, "kv_unified": k, "type_k": tk, "type_v": tv, "swa_full": sf}
    for c, u, f, (s, k), (tk, tv), sf in itertools.product(
        (512, 4096), (32, 512), (1, 0), ((1, 0), (3, 0), (3, 1)), (("f16", "f16"), ("q8_0", "q4_0")), (0, 1)
    )
]

if __name__ == "__main__":
    archs = set(sys.argv[2:]) or set(BUILDERS)
    files = sorted(ROOT.glob("tiny/*.gguf")) + sorted(ROOT.glob("real/*.gguf")) + sorted(ROOT.glob("file/*.gguf"))
    ok = bad = skipped = 0
    for f in files:
        arch = read_gguf(f, check_data_bounds=False).architecture
        if arch not in archs:
            continue
        for s in SETTINGS:
            if s["type_v"] != "f16" and s["fa"] == 0:
                continue  # llama.cpp refuses a quantized V cache without flash attention
            want, got, note = compare(sys.argv[1], str(f), s)
            if want < 0 or got < 0:
                skipped += 1
                continue
            if want == got:
                ok += 1
            else:
                bad += 1
                print("BAD", f.name, s, want, got, note)
    print(f"equal {ok}, different {bad}, skipped {skipped}")
