"""Development check for issue 24: builds kvplan's graph for a GGUF and settings, and compares it node by node and
in bytes with the graph llama.cpp reserves (graph_dump.cpp).

usage: python scripts/oracle/compare_graph.py GRAPH_DUMP GGUF [key=value ...]"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from replay_dump import load

from kvplan.runtimes.llamacpp.compute import graph_of
from kvplan.runtimes.llamacpp.compute.alloc import GraphAllocator
from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.tensor import USAGE_WEIGHTS
from kvplan.runtimes.llamacpp.context import LlamaCppSettings
from kvplan.runtimes.llamacpp.memory import plan
from kvplan.runtimes.llamacpp.plan import FlashAttn
from kvplan.sources.gguf_source import load_gguf_model


def graph_for_gguf(path: str, settings: dict[str, int | str]) -> Graph:
    """Development entry (scripts/oracle): the graph for a GGUF and harness-style settings."""
    model = load_gguf_model(path)
    fa = settings.get("fa", 1)
    s = LlamaCppSettings(
        n_ctx=int(settings.get("n_ctx", 4096)),
        n_seq=int(settings.get("n_seq_max", 1)),
        kv_unified=bool(settings.get("kv_unified", 0)),
        n_batch=int(settings.get("n_batch", 2048)),
        n_ubatch=int(settings.get("n_ubatch", 512)),
        type_k=str(settings.get("type_k", "f16")),
        type_v=str(settings.get("type_v", "f16")),
        flash_attn=FlashAttn.ON if fa == 1 else FlashAttn.OFF if fa == 0 else FlashAttn.AUTO,
        swa_full=bool(settings.get("swa_full", 1)),  # the C API default, as graph_dump
    )
    g = graph_of(plan(model, s))
    if g is None:
        raise NotImplementedError(f"no graph for {model.arch}")
    return g


def compare(dump_exe: str, gguf: str, settings: dict[str, int], verbose: bool = True) -> tuple[int, int, str]:
    argv = [dump_exe, gguf] + [f"{k}={v}" for k, v in settings.items()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode:
        return -1, -1, "llama.cpp refused: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    path = "/tmp/_cmp_dump.jsonl"
    Path(path).write_text(done.stdout)
    _leafs, nodes, bufs = load(path)
    try:
        gf = graph_for_gguf(gguf, settings)
    except NotImplementedError as e:
        return bufs["CPU"], -1, f"not built: {e}"
    note = ""
    for i in range(min(len(nodes), len(gf.nodes))):
        a, b = nodes[i], gf.nodes[i]
        if b.view_src is not None and b.view_src.usage == USAGE_WEIGHTS:
            # a view of a weight: kvplan builds weights as f16 whatever the file's type (a view takes no
            # compute memory), so only its op and shape are compared
            if (a.op, a.ne) != (b.op, b.ne):
                note = f"node {i}: llama.cpp {(a.op, a.type, a.ne, a.name)} kvplan {(b.op, b.type, b.ne, b.name)}"
                break
            continue
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
    want, got, note = compare(
        sys.argv[1], sys.argv[2], {k: (int(v) if v.lstrip("-").isdigit() else v) for k, v in settings.items()}
    )
    print(json.dumps({"llama.cpp": want, "kvplan": got, "equal": want == got, "note": note}))
