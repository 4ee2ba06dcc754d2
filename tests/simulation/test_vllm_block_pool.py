"""The port's block pool and plain KV cache manager, block for block, against vLLM 0.33.0's own.

1. Recorded: ``scripts/engines/record_vllm_block_pool.py`` drove vLLM's own KVCacheManager and BlockPool (one
   full-attention group, the sha256 block hasher, requests as the engine builds them) through random
   admissions, decodes, preemptions, re-admissions and ends — with and without a shared prompt prefix, with
   and without prefix caching — and kept, after every operation, the hits, whether the allocation succeeded,
   the blocks appended to the request's table and the free blocks (tests/fixtures/engines/vllm_block_pool.json,
   40 drives). Every operation is replayed through the port here.
2. A property test drives the port and vLLM's rules written the way vLLM writes them
   (``vllm/v1/core/block_pool.py``, ``kv_cache_utils.FreeKVCacheBlockQueue``,
   ``single_type_kv_cache_manager.FullAttentionManager``: one linked free queue in eviction order, a reference
   count per block, every full block's hash in a dict) through many more random drives than were recorded.

The port keeps the queue in slices and a request's own hashes by position (``kvplan.simulation.vllm.
block_pool``); the scheduler built on it replays vLLM's recorded steps (test_vllm_scheduler.py).
"""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from typing import Any

import pytest
from helpers import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.simulation.vllm.kv_cache_manager import KVCacheManager
from kvplan.simulation.vllm.request import BlockKey, Request, Status, cdiv


class VllmPool:
    """vLLM's BlockPool: ``free`` is FreeKVCacheBlockQueue (popleft; append; appendleft for an unhashed block;
    remove from the middle), ``ref`` is ref_cnt, ``hash_of`` / ``cached`` are the block hashes and
    cached_block_hash_to_block."""

    def __init__(self, num_blocks: int) -> None:
        self.free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(1, num_blocks))
        self.ref = [0] * num_blocks
        self.hash_of: dict[int, BlockKey] = {}
        self.cached: dict[BlockKey, list[int]] = {}

    def get_new_blocks(self, n: int) -> list[int]:
        out = [self.free.popitem(last=False)[0] for _ in range(n)]
        for b in out:
            key = self.hash_of.pop(b, None)  # _maybe_evict_cached_block
            if key is not None:
                self.cached[key].remove(b)
                if not self.cached[key]:
                    del self.cached[key]
            self.ref[b] += 1
        return out

    def touch(self, blocks: list[int]) -> None:
        for b in blocks:
            if self.ref[b] == 0:
                del self.free[b]
            self.ref[b] += 1

    def free_blocks(self, ordered: list[int]) -> None:
        gone = []
        for b in ordered:
            self.ref[b] -= 1
            if self.ref[b] == 0:
                gone.append(b)
        for b in reversed([b for b in gone if b not in self.hash_of]):  # unhashed: to the front, first first
            self.free[b] = None
            self.free.move_to_end(b, last=False)
        for b in gone:
            if b in self.hash_of:
                self.free[b] = None

    def cache(self, block: int, key: BlockKey) -> None:
        if block not in self.hash_of:
            self.hash_of[block] = key
            self.cached.setdefault(key, []).append(block)


class VllmManager:
    """KVCacheManager over one full-attention group: get_computed_blocks, allocate_slots, cache_blocks, free."""

    def __init__(self, num_blocks: int, bs: int, caching: bool) -> None:
        self.pool = VllmPool(num_blocks)
        self.bs = bs
        self.caching = caching
        self.req_blocks: dict[int, list[int]] = {}
        self.num_cached: dict[int, int] = {}

    def computed_blocks(self, r: Request) -> tuple[list[int], int]:
        hits: list[int] = []
        for index in range((r.num_tokens - 1) // self.bs if self.caching else 0):
            holders = self.pool.cached.get(r.key(index, self.bs))
            if not holders:
                break
            hits.append(holders[0])
        return hits, len(hits) * self.bs

    def allocate(self, r: Request, num_new: int, hits: list[int], hit_tokens: int) -> bool:
        total = r.num_computed + hit_tokens
        held = self.req_blocks.get(r.rid, [])
        evictable = sum(1 for b in hits if self.pool.ref[b] == 0)
        need = max(cdiv(total + num_new, self.bs) - len(hits) - len(held), 0) + evictable
        if need > len(self.pool.free):
            return False
        blocks = self.req_blocks.setdefault(r.rid, [])
        if hits:
            self.pool.touch(hits)
            blocks.extend(hits)
            self.num_cached[r.rid] = len(blocks)
        missing = cdiv(total + num_new, self.bs) - len(blocks)
        if missing > 0:
            blocks.extend(self.pool.get_new_blocks(missing))
        self.cache(r, min(total + num_new, r.num_tokens))
        return True

    def cache(self, r: Request, num_tokens: int) -> None:
        if not self.caching:
            return
        done = self.num_cached.get(r.rid, 0)
        full = min(num_tokens, r.num_tokens) // self.bs
        for index in range(done, full):
            self.pool.cache(self.req_blocks[r.rid][index], r.key(index, self.bs))
        self.num_cached[r.rid] = max(done, full)

    def free(self, r: Request) -> None:
        self.num_cached.pop(r.rid, None)
        self.pool.free_blocks(list(reversed(self.req_blocks.pop(r.rid, []))))


class _Twins:
    """The port and vLLM's rules side by side, driven by the same operations."""

    def __init__(self, num_blocks: int, bs: int, caching: bool) -> None:
        self.port = KVCacheManager(num_blocks, bs, 1 << 20, caching)
        self.ref, self.bs = VllmManager(num_blocks, bs, caching), bs
        self.mine: dict[int, Request] = {}
        self.theirs: dict[int, Request] = {}
        self.waiting: list[int] = []
        self.running: list[int] = []
        self.own_hits = 0

    def arrive(self, rid: int, prompt: int, share: int) -> None:
        self.mine[rid], self.theirs[rid] = (Request(rid, prompt + share, 10**6, shared_prefix=share) for _ in range(2))
        self.waiting.append(rid)

    def admit(self, rid: int) -> None:
        a, b = self.mine[rid], self.theirs[rid]
        hits, hit_tokens = self.port.computed_blocks(a)
        assert (hits, hit_tokens) == self.ref.computed_blocks(b)
        if hits and a.preemptions and a.shared_prefix // self.bs < len(hits):
            self.own_hits += 1
        ok = self.port.allocate_slots(a, a.num_tokens - hit_tokens, hits, hit_tokens, full_sequence_must_fit=True)
        assert ok == self.ref.allocate(b, b.num_tokens - hit_tokens, hits, hit_tokens)
        if ok:
            for r in (a, b):
                r.num_computed, r.status = r.num_tokens, Status.RUNNING
            self.waiting.remove(rid)
            self.running.append(rid)

    def decode(self, rid: int) -> None:
        """A token sampled, its slot allocated."""
        a, b = self.mine[rid], self.theirs[rid]
        for r in (a, b):
            r.add_output()
        ok = self.port.allocate_slots(a, 1)
        assert ok == self.ref.allocate(b, 1, [], 0)
        if ok:
            for r in (a, b):
                r.num_computed += 1

    def leave(self, rid: int, finish: bool) -> None:
        """Preempted, or finished (its own hashes can never be hit again)."""
        a, b = self.mine[rid], self.theirs[rid]
        for r in (a, b):
            r.status = Status.FINISHED if finish else Status.PREEMPTED
            r.num_computed = 0
            r.preemptions += 1
        self.port.free(a)
        self.ref.free(b)
        self.running.remove(rid)
        if not finish:
            self.waiting.append(rid)


def _drive(seed: int, num_blocks: int, bs: int, shared: int, ops: int, caching: bool = True) -> int:
    """Random operations on both; the two compared after every one. The hits a request took from its own
    earlier blocks."""
    rng = random.Random(seed)
    t = _Twins(num_blocks, bs, caching)
    for step in range(ops):
        what = rng.random()
        if what < 0.2 or not (t.waiting or t.running):
            t.arrive(step, rng.randint(1, 6 * bs), shared if rng.random() < 0.7 else 0)
        elif what < 0.45 and t.waiting:
            t.admit(rng.choice(t.waiting))
        elif what < 0.8 and t.running:
            t.decode(rng.choice(t.running))
        elif t.running:
            t.leave(rng.choice(t.running), rng.random() < 0.4)
        assert t.port.req_blocks == t.ref.req_blocks, (seed, step)
        assert t.port.pool.num_free() == len(t.ref.pool.free), (seed, step)
    return t.own_hits


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    num_blocks=st.integers(8, 120),
    bs=st.sampled_from([1, 2, 4, 16]),
    shared=st.sampled_from([0, 3, 8, 33]),
    caching=st.booleans(),
)
def test_blocks_hits_and_free_count_are_vllms(seed: int, num_blocks: int, bs: int, shared: int, caching: bool) -> None:
    _drive(seed, num_blocks, bs, shared, 300, caching)


def test_the_driver_reaches_the_cases_that_matter() -> None:
    """A request preempted and re-admitted hits its own blocks (the port's positions), a long run wraps the
    queue past its compaction (4,096 entries taken)."""
    assert sum(_drive(seed, 60, 2, 8, 400) for seed in range(20)) > 50
    assert _drive(7, 300, 1, 0, 20_000) > 0


RECORDED: list[dict[str, Any]] = json.loads((FIXTURES / "engines" / "vllm_block_pool.json").read_text())["cases"]


@pytest.mark.parametrize("case", RECORDED, ids=[f"drive{i}" for i in range(len(RECORDED))])
def test_every_operation_matches_vllms_own_manager(case: dict[str, Any]) -> None:
    bs = case["block_size"]
    kv = KVCacheManager(case["num_blocks"], bs, 1 << 20, case["caching"])
    requests: dict[int, Request] = {}
    for k, op in enumerate(case["ops"]):
        what, rid = op[0], op[1]
        held = kv.req_blocks.get(rid, [])
        before = len(held)
        if what == "arrive":
            requests[rid] = Request(rid, op[2], 10**6, shared_prefix=op[3])
            continue
        r = requests[rid]
        if what == "admit":
            hits, hit_tokens = kv.computed_blocks(r)
            assert hits == op[3], f"operation {k}: hits"
            ok = kv.allocate_slots(r, r.num_tokens - hit_tokens, hits, hit_tokens, full_sequence_must_fit=True)
            if ok:
                r.num_computed, r.status = r.num_tokens, Status.RUNNING
            got = [ok, hits, kv.req_blocks.get(rid, [])[before:], kv.pool.num_free()]
        elif what == "decode":
            r.add_output()
            ok = kv.allocate_slots(r, 1)
            if ok:
                r.num_computed += 1
            got = [ok, kv.req_blocks.get(rid, [])[before:], kv.pool.num_free()]
        else:
            r.status = Status.FINISHED if op[2] else Status.PREEMPTED
            kv.free(r)
            r.num_computed = 0
            got = [op[2], kv.pool.num_free()]
        assert got == op[2:], f"operation {k} ({what} {rid})"
