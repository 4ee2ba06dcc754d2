"""Development check for issue 24: builds kvplan's graph for a GGUF and settings, and compares it node by node and
in bytes with the graph llama.cpp reserves (graph_dump.cpp).

usage: python scripts/oracle/compare_graph.py GRAPH_DUMP GGUF [key=value ...]"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from replay_dump import load  # noqa: E402

from kvplan.runtimes.llamacpp.compute.alloc import GraphAllocator  # noqa: E402
from kvplan.runtimes.llamacpp.compute.gguf import graph_for_gguf  # noqa: E402


def compare(dump_exe: str, gguf: str, settings: dict[str, int], verbose: bool = True) -> tuple[int, int, str]:
    argv = [dump_exe, gguf] + [f"{k}={v}" for k, v in settings.items()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode:
        return -1, -1, "llama.cpp refused: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    path = "/tmp/_cmp_dump.jsonl"
    Path(path).write_text(done.stdout)
    leafs, nodes, bufs = load(path)
    cache = next((t for t in leafs if t.name.startswith("cache_k_l")), None)
    kv_size = cache.ne[1] if cache is not None else 0
    try:
        gf = graph_for_gguf(gguf, settings)
    except NotImplementedError as e:
        return bufs["CPU"], -1, f"not built: {e}"
    note = ""
    for i in range(min(len(nodes), len(gf.nodes))):
        a, b = nodes[i], gf.nodes[i]
        if (a.op, a.type, a.ne, a.nb, a.view_src is None) != (b.op, b.type, b.ne, b.nb, b.view_src is None):
            note = f"node {i}: llama.cpp {(a.op, a.type, a.ne, a.name)} kvplan {(b.op, b.type, b.ne, b.name)}"
            break
    else:
        if len(nodes) != len(gf.nodes):
            note = f"node count {len(nodes)} vs {len(gf.nodes)}"
    got = GraphAllocator().reserve(gf.leafs, gf.nodes)[0]
    return bufs["CPU"], got, note


if __name__ == "__main__":
    settings = dict(a.split("=", 1) for a in sys.argv[3:])
    want, got, note = compare(sys.argv[1], sys.argv[2], {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in settings.items()})
    print(json.dumps({"llama.cpp": want, "kvplan": got, "equal": want == got, "note": note}))
