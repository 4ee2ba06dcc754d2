"""SGLang 0.5.23's radix cache — its bookkeeping, not its indices: the full component, and beside it the SWA or the
Mamba component (unified_cache/components/swa.py, mamba.py) where the model has one.

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
from collections import OrderedDict
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
    # the sliding-window component (a hybrid SWA model): whether the node holds its tokens' SWA KV (False: a
    # tombstone — the full KV stays), the window locks on it, and its place in the SWA LRU list
    swa: bool = False
    swa_lock: int = 0
    prev: Node | None = None
    next: Node | None = None
    # the Mamba component (a Mamba hybrid): whether the node holds a state checkpoint at its end (one slot of the
    # Mamba pool), and the locks on that state
    state: bool = False
    state_lock: int = 0

    def __len__(self) -> int:
        return self.end - self.start

    def __lt__(self, other: Node) -> bool:
        return self.access < other.access


class Lru:
    """The SWA component's LRU list (UnifiedLRUList without sessions): most recent first."""

    def __init__(self) -> None:
        self.head = Node(None, 0, 0, None, 0.0)
        self.tail = Node(None, 0, 0, None, 0.0)
        self.head.next, self.tail.prev = self.tail, self.head

    def __contains__(self, node: Node) -> bool:
        return node.prev is not None

    def insert_after(self, prev: Node, node: Node) -> None:
        after = prev.next
        assert after is not None
        node.prev, node.next = prev, after
        prev.next = after.prev = node

    def insert_mru(self, node: Node) -> None:
        self.insert_after(self.head, node)

    def remove(self, node: Node) -> None:
        before, after = node.prev, node.next
        assert before is not None and after is not None
        before.next, after.prev = after, before
        node.prev = node.next = None

    def refresh(self, node: Node, root: Node, window: int) -> None:
        """reset_node_and_window_ancestors_mru: the node and its ancestors holding SWA KV, until ``window`` tokens
        of path are covered, become the most recent, the node first."""
        prev, covered = self.head, 0
        n: Node | None = node
        while n is not None and n is not root and covered < window:
            if n.swa:
                self.remove(n)
                self.insert_after(prev, n)
                prev = n
            covered += len(n)
            n = n.parent

    def prev_unlocked(self, node: Node) -> Node | None:
        """get_prev_no_lock: the next more recent node without a window lock (None: none left)."""
        x = node.prev
        while x is not None and x.swa_lock > 0:
            x = x.prev
        return None if x is None or x is self.head else x


class RadixTree:
    """The tree, its evictable token count, and the tokens it frees back to the pool. ``window``: a hybrid
    sliding-window model's SWA component (SGLang's swa_retain_window) beside the full one. ``mamba``: a Mamba
    hybrid's component (components/mamba.py): a state checkpoint on the node it ends at, locked on that node alone,
    on an LRU list of its own."""

    def __init__(self, page: int = 1, window: int | None = None, mamba: bool = False) -> None:
        self.page = page
        self.window = window
        self.lru = Lru()
        self.swa_evictable = 0
        self.freed_swa = 0  # SWA tokens given back by the last insert (duplicates above the request's window)
        self.mamba = mamba
        self.states: OrderedDict[Node, None] = OrderedDict()  # the Mamba LRU list, least recent first
        self.mamba_evictable = 0
        self.state_existed = False  # the last insert ended on a node that already held a state (mamba_exist)
        self._clock = itertools.count(1)
        self.root = Node(None, 0, 0, None, 0.0)
        self.root.lock = 1
        self.evictable = 0
        # evictable_device_leaves: unlocked and childless, in order. Without a host tier an evicted leaf is deleted
        # (_delete_unbacked_device_leaf), so every node in the tree holds its KV.
        self.leaves: dict[Node, None] = {}
        # the full walk's heap of (last access, leaf), kept between evictions rather than built from every leaf at
        # each one: a leaf is pushed when it becomes evictable and when its access changes; an entry whose node
        # is no longer an evictable leaf, or has been accessed since, is stale and skipped. Accesses are distinct
        # ticks, so the order is the one a heap of every leaf gives (SGLang's evict builds that heap each time).
        self._heap: list[tuple[float, Node]] = []
        self.freed = 0  # tokens given back to the pool by the last operation (eviction, duplicates)

    def _tick(self) -> int:
        return next(self._clock)

    def _new(self, seq: Seq | None, start: int, end: int, parent: Node | None) -> Node:
        access = self._tick()
        self._tick()  # UnifiedTreeNode.__init__ also stamps creation_time from the same counter
        return Node(seq, start, end, parent, access)

    def _split(self, child: Node, split_len: int) -> Node:
        """_split_node: the first split_len tokens of child become a new parent node (its locks and, when the
        child holds SWA KV, its SWA KV, just behind the child in the LRU list)."""
        assert child.parent is not None and child.seq is not None
        new = self._new(child.seq, child.start, child.start + split_len, child.parent)
        new.lock = child.lock
        new.swa_lock = child.swa_lock
        new.children = {child.seq.page(child.start + split_len, self.page): child}
        child.parent.children[child.seq.page(child.start, self.page)] = new
        child.parent = new
        child.start += split_len
        if child.swa:
            new.swa = True
            self.lru.insert_after(child, new)
        child.access = self._tick()
        self._accessed(child)
        return new

    def _agree(self, seq: Seq, child: Node, pos: int, length: int) -> int:
        """How many of child's tokens seq[pos:length] matches, in whole pages (at least the first: the child
        was found by it)."""
        assert child.seq is not None
        agree = min(child.end, seq.diverge(child.seq), length) - pos
        return max(agree - agree % self.page, self.page)

    def match(self, seq: Seq, length: int) -> tuple[int, Node, int]:
        """match_prefix over seq[:length]: the cached prefix length and its last node (splitting a node the
        match ends inside), the path's access times refreshed, and the length the full KV alone matched. With an
        SWA component the prefix ends on the deepest node behind which a whole window of SWA KV is live (the SWA
        match validator), and that window's nodes become the most recent in the SWA LRU list."""
        length -= length % self.page
        node, pos = self.root, 0
        best, best_pos = node, 0
        window, mamba = self.window, self.mamba
        run = INF  # the live SWA tokens just behind the node
        while pos < length:
            child = node.children.get(seq.page(pos, self.page))
            if child is None:
                break
            assert child.seq is not None
            agree = self._agree(seq, child, pos, length)
            split = agree < len(child)
            node = self._split(child, agree) if split else child
            pos += agree
            valid = True
            if window is not None:
                run = run + len(node) if node.swa else 0
                valid = run >= window
            if valid and (not mamba or node.state):  # a Mamba prefix ends on a node holding its state
                best, best_pos = node, pos
            if split:
                break
        if window is not None:
            self.lru.refresh(best, self.root, window + self.page)
        if mamba and best.state:
            self.states.move_to_end(best)
        now: float = self._tick()
        n: Node | None = best
        while n is not None:
            n.access = now
            self._accessed(n)
            now -= 0.00001
            n = n.parent
        return best_pos, best, pos

    def insert(self, seq: Seq, length: int, prev_prefix: int, evicted: int = 0) -> Node:
        """insert (begin_insert and its walk): seq[:length] with the request's own KV; tokens another request
        cached meanwhile in [prev_prefix, ...) are duplicates, given back to the pool (``freed``; ``freed_swa``: of
        them, the SWA KV the request still held, at or above ``evicted``). With an SWA component the request's SWA
        KV below ``evicted`` is gone: the new leaf is a tombstone there, its live part capped at one window, and a
        tombstoned node the insert covers inside the window takes the request's SWA KV back (the overlap step).
        Returns the node the insert ends on."""
        self.freed = self.freed_swa = 0
        self.state_existed = False
        self.root.access = self._tick()
        length -= length % self.page
        window = self.window
        node, pos = self.root, 0
        while pos < length:
            child = node.children.get(seq.page(pos, self.page))
            if child is None:
                break
            assert child.seq is not None
            child.access = self._tick()
            self._accessed(child)
            agree = self._agree(seq, child, pos, length)
            if agree < len(child):
                child = self._split(child, agree)
            consumed = agree
            if window is not None and prev_prefix < pos + agree and not child.swa:
                consumed = self._recover(child, pos, pos + agree, evicted)
            dup_start = max(0, prev_prefix - pos)
            if dup_start < consumed:
                dup = consumed - dup_start
                self.freed += dup
                self.freed_swa += dup - min(max(evicted - pos - dup_start, 0), dup)
            node = child
            pos += agree
        if pos < length:
            leaf = self._new(seq, pos, length, node)
            node.children[seq.page(pos, self.page)] = leaf
            self.evictable += length - pos
            self.leaves.pop(node, None)
            self._evictable(leaf)
            node = leaf
            if window is not None:
                self._populate(leaf, pos, length, evicted, window)
            if self.mamba:
                self._hold_state(leaf)
        elif self.mamba and node is not self.root:
            self._commit_state(node)
        if window is not None and node is not self.root:
            self.lru.refresh(node, self.root, window + self.page)
        return node

    def _hold_state(self, node: Node) -> None:
        """The inserting request's state checkpoint moves onto the node (the most recent on the Mamba list)."""
        node.state = True
        self.states[node] = None
        self.state_existed = False
        if node.state_lock == 0:
            self.mamba_evictable += 1

    def _recover(self, child: Node, start: int, end: int, evicted: int) -> int:
        """update_component_on_insert_overlap (SWA): a tombstoned node the insert walks takes the request's SWA KV
        back from ``evicted`` on (_clip_to_window, _recover_from_incoming) — the locked full KV kept and the request's
        freed, or the request's adopted and the old freed. Returns how much of the node stays a duplicate."""
        live = max(start, evicted)
        if live >= end:
            return end - start
        if live > start:
            self._split(child, live - start)
        self.freed += end - live
        self._publish(child)
        return live - start

    def _commit_state(self, node: Node) -> None:
        """commit_insert_component_data (Mamba) on a node the insert ended on: it takes the request's state, or
        keeps its own (state_existed: the request's is spare)."""
        if node.state:
            self.states.move_to_end(node)
            self.state_existed = True
        else:
            self._hold_state(node)
        node.access = self._tick()
        self._accessed(node)

    def _populate(self, leaf: Node, start: int, end: int, evicted: int, window: int) -> None:
        """commit_insert_component_data for a new leaf: SWA KV from ``evicted`` on (_clip_to_window splits off the
        tombstone before it), the live part capped at one window (_maybe_split_leaf_for_swa_lock), the older part
        published first."""
        live = max(start, evicted)
        if live >= end:
            return
        if live > start:
            self._split(leaf, live - start)
        parent = None
        tail = -(-window // self.page) * self.page
        size = len(leaf)
        if leaf.swa_lock == 0 and size > tail and (self.page == 1 or size % self.page == 0):
            parent = self._split(leaf, size - tail)
        if parent is not None:
            self._publish(parent)
        self._publish(leaf)

    def _publish(self, node: Node) -> None:
        """set_component_device_value (SWA): the node holds SWA KV, the most recent in the LRU list."""
        node.swa = True
        self.lru.insert_mru(node)
        if node.swa_lock == 0:
            self.swa_evictable += len(node)

    def _push(self, node: Node) -> None:
        heap = self._heap
        heapq.heappush(heap, (node.access, node))
        if len(heap) > 2 * len(self.leaves) + 64:  # mostly stale: rebuilt from the leaves
            heap[:] = [(n.access, n) for n in self.leaves]
            heapq.heapify(heap)

    def _evictable(self, node: Node) -> None:
        self.leaves[node] = None
        self._push(node)

    def _accessed(self, node: Node) -> None:
        if node in self.leaves:
            self._push(node)

    def _leaf(self, node: Node) -> None:
        """_update_evictable_leaf_sets: an evictable leaf is childless and unlocked in every component."""
        if node is not self.root and not node.children and not (node.lock or node.swa_lock or node.state_lock):
            self._evictable(node)
        else:
            self.leaves.pop(node, None)

    def lock(self, node: Node) -> int | None:
        """inc_lock_ref: the full KV up to the root and, with an SWA component, the last window of the path
        (tombstones counted); returns where that window starts (None: it reached the root), which the unlock needs."""
        n: Node | None = node
        while n is not None and n is not self.root:
            if n.lock == 0:
                self.evictable -= len(n)
                self.leaves.pop(n, None)
            n.lock += 1
            n = n.parent
        if self.mamba and node is not self.root:  # the state on the node itself
            if node.state_lock == 0 and node.state:
                self.mamba_evictable -= 1
            node.state_lock += 1
        window = self.window
        if window is None:
            return None
        n, covered = node, 0
        while n is not None and n is not self.root and covered < window:
            if n.swa_lock == 0 and n.swa:
                self.swa_evictable -= len(n)
            n.swa_lock += 1
            covered += len(n)
            if covered >= window:
                return n.start
            n = n.parent
        return None

    def unlock(self, node: Node, boundary: int | None = None) -> None:
        """dec_lock_ref: the SWA window lock first (down to the node that started at ``boundary`` when locked —
        SGLang's lock uuid, which moves with that start when the node splits), then the full lock."""
        if self.mamba and node is not self.root:
            node.state_lock -= 1
            if node.state_lock == 0:
                if node.state:
                    self.mamba_evictable += 1
                self._leaf(node)
        if self.window is not None:
            m: Node | None = node
            while m is not None and m is not self.root:
                m.swa_lock -= 1
                if m.swa_lock == 0:
                    if m.swa:
                        self.swa_evictable += len(m)
                    self._leaf(m)
                if boundary is not None and m.start <= boundary:
                    break
                m = m.parent
        n: Node | None = node
        while n is not None and n is not self.root:
            n.lock -= 1
            if n.lock == 0:
                self.evictable += len(n)
                if not n.children and n.swa_lock == 0 and not n.state_lock:
                    self._evictable(n)
            n = n.parent

    def _delete(self, n: Node) -> None:
        """_delete_unbacked_device_leaf: the leaf and its KV in every component go."""
        parent = n.parent
        assert parent is not None and n.seq is not None
        self.evictable -= len(n)
        if n.swa:
            self.swa_evictable -= len(n)
            self.lru.remove(n)
        if n.state:
            self.mamba_evictable -= 1
            del self.states[n]
        del parent.children[n.seq.page(n.start, self.page)]
        del self.leaves[n]
        self._leaf(parent)

    def evict_for(self, full: int, swa: int, states: int) -> tuple[int, int, int]:
        """evict_for_alloc with components beside the full one, for shortfalls of ``full`` tokens, ``swa`` SWA
        tokens and ``states`` Mamba slots (each pool's target is its free count plus its shortfall, so a walk ends
        once it has freed its shortfall, what the walks before it freed counted): the full walk (leaves, least
        recently used first), then each component's walk over its own LRU list from its oldest unlocked node — a
        leaf goes whole, any other node loses that component's data alone. Returns the (full, SWA, Mamba) freed."""
        got = [0, 0, 0]
        if full > 0:
            self._walk_full(full, got)
        if swa > 0:
            self._walk_swa(swa, got)
        if states > 0:
            self._walk_states(states, got)
        return got[0], got[1], got[2]

    def _gone(self, n: Node, got: list[int]) -> None:
        """A leaf evicted whole: its full KV, its SWA KV and its state."""
        got[0] += len(n)
        if n.swa:
            got[1] += len(n)
        got[2] += n.state
        self._delete(n)

    def _walk_full(self, full: int, got: list[int]) -> None:
        """The full component's walk: evictable leaves by last access, a parent that becomes one pushed (by
        ``_leaf``, as the leaf under it goes)."""
        heap, leaves = self._heap, self.leaves
        while got[0] < full and heap:
            access, n = heapq.heappop(heap)
            if n in leaves and n.access == access:
                self._gone(n, got)

    def _walk_swa(self, swa: int, got: list[int]) -> None:
        """The SWA component's walk over its LRU list (the cursor moves on before a node goes; a cursor gone
        meanwhile starts again from the oldest)."""
        lru = self.lru
        cursor = lru.prev_unlocked(lru.tail)
        while got[1] < swa:
            if cursor is not None and cursor not in lru:
                cursor = lru.prev_unlocked(lru.tail)
            if cursor is None:
                break
            x = cursor
            cursor = lru.prev_unlocked(x)
            if x in self.leaves:
                self._gone(x, got)
            else:  # an internal node (or one the full KV keeps locked): its SWA KV alone
                x.swa = False
                lru.remove(x)
                self.swa_evictable -= len(x)
                got[1] += len(x)

    def _walk_states(self, states: int, got: list[int]) -> None:
        """The Mamba component's walk over its LRU list, the oldest unlocked state first."""
        for x in list(self.states):  # a node evicted meanwhile or locked is passed over
            if got[2] >= states:
                break
            if x not in self.states or x.state_lock > 0:
                continue
            if x in self.leaves:
                self._gone(x, got)
            else:  # an internal node: its state alone
                x.state = False
                del self.states[x]
                self.mamba_evictable -= 1
                got[2] += 1
