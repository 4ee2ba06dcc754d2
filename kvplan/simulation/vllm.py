"""vLLM 0.33.0's v1 scheduler and KV cache manager over time: a port, proven step for step against vLLM's own
code (tests/fixtures/engines/vllm_sched.json, recorded by scripts/engines/record_vllm_sched.py).

What is ported, from vllm/v1/core: ``Scheduler.schedule`` (running requests first, then waiting ones FCFS;
chunked prefill within the token budget; ``max_num_seqs``; preemption of the last running request when blocks
run out, which frees all its blocks and recomputes), ``AsyncScheduler`` (output placeholders, a request
scheduled again before its previous token is back), ``update_from_output`` (tokens appended, requests ending at
``max_tokens`` or the context, stale output of preempted requests), ``finish_requests`` (a cancel),
``KVCacheManager.allocate_slots`` with ``scheduler_reserve_full_isl`` (a waiting request is admitted only if
its whole prompt fits), the prefix cache (``get_computed_blocks``: a preempted request finds its own blocks
again while they are not evicted; requests sharing a prompt prefix share its blocks) and ``BlockPool`` (free
queue order: unhashed blocks evicted first, a finished request's tail before its head). And ``EngineCore``'s
loop: ``step`` when one batch is in flight, ``step_with_batch_queue`` when two (async scheduling).

KV cache groups: one full-attention group (dense, GQA and MLA models; KVCacheManager); several without prefix
caching (sliding window, chunked-local, Mamba state: GroupedKVCacheManager); full attention with sliding-window
or chunked-local groups and prefix caching (HybridKVCacheManager); full attention with Mamba / linear-attention
state groups and prefix caching, vLLM's "align" mode (AlignKVCacheManager). FCFS, no speculative decoding,
LoRA, encoder inputs or KV connectors. Prompts are distinct per request unless they share a declared prefix.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, MutableSequence, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

#: a block's hash: the shared prompt prefix (-1) or the request's own tokens, and the block's index
BlockKey = tuple[int, ...]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Status(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTED = "preempted"
    FINISHED = "finished"
    ABORTED = "aborted"


@dataclass(eq=False)
class Request:
    """vllm.v1.request.Request, the fields the scheduler reads."""

    rid: int
    prompt: int
    max_tokens: int
    shared_prefix: int = 0
    outputs: int = 0
    num_computed: int = 0
    placeholders: int = 0
    in_flight: int = 0
    stale: int = 0
    is_prefill_chunk: bool = False
    next_decode_eligible_step: int = 0
    preemptions: int = 0
    status: Status = Status.WAITING
    shared_boundary: int = 0  # shared_prefix_boundary: a junction a sparse group has not cached yet

    @property
    def num_tokens(self) -> int:
        return self.prompt + self.outputs

    @property
    def finished(self) -> bool:
        return self.status in (Status.FINISHED, Status.ABORTED)

    def key(self, index: int, block_size: int) -> BlockKey:
        """The hash of block ``index``: its tokens and all before them (the shared prefix, or this request)."""
        return (-1, index) if (index + 1) * block_size <= self.shared_prefix else (self.rid, index)


class BlockPool:
    """vllm.v1.core.block_pool.BlockPool: block 0 is the null block; the free queue in eviction order."""

    def __init__(self, num_blocks: int, caching: bool) -> None:
        self.caching = caching
        self.ref = [0] * num_blocks
        self.free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(1, num_blocks))
        self.hash_of: dict[int, BlockKey] = {}
        self.cached: dict[BlockKey, dict[int, None]] = {}

    def num_free(self) -> int:
        return len(self.free)

    def get_new_blocks(self, n: int) -> list[int]:
        out = []
        for _ in range(n):
            block, _ = self.free.popitem(last=False)
            if block in self.hash_of:  # evicted from the prefix cache
                self.uncache(block)
            self.ref[block] += 1
            out.append(block)
        return out

    def touch(self, blocks: Sequence[int]) -> None:
        for block in blocks:
            if self.ref[block] == 0:
                del self.free[block]
            self.ref[block] += 1

    def free_blocks(self, ordered: Iterable[int]) -> None:
        first: list[int] = []
        last: list[int] = []
        for block in ordered:
            self.ref[block] -= 1
            if self.ref[block] == 0:
                (last if block in self.hash_of and self.caching else first).append(block)
        for block in reversed(first):
            self.free[block] = None
            self.free.move_to_end(block, last=False)
        for block in last:
            self.free[block] = None

    def cached_block(self, key: BlockKey) -> int | None:
        holders = self.cached.get(key)
        return next(iter(holders)) if holders else None

    def cache(self, block: int, key: BlockKey) -> None:
        if block in self.hash_of:
            return
        self.hash_of[block] = key
        self.cached.setdefault(key, {})[block] = None

    def uncache(self, block: int) -> None:
        """The block's hash dropped (it is reused, or its cached state is superseded)."""
        key = self.hash_of.pop(block, None)
        if key is not None:
            holders = self.cached[key]
            del holders[block]
            if not holders:
                del self.cached[key]

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


def _grow(pool: BlockPool, blocks: list[int], num_tokens: int, block_size: int) -> None:
    """allocate_new_blocks: new blocks so that ``blocks`` covers ``num_tokens``."""
    missing = cdiv(num_tokens, block_size) - len(blocks)
    if missing > 0:
        blocks.extend(pool.get_new_blocks(missing))


def _release(pool: BlockPool, blocks: list[int]) -> None:
    """free: a request's blocks back to the pool, last first, null blocks left out."""
    pool.free_blocks(reversed([b for b in blocks if b != 0]))


class KVCacheManager:
    """KVCacheManager over one full-attention group (UnitaryKVCacheCoordinator + FullAttentionManager)."""

    def __init__(self, num_blocks: int, block_size: int, max_model_len: int, caching: bool) -> None:
        self.pool = BlockPool(num_blocks, caching)
        self.block_size = block_size
        self.max_model_len = max_model_len
        self.caching = caching
        self.req_blocks: dict[int, list[int]] = {}
        self.num_cached: dict[int, int] = {}

    def computed_blocks(self, r: Request) -> tuple[list[int], int]:
        """get_computed_blocks: the longest run of cached full blocks, at most num_tokens - 1 tokens."""
        if not self.caching:
            return [], 0
        hashed = r.num_tokens // self.block_size
        hits: list[int] = []
        for index in range(min(hashed, (r.num_tokens - 1) // self.block_size)):
            block = self.pool.cached_block(r.key(index, self.block_size))
            if block is None:
                break
            hits.append(block)
        return hits, len(hits) * self.block_size

    def _to_allocate(self, r: Request, num_tokens: int, hits: Sequence[int]) -> int:
        required = cdiv(num_tokens, self.block_size)
        held = len(self.req_blocks.get(r.rid, ()))
        if r.rid in self.num_cached:
            return max(required - held, 0)
        evictable = sum(1 for b in hits if self.pool.ref[b] == 0)
        return max(required - len(hits) - held, 0) + evictable

    def allocate_slots(
        self,
        r: Request,
        num_new: int,
        hits: Sequence[Any] = (),
        num_hit_tokens: int = 0,
        full_sequence_must_fit: bool = False,
    ) -> bool:
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
        _grow(self.pool, blocks, need_slot, self.block_size)
        self.cache_blocks(r, min(total + num_new, r.num_tokens))
        return True

    def cache_blocks(self, r: Request, num_tokens: int) -> None:
        if not self.caching:
            return
        done = self.num_cached.get(r.rid, 0)
        full = min(num_tokens, r.num_tokens // self.block_size * self.block_size) // self.block_size
        if done >= full:
            return
        blocks = self.req_blocks[r.rid]
        for index in range(done, full):
            self.pool.cache(blocks[index], r.key(index, self.block_size))
        self.num_cached[r.rid] = full

    def free(self, r: Request) -> None:
        blocks = self.req_blocks.pop(r.rid, [])
        self.num_cached.pop(r.rid, None)
        self.pool.free_blocks(reversed(blocks))

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


def _free_skipped(pool: BlockPool, g: GroupSpec, blocks: list[int] | None, processed: int) -> None:
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
            _free_skipped(self.pool, g, table.get(r.rid), processed)

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
            _grow(self.pool, table.setdefault(r.rid, []), need_slot, g.block_size)
        return True

    def cache_blocks(self, r: Request, num_tokens: int) -> None:
        return  # no prefix caching

    def free(self, r: Request) -> None:
        for table in self.req_blocks:
            _release(self.pool, table.pop(r.rid, []))


class HybridKVCacheManager:
    """KVCacheManager over full-attention and sliding-window groups with prefix caching (HybridKVCacheCoordinator
    for a "simple hybrid": full attention, then the window groups; FullAttentionManager, SlidingWindowManager).
    The cache hit is the full-attention prefix cut to where the window groups hold a whole window of cached
    blocks; a window group caches only the blocks that can serve a hit (the window before the prompt's last
    token and before a shared-prefix junction: vLLM's default retention interval 0)."""

    def __init__(
        self, num_blocks: int, groups: tuple[GroupSpec, ...], max_model_len: int, in_flight: int, align: int
    ) -> None:
        self.pool = BlockPool(num_blocks, caching=True)
        self.groups = groups
        self.max_model_len = max_model_len
        self.align = align  # cache_hit_alignment_tokens (the scheduler block size)
        self.caps = tuple(g.admission_cap(in_flight, max_model_len) for g in groups)
        self.req_blocks: tuple[dict[int, list[int]], ...] = tuple({} for _ in groups)
        self.num_cached: tuple[dict[int, int], ...] = tuple({} for _ in groups)
        full = [i for i, g in enumerate(groups) if not g.window]
        window = [i for i, g in enumerate(groups) if g.window]
        self.full_ids, self.window_ids = full, window

    def _cached(self, ids: list[int], r: Request, index: int) -> list[int] | None:
        return self.pool.cached_run((gid, *r.key(index, self.groups[gid].block_size)) for gid in ids)

    def computed_blocks(self, r: Request) -> tuple[list[list[int]], int]:
        """find_longest_cache_hit: the hit blocks per group, and the hit length; sets the request's junction."""
        hits: list[list[int]] = [[] for _ in self.groups]
        longest = self._full_hit(r, hits)
        hit = self._window_hit(r, hits, longest) if self.window_ids else longest
        for gid in self.full_ids:
            del hits[gid][cdiv(hit, self.groups[gid].block_size) :]
        r.shared_boundary = longest if longest > hit else 0
        if not any(hits):
            return [], 0
        return hits, hit

    def _full_hit(self, r: Request, hits: list[list[int]]) -> int:
        """FullAttentionManager: the run of cached blocks from the start, at most num_tokens - 1 tokens."""
        bs = self.groups[self.full_ids[0]].block_size
        n = 0
        for index in range(min(r.num_tokens // bs, (r.num_tokens - 1) // bs)):
            got = self._cached(self.full_ids, r, index)
            if got is None:
                break
            for gid, block in zip(self.full_ids, got, strict=True):
                hits[gid].append(block)
            n += 1
        return n * bs

    def _window_hit(self, r: Request, hits: list[list[int]], max_length: int) -> int:
        """SlidingWindowManager: the last whole window of cached blocks within ``max_length`` (searched from
        the end), null blocks before it; else the cached run from the start. ChunkedLocalAttentionManager:
        null blocks up to the chunk ``max_length`` falls in, then its cached run."""
        g = self.groups[self.window_ids[0]]
        if g.chunked:
            return self._chunk_hit(r, hits, max_length, g)
        need = cdiv(g.window - 1, g.block_size)
        top = max_length // g.block_size
        computed: list[list[int]] = [[0] * top for _ in self.window_ids]
        run, found = 0, False
        for index in range(top - 1, -1, -1):
            got = self._cached(self.window_ids, r, index)
            if got is None:
                run = 0
                continue
            for lst, block in zip(computed, got, strict=True):
                lst[index] = block
            run += 1
            if run >= need:
                for lst in computed:
                    del lst[index + run :]
                found = True
                break
        if not found:
            for lst in computed:
                del lst[run:]
        for gid, lst in zip(self.window_ids, computed, strict=True):
            hits[gid] = lst
        return len(computed[0]) * g.block_size

    def _chunk_hit(self, r: Request, hits: list[list[int]], max_length: int, g: GroupSpec) -> int:
        start = max_length // g.window * g.window // g.block_size if max_length > 0 else 0
        chunk: list[list[int]] = [[0] * start for _ in self.window_ids]
        for index in range(start, max_length // g.block_size):
            got = self._cached(self.window_ids, r, index)
            if got is None:
                break
            for lst, block in zip(chunk, got, strict=True):
                lst.append(block)
        for gid, lst in zip(self.window_ids, chunk, strict=True):
            hits[gid] = lst
        return len(chunk[0]) * g.block_size

    def _to_allocate(self, r: Request, num_tokens: int, hits: Sequence[list[int]], total: int, admission: bool) -> int:
        need = 0
        for gid, (g, cap) in enumerate(zip(self.groups, self.caps, strict=True)):
            required = cdiv(num_tokens, g.block_size)
            if admission and cap is not None:
                required = min(required, cap)
            held = len(self.req_blocks[gid].get(r.rid, ()))
            h = hits[gid] if hits else []
            if r.rid in self.num_cached[gid]:
                need += max(required - held, 0)
                continue
            skipped = g.skipped(total) // g.block_size
            new = max(required - max(skipped, len(h) + held), 0)
            evictable = sum(1 for b in h[max(0, skipped - held) :] if b != 0 and self.pool.ref[b] == 0)
            need += new + evictable
        return need

    def _remove_skipped(self, r: Request, processed: int) -> None:
        for g, table in zip(self.groups, self.req_blocks, strict=True):
            _free_skipped(self.pool, g, table.get(r.rid), processed)

    def allocate_slots(
        self,
        r: Request,
        num_new: int,
        hits: Sequence[Any] = (),
        num_hit_tokens: int = 0,
        full_sequence_must_fit: bool = False,
    ) -> bool:
        local = r.num_computed + num_hit_tokens
        total = min(local, self.max_model_len)
        if full_sequence_must_fit:
            full = min(r.num_tokens, self.max_model_len)
            if self._to_allocate(r, full, hits, total, admission=True) > self.pool.num_free():
                return False
        need_slot = min(total + num_new, self.max_model_len)
        self._remove_skipped(r, max(0, total - r.in_flight))
        if self._to_allocate(r, need_slot, hits, total, admission=False) > self.pool.num_free():
            return False
        if hits and not any(r.rid in nc for nc in self.num_cached):
            for gid, g in enumerate(self.groups):
                skipped = g.skipped(local) // g.block_size
                h = hits[gid][skipped:]
                self.pool.touch([b for b in h if b != 0])
                blocks = [0] * skipped + list(h)
                self.req_blocks[gid][r.rid] = blocks
                self.num_cached[gid][r.rid] = len(blocks)
        for gid, g in enumerate(self.groups):
            _grow(self.pool, self.req_blocks[gid].setdefault(r.rid, []), need_slot, g.block_size)
        self.cache_blocks(r, min(total + num_new, r.num_tokens))
        return True

    def cache_blocks(self, r: Request, num_tokens: int) -> None:
        num_tokens = num_tokens // self.align * self.align
        for gid, g in enumerate(self.groups):
            done = self.num_cached[gid].get(r.rid, 0)
            full = min(num_tokens, r.num_tokens // g.block_size * g.block_size) // g.block_size
            if done >= full:
                continue
            keep: set[int] | None = None
            if g.window and not g.chunked:
                need = cdiv(g.window - 1, g.block_size)
                keep = set()
                for boundary in (r.prompt - 1, *((r.shared_boundary,) if r.shared_boundary else ())):
                    end = boundary // self.align * self.align // g.block_size
                    keep.update(range(max(done, end - need), min(full, end)))
            blocks = self.req_blocks[gid][r.rid]
            for i in range(done, full):
                if blocks[i] != 0 and (keep is None or i in keep):
                    self.pool.cache(blocks[i], (gid, *r.key(i, g.block_size)))
            self.num_cached[gid][r.rid] = full

    def free(self, r: Request) -> None:
        for gid in range(len(self.groups)):
            _release(self.pool, self.req_blocks[gid].pop(r.rid, []))
            self.num_cached[gid].pop(r.rid, None)


def checkpoint_position(num_tokens: int, block_size: int) -> int:
    """get_mamba_prefill_checkpoint_position (no EAGLE, no hash lookahead): the last block boundary before the
    final token."""
    return max((num_tokens - 1) // block_size * block_size, 0)


def checkpoint_valid(start: int, end: int, position: int, block_size: int, alignment: int | None) -> bool:
    """is_mamba_prefill_checkpoint_valid (hash block = Mamba block): the backend can export the state at
    ``position`` from inside the chunk [start, end)."""
    if alignment is None:
        return False
    return (
        start % block_size == 0
        and cdiv(end, block_size) - 2 > (start - 1) // block_size
        and start + block_size <= position
        and start < position < end
        and (position - start) % alignment == 0
    )


class AlignKVCacheManager:
    """KVCacheManager over full-attention and Mamba / linear-attention groups with prefix caching: vLLM's
    Mamba "align" mode (HybridKVCacheCoordinator, FullAttentionManager, MambaManager with mamba_cache_mode
    "align"). A state group keeps one block per scheduled chunk, at the chunk's last block (null blocks before
    it), frees the state of two steps ago, and reserves a checkpoint block where the prompt's last chunk
    exports the state at the prompt's last block boundary (num_prefill_checkpoint_blocks); only that boundary's
    state (and a shared-prefix junction's) is cached (retention interval 0). A hit is the full-attention
    prefix cut to the last cached state block within it. Scope: hash block = Mamba block (no partial hits),
    no EAGLE / MTP, no KV connector."""

    def __init__(self, num_blocks: int, groups: tuple[GroupSpec, ...], max_model_len: int, checkpoint: int | None):
        self.pool = BlockPool(num_blocks, caching=True)
        self.num_gpu_blocks = num_blocks
        self.groups = groups
        self.max_model_len = max_model_len
        self.bs = groups[0].block_size
        self.checkpoint = checkpoint  # prefill_checkpoint_alignment; None: no checkpoint blocks
        n = len(groups)
        self.req_blocks: tuple[dict[int, list[int]], ...] = tuple({} for _ in range(n))
        self.num_cached: tuple[dict[int, int], ...] = tuple({} for _ in range(n))
        self.last_state: tuple[dict[int, int], ...] = tuple({} for _ in range(n))
        self.retired: tuple[dict[int, int], ...] = tuple({} for _ in range(n))
        self.allocated: tuple[set[int], ...] = tuple(set() for _ in range(n))
        self.checkpoints: tuple[dict[int, tuple[int, int]], ...] = tuple({} for _ in range(n))
        self.cached_this_step: tuple[set[BlockKey], ...] = tuple(set() for _ in range(n))
        self.hash_tokens: dict[int, int] = {}  # block → the tokens its hash covers
        self.full_ids = [i for i, g in enumerate(groups) if not g.state]
        self.state_ids = [i for i, g in enumerate(groups) if g.state]

    def new_step_starts(self) -> None:
        for s in self.cached_this_step:
            s.clear()

    def _key(self, gid: int, r: Request, index: int) -> BlockKey:
        return (gid, *r.key(index, self.bs))

    def _cached(self, ids: list[int], r: Request, index: int) -> list[int] | None:
        return self.pool.cached_run(self._key(gid, r, index) for gid in ids)

    def computed_blocks(self, r: Request) -> tuple[list[list[int]], int]:
        """find_longest_cache_hit (a simple hybrid): the full-attention run from the start, then the last
        cached state block within it (searched from the end); sets the request's shared-prefix junction."""
        hits: list[list[int]] = [[] for _ in self.groups]
        top = (r.num_tokens - 1) // self.bs
        full = 0
        for index in range(top):
            got = self._cached(self.full_ids, r, index)
            if got is None:
                break
            for gid, block in zip(self.full_ids, got, strict=True):
                hits[gid].append(block)
            full += 1
        hit = 0
        for index in range(full - 1, -1, -1):
            got = self._cached(self.state_ids, r, index)
            if got is not None:
                for gid, block in zip(self.state_ids, got, strict=True):
                    hits[gid] = [0] * index + [block]
                hit = index + 1
                break
        for gid in self.full_ids:
            del hits[gid][hit:]
        r.shared_boundary = full * self.bs if full > hit else 0
        if not hit:
            return [], 0
        return hits, hit * self.bs

    def _needs_checkpoint(self, gid: int, r: Request, start: int, end: int, position: int, prefill_end: int) -> bool:
        """MambaManager._needs_internal_checkpoint."""
        idx = cdiv(end, self.bs) - 2
        blocks = self.req_blocks[gid].get(r.rid, [])
        return (
            self.checkpoint is not None
            and end >= prefill_end
            and checkpoint_valid(start, end, position, self.bs, self.checkpoint)
            and idx >= 0
            and (idx >= len(blocks) or blocks[idx] == 0)
        )

    def _to_allocate(
        self, r: Request, num_tokens: int, hits: Sequence[list[int]], total: int, main: int, admission: bool
    ) -> int:
        need = 0
        prefill_end = max(r.prompt, r.num_tokens - 1)
        for gid, g in enumerate(self.groups):
            h = hits[gid] if hits else []
            held = self.req_blocks[gid].get(r.rid, [])
            evictable = sum(1 for b in h if b != 0 and self.pool.ref[b] == 0)
            if not g.state:
                required = cdiv(num_tokens, self.bs)
                if r.rid in self.num_cached[gid]:
                    need += max(required - len(held), 0)
                else:
                    need += max(required - (len(h) + len(held)), 0) + evictable
                continue
            if h and self._key(gid, r, len(h) - 1) in self.cached_this_step[gid]:
                return self.num_gpu_blocks + 1  # a state cached by another request this step: next step
            new = cdiv(main, self.bs) - len(h) - len(held)
            position = checkpoint_position(main, self.bs)
            if not self._needs_checkpoint(gid, r, total, main, position, prefill_end):
                position = 0
            if not admission:
                if position:
                    self.checkpoints[gid][r.rid] = (position, cdiv(main, self.bs) - 2)
                else:
                    self.checkpoints[gid].pop(r.rid, None)
            if new > 0:
                new = min(new, 1 + int(position > 0))
            need += new + evictable
        return need

    def _remove_skipped(self, r: Request, processed: int) -> None:
        for gid, g in enumerate(self.groups):
            if not g.state:
                continue
            blocks = self.req_blocks[gid].get(r.rid)
            if blocks is None:
                continue
            skipped = processed - 1
            if skipped > 0:
                first = self.retired[gid].get(r.rid, 0)
                last = min(skipped // self.bs, len(blocks))
                if first < last:
                    freed = []
                    for i in range(last - 1, first - 1, -1):
                        if blocks[i] != 0:
                            freed.append(blocks[i])
                            blocks[i] = 0
                    if freed:
                        self.pool.free_blocks(freed)
                    self.retired[gid][r.rid] = last
            at = self.last_state[gid].get(r.rid)
            if at is not None and at < cdiv(processed, self.bs) - 1 and blocks[at] != 0:
                self.pool.free_blocks([blocks[at]])
                blocks[at] = 0

    def allocate_slots(
        self,
        r: Request,
        num_new: int,
        hits: Sequence[Any] = (),
        num_hit_tokens: int = 0,
        full_sequence_must_fit: bool = False,
    ) -> bool:
        local = r.num_computed + num_hit_tokens
        total = min(local, self.max_model_len)
        if full_sequence_must_fit:
            full = min(r.num_tokens, self.max_model_len)
            if self._to_allocate(r, full, hits, total, full, admission=True) > self.pool.num_free():
                return False
        main = total + num_new
        need_slot = min(main, self.max_model_len)
        self._remove_skipped(r, max(0, total - r.in_flight))
        if self._to_allocate(r, need_slot, hits, local, main, admission=False) > self.pool.num_free():
            return False
        if hits and not any(r.rid in nc for nc in self.num_cached):
            for gid, g in enumerate(self.groups):
                skipped = (local - 1) // self.bs if g.state else 0
                h = [b for b in hits[gid][skipped:] if b != 0]
                self.pool.touch(h)
                blocks = [0] * skipped + h
                self.req_blocks[gid][r.rid] = blocks
                self.num_cached[gid][r.rid] = len(blocks)
        for gid, g in enumerate(self.groups):
            if g.state:
                self._allocate_state(gid, r, main)
                continue
            _grow(self.pool, self.req_blocks[gid].setdefault(r.rid, []), need_slot, self.bs)
        self.cache_blocks(r, min(total + num_new, r.num_tokens))
        return True

    def _allocate_state(self, gid: int, r: Request, main: int) -> None:
        """MambaManager.allocate_new_blocks, align mode."""
        blocks = self.req_blocks[gid].setdefault(r.rid, [])
        required = cdiv(main, self.bs)
        checkpoint = int(r.rid in self.checkpoints[gid])
        if required <= len(blocks) and not checkpoint:
            self.allocated[gid].add(r.rid)
            return
        before = len(blocks)
        if r.rid in self.allocated[gid] or before > 0:
            self.last_state[gid][r.rid] = before - 1
        skipped = required - 1
        if before < skipped:
            blocks.extend([0] * (skipped - checkpoint - before))
        missing = max(required - len(blocks), 0)
        blocks.extend(self.pool.get_new_blocks(missing))
        self.allocated[gid].add(r.rid)

    def cache_blocks(self, r: Request, num_tokens: int) -> None:
        num_tokens = num_tokens // self.bs * self.bs
        full = min(num_tokens, r.num_tokens // self.bs * self.bs) // self.bs
        boundaries = [r.prompt - 1, *((r.shared_boundary,) if r.shared_boundary else ())]
        for gid, g in enumerate(self.groups):
            done = self.num_cached[gid].get(r.rid, 0)
            blocks = self.req_blocks[gid].get(r.rid, [])
            if done < full:
                keep = None
                if g.state:  # reachable_block_mask, retention interval 0: the boundaries' states only
                    keep = {b // self.bs - 1 for b in boundaries}
                for i in range(done, full):
                    if blocks[i] != 0 and (keep is None or i in keep):
                        self._cache(gid, r, i, blocks[i])
                self.num_cached[gid][r.rid] = full
            if g.state:
                self._cache_tail(gid, r)

    def _cache(self, gid: int, r: Request, index: int, block: int) -> None:
        if block in self.pool.hash_of:
            return
        key = self._key(gid, r, index)
        self.pool.cache(block, key)
        self.hash_tokens[block] = (index + 1) * self.bs
        if self.groups[gid].state:
            self.cached_this_step[gid].add(key)

    def _cache_tail(self, gid: int, r: Request) -> None:
        """MambaManager._cache_partial_tail_block with hash block = Mamba block: the checkpoint block is keyed at
        the prompt's checkpoint (or a shared-prefix junction) when the full-block pass did not key it."""
        at = self.checkpoints[gid].get(r.rid)
        if at is None:
            return
        position, idx = at
        if position != checkpoint_position(r.prompt, self.bs) and position != r.shared_boundary:
            return  # a transient state: nothing reusable (its block holds no key)
        block = self.req_blocks[gid][r.rid][idx]
        if self.pool.hash_of.get(block) is not None and self.hash_tokens.get(block) == position:
            return
        if block in self.pool.hash_of:  # re-keyed at the checkpoint
            self.pool.uncache(block)
        self._cache(gid, r, position // self.bs - 1, block)

    def free(self, r: Request) -> None:
        for gid, g in enumerate(self.groups):
            blocks = self.req_blocks[gid].pop(r.rid, [])
            self.num_cached[gid].pop(r.rid, None)
            if g.state:
                self.allocated[gid].discard(r.rid)
                self.last_state[gid].pop(r.rid, None)
                self.retired[gid].pop(r.rid, None)
                self.checkpoints[gid].pop(r.rid, None)
            _release(self.pool, blocks)


@dataclass(frozen=True)
class SchedulerConfig:
    """The resolved settings the scheduler runs with (vLLM's own defaults where the user gave none)."""

    num_blocks: int
    block_size: int
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    prefix_caching: bool = True
    async_scheduling: bool = True  # AsyncScheduler + two batches in flight (vLLM 0.33's default)
    groups: tuple[GroupSpec, ...] = ()  # several KV cache groups (sliding window, chunked, state)
    state_checkpoint: int | None = None  # prefix caching with state groups: prefill_checkpoint_alignment


@dataclass(frozen=True)
class StepRecord:
    """One schedule(): what vLLM's recorder writes for it (tests compare these field by field)."""

    iteration: int
    scheduled: tuple[tuple[int, int], ...]  # (request, tokens) in scheduling order
    running: int
    waiting: int
    preempted: tuple[int, ...]
    free_blocks: int


@dataclass
class StepOutput:
    """One scheduled step: tokens per request, the context each had before them, who samples a token."""

    scheduled: dict[int, int]
    sampled: frozenset[int]
    context: dict[int, int] = field(default_factory=dict)


@dataclass
class Scheduler:
    """vllm.v1.core.sched.scheduler.Scheduler (and AsyncScheduler when ``config.async_scheduling``)."""

    config: SchedulerConfig
    kv: KVCacheManager | GroupedKVCacheManager | HybridKVCacheManager | AlignKVCacheManager = field(init=False)
    requests: dict[int, Request] = field(default_factory=dict)
    running: list[Request] = field(default_factory=list)
    waiting: deque[Request] = field(default_factory=deque)
    finished_ids: set[int] = field(default_factory=set)
    current_step: int = 0

    def __post_init__(self) -> None:
        c = self.config
        if c.groups:
            in_flight = (2 if c.async_scheduling else 1) * c.max_num_batched_tokens  # VllmConfig.max_in_flight_tokens
            if c.prefix_caching and any(g.state for g in c.groups):
                if any(g.window for g in c.groups) or len({g.block_size for g in c.groups}) > 1:
                    raise ValueError("prefix caching with state groups is simulated next to full attention only")
                self.kv = AlignKVCacheManager(c.num_blocks, c.groups, c.max_model_len, c.state_checkpoint)
            elif c.prefix_caching:
                if all(g.window for g in c.groups):
                    raise ValueError("prefix caching is simulated for full-attention and sliding-window groups")
                self.kv = HybridKVCacheManager(c.num_blocks, c.groups, c.max_model_len, in_flight, c.block_size)
            else:
                self.kv = GroupedKVCacheManager(c.num_blocks, c.groups, c.max_model_len, in_flight)
        else:
            self.kv = KVCacheManager(c.num_blocks, c.block_size, c.max_model_len, c.prefix_caching)

    def add(self, r: Request) -> None:
        self.waiting.append(r)
        self.requests[r.rid] = r

    def has_requests(self) -> bool:
        return bool(self.running or self.waiting or self.finished_ids)

    def schedule(self) -> tuple[StepOutput, tuple[int, ...]]:  # noqa: C901 - vLLM's schedule(), one pass
        c = self.config
        self.current_step += 1
        budget = c.max_num_batched_tokens
        scheduled: dict[int, int] = {}
        context: dict[int, int] = {}
        preempted: list[Request] = []
        i = 0
        align = self.kv if isinstance(self.kv, AlignKVCacheManager) else None
        if align is not None:
            align.new_step_starts()
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            if r.placeholders > 0 and r.num_computed + 2 - r.placeholders >= r.prompt + r.max_tokens:
                i += 1
                continue
            if self.current_step < r.next_decode_eligible_step:
                i += 1
                continue
            n = min(r.num_tokens + r.placeholders - r.num_computed, budget)
            n = min(n, c.max_model_len - r.num_computed - 1)
            if align is not None and n > 0:
                n = self._align_split(r, n, 0)
            if n <= 0:
                i += 1
                continue
            while True:
                if self.kv.allocate_slots(r, n):
                    ok = True
                    break
                victim = self.running.pop()
                self._preempt(victim)
                preempted.append(victim)
                if victim is r:
                    ok = False
                    break
            if not ok:
                break
            scheduled[r.rid] = n
            context[r.rid] = r.num_computed
            budget -= n
            i += 1
        if not preempted:
            skipped: deque[Request] = deque()
            while budget > 0 and self.waiting:
                if len(self.running) >= c.max_num_seqs:
                    break
                r = self.waiting[0]
                if r.stale:  # its preempted step's output is still in flight
                    skipped.appendleft(self.waiting.popleft())
                    continue
                hits, hit_tokens = self.kv.computed_blocks(r) if r.num_computed == 0 else ([], 0)
                computed = hit_tokens if r.num_computed == 0 else r.num_computed
                n = min(r.num_tokens - computed, budget)
                if align is not None:
                    n = self._align_split(r, n, hit_tokens if r.num_computed == 0 else 0)
                    if n == 0:
                        break
                if not self.kv.allocate_slots(r, n, hits, hit_tokens, full_sequence_must_fit=True):
                    break
                self.waiting.popleft()
                self.running.append(r)
                scheduled[r.rid] = n
                context[r.rid] = computed
                budget -= n
                r.status = Status.RUNNING
                r.num_computed = computed
            self.waiting.extendleft(skipped)
        self._after_schedule(scheduled)
        sampled = frozenset(rid for rid in scheduled if not self.requests[rid].is_prefill_chunk)
        return StepOutput(scheduled, sampled, context), tuple(sorted(p.rid for p in preempted))

    def _align_split(self, r: Request, n: int, hit: int) -> int:
        """Scheduler._mamba_block_aligned_split (hash block = block, no EAGLE): a prefill chunk ends on a block
        boundary (the prompt's last chunk excepted), never past the last cacheable boundary unless the backend
        exports the checkpoint inside the chunk, and at a shared-prefix junction."""
        c = self.config
        bs = c.block_size
        start = r.num_computed + hit
        prefill_end = max(r.prompt, r.num_tokens - 1)
        if start >= prefill_end:
            return n
        last_cache = checkpoint_position(r.num_tokens, bs)
        end = start + n
        position = checkpoint_position(prefill_end, bs)
        internal = end >= prefill_end and checkpoint_valid(start, end, position, bs, c.state_checkpoint)
        if internal:
            last_cache = 0
        if end < prefill_end:
            aligned = end // bs * bs
            if aligned > start or bs <= c.max_num_batched_tokens:
                end = aligned
        junction = r.shared_boundary
        stops = (
            (start // bs + 1) * bs if start % bs and not internal else 0,
            last_cache,
            start + (junction - start) // bs * bs if start < junction < end else 0,
        )
        end = min((x for x in stops if start < x < end), default=end)
        return max(end - start, 0)

    def _preempt(self, r: Request) -> None:
        self.kv.free(r)
        r.status = Status.PREEMPTED
        r.num_computed = 0
        r.stale = r.in_flight
        r.placeholders = 0
        r.preemptions += 1
        self.waiting.appendleft(r)

    def _after_schedule(self, scheduled: dict[int, int]) -> None:
        for rid, n in scheduled.items():
            r = self.requests[rid]
            r.num_computed += n
            r.in_flight += n
            r.is_prefill_chunk = r.num_computed < r.num_tokens + r.placeholders
        self.finished_ids = set()
        if not self.config.async_scheduling:
            return
        for rid in scheduled:
            r = self.requests[rid]
            if r.is_prefill_chunk:
                continue
            r.placeholders += 1
            r.next_decode_eligible_step = self.current_step + 1  # decode_stagger = pipeline stages (1)

    def update_from_output(self, out: StepOutput) -> list[Request]:
        """Apply one step's sampled tokens; the requests that ended."""
        ended: list[Request] = []
        for rid, n in out.scheduled.items():
            r = self.requests.get(rid)
            stale = False
            if r is not None:
                r.in_flight -= n
                if r.stale > 0:
                    stale = True
                    r.stale -= n
            if r is None or r.finished or rid not in out.sampled:
                continue
            before = r.status
            had_placeholders = r.placeholders > 0
            r.outputs += 1
            stopped = r.num_tokens >= self.config.max_model_len or r.outputs >= r.max_tokens
            if not stale and r.placeholders > 0:
                r.placeholders -= 1
            if not stale and before is Status.RUNNING and had_placeholders:
                self.kv.cache_blocks(r, r.num_computed - r.in_flight)
            if stopped:
                r.status = Status.FINISHED
                self._free(r)
                ended.append(r)
                if before is Status.RUNNING:
                    self.running.remove(r)
                else:
                    self.waiting.remove(r)
        return ended

    def abort(self, rids: Iterable[int]) -> list[Request]:
        """finish_requests(..., FINISHED_ABORTED): a cancel between engine steps."""
        out = []
        for rid in rids:
            r = self.requests.get(rid)
            if r is None or r.finished:
                continue
            if r.status is Status.RUNNING:
                self.running.remove(r)
            else:
                self.waiting.remove(r)
            r.status = Status.ABORTED
            self._free(r)
            out.append(r)
        return out

    def _free(self, r: Request) -> None:
        self.finished_ids.add(r.rid)
        self.kv.free(r)
        del self.requests[r.rid]


@dataclass
class EngineLoop:
    """EngineCore's busy loop: add and abort between steps, then step() or step_with_batch_queue()."""

    scheduler: Scheduler
    steps: MutableSequence[StepRecord] = field(default_factory=list)  # a deque(maxlen=1) keeps only the latest
    queue: deque[StepOutput] = field(default_factory=deque)
    iteration: int = 0
    last: StepOutput | None = None  # what the latest schedule() of this iteration scheduled (None: none ran)

    @property
    def batches(self) -> int:
        return 2 if self.scheduler.config.async_scheduling else 1

    def _schedule(self) -> StepOutput:
        s = self.scheduler
        out, preempted = s.schedule()
        self.last = out
        self.steps.append(
            StepRecord(
                self.iteration,
                tuple(out.scheduled.items()),
                len(s.running),
                len(s.waiting),
                preempted,
                s.kv.pool.num_free(),
            )
        )
        return out

    def step(self) -> list[Request]:
        """One engine-loop iteration after arrivals and cancels; the requests that ended."""
        s = self.scheduler
        ended: list[Request] = []
        self.last = None
        if self.batches == 1:
            if s.has_requests():
                ended = s.update_from_output(self._schedule())
        else:
            done = False
            if s.has_requests():
                out = self._schedule()
                self.queue.appendleft(out)
                if len(self.queue) < self.batches and (bool(out.scheduled) or s.has_requests()):
                    done = True
            elif not self.queue:
                done = True
            if not done:
                ended = s.update_from_output(self.queue.pop())
        self.iteration += 1
        return ended

    def idle(self) -> bool:
        return not self.scheduler.has_requests() and not self.queue


def run_by_iteration(
    config: SchedulerConfig,
    requests: Sequence[tuple[int, int, int, int | None]],
    shared_prefix: int = 0,
    limit: int = 1_000_000,
) -> EngineLoop:
    """The workload as the recorder drives vLLM: request i = (arrival iteration, prompt, output tokens, cancel
    iteration or None) is added, or aborted, before the engine-loop iteration of that number."""
    loop = EngineLoop(Scheduler(config))
    arrivals: dict[int, list[int]] = {}
    cancels: dict[int, list[int]] = {}
    for i, (arrive, _, _, cancel) in enumerate(requests):
        arrivals.setdefault(arrive, []).append(i)
        if cancel is not None:
            cancels.setdefault(cancel, []).append(i)
    last = max(arrivals, default=-1)
    while loop.iteration < limit:
        for i in arrivals.get(loop.iteration, ()):
            _, prompt, output, _ = requests[i]
            loop.scheduler.add(Request(i, prompt, output, shared_prefix=shared_prefix))
        loop.scheduler.abort(cancels.get(loop.iteration, ()))
        loop.step()
        if loop.iteration > last and loop.idle():
            break
    return loop
