"""A workload through the engine's scheduler, on the clock of the roofline floor.

Each engine step takes the floor time of what it computes (kvplan.simulation.roofline); requests arrive at their
times and are added before the first step that starts after them; a cancel aborts the request between steps, as
the engine's API server does. A token exists when the step that samples it ends: TTFT = that time for the first
token less the arrival (queueing, prefill chunks and the first step), ITL = the gaps between a request's tokens.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import random
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from kvplan.errors import KvplanError
from kvplan.simulation.roofline import CostModel, StepCost
from kvplan.simulation.stats import MAX_REQUEST_ROWS, RequestStats, Series, StepPoint
from kvplan.simulation.vllm import EngineLoop, Request, Scheduler, SchedulerConfig, Status
from kvplan.simulation.workload import RequestSpec, Workload

if TYPE_CHECKING:
    from kvplan.simulation.llamacpp import ServerConfig
    from kvplan.simulation.sglang.scheduler import SchedulerConfig as SglangConfig
    from kvplan.simulation.vllm.stretch import DecodeRun


@dataclass(frozen=True)
class StepLimits:
    """What bounds one engine step: for the floor on the steps a workload needs, worked out before it runs."""

    seqs: int  # requests one step carries at most (--max-num-seqs, -np)
    batch: int  # tokens one step carries at most (--max-num-batched-tokens, -b)
    cap: int | None  # a request's tokens at most (vLLM's max_model_len; None: llama-server refuses, not clips)
    longest: int  # the longest context a step attends over


class Simulator(Protocol):
    """An engine's schedule over time — what `simulate`, its budgets and its report run: vLLM's scheduler, ported
    (VllmSimulator), SGLang's (kvplan.simulation.sglang.engine.SglangSimulator), or llama-server's slots
    (kvplan.simulation.llamacpp.ServerSimulator)."""

    steps_of: ClassVar[str]  # what one step is: "engine", "server"

    def limits(self) -> StepLimits: ...

    def run(
        self, cost: CostModel, workload: Workload, progress: Callable[[float, int], None] | None = None
    ) -> SimResult: ...


#: a simulation is cut off after this many engine steps (a workload that would need more is refused)
MAX_STEPS = 20_000_000
#: after this many steps a run projects the steps its arrivals need at the pace so far, and stops early if that
#: is past MAX_STEPS (a fixed concurrency, or lengths whose typical value understates them)
PACE_STEPS = 50_000


def check_steps(steps: int, t: float, workload: Workload, what: str) -> None:
    """The step bound, after each step of either loop: past MAX_STEPS the run stops; and a second or so into it,
    a workload whose arrivals alone would take more than MAX_STEPS at the pace of its first PACE_STEPS steps is
    refused there."""
    if steps > MAX_STEPS:
        raise SimulationError(f"the workload needs more than {MAX_STEPS:,} {what} steps; shorten --duration")
    if steps != PACE_STEPS or t <= 0:
        return
    projected = int(steps * workload.span / t)
    if projected > MAX_STEPS:
        raise SimulationError(
            f"at the pace of its first {steps:,} {what} steps the workload needs about {projected:,} (at most "
            f"{MAX_STEPS:,} are simulated): shorten --duration or lower the load"
        )


class SimulationError(KvplanError):
    """The workload cannot run (a request that can never be admitted, or a run past the step limit)."""

    exit_code = 4
    kind = "unsupported"


@dataclass(slots=True)
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
    config: SchedulerConfig | ServerConfig | SglangConfig
    series: Series  # the steps (at a bounded resolution) and what every step adds up to
    stats: RequestStats  # every request's outcome and latencies
    requests: tuple[RequestResult, ...]  # the first MAX_REQUEST_ROWS requests, one by one
    usable_blocks: int  # the pool less the null block (vLLM), cells (llama-server), tokens (SGLang): free when idle
    final_free: int
    end: float  # when the last request ended

    @property
    def blocks_returned(self) -> bool:
        """The invariant: once every request has ended or been cancelled, every block is free again."""
        return self.final_free == self.usable_blocks


@dataclass
class Clients:
    """The client side of both event loops (vLLM's engine, llama-server's slots): the requests as they fall due
    (a fixed concurrency draws the next as one ends), each request's result while it runs, its cancel (a trace's
    at a time, a drawn one after a share of its output tokens), and when the last request ended. A request that
    ends is folded into ``stats`` and dropped (kept one by one only among the first MAX_REQUEST_ROWS), so memory
    does not grow with the run. ``max_len``: outputs clipped to it (vLLM's --max-model-len), None: as drawn."""

    workload: Workload
    rng: random.Random
    max_len: int | None
    pending: deque[RequestSpec] = field(default_factory=deque)
    drawn: int = 0  # requests of a rate drawn so far (their arrival times are drawn first, all of them)
    results: dict[int, RequestResult] = field(default_factory=dict)  # the requests that have not ended
    kept: list[RequestResult] = field(default_factory=list)
    stats: RequestStats = field(default_factory=RequestStats)
    cancels: list[tuple[float, int]] = field(default_factory=list)  # a heap of (when, request)
    # the token count at which a client leaves: a drawn cancel's share of its output (at least one token), or a
    # trace's cancel_after_tokens
    leave_at: dict[int, int] = field(default_factory=dict)
    step_cancels: list[tuple[int, int]] = field(default_factory=list)  # a replay's (cancel_step, request), a heap
    end: float = 0.0
    _arrivals: array[float] = field(default_factory=lambda: array("d"))

    def __post_init__(self) -> None:
        w = self.workload
        if w.trace is not None:
            self.pending.extend(trace_specs(w, self.max_len))
        elif w.rate is not None:
            self._arrivals = array("d", w.arrivals(self.rng))  # 8 bytes a request; each drawn when it falls due
        else:
            self.pending.extend(draw_one(w, self.rng, 0.0, self.max_len) for _ in range(w.concurrency or 1))

    def _refill(self) -> None:
        if not self.pending and self.drawn < len(self._arrivals):
            self.pending.append(draw_one(self.workload, self.rng, self._arrivals[self.drawn], self.max_len))
            self.drawn += 1

    def due(self, t: float) -> list[RequestSpec]:
        out = []
        self._refill()
        while self.pending and self.pending[0].arrival <= t:
            out.append(self.pending.popleft())
            self._refill()
        return out

    def due_step(self, iteration: int, t: float) -> list[RequestSpec]:
        """A replay's requests added before engine-loop ``iteration``, arriving at ``t``."""
        out = []
        while self.pending and (self.pending[0].arrival_step or 0) <= iteration:
            out.append(dataclasses.replace(self.pending.popleft(), arrival=t))
        return out

    def step_cancels_due(self, iteration: int) -> list[int]:
        out = []
        while self.step_cancels and self.step_cancels[0][0] <= iteration:
            out.append(heapq.heappop(self.step_cancels)[1])
        return out

    def next_arrival(self) -> float | None:
        self._refill()
        return self.pending[0].arrival if self.pending else None

    def arrive(self, spec: RequestSpec) -> int:
        """A request's result opened and its cancel registered; its id."""
        rid = self.stats.arrived
        self.stats.arrived += 1
        res = RequestResult(rid, spec.arrival, spec.prompt, spec.output)
        self.results[rid] = res
        if rid < MAX_REQUEST_ROWS:
            self.kept.append(res)
        if spec.cancel_after_tokens is not None:
            self.leave_at[rid] = spec.cancel_after_tokens
        if spec.cancel_step is not None:
            heapq.heappush(self.step_cancels, (spec.cancel_step, rid))
        if spec.cancel_after is not None:
            if self.workload.trace is not None:
                heapq.heappush(self.cancels, (spec.arrival + spec.cancel_after, rid))
            else:  # a drawn share of its output
                self.leave_at[rid] = max(1, math.ceil(spec.cancel_after * spec.output))
        return rid

    def cancels_due(self, t: float) -> list[int]:
        out = []
        while self.cancels and self.cancels[0][0] <= t:
            out.append(heapq.heappop(self.cancels)[1])
        return out

    def sampled(self, rids: Iterable[int], t: float) -> None:
        """One token each, seen by its client at ``t``; a client that has seen as many as it waits for leaves."""
        results = self.results
        gaps: list[float] = []
        gap = gaps.append
        for rid in rids:
            res = results[rid]
            last = res.last_token
            if last is not None:
                gap(t - last)
            elif res.first_token is None:
                res.first_token = t
            res.last_token = t
            res.tokens += 1
        leave = self.leave_at
        if leave:  # only a client that got a token now can have reached its count
            for rid, n in list(leave.items()):
                got = results.get(rid)
                if got is not None and got.last_token == t and got.tokens >= n:
                    del leave[rid]
                    heapq.heappush(self.cancels, (t, rid))
        self.stats.itl.extend(gaps)

    def ended(self, rid: int, now: float, cancelled: bool, error: str | None = None) -> None:
        r = self.results.pop(rid)
        self.leave_at.pop(rid, None)
        r.finished, r.cancelled, r.error = now, cancelled, error
        self.end = max(self.end, now)
        st = self.stats
        st.tokens += r.tokens
        st.preempted += 1 if r.preemptions else 0
        if r.first_token is not None:
            st.ttft.add(r.first_token - r.arrival)
        if error is not None:
            st.fail(error)
        elif cancelled:
            st.cancelled += 1
        else:
            st.served += 1
            st.e2e.add(now - r.arrival)
        if self.workload.concurrency is not None and now < self.workload.duration:
            self.pending.append(draw_one(self.workload, self.rng, now, self.max_len))


def draw_one(w: Workload, rng: random.Random, arrival: float, max_len: int | None) -> RequestSpec:
    """One request of the workload's distributions; ``max_len``: the output clipped to what is left of it after
    the prompt (vLLM's --max-model-len: the engine stops a request there), None: as drawn. A prompt is never
    clipped: vLLM refuses one of max_model_len tokens or more (simulate), llama-server one too long for a slot."""
    prompt = w.prompt.draw(rng)
    output = w.output.draw(rng)
    if max_len is not None:
        output = min(output, max_len - prompt)
    cancel = None
    if w.cancel and rng.random() < w.cancel:
        cancel = rng.random()  # the share of its output tokens the client waits for
    return RequestSpec(arrival, max(1, prompt), max(1, output), cancel)


def trace_specs(w: Workload, max_len: int | None) -> list[RequestSpec]:
    """A trace's requests, outputs clipped as draw_one clips them."""
    assert w.trace is not None
    if max_len is None:
        return list(w.trace)
    return [dataclasses.replace(r, output=max(1, min(r.output, max_len - r.prompt))) for r in w.trace]


def refusal(prompt: int, max_model_len: int) -> str | None:
    """vLLM's refusal of a prompt too long for max_model_len (InputProcessor._validate_model_input,
    vllm/v1/engine/input_processor.py: a reading of the source), None when it is admitted."""
    if prompt > max_model_len:
        return (f"The decoder prompt (length {prompt}) is longer than the maximum model length of {max_model_len}. "
                "Make sure that `max_model_len` is no smaller than the number of text tokens.")  # fmt: skip
    if prompt == max_model_len:
        return (f"The decoder prompt (length {prompt}) plus the number of requested output tokens (at least 1) is "
                f"longer than the maximum model length of {max_model_len}. Make sure that `max_model_len` is no "
                "smaller than the number of text tokens (prompt + requested output tokens).")  # fmt: skip
    return None


def simulate(  # noqa: C901 - one event loop
    config: SchedulerConfig,
    cost: CostModel,
    workload: Workload,
    progress: Callable[[float, int], None] | None = None,
    stretches: bool = True,
) -> SimResult:
    """``stretches``: decode stretches taken together (kvplan.simulation.vllm.stretch); False steps through every
    iteration (the tests compare the two)."""
    clients = Clients(workload, random.Random(workload.seed), config.max_model_len)
    results = clients.results
    loop = EngineLoop(Scheduler(config), steps=deque(maxlen=1))  # the latest step's record is all it needs
    series = Series()
    t = 0.0
    usable = config.num_blocks - 1
    idle_steps = 0
    replay = workload.in_steps  # arrivals and cancels by engine-loop iteration, as run_by_iteration drives them
    while True:
        for spec in clients.due_step(loop.iteration, t) if replay else clients.due(t):
            rid = clients.arrive(spec)
            refused = refusal(spec.prompt, config.max_model_len)
            if refused is not None:  # vLLM's input processor refuses it before it reaches the engine
                clients.ended(rid, t, False, refused)
                continue
            loop.scheduler.add(Request(rid, spec.prompt, spec.output, shared_prefix=workload.shared_prefix))
        for rid in [*clients.cancels_due(t), *(clients.step_cancels_due(loop.iteration) if replay else ())]:
            for r in loop.scheduler.abort([rid]):
                clients.ended(r.rid, t, True)
        if loop.idle():
            upcoming = clients.next_arrival()
            if upcoming is None:
                break
            if not replay:
                t = max(t, upcoming)
                continue
        if stretches and not replay and not cost.windowed:
            after = _stretch(loop, clients, series, cost, t, usable, workload, progress)
            if after is not None:
                t, idle_steps = after, 0
                continue
        finished = loop.step()
        if loop.last is not None:
            out = loop.last
            record = loop.steps[-1]
            work = []
            decode = total = 0
            context = out.context
            for rid, n in out.scheduled.items():
                before = context[rid]
                work.append((n, before))
                total += n
                if n == 1 and before >= results[rid].prompt:
                    decode += 1
            step = cost.step(work)
            series.add(
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
            check_steps(series.steps, t, workload, "engine")
            if progress is not None and series.steps % 2000 == 0:
                progress(t, clients.stats.arrived)
        for r in finished:
            clients.ended(r.rid, t, r.status is Status.ABORTED)
        if idle_steps > 3 and not loop.scheduler.running and loop.scheduler.waiting:
            head = loop.scheduler.waiting[0]
            raise SimulationError(
                f"a request of {head.num_tokens:,} tokens can never be admitted: the KV cache holds "
                f"{usable:,} blocks of {config.block_size} tokens"
            )
    # requests still holding blocks cannot remain: the loop ends only when the engine is idle
    return SimResult(
        config, series, clients.stats, tuple(clients.kept), usable, loop.scheduler.kv.pool.num_free(), clients.end
    )


def _stretch(
    loop: EngineLoop,
    clients: Clients,
    series: Series,
    cost: CostModel,
    t: float,
    usable: int,
    workload: Workload,
    progress: Callable[[float, int], None] | None,
) -> float | None:
    """The engine loop's next iterations as one decode stretch, where it is in one: up to the next arrival or
    cancel, a client's leaving, and while the free blocks last (requests that end inside it are freed where
    stepping frees them). Each iteration's step is added to the series and its tokens to the clients as stepping
    would add them; the time after the stretch, or None (no stretch: step)."""
    from kvplan.simulation.vllm.kv_cache_manager import KVCacheManager
    from kvplan.simulation.vllm.stretch import advance, affordable, decode_run, shape

    run = decode_run(loop, ends_inside=workload.concurrency is None)
    if run is None or run.limit < 2:
        return None
    results = clients.results
    limit = _clients_limit(run, clients, t)
    if limit < 2:
        return None
    starts: list[float] = []
    steps: list[StepCost] = []
    upcoming = clients.next_arrival()
    horizon = math.inf if upcoming is None else upcoming
    if clients.cancels:
        horizon = min(horizon, clients.cancels[0][0])
    now = t

    def timed(j: int, rows: int, ctx: int) -> bool:
        """The iteration's step, unless it would start with an arrival or a cancel due."""
        nonlocal now
        if j and now >= horizon:
            return False
        step = cost.totals(rows, rows, ctx, ctx)
        starts.append(now)
        steps.append(step)
        now += step.seconds
        return True

    plan = shape(run, limit, timed)
    kv = loop.scheduler.kv
    assert type(kv) is KVCacheManager
    k = affordable(run, kv, len(steps))
    if k < 2:
        return None
    free_after, ended = advance(loop, run, plan, k)
    itl = clients.stats.itl
    for j in range(k):
        start, step = starts[j], steps[j]
        series.add(
            StepPoint(
                start, step.seconds, 0, plan.rows[j], plan.running[j], 0, usable - free_after[j], 0, step.bytes,
                step.flops, step.compute_bound,
            )
        )  # fmt: skip
        end = start + step.seconds
        if ended[j]:
            _stretch_clients(clients, start, end, ended[j], j)
        itl.extend([end - start] * plan.rows[j])  # each request's gap: the step
        done = series.steps
        if done == PACE_STEPS or done > MAX_STEPS:  # check_steps' two tests, without the call
            check_steps(done, end, workload, "engine")
        if progress is not None and done % 2000 == 0:
            progress(end, clients.stats.arrived)
    t = starts[k - 1] + steps[k - 1].seconds
    for r in loop.scheduler.running:
        res = results[r.rid]
        res.tokens += k
        res.last_token = t
    return t


def _stretch_clients(clients: Clients, start: float, end: float, ended: list[Request], j: int) -> None:
    """The requests that ended in a stretch's iteration ``j``, at their clients: each saw a token at every earlier
    iteration."""
    for r in ended:
        res = clients.results[r.rid]
        if j:
            res.tokens += j
            res.last_token = start
        clients.ended(r.rid, end, False)


def _clients_limit(run: DecodeRun, clients: Clients, t: float) -> int:
    """The iterations a stretch may take before a client leaves (after the iteration its count is reached); 0
    where a request did not sample its last token at ``t`` (not a steady decode)."""
    results, leave = clients.results, clients.leave_at
    limit = run.limit
    for r in run.requests:
        res = results[r.rid]
        if res.last_token != t:
            return 0
        wait = leave.get(r.rid)
        if wait is not None:
            limit = min(limit, wait - res.tokens - 1)
    return limit


@dataclass(frozen=True)
class VllmSimulator:
    """vLLM 0.33's scheduler and EngineCore loop over time (kvplan.simulation.vllm)."""

    config: SchedulerConfig
    steps_of: ClassVar[str] = "engine"

    def limits(self) -> StepLimits:
        c = self.config
        return StepLimits(c.max_num_seqs, c.max_num_batched_tokens, c.max_model_len, c.max_model_len)

    def run(
        self, cost: CostModel, workload: Workload, progress: Callable[[float, int], None] | None = None
    ) -> SimResult:
        return simulate(self.config, cost, workload, progress)
