"""vLLM 0.33's KVCacheManager over one full-attention group, and the groups without prefix caching
(vllm/v1/core/kv_cache_manager.py, single_type_kv_cache_manager.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kvplan.simulation.vllm.block_pool import BlockPool, grow_blocks, release_blocks
from kvplan.simulation.vllm.request import Request, cdiv


@dataclass(slots=True)
class _OwnHashes:
    """A preempted request's own cached blocks, as vLLM's cached_block_hash_to_block holds them for its hashes:
    each block index's holders in the order they were cached, and where each waits in the free queue (the
    position its request's latest free gave it: the block still holds the hash while that entry is live)."""

    holders: dict[int, list[int]] = field(default_factory=dict)
    index_of: dict[int, int] = field(default_factory=dict)
    position: dict[int, int] = field(default_factory=dict)

    def cache(self, block: int, index: int) -> None:
        """A block newly cached under the request's hash of block ``index`` (after any still cached). A block
        that held one of its hashes before was evicted since (it was taken from the queue): that one is gone."""
        before = self.index_of.get(block)
        if before is not None:
            self.holders[before].remove(block)
        self.holders.setdefault(index, []).append(block)
        self.index_of[block] = index


class KVCacheManager:
    """KVCacheManager over one full-attention group (UnitaryKVCacheCoordinator + FullAttentionManager).

    A block's hash is the shared prompt prefix's (``(-1, index)``: any request may hit it) or the request's own
    (``(rid, index)``: only the request itself can hit it, after a preemption). The shared ones live in the
    pool's ``cached`` / ``hash_of`` as in vLLM. The own ones cost nothing until a request is preempted: its
    cached blocks are its first ``num_cached``, and only a request that may come back can hit them. When one is
    preempted its own hashes are written out (``_OwnHashes``), kept as it caches more, and a block holds its
    hash while its entry in the free queue is live — being taken from the queue (``get_new_blocks``) is what
    evicts it in vLLM. A lookup finds what vLLM's finds, a block cached twice included (the earliest first).
    """

    def __init__(self, num_blocks: int, block_size: int, max_model_len: int, caching: bool) -> None:
        self.pool = BlockPool(num_blocks, caching)
        self.block_size = block_size
        self.max_model_len = max_model_len
        self.caching = caching
        self.req_blocks: dict[int, list[int]] = {}
        self.num_cached: dict[int, int] = {}
        self._own: dict[int, _OwnHashes] = {}  # the requests preempted with own hashes cached

    def computed_blocks(self, r: Request) -> tuple[list[int], int]:
        """get_computed_blocks: the longest run of cached full blocks, at most num_tokens - 1 tokens."""
        if not self.caching:
            return [], 0
        bs = self.block_size
        shared = r.shared_prefix // bs
        own = self._own.get(r.rid)
        pool = self.pool
        hits: list[int] = []
        for index in range(min(r.num_tokens // bs, (r.num_tokens - 1) // bs)):
            block = pool.cached_block((-1, index)) if index < shared else None if own is None else self._hit(own, index)
            if block is None:
                break
            hits.append(block)
        return hits, len(hits) * bs

    def _hit(self, own: _OwnHashes, index: int) -> int | None:
        """The first block still holding the request's own hash of block ``index`` (get_one_block); those taken
        from the queue since are evicted, as vLLM evicted them."""
        holders = own.holders.get(index)
        pool = self.pool
        while holders:
            block = holders[0]
            at = own.position[block]
            if pool.live(at):
                pool.place(block, at)
                return block
            del holders[0], own.index_of[block], own.position[block]
        return None

    def _to_allocate(self, r: Request, num_tokens: int, hits: Sequence[int]) -> int:
        required = cdiv(num_tokens, self.block_size)
        held = len(self.req_blocks.get(r.rid, ()))
        if r.rid in self.num_cached:
            return max(required - held, 0)
        evictable = sum(1 for b in hits if self.pool.is_free(b))
        return max(required - len(hits) - held, 0) + evictable

    def allocate_slots(
        self,
        r: Request,
        num_new: int,
        hits: Sequence[Any] = (),
        num_hit_tokens: int = 0,
        full_sequence_must_fit: bool = False,
    ) -> bool:
        if not hits and not full_sequence_must_fit:  # a running request's step: no new block in most steps
            blocks = self.req_blocks.get(r.rid)
            computed = r.num_computed
            if blocks is not None and min(computed + num_new, self.max_model_len) <= len(blocks) * self.block_size:
                # what the path below does then: nothing to allocate, only newly full blocks cached (a block is
                # full when the tokens reach its end: cache_blocks' own test, done here without the call)
                upto = min(computed + num_new, r.num_tokens)
                if self.caching and upto // self.block_size > self.num_cached.get(r.rid, 0):
                    self.cache_blocks(r, upto)
                return True
        local = r.num_computed + num_hit_tokens
        total = min(local, self.max_model_len)
        if full_sequence_must_fit:
            full = min(r.num_tokens, self.max_model_len)
            if self._to_allocate(r, full, hits) > self.pool.num_free():
                return False
        need_slot = min(total + num_new, self.max_model_len)
        if self._to_allocate(r, need_slot, hits) > self.pool.num_free():
            return False
        blocks = self.req_blocks.setdefault(r.rid, [])
        if hits:
            self.pool.touch(hits)
            blocks.extend(hits)
            self.num_cached[r.rid] = len(blocks)
        grow_blocks(self.pool, blocks, need_slot, self.block_size)
        self.cache_blocks(r, min(total + num_new, r.num_tokens))
        return True

    def cache_blocks(self, r: Request, num_tokens: int) -> None:
        if not self.caching:
            return
        bs = self.block_size
        done = self.num_cached.get(r.rid, 0)
        full = min(num_tokens, r.num_tokens // bs * bs) // bs
        if done >= full:
            return
        self.hash_blocks(r, self.req_blocks[r.rid], done, full)

    def hash_blocks(self, r: Request, blocks: list[int], done: int, full: int) -> None:
        """The request's blocks ``done`` to ``full`` (full ones) cached: those of the shared prefix under its
        hashes, the request's own by their count (``num_cached``)."""
        shared = min(r.shared_prefix // self.block_size, full)
        if done < shared:
            pool = self.pool
            hash_of, cached = pool.hash_of, pool.cached
            for index in range(done, shared):  # pool.cache(block, (-1, index)), inlined for a new hash
                block = blocks[index]
                key = (-1, index)
                if block in hash_of or key in cached:
                    pool.cache(block, key)
                else:
                    hash_of[block] = key
                    cached[key] = block
        own = self._own.get(r.rid)
        if own is not None:  # a request that came back: its own hashes kept block by block
            for index in range(max(done, shared), full):
                own.cache(blocks[index], index)
        self.num_cached[r.rid] = full

    def free(self, r: Request) -> None:
        rid = r.rid
        blocks = self.req_blocks.pop(rid, [])
        hashed = self.num_cached.pop(rid, 0)
        keyed = min(hashed, r.shared_prefix // self.block_size)
        pool = self.pool
        at = pool.tail_end() + hashed - 1  # where the own cached blocks go: the last one first
        pool.release_request(blocks, hashed, keyed)
        if r.finished:  # its own hashes can no longer be hit
            self._own.pop(rid, None)
            return
        if hashed == keyed:
            return
        own = self._own.get(rid)
        if own is None:  # its first preemption: each own cached block the one holder of its hash
            own = self._own[rid] = _OwnHashes()
            for index in range(keyed, hashed):
                own.cache(blocks[index], index)
        position = own.position
        for index in range(keyed, hashed):
            position[blocks[index]] = at - index

    def held(self, r: Request) -> int:
        return len(self.req_blocks.get(r.rid, ()))


@dataclass(frozen=True)
class GroupSpec:
    """One KV cache group: its block size and sliding window (0: full attention); ``state``: a Mamba /
    linear-attention group (MambaManager with mamba_cache_mode "none": a block of max_model_len tokens holds
    a request's state, and only the last computed token's state is kept)."""

    block_size: int
    window: int = 0
    state: bool = False
    chunked: bool = False  # the window is a chunk of chunked-local attention (Llama 4)

    def skipped(self, computed: int) -> int:
        """get_num_skipped_tokens: tokens whose blocks are no longer needed."""
        if self.state:
            return max(0, computed - 1)
        if self.chunked:
            return computed // self.window * self.window
        return max(0, computed - self.window + 1) if self.window else 0

    def admission_cap(self, in_flight: int, max_model_len: int) -> int | None:
        """max_admission_blocks_per_request (SlidingWindowSpec, ChunkedLocalAttentionSpec)."""
        if not self.window:
            return None
        if self.chunked:
            return cdiv(min(self.window + in_flight, max_model_len), self.block_size)
        return cdiv(min(self.window - 1 + in_flight, max_model_len), self.block_size) + 1


def free_skipped(pool: BlockPool, g: GroupSpec, blocks: list[int] | None, processed: int) -> None:
    """remove_skipped_blocks (sliding window, chunked local attention): the blocks no token can attend to any
    more, freed last first and nulled, back to the first one already null."""
    skipped = g.skipped(processed)
    if not skipped or not blocks:
        return
    freed = []
    for i in range(min(skipped // g.block_size, len(blocks)) - 1, -1, -1):
        if blocks[i] == 0:
            break
        freed.append(blocks[i])
        blocks[i] = 0
    pool.free_blocks(freed)


class GroupedKVCacheManager:
    """KVCacheManager over several groups without prefix caching (KVCacheCoordinatorNoPrefixCache with a
    FullAttentionManager or SlidingWindowManager per group, sharing one BlockPool): a sliding-window group
    frees the blocks that fall out of the window as a request is processed (remove_skipped_blocks, on the
    processed-token basis), and admission caps it at the recycling-aware bound
    (SlidingWindowSpec.max_admission_blocks_per_request)."""

    def __init__(self, num_blocks: int, groups: tuple[GroupSpec, ...], max_model_len: int, in_flight: int) -> None:
        self.pool = BlockPool(num_blocks, caching=False)
        self.groups = groups
        self.max_model_len = max_model_len
        self.caps = tuple(g.admission_cap(in_flight, max_model_len) for g in groups)
        self.req_blocks: tuple[dict[int, list[int]], ...] = tuple({} for _ in groups)  # 0 = the null block

    def computed_blocks(self, r: Request) -> tuple[list[int], int]:
        return [], 0

    def _to_allocate(self, r: Request, num_tokens: int, total: int, admission: bool) -> int:
        need = 0
        for g, cap, table in zip(self.groups, self.caps, self.req_blocks, strict=True):
            required = cdiv(num_tokens, g.block_size)
            if admission and cap is not None:
                required = min(required, cap)
            held = len(table.get(r.rid, ()))
            need += max(required - max(g.skipped(total) // g.block_size, held), 0)
        return need

    def _remove_skipped(self, r: Request, processed: int) -> None:
        for g, table in zip(self.groups, self.req_blocks, strict=True):
            free_skipped(self.pool, g, table.get(r.rid), processed)

    def allocate_slots(
        self,
        r: Request,
        num_new: int,
        hits: Sequence[Any] = (),
        num_hit_tokens: int = 0,
        full_sequence_must_fit: bool = False,
    ) -> bool:
        total = min(r.num_computed, self.max_model_len)
        if full_sequence_must_fit:
            full = min(r.num_tokens, self.max_model_len)
            if self._to_allocate(r, full, total, admission=True) > self.pool.num_free():
                return False
        need_slot = min(total + num_new, self.max_model_len)
        self._remove_skipped(r, max(0, total - r.in_flight))
        if self._to_allocate(r, need_slot, total, admission=False) > self.pool.num_free():
            return False
        for g, table in zip(self.groups, self.req_blocks, strict=True):
            grow_blocks(self.pool, table.setdefault(r.rid, []), need_slot, g.block_size)
        return True

    def cache_blocks(self, r: Request, num_tokens: int) -> None:
        return  # no prefix caching

    def free(self, r: Request) -> None:
        for table in self.req_blocks:
            release_blocks(self.pool, table.pop(r.rid, []))
