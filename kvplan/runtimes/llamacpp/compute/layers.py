"""The repeating layers of a graph, shortened: a 94-layer MoE is ~12,000 nodes, and ggml's scheduler and allocator
treat a run of identical layers identically once the first ones have set the allocator's free blocks. A layer's
signature is its part of the graph (ops, shapes, strides, flags, pins, and its sources as positions relative to
the layer) and where the placement puts it (its device, each weight's destination under the overrides, each
weight's real bytes). Where the signatures repeat with a period of up to MAX_PERIOD layers, the graph is rebuilt
with the first periods of the stretch and the rest dropped (shortening); Probe then proves, from the allocator's
states at the kept periods' starts, that the shortened graph allocates exactly what the whole one does — or the
caller plans more periods, or the whole graph (compute/__init__.py: ATTEMPTS). Checked against the whole graph
on the realistic shapes' placements too: tests/runtimes/llamacpp/compute/test_layers.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan.runtimes.llamacpp.compute.ggml import Graph
from kvplan.runtimes.llamacpp.compute.tensor import Tensor

if TYPE_CHECKING:
    from kvplan.runtimes.llamacpp.compute.alloc import GraphAllocator

#: the periods kept of a repeating stretch of layers, and the longest period looked for (Gemma 3: 6; a Q4_K_M's
#: mixed types: 3)
KEPT = 3
MAX_PERIOD = 8
#: the periods dropped in the second attempt come in multiples of this: the allocator's free blocks may cycle
#: through two, three or four layouts from one layer to the next (Snowflake Arctic's: three); Probe proves it
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


@dataclass(frozen=True)
class Stretch:
    """A run of layers whose signatures repeat: `periods` periods of `period` layers from layer `start`, of which
    the first `kept` periods are built."""

    start: int
    period: int
    periods: int
    kept: int

    @property
    def boundaries(self) -> range:
        """The first layer of each kept period: where the allocator's state is compared (Probe)."""
        return range(self.start, self.start + self.kept * self.period, self.period)


def shortening(
    signatures: Sequence[Hashable], kept_periods: int = KEPT, max_period: int = MAX_PERIOD, dropped_in: int = DROPPED_IN
) -> tuple[tuple[int, ...], tuple[Stretch, ...]]:
    """The layers to build and the stretches shortened: from each stretch whose signatures repeat with a period p
    (the shortest saving most) for more than `kept_periods` periods, its first periods — `kept_periods` and
    those left over from dropping multiples of `dropped_in` periods; every other layer."""
    codes: dict[Hashable, int] = {}
    sig = [codes.setdefault(s, len(codes)) for s in signatures]
    n = len(sig)
    out: list[int] = []
    runs: list[Stretch] = []
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
        runs.append(Stretch(i, p, periods, periods - saved // p))
        i += periods * p
    return tuple(out), tuple(runs)


class Probe:
    """The proof that a shortened graph allocates as the whole one does. ggml's allocator walks the graph in
    order, so within a stretch each period maps the allocator's state at its first node to the state at the next
    period's by one and the same function (the periods' graphs are alike, and the tensors shared by every
    period — the inputs, a layer before the stretch — are freed in none but the last). Once the state at one
    period's start equals the state c periods later, it repeats every c periods for the rest of the stretch; so
    when two kept periods' states a < b agree and the periods dropped are a multiple of b − a, the state after
    the kept periods is the whole stretch's, and every later allocation, the peak and what is live at the peak
    are the whole graph's. A state: each buffer's free blocks and chunk sizes, and each live tensor's place and
    remaining uses, the tensors of the stretch named relative to the period (the tensors shared by every period
    by identity, their remaining uses only as 'some'). A graph whose stretches are not proven so is planned
    again with more periods kept, or whole."""

    def __init__(self, g: Graph, runs: Sequence[Stretch]) -> None:
        self.runs = [r for r in runs if r.kept < r.periods]  # (nothing dropped: nothing to prove)
        self.where: dict[int, tuple[int, int]] = {}  # a stretch tensor's (layer, place in its layer's tensors)
        layers = {il: k for k, r in enumerate(self.runs) for il in range(r.start, r.start + r.kept * r.period)}
        counts: dict[int, int] = {}
        for lst in (g.leafs, g.nodes):
            for t in lst:
                if t.born in layers:
                    self.where[id(t)] = (t.born, counts.get(t.born, 0))
                    counts[t.born] = counts.get(t.born, 0) + 1
        self.states: dict[tuple[int, int], Hashable] = {}

    def marks(self, nodes: Sequence[Tensor]) -> dict[int, tuple[int, int]]:
        """The node index where each kept period begins (its first layer's first node) → (stretch, period)."""
        wanted = {il: (k, j) for k, r in enumerate(self.runs) for j, il in enumerate(r.boundaries)}
        out: dict[int, tuple[int, int]] = {}
        for i, t in enumerate(nodes):
            at = wanted.get(t.born)
            if at is not None and id(t) in self.where:
                out[i] = at
                del wanted[t.born]
                if not wanted:
                    break
        return out

    def callbacks(
        self, alloc: GraphAllocator, nodes: Sequence[Tensor], copies: Mapping[int, tuple[Tensor, Hashable]]
    ) -> dict[int, Callable[[], None]]:
        """For the allocator: at each kept period's first node, record its state."""
        out: dict[int, Callable[[], None]] = {}
        for i, (k, j) in self.marks(nodes).items():

            def read(k: int = k, j: int = j) -> None:
                layer = self.runs[k].boundaries[j]
                self.states[(k, j)] = alloc.state(lambda t: self.name(t, k, layer, copies))

            out[i] = read
        return out

    def name(
        self, t: Tensor, run: int, layer: int, copies: Mapping[int, tuple[Tensor, Hashable]]
    ) -> tuple[Hashable, bool]:
        """A live tensor's name at a period's start (`layer`), and whether its remaining uses count: a tensor of the
        stretch relative to the period, a scheduler's copy by what it copies (counted as that is), any other by
        identity (counted, except the inputs, which every period reads)."""
        made = copies.get(id(t))
        if made is not None:  # (a copy of a tensor every period reads is read by every period too)
            src, counted = self.name(made[0], run, layer, copies)
            return ("copy", src, made[1]), counted
        at = self.where.get(id(t))
        r = self.runs[run]
        if at is not None and r.start <= at[0] < r.start + r.kept * r.period:
            return ("rel", at[0] - layer, at[1]), True
        return ("id", id(t)), t.born >= 0

    def proven(self) -> bool:
        """Every stretch: two kept periods' states agree, a multiple of their distance dropped."""
        for k, r in enumerate(self.runs):
            states = [self.states.get((k, j)) for j in range(r.kept)]
            if not any(
                states[a] is not None and states[a] == states[b] and (r.periods - r.kept) % (b - a) == 0
                for b in range(1, r.kept)
                for a in range(b)
            ):
                return False
        return True
