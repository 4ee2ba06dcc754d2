"""A workload through the engine's scheduler, on the clock of the roofline floor.

Each engine step takes the floor time of what it computes (kvplan.simulation.roofline); requests arrive at their
times and are added before the first step that starts after them; a cancel aborts the request between steps, as
the engine's API server does. A token exists when the step that samples it ends: TTFT = that time for the first
token less the arrival (queueing, prefill chunks and the first step), ITL = the gaps between a request's tokens.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvplan.errors import KvplanError
from kvplan.simulation.roofline import CostModel
from kvplan.simulation.vllm import EngineLoop, Request, Scheduler, SchedulerConfig, Status
from kvplan.simulation.workload import RequestSpec, Workload

if TYPE_CHECKING:
    from kvplan.simulation.llamacpp import ServerConfig

#: a simulation is cut off after this many engine steps (a workload that would need more is refused)
MAX_STEPS = 5_000_000


class SimulationError(KvplanError):
    """The workload cannot run (a request that can never be admitted, or a run past the step limit)."""

    exit_code = 4
    kind = "unsupported"


@dataclass(frozen=True)
class StepPoint:
    """One engine step of the series."""

    start: float  # seconds
    seconds: float  # the step's floor
    prefill_tokens: int
    decode_tokens: int
    running: int
    waiting: int
    blocks_used: int
    preempted: int
    bytes_read: int
    flops: float
    compute_bound: bool


@dataclass
class RequestResult:
    rid: int
    arrival: float
    prompt: int
    output: int
    first_token: float | None = None
    last_token: float | None = None
    finished: float | None = None
    tokens: int = 0
    cancelled: bool = False
    preemptions: int = 0
    error: str | None = None  # the engine failed the request (llama-server: context exceeded, prompt too long)


@dataclass(frozen=True)
class SimResult:
    config: SchedulerConfig | ServerConfig
    steps: tuple[StepPoint, ...]
    requests: tuple[RequestResult, ...]
    itl: tuple[float, ...]  # every gap between two tokens of one request
    usable_blocks: int  # the pool less the null block: what is free when nothing runs
    final_free: int
    end: float  # when the last request ended

    @property
    def blocks_returned(self) -> bool:
        """The invariant: once every request has ended or been cancelled, every block is free again."""
        return self.final_free == self.usable_blocks


@dataclass
class Clients:
    """The client side of both event loops (vLLM's engine, llama-server's slots): the requests as they fall due
    (a fixed concurrency draws the next as one ends), each request's result, its cancel (a trace's at a time, a
    drawn one after a share of its output tokens), the gaps between tokens, and when the last request ended.
    ``max_len``: prompts and outputs clipped to it (vLLM's --max-model-len), None: as drawn."""

    workload: Workload
    rng: random.Random
    max_len: int | None
    specs: list[RequestSpec] = field(default_factory=list)
    next_index: int = 0
    results: dict[int, RequestResult] = field(default_factory=dict)
    cancels: list[tuple[float, int]] = field(default_factory=list)  # a heap of (when, request)
    share_cancels: dict[int, float] = field(default_factory=dict)  # drawn cancels: after this share of the output
    itl: list[float] = field(default_factory=list)
    end: float = 0.0

    def __post_init__(self) -> None:
        self.specs = draw_specs(self.workload, self.rng, self.max_len)

    def due(self, t: float) -> list[RequestSpec]:
        out = []
        while self.next_index < len(self.specs) and self.specs[self.next_index].arrival <= t:
            out.append(self.specs[self.next_index])
            self.next_index += 1
        return out

    def next_arrival(self) -> float | None:
        return self.specs[self.next_index].arrival if self.next_index < len(self.specs) else None

    def arrive(self, spec: RequestSpec) -> int:
        """A request's result opened and its cancel registered; its id."""
        rid = len(self.results)
        self.results[rid] = RequestResult(rid, spec.arrival, spec.prompt, spec.output)
        if spec.cancel_after is not None:
            if self.workload.trace is not None:
                heapq.heappush(self.cancels, (spec.arrival + spec.cancel_after, rid))
            else:
                self.share_cancels[rid] = spec.cancel_after
        return rid

    def cancels_due(self, t: float) -> list[int]:
        out = []
        while self.cancels and self.cancels[0][0] <= t:
            out.append(heapq.heappop(self.cancels)[1])
        return out

    def sampled(self, rids: Iterable[int], t: float) -> None:
        """One token each, seen by its client at ``t``."""
        for rid in rids:
            res = self.results[rid]
            if res.first_token is None:
                res.first_token = t
            elif res.last_token is not None:
                self.itl.append(t - res.last_token)
            res.last_token = t
            res.tokens += 1
            share = self.share_cancels.get(rid)
            if share is not None and res.tokens >= max(1, math.ceil(share * res.output)):
                del self.share_cancels[rid]  # the client has seen that share of its tokens, and leaves
                heapq.heappush(self.cancels, (t, rid))

    def ended(self, rid: int, now: float, cancelled: bool, error: str | None = None) -> None:
        r = self.results[rid]
        r.finished, r.cancelled, r.error = now, cancelled, error
        self.end = max(self.end, now)
        if self.workload.concurrency is not None and now < self.workload.duration:
            self.specs.append(draw_one(self.workload, self.rng, now, self.max_len))

    def finished_results(self) -> tuple[RequestResult, ...]:
        return tuple(self.results[k] for k in sorted(self.results))


def draw_one(w: Workload, rng: random.Random, arrival: float, max_len: int | None) -> RequestSpec:
    """One request of the workload's distributions; ``max_len``: prompt + output clipped to it (vLLM's
    --max-model-len), None: as drawn (llama-server refuses a prompt too long for a slot)."""
    prompt = w.prompt.draw(rng)
    output = w.output.draw(rng)
    if max_len is not None:
        prompt = min(prompt, max_len - 1)
        output = min(output, max_len - prompt)
    cancel = None
    if w.cancel and rng.random() < w.cancel:
        cancel = rng.random()  # the share of its output tokens the client waits for
    return RequestSpec(arrival, max(1, prompt), max(1, output), cancel)


def draw_specs(w: Workload, rng: random.Random, max_len: int | None) -> list[RequestSpec]:
    """The workload's requests as they arrive (a trace's, or drawn; a fixed concurrency draws its first ones)."""
    if w.trace is not None:
        if max_len is None:
            return [RequestSpec(r.arrival, r.prompt, r.output, r.cancel_after) for r in w.trace]
        return [
            RequestSpec(
                r.arrival, min(r.prompt, max_len - 1), max(1, min(r.output, max_len - r.prompt)), r.cancel_after
            )
            for r in w.trace
        ]
    if w.rate is not None:
        return [draw_one(w, rng, t, max_len) for t in w.arrivals(rng)]
    return [draw_one(w, rng, 0.0, max_len) for _ in range(w.concurrency or 1)]


def simulate(  # noqa: C901 - one event loop
    config: SchedulerConfig,
    cost: CostModel,
    workload: Workload,
    progress: Callable[[float, int], None] | None = None,
) -> SimResult:
    clients = Clients(workload, random.Random(workload.seed), config.max_model_len)
    results = clients.results
    loop = EngineLoop(Scheduler(config))
    steps: list[StepPoint] = []
    t = 0.0
    usable = config.num_blocks - 1
    idle_steps = 0
    while True:
        for spec in clients.due(t):
            rid = clients.arrive(spec)
            loop.scheduler.add(Request(rid, spec.prompt, spec.output, shared_prefix=workload.shared_prefix))
        for rid in clients.cancels_due(t):
            for r in loop.scheduler.abort([rid]):
                clients.ended(r.rid, t, True)
        if loop.idle():
            upcoming = clients.next_arrival()
            if upcoming is None:
                break
            t = max(t, upcoming)
            continue
        before = len(loop.steps)
        finished = loop.step()
        if len(loop.steps) > before and loop.last is not None:
            out = loop.last
            record = loop.steps[-1]
            work = [(n, out.context[rid]) for rid, n in out.scheduled.items()]
            step = cost.step(work)
            decode = sum(1 for rid, n in out.scheduled.items() if n == 1 and out.context[rid] >= results[rid].prompt)
            total = sum(out.scheduled.values())
            steps.append(
                StepPoint(
                    t,
                    step.seconds,
                    total - decode,
                    decode,
                    record.running,
                    record.waiting,
                    usable - record.free_blocks,
                    len(record.preempted),
                    step.bytes,
                    step.flops,
                    step.compute_bound,
                )
            )
            for rid in record.preempted:
                results[rid].preemptions += 1
            t += step.seconds
            clients.sampled(out.sampled, t)
            idle_steps = 0 if total else idle_steps + 1
        for r in finished:
            clients.ended(r.rid, t, r.status is Status.ABORTED)
        if idle_steps > 3 and not loop.scheduler.running and loop.scheduler.waiting:
            head = loop.scheduler.waiting[0]
            raise SimulationError(
                f"a request of {head.num_tokens:,} tokens can never be admitted: the KV cache holds "
                f"{usable:,} blocks of {config.block_size} tokens"
            )
        if len(steps) > MAX_STEPS:
            raise SimulationError(f"the workload needs more than {MAX_STEPS:,} engine steps; shorten --duration")
        if progress is not None and len(steps) % 2000 == 0:
            progress(t, len(results))
    # requests still holding blocks cannot remain: the loop ends only when the engine is idle
    return SimResult(
        config,
        tuple(steps),
        clients.finished_results(),
        tuple(clients.itl),
        usable,
        loop.scheduler.kv.pool.num_free(),
        clients.end,
    )


def percentile(values: list[float] | tuple[float, ...], q: float) -> float | None:
    """The nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[k]
