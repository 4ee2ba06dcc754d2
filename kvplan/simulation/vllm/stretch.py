"""Decode stretches: engine-loop iterations in which every running request decodes one token and nothing else
happens, taken together. Not a part of vLLM: a shortcut of the port that lands where stepping would.

In vLLM 0.33's steady decode under async scheduling (``AsyncScheduler``, two batches in flight) and one
full-attention group (``KVCacheManager``), an iteration schedules one token for each running request, in the
running order, and applies the previous iteration's tokens (a request whose last prompt chunk that was joins
the decode there: its prompt's blocks were cached when the chunk was scheduled). While no request arrives,
ends, is cancelled or preempted and nobody waits, the only state that changes other than counters is the block
pool: a request takes a new block when its tokens reach the end of its last one (``allocate_slots``), and
caches a block when its tokens fill it (``cache_blocks``) — so every other iteration of a request is a counter
increment. A stretch runs exactly those calls, in the order stepping would make them (by iteration, then the
running order), and moves the counters once at its end; the iterations' step records are the same as
stepping's (``tests/simulation/test_vllm_stretch.py`` compares whole simulations both ways).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from kvplan.simulation.vllm.engine import EngineLoop
from kvplan.simulation.vllm.kv_cache_manager import KVCacheManager
from kvplan.simulation.vllm.request import Request, Status
from kvplan.simulation.vllm.scheduler import StepOutput, StepRecord


@dataclass(slots=True)
class DecodeRun:
    """The running requests of a steady decode, in the running order, and how long they can go on: ``limit``
    iterations at most before one of them reaches its last token or the context."""

    requests: list[Request]
    contexts: list[int]  # each request's computed tokens before the stretch
    context_sum: int
    limit: int


def decode_run(loop: EngineLoop) -> DecodeRun | None:
    """The stretch the loop can take from its next iteration, or None where it is not in a steady decode."""
    s = loop.scheduler
    c = s.config
    if (
        not c.async_scheduling
        or type(s.kv) is not KVCacheManager
        or s.waiting
        or not s.running
        or len(loop.queue) != 1
        or len(s.running) > c.max_num_batched_tokens
    ):
        return None
    previous = loop.queue[0]
    scheduled = previous.scheduled
    if len(scheduled) != len(s.running) or len(previous.sampled) != len(scheduled):
        return None
    eligible = s.current_step + 1
    limit = c.max_model_len
    contexts = []
    running = Status.RUNNING
    for r in s.running:
        if (
            r.in_flight != scheduled.get(r.rid)  # only the previous step's tokens in flight (its last prefill
            or r.status is not running  # chunk, or one decode token)
            or r.placeholders != 1
            or r.stale
            or r.num_computed != r.num_tokens
            or r.next_decode_eligible_step > eligible
        ):
            return None
        contexts.append(r.num_computed)
        # outputs + K < max_tokens (neither skipped as nearly done nor finished), computed + K + 1 <= max_model_len
        limit = min(limit, r.max_tokens - r.outputs - 1, c.max_model_len - r.num_computed - 1)
    if list(scheduled) != [r.rid for r in s.running]:
        return None
    return DecodeRun(list(s.running), contexts, sum(contexts), limit)


def allocations(run: DecodeRun, kv: KVCacheManager, iterations: int) -> int:
    """New blocks the stretch takes in ``iterations``: a request's at each iteration its tokens reach the end of
    its blocks, then every block on."""
    bs = kv.block_size
    total = 0
    for r, c in zip(run.requests, run.contexts, strict=True):
        first = len(kv.req_blocks[r.rid]) * bs - c  # the iteration whose schedule needs one more block
        if first < iterations:
            total += (iterations - first + bs - 1) // bs
    return total


def advance(loop: EngineLoop, run: DecodeRun, iterations: int) -> list[int]:
    """The loop moved on ``iterations`` (at most ``run.limit``, with blocks for every allocation) as stepping would
    move it; the free blocks after each iteration's schedule."""
    s = loop.scheduler
    kv = s.kv
    assert type(kv) is KVCacheManager and 0 < iterations <= run.limit
    bs = kv.block_size
    pool = kv.pool
    requests, contexts = run.requests, run.contexts
    n = len(requests)
    # an event: iteration × n + position in the running order (a heap of ints orders them as stepping does)
    events = [_next_event(kv, r, c, bs) * n + i for i, (r, c) in enumerate(zip(requests, contexts, strict=True))]
    heapq.heapify(events)
    free_after: list[int] = []
    req_blocks, num_cached, caching, free = kv.req_blocks, kv.num_cached, kv.caching, pool.free
    pop, push, cache = heapq.heappop, heapq.heappush, pool.cache
    for j in range(iterations):
        upto = (j + 1) * n
        while events and events[0] < upto:
            i = pop(events) - j * n
            r = requests[i]
            tokens = contexts[i] + j  # the request's computed tokens as the iteration's schedule() finds them
            blocks = req_blocks[r.rid]
            # allocate_slots(r, 1) for a request decoding a token, inlined: a block when the tokens reach the end
            # of its blocks (grow_blocks; free blocks are there for each), then the newly full blocks cached
            if tokens == len(blocks) * bs:
                assert free, "a stretch is taken only with blocks for every allocation"
                blocks.extend(pool.get_new_blocks(1))
            done = num_cached.get(r.rid, 0)
            if caching and tokens // bs > done:  # cache_blocks(r, tokens), inlined
                full = tokens // bs
                for index in range(done, full):
                    key = (-1, index) if (index + 1) * bs <= r.shared_prefix else (r.rid, index)
                    cache(blocks[index], key)
                num_cached[r.rid] = done = full
            # the next event: the tokens reach the end of the blocks, or fill the block past those cached
            end = len(blocks) * bs
            if caching and (done + 1) * bs < end:
                end = (done + 1) * bs
            nxt = end - contexts[i]
            push(events, (nxt if nxt > j + 1 else j + 1) * n + i)
        free_after.append(len(free))
    rids = [r.rid for r in run.requests]
    end = iterations
    for r, c in zip(run.requests, run.contexts, strict=True):
        r.num_computed = r.num_tokens = c + end
        r.outputs += end
        r.in_flight = 1
        r.next_decode_eligible_step = s.current_step + end + 1
    s.current_step += end
    s.finished_ids = set()
    loop.iteration += end
    before = {r.rid: c + end - 1 for r, c in zip(run.requests, run.contexts, strict=True)}
    last = StepOutput(dict.fromkeys(rids, 1), frozenset(rids), before)
    loop.queue[0] = last
    loop.last = last
    loop.steps.append(StepRecord(loop.iteration - 1, tuple((rid, 1) for rid in rids), len(rids), 0, (), free_after[-1]))
    return free_after


def _next_event(kv: KVCacheManager, r: Request, c: int, bs: int) -> int:
    """The first iteration in which the request's schedule takes a block or caches one: its tokens (c + j) reach
    the end of its blocks, or fill a block past those cached."""
    end = len(kv.req_blocks[r.rid]) * bs
    if kv.caching:
        end = min(end, (kv.num_cached.get(r.rid, 0) + 1) * bs)
    return max(0, end - c)
