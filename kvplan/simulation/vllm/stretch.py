"""Decode stretches: engine-loop iterations in which every running request decodes one token and nothing else
happens, taken together. Not a part of vLLM: a shortcut of the port that lands where stepping would.

In vLLM 0.33's steady decode under async scheduling (``AsyncScheduler``, two batches in flight) and one
full-attention group (``KVCacheManager``), an iteration schedules one token for each running request, in the
running order, and applies the previous iteration's tokens (a request whose last prompt chunk that was joins
the decode there: its prompt's blocks were cached when the chunk was scheduled). While no request arrives, is
cancelled or preempted and nobody waits, what changes other than counters is the block pool and the requests
that end: a request takes a new block when its tokens reach the end of its last one (``allocate_slots``) and
caches a block when its tokens fill it (``cache_blocks``); one that has sampled all but its last token is
skipped by the iteration's schedule and freed by its update (``update_from_output``). Every other iteration of
a request is a counter increment. A stretch runs exactly those calls, in the order stepping would make them (by
iteration, then the running order), and moves the counters once at its end; the iterations' step records are
the same as stepping's (``tests/simulation/test_vllm_stretch.py`` compares whole simulations both ways).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from kvplan.simulation.vllm.engine import EngineLoop
from kvplan.simulation.vllm.kv_cache_manager import KVCacheManager
from kvplan.simulation.vllm.request import Request, Status
from kvplan.simulation.vllm.scheduler import StepOutput, StepRecord

NEVER = 1 << 62  # a request that does not end within any stretch


@dataclass(slots=True)
class DecodeRun:
    """The running requests of a steady decode, in the running order, and how long they can go on: ``limit``
    iterations at most; ``ends``: the iteration in which each request ends (NEVER: not within the limit)."""

    requests: list[Request]
    contexts: list[int]  # each request's computed tokens before the stretch
    ends: list[int]
    limit: int


@dataclass(slots=True)
class Shape:
    """What each iteration of a stretch schedules: the requests decoding a token, their Σ (context + 1), and the
    requests running when it is scheduled (those that end in it too)."""

    rows: list[int]
    context: list[int]
    running: list[int]
    ending: dict[int, list[int]]  # iteration → positions of the requests that end in it, in the running order


def decode_run(loop: EngineLoop, ends_inside: bool) -> DecodeRun | None:
    """The stretch the loop can take from its next iteration, or None where it is not in a steady decode.
    ``ends_inside``: requests may end inside the stretch (not when an ending draws the next request)."""
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
    max_len = c.max_model_len
    limit = max_len
    contexts, ends = [], []
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
        last = r.max_tokens - r.outputs - 1  # the iteration whose update brings its last token
        if ends_inside and r.prompt + r.max_tokens <= max_len:
            ends.append(last)  # skipped by that iteration's schedule (its last token is in flight), then freed
        else:  # outputs + K < max_tokens, computed + K + 1 <= max_model_len
            ends.append(NEVER)
            limit = min(limit, last, max_len - r.num_computed - 1)
    if list(scheduled) != [r.rid for r in s.running]:
        return None
    limit = min(limit, max(ends))  # every iteration schedules a token
    if not ends_inside:
        limit = min(limit, min(ends) + 1)
    return DecodeRun(list(s.running), contexts, ends, limit)


def shape(run: DecodeRun, iterations: int, go_on: Callable[[int, int, int], bool]) -> Shape:
    """Each iteration's rows and context sum, and who ends where, up to ``iterations`` or the first iteration
    ``go_on(j, rows, context)`` refuses."""
    ending: dict[int, list[int]] = {}
    for i, end in enumerate(run.ends):
        if end < iterations:
            ending.setdefault(end, []).append(i)
    rows, context, running = [], [], []
    active, total = len(run.requests), sum(run.contexts)
    contexts = run.contexts
    for j in range(iterations):
        gone = ending.get(j, ())
        n = active - len(gone)
        base = total - sum(contexts[i] for i in gone) if gone else total
        ctx = base + n * (j + 1)  # Σ (before + 1), before = c + j
        if not go_on(j, n, ctx):
            break
        rows.append(n)
        context.append(ctx)
        running.append(active)
        active, total = n, base
    return Shape(rows, context, running, ending)


def allocations(run: DecodeRun, kv: KVCacheManager, iterations: int) -> int:
    """New blocks the stretch takes in ``iterations`` (not counting what requests that end give back): a
    request's at each iteration its tokens reach the end of its blocks, then every block on, until it ends."""
    bs = kv.block_size
    total = 0
    for r, c, end in zip(run.requests, run.contexts, run.ends, strict=True):
        first = len(kv.req_blocks[r.rid]) * bs - c  # the iteration whose schedule needs one more block
        upto = min(iterations, end)
        if first < upto:
            total += (upto - first + bs - 1) // bs
    return total


def affordable(run: DecodeRun, kv: KVCacheManager, iterations: int) -> int:
    """The most of ``iterations`` whose new blocks the free blocks hold (what ending requests give back is not
    counted: a stretch that would need it stops short, and stepping goes on)."""
    free = kv.pool.num_free()
    if allocations(run, kv, iterations) <= free:
        return iterations
    lo, hi = 0, iterations
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if allocations(run, kv, mid) <= free else (lo, mid - 1)
    return lo


def advance(loop: EngineLoop, run: DecodeRun, plan: Shape, iterations: int) -> tuple[list[int], list[list[Request]]]:
    """The loop moved on ``iterations`` (at most ``run.limit``, with blocks for every allocation) as stepping would
    move it: the free blocks after each iteration's schedule, and the requests each iteration ended."""
    s = loop.scheduler
    kv = s.kv
    assert type(kv) is KVCacheManager and 0 < iterations <= run.limit
    bs = kv.block_size
    pool = kv.pool
    requests, contexts, ends = run.requests, run.contexts, run.ends
    n = len(requests)
    # an event: iteration × n + position in the running order (a heap of ints orders them as stepping does)
    events = [
        e * n + i
        for i, (r, c) in enumerate(zip(requests, contexts, strict=True))
        if (e := _next_event(kv, r, c, bs)) < ends[i]
    ]
    heapq.heapify(events)
    free_after: list[int] = []
    ended: list[list[Request]] = []
    req_blocks, num_cached, caching = kv.req_blocks, kv.num_cached, kv.caching
    pop, push = heapq.heappop, heapq.heappush
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
                assert pool.num_free(), "a stretch is taken only with blocks for every allocation"
                blocks.extend(pool.get_new_blocks(1))
            done = num_cached.get(r.rid, 0)
            if caching and tokens // bs > done:  # cache_blocks(r, tokens): its test done here
                kv.hash_blocks(r, blocks, done, tokens // bs)
                done = tokens // bs
            # the next event: the tokens reach the end of the blocks, or fill the block past those cached
            end = len(blocks) * bs
            if caching and (done + 1) * bs < end:
                end = (done + 1) * bs
            nxt = max(end - contexts[i], j + 1)
            if nxt < ends[i]:
                push(events, nxt * n + i)
        free_after.append(pool.num_free())
        gone = []
        for i in plan.ending.get(j, ()):  # update_from_output: the last token back, the request freed
            r = requests[i]
            r.outputs, r.num_tokens, r.num_computed = r.max_tokens, contexts[i] + j + 1, contexts[i] + j
            r.status = Status.FINISHED
            s._free(r)  # the scheduler's own step, as update_from_output takes it
            s.running.remove(r)
            gone.append(r)
        ended.append(gone)
    end = iterations
    last_step = end - 1
    kept = [(r, c) for r, c, e in zip(requests, contexts, ends, strict=True) if e > last_step]
    for r, c in kept:
        r.num_computed = r.num_tokens = c + end
        r.outputs += end
        r.in_flight = 1
        r.next_decode_eligible_step = s.current_step + end + 1
    s.current_step += end
    s.finished_ids = {r.rid for r in ended[-1]}
    loop.iteration += end
    rids = [r.rid for r, _ in kept]
    last = StepOutput(dict.fromkeys(rids, 1), frozenset(rids), {r.rid: c + last_step for r, c in kept})
    loop.queue[0] = last
    loop.last = last
    loop.steps.append(
        StepRecord(loop.iteration - 1, tuple((rid, 1) for rid in rids), plan.running[last_step], 0, (), free_after[-1])
    )
    return free_after, ended


def _next_event(kv: KVCacheManager, r: Request, c: int, bs: int) -> int:
    """The first iteration in which the request's schedule takes a block or caches one: its tokens (c + j) reach
    the end of its blocks, or fill a block past those cached."""
    end = len(kv.req_blocks[r.rid]) * bs
    if kv.caching:
        end = min(end, (kv.num_cached.get(r.rid, 0) + 1) * bs)
    return max(0, end - c)
