"""The repeating layers of a graph, shortened: a 94-layer MoE is ~12,000 nodes, and ggml's scheduler and allocator
treat a run of identical layers identically once the first ones have set the allocator's free blocks. A layer's
signature is its part of the graph (ops, shapes, strides, flags, pins, and its sources as positions relative to
the layer) and where the placement puts it (its device, each weight's destination under the overrides, each
weight's real bytes). Where the signatures repeat with a period of up to MAX_PERIOD layers, the graph is rebuilt
with the first KEPT periods of the stretch and the rest dropped in multiples of DROPPED_IN periods (those left over
kept); every device's compute buffer is the same (proven
against the whole graph on every recorded case and on the realistic shapes' placements:
tests/runtimes/llamacpp/compute/test_layers.py)."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence

from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.tensor import Tensor

#: the periods kept of a repeating stretch of layers, and the longest period looked for (Gemma 3: 6; a Q4_K_M's
#: mixed types: 3)
KEPT = 3
MAX_PERIOD = 8
#: the periods dropped come in multiples of this: the allocator's free blocks may cycle through two, three or
#: four layouts from one layer to the next (Snowflake Arctic's: three), and the layers after the dropped ones must
#: meet the layout they would (12: a whole number of each cycle)
DROPPED_IN = 12
_CACHE_NAME = re.compile(r"_l\d+\b")
_STRUCTURES: dict[int, tuple[Graph, tuple[int, ...]]] = {}


def structure(g: Graph, n_layer: int) -> tuple[int, ...]:
    """Each layer's part of the graph (leafs and nodes made while it was built, in the graph's order, with the
    tensors of other layers' graphs met between them), comparable between layers (kept for the last few graphs)."""
    hit = _STRUCTURES.get(id(g))
    if hit is not None and hit[0] is g:
        return hit[1]
    index: dict[int, tuple[int, int]] = {}
    seqs: list[list[Tensor]] = [[] for _ in range(n_layer)]
    for lst in (g.leafs, g.nodes):
        last = -1
        for t in lst:
            b = t.born
            if 0 <= b < n_layer:
                index[id(t)] = (b, len(seqs[b]))
                seqs[b].append(t)
                last = b
            elif last >= 0:
                seqs[last].append(t)  # another layer's tensor met here: by identity

    def ref(t: Tensor | None, il: int) -> Hashable:
        if t is None:
            return None
        at = index.get(id(t))
        return ("g", id(t)) if at is None else (at[0] - il, at[1])

    out: list[Hashable] = []
    # a layer whose own leaf takes compute memory (a tensor made without data, neither a weight nor an input:
    # DeepSeek-V3.2's zero-filled top-k rows) keeps it for the whole graph, so the buffer grows with every such
    # layer: those layers never count as repeating
    owned = {t.born for t in g.leafs if 0 <= t.born < n_layer and t.view_src is None and not t.external}
    for il, seq in enumerate(seqs):
        sig: list[Hashable] = [("leaf-owning layer", il)] if il in owned else []
        for t in seq:
            if index.get(id(t), (None,))[0] != il:
                sig.append(("g", id(t)))
                continue
            sig.append((
                t.op, t.type, t.ne, t.nb, t.nbytes, t.flags, t.external, t.usage, _CACHE_NAME.sub("", t.name),
                t.view_offs, t.layer - il if t.layer >= 0 else t.layer,
                t.pin - il if t.pin is not None and t.pin >= 0 else t.pin,
                ref(t.view_src, il), tuple(ref(s, il) for s in t.srcs),
            ))  # fmt: skip
        out.append(tuple(sig))
    codes: dict[Hashable, int] = {}
    result = tuple(codes.setdefault(sig, len(codes)) for sig in out)  # each distinct layer graph as a number
    if len(_STRUCTURES) >= 16:
        del _STRUCTURES[next(iter(_STRUCTURES))]
    _STRUCTURES[id(g)] = (g, result)
    return result


def by_layer(names: Sequence[str], n_layer: int) -> tuple[tuple[str, ...], ...]:
    """The weights' GGUF names of each layer (blk.N.*)."""
    per: list[list[str]] = [[] for _ in range(n_layer)]
    for name in names:
        if name.startswith("blk."):
            il = int(name[4 : name.index(".", 4)])
            if il < n_layer:
                per[il].append(name)
    return tuple(tuple(x) for x in per)


def placed(
    where: Sequence[int], names: Sequence[Sequence[str]], moved: Mapping[str, int], weight_bytes: Mapping[str, int]
) -> list[Hashable]:
    """Each layer's placement: its device, its weights' bytes (in its order) and the weights an override moves
    off its device (their place in the layer, their destination) — equal for two layers exactly when each weight
    of one has the destination and bytes of the same weight of the other (`names`: by_layer's)."""
    key = (id(names), id(weight_bytes))
    hit = _PLACED.get(key)
    if hit is None or hit[0] is not names or hit[1] is not weight_bytes:
        at = {n: (il, i) for il, layer in enumerate(names) for i, n in enumerate(layer)}
        sizes = tuple(tuple(weight_bytes.get(n) for n in layer) for layer in names)
        if len(_PLACED) >= 8:
            del _PLACED[next(iter(_PLACED))]
        hit = _PLACED[key] = (names, weight_bytes, at, sizes)
    at, sizes = hit[2], hit[3]
    off: list[list[tuple[int, int]]] = [[] for _ in names]
    for n, dest in moved.items():
        pos = at.get(n)
        if pos is not None and dest != where[pos[0]]:
            off[pos[0]].append((pos[1], dest))
    return [(where[il], sizes[il], tuple(sorted(off[il]))) for il in range(len(names))]


_PLACED: dict[tuple[int, int], tuple[Sequence[Sequence[str]], Mapping[str, int], dict[str, tuple[int, int]],
                                     tuple[tuple[int | None, ...], ...]]] = {}  # fmt: skip


def kept(
    signatures: Sequence[Hashable], kept_periods: int = KEPT, max_period: int = MAX_PERIOD, dropped_in: int = DROPPED_IN
) -> tuple[int, ...]:
    """The layers to build: from each stretch whose signatures repeat with a period p (the shortest saving
    most) for more than `kept_periods` periods, its first `kept_periods` × p layers; every other layer."""
    codes: dict[Hashable, int] = {}
    sig = [codes.setdefault(s, len(codes)) for s in signatures]
    n = len(sig)
    out: list[int] = []
    i = 0
    while i < n:
        best = (0, 0, 0)  # (layers saved, period, periods)
        for p in range(1, max_period + 1):
            j = i
            while j + p < n - 1 and sig[j] == sig[j + p]:  # (never the last layer)
                j += 1
            periods = (j + p - i) // p
            saved = (periods - kept_periods) // dropped_in * dropped_in * p
            if saved > best[0]:
                best = (saved, p, periods)
        if not best[0]:
            out.append(i)
            i += 1
            continue
        saved, p, periods = best
        out.extend(range(i, i + periods * p - saved))
        i += periods * p
    return tuple(out)
