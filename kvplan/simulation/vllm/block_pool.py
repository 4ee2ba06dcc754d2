"""vLLM 0.33's BlockPool (vllm/v1/core/block_pool.py): the free queue, the prefix cache's hashed blocks."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from kvplan.simulation.vllm.request import BlockKey, cdiv


class BlockPool:
    """vllm.v1.core.block_pool.BlockPool: block 0 is the null block; the free queue in eviction order."""

    def __init__(self, num_blocks: int, caching: bool) -> None:
        self.caching = caching
        self.ref = [0] * num_blocks
        self.free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(1, num_blocks))
        self.hash_of: dict[int, BlockKey] = {}
        #: a hash's blocks in the order they were cached: one block, or a list of them (a prefix computed twice)
        self.cached: dict[BlockKey, int | list[int]] = {}

    def num_free(self) -> int:
        return len(self.free)

    def get_new_blocks(self, n: int) -> list[int]:
        pop, hash_of, ref, cached = self.free.popitem, self.hash_of, self.ref, self.cached
        out = [pop(last=False)[0] for _ in range(n)]
        for block in out:
            if block in hash_of:  # evicted from the prefix cache (uncache, inlined)
                key = hash_of.pop(block)
                holders = cached[key]
                if holders.__class__ is int:
                    del cached[key]
                else:
                    self.uncache_from(key, block)
            ref[block] += 1
        return out

    def uncache_from(self, key: BlockKey, block: int) -> None:
        """One of several blocks cached under ``key`` dropped (its hash already popped)."""
        holders = self.cached[key]
        assert isinstance(holders, list)
        holders.remove(block)
        if len(holders) == 1:
            self.cached[key] = holders[0]

    def touch(self, blocks: Sequence[int]) -> None:
        for block in blocks:
            if self.ref[block] == 0:
                del self.free[block]
            self.ref[block] += 1

    def free_blocks(self, ordered: Iterable[int]) -> None:
        first: list[int] = []
        last: list[int] = []
        ref, hash_of, free = self.ref, self.hash_of, self.free
        hashed = hash_of if self.caching else {}
        for block in ordered:
            left = ref[block] - 1
            ref[block] = left
            if left == 0:
                (last if block in hashed else first).append(block)
        for block in reversed(first):
            free[block] = None
            free.move_to_end(block, last=False)
        for block in last:
            free[block] = None

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
