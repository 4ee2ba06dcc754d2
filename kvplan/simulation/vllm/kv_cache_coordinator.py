"""vLLM 0.33's hybrid KV cache coordinator (vllm/v1/core/kv_cache_coordinator.py): full attention with
sliding-window or chunked-local groups and prefix caching, and with Mamba / linear-attention state groups in
vLLM's "align" mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kvplan.simulation.vllm.block_pool import BlockPool, grow_blocks, release_blocks
from kvplan.simulation.vllm.kv_cache_manager import GroupSpec, free_skipped
from kvplan.simulation.vllm.request import BlockKey, Request, cdiv


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
            evictable = sum(1 for b in h[max(0, skipped - held) :] if b != 0 and self.pool.is_free(b))
            need += new + evictable
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
            grow_blocks(self.pool, self.req_blocks[gid].setdefault(r.rid, []), need_slot, g.block_size)
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
            release_blocks(self.pool, self.req_blocks[gid].pop(r.rid, []))
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
            evictable = sum(1 for b in h if b != 0 and self.pool.is_free(b))
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
            grow_blocks(self.pool, self.req_blocks[gid].setdefault(r.rid, []), need_slot, self.bs)
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
            release_blocks(self.pool, blocks)
