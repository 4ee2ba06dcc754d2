"""Replays a graph_dump.cpp dump through kvplan's port of ggml's graph allocator and prints both compute sizes.

usage: python scripts/oracle/replay_dump.py DUMP.jsonl"""

from __future__ import annotations

import json
import sys

from kvplan.runtimes.llamacpp.compute.alloc import GraphAllocator
from kvplan.runtimes.llamacpp.compute.tensor import Tensor


def load(path: str) -> tuple[list[Tensor], list[Tensor], dict[str, int]]:
    with open(path) as f:
        rows = [json.loads(x) for x in f]
    by_id: dict[int, Tensor] = {}
    pending = []
    leafs: list[Tensor] = []
    nodes: list[Tensor] = []
    buffers = {}
    for r in rows:
        if r["k"] == "G":
            buffers["gallocr"] = r["compute"]
            continue
        if r["k"] == "P":
            continue
        if r["k"] == "B":
            buffers[r["buft"]] = r["compute"]
            continue
        t = Tensor(
            r["op"],
            r["type"],
            tuple(r["ne"]),
            tuple(r["nb"]),
            r["bytes"],
            external=bool(r["ext"]),
            flags=r["flags"],
            name=r["name"],
        )
        by_id[r["id"]] = t
        pending.append((t, r))
        (leafs if r["k"] == "L" else nodes).append(t)
    for t, r in pending:
        srcs: list[Tensor | None] = [None] * 10
        for j, sid in r["src"]:
            srcs[j] = by_id.get(sid) or Tensor("NONE", "f32", (1, 1, 1, 1), (4, 4, 4, 4), 4, external=True)
        while srcs and srcs[-1] is None:
            srcs.pop()
        t.srcs = tuple(srcs)
        if r["view"] >= 0:
            t.view_src = by_id.get(r["view"]) or Tensor("NONE", "f32", (1, 1, 1, 1), (4, 4, 4, 4), 4, external=True)
    return leafs, nodes, buffers


if __name__ == "__main__":
    leafs, nodes, buffers = load(sys.argv[1])
    sizes = GraphAllocator().reserve(leafs, nodes)
    print("kvplan", sizes, "llama.cpp", buffers)
