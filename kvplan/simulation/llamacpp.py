"""llama-server's slots over time: a reading of llama.cpp's server loop (tools/server/server-context.cpp in the
llama.cpp kvplan's oracle vendors), not a recording of it — the README says which functions each rule follows.

- Slots: ``-np`` of them (llama-server's ``-np -1`` default: 4 slots and a unified cache, ``server.cpp``). A
  request takes an idle slot (``get_available_slot``: the idle slot whose cached tokens share the longest prefix
  with the prompt when that is over 10 % of it, else the least recently used) or waits in the queue, first come
  first served (``queue_tasks.defer``).
- Cells: one per token in the cache. Without ``-kvu`` every slot has its own ``n_ctx_seq`` cells and can never
  take another's; with it the slots share one pool of ``n_ctx`` cells and each may grow to ``n_ctx_seq`` =
  ``n_ctx``. A slot keeps its tokens when its request ends (the prompt cache); with a unified cache llama-server
  clears the other idle slots when it starts a task (``--cache-idle-slots``, on by default).
- One engine step is one ``update_slots``: one token for every generating slot, then prompt tokens of the
  slots in order until the batch holds ``n_batch`` (``pre_decode``). A batch the cache cannot take
  (``decode`` returns 1) is retried after clearing idle slots (``try_clear_idle_slots``) or with half the batch;
  at a batch of one token every request in flight fails with "Context size has been exceeded.".
- A prompt of ``n_ctx_seq`` tokens or more is refused ("exceeds the available context size"); generation stops
  when the slot's tokens + 1 reach ``n_ctx_seq`` (context shift is off by default) or at the output length.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from kvplan.simulation.roofline import CostModel
from kvplan.simulation.run import Clients, SimResult, SimulationError, StepLimits, check_steps
from kvplan.simulation.stats import Series, StepPoint
from kvplan.simulation.workload import Workload

#: llama-server's slot-selection threshold (common.h slot_prompt_similarity)
SLOT_PROMPT_SIMILARITY = 0.1

EXCEEDED = "Context size has been exceeded."


@dataclass(frozen=True)
class ServerConfig:
    """llama-server's settings that decide the schedule."""

    n_slots: int  # -np
    n_ctx_slot: int  # cells a slot may hold: llama_n_ctx_seq capped by the trained context (n_ctx_slot)
    pool: int | None  # the unified cache's cells (-kvu); None: one stream of n_ctx_slot cells per slot
    n_batch: int  # -b: tokens per llama_decode
    cache_idle_slots: bool = True  # with -kvu: idle slots cleared when a task starts
    prefix_reuse: bool = True  # a slot's cached prefix is reused (full attention only: SWA / recurrent reprocess)

    @property
    def cells(self) -> int:
        """Every cell there is: the unified pool, or one stream per slot."""
        return self.pool if self.pool is not None else self.n_slots * self.n_ctx_slot


@dataclass
class _Task:
    rid: int
    prompt: int
    output: int
    shared: int  # tokens its prompt shares with every other prompt (--shared-prefix)


@dataclass(eq=False)  # compared by identity
class _Slot:
    sid: int
    tokens: int = 0  # cells it holds
    content: int = -1  # whose tokens they are (-1: none); prompts share `shared` tokens
    shared: int = 0  # the shared prefix length of the content
    task: _Task | None = None
    prefilled: int = 0  # prompt tokens in the cache
    generated: int = 0
    t_last: int = -1  # when it was last released (LRU)

    @property
    def busy(self) -> bool:
        return self.task is not None


@dataclass
class Server:
    config: ServerConfig
    slots: list[_Slot] = field(default_factory=list)
    queue: deque[_Task] = field(default_factory=deque)
    clock: int = 0  # counts releases, for LRU

    def __post_init__(self) -> None:
        self.slots = [_Slot(i) for i in range(self.config.n_slots)]

    def used(self) -> int:
        return sum(s.tokens for s in self.slots)

    def held(self) -> int:
        """Cells of requests in flight (idle slots' cached prompts are reclaimable, not held)."""
        return sum(s.tokens for s in self.slots if s.busy)

    def free_for(self, slot: _Slot) -> int:
        if self.config.pool is None:
            return self.config.n_ctx_slot - slot.tokens
        return self.config.pool - self.used()

    def release(self, slot: _Slot) -> None:
        slot.task = None
        self.clock += 1
        slot.t_last = self.clock

    def pick(self, task: _Task) -> _Slot | None:
        """get_available_slot: the best prefix match over 10 % of the prompt, else the least recently used."""
        best, best_sim = None, 0.0
        for s in self.slots:
            if s.busy or not s.tokens:
                continue
            sim = self.common_prefix(s, task) / task.prompt
            if sim > best_sim and sim > SLOT_PROMPT_SIMILARITY:
                best, best_sim = s, sim
        if best is not None:
            return best
        lru = None
        for s in self.slots:
            if not s.busy and (lru is None or s.t_last <= lru.t_last):
                lru = s
        return lru

    def common_prefix(self, s: _Slot, task: _Task) -> int:
        if s.content == task.rid:
            return min(s.tokens, task.prompt)
        return min(s.shared, task.shared, s.tokens) if self.config.prefix_reuse else 0

    def clear_idle(self) -> bool:
        cleared = False
        for s in self.slots:
            if not s.busy and s.tokens:
                s.tokens, s.content, s.shared = 0, -1, 0
                cleared = True
        return cleared


@dataclass
class _Step:
    work: list[tuple[int, int]]  # (tokens, context before) per slot in the batch
    prefill: int
    decode: int
    sampled: list[int]  # request ids that got a token
    finished: list[tuple[int, str | None]]  # (rid, error)


def step(server: Server) -> _Step | None:  # noqa: C901 - one update_slots
    """Launch what the queue can, then one update_slots. None when every slot is idle."""
    cfg = server.config
    finished: list[tuple[int, str | None]] = []
    while server.queue:  # process_single_task for each queued task, in order, until one must wait
        slot = server.pick(server.queue[0])
        if slot is None:
            break
        slot.task, slot.prefilled, slot.generated = server.queue.popleft(), -1, 0  # -1: SLOT_STATE_STARTED
        if cfg.pool is not None and cfg.cache_idle_slots:
            for other in server.slots:
                if not other.busy and other.tokens:
                    other.tokens, other.content, other.shared = 0, -1, 0
    if not any(s.busy for s in server.slots):
        return None
    # the batch: generating slots first (their last sampled token), then prompts in slot order
    batch: list[tuple[_Slot, int, int]] = []  # (slot, tokens, context before)
    size = 0
    for s in server.slots:
        if s.task is not None and s.prefilled == s.task.prompt:
            batch.append((s, 1, s.tokens))
            size += 1
    for s in server.slots:
        task = s.task
        if task is None or size >= cfg.n_batch or (s.prefilled == task.prompt):
            continue
        if s.prefilled < 0:  # SLOT_STATE_STARTED: the checks and the cached prefix
            if task.prompt >= cfg.n_ctx_slot:
                finished.append(
                    (
                        task.rid,
                        f"request ({task.prompt} tokens) exceeds the available context size ({cfg.n_ctx_slot} tokens)",
                    )
                )
                server.release(s)
                continue
            n_past = server.common_prefix(s, task)
            if n_past == task.prompt:
                n_past -= 1  # at least one token is evaluated
            s.tokens, s.content, s.shared, s.prefilled = n_past, task.rid, task.shared, n_past
        n = min(task.prompt - s.prefilled, cfg.n_batch - size)
        batch.append((s, n, s.tokens))
        size += n
    if not batch:
        return _Step([], 0, 0, [], finished)
    # llama_decode in sub-batches of n_batch, each taken whole or not at all (the cache prepares every ubatch
    # first); a failure clears idle slots or halves the batch; at one token every request in flight fails
    decoded = _decode(server, batch)
    if decoded is None:
        for s in server.slots:
            if s.task is not None:
                finished.append((s.task.rid, EXCEEDED))
                server.release(s)
                s.tokens, s.content, s.shared = 0, -1, 0
        return _Step([(n, before) for _, n, before in batch], 0, 0, [], finished)
    sampled: list[int] = []
    prefill = decode = 0
    for s, n, _ in batch:
        job = s.task
        assert job is not None
        if s.prefilled == job.prompt:
            decode += 1
        else:
            prefill += n
            s.prefilled += n
            if s.prefilled < job.prompt:
                continue
        s.generated += 1  # post_decode samples the slot's next token
        sampled.append(job.rid)
        if s.generated >= job.output or s.tokens + 1 >= cfg.n_ctx_slot:  # the length, or out of context
            finished.append((job.rid, None))
            server.release(s)
    return _Step([(n, before) for _, n, before in batch], prefill, decode, sampled, finished)


def _decode(server: Server, batch: list[tuple[_Slot, int, int]]) -> bool | None:
    """Put the batch's tokens in the cache as update_slots does; None when llama-server gives up."""
    cfg = server.config
    tokens: list[_Slot] = [s for s, n, _ in batch for _ in range(n)]
    off, n_batch = 0, cfg.n_batch
    while off < len(tokens):
        part = tokens[off : off + n_batch]
        if cfg.pool is None:
            ok = all(server.free_for(s) >= part.count(s) for s in set(part))
        else:
            ok = server.free_for(part[0]) >= len(part)
        if ok:
            for s in part:
                s.tokens += 1
            off += len(part)
            n_batch = cfg.n_batch
            continue
        if n_batch == 1:
            return None
        if not (cfg.pool is not None and server.clear_idle()):
            n_batch //= 2
    return True


def simulate_server(
    config: ServerConfig,
    cost: CostModel,
    workload: Workload,
    progress: Callable[[float, int], None] | None = None,
) -> SimResult:
    clients = Clients(workload, random.Random(workload.seed), None)  # a prompt too long is refused: not clipped
    server = Server(config)
    series = Series()
    t = 0.0
    while True:
        for spec in clients.due(t):
            rid = clients.arrive(spec)
            server.queue.append(_Task(rid, spec.prompt, spec.output, min(workload.shared_prefix, spec.prompt)))
        for rid in clients.cancels_due(t):
            if _cancel(server, rid):
                clients.ended(rid, t, True)
        out = step(server)
        if out is None:
            if server.queue:  # pragma: no cover - an idle server always launches a queued task
                raise SimulationError("llama-server left requests queued with every slot idle")
            upcoming = clients.next_arrival()
            if upcoming is None:
                break
            t = max(t, upcoming)
            continue
        if not out.work:  # only refusals: nothing was decoded
            for rid, error in out.finished:
                clients.ended(rid, t, False, error)
            continue
        c = cost.step(out.work)
        series.add(
            StepPoint(
                t,
                c.seconds,
                out.prefill,
                out.decode,
                sum(1 for s in server.slots if s.busy),
                len(server.queue),
                server.used(),
                0,
                c.bytes,
                c.flops,
                c.compute_bound,
            )
        )
        t += c.seconds
        clients.sampled(out.sampled, t)
        for rid, error in out.finished:
            clients.ended(rid, t, False, error)
        check_steps(series.steps, t, workload, "server")
        if progress is not None and series.steps % 2000 == 0:
            progress(t, clients.stats.arrived)
    return SimResult(
        config, series, clients.stats, tuple(clients.kept), config.cells, config.cells - server.held(), clients.end
    )


def _cancel(server: Server, rid: int) -> bool:
    """A client that leaves: its queued task is dropped, or its slot released (the slot keeps its tokens).
    False when the request had already ended."""
    for task in server.queue:
        if task.rid == rid:
            server.queue.remove(task)
            return True
    for s in server.slots:
        if s.task is not None and s.task.rid == rid:
            server.release(s)
            return True
    return False


@dataclass(frozen=True)
class ServerSimulator:
    """llama-server's slots over time (simulate_server)."""

    config: ServerConfig
    steps_of: ClassVar[str] = "server"

    def limits(self) -> StepLimits:
        c = self.config
        return StepLimits(c.n_slots, c.n_batch, None, c.n_ctx_slot)

    def run(
        self, cost: CostModel, workload: Workload, progress: Callable[[float, int], None] | None = None
    ) -> SimResult:
        if workload.in_steps:
            raise SimulationError(
                "arrival_step replays vLLM's engine-loop iterations; give llama-server's trace in seconds"
            )
        return simulate_server(self.config, cost, workload, progress)
