"""SGLang 0.5.23's radix cache over one full-attention token pool — its bookkeeping, not its indices.

Ported from sglang/srt/mem_cache/unified_cache/unified_tree_core.py (UnifiedTreeCore: _match_prefix_helper and
_match_post_processor, the insert walk with its overlap and commit steps, _split_node, _add_new_node, the
evictable-leaf set) and unified_cache/components/full.py (the eviction heap: device leaves by last access, a parent
pushed when its last child goes). Tokens are not stored: a request's sequence is its shared prefix (the same
tokens in every request), then tokens of its own, then its outputs; two sequences agree up to where they diverge.
With pages above one token, keys are whole pages (RadixKey.page_aligned, match_at page by page): a node's children
are told apart by their first page, and a match or split ends on a page boundary.
Access times are SGLang's global counter (``get_and_increase_time_counter``), advanced by the same events. Read
from the Python TreeCore; the recordings it is proven against ran SGLang's default, the Rust RustUnifiedTreeCore
its wheel bundles.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

INF = 1 << 62


@dataclass(slots=True, eq=False)
class Seq:
    """A request's token sequence, as far as equality goes."""

    rid: int
    prompt: int
    shared: int  # the leading tokens every request's prompt shares

    def page(self, p: int, size: int) -> tuple[int, ...]:
        """A stand-in for the ids of the page of ``size`` tokens at position p (equal where the real ids are)."""
        if p + size <= self.shared:
            return (0, p)
        if self.shared == self.prompt:
            return (3, self.prompt, p)  # all of the prompt shared: equal to every such sequence of its length
        return (1, self.rid, p)

    def diverge(self, other: Seq) -> int:
        """The length of the prefix the two sequences share."""
        if other is self or other.rid == self.rid:
            return INF
        if self.shared == self.prompt == other.prompt == other.shared:
            return INF  # the same prompt, all of it shared, then the same outputs
        return min(self.shared, other.shared)


@dataclass(slots=True, eq=False)
class Node:
    seq: Seq | None  # whose tokens the key holds (None: the root)
    start: int
    end: int
    parent: Node | None
    access: float
    children: dict[tuple[int, ...], Node] = field(default_factory=dict)
    lock: int = 0

    def __len__(self) -> int:
        return self.end - self.start

    def __lt__(self, other: Node) -> bool:
        return self.access < other.access


class RadixTree:
    """The tree, its evictable token count, and the tokens it frees back to the pool."""

    def __init__(self, page: int = 1) -> None:
        self.page = page
        self._clock = itertools.count(1)
        self.root = Node(None, 0, 0, None, 0.0)
        self.root.lock = 1
        self.evictable = 0
        # evictable_device_leaves: unlocked and childless, in order. Without a host tier an evicted leaf is deleted
        # (_delete_unbacked_device_leaf), so every node in the tree holds its KV.
        self.leaves: dict[Node, None] = {}
        self.freed = 0  # tokens given back to the pool by the last operation (eviction, duplicates)

    def _tick(self) -> int:
        return next(self._clock)

    def _new(self, seq: Seq | None, start: int, end: int, parent: Node | None) -> Node:
        access = self._tick()
        self._tick()  # UnifiedTreeNode.__init__ also stamps creation_time from the same counter
        return Node(seq, start, end, parent, access)

    def _split(self, child: Node, split_len: int) -> Node:
        """_split_node: the first split_len tokens of child become a new parent node."""
        assert child.parent is not None and child.seq is not None
        new = self._new(child.seq, child.start, child.start + split_len, child.parent)
        new.lock = child.lock
        new.children = {child.seq.page(child.start + split_len, self.page): child}
        child.parent.children[child.seq.page(child.start, self.page)] = new
        child.parent = new
        child.start += split_len
        child.access = self._tick()
        return new

    def _agree(self, seq: Seq, child: Node, pos: int, length: int) -> int:
        """How many of child's tokens seq[pos:length] matches, in whole pages (at least the first: the child
        was found by it)."""
        assert child.seq is not None
        agree = min(child.end, seq.diverge(child.seq), length) - pos
        return max(agree - agree % self.page, self.page)

    def match(self, seq: Seq, length: int) -> tuple[int, Node]:
        """match_prefix over seq[:length]: the cached prefix length and its last node (splitting a node the
        match ends inside), the path's access times refreshed."""
        length -= length % self.page
        node, pos = self.root, 0
        while pos < length:
            child = node.children.get(seq.page(pos, self.page))
            if child is None:
                break
            assert child.seq is not None
            agree = self._agree(seq, child, pos, length)
            if agree < len(child):
                node = self._split(child, agree)
                pos += agree
                break
            node = child
            pos += agree
        now: float = self._tick()
        n: Node | None = node
        while n is not None:
            n.access = now
            now -= 0.00001
            n = n.parent
        return pos, node

    def insert(self, seq: Seq, length: int, prev_prefix: int) -> Node:
        """insert (begin_insert and its walk): seq[:length] with the request's own KV; tokens another request
        cached meanwhile in [prev_prefix, ...) are duplicates, given back to the pool (``freed``). Returns the node
        the insert ends on."""
        self.freed = 0
        self.root.access = self._tick()
        length -= length % self.page
        node, pos = self.root, 0
        while pos < length:
            child = node.children.get(seq.page(pos, self.page))
            if child is None:
                break
            assert child.seq is not None
            child.access = self._tick()
            agree = self._agree(seq, child, pos, length)
            if agree < len(child):
                child = self._split(child, agree)
            dup_start = max(0, prev_prefix - pos)
            if dup_start < agree:
                self.freed += agree - dup_start
            node = child
            pos += agree
        if pos < length:
            leaf = self._new(seq, pos, length, node)
            node.children[seq.page(pos, self.page)] = leaf
            self.evictable += length - pos
            self.leaves.pop(node, None)
            self.leaves[leaf] = None
            node = leaf
        return node

    def lock(self, node: Node) -> None:
        n: Node | None = node
        while n is not None and n is not self.root:
            if n.lock == 0:
                self.evictable -= len(n)
                self.leaves.pop(n, None)
            n.lock += 1
            n = n.parent

    def unlock(self, node: Node) -> None:
        n: Node | None = node
        while n is not None and n is not self.root:
            n.lock -= 1
            if n.lock == 0:
                self.evictable += len(n)
                if not n.children:
                    self.leaves[n] = None
            n = n.parent

    def evict(self, tokens: int) -> int:
        """Evict device leaves, least recently used first, until ``tokens`` are freed; the tokens freed."""
        heap = [(n.access, n) for n in self.leaves]
        heapq.heapify(heap)
        freed = 0
        while freed < tokens and heap:
            _, n = heapq.heappop(heap)
            parent = n.parent
            assert parent is not None and n.seq is not None
            freed += len(n)
            self.evictable -= len(n)
            del parent.children[n.seq.page(n.start, self.page)]
            del self.leaves[n]
            if parent is not self.root and not parent.children and parent.lock == 0:
                self.leaves[parent] = None
                heapq.heappush(heap, (parent.access, parent))
        return freed
