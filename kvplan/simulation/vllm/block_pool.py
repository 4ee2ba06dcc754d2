"""vLLM 0.33's BlockPool (vllm/v1/core/block_pool.py): the free queue, the prefix cache's hashed blocks.

vLLM keeps the free blocks in a doubly linked list (``FreeKVCacheBlockQueue``): blocks are taken from its front,
a freed block goes to its back — or, unhashed, to its front (``free_blocks``) —, and a cached block that a request
hits is taken out of its middle (``touch``). The port keeps the same order in two Python lists, so that a
request's blocks move in slices rather than one by one (an hour's simulation moves millions of blocks):

- ``_tail[_head:]``: the back part of the queue, in order. Each entry has a position, ``_off`` + its index,
  that never changes; the positions below ``_off + _head`` have been taken;
- ``_front``: the unhashed blocks put before it, a stack (``_front[-1]`` is the queue's first block). Only a
  hashed block can be hit, so no block leaves the front but from its top;
- a hit takes a block out of the middle: its entry stays, its position marked stale (``_stale``), and the queue
  skips it when it comes to it;
- ``_slot``: the position of each block cached here, in ``cached`` / ``hash_of``, that waits in the tail (vLLM's
  hashes by key). A block is free (vLLM: ``ref_cnt == 0``) while its position is live (``is_free``). The
  plain manager keeps a request's own hashes itself (``KVCacheManager``: positions, not keys);
- ``_extra``: the references beyond one of a block in use (vLLM's ``ref_cnt`` - 1: a cached block several
  requests share); a block in use and not in it has one.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from itertools import compress, count, repeat
from operator import is_not, not_

from kvplan.simulation.vllm.request import BlockKey, cdiv


class BlockPool:
    """vllm.v1.core.block_pool.BlockPool: block 0 is the null block; the free queue in eviction order."""

    def __init__(self, num_blocks: int, caching: bool) -> None:
        self.caching = caching
        self._front: list[int] = []
        self._tail: list[int] = list(range(1, num_blocks))
        self._head = 0
        self._off = 0
        self._slot: dict[int, int] = {}  # the initial blocks are unhashed: never hit
        self._stale: set[int] = set()
        self._stale_order: list[int] = []  # the stale positions, a heap
        self._free = num_blocks - 1
        self._extra: dict[int, int] = {}
        self.hash_of: dict[int, BlockKey] = {}
        #: a hash's blocks in the order they were cached: one block, or a list of them (a prefix computed twice)
        self.cached: dict[BlockKey, int | list[int]] = {}

    def num_free(self) -> int:
        return self._free

    def tail_end(self) -> int:
        """The position the next block appended to the tail gets."""
        return self._off + len(self._tail)

    def live(self, position: int) -> bool:
        """The tail's entry at ``position`` still holds its block in the queue."""
        return position >= self._off + self._head and position not in self._stale

    def is_free(self, block: int) -> bool:
        """A hashed block is in the free queue (vLLM: ref_cnt == 0)."""
        s = self._slot.get(block)
        return s is not None and self.live(s)

    def place(self, block: int, position: int) -> None:
        """A block the caller knows to be free at ``position`` (a request's own cached block it hits)."""
        self._slot[block] = position

    def get_new_blocks(self, n: int) -> list[int]:
        """The first ``n`` blocks of the free queue, each evicted from the prefix cache if it was cached."""
        assert n <= self._free
        self._free -= n
        front = self._front
        if n == 1 and not self._stale:  # a decoding request's next block: the path below for one block
            if front:
                block = front.pop()
            else:
                head = self._head
                block = self._tail[head]
                self._head = head + 1
                if head >= 4096:
                    self._compact()
            if self.hash_of:
                self._evict([block])
            return [block]
        if len(front) >= n:
            out = front[: -n - 1 : -1]
            del front[-n:]
        else:
            out = front[::-1]
            front.clear()
            self._take_tail(out, n - len(out))
        if self.hash_of:
            self._evict(out)
        return out

    def _take_tail(self, out: list[int], n: int) -> None:
        tail, head = self._tail, self._head
        start = self._off + head
        order = self._stale_order
        if order and order[0] < start + n:  # stale entries among them: one at a time
            stale = self._stale
            while n:
                position = self._off + head
                if order and order[0] == position:
                    heapq.heappop(order)
                    stale.discard(position)
                else:
                    out.append(tail[head])
                    n -= 1
                head += 1
        else:
            out.extend(tail[head : head + n])
            head += n
        self._head = head
        if head > 4096:
            self._compact()

    def _compact(self) -> None:
        """The tail's taken part dropped, once it is the larger part."""
        head = self._head
        if head * 2 > len(self._tail):
            del self._tail[:head]
            self._off += head
            self._head = 0

    def _evict(self, out: list[int]) -> None:
        """The taken blocks' hashes dropped (vLLM's _maybe_evict_cached_block)."""
        keys = list(map(self.hash_of.pop, out, repeat(None)))
        evicted = list(filter(None, keys))  # a key is a non-empty tuple
        if not evicted:
            return
        cached = self.cached
        if list not in set(map(type, map(cached.get, evicted))):
            list(map(cached.pop, evicted))  # one block under each hash: the hashes gone
            return
        for key, block in zip(evicted, compress(out, map(is_not, keys, repeat(None))), strict=True):
            if cached[key].__class__ is int:
                del cached[key]
            else:  # a prefix computed twice: the others stay cached
                self.uncache_from(key, block)

    def uncache_from(self, key: BlockKey, block: int) -> None:
        """One of several blocks cached under ``key`` dropped (its hash already popped)."""
        holders = self.cached[key]
        assert isinstance(holders, list)
        holders.remove(block)
        if len(holders) == 1:
            self.cached[key] = holders[0]

    def touch(self, blocks: Sequence[int]) -> None:
        """A request's hits: a free block taken out of the queue, a block in use one more reference."""
        extra, slot = self._extra, self._slot
        for block in blocks:
            if self.is_free(block):
                position = slot.pop(block)
                self._stale.add(position)
                heapq.heappush(self._stale_order, position)
                self._free -= 1
            else:
                extra[block] = extra.get(block, 0) + 1

    def _unref(self, blocks: list[int]) -> list[int]:
        """A reference dropped from each block; those left with none."""
        extra = self._extra
        if not extra or extra.keys().isdisjoint(blocks):
            return blocks
        freed = []
        for block in blocks:
            left = extra.get(block)
            if left is None:
                freed.append(block)
            elif left == 1:
                del extra[block]
            else:
                extra[block] = left - 1
        return freed

    def free_blocks(self, ordered: Iterable[int]) -> None:
        """A reference dropped from each block; those left with none go back to the queue: unhashed ones to the
        front (the first of ``ordered`` first), hashed ones to the back (in ``ordered``'s order)."""
        blocks = self._unref(list(ordered))
        if self.caching and self.hash_of:
            hashed = list(map(self.hash_of.__contains__, blocks))
            self.release(list(compress(blocks, map(not_, hashed))), [], list(compress(blocks, hashed)))
        else:
            self.release(blocks, [], [])

    def release(self, unhashed: list[int], own: list[int], keyed: list[int]) -> None:
        """Free blocks back to the queue: ``unhashed`` to the front (its first first), then ``own`` (hashed, whose
        positions the caller keeps) and ``keyed`` (hashed here) to the back, in their order."""
        if unhashed:
            self._front.extend(reversed(unhashed))
        tail = self._tail
        if own:
            tail.extend(own)
        if keyed:
            self._slot.update(zip(keyed, count(self._off + len(tail))))
            tail.extend(keyed)
        self._free += len(unhashed) + len(own) + len(keyed)

    def release_request(self, blocks: list[int], hashed: int, keyed: int) -> None:
        """A request's blocks freed, last first (``free_blocks(reversed(blocks))``), its first ``hashed`` cached —
        the first ``keyed`` of them hashed here by key, the others its own —; ``keyed`` ones other requests
        still hold stay out."""
        keyed_free = self._unref(blocks[:keyed][::-1])
        self.release(blocks[hashed:][::-1], blocks[keyed:hashed][::-1], keyed_free)

    def cached_block(self, key: BlockKey) -> int | None:
        """The first block cached under the hash that is still cached (vLLM's get_one_block)."""
        holders = self.cached.get(key)
        return holders if holders is None or isinstance(holders, int) else holders[0]

    def cache(self, block: int, key: BlockKey) -> None:
        if block in self.hash_of:
            return
        self.hash_of[block] = key
        holders = self.cached.get(key)
        if holders is None:
            self.cached[key] = block
        elif isinstance(holders, int):
            self.cached[key] = [holders, block]
        else:
            holders.append(block)

    def uncache(self, block: int) -> None:
        """The block's hash dropped (it is reused, or its cached state is superseded)."""
        key = self.hash_of.pop(block, None)
        if key is None:
            return
        if isinstance(self.cached[key], int):
            del self.cached[key]
        else:
            self.uncache_from(key, block)

    def cached_run(self, keys: Iterable[BlockKey]) -> list[int] | None:
        """One cached block for each key (a block index across the groups), or None if one misses
        (get_cached_block over the coordinator's groups)."""
        out = []
        for key in keys:
            block = self.cached_block(key)
            if block is None:
                return None
            out.append(block)
        return out


def grow_blocks(pool: BlockPool, blocks: list[int], num_tokens: int, block_size: int) -> None:
    """allocate_new_blocks: new blocks so that ``blocks`` covers ``num_tokens``."""
    missing = cdiv(num_tokens, block_size) - len(blocks)
    if missing > 0:
        blocks.extend(pool.get_new_blocks(missing))


def release_blocks(pool: BlockPool, blocks: list[int]) -> None:
    """free: a request's blocks back to the pool, last first, null blocks left out."""
    pool.free_blocks(reversed([b for b in blocks if b != 0]))
