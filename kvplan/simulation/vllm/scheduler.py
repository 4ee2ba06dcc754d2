"""vLLM 0.33's v1 scheduler (vllm/v1/core/sched/scheduler.py, async_scheduler.py): schedule(),
update_from_output(), finish_requests()."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from kvplan.simulation.vllm.kv_cache_coordinator import (
    AlignKVCacheManager,
    HybridKVCacheManager,
    checkpoint_position,
    checkpoint_valid,
)
from kvplan.simulation.vllm.kv_cache_manager import GroupedKVCacheManager, GroupSpec, KVCacheManager
from kvplan.simulation.vllm.request import Request, Status


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


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One schedule(): what vLLM's recorder writes for it (tests compare these field by field)."""

    iteration: int
    scheduled: tuple[tuple[int, int], ...]  # (request, tokens) in scheduling order
    running: int
    waiting: int
    preempted: tuple[int, ...]
    free_blocks: int


@dataclass(slots=True)
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
        kv = self.kv
        plain = kv if isinstance(kv, KVCacheManager) and type(kv) is KVCacheManager else None
        held = plain.req_blocks if plain is not None else {}
        bs = plain.block_size if plain is not None else 0
        max_len = c.max_model_len
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            if r.placeholders > 0 and r.num_computed + 2 - r.placeholders >= r.prompt + r.max_tokens:
                i += 1
                continue
            if self.current_step < r.next_decode_eligible_step:
                i += 1
                continue
            computed = r.num_computed
            n = r.num_tokens + r.placeholders - computed  # min(…, budget, max_model_len - computed - 1)
            if n > budget:
                n = budget
            if n > max_len - computed - 1:
                n = max_len - computed - 1
            if align is not None and n > 0:
                n = self._align_split(r, n, 0)
            if n <= 0:
                i += 1
                continue
            blocks = held.get(r.rid)
            if (
                plain is not None
                and blocks is not None
                and (computed + n if computed + n < max_len else max_len) <= len(blocks) * bs
            ):
                # allocate_slots' first path, inlined: the blocks held suffice, only newly full ones are cached
                upto = computed + n if computed + n < r.num_tokens else r.num_tokens
                if plain.caching and upto // bs > plain.num_cached.get(r.rid, 0):
                    plain.cache_blocks(r, upto)
                scheduled[r.rid] = n
                context[r.rid] = computed
                budget -= n
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
        sampled = self._after_schedule(scheduled)
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

    def _after_schedule(self, scheduled: dict[int, int]) -> frozenset[int]:
        """The scheduled requests' computed tokens advanced (and, async, their placeholders); those that sample a
        token this step (not a prefill chunk)."""
        self.finished_ids = set()
        requests, asynchronous, eligible = self.requests, self.config.async_scheduling, self.current_step + 1
        sampled = []
        for rid, n in scheduled.items():
            r = requests[rid]
            r.num_computed += n
            r.in_flight += n
            r.is_prefill_chunk = chunk = r.num_computed < r.num_tokens + r.placeholders
            if not chunk:
                sampled.append(rid)
                if asynchronous:
                    r.placeholders += 1
                    r.next_decode_eligible_step = eligible  # decode_stagger = pipeline stages (1)
        return frozenset(sampled)

    def update_from_output(self, out: StepOutput) -> list[Request]:
        """Apply one step's sampled tokens; the requests that ended."""
        ended: list[Request] = []
        kv = self.kv
        # the plain manager's cache_blocks does nothing until a block fills: its test, done here without the call
        plain = kv if isinstance(kv, KVCacheManager) and type(kv) is KVCacheManager else None
        bs = plain.block_size if plain is not None else 0
        requests, sampled, max_len = self.requests, out.sampled, self.config.max_model_len
        finished, aborted = Status.FINISHED, Status.ABORTED
        for rid, n in out.scheduled.items():
            r = requests.get(rid)
            stale = False
            if r is not None:
                r.in_flight -= n
                if r.stale > 0:
                    stale = True
                    r.stale -= n
            if r is None or r.status is finished or r.status is aborted or rid not in sampled:
                continue  # (r.finished, inlined: every running request passes here every step)
            before = r.status
            had_placeholders = r.placeholders > 0
            r.outputs += 1  # (r.add_output(), inlined)
            r.num_tokens += 1
            stopped = r.num_tokens >= max_len or r.outputs >= r.max_tokens
            if not stale and r.placeholders > 0:
                r.placeholders -= 1
            if not stale and before is Status.RUNNING and had_placeholders:
                upto = r.num_computed - r.in_flight
                if plain is None or (plain.caching and upto // bs > plain.num_cached.get(rid, 0)):
                    kv.cache_blocks(r, upto)
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
